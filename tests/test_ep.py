"""EP at fixed precisions: against brute-force quadrature, closed forms and a literal reference."""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import log_ndtr

from ardselect import ep_probit
from ardselect.exceptions import DataError, LabelError
from ardselect.numerics import _ep as ep_module
from ardselect.numerics._ep import latent_posterior, run_ep
from tests.reference.literal_ep import literal_ep


def _grid_posterior(P, alpha, half_width=12.0, n=1201):
    """Exact posterior mean and log evidence of the probit model by brute-force grid quadrature."""
    d = P.shape[1]
    g = np.linspace(-half_width, half_width, n)
    h = g[1] - g[0]
    W = np.stack(np.meshgrid(*([g] * d), indexing="ij"), axis=-1).reshape(-1, d)
    logp = (-0.5 * (W**2 @ alpha) + 0.5 * np.sum(np.log(alpha)) - 0.5 * d * np.log(2 * np.pi)
            + log_ndtr(P @ W.T).sum(axis=0))
    mx = logp.max()
    p = np.exp(logp - mx)
    log_Z = mx + np.log(p.sum() * h**d)
    mean = (W * p[:, None]).sum(axis=0) / p.sum()
    return mean, log_Z


def _toy(seed, n, d):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    w = rng.normal(size=d)
    y = np.where(X @ w + 0.7 * rng.normal(size=n) > 0, 1, -1)
    return X, y


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_1d_against_quadrature(seed):
    X, y = _toy(seed, 10, 1)
    alpha = np.array([0.5])
    res = ep_probit(X, y, alpha)
    mean, log_Z = _grid_posterior(y[:, None] * X, alpha, n=20001)
    # EP is an approximation, not exact: on small problems like these its log evidence lands within
    # about 0.03 nats of the truth (shared/design/ep-ard-math.md) and its mean within 1e-2. A missing
    # or wrong term in the evidence moves it by far more (the literal reference test is exact).
    assert res.log_evidence == pytest.approx(log_Z, abs=0.03)
    np.testing.assert_allclose(res.mean, mean, atol=1e-2)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_2d_against_quadrature(seed):
    X, y = _toy(seed, 8, 2)
    alpha = np.array([0.7, 1.3])
    res = ep_probit(X, y, alpha)
    mean, log_Z = _grid_posterior(y[:, None] * X, alpha)
    assert res.log_evidence == pytest.approx(log_Z, abs=0.03)
    np.testing.assert_allclose(res.mean, mean, atol=5e-3)


def test_single_sample_is_exact():
    # With one informative site EP's moment matching is exact: log Z = log Phi(0) for it, and the
    # second sample (x = 0) has the constant likelihood Phi(0).
    x = np.array([[0.8, -1.5], [0.0, 0.0]])
    alpha = np.array([2.0, 0.5])
    res = ep_probit(x, [1, 0], alpha)
    x = x[:1]
    v = np.sum(x**2 / alpha)
    assert res.log_evidence == pytest.approx(2 * log_ndtr(0.0), abs=1e-12)
    # Posterior mean of w: Sigma0 x * phi(0)/Phi(0) / sqrt(1 + v).
    expected = (x[0] / alpha) * (np.sqrt(2 / np.pi)) / np.sqrt(1 + v)
    np.testing.assert_allclose(res.mean, expected, rtol=1e-10)


def test_weak_likelihood_returns_the_prior():
    rng = np.random.default_rng(3)
    X = 1e-6 * rng.normal(size=(20, 3))
    y = rng.integers(0, 2, size=20)
    alpha = np.array([1.0, 4.0, 0.25])
    res = ep_probit(X, y, alpha)
    np.testing.assert_allclose(np.diag(res.cov), 1 / alpha, rtol=1e-6)
    np.testing.assert_allclose(res.mean, 0, atol=1e-5)
    assert res.log_evidence == pytest.approx(20 * log_ndtr(0.0), abs=1e-4)


@pytest.mark.parametrize("seed", [0, 4])
def test_fast_ep_matches_literal_reference(seed):
    X, y = _toy(seed, 12, 3)
    alpha = np.array([0.4, 1.0, 2.5])
    res = ep_probit(X, y, alpha, tol=1e-12)
    ref = literal_ep(y[:, None] * X, alpha)
    np.testing.assert_allclose(res.mean, ref["mean"], rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(res.cov, ref["cov"], rtol=1e-7, atol=1e-9)
    assert res.log_evidence == pytest.approx(ref["log_Z"], abs=1e-8)
    np.testing.assert_allclose(res.cavity_mean, ref["mc"], rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(res.cavity_var, ref["vc"], rtol=1e-6)


def test_weight_and_sample_routes_agree():
    rng = np.random.default_rng(5)
    n, d = 9, 6
    P = rng.normal(size=(n, d))
    alpha = rng.uniform(0.2, 3, size=d)
    tau = rng.uniform(0.1, 2, size=n)
    nu = rng.normal(size=n)
    a = latent_posterior(P, alpha, tau, nu, route="weight")
    b = latent_posterior(P, alpha, tau, nu, route="sample")
    np.testing.assert_allclose(a.mean, b.mean, rtol=1e-10)
    np.testing.assert_allclose(a.cov(), b.cov(), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(a.var(), b.var(), rtol=1e-9)
    np.testing.assert_allclose(a.f_var, b.f_var, rtol=1e-9)
    assert a.log_det_B == pytest.approx(b.log_det_B, rel=1e-12)
    Xn = rng.normal(size=(4, d))
    for u, v in zip(a.latent(Xn), b.latent(Xn), strict=True):
        np.testing.assert_allclose(u, v, rtol=1e-9)
    # Direct p x p algebra as a third opinion.
    S = np.linalg.inv(np.diag(alpha) + P.T @ (tau[:, None] * P))
    np.testing.assert_allclose(a.cov(), S, rtol=1e-9)
    np.testing.assert_allclose(a.mean, S @ P.T @ nu, rtol=1e-9)
    st_w = run_ep(P, alpha, route="weight", tol=1e-12)
    st_s = run_ep(P, alpha, route="sample", tol=1e-12)
    assert st_w.log_evidence == pytest.approx(st_s.log_evidence, abs=1e-9)


def test_loo_estimates_against_refits():
    """The cavity is EP's estimate of the posterior without sample i; compare with actual refits.

    Tolerance: EP's cavity is an approximation of the leave-one-out posterior. Typically the cavity
    mean agrees with the refitted predictive mean to 1% of the latent scale; for badly misclassified
    samples (large negative margin) the approximation is looser, up to ~12% here; the cavity variance
    typically agrees within 5% but is off by up to ~35% for that outlier. The LOO error counts
    (eq. 12) agree exactly.
    """
    X, y = _toy(7, 25, 2)
    alpha = np.array([1.0, 1.0])
    res = ep_probit(X, y, alpha, tol=1e-12)
    refit_mean = np.empty(25)
    refit_var = np.empty(25)
    for i in range(25):
        keep = np.arange(25) != i
        r = ep_probit(X[keep], y[keep], alpha, tol=1e-12)
        m, v = r.predict_latent(X[i : i + 1])
        refit_mean[i] = y[i] * m[0]
        refit_var[i] = v[0]
    scale = np.max(np.abs(refit_mean))
    err = np.abs(res.cavity_mean - refit_mean)
    assert np.median(err) < 0.01 * scale
    assert np.max(err) < 0.15 * scale
    rel_var = np.abs(res.cavity_var / refit_var - 1)
    assert np.median(rel_var) < 0.05
    assert np.max(rel_var) < 0.5
    assert res.loo_error == pytest.approx(np.mean(refit_mean < 0))


def test_loo_log_loss_against_refits():
    """EP's leave-one-out log-loss is close to the log-loss of actual refits without each sample."""
    X, y = _toy(11, 30, 3)
    alpha = np.array([1.0, 1.0, 1.0])
    res = ep_probit(X, y, alpha, tol=1e-12)
    refit = np.empty(30)
    for i in range(30):
        keep = np.arange(30) != i
        m, v = ep_probit(X[keep], y[keep], alpha, tol=1e-12).predict_latent(X[i : i + 1])
        refit[i] = -log_ndtr(y[i] * m[0] / np.sqrt(1.0 + v[0]))
    got = ep_module.loo_log_loss(res.cavity_mean, res.cavity_var)
    assert got == pytest.approx(refit.mean(), rel=0.02)
    assert got == pytest.approx(np.mean(-log_ndtr(res.cavity_mean / np.sqrt(1 + res.cavity_var))))


def test_loo_prob_error_uses_the_prescale():
    X, y = _toy(8, 30, 2)
    r1 = ep_probit(X, y, [1.0, 1.0], loo_prob_scale=1.0)
    r50 = ep_probit(X, y, [1.0, 1.0])
    z = r1.cavity_mean / np.sqrt(1 + r1.cavity_var)
    from scipy.stats import norm

    assert r1.loo_prob_error == pytest.approx(np.mean(norm.cdf(-z)), rel=1e-10)
    assert r50.loo_prob_error == pytest.approx(np.mean(norm.cdf(-50 * z)), rel=1e-8, abs=1e-300)


def test_label_encodings_and_sparse_and_float32_agree():
    X, y = _toy(9, 20, 3)
    alpha = np.array([1.0, np.inf, 0.5])
    base = ep_probit(X, y, alpha)
    assert base.active.tolist() == [0, 2]
    for labels in ((y > 0).astype(int), y > 0, np.where(y > 0, "pos", "neg")):
        np.testing.assert_allclose(ep_probit(X, labels, alpha).mean, base.mean, rtol=1e-12)
    np.testing.assert_allclose(ep_probit(sp.csr_matrix(X), y, alpha).mean, base.mean, rtol=1e-12)
    np.testing.assert_allclose(ep_probit(X.astype(np.float32), y, alpha).mean, base.mean,
                               rtol=1e-5)


def test_swapping_labels_flips_the_weights():
    X, y = _toy(10, 20, 2)
    a = ep_probit(X, y, [1.0, 1.0])
    b = ep_probit(X, -y, [1.0, 1.0])
    np.testing.assert_allclose(a.mean, -b.mean, rtol=1e-10)
    assert a.log_evidence == pytest.approx(b.log_evidence, rel=1e-12)


def test_separable_and_duplicated_features_stay_finite():
    X = np.array([[1.0], [2.0], [-1.0], [-3.0]])
    X = np.hstack([X, X, 1e6 * X])  # duplicates and a huge scale
    y = np.array([1, 1, -1, -1])
    res = ep_probit(X, y, np.array([1e-4, 1e-4, 1e-16]))
    assert res.converged
    assert np.all(np.isfinite(res.mean))
    assert np.isfinite(res.log_evidence)
    assert res.loo_error == 0


@pytest.mark.parametrize(
    ("X", "y", "alpha", "exc", "match"),
    [
        (np.array([[np.nan, 1.0], [0.0, 1.0]]), [0, 1], [1, 1], DataError, "NaN"),
        (np.array([[np.inf, 1.0], [0.0, 1.0]]), [0, 1], [1, 1], DataError, "infinite"),
        (np.ones((3, 2)), [1, 1, 1], [1, 1], LabelError, "one class"),
        (np.ones((3, 2)), [0, 1], [1, 1], LabelError, "3 samples"),
        (np.ones((3, 2)), [0, 1, 2], [1, 1], DataError, "two classes"),
        (np.ones((3, 2)), [0, 1, 1], [1, 1, 1], DataError, "alpha has 3"),
        (np.ones((3, 2)), [0, 1, 1], [1, -1], DataError, "positive"),
    ],
)
def test_bad_input(X, y, alpha, exc, match):
    with pytest.raises(exc, match=match):
        ep_probit(X, y, alpha)


def _numpy_loop(monkeypatch):
    """Send every design to the BLAS loop of ``run_ep`` (no compiled sweeps)."""
    monkeypatch.setattr(ep_module, "KERNEL_MAX_WORK", -1)


@pytest.mark.parametrize(("n", "d", "route"), [(36, 20, None), (30, 80, None), (12, 5, "sample"),
                                               (8, 12, "weight"), (40, 1, None)])
@pytest.mark.parametrize("damping", [1.0, 0.5])
def test_compiled_sweeps_equal_the_numpy_loop(monkeypatch, n, d, route, damping):
    # The compiled loop runs the same algebra, convergence test and step control: the same number of
    # sweeps and the same sites, evidence and cavities up to rounding, from a cold and a warm start.
    rng = np.random.default_rng(n + d)
    X, y = _toy(n + d, n, d)
    P = y[:, None] * X
    alpha = rng.uniform(0.1, 3.0, size=d)
    warm = run_ep(P, 2 * alpha, tol=1e-3)
    for start in [{}, {"tau": warm.tau, "nu": warm.nu}]:
        fast = run_ep(P, alpha, damping=damping, tol=1e-9, route=route, **start)
        with monkeypatch.context() as m:
            _numpy_loop(m)
            ref = run_ep(P, alpha, damping=damping, tol=1e-9, route=route, **start)
        assert fast.post.route == ref.post.route
        assert (fast.n_iter, fast.converged, fast.n_skipped) == (ref.n_iter, ref.converged,
                                                                  ref.n_skipped)
        np.testing.assert_allclose(fast.tau, ref.tau, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(fast.nu, ref.nu, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(fast.cavity_mean, ref.cavity_mean, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(fast.cavity_var, ref.cavity_var, rtol=1e-10, atol=1e-12)
        assert fast.log_evidence == pytest.approx(ref.log_evidence, abs=1e-10)
        # The posterior the compiled loop reports for the final sites.
        a, b = fast.post, ref.post
        for name in ["mean", "mean_t", "f_mean", "f_var", "L"]:
            np.testing.assert_allclose(getattr(a, name), getattr(b, name), rtol=1e-9, atol=1e-11,
                                       err_msg=name)
        assert a.log_det_B == pytest.approx(b.log_det_B, abs=1e-10)
        np.testing.assert_allclose(a.cov(), b.cov(), rtol=1e-9, atol=1e-11)
        Xn = rng.normal(size=(5, d))
        for u, v in zip(a.latent(Xn), b.latent(Xn), strict=True):
            np.testing.assert_allclose(u, v, rtol=1e-9, atol=1e-11)


def test_compiled_sweeps_stop_at_max_iter_like_the_numpy_loop(monkeypatch):
    X, y = _toy(3, 30, 10)
    P = y[:, None] * X
    alpha = np.full(10, 0.01)
    fast = run_ep(P, alpha, tol=1e-14, max_iter=3)
    _numpy_loop(monkeypatch)
    ref = run_ep(P, alpha, tol=1e-14, max_iter=3)
    assert (fast.n_iter, fast.converged) == (ref.n_iter, ref.converged) == (3, False)
    np.testing.assert_allclose(fast.tau, ref.tau, rtol=1e-10)


def test_compiled_sweeps_hand_a_failed_factorisation_to_the_numpy_loop(monkeypatch):
    # A NaN in the design makes the compiled Cholesky fail (status 1); run_ep then runs the numpy
    # loop from the same start, whose NaN policy gives the one error, exactly as without the kernel.
    X, y = _toy(1, 10, 3)
    P = y[:, None] * X
    P[2, 1] = np.nan
    from ardselect.numerics._compiled import ep_sweeps

    site = np.zeros((2, 10))
    status = ep_sweeps(np.ascontiguousarray(P.T), weight=True, diag_K=np.zeros(0), site=site,
                       damping=1.0, tol=1e-5, max_iter=50)[3]
    assert status == 1
    for limit in [ep_module.KERNEL_MAX_WORK, -1]:
        monkeypatch.setattr(ep_module, "KERNEL_MAX_WORK", limit)
        with pytest.raises(np.linalg.LinAlgError, match="NaN or infinite"):
            run_ep(P, np.ones(3), tol=1e-5)


def test_compiled_loops_fall_back_to_per_process_compilation(monkeypatch):
    # Where numba finds no writable cache location it refuses cache=True at decoration; the loops
    # are then compiled without a disk cache instead of failing the import.
    from numba.core import caching

    from ardselect.numerics._compiled import _jit

    monkeypatch.setattr(caching.CacheImpl, "_locator_classes", [])
    monkeypatch.delenv("NUMBA_CACHE_LOCATOR_CLASSES", raising=False)

    def twice(x):
        return 2.0 * x

    with pytest.raises(RuntimeError, match="no locator"):
        __import__("numba").njit(cache=True)(twice)
    assert _jit()(twice)(1.5) == 3.0


def test_compiled_sweeps_equal_the_numpy_loop_on_hard_random_problems(monkeypatch):
    # Scales from 1e-6 to 1e6, duplicated columns, separable and noisy labels, tiny and large prior
    # precisions, damping and short sweep budgets: the compiled loop (forced for every size) and
    # the numpy loop take the same number of sweeps and give the same evidence and weights.
    from ardselect.numerics import _compiled as _kernels

    calls = []
    compiled = _kernels.ep_sweeps
    monkeypatch.setattr(_kernels, "ep_sweeps", lambda *a: calls.append(1) or compiled(*a))
    rng = np.random.default_rng(1)
    for _ in range(100):
        n, d = int(rng.integers(1, 40)), int(rng.integers(1, 50))
        X = rng.normal(size=(n, d)) * rng.choice([1e-6, 1e-2, 1.0, 1e2, 1e6])
        if rng.random() < 0.3:
            X[:, : d // 2] = X[:, [0]]
        y = np.where(X @ rng.normal(size=d) + rng.normal(size=n) * rng.choice([0, 0.1, 1]) >= 0,
                     1.0, -1.0)
        P = y[:, None] * X
        alpha = rng.lognormal(size=d) * rng.choice([1e-6, 1e-2, 1.0, 1e2])
        kw = {"tol": rng.choice([1e-5, 1e-8]), "damping": rng.choice([1.0, 0.5]),
              "max_iter": int(rng.choice([3, 200]))}
        monkeypatch.setattr(ep_module, "KERNEL_MAX_WORK", 10**12)
        fast = run_ep(P, alpha, **kw)
        monkeypatch.setattr(ep_module, "KERNEL_MAX_WORK", -1)
        ref = run_ep(P, alpha, **kw)
        assert fast.n_iter == ref.n_iter
        assert fast.log_evidence == pytest.approx(ref.log_evidence, rel=1e-10, abs=1e-10)
        np.testing.assert_allclose(fast.post.mean, ref.post.mean, rtol=1e-8, atol=1e-12)
    assert len(calls) == 100  # every "fast" run went through the compiled loop


@pytest.mark.parametrize(("kwargs", "pattern"), [
    ({"loo_prob_scale": float("nan")}, r"loo_prob_scale must be a positive number; got nan"),
    ({"loo_prob_scale": 0.0}, r"loo_prob_scale must be a positive number"),
    ({"tol": float("inf")}, r"tol must be a positive number; got inf"),
    ({"max_iter": 0}, r"max_iter must be an integer >= 1; got 0"),
    ({"route": "weights"}, r"route must be None, 'weight' or 'sample'; got 'weights'"),
])
def test_ep_probit_checks_its_parameters(kwargs, pattern):
    # A bad route was a numba TypingError; loo_prob_scale=nan was accepted.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 2))
    y = (X[:, 0] > 0).astype(int)
    with pytest.raises(ValueError, match=pattern):
        ep_probit(X, y, [1.0, 1.0], **kwargs)


def test_ep_probit_refuses_an_overflowing_fit():
    # On X * 1e200 it returned NaN evidence with converged=True.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 2))
    y = (X[:, 0] > 0).astype(int)
    with np.errstate(all="ignore"), pytest.raises(DataError, match=r"EP gave a non-finite "
                                                               r"evidence or posterior \(the "
                                                               r"largest \|x\| .* is 2\.\d+e\+200\)"):
        ep_probit(X * 1e200, y, [1.0, 1.0])
