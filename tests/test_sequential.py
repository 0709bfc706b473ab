"""The sequential engine's scores and gains against direct evaluation of the marginal likelihood."""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize_scalar

from ardselect.engine._sequential import (
    ADD,
    DELETE,
    REESTIMATE,
    candidate_actions,
    log_marginal_virtual,
    score_candidates,
)
from ardselect.numerics._ep import latent_posterior
from tests.conftest import scripted_path_loop


def _problem(seed, n, m, n_active):
    rng = np.random.default_rng(seed)
    Phi = rng.normal(size=(n, m))
    w = np.zeros(m)
    w[:3] = [2.0, -1.5, 1.0]
    b = rng.uniform(0.5, 3.0, size=n)
    t = Phi @ w + rng.normal(size=n) / np.sqrt(b)
    alpha = np.full(m, np.inf)
    active = rng.choice(m, size=n_active, replace=False)
    alpha[active] = rng.uniform(0.2, 5.0, size=n_active)
    return Phi, b, t, alpha


def _lml(Phi, alpha, b, t):
    act = np.flatnonzero(np.isfinite(alpha))
    return log_marginal_virtual(Phi[:, act], alpha[act], b, t)


def _direct_s_q(Phi, alpha, b, t):
    act = np.flatnonzero(np.isfinite(alpha))
    C = np.diag(1 / b) + (Phi[:, act] / alpha[act]) @ Phi[:, act].T
    Ci = np.linalg.inv(C)
    return np.einsum("ij,ik,kj->j", Phi, Ci, Phi), Phi.T @ Ci @ t


@pytest.mark.parametrize(("n", "n_active", "route"), [(30, 4, "weight"), (8, 12, "sample")])
def test_scores_match_direct_formulas(n, n_active, route):
    Phi, b, t, alpha = _problem(1, n, 20, n_active)
    act = np.flatnonzero(np.isfinite(alpha))
    post = latent_posterior(Phi[:, act], alpha[act], b, b * t)
    assert post.route == route
    S, Q = score_candidates(Phi, post, b, t)
    S_d, Q_d = _direct_s_q(Phi, alpha, b, t)
    np.testing.assert_allclose(S, S_d, rtol=1e-8)
    np.testing.assert_allclose(Q, Q_d, rtol=1e-8, atol=1e-10)
    # Sparse input gives the same scores without densifying.
    S_s, Q_s = score_candidates(sp.csc_matrix(Phi), post, b, t)
    np.testing.assert_allclose(S_s, S, rtol=1e-10)
    np.testing.assert_allclose(Q_s, Q, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize(("seed", "n", "n_active"), [(2, 30, 4), (3, 40, 6), (4, 8, 12)])
def test_every_gain_equals_the_direct_change(seed, n, n_active):
    Phi, b, t, alpha = _problem(seed, n, 25, n_active)
    act = np.flatnonzero(np.isfinite(alpha))
    post = latent_posterior(Phi[:, act], alpha[act], b, b * t)
    S, Q = score_candidates(Phi, post, b, t)
    action, gain, new_alpha = candidate_actions(S, Q, alpha, np.ones(25, bool))
    base = _lml(Phi, alpha, b, t)
    seen = set()
    for j in np.flatnonzero(np.isfinite(gain)):
        changed = alpha.copy()
        changed[j] = new_alpha[j]
        direct = _lml(Phi, changed, b, t) - base
        assert gain[j] == pytest.approx(direct, rel=1e-7, abs=1e-9), (j, action[j])
        seen.add(int(action[j]))
    assert ADD in seen
    assert REESTIMATE in seen


def test_delete_gain_equals_the_direct_change():
    # Make a useless active feature: noise column with a small alpha; theta <= 0 -> delete.
    rng = np.random.default_rng(5)
    n = 40
    Phi = rng.normal(size=(n, 5))
    b = np.full(n, 2.0)
    t = 2 * Phi[:, 0] + rng.normal(size=n) / np.sqrt(2)
    alpha = np.array([0.3, 0.05, np.inf, np.inf, np.inf])
    act = np.flatnonzero(np.isfinite(alpha))
    post = latent_posterior(Phi[:, act], alpha[act], b, b * t)
    S, Q = score_candidates(Phi, post, b, t)
    action, gain, new_alpha = candidate_actions(S, Q, alpha, np.ones(5, bool))
    assert action[1] == DELETE
    changed = alpha.copy()
    changed[1] = np.inf
    assert gain[1] == pytest.approx(_lml(Phi, changed, b, t) - _lml(Phi, alpha, b, t), rel=1e-8)
    assert gain[1] > 0


def test_optimal_alpha_maximises_the_marginal_likelihood():
    Phi, b, t, alpha = _problem(6, 30, 10, 3)
    act = np.flatnonzero(np.isfinite(alpha))
    post = latent_posterior(Phi[:, act], alpha[act], b, b * t)
    S, Q = score_candidates(Phi, post, b, t)
    action, gain, new_alpha = candidate_actions(S, Q, alpha, np.ones(10, bool))
    for j in np.flatnonzero((action == ADD) | (action == REESTIMATE))[:4]:
        def neg(log_a, j=j):
            a = alpha.copy()
            a[j] = np.exp(log_a)
            return -_lml(Phi, a, b, t)

        res = minimize_scalar(neg, bounds=(-15, 15), method="bounded",
                              options={"xatol": 1e-10})
        assert np.log(new_alpha[j]) == pytest.approx(res.x, abs=1e-4)


def test_gains_at_the_floor_are_the_direct_change():
    # With a high floor most optima are below it: an addition or re-estimate goes to the floor,
    # and its gain is the change of the evidence there, not at the unconstrained optimum.
    Phi, b, t, alpha = _problem(8, 30, 25, 4)
    act = np.flatnonzero(np.isfinite(alpha))
    post = latent_posterior(Phi[:, act], alpha[act], b, b * t)
    S, Q = score_candidates(Phi, post, b, t)
    action, gain, new_alpha = candidate_actions(S, Q, alpha, np.ones(25, bool), alpha_min=2.0)
    base = _lml(Phi, alpha, b, t)
    at_floor = 0
    for j in np.flatnonzero(np.isfinite(gain) & (action == ADD)):
        changed = alpha.copy()
        changed[j] = new_alpha[j]
        assert gain[j] == pytest.approx(_lml(Phi, changed, b, t) - base, rel=1e-7, abs=1e-9)
        at_floor += new_alpha[j] == 2.0
    assert at_floor >= 2


def test_alpha_floor_and_disallowed_features():
    Phi, b, t, alpha = _problem(7, 30, 10, 3)
    act = np.flatnonzero(np.isfinite(alpha))
    post = latent_posterior(Phi[:, act], alpha[act], b, b * t)
    S, Q = score_candidates(Phi, post, b, t)
    allowed = np.ones(10, bool)
    allowed[[0, 1, 2]] = False
    action, gain, new_alpha = candidate_actions(S, Q, alpha, allowed, alpha_min=10.0)
    fin = np.isfinite(new_alpha)
    assert np.all(new_alpha[fin] >= 10.0)
    inactive_blocked = ~np.isfinite(alpha) & ~allowed
    assert np.all(gain[inactive_blocked] == -np.inf)


def test_sparse_sample_route_in_blocks_matches_dense(monkeypatch):
    import ardselect.engine._memory as design

    Phi, b, t, alpha = _problem(8, 8, 40, 12)
    Phi[np.abs(Phi) < 0.8] = 0.0
    act = np.flatnonzero(np.isfinite(alpha))
    post = latent_posterior(Phi[:, act], alpha[act], b, b * t)
    assert post.route == "sample"
    S, Q = score_candidates(Phi, post, b, t)
    monkeypatch.setattr(design, "SPARSE_BLOCK", 8 * 7)  # blocks of 7 columns
    S_s, Q_s = score_candidates(sp.csc_matrix(Phi), post, b, t)
    np.testing.assert_allclose(S_s, S, rtol=1e-10)
    np.testing.assert_allclose(Q_s, Q, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("penalty", [0.5, 3.0, np.r_[0.0, 0.0, np.full(23, 2.0)]])
def test_penalized_gains_are_the_direct_change_of_evidence_minus_penalty(penalty):
    # The objective is log ML - penalty * |model|. For every feature, the action and gain are
    # checked against a brute-force search: an inactive feature's best alpha (1-D search of the
    # direct log ML) against staying out; an active one's best alpha against deleting it. A
    # per-feature penalty (0 for some features, as for an intercept) is checked the same way.
    Phi, b, t, alpha = _problem(9, 30, 25, 6)
    act = np.flatnonzero(np.isfinite(alpha))
    post = latent_posterior(Phi[:, act], alpha[act], b, b * t)
    S, Q = score_candidates(Phi, post, b, t)
    action, gain, new_alpha = candidate_actions(S, Q, alpha, np.ones(25, bool), penalty=penalty)
    c = np.broadcast_to(penalty, (25,))
    base = _lml(Phi, alpha, b, t) - c[act].sum()

    def objective(a):
        return _lml(Phi, a, b, t) - c[np.isfinite(a)].sum()

    seen = set()
    for j in range(25):
        def neg(log_a, j=j):
            a = alpha.copy()
            a[j] = np.exp(log_a)
            return -objective(a)

        best_in = -minimize_scalar(neg, bounds=(-12, 12), method="bounded",
                                   options={"xatol": 1e-10}).fun - base
        out = alpha.copy()
        out[j] = np.inf
        best_out = objective(out) - base  # 0 for an inactive feature
        best = max(best_in, best_out)
        if best <= 1e-9:
            assert not gain[j] > 1e-6, j  # nothing worth doing
            continue
        assert gain[j] == pytest.approx(best, rel=1e-5, abs=1e-7), (j, action[j])
        expected = (DELETE if best_out > best_in else REESTIMATE) if np.isfinite(alpha[j]) else ADD
        assert action[j] == expected, j
        seen.add(int(action[j]))
    assert {ADD, DELETE} <= seen or {REESTIMATE, DELETE} <= seen


def test_a_deletion_that_lowers_the_objective_twice_ends_the_path():
    # PBMC 'CD4+/CD25 T Reg' on raw.X deleted and re-added SPIB every five steps for about 100
    # steps: each deletion lowered the objective (more evidence lost than penalty saved) and the
    # re-addition raised it, so the guard on additions never fired.
    script = [(1, DELETE, -3.0), (1, ADD, 1.0), (0, REESTIMATE, 1.5),
              (1, DELETE, -2.0), (1, ADD, 2.0), (2, ADD, 3.0)]
    loop = scripted_path_loop(script)._loop(np.array([1.0, 1.0, np.inf]))
    assert loop.taken == [("delete", 1), ("add", 1), ("reestimate", 0)]
    assert loop.converged
    assert loop.script == [(1, ADD, 2.0), (2, ADD, 3.0)]  # stopped at the repeated deletion


def test_one_deletion_that_lowers_the_objective_is_kept():
    # (the shared microarray sets have such deletions; their paths go on unchanged)
    script = [(1, DELETE, -3.0), (1, ADD, 1.0), (0, REESTIMATE, 1.5), (0, DELETE, 0.5),
              (2, ADD, 3.0)]
    loop = scripted_path_loop(script)._loop(np.array([1.0, 1.0, np.inf]))
    assert loop.taken == [("delete", 1), ("add", 1), ("reestimate", 0), ("delete", 0), ("add", 2)]
    assert loop.converged
    assert loop.script == []


# ---------------------------------------------------------------------------- the pruning tail
def _tail_problem(seed=0, n=40, m=30):
    from ardselect.engine._problem import EPProbitProblem

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, m))
    t = np.where(X[:, :6].sum(axis=1) + 0.5 * rng.normal(size=n) > 0, 1.0, -1.0)
    Phi = np.column_stack([X, np.ones(n)])
    Phi /= np.sqrt(np.mean(Phi**2, axis=0))
    prob = EPProbitProblem(t[:, None] * Phi, np.ones(m + 1, dtype=bool), loo_prob_scale=50.0,
                           damping=1.0, ep_tol=1e-8, ep_max_iter=500)
    return prob, m


def _run_tail(sizes, *, fixed=True, alpha_min=1.0):
    from ardselect.engine._sequential import SequentialPath

    prob, m = _tail_problem()
    path = SequentialPath(prob, init="relevant", alpha_min=alpha_min, tol=1e-6,
                          fixed={m: 0.01} if fixed else None).run()
    n_path = len(path.steps)
    path.prune(sizes)
    return prob, m, path, n_path


def test_the_pruning_tail_reaches_every_size_and_keeps_the_held_intercept():
    prob, m, path, n_path = _run_tail((0, 1, 2, 3, 5, 8))
    tail = path.steps[n_path:]
    start = int(np.sum(path.steps[n_path - 1].active != m))
    assert start > 8  # the path proper ends above every size asked for
    sizes = [int(np.sum(s.active != m)) for s in tail]
    assert {0, 1, 2, 3, 5, 8} <= set(sizes)
    assert sizes == sorted(sizes, reverse=True)  # it only goes down
    assert all(m in s.active for s in tail)  # the intercept is never deleted
    assert {s.action for s in tail} <= {"prune", "reestimate"}
    for s in tail:  # each step's records are EP's, at its own genes and precisions
        ep = prob.fit_sites(s.active, s.alpha, None, tol=1e-10)
        assert s.stats["log_evidence"] == pytest.approx(ep.log_evidence, abs=1e-5)
    # Without a held feature there is no empty model: the tail stops at one gene.
    _, m, free, n_free = _run_tail((0, 1, 2), fixed=False)
    assert min(int(s.active.size) for s in free.steps[n_free:]) == 1


def test_a_prune_deletes_the_genes_whose_deletion_costs_least():
    # One prune step against the deletion costs computed directly: log evidence of the virtual
    # regression with each gene left out, at the state the tail starts from.
    prob, m, path, n_path = _run_tail((4,))
    last = path.steps[n_path - 1]
    first = path.steps[n_path]
    assert first.action == "prune"
    b, t = last.state[0], last.state[1] / np.where(last.state[0] > 0, last.state[0], 1.0)
    P = prob.columns(last.active)
    full = log_marginal_virtual(P, last.alpha, b, t)
    genes = [k for k, j in enumerate(last.active) if j != m]
    cost = {int(last.active[k]): full - log_marginal_virtual(np.delete(P, k, axis=1),
                                                              np.delete(last.alpha, k), b, t)
            for k in genes}
    dropped = set(last.active) - set(first.active)
    assert len(dropped) == len(genes) - 4
    kept = set(cost) - dropped
    assert max(cost[j] for j in dropped) <= min(cost[j] for j in kept) + 1e-9


def test_the_tail_re_estimates_the_remaining_precisions():
    # After a prune the remaining genes' precisions are re-estimated for the new sites until no
    # re-estimate gains more than tol: no gene is left far from its optimum.
    prob, m, path, n_path = _run_tail((8,), alpha_min=0.5)
    end = path.steps[-1]
    tau, nu = end.state
    b, t = tau, nu / np.where(tau > 0, tau, 1.0)
    from ardselect.numerics._ep import LatentPosterior

    post = LatentPosterior(prob.columns(end.active), end.alpha, tau, nu)
    S, Q = score_candidates(prob.columns(end.active), post, b, t)
    act, gain, _ = candidate_actions(S, Q, end.alpha, np.zeros(end.active.size, dtype=bool), 0.5)
    genes = end.active != m
    assert path.steps[-1].action == "reestimate"
    # (the tail may not re-estimate the same gene twice in a row: its last gene is exempt)
    others = genes & (end.active != path.steps[-1].feature)
    assert np.all(gain[others & (act == REESTIMATE)] <= 1e-6 + 1e-9)
