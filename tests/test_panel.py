"""The panel budget: at most N distinct genes over all classes (``ARDClassifier(panel=N)``, ``--panel``)."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pandas as pd
import pytest

from ardselect import ARDClassifier
from ardselect.estimators._panel import choose_panel
from ardselect.exceptions import ParameterError
from conftest import one_error, run_cli


def _exhaustive(losses, genes, panel, upto):
    """Least summed log-loss over every combination of sizes whose genes fit the panel."""
    best = None
    for pick in itertools.product(*[range(u + 1) for u in upto]):
        union = frozenset().union(*(genes[i][j] for i, j in enumerate(pick)))
        total = sum(losses[i][j] for i, j in enumerate(pick))
        if len(union) <= panel and (best is None or total < best - 1e-12):
            best = total
    return best


def _frontiers(rng, n_classes=4, pool=15, sizes=(0, 1, 2, 3, 5, 8)):
    """Random frontiers as paths make them: nested genes per class, overlapping across classes."""
    losses, genes = [], []
    for _ in range(n_classes):
        ll = 1.0 / (1.0 + np.cumsum(rng.exponential(1.0, len(sizes))))
        ll[0] = 1.0
        losses.append(list(np.minimum.accumulate(ll + rng.normal(0.0, 0.02, len(sizes)))))
        order = rng.permutation(pool)
        genes.append([frozenset(order[:s].tolist()) for s in sizes])
    return losses, genes


def test_choose_panel_on_a_tiny_frontier_is_the_exhaustive_optimum():
    # Class 0's second gene is class 1's first: a panel of 3 holds class 0 at 2 genes, class 1
    # at 1 (sharing g2) and class 2 at 1.
    losses = [[1.0, 0.5, 0.2], [1.0, 0.4, 0.35], [1.0, 0.9, 0.1]]
    genes = [[set(), {"g1"}, {"g1", "g2"}], [set(), {"g2"}, {"g2", "g3"}],
             [set(), {"g4"}, {"g4", "g5"}]]
    for panel in range(0, 7):
        pick = choose_panel(losses, genes, panel)
        union = set().union(*(genes[i][j] for i, j in enumerate(pick)))
        assert len(union) <= panel
        total = sum(losses[i][j] for i, j in enumerate(pick))
        assert total == pytest.approx(_exhaustive(losses, genes, panel, [2, 2, 2]))
    assert choose_panel(losses, genes, 3) == [2, 1, 1]


def test_choose_panel_against_exhaustive_search_on_random_frontiers():
    rng = np.random.default_rng(1)
    gaps = []
    for _ in range(80):
        losses, genes = _frontiers(rng)
        upto = [len(g) - 1 for g in genes]
        for panel in (3, 6, 10):
            pick = choose_panel(losses, genes, panel, upto)
            assert len(frozenset().union(*(genes[i][j] for i, j in enumerate(pick)))) <= panel
            total = sum(losses[i][j] for i, j in enumerate(pick))
            best = _exhaustive(losses, genes, panel, upto)
            assert total >= best - 1e-12
            gaps.append(total - best)
    gaps = np.array(gaps)
    # A heuristic: the optimum in at least 95% of these cases, never far from it.
    assert np.mean(gaps < 1e-9) >= 0.95
    assert gaps.max() < 0.1


def test_choose_panel_keeps_the_free_choice_when_it_fits_and_refuses_too_small_a_panel():
    losses = [[1.0, 0.5, 0.6], [1.0, 0.3, 0.2]]
    genes = [[set(), {"a"}, {"a", "b"}], [set(), {"c"}, {"c", "d"}]]
    assert choose_panel(losses, genes, 10, upto=[1, 2]) == [1, 2]
    assert choose_panel(losses, genes, 2, upto=[1, 2]) == [1, 1]  # 0.8 beats [0, 2]: 1.2
    with pytest.raises(ValueError, match="smaller than the smallest models"):
        choose_panel(losses, [[{"a"}], [{"b"}]], 1, upto=[0, 0])


@pytest.fixture(scope="module")
def srbct(shared_data):
    """Khan SRBCT (4 classes, 63 samples), standardised."""
    df = pd.read_csv(shared_data / "khan_srbct" / "khan_srbct.csv.gz")
    X = df.drop(columns=["sample_id", "label"]).to_numpy()[:, :400]
    return (X - X.mean(0)) / X.std(0), df["label"].to_numpy()


def _union(est):
    return int(np.sum(np.any(np.atleast_2d(est.coef_) != 0, axis=0)))


@pytest.fixture(scope="module")
def srbct_free(srbct):
    return ARDClassifier(cv=3, certainty=False, n_jobs=1).fit(*srbct)


@pytest.mark.parametrize("panel", [1, 4, 9, 25])
def test_the_union_never_exceeds_the_panel_on_real_multiclass_data(srbct, srbct_free, panel):
    X, y = srbct
    est = ARDClassifier(cv=3, certainty=False, n_jobs=1, panel=panel, multiclass="ovr").fit(X, y)
    assert _union(est) <= panel
    assert (np.atleast_2d(est.coef_) != 0).sum(axis=1).max() <= panel
    r = est.cv_results_
    chosen = r[r["chosen"]].set_index("class")["n_genes"]
    free = srbct_free.cv_results_
    free_chosen = free[free["chosen"]].set_index("class")["n_genes"]
    # Each class keeps at most the genes it would choose alone.
    assert (chosen <= free_chosen.loc[chosen.index]).all()
    # The re-choice on a fit without the panel gives the same number of genes per class.
    again = srbct_free._at_panel(panel)
    assert _union(again) <= panel
    if panel in set(free["n_genes"]):
        np.testing.assert_array_equal((again.coef_ != 0).sum(axis=1), (est.coef_ != 0).sum(axis=1))


def test_a_panel_larger_than_the_free_union_changes_nothing(srbct, srbct_free):
    X, y = srbct
    big = ARDClassifier(cv=3, certainty=False, n_jobs=1, panel=1000, multiclass="ovr").fit(X, y)
    np.testing.assert_array_equal(big.coef_ != 0, srbct_free.coef_ != 0)
    np.testing.assert_allclose(big.predict_proba(X), srbct_free.predict_proba(X))


@pytest.fixture(scope="module")
def srbct_shared6(srbct):
    return ARDClassifier(cv=3, certainty=False, n_jobs=1, multiclass="shared", panel=6).fit(*srbct)


def test_shared_panel_is_the_best_shared_size_within_it(srbct_shared6):
    est = srbct_shared6
    assert _union(est) <= 6
    pooled = est._fits[0].joint_losses
    under = {k: v for k, v in pooled.items() if k <= 6}
    r = est.cv_results_
    chosen = r.loc[r["chosen"], "n_genes"].unique()
    assert chosen.size == 1
    assert chosen[0] in (min(under, key=under.get), 0)


def test_auto_is_shared_with_a_panel_and_one_vs_rest_without(srbct, srbct_free, srbct_shared6):
    from ardselect.choices import resolve_multiclass

    X, y = srbct
    assert ARDClassifier().get_params()["multiclass"] == "auto"
    assert [resolve_multiclass("auto", p) for p in (None, 1, 50)] == ["ovr", "shared", "shared"]
    assert [resolve_multiclass(m, 5) for m in ("ovr", "shared")] == ["ovr", "shared"]
    auto = ARDClassifier(cv=3, certainty=False, n_jobs=1, panel=6).fit(X, y)
    np.testing.assert_array_equal(auto.coef_, srbct_shared6.coef_)
    np.testing.assert_array_equal(auto.predict_proba(X), srbct_shared6.predict_proba(X))
    # One path for all classes with the panel; one per class without it (the default fit).
    assert auto._joint
    assert not srbct_free._joint


def test_parameter_checks():
    X = np.random.default_rng(0).normal(size=(30, 5))
    y = np.repeat([0, 1, 2], 10)
    for bad in (0, -3, 2.5, "10"):
        with pytest.raises(ParameterError, match="'panel' parameter"):
            ARDClassifier(panel=bad).fit(X, y)
    for criterion in ("loo", "loo-prob", "evidence"):
        with pytest.raises(ParameterError, match="max_genes"):
            ARDClassifier(panel=5, criterion=criterion).fit(X, y)
    assert ARDClassifier().get_params()["panel"] is None


def test_panel_and_max_genes_together(srbct):
    X, y = srbct
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = ARDClassifier(cv=3, certainty=False, n_jobs=1, panel=12, max_genes=2,
                            multiclass="ovr").fit(X, y)
    assert _union(est) <= 12
    assert (np.atleast_2d(est.coef_) != 0).sum(axis=1).max() <= 2


# ------------------------------------------------------------------------------ command line
@pytest.fixture(scope="module")
def multi_csv(tmp_path_factory):
    """Four classes, each marked by its own gene (a small table: fast fits)."""
    from conftest import make_expression

    path = tmp_path_factory.mktemp("multi") / "multi.csv"
    make_expression(n_samples=48, n_genes=16, n_classes=4, seed=3).to_csv(path, index=False)
    return path


def test_cli_panel(multi_csv, tmp_path):
    out = tmp_path / "panel"
    result = run_cli("fit", multi_csv, "--panel", "2", "--no-certainty", "-j", "1", "-q",
                     "-o", out)
    assert result.exit_code == 0, result.stderr
    genes = pd.read_csv(out / "genes.tsv", sep="\t", keep_default_na=False)
    # Each of the four classes has its own marker gene: two genes make the budget bind.
    assert 0 < genes.loc[genes["selected"], "gene"].nunique() <= 2
    page = (out / "report.html").read_text()
    assert "panel 2" in page
    assert "multiclass shared" in page  # --multiclass auto: one gene list for a panel
    ovr = tmp_path / "ovr"
    result = run_cli("fit", multi_csv, "--panel", "2", "--multiclass", "ovr", "--no-certainty",
                     "--no-figures", "-j", "1", "-q", "-o", ovr)
    assert result.exit_code == 0, result.stderr
    assert "multiclass ovr" in (ovr / "report.html").read_text()


@pytest.mark.parametrize(("args", "pattern"), [
    (("--panel", "0"), r"--panel must be a number of genes \(1 or more\), got 0"),
    (("--panel", "5", "--criterion", "loo"), r"--panel .* not with --criterion loo"),
])
def test_cli_panel_refused(multi_csv, tmp_path, args, pattern):
    out = tmp_path / "refused"
    result = run_cli("fit", "--no-figures", multi_csv, *args, "-o", out)
    one_error(result, 2, pattern)
    assert not out.exists()


def test_cli_spike_slab_refuses_panel(multi_csv, tmp_path):
    result = run_cli("fit", "--no-figures", multi_csv, "--model", "spike-slab", "--panel", "5",
                     "-o", tmp_path / "ss")
    assert result.exit_code == 2
    assert "--panel" in result.stderr
    assert not (tmp_path / "ss").exists()
