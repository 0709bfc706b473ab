"""The two likelihoods of the type-II ML RVMs as adapters of the sequential path.

Gaussian regression (``_GaussianProblem``: the noise variance re-estimated after every action,
the exact 1-D maximum of the marginal likelihood over ``log sigma^2``) and logistic
classification by the Laplace approximation (``_LaplaceProblem``: IRLS to the posterior mode,
Bishop PRML eqs. 7.109-7.114). See :mod:`ardselect.estimators._rvm` for the virtual-regression view both share.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit, log_expit

from ..engine._sequential import _PathProblem
from ..numerics._ep import LatentPosterior

_LOG_2PI = float(np.log(2.0 * np.pi))

#: Smallest noise variance, relative to the variance of ``y``: an exact-fit model would
#: otherwise drive ``sigma^2`` to 0 and the marginal likelihood to infinity.
NOISE_FLOOR = 1e-10
#: Largest noise variance, relative to the mean square of the scaled targets (an empty model's
#: optimum is the mean square itself; the bound only keeps the 1-D search finite).
NOISE_CEIL = 1e3
#: Smallest ``s (1 - s)`` used as a site precision: it underflows to 0 for ``|f| > ~745`` in
#: float64, and the working targets need ``b > 0`` to stay finite.
B_FLOOR = 1e-300


# --------------------------------------------------------------------------------------------------
# Gaussian regression: the noise re-estimate
# --------------------------------------------------------------------------------------------------
def _optimise_noise(P, alpha, t, noise, lo, hi, max_iter=100):
    """Maximise ``log N(t; 0, sigma^2 I + P A^-1 P^T)`` over ``u = log sigma^2``, ``alpha`` fixed.

    With the thin SVD ``P A^-1/2 = U diag(sv) V^T``, ``lam = sv^2`` and ``z = U^T t`` (computed from
    the eigen-decomposition of the ``(d, d)`` Gram matrix when ``d <= n``, which is several times
    faster), ``-2 L(u) = sum_i [log(e^u + lam_i) + z_i^2 / (e^u + lam_i)] + n0 u + r2 e^-u +
    const``, where ``n0 = n - len(lam)`` and ``r2 = |t|^2 - |z|^2``. Newton on ``u`` with step
    halving (an ascent method), from the warm start ``noise``; the result is a stationary point
    inside ``[lo, hi]`` (or a bound). The fixed point of Tipping's ``sigma^2 = |t - Phi mu|^2 / (N -
    sum gamma)`` is the same stationary point.
    """
    n = t.shape[0]
    Pt = P / np.sqrt(alpha)  # (n, d)
    if Pt.shape[1] <= n:
        lam, V = np.linalg.eigh(Pt.T @ Pt)  # (d,), (d, d)
        # Directions with lam below rounding of the Gram matrix count as null directions of P.
        keep = lam > 1e-12 * max(float(lam[-1]), 1e-300)
        lam, V = lam[keep], V[:, keep]
        z2 = (V.T @ (Pt.T @ t)) ** 2 / lam  # (k,) = (U^T t)^2
    else:
        U, sv, _ = np.linalg.svd(Pt, full_matrices=False)
        lam = sv * sv  # (k,)
        z2 = (U.T @ t) ** 2  # (k,)
    r2 = max(float(t @ t - z2.sum()), 0.0)
    n0 = n - lam.shape[0]
    ulo, uhi = np.log(lo), np.log(hi)

    def value(u):
        v = np.exp(u) + lam
        return -0.5 * (np.sum(np.log(v)) + np.sum(z2 / v) + n0 * u + r2 * np.exp(-u))

    u = float(np.clip(np.log(noise), ulo, uhi))
    L = value(u)
    for _ in range(max_iter):
        e = np.exp(u)
        v = e + lam
        a = e / v  # d v_i / du / v_i
        g = -0.5 * (np.sum(a) - np.sum(z2 * a / v) + n0 - r2 / e)
        h = -0.5 * (np.sum(a - a * a) - np.sum(z2 * (a / v - 2.0 * a * a / v)) + r2 / e)
        step = -g / h if h < 0 else np.sign(g)
        step = float(np.clip(step, -2.0, 2.0))  # a trust region for the non-concave stretches
        while True:
            u_new = float(np.clip(u + step, ulo, uhi))
            L_new = value(u_new)
            if L_new >= L - 1e-12 * abs(L) or abs(step) < 1e-12:
                break
            step *= 0.5
        moved = abs(u_new - u)
        u, L = u_new, L_new
        if moved < 1e-10:
            break
    return float(np.exp(u))


def _gaussian_log_ml(post: LatentPosterior, b, t) -> float:
    """``log N(t; 0, B^-1 + Phi A^-1 Phi^T)`` from the posterior of the virtual regression."""
    n = t.shape[0]
    log_det_C = post.log_det_B - float(np.sum(np.log(b)))
    quad = float(np.sum(b * t * t) - (b * t) @ post.f_mean)
    return -0.5 * (n * _LOG_2PI + log_det_C + quad)


class _GaussianProblem(_PathProblem):
    """RVM regression as the sequential engine sees it; ``state`` is the noise variance."""

    def __init__(self, design, allowed, t, noise0, *, noise_lo, noise_hi, fit_noise=True):
        self.design = design  # (n, m) unit-RMS columns
        self.allowed = allowed
        self.t = t
        self.noise0 = float(noise0)
        self.noise_lo = noise_lo
        self.noise_hi = noise_hi
        self.fit_noise = fit_noise

    def initial_virtual(self):
        return np.full(self.t.shape[0], 1.0 / self.noise0), self.t

    def posterior(self, active, alpha, noise):
        b = np.full(self.t.shape[0], 1.0 / noise)
        return b, LatentPosterior(self.columns(active), np.asarray(alpha, float), b, b * self.t)

    def refresh(self, active, alpha, state):
        noise = self.noise0 if state is None else state
        if self.fit_noise:
            noise = _optimise_noise(self.columns(active), alpha, self.t, noise, self.noise_lo,
                                    self.noise_hi)
        b, post = self.posterior(active, alpha, noise)
        stats = {"log_evidence": _gaussian_log_ml(post, b, self.t), "noise_variance": noise}
        return b, self.t, post, stats, noise


# --------------------------------------------------------------------------------------------------
# Logistic classification: the Laplace approximation (Bishop PRML eqs. 7.109-7.114)
# --------------------------------------------------------------------------------------------------
def _working(f, y, ysign):
    """Site precisions ``b = s (1 - s)`` and IRLS working targets ``t = f + (y - s) / b``.

    With the signed latent ``h = ysign f``, ``(y - s) / b = ysign (1 + exp(-h))``, so ``t = ysign (h
    + 1 + exp(-h))`` needs no division; ``exp`` is capped at ``exp(700)`` (a sample misclassified by
    a latent of 700 has ``b`` below ``B_FLOOR`` and no weight in the virtual regression anyway).
    """
    h = ysign * f
    b = np.maximum(expit(h) * expit(-h), B_FLOOR)
    t = ysign * (h + 1.0 + np.exp(np.minimum(-h, 700.0)))
    return b, t


def _log_posterior(f, w, alpha, ysign):
    """Eq. 7.109 without its constant: ``sum_i log sigmoid(ysign_i f_i) - w^T A w / 2``."""
    return float(np.sum(log_expit(ysign * f)) - 0.5 * np.sum(alpha * w * w))


def laplace_mode(P, alpha, y, w0=None, *, tol=1e-10, max_iter=100):
    """Laplace approximation of the logistic model with prior ``w ~ N(0, diag(1/alpha))``.

    The mode of eq. 7.109 by IRLS: each Newton step is the posterior mean of the virtual regression
    with precisions ``b = s (1 - s)`` and targets ``t = f + (y - s)/b`` (eqs. 7.110-7.111), computed
    with ``nu = b f + (y - s)`` (no division by ``b``). Steps are halved until the log posterior
    does not decrease, so the iteration converges from any start (the objective is strictly
    concave).

    Parameters
    ----------
    P : ndarray of shape (n_samples, d)
        Basis columns of the active weights.
    alpha : ndarray of shape (d,)
        Their prior precisions (finite, positive).
    y : ndarray of shape (n_samples,)
        Labels in {0, 1}.
    w0 : ndarray of shape (d,), default=None
        Warm start (zeros by default).
    tol : float, default=1e-10
        Stop when the largest Newton step is below ``tol * (1 + max|w|)``.
    max_iter : int, default=100
        Maximum number of Newton steps.

    Returns
    -------
    dict
        ``w`` (mode, ``(d,)``), ``post`` (:class:`~ardselect.numerics._ep.LatentPosterior` at the mode: its
        covariance is ``(Phi^T B Phi + A)^-1``, eq. 7.113), ``b`` and ``t`` (the virtual regression
        at the mode), ``log_evidence`` (eq. 7.114: ``log p(y | w) - w^T A w / 2 - log|I + A^-1/2
        Phi^T B Phi A^-1/2| / 2``), ``grad`` (the gradient of the log posterior at ``w``, eq.
        7.110), ``n_iter``, ``converged``.
    """
    P = np.asarray(P, dtype=np.float64)
    alpha = np.asarray(alpha, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    ysign = 2.0 * y - 1.0
    d = P.shape[1]
    w = np.zeros(d) if w0 is None else np.array(w0, dtype=np.float64)
    f = P @ w
    psi = _log_posterior(f, w, alpha, ysign)
    converged = False
    it = 0
    for it in range(1, max_iter + 1):  # noqa: B007 (it is reported after the loop)
        b, _ = _working(f, y, ysign)
        nu = b * f + (y - expit(f))  # (n,) = b t
        w_new = LatentPosterior(P, alpha, b, nu).mean
        dw = w_new - w
        step = 1.0
        while True:
            w_try = w + step * dw
            f_try = P @ w_try
            psi_try = _log_posterior(f_try, w_try, alpha, ysign)
            if psi_try >= psi - 1e-13 * abs(psi) or step < 1e-10:
                break
            step *= 0.5
        w, f, psi = w_try, f_try, psi_try
        if np.max(np.abs(step * dw), initial=0.0) <= tol * (1.0 + np.max(np.abs(w), initial=0.0)):
            converged = True
            break
    b, t = _working(f, y, ysign)
    post = LatentPosterior(P, alpha, b, b * t)
    grad = P.T @ (y - expit(f)) - alpha * w
    log_ev = psi - 0.5 * post.log_det_B
    return {"w": w, "post": post, "b": b, "t": t, "log_evidence": float(log_ev), "grad": grad,
            "n_iter": it, "converged": converged}


class _LaplaceProblem(_PathProblem):
    """Laplace logistic classification as the sequential engine sees it; ``state`` is ``w`` (m,)."""

    def __init__(self, design, allowed, y, *, irls_tol, irls_max_iter):
        self.design = design  # (n, m) unit-RMS columns, not signed
        self.allowed = allowed
        self.y = y  # (n,) in {0, 1}
        self.irls_tol = irls_tol
        self.irls_max_iter = irls_max_iter
        self.n_irls_unconverged = 0

    def initial_virtual(self):
        # w = 0: s = 1/2, b = 1/4, t = (y - 1/2) / (1/4) = +-2.
        n = self.y.shape[0]
        return np.full(n, 0.25), 4.0 * (self.y - 0.5)

    def mode(self, active, alpha, state):
        w0 = None if state is None else state[active]
        return laplace_mode(self.columns(active), alpha, self.y, w0, tol=self.irls_tol,
                            max_iter=self.irls_max_iter)

    def refresh(self, active, alpha, state):
        lap = self.mode(active, alpha, state)
        if not lap["converged"]:
            self.n_irls_unconverged += 1
        w_full = np.zeros(self.design.shape[1])
        w_full[active] = lap["w"]
        stats = {"log_evidence": lap["log_evidence"], "irls_iter": lap["n_iter"]}
        return lap["b"], lap["t"], lap["post"], stats, w_full
