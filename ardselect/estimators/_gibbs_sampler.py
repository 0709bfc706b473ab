"""The Gibbs sampler of the probit RVM: the conditional draws and one chain.

Truncated-normal latent variables (Albert & Chib), truncated-gamma precisions and the Gaussian
weight conditional (weight-space or sample-space draw), and the loop of one chain. The estimator,
:class:`~ardselect.GibbsRVMClassifier` in :mod:`ardselect.estimators._gibbs`, prepares the basis, runs the
chains and summarises the draws.
"""

from __future__ import annotations

import numbers

import numpy as np
import scipy.linalg
from scipy.special import (
    gammainc,
    gammaincc,
    gammainccinv,
    gammaincinv,
    log_ndtr,
    ndtri_exp,
)

# Probabilities below this are treated as underflowed in the truncated-gamma inverse-CDF sampler;
# the far-tail regimes below switch to rejection / power-law forms that need no tail probability.
_TINY_PROB = 1e-280


# ----------------------------------------------------------------------------------------------
# Truncated normal latent variables (Albert & Chib)
# ----------------------------------------------------------------------------------------------
def _std_normal_above(lower: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Draw e_i ~ N(0, 1) conditioned on e_i > lower_i, vectorised and accurate in the far tails.

    Inverse CDF in log space: ``-e`` is N(0, 1) truncated to ``(-inf, -lower)``, whose CDF is
    ``Phi(t) / Phi(-lower)``; so ``e = -Phi^-1(u * Phi(-lower))``, evaluated as ``-ndtri_exp(log u +
    log_ndtr(-lower))``. Both special functions keep full relative accuracy in the lower tail, so
    truncation points far in the upper tail (lower = 8, 30, 1000) are exact; for a truncation point
    deep in the lower tail (lower = -8) the draw is a plain normal draw, and only draws within
    ~1e-16 probability of the truncation point lose digits.
    """
    lower = np.asarray(lower, dtype=np.float64)
    # 1 - random() lies in (0, 1]: log u is finite, so no draw is ever -inf.
    log_u = np.log1p(-rng.random(lower.shape))
    e = -ndtri_exp(log_u + log_ndtr(-lower))
    # Rounding guard: in the far upper tail ndtri_exp can return a value a few ulp below the bound.
    return np.maximum(e, lower)


def sample_latent(mean, scale, positive, rng: np.random.Generator) -> np.ndarray:
    """Draw the Albert-Chib latent variables ``z_i ~ N(mean_i, scale^2)`` truncated by the label.

    ``z_i > 0`` where ``positive[i]`` is true and ``z_i < 0`` otherwise (the paper's
    ``TruncNorm_{Y_i}``).

    Parameters
    ----------
    mean : ndarray of shape (n_samples,)
        Means ``phi_i . w`` of the untruncated normals.
    scale : float
        Their common standard deviation ``sigma`` (1 in the paper's first model).
    positive : ndarray of bool of shape (n_samples,)
        Label of each latent variable.
    rng : numpy.random.Generator
        Source of randomness.

    Returns
    -------
    z : ndarray of shape (n_samples,)
        One draw of each latent variable; never of the wrong sign.
    """
    mean = np.asarray(mean, dtype=np.float64)
    s = np.where(positive, 1.0, -1.0)
    m = s * mean / scale  # (n,) mean of v = s z / sigma, which must be > 0
    v = m + _std_normal_above(-m, rng)
    # Rounding guard: v = m + e with e >= -m; cancellation can leave v at -1 ulp; z = 0 is allowed.
    v = np.maximum(v, 0.0)
    return s * scale * v


# ----------------------------------------------------------------------------------------------
# Truncated gamma (alpha conditional) and the noise variance
# ----------------------------------------------------------------------------------------------
def _sample_truncated_gamma(
    shape: float, rate, lower, upper, rng: np.random.Generator
) -> np.ndarray:
    """Draw x_j ~ Gamma(shape, rate_j) truncated to ``[lower_j, upper_j]`` (vectorised).

    Three regimes, chosen per element:

    * interval in the upper tail (``rate * lower > shape``): inverse CDF on the upper regularised
      incomplete gamma ``Q``; if ``Q(shape, rate * lower)`` underflows, rejection from the shifted
      exponential ``lower + Exp(lambda)``, ``lambda = rate - max(shape - 1, 0) / lower``, whose
      acceptance rate tends to 1 exactly in that regime;
    * otherwise inverse CDF on the lower regularised incomplete gamma ``P``; if ``P(shape, rate *
      upper)`` underflows (rate ~ 0: a weight at 0), the exponential factor is 1 to rounding on the
      interval and the density is the power law ``x^(shape - 1)``, inverted in closed form.
    """
    rate = np.asarray(rate, dtype=np.float64)
    lower = np.broadcast_to(np.asarray(lower, dtype=np.float64), rate.shape)
    upper = np.broadcast_to(np.asarray(upper, dtype=np.float64), rate.shape)
    out = np.empty_like(rate)
    u = rng.random(rate.shape)
    xl = rate * lower
    xu = rate * upper
    upper_tail = xl > shape
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        # Upper-tail form: x = Q^-1(Q_lo - u (Q_lo - Q_hi)).
        idx = np.flatnonzero(upper_tail)
        if idx.size:
            q_lo = gammaincc(shape, xl[idx])
            q_hi = gammaincc(shape, xu[idx])
            ok = q_lo > _TINY_PROB
            q = q_lo[ok] - u[idx[ok]] * (q_lo[ok] - q_hi[ok])
            out[idx[ok]] = gammainccinv(shape, q) / rate[idx[ok]]
            rej = idx[~ok]
            if rej.size:
                out[rej] = _gamma_tail_rejection(shape, rate[rej], lower[rej], upper[rej], rng)
        # Lower-tail form: x = P^-1(P_lo + u (P_hi - P_lo)).
        idx = np.flatnonzero(~upper_tail)
        if idx.size:
            p_lo = gammainc(shape, xl[idx])
            p_hi = gammainc(shape, xu[idx])
            ok = p_hi > _TINY_PROB
            p = p_lo[ok] + u[idx[ok]] * (p_hi[ok] - p_lo[ok])
            out[idx[ok]] = gammaincinv(shape, p) / rate[idx[ok]]
            pw = idx[~ok]
            if pw.size:
                # Density ~ x^(shape-1) on [lower, upper]: CDF (x^k - lo^k) / (hi^k - lo^k).
                lo_k, hi_k = lower[pw] ** shape, upper[pw] ** shape
                out[pw] = (lo_k + u[pw] * (hi_k - lo_k)) ** (1.0 / shape)
    # Rounding guard: the inverse CDFs can land a few ulp outside the interval.
    return np.clip(out, lower, upper)


def _gamma_tail_rejection(shape, rate, lower, upper, rng):
    """Rejection sampler for Gamma(shape, rate) on [lower, upper] when rate * lower >> shape."""
    lam = rate - max(shape - 1.0, 0.0) / lower  # (k,) > 0 because rate * lower > 700 >> shape
    out = np.empty_like(rate)
    # An interval of one point has no other value (the proposal would never land in it).
    point = lower >= upper
    out[point] = upper[point]
    todo = np.flatnonzero(~point)
    while todo.size:
        lo = lower[todo]
        x = lo + rng.exponential(1.0, todo.size) / lam[todo]
        # log of target / (M * proposal); <= 0, with equality at x = lower.
        log_acc = (shape - 1.0) * np.log(x / lo) - (rate[todo] - lam[todo]) * (x - lo)
        acc = (np.log(rng.random(todo.size)) < log_acc) & (x <= upper[todo])
        out[todo[acc]] = x[acc]
        todo = todo[~acc]
    return out


def _sample_noise_var(resid: np.ndarray, rng: np.random.Generator) -> float:
    """sigma^2 | z, w ~ Inv-chi^2(N, tau^2), tau^2 = mean(resid^2): sum(resid^2) / chi^2_N."""
    n = resid.size
    return float(resid @ resid / rng.chisquare(n))


# ----------------------------------------------------------------------------------------------
# Gaussian weight conditional
# ----------------------------------------------------------------------------------------------
def _unit_plus_solve(B, b, xi, fallbacks):
    """Return ``B^-1 b`` (+ a draw with covariance ``B^-1`` if ``xi`` is given) for ``B = I + PSD``.

    Cholesky first. In exact arithmetic ``B >= I``, but when the PSD part is huge and rank deficient
    (prior variances of 1e30 on weights the data cannot identify, e.g. a linear-kernel basis of rank
    d << M) rounding can make the trailing Schur complement negative. Then, and only then, the
    eigendecomposition is used with eigenvalues clipped below at 1, the bound that holds exactly;
    the number of such fallbacks is counted in ``fallbacks[0]`` and logged once per fit.
    """
    try:
        L = scipy.linalg.cholesky(B, lower=True, check_finite=False)
    except np.linalg.LinAlgError:
        fallbacks[0] += 1
        lam, V = np.linalg.eigh(B)
        lam = np.maximum(lam, 1.0)  # B = I + PSD has every eigenvalue >= 1
        out = V @ ((V.T @ b) / lam)
        if xi is not None:
            out += V @ (xi / np.sqrt(lam))
        return out
    out = scipy.linalg.cho_solve((L, True), b, check_finite=False)
    if xi is not None:
        # cov(L^-T xi) = (L L^T)^-1 = B^-1
        out += scipy.linalg.solve_triangular(L, xi, lower=True, trans="T", check_finite=False)
    return out


def _sample_weights_primal(G, Phi, z, alpha, noise_var, rng, fallbacks):
    """Draw w ~ N(Sigma Phi^T z / s2, Sigma), Sigma = (G / s2 + diag(alpha))^-1, in weight space.

    ``G = Phi^T Phi`` (M, M) is precomputed. The precision is factored in the scaled form ``P = S^-1
    B S^-1`` with ``S = diag(alpha^-1/2)`` and ``B = I + S G S / s2``: ``B >= I``, so it is well
    conditioned from below whatever the spread of ``alpha`` (tiny and huge precisions side by side
    make ``P`` itself numerically singular). With ``B = L L^T`` the draw is ``w = S (B^-1 S b + L^-T
    xi)``, ``xi ~ N(0, I)``, whose covariance is ``S B^-1 S = P^-1``. Cost O(M^3). A column with
    ``alpha = inf`` has ``S_jj = 0``: its weight is exactly 0.
    """
    M = alpha.size
    xi = rng.standard_normal(M)
    s = np.where(np.isfinite(alpha), 1.0 / np.sqrt(alpha), 0.0)  # (M,) prior sd of each weight
    B = (s[:, None] * G * s[None, :]) / noise_var  # (M, M)
    B[np.diag_indices_from(B)] += 1.0
    b = s * (Phi.T @ z) / noise_var  # (M,)
    return s * _unit_plus_solve(B, b, xi, fallbacks)


def _sample_weights_dual(Phi, z, alpha, noise_var, rng, fallbacks):
    """Same draw as ``_sample_weights_primal`` in sample space (Bhattacharya et al. 2016).

    For ``theta ~ N(Sigma F^T c, Sigma)``, ``Sigma = (F^T F + D^-1)^-1`` with ``F = Phi / sigma``,
    ``c = z / sigma``, ``D = diag(1 / alpha)``: draw ``u ~ N(0, D)``, ``delta ~ N(0, I_N)``, set
    ``v = F u + delta``, solve ``(F D F^T + I_N) s = c - v`` by Cholesky, return ``u + D F^T s``.
    Cost O(N^2 M), never forming an M x M matrix (Biometrika 103(4), Algorithm 1). Exact, not an
    approximation: the result has the conditional's mean and covariance by the Woodbury identity.
    """
    N, M = Phi.shape
    d = np.where(np.isfinite(alpha), 1.0 / alpha, 0.0)  # (M,) prior variances; 0 = excluded
    sd = np.sqrt(noise_var)
    xi = rng.standard_normal(M)
    delta = rng.standard_normal(N)
    u = np.sqrt(d) * xi  # (M,)
    F = Phi / sd  # (N, M)
    v = F @ u + delta  # (N,)
    Fs = F * np.sqrt(d)  # (N, M)
    K = Fs @ Fs.T  # (N, N)
    K[np.diag_indices_from(K)] += 1.0
    s = _unit_plus_solve(K, z / sd - v, None, fallbacks)
    return u + d * (F.T @ s)


# ----------------------------------------------------------------------------------------------
# One chain
# ----------------------------------------------------------------------------------------------
def _run_chain(
    Phi,
    G,
    positive,
    *,
    alpha0,
    sample_alpha,
    alpha_shape,
    alpha_rate,
    alpha_lower,
    alpha_max,
    sample_noise,
    n_burnin,
    n_keep,
    thin,
    dual,
    rng,
    fallbacks,
):
    # alpha_lower is an array here: the user's bound raised to the numerical floor of each weight.
    """Run one Gibbs chain; return kept (w, alpha, noise_var) draws."""
    _N, M = Phi.shape
    alpha = np.array(alpha0, dtype=np.float64)
    noise_var = 1.0
    # Overdispersed start: w from its prior given the starting alpha (chains start apart).
    w = np.where(np.isfinite(alpha), rng.standard_normal(M) / np.sqrt(alpha), 0.0)
    W = np.empty((n_keep, M))
    A = np.empty((n_keep, M))
    S = np.empty(n_keep)
    # Gamma(a + 1/2, b + w^2/2): the paper's Gamma(3/2, w^2/2) at a = 1, b = 0
    shape_post = alpha_shape + 0.5
    keep = 0
    n_iter = n_burnin + n_keep * thin
    for it in range(n_iter):
        f = Phi @ w  # (N,)
        z = sample_latent(f, np.sqrt(noise_var), positive, rng)
        if dual:
            w = _sample_weights_dual(Phi, z, alpha, noise_var, rng, fallbacks)
        else:
            w = _sample_weights_primal(G, Phi, z, alpha, noise_var, rng, fallbacks)
        if sample_alpha:
            alpha = _sample_truncated_gamma(
                shape_post, alpha_rate + 0.5 * w * w, alpha_lower, alpha_max, rng
            )
        if sample_noise:
            noise_var = _sample_noise_var(z - Phi @ w, rng)
        if it >= n_burnin and (it - n_burnin) % thin == thin - 1:
            W[keep] = w
            A[keep] = alpha
            S[keep] = noise_var
            keep += 1
    return W, A, S


def _seed_sequence(random_state) -> np.random.SeedSequence:
    """Turn a ``random_state`` argument into a SeedSequence to spawn chain streams from."""
    if random_state is None or isinstance(random_state, (numbers.Integral, np.integer)):
        return np.random.SeedSequence(None if random_state is None else int(random_state))
    if isinstance(random_state, np.random.SeedSequence):
        return random_state
    if isinstance(random_state, np.random.Generator):
        return np.random.SeedSequence(random_state.integers(0, 2**63 - 1, dtype=np.int64).item())
    if isinstance(random_state, np.random.RandomState):
        return np.random.SeedSequence(int(random_state.randint(0, 2**31 - 1)))
    msg = (
        f"random_state must be None, an int, a numpy SeedSequence, Generator or RandomState; "
        f"got {type(random_state).__name__}."
    )
    raise ValueError(msg)
