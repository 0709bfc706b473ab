"""Expectation Propagation for the ARD probit model (Qi, Minka, Picard & Ghahramani 2004, sec. 3.1).

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
``m_w^{\\i}, V_w^{\\i}``     ``cavity_*``        cavity (leave-one-out) posterior, reported for the
                                                signed latent ``h_i = P[i] . w``
``z_i`` (eq. 7)             ``z``               ``mc / sqrt(1 + vc)``
``p(D | alpha)`` (eq. 11)   ``log_evidence``    EP's approximation of the log marginal likelihood
==========================  ==================  ===============================================

Algorithm
---------
Sites are updated in parallel: from the current posterior we form every cavity, match the moments of
every tilted distribution ``Phi(h) N(h; mc, vc)`` (:func:`ardselect._probit.tilted_moments`) and move
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
from dataclasses import dataclass, field

import numpy as np

from ._linalg import chol_logdet, chol_solve, safe_cholesky, tri_solve
from ._probit import log_Phi, tilted_moments
from ._validation import check_binary_labels, check_design
from .exceptions import DataError

__all__ = ["ep_probit", "EPResult", "latent_posterior", "run_ep", "signed_labels"]

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
            raise ValueError(f"unknown route {self.route!r}")
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


def _cavity(post: LatentPosterior, tau, nu):
    """Cavity moments of the signed latents; ``ok`` is False where rounding made them invalid."""
    f_var, f_mean = post.f_var, post.f_mean
    denom = 1.0 - tau * f_var  # = f_var * tau_cavity  (> 0 in exact arithmetic)
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


def run_ep(P, alpha, tau=None, nu=None, *, damping=1.0, tol=1e-8, max_iter=500, route=None):
    """Run parallel damped EP for the signed probit design ``P`` (``(n, d)``) and precisions ``alpha``.

    ``tau, nu`` warm-start the sites (zeros by default). Convergence: the largest change of any site
    parameter, relative to ``1 + |value|``, below ``tol``. Step control:
    the step adapts: it halves (down to 0.05) when successive updates point in opposite directions and
    grows back (up to ``damping``) when they agree.
    """
    P = np.asarray(P, dtype=np.float64)
    alpha = np.asarray(alpha, dtype=np.float64)
    n = P.shape[0]
    tau = np.zeros(n) if tau is None else np.array(tau, dtype=np.float64)
    nu = np.zeros(n) if nu is None else np.array(nu, dtype=np.float64)
    step = float(damping)
    if not 0.0 < step <= 1.0:
        raise ValueError(f"damping must be in (0, 1]; got {damping!r}.")
    converged = False
    n_skipped = 0
    it = 0
    prev_dir = None
    prior = GaussianPrior(P, alpha, route)
    post = LatentPosterior(P, alpha, tau, nu, route, prior)
    if post.route == "empty":
        mc = np.zeros(n)
        vc = np.zeros(n)
        return EPState(tau * 0, nu * 0, post, mc, vc, _log_evidence(post, tau * 0, nu * 0, mc, vc),
                       0, True)
    for it in range(1, max_iter + 1):
        mc, vc, ok = _cavity(post, tau, nu)
        _, mhat, tau_new, vhat = tilted_moments(mc[ok], vc[ok])
        nu_new = mhat / vhat - mc[ok] / vc[ok]
        d_tau = tau_new - tau[ok]
        d_nu = nu_new - nu[ok]
        r_tau = d_tau / (1.0 + np.abs(tau_new))
        r_nu = d_nu / (1.0 + np.abs(nu_new))
        change = max(float(np.max(np.abs(r_tau), initial=0.0)),
                     float(np.max(np.abs(r_nu), initial=0.0)))
        n_skipped = int(n - ok.sum())
        # Step control: parallel EP can fall into a period-2 oscillation. When two successive
        # (relative) updates point in opposite directions the step shrinks; when they agree it grows
        # back towards ``damping``. This changes the path to the fixed point, not the fixed point.
        direction = np.zeros(2 * n)
        direction[:n][ok] = r_tau
        direction[n:][ok] = r_nu
        if prev_dir is not None:
            nrm = np.linalg.norm(direction) * np.linalg.norm(prev_dir)
            cos = float(direction @ prev_dir) / nrm if nrm > 0 else 0.0
            if cos < -0.3:
                step = max(0.5 * step, 0.05)
            elif cos > 0.3:
                step = min(1.5 * step, damping)
        prev_dir = direction
        tau[ok] += step * d_tau
        nu[ok] += step * d_nu
        post = LatentPosterior(P, alpha, tau, nu, route, prior)
        if change < tol:
            converged = True
            break
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


# --------------------------------------------------------------------------------------------------
# Public function
# --------------------------------------------------------------------------------------------------
def signed_labels(y, n_samples):
    """Encode labels as -1/+1 (the second of the sorted classes is +1); returns ``(classes, t)``."""
    classes, idx = check_binary_labels(y, n_samples)
    if classes.size != 2:
        raise DataError(f"ep_probit needs two classes; y has {classes.size}: {list(classes)!r}.")
    return classes, np.where(idx == 1, 1.0, -1.0)


@dataclass
class EPResult:
    """Result of :func:`ep_probit`.

    Attributes
    ----------
    active : ndarray of int, shape (d,)
        Columns of X in the model (finite alpha), in increasing order.
    mean : ndarray of shape (d,)
        Posterior mean of the active weights.
    cov : ndarray of shape (d, d)
        Posterior covariance of the active weights (computed on first access).
    log_evidence : float
        EP approximation of ``log p(y | X, alpha)``.
    cavity_mean, cavity_var : ndarray of shape (n_samples,)
        Leave-one-out (cavity) moments of the signed latent ``y_i x_i . w``.
    loo_error : float
        Eq. 12, the fraction of samples misclassified by their cavity mean.
    loo_prob_error : float
        Eq. 13 with pre-scale ``loo_prob_scale``.
    site_precision, site_nu : ndarray of shape (n_samples,)
        Converged site parameters ``tau = 1/v_i`` and ``nu = m_i/v_i``.
    n_sweeps : int
        Parallel EP sweeps run.
    converged : bool
        Whether the sites converged within ``tol``.
    classes : ndarray of shape (2,)
        The two classes; the second is the positive one (``y = +1``).
    """

    active: np.ndarray
    mean: np.ndarray
    log_evidence: float
    cavity_mean: np.ndarray
    cavity_var: np.ndarray
    loo_error: float
    loo_prob_error: float
    site_precision: np.ndarray
    site_nu: np.ndarray
    n_sweeps: int
    converged: bool
    classes: np.ndarray
    _post: LatentPosterior = field(repr=False, default=None)

    @property
    def cov(self) -> np.ndarray:
        return self._post.cov()

    def predict_latent(self, X):
        """Mean and variance of ``x . w`` for new rows (all columns of the original X)."""
        X = check_design(X, estimator_name="ep_probit")
        Xa = X[:, self.active]
        Xa = Xa.toarray() if hasattr(Xa, "toarray") else np.asarray(Xa)
        return self._post.latent(Xa)

    def predict_proba(self, X):
        """``P(y = classes[1] | x)``, integrating over the Gaussian posterior: ``Phi(m / sqrt(1 + v))``."""
        m, v = self.predict_latent(X)
        return np.exp(log_Phi(m / np.sqrt(1.0 + v)))


def ep_probit(X, y, alpha, *, loo_prob_scale=50.0, damping=1.0, tol=1e-8, max_iter=500,
              route=None) -> EPResult:
    """Fit the probit model with ARD prior ``w_j ~ N(0, 1/alpha_j)`` by Expectation Propagation.

    Parameters
    ----------
    X : {array-like, sparse matrix} of shape (n_samples, n_features)
        Basis matrix. Add a column of ones yourself for a bias. Computations run in float64.
    y : array-like of shape (n_samples,)
        Two classes: {0, 1}, {-1, +1}, booleans or two strings. The second sorted class is ``+1``.
    alpha : array-like of shape (n_features,)
        Prior precisions; ``np.inf`` excludes a feature from the model.
    loo_prob_scale : float, default=50.0
        Pre-scale of ``z_i`` in the LOO error probability (eq. 13; the paper's value, "tuned by
        simulations").
    damping : float, default=1.0
        Largest fraction of the full EP step taken at each parallel sweep; the step shrinks by itself
        when sweeps oscillate.
    tol : float, default=1e-8
        Convergence tolerance on the relative change of the site parameters.
    max_iter : int, default=500
        Maximum number of parallel sweeps.
    route : {None, "weight", "sample"}, default=None
        Where to do the posterior algebra; by default weight space if ``d <= n``, else sample space.

    Returns
    -------
    EPResult

    Examples
    --------
    >>> import numpy as np
    >>> from ardselect import ep_probit
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(40, 3))
    >>> y = (X[:, 0] + 0.3 * rng.normal(size=40) > 0).astype(int)
    >>> res = ep_probit(X, y, alpha=[1.0, 1.0, np.inf])
    >>> res.active.tolist(), res.converged
    ([0, 1], True)
    >>> bool(res.mean[0] > 1.0)
    True
    """
    X = check_design(X, estimator_name="ep_probit")
    alpha = np.asarray(alpha, dtype=np.float64).ravel()
    if alpha.shape[0] != X.shape[1]:
        raise DataError(f"alpha has {alpha.shape[0]} entries but X has {X.shape[1]} columns.")
    if np.any(np.isnan(alpha)) or np.any(alpha <= 0):
        raise DataError("alpha must be positive (np.inf to exclude a feature); got NaN or <= 0.")
    classes, t = signed_labels(y, X.shape[0])
    active = np.flatnonzero(np.isfinite(alpha))
    Xa = X[:, active]
    Xa = Xa.toarray() if hasattr(Xa, "toarray") else np.asarray(Xa)
    P = t[:, None] * Xa
    st = run_ep(P, alpha[active], damping=damping, tol=tol, max_iter=max_iter, route=route)
    if not st.converged:
        import warnings

        from sklearn.exceptions import ConvergenceWarning

        warnings.warn(
            f"EP did not converge in {max_iter} sweeps; increase max_iter or lower damping.",
            ConvergenceWarning,
            stacklevel=2,
        )
    return EPResult(
        active=active,
        mean=st.post.mean,
        log_evidence=st.log_evidence,
        cavity_mean=st.cavity_mean,
        cavity_var=st.cavity_var,
        loo_error=loo_error(st.cavity_mean),
        loo_prob_error=loo_prob_error(st.cavity_mean, st.cavity_var, loo_prob_scale),
        site_precision=st.tau,
        site_nu=st.nu,
        n_sweeps=st.n_iter,
        converged=st.converged,
        classes=classes,
        _post=st.post,
    )
