"""Tests of the variational RVM (Bishop & Tipping 2000): ardselect/estimators/_variational.py."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal
from scipy import integrate, stats
from scipy.special import digamma
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.utils.estimator_checks import parametrize_with_checks

from ardselect import VariationalRVMClassifier, VariationalRVMRegressor
from ardselect.estimators._variational import (
    _fit_variational,
    _VariationalState,
    gamma_entropy,
    gamma_expected_log_pdf,
    jj_lambda,
    jj_log_bound,
    log_sigmoid,
)
from ardselect.exceptions import DataError, LabelError

DATA = pathlib.Path(__file__).resolve().parents[1].parent / "shared" / "data"
SEEDS = [0, 1, 2]


# ------------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------------


def sinc_data(seed, n=50, noise=0.1):
    """The paper's noisy sinc: x uniform on (-10, 10), t = sin(x)/x + N(0, noise^2)."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-10, 10, size=(n, 1))
    t = np.sinc(x[:, 0] / np.pi) + noise * rng.standard_normal(n)
    return x, t


def blob_data(seed, n=60):
    rng = np.random.default_rng(seed)
    X = np.vstack([rng.normal(-1, 1.0, (n // 2, 2)), rng.normal(1, 1.0, (n - n // 2, 2))])
    y = np.repeat([0, 1], [n // 2, n - n // 2])
    return X, y


def rbf_design(X, gamma):
    return np.hstack([np.ones((X.shape[0], 1)), rbf_kernel(X, X, gamma=gamma)])


def assert_non_decreasing(values, rel=1e-10):
    values = np.asarray(values)
    drops = values[:-1] - values[1:]
    scale = np.maximum(1.0, np.abs(values[1:]))
    assert np.all(drops <= rel * scale), f"largest decrease {drops.max():.3g}"


# ------------------------------------------------------------------------------------------------
# (1) the lower bound never decreases: after every factor update, every iteration, every prune
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
def test_bound_never_decreases_regression(seed):
    X, t = sinc_data(seed)
    trace = []
    state, bounds, _ = _fit_variational(
        rbf_design(X, 1 / 9),
        t,
        likelihood="gaussian",
        a=1e-6,
        b=1e-6,
        c=1e-6,
        d=1e-6,
        max_iter=400,
        tol=1e-7,
        prune_threshold=100.0,
        trace=trace,
    )
    assert_non_decreasing(bounds)
    assert_non_decreasing([v for _, v in trace])
    # pruning did happen, so the test covers it
    assert state.prn.size > 0
    assert any(name == "prune" for name, _ in trace)


@pytest.mark.parametrize("seed", SEEDS)
def test_bound_never_decreases_classification(seed):
    X, y = blob_data(seed)
    trace = []
    state, bounds, _ = _fit_variational(
        rbf_design(X, 0.5),
        y.astype(float),
        likelihood="bernoulli",
        a=1e-6,
        b=1e-6,
        max_iter=400,
        tol=1e-7,
        prune_threshold=10.0,
        trace=trace,
    )
    assert_non_decreasing(bounds)
    assert_non_decreasing([v for _, v in trace])
    assert state.prn.size > 0


@pytest.mark.parametrize("seed", SEEDS)
def test_estimators_record_non_decreasing_bound(seed):
    X, t = sinc_data(seed)
    reg = VariationalRVMRegressor(gamma=1 / 9).fit(X, t)
    assert len(reg.lower_bound_) == reg.n_iter_
    assert_non_decreasing(reg.lower_bound_)
    X, y = blob_data(seed)
    clf = VariationalRVMClassifier(gamma=0.5).fit(X, y)
    assert len(clf.lower_bound_) == clf.n_iter_
    assert_non_decreasing(clf.lower_bound_)


@pytest.mark.slow
def test_bound_never_decreases_seed_sweep():
    """Seeds 0 to 99, both likelihoods (slow: run with --runslow)."""
    for seed in range(100):
        X, t = sinc_data(seed)
        _, bounds, _ = _fit_variational(
            rbf_design(X, 1 / 9),
            t,
            likelihood="gaussian",
            a=1e-6,
            b=1e-6,
            c=1e-6,
            d=1e-6,
            max_iter=300,
            tol=1e-7,
            prune_threshold=100.0,
        )
        assert_non_decreasing(bounds)
        X, y = blob_data(seed)
        _, bounds, _ = _fit_variational(
            rbf_design(X, 0.5),
            y.astype(float),
            likelihood="bernoulli",
            a=1e-6,
            b=1e-6,
            max_iter=300,
            tol=1e-7,
            prune_threshold=10.0,
        )
        assert_non_decreasing(bounds)


@pytest.mark.parametrize("likelihood", ["gaussian", "bernoulli"])
def test_prune_leaves_q_and_bound_unchanged(likelihood):
    """Pruning rewrites Q(w) as marginal x exact conditional: moments and bound stay put."""
    if likelihood == "gaussian":
        X, t = sinc_data(3)
        Phi = rbf_design(X, 1 / 9)
    else:
        X, t = blob_data(3)
        Phi, t = rbf_design(X, 0.5), t.astype(float)
    state = _VariationalState(
        Phi, t, likelihood=likelihood, a=1e-6, b=1e-6, c=1e-6, d=1e-6, prune_threshold=np.inf
    )
    third = state.update_tau if likelihood == "gaussian" else state.update_xi
    for _ in range(30):
        state.update_w()
        state.update_alpha()
        third()
    before = (
        state.bound(),
        state.mean_w.copy(),
        state.var_w.copy(),
        state.f_mean.copy(),
        state.f_var.copy(),
    )
    # prune in two rounds, so that the nested (composed) conditionals are exercised too
    for threshold in (np.quantile(state.alpha_mean, 0.7), np.quantile(state.alpha_mean, 0.4)):
        state.prune_threshold = threshold
        assert state.prune() > 0
        assert_allclose(state.bound(), before[0], rtol=1e-11)
        for got, want in zip(
            (state.mean_w, state.var_w, state.f_mean, state.f_var), before[1:], strict=True
        ):
            assert_allclose(got, want, rtol=1e-7, atol=1e-10)
    # predictive variance from the pruned representation equals phi^T Sigma_w phi
    assert_allclose(state.predictive_var(Phi), before[4], rtol=1e-7)


# ------------------------------------------------------------------------------------------------
# (2) closed-form terms against numerical integration
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("a", "b", "a_t", "b_t"), [(1e-6, 1e-6, 0.5, 0.3), (2.0, 3.0, 1.7, 0.4)])
def test_gamma_terms_against_quadrature(a, b, a_t, b_t):
    q = stats.gamma(a_t, scale=1 / b_t)
    mean, log_mean = a_t / b_t, float(digamma(a_t) - np.log(b_t))
    # <ln alpha> (eq. 31) and <alpha> (eq. 30)
    assert_allclose(
        integrate.quad(lambda x: np.log(x) * q.pdf(x), 0, np.inf)[0], log_mean, rtol=1e-7
    )

    # <ln Gamma(alpha | a, b)> (eq. 42)
    def integrand(x):
        return stats.gamma.logpdf(x, a, scale=1 / b) * q.pdf(x)

    numeric = integrate.quad(integrand, 0, np.inf, limit=200)[0]
    assert_allclose(gamma_expected_log_pdf(a, b, mean, log_mean), numeric, rtol=1e-6)
    # entropy (eq. 64)
    assert_allclose(gamma_entropy(a_t, b_t), q.entropy(), rtol=1e-12)
    numeric = integrate.quad(lambda x: -q.logpdf(x) * q.pdf(x), 0, np.inf, limit=200)[0]
    assert_allclose(gamma_entropy(a_t, b_t), numeric, rtol=1e-6)


def gauss_expect(fun, mu, s2, n=20):
    """E[fun(w)], w ~ N(mu, s2), by Gauss-Hermite quadrature (exact for low-degree polynomials)."""
    nodes, weights = np.polynomial.hermite_e.hermegauss(n)
    return np.sum(weights * np.array([fun(mu + np.sqrt(s2) * x) for x in nodes])) / np.sqrt(
        2 * np.pi
    )


def test_expected_log_weight_prior_against_quadrature():
    """<ln N(w | 0, 1/alpha)> under N(w | mu, s2) Gamma(alpha | a~, b~) (eq. 41 / 61)."""
    mu, s2, a_t, b_t = 0.7, 0.2, 1.3, 0.8
    qa = stats.gamma(a_t, scale=1 / b_t)

    def inner(alpha):
        return gauss_expect(lambda w: stats.norm.logpdf(w, 0, 1 / np.sqrt(alpha)), mu, s2)

    numeric = integrate.quad(lambda x: inner(x) * qa.pdf(x), 0, np.inf, limit=200)[0]
    closed = (
        -0.5 * np.log(2 * np.pi)
        + 0.5 * (digamma(a_t) - np.log(b_t))
        - 0.5 * a_t / b_t * (s2 + mu**2)
    )
    assert_allclose(closed, numeric, rtol=1e-6)


def test_jaakkola_jordan_bound_below_log_sigmoid_and_tight():
    z = np.concatenate([np.linspace(-60, 60, 2401), [-1e-9, 0.0, 1e-9]])
    for xi in [0.0, 1e-7, 1e-3, 0.5, 2.0, 10.0, 45.0]:
        gap = log_sigmoid(z) - jj_log_bound(z, xi)
        assert np.all(gap >= -1e-12), xi
        assert_allclose(
            jj_log_bound(np.array([xi, -xi]), xi), log_sigmoid(np.array([xi, -xi])), atol=1e-12
        )
    # lambda: series branch and closed form agree across the switch, and lambda(0) = 1/8
    xs = np.array([0.0, 5e-5, 9.99e-5, 1.01e-4, 2e-4])
    assert_allclose(jj_lambda(xs), [0.125] + list(np.tanh(xs[1:] / 2) / (4 * xs[1:])), rtol=1e-12)
    # log sigmoid in the far tails, against the direct formula where that is accurate
    assert_allclose(log_sigmoid(-800.0), -800.0)
    assert_allclose(log_sigmoid(np.array([-3.0, 0.0, 3.0])), np.log(1 / (1 + np.exp([3.0, 0, -3]))))


def test_expected_jj_term_against_quadrature():
    """<ln F_n> (eq. 60) for z = s phi^T w with phi^T w ~ N(m, v)."""
    m, v, xi, s = 0.8, 0.6, 1.3, -1.0
    closed = log_sigmoid(xi) + 0.5 * s * m - 0.5 * xi - jj_lambda(xi) * (m**2 + v - xi**2)
    numeric = integrate.quad(
        lambda f: jj_log_bound(s * f, xi) * stats.norm.pdf(f, m, np.sqrt(v)), -np.inf, np.inf
    )[0]
    assert_allclose(closed, numeric, rtol=1e-9)
    # and it lower-bounds <ln sigma(z)>
    exact = integrate.quad(
        lambda f: log_sigmoid(s * f) * stats.norm.pdf(f, m, np.sqrt(v)), -np.inf, np.inf
    )[0]
    assert closed <= exact


def test_regression_bound_terms_against_quadrature():
    """Each term of eqs. 40-46 on a one-weight, three-point problem, by quadrature under Q."""
    Phi = np.array([[1.0], [0.5], [-0.3]])
    t = np.array([0.9, 0.2, -0.5])
    a, b, c, d = 2.0, 1.5, 3.0, 0.5
    state = _VariationalState(
        Phi, t, likelihood="gaussian", a=a, b=b, c=c, d=d, prune_threshold=np.inf
    )
    for _ in range(3):
        state.update_w()
        state.update_alpha()
        state.update_tau()
    terms = state.bound_terms()
    mu, s2 = state.mean_w[0], state.var_w[0]
    qw = stats.norm(mu, np.sqrt(s2))
    qa = stats.gamma(state.a_t, scale=1 / state.b_t[0])
    qt = stats.gamma(state.c_t, scale=1 / state.d_t)

    def lik(tau):
        return gauss_expect(
            lambda w: np.sum(stats.norm.logpdf(t, Phi[:, 0] * w, 1 / np.sqrt(tau))), mu, s2
        )

    assert_allclose(
        terms["lik"],
        integrate.quad(lambda x: lik(x) * qt.pdf(x), 0, np.inf, limit=200)[0],
        rtol=1e-6,
    )
    assert_allclose(terms["entropy_w"], qw.entropy(), rtol=1e-12)
    assert_allclose(terms["entropy_alpha"], qa.entropy(), rtol=1e-12)
    assert_allclose(terms["entropy_tau"], qt.entropy(), rtol=1e-12)
    prior_tau = integrate.quad(
        lambda x: stats.gamma.logpdf(x, c, scale=1 / d) * qt.pdf(x), 0, np.inf
    )[0]
    assert_allclose(terms["prior_tau"], prior_tau, rtol=1e-7)


def log_trapezoid_2d(log_f, u, v):
    """Log of the integral of exp(log_f) over the grid u x v (trapezoid rule, in log space)."""
    from scipy.special import logsumexp

    wu = np.full(u.size, u[1] - u[0])
    wu[[0, -1]] /= 2
    wv = np.full(v.size, v[1] - v[0])
    wv[[0, -1]] /= 2
    return logsumexp(log_f + np.log(wu)[:, None] + np.log(wv)[None, :])


def test_bound_is_below_exact_log_evidence():
    """L <= ln p(t) with p(t) = int int N(t | 0, I/tau + phi phi^T/alpha) p(alpha) p(tau)."""
    phi = np.array([1.0, 0.5, -0.3, 0.8])
    t = np.array([0.9, 0.2, -0.5, 0.6])
    n = t.size
    a, b, c, d = 2.0, 1.5, 3.0, 0.5
    _, bounds, _ = _fit_variational(
        phi[:, None], t, likelihood="gaussian", a=a, b=b, c=c, d=d, max_iter=200, tol=1e-12
    )
    # grid over u = ln alpha, v = ln tau (Jacobian alpha tau); rank-one covariance in closed form
    u = np.linspace(-12, 8, 1501)[:, None]
    v = np.linspace(-12, 8, 1501)[None, :]
    alpha, tau = np.exp(u), np.exp(v)
    pp, pt = phi @ phi, phi @ t
    k = tau / (alpha + tau * pp)  # C^-1 = tau (I - k phi phi^T)
    quad_form = tau * (t @ t - k * pt**2)
    logdet = -n * np.log(tau) + np.log1p(tau * pp / alpha)
    log_lik = -0.5 * (n * np.log(2 * np.pi) + logdet + quad_form)
    log_f = (
        log_lik
        + stats.gamma.logpdf(alpha, a, scale=1 / b)
        + stats.gamma.logpdf(tau, c, scale=1 / d)
        + u
        + v
    )
    log_evidence = log_trapezoid_2d(log_f, u[:, 0], v[0])
    assert bounds[-1] <= log_evidence
    assert bounds[-1] > log_evidence - 0.5  # a mean-field bound, but not a loose one here


def test_classification_bound_is_below_exact_log_evidence():
    phi = np.array([1.0, 0.4, -0.7, 1.5, -0.2])
    y = np.array([1.0, 1.0, 0.0, 1.0, 1.0])
    a, b = 2.0, 1.0
    _, bounds, _ = _fit_variational(
        phi[:, None], y, likelihood="bernoulli", a=a, b=b, max_iter=500, tol=1e-13
    )
    s = 2 * y - 1
    w = np.linspace(-40, 40, 4001)[:, None]
    u = np.linspace(-14, 6, 1001)[None, :]  # u = ln alpha
    alpha = np.exp(u)
    log_lik = np.sum(log_sigmoid(s[None, :] * phi[None, :] * w), axis=1)[:, None]
    log_f = (
        log_lik
        + stats.norm.logpdf(w, 0, 1 / np.sqrt(alpha))
        + stats.gamma.logpdf(alpha, a, scale=1 / b)
        + u
    )
    log_evidence = log_trapezoid_2d(log_f, w[:, 0], u[0])
    assert bounds[-1] <= log_evidence
    assert bounds[-1] > log_evidence - 0.5


# ------------------------------------------------------------------------------------------------
# (3) alpha and tau pinned by concentrated hyperpriors: the Bayesian linear regression posterior
# ------------------------------------------------------------------------------------------------


def test_fixed_hyperparameters_give_bayesian_linear_regression():
    X, t = sinc_data(7, n=30)
    alpha0, tau0, k = 0.5, 80.0, 1e9  # Gamma(alpha0 k, k) has mean alpha0 and sd alpha0 / sqrt(k)
    reg = VariationalRVMRegressor(
        gamma=1 / 9,
        alpha_shape=alpha0 * k,
        alpha_rate=k,
        noise_shape=tau0 * k,
        noise_rate=k,
        prune_threshold=np.inf,
        tol=1e-12,
        max_iter=50,
    ).fit(X, t)
    Phi = rbf_design(X, 1 / 9)
    precision = alpha0 * np.eye(Phi.shape[1]) + tau0 * Phi.T @ Phi
    cov = np.linalg.inv(precision)
    mean = tau0 * cov @ Phi.T @ t
    assert_allclose(reg.intercept_, mean[0], rtol=1e-6, atol=1e-9)
    assert_allclose(reg.coef_, mean[1:], rtol=1e-6, atol=1e-9)
    assert_allclose(reg.coef_sd_, np.sqrt(np.diag(cov))[1:], rtol=1e-6)
    assert_allclose(reg.noise_variance_, 1 / tau0, rtol=1e-6)
    Xn = np.linspace(-12, 12, 7)[:, None]
    Pn = np.hstack([np.ones((7, 1)), rbf_kernel(Xn, X, gamma=1 / 9)])
    mu, sd = reg.predict(Xn, return_std=True)
    assert_allclose(mu, Pn @ mean, rtol=1e-6, atol=1e-9)
    assert_allclose(sd, np.sqrt(1 / tau0 + np.einsum("ij,jk,ik->i", Pn, cov, Pn)), rtol=1e-6)


# ------------------------------------------------------------------------------------------------
# (4), (5) the paper's experiments, scaled down
# ------------------------------------------------------------------------------------------------


def test_sinc_recovery():
    """Table 1: RMS error about 0.05 with about 7 kernels and a noise estimate about 0.095."""
    xt = np.linspace(-10, 10, 1000)[:, None]
    rms, n_rv, noise = [], [], []
    for seed in SEEDS:
        X, t = sinc_data(seed)
        reg = VariationalRVMRegressor(gamma=1 / 9).fit(X, t)
        rms.append(np.sqrt(np.mean((reg.predict(xt) - np.sinc(xt[:, 0] / np.pi)) ** 2)))
        n_rv.append(len(reg.relevance_vectors_))
        noise.append(reg.noise_variance_**0.5)
    assert np.mean(rms) < 0.065
    assert 3 <= np.mean(n_rv) <= 12
    assert 0.07 < np.mean(noise) < 0.12


def _ripley():
    import pandas as pd

    path = DATA / "ripley_synth" / "synth.csv.gz"
    if not path.exists():
        pytest.skip(f"Ripley's data not found at {path}")
    df = pd.read_csv(path)
    tr, te = df[df["split"] == "train"], df[df["split"] == "test"]
    return (
        tr[["xs", "ys"]].to_numpy(),
        tr["label"].to_numpy(),
        te[["xs", "ys"]].to_numpy(),
        te["label"].to_numpy(),
    )


def test_ripley_accuracy():
    """Table 3: 9.2 % test error with 4 kernels (Gaussian kernel of width 0.5)."""
    X, y, Xt, yt = _ripley()
    clf = VariationalRVMClassifier(gamma=1 / 0.5**2).fit(X, y)
    error = np.mean(clf.predict(Xt) != yt)
    assert error < 0.105
    assert len(clf.relevance_vectors_) <= 20


# ------------------------------------------------------------------------------------------------
# (6) scikit-learn's estimator contract
# ------------------------------------------------------------------------------------------------


@parametrize_with_checks(
    # tol=1e-5 only to keep the checks fast: some of their targets are of order 100, where the
    # default tol needs many iterations.
    [VariationalRVMRegressor(tol=1e-5), VariationalRVMClassifier(tol=1e-5)],
    expected_failed_checks=lambda est: {},
)
def test_sklearn_contract(estimator, check):
    check(estimator)


# ------------------------------------------------------------------------------------------------
# (7) determinism and other properties
# ------------------------------------------------------------------------------------------------


def test_permuting_training_samples_permutes_the_kernel_weights():
    """The fit does not depend on the order of the training samples.

    Permuting them permutes the basis (one kernel function per sample): ``coef_`` and the
    relevance vectors follow, the bound and the predictions stay (observed: 2e-13 relative).
    """
    rng = np.random.default_rng(0)
    X, y = blob_data(0)
    perm = rng.permutation(len(y))
    a = VariationalRVMClassifier(gamma=0.5).fit(X, y)
    b = VariationalRVMClassifier(gamma=0.5).fit(X[perm], y[perm])
    assert_allclose(b.coef_, a.coef_[:, perm], rtol=0, atol=1e-9 * np.abs(a.coef_).max())
    assert_array_equal(np.sort(perm[b.relevance_vectors_]), a.relevance_vectors_)
    assert_allclose(b.lower_bound_[-1], a.lower_bound_[-1], rtol=1e-9)
    X, t = sinc_data(0)
    perm = rng.permutation(len(t))
    r1 = VariationalRVMRegressor(gamma=1 / 9).fit(X, t)
    r2 = VariationalRVMRegressor(gamma=1 / 9).fit(X[perm], t[perm])
    assert_allclose(r2.coef_, r1.coef_[perm], rtol=0, atol=1e-9 * np.abs(r1.coef_).max())
    assert_allclose(r2.predict(X, return_std=True), r1.predict(X, return_std=True), rtol=1e-8)


def test_predict_agrees_with_proba_and_label_swap_flips_coef():
    X, y = blob_data(1)
    clf = VariationalRVMClassifier(gamma=0.5).fit(X, y)
    proba = clf.predict_proba(X)
    assert_allclose(proba.sum(axis=1), 1.0)
    assert_array_equal(clf.predict(X), clf.classes_[(proba[:, 1] >= 0.5).astype(int)])
    assert_allclose(np.log(proba), clf.predict_log_proba(X), rtol=1e-12)
    swapped = VariationalRVMClassifier(gamma=0.5).fit(X, 1 - y)
    assert_allclose(swapped.coef_, -clf.coef_, rtol=1e-8, atol=1e-10)
    assert_array_equal(swapped.relevance_vectors_, clf.relevance_vectors_)


def test_moderated_probabilities_same_boundary_less_confident():
    X, y = blob_data(2)
    plain = VariationalRVMClassifier(gamma=0.5).fit(X, y)
    mod = clone(plain).set_params(moderated=True).fit(X, y)
    Xn = np.random.default_rng(0).normal(0, 2, (50, 2))
    p, q = plain.predict_proba(Xn)[:, 1], mod.predict_proba(Xn)[:, 1]
    assert_array_equal(p > 0.5, q > 0.5)
    assert np.all(np.abs(q - 0.5) <= np.abs(p - 0.5) + 1e-12)


def test_float32_sparse_and_dense_agree():
    X, t = sinc_data(4)
    ref = VariationalRVMRegressor(gamma=1 / 9).fit(X, t)
    r32 = VariationalRVMRegressor(gamma=1 / 9).fit(X.astype(np.float32), t)
    assert_allclose(r32.predict(X), ref.predict(X), rtol=1e-4, atol=1e-5)
    Xb, y = blob_data(4)
    dense = VariationalRVMClassifier(gamma=0.5).fit(Xb, y)
    sparse = VariationalRVMClassifier(gamma=0.5).fit(sp.csr_matrix(Xb), y)
    assert_allclose(sparse.decision_function(Xb), dense.decision_function(Xb), rtol=1e-8)


def test_attributes_shapes():
    X, t = sinc_data(5)
    reg = VariationalRVMRegressor(gamma=1 / 9).fit(X, t)
    for name in ("coef_", "coef_sd_", "alpha_"):
        assert getattr(reg, name).shape == (50,)
    assert np.all(reg.relevance_vectors_ < 50)
    assert np.all(reg.alpha_[reg.relevance_vectors_] <= reg.prune_threshold)
    no_bias = VariationalRVMRegressor(gamma=1 / 9, fit_intercept=False).fit(X, t)
    assert no_bias.intercept_ == 0.0
    assert np.isinf(no_bias.intercept_alpha_)  # a weight fixed at 0, as in the whole family
    Xc, yc = blob_data(0)
    clf = VariationalRVMClassifier(gamma=0.5).fit(Xc, yc)
    for name in ("coef_", "coef_sd_", "alpha_"):
        assert getattr(clf, name).shape == (1, Xc.shape[0])  # one binary problem
    assert clf.intercept_.shape == (1,)


# ------------------------------------------------------------------------------------------------
# (8) error paths
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("Est", [VariationalRVMRegressor, VariationalRVMClassifier])
def test_bad_x(Est):
    X, y = blob_data(0, n=10)
    Xnan = X.copy()
    Xnan[3, 1] = np.nan
    with pytest.raises(DataError, match="NaN"):
        Est().fit(Xnan, y)
    Xinf = X.copy()
    Xinf[0, 0] = np.inf
    with pytest.raises(DataError, match="infinite"):
        Est().fit(Xinf, y)
    with pytest.raises(DataError, match="0 sample"):
        Est().fit(np.empty((0, 2)), [])
    with pytest.raises((DataError, LabelError), match="must match"):
        Est().fit(X, y[:-1])
    with pytest.raises(ValueError, match=r"'kernel' parameter of \w+ must be a str among .* or a "
                       "callable. Got 'sigmoid'"):
        Est(kernel="sigmoid").fit(X, y)
    with pytest.raises(ValueError, match=r"'alpha_shape' parameter of \w+ must be a float in the "
                       r"range \(0.0, inf\). Got 0.0"):
        Est(alpha_shape=0.0).fit(X, y)
    fitted = Est().fit(X, y)
    with pytest.raises(ValueError, match="features"):
        fitted.predict(X[:, :1])


def test_bad_labels():
    X, _ = blob_data(0, n=12)
    with pytest.raises(LabelError, match="at least two classes"):
        VariationalRVMClassifier().fit(X, np.zeros(12))
    with pytest.raises(LabelError, match="Only binary classification is supported"):
        VariationalRVMClassifier().fit(X, np.arange(12) % 3)
    with pytest.raises(LabelError, match="continuous"):
        VariationalRVMClassifier().fit(X, np.linspace(0, 1, 12))
    with pytest.raises(DataError, match="NaN or infinite"):
        VariationalRVMRegressor().fit(X, np.r_[np.nan, np.ones(11)])


def test_convergence_warning():
    X, t = sinc_data(0)
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        reg = VariationalRVMRegressor(max_iter=3).fit(X, t)
    assert reg.n_iter_ == 3
    assert not reg.converged_
