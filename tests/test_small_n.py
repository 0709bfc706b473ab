"""cv_rule="min+paper": below 500 samples the paper-settings LOO model competes with the frontier."""

import warnings

import numpy as np
import pytest
from scipy.special import log_ndtr

from ardselect import ARDClassifier
from ardselect.estimators._calibration import fit_calibration
from ardselect.estimators._classifier import PAPER_SETTINGS
from ardselect.estimators._cv import PAPER_SE, SMALL_N, make_folds
from ardselect.numerics._probit import moderated_latent


def _sparse(seed=0, n=40, d=40, k=5):
    """The paper's synthetic design, smaller: separable labels from ``k`` of ``d`` features."""
    rng = np.random.default_rng(seed)
    w = np.zeros(d)
    w[rng.choice(d, size=k, replace=False)] = rng.normal(-0.5, 1.0, size=k)
    X = rng.normal(size=(n, d))
    return X, (X @ w > 0).astype(int)


def _fit(X, y, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ARDClassifier(cv_rule="min+paper", certainty=False, **kw).fit(X, y)


def test_the_choice_is_made_only_below_500_samples():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(SMALL_N, 3))
    y = (X[:, 0] + rng.normal(size=SMALL_N) > 0).astype(int)
    assert not hasattr(_fit(X, y), "cv_choice_")
    clf = _fit(X[:-1], y[:-1])
    assert list(clf.cv_choice_["rule"]) in (["frontier"], ["loo"])
    # The default rule never makes it, and a refit with it drops the last fit's table.
    clf.set_params(cv_rule="min").fit(X[:-1], y[:-1])
    assert not hasattr(clf, "cv_choice_")


def test_the_choice_table_and_the_model_kept():
    X, y = _sparse()
    clf = _fit(X, y)
    row = clf.cv_choice_.iloc[0]
    assert set(clf.cv_choice_.columns) == {
        "class", "rule", "frontier_genes", "loo_genes", "frontier_log_loss", "loo_log_loss",
        "difference", "difference_se"}
    assert row["difference"] == pytest.approx(row["loo_log_loss"] - row["frontier_log_loss"])
    # On this draw the LOO model wins by more than the margin, and it is the model kept: the
    # paper-settings fit's LOO model, with the calibration fitted on its held-out latents.
    assert row["rule"] == "loo"
    assert row["difference"] < -PAPER_SE * row["difference_se"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        paper = ARDClassifier(criterion="loo", certainty=False, **PAPER_SETTINGS).fit(X, y)
    np.testing.assert_array_equal(clf.get_support(), paper.get_support())
    np.testing.assert_allclose(clf.coef_, paper.coef_, rtol=1e-10, atol=1e-12)
    assert int(clf.get_support().sum()) == row["loo_genes"]
    assert clf.temperature_[0] <= 1.0
    # The frontier's own choice is unchanged in cv_results_.
    assert clf.cv_results_.loc[clf.cv_results_["chosen"], "n_genes"].item() == row[
        "frontier_genes"]


def test_the_loo_score_is_that_of_refits_on_the_folds():
    """The LOO model's held-out score equals fitting the paper settings on each fold anew."""
    X, y = _sparse()
    clf = _fit(X, y)
    folds = make_folds(y, 5, 1, 0)
    m, v = np.zeros(y.size), np.zeros(y.size)
    for train, test, _ in folds:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = ARDClassifier(criterion="loo", certainty=False, **PAPER_SETTINGS).fit(
                X[train], y[train])
        mm, vv = ref._latent(X[test])
        m[test], v[test] = mm[:, 0], vv[:, 0]
    t = np.where(y == 1, 1.0, -1.0)
    cal, _ = fit_calibration(m, v, t)
    z = cal.offset + moderated_latent(m, v, cal.temperature, cal.variance_scale)
    # (the refits' models are converged to 1e-9, the fold paths' steps to ep_tol)
    assert clf.cv_choice_["loo_log_loss"].item() == pytest.approx(
        float(np.mean(-log_ndtr(t * z))), rel=1e-3)


def test_multiclass_choices_and_seeds_reproduce():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(45, 8))
    y = np.argmax(X[:, :3] + rng.normal(size=(45, 3)), axis=1)
    a = _fit(X, y, random_state=4)
    b = _fit(X, y, random_state=4, n_jobs=1)
    assert len(a.cv_choice_) == 3
    assert a.cv_choice_.equals(b.cv_choice_)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
    # Another seed draws other folds.
    c = _fit(X, y, random_state=5)
    assert not np.array_equal(a.cv_choice_["loo_log_loss"], c.cv_choice_["loo_log_loss"])


def test_not_applied_with_a_gene_budget_or_shared_paths():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(45, 10))
    y = np.argmax(X[:, :3], axis=1)
    assert not hasattr(_fit(X, y, max_genes=2), "cv_choice_")
    assert not hasattr(_fit(X, y, multiclass="shared"), "cv_choice_")
