"""EP for the spike-and-slab probit model: site moments against quadrature, the two routes, acceleration."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate
from scipy.stats import norm

from ardselect.estimators._spikeslab_ep import prior_site_moments, run_spikeslab_ep


def standardised(rng, n, p, m=0):
    """``(Z, Z_test)``: Gaussian genes, gene 1 correlated with gene 0, standardised on Z."""
    X = rng.normal(size=(n + m, p))
    X[:, 1] = X[:, 0] + 0.5 * rng.normal(size=n + m)
    Z, Zt = X[:n], X[n:]
    mu, sd = Z.mean(axis=0), Z.std(axis=0)
    return (Z - mu) / sd, (Zt - mu) / sd


def labels(rng, Z, w, noise=0.7):
    t = np.where(Z @ w + noise * rng.normal(size=Z.shape[0]) > 0, 1.0, -1.0)
    t[:2] = [1.0, -1.0]  # both classes present
    return t


# ------------------------------------------------------------------------------------------------
# Primitives
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("m_c", "v_c"), [(0.0, 1.0), (2.5, 0.3), (-4.0, 2.0), (0.4, 50.0)])
def test_gene_site_moments_against_quadrature(m_c, v_c):
    p0, v_s = 0.2, 1.5
    slab = lambda w, k: w**k * norm.pdf(w, 0, np.sqrt(v_s)) * norm.pdf(w, m_c, np.sqrt(v_c))  # noqa: E731
    z1 = integrate.quad(slab, -np.inf, np.inf, args=(0,))[0]
    spike = norm.pdf(0.0, m_c, np.sqrt(v_c))
    Z = p0 * z1 + (1 - p0) * spike
    mean = p0 * integrate.quad(slab, -np.inf, np.inf, args=(1,))[0] / Z
    second = p0 * integrate.quad(slab, -np.inf, np.inf, args=(2,))[0] / Z
    log_odds, _, m, v, _, _ = prior_site_moments(np.array([1 / v_c]), np.array([m_c / v_c]), p0,
                                                 v_s)
    np.testing.assert_allclose(1 / (1 + np.exp(-log_odds[0])), p0 * z1 / Z, rtol=1e-10)
    np.testing.assert_allclose(m[0], mean, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(v[0], second - mean**2, rtol=1e-8)


@pytest.mark.parametrize(("n", "p"), [(40, 8), (15, 40)])
def test_weight_and_sample_space_agree(seed, n, p):
    rng = np.random.default_rng(seed)
    Z, _ = standardised(rng, n, p)
    t = labels(rng, Z, np.r_[1.5, 0.0, -1.0, np.zeros(p - 3)])
    fits = [run_spikeslab_ep(t[:, None] * Z, prior_inclusion=0.2, slab_variance=1.0,
                             intercept=t, intercept_alpha=0.1, tol=1e-10, route=route)
            for route in ("weight", "sample")]
    assert all(f.converged for f in fits)
    np.testing.assert_allclose(fits[0].pip, fits[1].pip, rtol=1e-7, atol=1e-10)
    np.testing.assert_allclose(fits[0].mean, fits[1].mean, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(fits[0].var, fits[1].var, rtol=1e-6)
    np.testing.assert_allclose(fits[0].log_evidence, fits[1].log_evidence, rtol=1e-9)


def test_acceleration_keeps_the_fixed_point(seed):
    """Anderson-accelerated EP and plain damped EP stop at the same sites."""
    rng = np.random.default_rng(seed)
    Z, _ = standardised(rng, 40, 30)
    t = labels(rng, Z, np.r_[1.5, 0.0, -1.0, np.zeros(27)])
    fast = run_spikeslab_ep(t[:, None] * Z, prior_inclusion=0.1, slab_variance=1.0, intercept=t,
                            intercept_alpha=0.1, tol=1e-10)
    plain = run_spikeslab_ep(t[:, None] * Z, prior_inclusion=0.1, slab_variance=1.0,
                             intercept=t, intercept_alpha=0.1, tol=1e-10, memory=0,
                             max_iter=5000)
    assert fast.converged
    assert plain.converged
    assert fast.n_iter < plain.n_iter
    np.testing.assert_allclose(fast.pip, plain.pip, atol=1e-7)
    np.testing.assert_allclose(fast.mean, plain.mean, atol=1e-7)


@pytest.mark.parametrize(("n", "p"), [(30, 5), (20, 60)])
def test_inclusion_one_is_run_ep(seed, n, p):
    """p0 = 1: the gene sites are the exact prior, and the fit is run_ep's at alpha = 1 / v_s."""
    from ardselect.numerics._ep import run_ep

    rng = np.random.default_rng(seed)
    Z, _ = standardised(rng, n, p)
    t = labels(rng, Z, np.r_[1.0, 0.0, -1.0, np.zeros(p - 3)])
    v_s = 0.7
    fit = run_spikeslab_ep(t[:, None] * Z, prior_inclusion=1.0, slab_variance=v_s, intercept=t,
                           intercept_alpha=0.5, tol=1e-10)
    ref = run_ep(np.column_stack([t[:, None] * Z, t]), np.r_[np.full(p, 1 / v_s), 0.5],
                 tol=1e-12, max_iter=2000)
    np.testing.assert_allclose(fit.lam, 1 / v_s, rtol=1e-10)
    np.testing.assert_allclose(fit.eta, 0.0, atol=1e-10)
    np.testing.assert_allclose(fit.mean, ref.post.mean, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(fit.var, ref.post.var(), rtol=1e-7)
    np.testing.assert_allclose(fit.tau, ref.tau, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(fit.log_evidence, ref.log_evidence, rtol=1e-9)


def test_a_gene_no_sample_informs_changes_nothing(seed):
    """A column of zeros: its cavity is flat (r_c = 0), its site the prior, its evidence term 0."""
    rng = np.random.default_rng(seed)
    Z, _ = standardised(rng, 30, 6)
    t = labels(rng, Z, np.r_[1.0, 0.0, -1.0, np.zeros(3)])
    kw = {"prior_inclusion": 0.2, "slab_variance": 1.0, "intercept": t, "intercept_alpha": 0.5,
          "tol": 1e-10}
    base = run_spikeslab_ep(t[:, None] * Z, **kw)
    extra = run_spikeslab_ep(np.column_stack([t[:, None] * Z, np.zeros(30)]), **kw)
    assert np.isfinite(extra.log_evidence)
    np.testing.assert_allclose(extra.log_evidence, base.log_evidence, rtol=1e-9)
    np.testing.assert_allclose(extra.pip[:6], base.pip, atol=1e-9)
    np.testing.assert_allclose(extra.pip[6], 0.2, rtol=1e-9)  # the prior, untouched


def test_sample_space_sweep_is_the_posterior(seed):
    """A sample-space sweep's marginals and assembled posterior are LatentPosterior's own."""
    from ardselect.estimators._spikeslab_ep import _Sweeper
    from ardselect.numerics._ep import LatentPosterior

    rng = np.random.default_rng(seed)
    n, p = 12, 40
    Z, Zt = standardised(rng, n, p, 3)
    t = labels(rng, Z, np.r_[1.0, 0.0, -1.0, np.zeros(p - 3)])
    P = np.column_stack([t[:, None] * Z, t])
    tau, nu = rng.uniform(0.0, 2.0, n), rng.normal(size=n)
    tau[0] = 0.0  # a site with no information
    lam, eta = rng.uniform(0.5, 50.0, p), rng.normal(size=p)
    sweeper = _Sweeper(P, 0.1, "sample")
    for _ in range(2):  # the buffer is reused: a second sweep gives the same answer
        state = sweeper.marginals(tau, nu, lam, eta)
    _, mu0, f_mean, f_var, mean, var = state
    alpha = np.r_[lam, 0.1]
    np.testing.assert_allclose(mu0, np.r_[eta / lam, 0.0])
    ref = LatentPosterior(P, alpha, tau, nu - tau * (P @ mu0), "sample")
    np.testing.assert_allclose(f_mean, P @ mu0 + ref.f_mean, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(f_var, ref.f_var, rtol=1e-10)
    np.testing.assert_allclose(mean, mu0 + ref.mean, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(var, ref.var(), rtol=1e-10)
    post = sweeper.posterior(state)
    np.testing.assert_allclose(post.log_det_B, ref.log_det_B, rtol=1e-12)
    np.testing.assert_allclose(post.mean, ref.mean, rtol=1e-10, atol=1e-12)
    Za = np.column_stack([Zt, np.ones(3)])
    for got, want in zip(post.latent(Za), ref.latent(Za), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_anderson_history_never_starts_with_a_jump():
    """A step that more than doubles the residual norm leaves no difference in the history."""
    from ardselect.estimators._spikeslab_ep import _Anderson

    acc = _Anderson(3, 0.5, np.full(4, -np.inf), np.full(4, np.inf))
    acc.step(np.zeros(4), np.full(4, 0.1))
    acc.step(np.ones(4), np.full(4, 10.0))  # the jump: nothing remembered
    assert acc.k == 0
    acc.step(np.full(4, 2.0), np.full(4, 9.0))
    assert acc.k == 1
    for i in range(4):  # the ring keeps the last three, with their Gram matrix
        acc.step(np.full(4, 3.0 + i) + np.arange(4) * i, np.full(4, 8.0 - i) - np.arange(4))
    k = acc.k
    np.testing.assert_allclose(acc.gram[:k, :k], acc.dG[:k] @ acc.dG[:k].T)
