"""Group ARD across classes (``multiclass="shared"``): the joint engine against direct evaluation.

The joint objective is the sum of K virtual regressions' log marginal likelihoods sharing each
gene's precision. Its per-gene optimum is checked against a brute-force search, its gains against
the direct change of that sum (``log_marginal_virtual``, an independent Cholesky evaluation), its
one-class case against the single-problem engine, and the classifier built on it for the
properties the option promises.
"""

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from ardselect import ARDClassifier
from ardselect.engine._joint import joint_actions, joint_gain, joint_optimum
from ardselect.engine._sequential import (
    ADD,
    DELETE,
    NONE,
    REESTIMATE,
    candidate_actions,
    log_marginal_virtual,
    score_candidates,
)
from ardselect.numerics._ep import latent_posterior


def _brute_optimum(s, q, g_max=np.inf):
    """Each gene's max of the joint gain: a dense log grid, then a bounded search around its best."""
    grid = np.logspace(-10, 10, 40001)
    grid = grid[grid <= g_max] if np.isfinite(g_max) else grid
    if np.isfinite(g_max):
        grid = np.append(grid, g_max)
    best = np.zeros(s.shape[1])
    arg = np.zeros(s.shape[1])
    for j in range(s.shape[1]):
        vals = joint_gain(grid[:, None, None], s[None, :, j:j + 1], q[None, :, j:j + 1])[:, 0]
        i = int(np.argmax(vals))
        if vals[i] <= 0:
            continue
        lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, grid.size - 1)]
        r = minimize_scalar(lambda x, j=j: -joint_gain(np.array([x]), s[:, j:j + 1], q[:, j:j + 1])[0],
                            bounds=(lo, hi), method="bounded", options={"xatol": 1e-12 * hi})
        best[j], arg[j] = max(-r.fun, vals[i]), r.x if -r.fun >= vals[i] else grid[i]
    return arg, best


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4, 5])
@pytest.mark.parametrize("g_max", [np.inf, 2.0])
def test_joint_optimum_matches_brute_force(seed, g_max):
    rng = np.random.default_rng(seed)
    K, m = 4, 60
    # Scales from 1e-3 to 1e2 and classes that disagree: some genes' sums have two peaks.
    s = np.exp(rng.uniform(np.log(1e-3), np.log(1e2), size=(K, m)))
    q = rng.normal(size=(K, m)) * np.sqrt(s) * rng.choice([0.5, 3.0, 30.0], size=(K, m))
    g, val = joint_optimum(s, q, g_max)
    g_ref, val_ref = _brute_optimum(s, q, g_max)
    np.testing.assert_allclose(val, val_ref, rtol=1e-9, atol=1e-9)
    assert np.all(g <= g_max)
    # Where the optimum is in the model, it is where the gain is (the value already checked).
    np.testing.assert_allclose(joint_gain(g, s, q), val, rtol=1e-12, atol=1e-12)
    assert np.all((g == 0) == (val_ref <= 1e-9))


def test_joint_optimum_closed_form_for_one_class():
    rng = np.random.default_rng(3)
    s = rng.uniform(0.1, 10, size=(1, 200))
    q = rng.normal(size=(1, 200)) * 3
    g, val = joint_optimum(s, q)
    theta = q[0] ** 2 - s[0]
    g_ref = np.where(theta > 0, theta / s[0] ** 2, 0.0)
    np.testing.assert_allclose(g, g_ref, rtol=1e-10)
    r = q[0] ** 2 / s[0]
    np.testing.assert_allclose(val, np.where(theta > 0, 0.5 * (r - 1 - np.log(r)), 0.0),
                               rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize(("penalty", "alpha_min"), [(0.0, 0.0), (1.5, 0.0), (0.0, 0.3)])
def test_one_class_equals_the_single_problem_engine(penalty, alpha_min):
    rng = np.random.default_rng(4)
    m = 300
    S = rng.gamma(1.0, 2.0, m)
    Q = rng.normal(0, 2, m)
    alpha = np.where(rng.random(m) < 0.3, S + rng.gamma(1.0, 2.0, m), np.inf)
    allowed = rng.random(m) < 0.9
    a1, g1, n1 = candidate_actions(S, Q, alpha, allowed, alpha_min, penalty)
    a2, g2, n2 = joint_actions(S[None], Q[None], alpha, allowed, alpha_min, penalty)
    np.testing.assert_array_equal(a1, a2)
    np.testing.assert_allclose(np.where(np.isfinite(g1), g1, 0), np.where(np.isfinite(g2), g2, 0),
                               rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(np.isfinite(g1), np.isfinite(g2))
    moved = np.isin(a1, [ADD, REESTIMATE])  # the new precision of an action that keeps the gene
    assert moved.sum() > 10
    np.testing.assert_allclose(n1[moved], n2[moved], rtol=1e-10)


def _joint_problem(seed, n=25, m=15, K=3, n_active=4):
    """K virtual regressions on one design (rows signed per class), sharing the precisions."""
    rng = np.random.default_rng(seed)
    Phi = rng.normal(size=(n, m))
    y = rng.integers(0, K, n)
    signs = [np.where(y == k, 1.0, -1.0) for k in range(K)]
    designs = [sk[:, None] * Phi for sk in signs]
    bs = [rng.uniform(0.3, 3.0, n) for _ in range(K)]
    ts = [d[:, :3] @ np.array([1.5, -1.0, 0.7]) + rng.normal(size=n) / np.sqrt(b)
          for d, b in zip(designs, bs, strict=True)]
    alpha = np.full(m, np.inf)
    alpha[rng.choice(m, n_active, replace=False)] = rng.uniform(0.2, 5.0, n_active)
    return designs, bs, ts, alpha


def _joint_lml(designs, bs, ts, alpha):
    act = np.flatnonzero(np.isfinite(alpha))
    return sum(log_marginal_virtual(d[:, act], alpha[act], b, t)
               for d, b, t in zip(designs, bs, ts, strict=True))


@pytest.mark.parametrize(("seed", "penalty", "alpha_min"), [(5, 0.0, 0.0), (6, 1.2, 0.0),
                                                            (7, 0.0, 0.5)])
def test_every_joint_gain_is_the_direct_change_of_the_summed_evidence(seed, penalty, alpha_min):
    designs, bs, ts, alpha = _joint_problem(seed)
    act = np.flatnonzero(np.isfinite(alpha))
    S, Q = [], []
    for d, b, t in zip(designs, bs, ts, strict=True):
        post = latent_posterior(d[:, act], alpha[act], b, b * t)
        s_k, q_k = score_candidates(d, post, b, t)
        S.append(s_k)
        Q.append(q_k)
    allowed = np.ones(alpha.size, dtype=bool)
    action, gain, new = joint_actions(np.array(S), np.array(Q), alpha, allowed, alpha_min, penalty)
    before = _joint_lml(designs, bs, ts, alpha) - penalty * act.size
    seen = set()
    for j in range(alpha.size):
        if action[j] == NONE:  # out, and nothing to gain: it stays out
            assert not np.isfinite(alpha[j])
            assert gain[j] == -np.inf
            continue
        after_alpha = alpha.copy()
        after_alpha[j] = new[j] if action[j] != DELETE else np.inf
        after = (_joint_lml(designs, bs, ts, after_alpha)
                 - penalty * np.isfinite(after_alpha).sum())
        np.testing.assert_allclose(gain[j], after - before, rtol=1e-7, atol=1e-8)
        seen.add(int(action[j]))
        if action[j] in (ADD, REESTIMATE):
            assert new[j] >= alpha_min
            # No other precision does better for this gene (a scan of the direct objective).
            for a in new[j] * np.array([0.5, 0.9, 1.1, 2.0]):
                if a < alpha_min:
                    continue
                trial = alpha.copy()
                trial[j] = a
                assert _joint_lml(designs, bs, ts, trial) <= _joint_lml(
                    designs, bs, ts, after_alpha) + 1e-9
    assert {ADD, REESTIMATE} <= seen


def _blobs(seed, n_per=20, n_genes=40, K=4):
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(K), n_per)
    X = rng.normal(size=(y.size, n_genes))
    for k in range(K):  # class k raises genes 2k and 2k+1; gene 30 separates classes 0-1 from 2-3
        X[y == k, 2 * k:2 * k + 2] += 1.5
    X[:, 30] += np.where(y < 2, 1.0, -1.0)
    return X, np.array(["a", "b", "c", "d"])[y]


@pytest.mark.parametrize("criterion", ["loo", "evidence", "cv"])
def test_shared_classes_use_the_same_genes(criterion):
    X, y = _blobs(0)
    est = ARDClassifier(multiclass="shared", criterion=criterion).fit(X, y)
    used = est.coef_ != 0
    assert used.any()
    assert np.all(used == used[0])  # one gene set for every class
    steps = est.chosen_step_
    assert np.all(steps == steps[0])
    # The path records are the joint ones: the same in every class.
    path = est.path_
    per_class = [g.drop(columns=["class"]).reset_index(drop=True)
                 for _, g in path.groupby("class", sort=False)]
    for other in per_class[1:]:
        np.testing.assert_array_equal(other["log_evidence"], per_class[0]["log_evidence"])
    p = est.predict_proba(X)
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    assert np.mean(est.predict(X) == y) > 0.8
    if criterion == "cv":
        # One frontier per class, on the same sizes and steps; one size chosen for all.
        front = est.cv_results_
        sizes = [g["n_genes"].tolist() for _, g in front.groupby("class", sort=False)]
        assert all(s == sizes[0] for s in sizes)
        chosen = front[front.chosen]
        assert chosen.n_genes.nunique() == 1
        assert chosen.step.nunique() == 1
        assert len(chosen) == 4


def test_shared_at_step_takes_one_step_for_all_classes():
    X, y = _blobs(0)
    est = ARDClassifier(multiclass="shared", criterion="loo").fit(X, y)
    ev = est.choose_step("evidence")
    assert np.all(ev == ev[0])
    for step in (int(ev[0]), ev, 0):
        other = est.at_step(step)
        used = other.coef_ != 0
        assert np.all(used == used[0])
        assert np.all(other.chosen_step_ == other.chosen_step_[0])
    np.testing.assert_array_equal(est.at_step(int(ev[0])).coef_, est.at_step(ev).coef_)
    with pytest.raises(ValueError, match="same genes in every class"):
        est.at_step(np.array([0, 1, 0, 0]))
    # A one-vs-rest fit still takes one step per class, and not a single int with four classes.
    ovr = ARDClassifier(criterion="loo").fit(X, y)
    ovr.at_step(np.array([0, 1, 0, 0]))
    with pytest.raises(ValueError, match="an array of 4 int"):
        ovr.at_step(0)


def test_shared_evidence_is_the_sum_of_the_classes_evidences():
    X, y = _blobs(1)
    est = ARDClassifier(multiclass="shared", criterion="loo").fit(X, y)
    # Refit each class's EP at the chosen genes and precisions: the recorded joint evidence is
    # the sum of the classes' own, and the LOO error the mean.
    evid, loo = [], []
    for fit in est._fits:
        st = fit.steps[fit.chosen]
        ep = fit.problem.fit_sites(st.active, st.alpha, None, tol=1e-10)
        evid.append(ep.log_evidence)
        loo.append(np.mean(ep.cavity_mean < 0))
        rec = st.stats
    np.testing.assert_allclose(rec["log_evidence"], sum(evid), rtol=1e-5)
    np.testing.assert_allclose(rec["loo_error"], np.mean(loo), atol=1e-12)


def test_shared_is_reproducible_and_two_classes_are_unchanged():
    X, y = _blobs(2)
    a = ARDClassifier(multiclass="shared").fit(X, y)
    b = ARDClassifier(multiclass="shared").fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
    two = y != "d"
    two &= y != "c"
    o = ARDClassifier().fit(X[two], y[two])
    s = ARDClassifier(multiclass="shared").fit(X[two], y[two])
    np.testing.assert_array_equal(o.coef_, s.coef_)


def test_shared_fewer_genes_than_ovr_on_shared_signal():
    # Every class is told apart by the same 3 genes (different directions) among 60: ovr picks
    # them plus each class's own noise genes; the shared model keeps the union small.
    rng = np.random.default_rng(8)
    K, n_per = 4, 15
    y = np.repeat(np.arange(K), n_per)
    X = rng.normal(size=(y.size, 60))
    centers = rng.normal(scale=1.5, size=(K, 3))
    X[:, :3] += centers[y]
    o = ARDClassifier(criterion="loo").fit(X, y)
    s = ARDClassifier(criterion="loo", multiclass="shared").fit(X, y)
    n_o = int(np.sum(np.any(o.coef_ != 0, axis=0)))
    n_s = int(np.sum(np.any(s.coef_ != 0, axis=0)))
    assert n_s < n_o
    assert set(range(3)) <= set(np.flatnonzero(np.any(s.coef_ != 0, axis=0)))


def test_bad_multiclass_value_is_refused():
    X, y = _blobs(3)
    with pytest.raises(ValueError, match="multiclass"):
        ARDClassifier(multiclass="joint").fit(X, y)


def test_shared_sparse_and_dask_inputs_give_the_dense_fit():
    import scipy.sparse as sp

    X, y = _blobs(4, n_per=12, K=3)
    dense = ARDClassifier(multiclass="shared", criterion="loo").fit(X, y)
    sparse = ARDClassifier(multiclass="shared", criterion="loo").fit(sp.csr_matrix(X), y)
    np.testing.assert_allclose(sparse.coef_, dense.coef_, rtol=1e-7, atol=1e-9)
    da = pytest.importorskip("dask.array")
    lazy = ARDClassifier(multiclass="shared", criterion="loo").fit(
        da.from_array(X, chunks=(12, 40)), y)  # the path's passes run over the row chunks
    np.testing.assert_allclose(lazy.coef_, dense.coef_, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize(("penalty", "alpha_min", "seed"), [(0.0, 0.1, 0), (1.7, 0.1, 1),
                                                            (0.0, 1.0, 2)])
def test_one_class_joint_path_is_the_sequential_path(penalty, alpha_min, seed):
    # The K-class driver with one class takes the one-class path's steps exactly: the same start,
    # actions, genes and evidence (both score every gene: fewer than SCREEN_MIN_FEATURES).
    from ardselect.engine._joint import JointPath
    from ardselect.engine._problem import EPProbitProblem
    from ardselect.engine._sequential import SequentialPath

    rng = np.random.default_rng(seed)
    n, m = 30, 60
    X = rng.normal(size=(n, m))
    t = np.where(X[:, 0] - X[:, 1] + 0.5 * rng.normal(size=n) > 0, 1.0, -1.0)
    Phi = np.column_stack([X, np.ones(n)])
    Phi /= np.sqrt(np.mean(Phi**2, axis=0))
    allowed = np.ones(m + 1, dtype=bool)
    pen = np.full(m + 1, penalty)
    pen[m] = 0.0
    fixed = {m: 0.01}

    def problem():
        p = EPProbitProblem(Phi, allowed, loo_prob_scale=50.0, damping=1.0, ep_tol=1e-5,
                            ep_max_iter=200)
        p.release(Phi, t)
        return p

    one = SequentialPath(problem(), init="relevant", max_init=20, alpha_min=alpha_min,
                         penalty=pen, fixed=fixed, max_steps=300, tol=1e-5, patience=20).run()
    joint = JointPath([problem()], allowed, alpha_min=alpha_min, penalty=pen, fixed=fixed,
                      max_init=20, max_steps=300, tol=1e-5, patience=20).run()
    assert len(one.steps) > 5
    # And their pruning tails, down to every size.
    one.prune((0, 1, 2, 3, 5, 8, 13))
    joint.prune((0, 1, 2, 3, 5, 8, 13))
    assert "prune" in {s.action for s in one.steps}
    assert [s.action for s in joint.steps[0]] == [s.action for s in one.steps]
    assert [s.feature for s in joint.steps[0]] == [s.feature for s in one.steps]
    for a, b in zip(joint.steps[0], one.steps, strict=True):
        np.testing.assert_array_equal(a.active, b.active)
        np.testing.assert_allclose(a.alpha, b.alpha, rtol=1e-8)
        assert a.stats["log_evidence"] == pytest.approx(b.stats["log_evidence"], abs=1e-8)
