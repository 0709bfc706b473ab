r"""Expectation Propagation for the ARD probit model (Qi, Minka, Picard & Ghahramani 2004, sec. 3.1).

Notation (paper -> code)
------------------------
==========================  ==================  ===============================================
paper                       code                meaning
==========================  ==================  ===============================================
``t_i phi(x_i)``            ``P[i]``            signed basis row of sample i, ``(n, d)`` over the
                                                active set
``alpha``                   ``alpha``           prior precisions of the active weights, ``(d,)``
``m_i, v_i`` (eq. 8-9)      ``nu/tau, 1/tau``   site mean and variance; we keep the natural
                                                parameters ``tau = 1/v``, ``nu = m/v``
``m_w, V_w`` (eq. 14)       ``mean, cov``       Gaussian posterior of the weights
``m_w^{\i}, V_w^{\i}``     ``cavity_*``        cavity (leave-one-out) posterior, reported for the
                                                signed latent ``h_i = P[i] . w``
``z_i`` (eq. 7)             ``z``               ``mc / sqrt(1 + vc)``
``p(D | alpha)`` (eq. 11)   ``log_evidence``    EP's approximation of the log marginal likelihood
==========================  ==================  ===============================================

Algorithm
---------
Sites are updated in parallel: from the current posterior we form every cavity, match the moments of
every tilted distribution ``Phi(h) N(h; mc, vc)`` (:func:`ardselect.numerics._probit.tilted_moments`) and move
all site parameters a fraction ``damping`` of the way to their new values. The fixed point is the one of
sequential EP. For the probit likelihood (log-concave) the new site precision is never negative: it is
computed as ``a / (v (1 - a))`` with ``a`` in [0, 1), so no negative-precision rule is needed; a site whose
cavity would have non-positive variance (possible only by rounding) is left as it is and counted in
``n_skipped``.

The posterior is computed in weight space when the model has at most as many weights as samples,
and in sample space (Woodbury, never a ``d x d`` matrix) otherwise. Both use the well-conditioned
matrix ``I + ...`` of the alpha-scaled design ``Pt = P / sqrt(alpha)``:

* weight space: ``Bw = I_d + Pt^T diag(tau) Pt``, ``cov = A^-1/2 Bw^-1 A^-1/2``;
* sample space: ``Bs = I_n + T^1/2 Pt Pt^T T^1/2``, ``cov = A^-1 - A^-1 P^T T^1/2 Bs^-1 T^1/2 P A^-1``;

and ``log|Bw| = log|Bs|`` (Sylvester), which is the log-determinant the evidence needs.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import numpy as np
from scipy.linalg import lapack
from scipy.linalg.blas import ddot as _ddot
from scipy.linalg.blas import dgemv as _dgemv
from scipy.linalg.blas import dsyrk as _dsyrk
from scipy.linalg.blas import dtrsm as _dtrsm

from ._linalg import chol_logdet, chol_solve, safe_cholesky, tri_solve
from ._probit import _LOG_SQRT_2PI, log_ndtr, log_Phi

__all__ = ["LatentPosterior", "latent_posterior", "loo_error", "loo_log_loss", "loo_prob_error",
           "run_ep"]

logger = logging.getLogger("ardselect")


# --------------------------------------------------------------------------------------------------
# Gaussian posterior of the weights given Gaussian sites (the "virtual regression" of sec. 3.3)
# --------------------------------------------------------------------------------------------------
class LatentPosterior:
    """Posterior ``N(mean, cov)`` of ``w`` under prior ``N(0, diag(1/alpha))`` and sites ``(tau, nu)``.

    ``P`` is the ``(n, d)`` design of the active weights, ``tau, nu`` the ``(n,)`` site precisions and
    precision-means (``tau >= 0``). Exposes the marginals ``f_mean, f_var`` of ``h = P w`` and ``log_det_B``.
    """

    def __init__(self, P, alpha, tau, nu, route: str | None = None, prior=None):
        n, d = P.shape
        self.alpha = alpha
        if prior is None:
            prior = GaussianPrior(P, alpha, route)
        self.inv_sqrt_alpha = prior.inv_sqrt_alpha  # (d,)
        self.Pt = prior.Pt  # (n, d) alpha-scaled design
        self.tau = tau
        self.nu = nu
        self.route = prior.route
        if d == 0:
            self.route = "empty"
            self.f_mean = np.zeros(n)
            self.f_var = np.zeros(n)
            self.mean = np.zeros(0)
            self.log_det_B = 0.0
            return
        Pt = self.Pt
        if self.route == "weight":
            Bw = Pt.T @ (tau[:, None] * Pt)  # (d, d)
            Bw.flat[:: d + 1] += 1.0
            self.L = safe_cholesky(Bw)
            self.mean_t = chol_solve(self.L, Pt.T @ nu)  # (d,) = A^1/2 mean
            V = tri_solve(self.L, Pt.T)  # (d, n)
            self.f_var = np.einsum("ij,ij->j", V, V)
            self.f_mean = Pt @ self.mean_t
        elif self.route == "sample":
            s = np.sqrt(tau)  # (n,)
            K = prior.K  # (n, n) prior covariance of the latents
            Bs = (s[:, None] * K) * s[None, :]
            Bs.flat[:: n + 1] += 1.0
            self.L = safe_cholesky(Bs)
            self.s = s
            V = tri_solve(self.L, s[:, None] * K)  # (n, n)
            self.f_var = np.diag(K) - np.einsum("ij,ij->j", V, V)
            # b = nu - S Bs^-1 S K nu;  mean = A^-1/2 Pt^T b;  f_mean = K b
            Knu = K @ nu
            b = nu - s * chol_solve(self.L, s * Knu)
            self.mean_t = Pt.T @ b  # (d,) = A^1/2 mean
            self.f_mean = K @ b
        else:
            msg = f"unknown route {self.route!r}"
            raise ValueError(msg)
        self.mean = self.inv_sqrt_alpha * self.mean_t
        self.log_det_B = chol_logdet(self.L)

    def latent(self, Xa):
        """Mean and variance of ``x . w`` for the rows of ``Xa`` (``(m, d)``, active columns)."""
        m = Xa.shape[0]
        if self.route == "empty":
            return np.zeros(m), np.zeros(m)
        Xt = Xa * self.inv_sqrt_alpha  # (m, d)
        mean = Xt @ self.mean_t
        if self.route == "weight":
            V = tri_solve(self.L, Xt.T)  # (d, m)
            var = np.einsum("ij,ij->j", V, V)
        else:
            V = tri_solve(self.L, self.s[:, None] * (self.Pt @ Xt.T))  # (n, m)
            var = np.einsum("ij,ij->i", Xt, Xt) - np.einsum("ij,ij->j", V, V)
        return mean, np.maximum(var, 0.0)

    def cov(self):
        """Posterior covariance of the active weights, ``(d, d)``."""
        d = self.Pt.shape[1]
        if self.route == "empty":
            return np.zeros((0, 0))
        if self.route == "weight":
            Li = tri_solve(self.L, np.eye(d))
            C = Li.T @ Li
        else:
            V = tri_solve(self.L, self.s[:, None] * self.Pt)  # (n, d)
            C = np.eye(d) - V.T @ V
        return C * np.outer(self.inv_sqrt_alpha, self.inv_sqrt_alpha)

    def var(self):
        """Posterior variances of the active weights, ``(d,)``, without forming ``cov`` in sample space."""
        if self.route == "empty":
            return np.zeros(0)
        if self.route == "weight":
            Li = tri_solve(self.L, np.eye(self.Pt.shape[1]))
            v = np.einsum("ij,ij->j", Li, Li)
        else:
            V = tri_solve(self.L, self.s[:, None] * self.Pt)
            v = 1.0 - np.einsum("ij,ij->j", V, V)
        return np.maximum(v, 0.0) / self.alpha


class GaussianPrior:
    """What does not change while only the sites move: the scaled design and, in sample space, ``K``."""

    def __init__(self, P, alpha, route=None):
        n, d = P.shape
        self.inv_sqrt_alpha = 1.0 / np.sqrt(alpha)  # (d,)
        self.Pt = P * self.inv_sqrt_alpha  # (n, d)
        self.route = "empty" if d == 0 else (route or ("weight" if d <= n else "sample"))
        self.K = self.Pt @ self.Pt.T if self.route == "sample" else None  # (n, n)


def _assemble_posterior(prior, alpha, tau, nu, L, f_mean, f_var, x) -> LatentPosterior:
    """The :class:`LatentPosterior` of sites ``tau, nu`` from what an EP loop computed for them.

    ``L`` is the clean lower Cholesky factor of ``B``, ``f_mean, f_var`` the latent marginals and
    ``x`` the solve of the posterior mean: ``A^1/2 mean`` itself in weight space, the vector ``b``
    with ``A^1/2 mean = Pt^T b`` in sample space (as :class:`LatentPosterior` defines them).
    """
    post = LatentPosterior.__new__(LatentPosterior)
    post.alpha, post.tau, post.nu = alpha, tau, nu
    post.inv_sqrt_alpha, post.Pt, post.route = prior.inv_sqrt_alpha, prior.Pt, prior.route
    post.L, post.f_mean, post.f_var = L, f_mean, f_var
    if prior.route == "weight":
        post.mean_t = x
    else:
        post.s = np.sqrt(tau)
        post.mean_t = prior.Pt.T @ x  # (d,) = A^1/2 mean
    post.mean = post.inv_sqrt_alpha * post.mean_t
    post.log_det_B = 2.0 * float(np.log(np.diagonal(L)).sum())
    return post


def latent_posterior(P, alpha, tau, nu, route=None) -> LatentPosterior:
    """Gaussian posterior of the weights for design ``P``, precisions ``alpha`` and sites ``tau, nu``."""
    return LatentPosterior(np.asarray(P, float), np.asarray(alpha, float), tau, nu, route)


# --------------------------------------------------------------------------------------------------
# EP iterations
# --------------------------------------------------------------------------------------------------
@dataclass
class EPState:
    """Converged (or last) EP sites and what is derived from them; arrays over samples are ``(n,)``."""

    tau: np.ndarray
    nu: np.ndarray
    post: LatentPosterior
    cavity_mean: np.ndarray
    cavity_var: np.ndarray
    log_evidence: float
    n_iter: int
    converged: bool
    n_skipped: int = 0


_min = np.minimum.reduce
_max = np.maximum.reduce


def _cavity(post: LatentPosterior, tau, nu):
    """Cavity moments of the signed latents; ``ok`` is False where rounding made them invalid."""
    f_var, f_mean = post.f_var, post.f_mean
    denom = 1.0 - tau * f_var  # = f_var * tau_cavity  (> 0 in exact arithmetic)
    if f_var.size and min(_min(denom) - 1e-12, _min(f_var)) > 0.0:
        return (f_mean - nu * f_var) / denom, f_var / denom, np.ones(f_var.shape, dtype=bool)
    ok = (denom > 1e-12) & (f_var > 0)
    safe = np.where(ok, denom, 1.0)
    vc = np.where(ok, f_var / safe, np.inf)
    mc = np.where(ok, (f_mean - nu * f_var) / safe, 0.0)
    return mc, vc, ok


def _log_evidence(post: LatentPosterior, tau, nu, mc, vc) -> float:
    """EP log marginal likelihood (eq. 11 restated; see ``shared/design/ep-ard-math.md``).

    ``sum_i [log Phi(z_i) + 0.5 log(1 + tau_i vc_i) + tau_i (m_i - mc_i)^2 / (2 (1 + tau_i vc_i))]
    - 0.5 log|B| - 0.5 (sum_i tau_i m_i^2 - nu . f_mean)``, with ``m_i = nu_i / tau_i``: the same quantity
    as the design note's form, with ``log|C|`` and ``m^T C^-1 m`` rewritten in terms of ``B`` so that no
    site variance ``1 / tau_i`` is ever formed.
    """
    upd = tau > 0
    if post.route == "empty":
        # No weights: every latent is exactly 0, p(y) = Phi(0)^n.
        return float(np.sum(log_Phi(np.zeros_like(tau))))
    m = np.where(upd, nu / np.where(upd, tau, 1.0), 0.0)
    z = mc / np.sqrt(1.0 + vc)
    tv = tau * vc
    site = log_Phi(z) + 0.5 * np.log1p(tv) + 0.5 * tau * (m - mc) ** 2 / (1.0 + tv)
    quad = float(np.sum(tau * m * m) - nu @ post.f_mean)
    # Every sample counts: a site with tau = 0 (a sample whose latent has zero variance, e.g. an all-zero
    # row on the active features) still contributes its exact likelihood log Phi(z_i).
    return float(np.sum(site)) - 0.5 * post.log_det_B - 0.5 * quad


class _Marginals:
    """Marginals ``f_mean, f_var`` of the latents ``h = P w`` for changing sites, without rebuilding.

    The EP loop needs only these two ``(n,)`` vectors per sweep; everything that does not depend on
    the sites (the scaled design, its transpose in Fortran order, ``K`` in sample space) is prepared
    once. Same algebra as :class:`LatentPosterior`, with the products regrouped so that a sweep is
    one symmetric rank-k update, one Cholesky factorisation, one triangular solve and two
    matrix-vector products:

    * weight space: ``V = L^-1 Pt^T`` with ``L L^T = Bw``, ``f_var = colsum(V * V)``,
      ``f_mean = Pt Bw^-1 Pt^T nu = V^T (V nu)``;
    * sample space: ``V = L^-1 T^1/2 K`` with ``L L^T = Bs``, ``f_var = diag(K) - colsum(V * V)``,
      ``f_mean = K nu - K T^1/2 Bs^-1 T^1/2 K nu = K nu - V^T (V nu)``.
    """

    def __init__(self, prior: GaussianPrior):
        self.route = prior.route
        if self.route == "weight":
            self.PtT = np.asfortranarray(prior.Pt.T)  # (d, n)
            d = self.PtT.shape[0]
            self.eye = np.eye(d, order="F")
        elif self.route == "sample":
            self.K = np.asfortranarray(prior.K)  # (n, n)
            self.diag_K = np.diag(self.K).copy()
            self.eye = np.eye(self.K.shape[0], order="F")

    def posterior(self, prior, P, alpha, tau, nu):
        """The full :class:`LatentPosterior` for the final sites, from the same few calls."""
        s = np.sqrt(tau)
        if self.route == "weight":
            L = _factor(_dsyrk(1.0, self.PtT * s, beta=1.0, c=self.eye, lower=1))
            V = _dtrsm(1.0, L, self.PtT, lower=1)  # (d, n)
            Vnu = _dgemv(1.0, V, nu)
            x = _dtrsm(1.0, L, Vnu[:, None], lower=1, trans_a=1)[:, 0]  # Bw^-1 Pt^T nu
            f_var = np.einsum("ij,ij->j", V, V)
            f_mean = _dgemv(1.0, V, Vnu, trans=1)
        else:
            SK = s[:, None] * self.K
            Bs = SK * s
            Bs.flat[:: Bs.shape[0] + 1] += 1.0
            L = _factor(Bs)
            V = _dtrsm(1.0, L, SK, lower=1)
            f_var = self.diag_K - np.einsum("ij,ij->j", V, V)
            Vnu = _dgemv(1.0, V, nu)
            # b = nu - S Bs^-1 S K nu (LatentPosterior): S K nu = L V nu, so b = nu - s L^-T (V nu)
            x = nu - s * _dtrsm(1.0, L, Vnu[:, None], lower=1, trans_a=1)[:, 0]
            f_mean = _dgemv(1.0, self.K, x)
        # The factor of record is clean (callers may use both triangles).
        return _assemble_posterior(prior, alpha, tau, nu, np.tril(L), f_mean, f_var, x)

    def __call__(self, tau, nu):
        # Direct BLAS/LAPACK calls: these run once per EP sweep on small matrices, where numpy's
        # dispatch for matmul and dot costs more than the arithmetic.
        s = np.sqrt(tau)  # (n,)
        if self.route == "weight":
            Ps = self.PtT * s  # (d, n) = Pt^T T^1/2
            # Bw = I + Pt^T T Pt; dsyrk fills the lower triangle, the one dpotrf reads.
            L = _factor(_dsyrk(1.0, Ps, beta=1.0, c=self.eye, lower=1))
            V = _dtrsm(1.0, L, self.PtT, lower=1)  # (d, n) = L^-1 Pt^T
            f_var = np.einsum("ij,ij->j", V, V)
            f_mean = _dgemv(1.0, V, _dgemv(1.0, V, nu), trans=1)
        else:
            SK = s[:, None] * self.K  # (n, n) = T^1/2 K
            Bs = SK * s  # T^1/2 K T^1/2
            Bs.flat[:: Bs.shape[0] + 1] += 1.0
            L = _factor(Bs)
            V = _dtrsm(1.0, L, SK, lower=1)  # (n, n)
            f_var = self.diag_K - np.einsum("ij,ij->j", V, V)
            f_mean = _dgemv(1.0, self.K, nu) - _dgemv(1.0, V, _dgemv(1.0, V, nu), trans=1)
        return f_mean, f_var


def _factor(A):
    """Cholesky factor along the EP loop: the bare LAPACK call, ``safe_cholesky`` only on failure.

    ``A`` may hold only its lower triangle (as ``dsyrk`` leaves it).
    """
    L, info = lapack.dpotrf(A, lower=1, clean=0)
    # A NaN anywhere in the lower triangle propagates to the last diagonal entry of the factor (or
    # makes dpotrf fail), so one scalar test replaces a scan of the whole matrix.
    if info == 0 and math.isfinite(L[-1, -1]):
        return L
    # Rare: let the jitter policy (and its NaN check) handle it, on the full symmetric matrix.
    return safe_cholesky(np.tril(A) + np.tril(A, -1).T)


# Designs whose sweep costs at most this many multiply-adds (``m^2 n``, ``m`` the side of the
# factored matrix) run the sweeps in the compiled loop of ``_compiled``; larger ones in the BLAS loop
# of ``run_ep``, which is faster once the arithmetic outweighs the interpreter. Measured by
# ``benchmarks/speed.py --ep-kernel``.
KERNEL_MAX_WORK = 100_000

# Constants as 0-d arrays: numpy converts a Python float operand on every call, which costs more
# than the arithmetic on the short vectors of the EP loop.
_ONE = np.array(1.0)
_HALF_NEG = np.array(-0.5)
_C_LOG_SQRT_2PI = np.array(_LOG_SQRT_2PI)
_TINY = np.array(1e-300)


def _new_sites(mc, vc, out):
    """EP site update from valid cavities: ``out[0] = tau_new``, ``out[1] = nu_new``, ``(2, k)``.

    The formulas of :func:`ardselect.numerics._probit.tilted_moments` (``tau_new = a / var_hat`` with ``1 - a
    = (1 + v (1 - r (z + r))) / (1 + v)``, ``nu_new = m_hat / var_hat - m / v``), fused into the
    fewest array operations: this runs once per EP sweep, on short vectors, where each numpy call
    costs more than its arithmetic. ``log Phi`` is evaluated once (``r = exp(log phi - log Phi)``).
    """
    s2 = vc + _ONE
    s = np.sqrt(s2)
    z = mc / s
    r = _HALF_NEG * z
    r *= z
    r -= _C_LOG_SQRT_2PI
    r -= log_ndtr(z)
    np.exp(r, out=r)  # phi(z) / Phi(z), in log space
    # Variance of N(0,1) truncated below at -z, kept inside (0, 1] against rounding at |z| > ~1e4.
    tv = z + r
    tv *= r
    np.subtract(_ONE, tv, out=tv)
    np.maximum(tv, _TINY, out=tv)
    np.minimum(tv, _ONE, out=tv)
    tv *= vc
    tv += _ONE
    tv /= s2  # 1 - a
    var = vc * tv  # var_hat
    t0, t1 = out[0], out[1]
    np.subtract(_ONE, tv, out=t0)
    t0 /= var  # tau_new = a / var_hat
    np.multiply(vc, r, out=t1)
    t1 /= s
    t1 += mc
    t1 /= var
    r = mc / vc
    t1 -= r  # nu_new = m_hat / var_hat - m / v
    return out


def run_ep(P, alpha, tau=None, nu=None, *, damping=1.0, tol=1e-8, max_iter=500, route=None):
    """Run parallel damped EP for the signed probit design ``P`` (``(n, d)``) and precisions ``alpha``.

    ``tau, nu`` warm-start the sites (zeros by default). Convergence: the largest change of any site
    parameter, relative to ``1 + |value|``, below ``tol``. Step control:
    the step adapts: it halves (down to 0.05) when successive updates point in opposite directions and
    grows back (up to ``damping``) when they agree.

    A sweep computes only the latent marginals (:class:`_Marginals`) and the new sites
    (:func:`_new_sites`); the full :class:`LatentPosterior` is built once, for the final sites.
    Small designs (``m^2 n <= KERNEL_MAX_WORK``) run the same sweeps, and the final posterior,
    cavities and evidence, in one compiled call (:func:`ardselect.numerics._compiled.ep_sweeps`).
    """
    P = np.asarray(P, dtype=np.float64)
    alpha = np.asarray(alpha, dtype=np.float64)
    n = P.shape[0]
    step = float(damping)
    if not 0.0 < step <= 1.0:
        msg = f"damping must be in (0, 1]; got {damping!r}."
        raise ValueError(msg)
    # Sites as one (2, n) array: row 0 the precisions tau, row 1 the precision-means nu.
    site = np.zeros((2, n))
    if tau is not None:
        site[0] = tau
    if nu is not None:
        site[1] = nu
    tau, nu = site[0], site[1]  # views
    converged = False
    n_skipped = 0
    it = 0
    prior = GaussianPrior(P, alpha, route)
    if prior.route == "empty":
        tau, nu = tau * 0, nu * 0
        post = LatentPosterior(P, alpha, tau, nu, route, prior)
        mc = np.zeros(n)
        vc = np.zeros(n)
        return EPState(tau, nu, post, mc, vc, _log_evidence(post, tau, nu, mc, vc), 0,
                       converged=True)
    m = prior.Pt.shape[1] if prior.route == "weight" else n  # side of the factored matrix
    if m * m * n <= KERNEL_MAX_WORK:
        from ._compiled import ep_sweeps  # numba is imported on the first fit, not with ardselect

        weight = prior.route == "weight"
        # Weight space: Pt^T (d, n); sample space: K (n, n), symmetric, and its diagonal.
        A = np.ascontiguousarray(prior.Pt.T) if weight else np.ascontiguousarray(prior.K)
        start = site.copy()
        it, converged, n_skipped, status, L, f_mean, f_var, x, mc, vc, log_ev = ep_sweeps(
            A, weight, np.zeros(0) if weight else np.diag(A).copy(), site, float(damping),
            float(tol), int(max_iter))
        if status == 0:
            tau, nu = site[0].copy(), site[1].copy()
            post = _assemble_posterior(prior, alpha, tau, nu, L, f_mean, f_var, x)
            return EPState(tau, nu, post, mc, vc, log_ev, it, converged, n_skipped)
        site[:] = start  # a failed factorisation: the numpy loop below and its jitter handle it
        converged, n_skipped, it = False, 0, 0
    marginals = _Marginals(prior)
    new = np.empty((2, n))
    prev = None  # previous relative update (2n,), for the step control
    prev_sq = 0.0
    f_mean, f_var = marginals(tau, nu)
    for it in range(1, max_iter + 1):
        # Cavities (eq. 7 context): denom = f_var * tau_cavity, > 0 in exact arithmetic.
        denom = tau * f_var
        np.subtract(_ONE, denom, out=denom)
        if min(_min(denom) - 1e-12, _min(f_var)) > 0.0:
            vc = f_var / denom
            mc = nu * f_var
            np.subtract(f_mean, mc, out=mc)
            mc /= denom
            _new_sites(mc, vc, new)
            n_skipped = 0
        else:
            # A cavity that rounding made invalid: that site is left as it is (see module notes).
            ok = (denom > 1e-12) & (f_var > 0)
            new[:] = site
            sub = _new_sites((f_mean[ok] - nu[ok] * f_var[ok]) / denom[ok], f_var[ok] / denom[ok],
                             np.empty((2, int(ok.sum()))))
            new[:, ok] = sub
            n_skipped = int(n - ok.sum())
        d = new - site  # (2, n)
        rel = np.abs(new)
        rel += _ONE
        np.divide(d, rel, out=rel)  # change relative to 1 + |new value|
        rel = rel.ravel()
        change = max(_max(rel), -_min(rel))
        # Step control: parallel EP can fall into a period-2 oscillation. When two successive
        # (relative) updates point in opposite directions the step shrinks; when they agree it grows
        # back towards ``damping``. This changes the path to the fixed point, not the fixed point.
        rel_sq = _ddot(rel, rel)
        if prev is not None:
            nrm = math.sqrt(rel_sq * prev_sq)
            cos = _ddot(rel, prev) / nrm if nrm > 0 else 0.0
            if cos < -0.3:
                step = max(0.5 * step, 0.05)
            elif cos > 0.3:
                step = min(1.5 * step, damping)
        prev, prev_sq = rel, rel_sq
        d *= step
        site += d
        if change < tol:
            converged = True
            break
        if it < max_iter:
            f_mean, f_var = marginals(tau, nu)
    return _finish(marginals, prior, P, alpha, site, it, converged, n_skipped)


def _finish(marginals, prior, P, alpha, site, it, converged, n_skipped):
    """The :class:`EPState` of the final sites ``site`` (``(2, n)``) after ``it`` sweeps."""
    n = site.shape[1]
    tau, nu = site[0].copy(), site[1].copy()
    post = marginals.posterior(prior, P, alpha, tau, nu)
    mc, vc, ok = _cavity(post, tau, nu)
    if not ok.all():
        n_skipped = int(n - ok.sum())
        # A cavity that rounding made invalid is replaced by the posterior marginal itself (the
        # conservative choice: that sample's LOO estimate then uses its own site).
        mc = np.where(ok, mc, post.f_mean)
        vc = np.where(ok, vc, post.f_var)
    log_ev = _log_evidence(post, tau, nu, mc, vc)
    return EPState(tau, nu, post, mc, vc, log_ev, it, converged, n_skipped)


# --------------------------------------------------------------------------------------------------
# Leave-one-out estimates (eqs. 12, 13)
# --------------------------------------------------------------------------------------------------
def loo_error(cavity_mean) -> float:
    """Eq. 12: fraction of samples whose cavity mean of the signed latent is negative (0 counts half)."""
    cm = np.asarray(cavity_mean)
    return float(np.mean((cm < 0) + 0.5 * (cm == 0)))


def loo_prob_error(cavity_mean, cavity_var, scale: float = 50.0) -> float:
    """Eq. 13 with the paper's pre-scaling: ``mean_i Phi(-scale * mc_i / sqrt(1 + vc_i))``."""
    z = np.asarray(cavity_mean) / np.sqrt(1.0 + np.asarray(cavity_var))
    return float(np.mean(np.exp(log_Phi(-scale * z))))


def loo_log_loss(cavity_mean, cavity_var) -> float:
    """EP's leave-one-out log-loss: ``-mean_i log Phi(mc_i / sqrt(1 + vc_i))`` (log space)."""
    z = np.asarray(cavity_mean) / np.sqrt(1.0 + np.asarray(cavity_var))
    return float(-np.mean(log_Phi(z)))
