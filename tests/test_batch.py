"""Several actions per EP refresh: rank-one updates against direct formulas, and the path's guards."""

import numpy as np
import pytest
import scipy.sparse as sp

from ardselect.engine._batch import FixedSites
from ardselect.engine._problem import EPProbitProblem, signed
from ardselect.engine._sequential import ADD, DELETE, REESTIMATE, SequentialPath, candidate_actions


def _direct(Phi, alpha, b, t):
    """``S``, ``Q`` of every column and ``(Sigma, mu)`` of the active weights, from scratch."""
    act = np.flatnonzero(np.isfinite(alpha))
    C = np.diag(1 / b) + (Phi[:, act] / alpha[act]) @ Phi[:, act].T
    Ci = np.linalg.inv(C)
    S = np.einsum("ij,ik,kj->j", Phi, Ci, Phi)
    Q = Phi.T @ Ci @ t
    H = np.diag(alpha[act]) + Phi[:, act].T @ (b[:, None] * Phi[:, act])
    Sigma = np.linalg.inv(H)
    return S, Q, act, Sigma, Sigma @ Phi[:, act].T @ (b * t)


@pytest.mark.parametrize("sparse", [False, True])
def test_rank_one_updates_equal_a_fresh_computation(sparse):
    rng = np.random.default_rng(4)
    n, m = 40, 25
    Phi = rng.normal(size=(n, m))
    b = rng.uniform(0.3, 2.0, size=n)
    t = Phi[:, :3] @ np.array([1.5, -1.0, 0.7]) + rng.normal(size=n) / np.sqrt(b)
    alpha = np.full(m, np.inf)
    alpha[[0, 5, 9]] = [1.0, 2.0, 0.5]
    design = sp.csc_matrix(Phi) if sparse else Phi

    def columns(idx):
        return Phi[:, idx]

    fs = FixedSites(design, columns, np.flatnonzero(np.isfinite(alpha)), alpha[np.isfinite(alpha)],
                    b, t)
    actions = [(1, ADD, 0.8), (5, REESTIMATE, 7.0), (9, DELETE, np.inf), (2, ADD, 3.0),
               (0, REESTIMATE, 0.1), (1, DELETE, np.inf), (12, ADD, 1.0)]
    for j, action, a_new in actions:
        fs.apply(j, action, alpha[j], a_new)
        alpha[j] = a_new
        S, Q, act, Sigma, mu = _direct(Phi, alpha, b, t)
        np.testing.assert_allclose(fs.S, S, rtol=1e-9)
        np.testing.assert_allclose(fs.Q, Q, rtol=1e-9, atol=1e-10)
        order = np.argsort(fs.active)  # FixedSites keeps the order of entry
        assert np.array_equal(np.asarray(fs.active)[order], act)
        np.testing.assert_allclose(fs.Sigma[np.ix_(order, order)], Sigma, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(fs.mu[order], mu, rtol=1e-9, atol=1e-12)


def _probit_problem(seed, n=600, m=60, k=4):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, m))
    w = rng.uniform(0.3, 1.2, size=k) * rng.choice([-1.0, 1.0], size=k)
    y = np.where(X[:, :k] @ w + 0.5 * rng.normal(size=n) > 0, 1.0, -1.0)
    return EPProbitProblem(signed(X, y), np.ones(m, dtype=bool), loo_prob_scale=50.0, damping=1.0,
                           ep_tol=1e-3, ep_max_iter=200)


def test_a_batched_path_ends_where_no_single_action_gains_and_every_batch_raised_the_objective():
    prob = _probit_problem(1)
    path = SequentialPath(prob, init="relevant", tol=1e-2, alpha_min=10.0, batch=4).run()
    assert path.converged
    assert any(s.action == "batch" for s in path.steps)
    ev = [s.stats["log_evidence"] for s in path.steps]
    for k, s in enumerate(path.steps):
        if s.action == "batch":
            assert ev[k] > ev[k - 1]
    # At the refreshed sites of the last step, no action gains more than tol.
    last = path.steps[-1]
    alpha = np.full(prob.design.shape[1], np.inf)
    alpha[last.active] = last.alpha
    b, t, post, _, _ = prob.refresh(last.active, last.alpha, last.state)
    S, Q = prob.scores(post, b, t)
    _, gain, _ = candidate_actions(S, Q, alpha, prob.allowed, 10.0)
    assert gain.max() <= 1e-2 + 1e-6
    # The batched path ends at an evidence as high as the one-action path's (to EP's tolerance).
    single = SequentialPath(_probit_problem(1), init="relevant", tol=1e-2, alpha_min=10.0).run()
    assert ev[-1] >= single.steps[-1].stats["log_evidence"] - 0.5


def test_batch_of_one_is_the_one_action_path():
    a = SequentialPath(_probit_problem(2, n=200, m=30), init="relevant", tol=1e-2, alpha_min=10.0,
                       batch=1).run()
    b = SequentialPath(_probit_problem(2, n=200, m=30), init="relevant", tol=1e-2, alpha_min=10.0,
                       batch=0).run()
    assert [s.action for s in a.steps] == [s.action for s in b.steps]
    assert [s.feature for s in a.steps] == [s.feature for s in b.steps]


def test_a_batched_pruning_tail_reaches_every_size_as_high_as_the_one_action_tail():
    sizes = (1, 2, 5, 10, 20)
    runs = {}
    for k in (0, 4):
        path = SequentialPath(_probit_problem(3, n=500, m=40, k=25), init="relevant", tol=1e-2,
                              alpha_min=0.01, tail_batch=k).run()
        n_path = len(path.steps)
        path.prune(sizes)
        tail = path.steps[n_path:]
        best = {}
        for s in tail:
            d = s.active.size
            best[d] = max(best.get(d, -np.inf), s.stats["log_evidence"])
        runs[k] = (tail, best)
    tail, best = runs[4]
    assert any(s.action == "batch" for s in tail)
    assert set(best) == set(runs[0][1]) >= set(sizes)
    for k, s in enumerate(tail[1:], start=1):
        if s.action == "batch":
            assert s.stats["log_evidence"] > tail[k - 1].stats["log_evidence"]
    for d in sizes:  # the same re-estimates, refreshed less often: the same evidence to EP's tolerance
        assert best[d] == pytest.approx(runs[0][1][d], abs=0.05)
