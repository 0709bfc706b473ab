"""fit_signature and the Signature: the front door, its tables against what rank_genes stores."""

from __future__ import annotations

import dataclasses
import json
import warnings

import pandas as pd
import pytest

import ardselect
from ardselect import ARDClassifier, ExpressionData, SpikeSlabClassifier, fit_signature
from ardselect.preprocessing import Preprocessor
from conftest import make_adata, make_expression

#: Settings of each case: two and three classes on the ARD path, spike-and-slab.
CASES = {
    "binary": (2, {"estimator": ARDClassifier(criterion="cv", cv=3, cv_repeats=1)}),
    "multi": (3, {"estimator": ARDClassifier(criterion="loo"),
                  "preprocessor": Preprocessor(standardize=False)}),
    "spike-slab": (2, {"estimator": SpikeSlabClassifier()}),
}


def _data(adata):
    return ExpressionData.from_anndata(adata, "label")


@pytest.fixture(scope="module", params=list(CASES))
def fitted(request):
    """``(case, rank_genes' AnnData, the Signature of the same data and settings)``."""
    n_classes, settings = CASES[request.param]
    adata = make_adata(make_expression(n_samples=36, n_genes=16, n_classes=n_classes, seed=2))
    adata.X[:, 7] = 3.0  # a constant gene: dropped by the preprocessing, listed after the others
    ardselect.rank_genes(adata, "label", **settings)
    return request.param, adata, fit_signature(_data(adata), **settings)


def test_ranked_is_what_get_reads_back(fitted):
    _, adata, sig = fitted
    stored = ardselect.get.ranked_genes_df(adata)
    pd.testing.assert_frame_equal(sig.ranked, stored, check_exact=True)
    assert list(sig.ranked.dtypes) == list(stored.dtypes)
    assert sig.ranked["gene"].iloc[-1] == "G7"  # (the constant gene)
    pd.testing.assert_frame_equal(sig.credible_sets, ardselect.get.credible_sets_df(adata),
                                  check_exact=True)


def test_path_frontier_and_steps_are_what_get_reads_back(fitted):
    case, adata, sig = fitted
    if case == "spike-slab":
        assert sig.path is None
        assert sig.frontier is None
        assert sig.chosen_step == {}
        return
    pd.testing.assert_frame_equal(sig.path, ardselect.get.path_df(adata), check_exact=True)
    assert sig.chosen_step == ardselect.get.chosen_steps(adata)
    frontier = ardselect.get.frontier_df(adata)
    if case == "binary":  # criterion "cv": the frontier has rows
        assert len(sig.frontier) > 0
        pd.testing.assert_frame_equal(sig.frontier, frontier, check_exact=True)
    else:
        assert len(sig.frontier) == len(frontier) == 0
        assert list(sig.frontier.columns) == list(frontier.columns)


def test_gene_sets_lists_and_model_are_what_get_reads_back(fitted):
    case, adata, sig = fitted
    assert sig.enrichment_sets() == ardselect.get.gene_sets(adata)
    for group in sig.problems:
        pd.testing.assert_frame_equal(sig.ranked_list(group),
                                      ardselect.get.ranked_list(adata, group=group))
    selected = ardselect.get.ranked_genes_df(adata, selected_only=True)
    assert sig.gene_sets == {c: selected.loc[selected["class"] == c, "gene"].tolist()
                             for c in sig.problems}
    assert sig.model.to_json() == ardselect.get.model(adata).to_json()
    assert sig.problems == [str(p) for p in adata.uns["ardselect"]["problems"]]
    assert sig.kind == ("spike-slab" if case == "spike-slab" else "ard")


def test_to_anndata_writes_what_rank_genes_writes(fitted):
    _, adata, sig = fitted
    other = adata.copy()
    del other.uns["ardselect"]
    other.var = other.var[["symbol"]]
    sig.to_anndata(other)
    pd.testing.assert_frame_equal(other.var, adata.var)
    assert set(other.uns["ardselect"]) == set(adata.uns["ardselect"])
    params = other.uns["ardselect"]["params"]
    # every setting of the estimator is recorded (criterion and max_steps beside them)
    recorded = set(params["estimator_params"])
    assert recorded == set(sig.estimator.get_params()) - {"criterion", "max_steps"}
    assert params["log"] == sig.preprocessing.log


def test_the_given_settings_are_cloned_never_fitted_or_changed(adata_factory):
    adata = adata_factory(n_samples=30, n_genes=10, seed=1)
    est = ARDClassifier(criterion="loo", max_steps=40)
    pre = Preprocessor(log="log2", floor=1.0)
    before = (est.get_params(), pre.get_params())
    sig = fit_signature(_data(adata), preprocessor=pre, estimator=est)
    assert (est.get_params(), pre.get_params()) == before
    assert not hasattr(est, "coef_")
    assert not hasattr(pre, "keep_")
    assert sig.estimator is not est
    assert sig.preprocessing is not pre
    assert sig.estimator.get_params() == est.get_params()
    assert hasattr(sig.estimator, "coef_")


def test_the_same_seed_gives_the_same_signature(adata_factory):
    adata = adata_factory(n_samples=36, n_genes=12, seed=4)
    fits = [fit_signature(_data(adata), estimator=ARDClassifier(cv=3, cv_repeats=2,
                                                                random_state=5))
            for _ in range(2)]
    pd.testing.assert_frame_equal(fits[0].ranked, fits[1].ranked, check_exact=True)
    pd.testing.assert_frame_equal(fits[0].frontier, fits[1].frontier, check_exact=True)
    assert fits[0].model.to_json() == fits[1].model.to_json()


def test_the_signature_is_frozen(fitted):
    _, _, sig = fitted
    with pytest.raises(dataclasses.FrozenInstanceError):
        sig.ranked = None


def test_positive_codes_the_labels(adata_factory):
    adata = adata_factory(n_samples=30, n_genes=8, seed=3)
    sig = fit_signature(_data(adata), estimator=ARDClassifier(criterion="loo"), positive="ctrl")
    assert sig.positive == "ctrl"
    assert sig.classes == ["case", "ctrl"]
    assert sig.problems == ["ctrl"]
    assert json.loads(sig.model.to_json())["positive"] == "ctrl"
    with pytest.raises(ardselect.exceptions.LabelError, match="positive class 'nope' is not a label"):
        fit_signature(_data(adata), positive="nope")


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"estimator": Preprocessor()}, "estimator must be an ARDClassifier or a SpikeSlabClassifier"),
    ({"preprocessor": ARDClassifier()}, "preprocessor must be an ardselect.preprocessing"),
])
def test_settings_of_another_type_are_refused(adata_factory, kwargs, match):
    with pytest.raises(TypeError, match=match):
        fit_signature(_data(adata_factory(n_samples=12, n_genes=4)), **kwargs)


# ---- rank_genes: settings are objects, not keywords ----------------------------------------

@pytest.mark.parametrize(("kwargs", "hint"), [
    ({"log": "log10"}, r"pass preprocessor=ardselect\.preprocessing\.Preprocessor\(log=\.\.\.\)"),
    ({"standardize": False}, r"Preprocessor\(standardize=\.\.\.\)"),
    ({"criterion": "loo"}, r"pass estimator=ardselect\.ARDClassifier\(criterion=\.\.\.\)"),
    ({"max_steps": 30}, r"ARDClassifier\(max_steps=\.\.\.\)"),
    ({"estimator_params": {"tol": 1e-3}}, r"ARDClassifier\(\*\*estimator_params\)"),
    ({"model": "spike-slab"}, r"pass estimator=ardselect\.SpikeSlabClassifier\(\)"),
    ({"n_genes": 5}, r"$"),  # not a setting: Python's message alone
])
def test_rank_genes_refuses_keywords_it_does_not_take(adata_factory, kwargs, hint):
    adata = adata_factory(n_samples=24, n_genes=6, seed=8)
    name = next(iter(kwargs))
    with pytest.raises(TypeError, match=rf"rank_genes\(\) got an unexpected keyword argument "
                                        rf"'{name}'.*{hint}"):
        ardselect.rank_genes(adata, "label", **kwargs)
    assert "ardselect" not in adata.uns


def test_defaults_do_not_warn(adata_factory):
    adata = adata_factory(n_samples=24, n_genes=6, seed=7)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ardselect.rank_genes(adata, "label")
    assert "ardselect" in adata.uns
