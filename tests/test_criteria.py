import numpy as np
import pytest

from ardselect.numerics._criteria import CRITERIA, PATH_CRITERIA, choose_step


@pytest.mark.parametrize("seed", range(5))
def test_each_criterion_picks_its_optimum_on_random_records(seed):
    """Every name in CRITERIA picks what it is documented to.

    The smallest LOO error (ties: smallest LOO error probability, fewest genes, first step), the
    first smallest LOO error probability, the largest evidence (records drawn with many ties).
    """
    rng = np.random.default_rng(seed)
    ev = rng.normal(size=30).round(1)
    loo = rng.integers(0, 4, size=30) / 10
    prob = rng.integers(0, 6, size=30) / 20
    size = rng.integers(1, 4, size=30)
    best = min(range(30), key=lambda i: (loo[i], prob[i], size[i], i))
    expected = {"loo": best,
                "loo-prob": int(np.flatnonzero(prob == prob.min())[0]),
                "evidence": int(np.argmax(ev))}
    assert set(PATH_CRITERIA) == set(expected)
    assert set(CRITERIA) == {"cv", *PATH_CRITERIA}  # "cv" needs refits: chosen in fit
    for criterion in PATH_CRITERIA:
        assert choose_step(ev, loo, prob, criterion, size) == expected[criterion], criterion


def test_loo_ties_go_to_the_smallest_error_probability_then_the_fewest_genes():
    ev = [-9.0, -7.0, -5.0, -4.0, -3.0, -2.0]
    loo = [0.05, 0.1, 0.05, 0.05, 0.05, 0.05]
    prob = [0.2, 0.01, 0.1, 0.1, 0.1, 0.15]
    size = [100, 3, 40, 16, 16, 2]
    # Steps 0, 2-5 share the smallest error; 2-4 the smallest probability among them; 3 and 4
    # the fewest genes among those: the first of them.
    assert choose_step(ev, loo, prob, "loo", size) == 3
    # Without sizes, the first step of the smallest probability among the smallest errors.
    assert choose_step(ev, loo, prob, "loo") == 2
    # A lower probability at a larger error does not compete; nor does a smaller model.
    assert choose_step(ev, loo, [0.2, 0.0, 0.3, 0.3, 0.3, 0.3], "loo", size) == 0
    # The other criteria are untouched: first best value.
    assert choose_step(ev, loo, prob, "loo-prob", size) == 1
    assert choose_step(ev, loo, prob, "evidence", size) == 5


def test_loo_error_probability_ties_are_exact():
    # The probability is compared exactly: a smaller one by one ulp wins over fewer genes.
    p = 0.1
    prob = [p, np.nextafter(p, 0.0)]
    assert choose_step([0, 0], [0.05, 0.05], prob, "loo", [2, 50]) == 1
    assert choose_step([0, 0], [0.05, 0.05], [p, p], "loo", [50, 2]) == 1


def test_float_noise_does_not_break_loo_ties():
    # Equal error counts whose fractions differ by rounding still tie (and go to the first step).
    assert choose_step([0, 1], [1 / 3, (1 / 3) * (1 + 1e-15)], [0, 0], "loo") == 0
    assert choose_step([0, 1], [(1 / 3) * (1 + 1e-15), 1 / 3], [0.2, 0.1], "loo") == 1


def test_nan_records_never_win_and_lengths_must_agree():
    assert choose_step([0, 0], [np.nan, 0.1], [0.0, 0.2], "loo") == 1
    assert choose_step([0, 0], [0.1, 0.1], [np.nan, 0.2], "loo") == 1
    with pytest.raises(ValueError, match="one record per step: got 2 LOO errors"):
        choose_step([0, 0], [0.1, 0.1], [0.1, 0.2], "loo", [3])


def test_unknown_criterion():
    with pytest.raises(ValueError, match="criterion must be one of"):
        choose_step([0], [0], [0], "aic")


# ---------------------------------------------------------------- leave-group-out cavities


@pytest.mark.parametrize("route", ["weight", "sample"])
def test_group_cavities_against_dense_algebra(route):
    # Joint cavity of a group's latents from the weight-space precision with the group's sites
    # taken out: Lambda_G = A + P' T P - P_G' T_G P_G, b_G = P' nu - P_G' nu_G.
    from ardselect.numerics._criteria import group_cavities
    from ardselect.numerics._ep import run_ep

    rng = np.random.default_rng(11)
    n, d = 24, (6 if route == "weight" else 40)
    P = rng.normal(size=(n, d)) * np.where(rng.random(n) < 0.5, -1, 1)[:, None]
    alpha = rng.uniform(0.5, 3.0, size=d)
    st = run_ep(P, alpha, tol=1e-10, max_iter=1000, route=route)
    groups = np.repeat(np.arange(6), 4)
    rng.shuffle(groups)
    mean, var, joint = group_cavities(st.post, P, st.tau, st.nu, groups)
    for g in range(6):
        idx = np.flatnonzero(groups == g)
        keep = groups != g
        Lam = np.diag(alpha) + P[keep].T @ (st.tau[keep, None] * P[keep])
        b = P[keep].T @ st.nu[keep]
        Sc = P[idx] @ np.linalg.solve(Lam, P[idx].T)
        mc = P[idx] @ np.linalg.solve(Lam, b)
        np.testing.assert_allclose(joint[g][1], Sc, rtol=1e-8, atol=1e-10)
        np.testing.assert_allclose(mean[idx], mc, rtol=1e-8, atol=1e-10)
        np.testing.assert_allclose(var[idx], np.diag(Sc), rtol=1e-8, atol=1e-10)
    # Singleton groups are EP's own per-sample cavities.
    m1, v1, _ = group_cavities(st.post, P, st.tau, st.nu, np.arange(n))
    np.testing.assert_allclose(m1, st.cavity_mean, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(v1, st.cavity_var, rtol=1e-8, atol=1e-10)


def test_leave_group_out_matches_refits_without_the_group():
    # The EP estimate against actual EP refits on the other groups, same genes and precisions
    # (selection is not redone in either), both with the model's calibration. Measured over seeds
    # 0-4 with the default of the variance-scale round: max |difference| of a probability
    # 0.002-0.007, mean 0.001-0.002, identical error counts, log-loss within 0.001.
    from ardselect import ARDClassifier
    from ardselect.numerics._ep import run_ep
    from ardselect.numerics._probit import probit_log_proba

    rng = np.random.default_rng(0)
    n, p = 60, 20
    donor = np.repeat(np.arange(12), 5)
    X = rng.normal(size=(n, p)) + 0.5 * rng.normal(size=(12, p))[donor]  # donor effects
    y = (X[:, 0] - X[:, 1] + 0.8 * rng.normal(size=n) > 0).astype(int)
    clf = ARDClassifier().fit(X, y)
    assert clf.variance_scale_[0] < 1.0  # the calibration of predict_proba applies here too
    est = clf.leave_group_out_proba(donor)
    fit = clf._fits[0]
    P = fit.problem.columns(fit.active)
    ref = np.empty_like(est)
    for g in range(12):
        te = donor == g
        st = run_ep(P[~te], fit.alpha_scaled, tol=1e-10, max_iter=1000)
        m, v = st.post.latent(P[te] * fit.signs[te][:, None])
        ref[te] = np.exp(probit_log_proba(m[:, None], v[:, None], clf.temperature_, 1.0,
                                          clf.variance_scale_, clf.calibration_offset_))
    np.testing.assert_allclose(est, ref, atol=0.01)
    assert np.abs(est - ref).mean() < 0.003
    np.testing.assert_array_equal(est.argmax(axis=1), ref.argmax(axis=1))
    np.testing.assert_allclose(est.sum(axis=1), 1.0)


def test_leave_group_out_multiclass_and_errors():
    from ardselect import ARDClassifier
    from ardselect.exceptions import DataError

    rng = np.random.default_rng(1)
    X = rng.normal(size=(45, 8))
    y = np.repeat(["a", "b", "c"], 15)
    for k in range(3):
        X[y == "abc"[k], k] += 2.0
    clf = ARDClassifier().fit(X, y)
    proba = clf.leave_group_out_proba(np.arange(45) // 3)
    assert proba.shape == (45, 3)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert (clf.classes_[proba.argmax(axis=1)] == y).mean() > 0.8
    with pytest.raises(DataError, match=r"one label per training sample \(45\)"):
        clf.leave_group_out_proba(np.arange(10))
