"""fit_signature and the Signature: the front door, its tables against what rank_genes stores."""

from __future__ import annotations

import dataclasses
import json
import re
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
    with pytest.raises(ardselect.LabelError, match="positive class 'nope' is not a label"):
        fit_signature(_data(adata), positive="nope")


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"estimator": Preprocessor()}, "estimator must be an ARDClassifier or a SpikeSlabClassifier"),
    ({"preprocessor": ARDClassifier()}, "preprocessor must be an ardselect.preprocessing"),
])
def test_settings_of_another_type_are_refused(adata_factory, kwargs, match):
    with pytest.raises(TypeError, match=match):
        fit_signature(_data(adata_factory(n_samples=12, n_genes=4)), **kwargs)


# ---- rank_genes: the deprecated keywords ------------------------------------------------------

@pytest.mark.parametrize(("old", "new", "hint"), [
    ({"log": "log10"}, {"preprocessor": Preprocessor(log="log10")},
     r"log is deprecated .* pass preprocessor=ardselect\.preprocessing\.Preprocessor\(log='log10'\)"),
    ({"criterion": "loo", "estimator_params": {"tol": 1e-3}},
     {"estimator": ARDClassifier(criterion="loo", tol=1e-3)},
     r"criterion, estimator_params are deprecated .* pass "
     r"estimator=ardselect\.ARDClassifier\(criterion='loo', tol=0\.001\) instead"),
    ({"max_steps": 30, "criterion": "evidence"},
     {"estimator": ARDClassifier(criterion="evidence", max_steps=30)},
     r"criterion, max_steps are deprecated .* "
     r"estimator=ardselect\.ARDClassifier\(criterion='evidence', max_steps=30\) instead"),
    ({"model": "spike-slab", "standardize": False},
     {"estimator": SpikeSlabClassifier(), "preprocessor": Preprocessor(standardize=False)},
     r"model is deprecated .* pass estimator=ardselect\.SpikeSlabClassifier\(\) instead"),
])
def test_deprecated_keywords_warn_and_fit_what_they_fitted(adata_factory, old, new, hint):
    adata = adata_factory(n_samples=30, n_genes=10, seed=6)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        old_fit = ardselect.rank_genes(adata, "label", copy=True, **old)
    said = [str(w.message) for w in record if w.category is FutureWarning]
    assert any(re.search(hint, text) for text in said), said
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        new_fit = ardselect.rank_genes(adata, "label", copy=True, **new)
    pd.testing.assert_frame_equal(ardselect.get.ranked_genes_df(old_fit),
                                  ardselect.get.ranked_genes_df(new_fit), check_exact=True)
    recorded = [{k: str(v) for k, v in fit.uns["ardselect"]["params"]["estimator_params"].items()}
                for fit in (old_fit, new_fit)]
    assert recorded[0] == recorded[1]


def test_defaults_do_not_warn(adata_factory):
    adata = adata_factory(n_samples=24, n_genes=6, seed=7)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ardselect.rank_genes(adata, "label")
    assert "ardselect" in adata.uns


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"log": "log10", "preprocessor": Preprocessor()},
     r"give preprocessor= or the deprecated log, not both"),
    ({"criterion": "loo", "estimator": ARDClassifier()},
     r"give estimator= or the deprecated criterion, not both"),
    ({"model": "spike-slab", "estimator": SpikeSlabClassifier()},
     r"give estimator= or the deprecated model, not both"),
])
def test_old_and_new_spelling_together_is_an_error(adata_factory, kwargs, match):
    adata = adata_factory(n_samples=24, n_genes=6, seed=8)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)  # the error comes first, without warning
        with pytest.raises(ValueError, match=match):
            ardselect.rank_genes(adata, "label", **kwargs)
    assert "ardselect" not in adata.uns
