"""Invariants that must hold for any data seed (slow: seeds 0 to 99)."""

import warnings

import numpy as np
import pytest

from ardselect import ARDClassifier, ep_probit

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("seed", range(100))
def test_invariants_for_any_seed(seed):
    rng = np.random.default_rng(seed)
    n, d = 24, 40
    X = rng.normal(size=(n, d)) * rng.uniform(0.1, 10, size=d)
    w = np.zeros(d)
    w[:3] = rng.normal(size=3)
    y = (X @ w + 0.5 * rng.normal(size=n) > 0).astype(int)
    if np.unique(y).size < 2:
        y[0] = 1 - y[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clf = ARDClassifier().fit(X, y)
    p = clf.path_
    assert np.all(np.isfinite(p[["log_evidence", "loo_error", "loo_prob_error"]].to_numpy()))
    assert np.all(np.isfinite(clf.coef_))
    assert np.all(clf.coef_sd_ >= 0)
    P = clf.predict_proba(X)
    assert np.all((P >= 0) & (P <= 1))
    assert np.allclose(P.sum(axis=1), 1)
    assert np.array_equal(clf.predict(X), clf.classes_[(P[:, 1] > 0.5).astype(int)])
    ev = clf.choose_step("evidence")  # one binary problem: one step
    # The maximum over the path proper (criterion="cv" adds its pruning tail after it).
    on_path = np.arange(len(p)) < clf._fits[0].n_path
    assert p["log_evidence"].iloc[ev[0]] == p.loc[on_path, "log_evidence"].max()
    # EP on the evidence model's features reproduces the recorded evidence (the intercept's
    # precision is that of the column of ones, inf when it is out of the model)
    m = clf.at_step(ev)
    alpha = np.append(m.alpha_[0], m.intercept_alpha_[0])
    Xb = np.column_stack([X, np.ones(n)])
    res = ep_probit(Xb, y, alpha, tol=1e-10)
    assert res.log_evidence == pytest.approx(p["log_evidence"].iloc[ev], abs=1e-3)
