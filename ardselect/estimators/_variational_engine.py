"""The variational RVM's engine: coordinate ascent on the lower bound, arrays in and arrays out.

The closed-form pieces of the bound (Gamma entropies and expectations, the Jaakkola-Jordan bound
of the logistic likelihood) and :func:`_fit_variational`, the loop of exact updates of
``q(w)``, ``q(alpha)``, the noise or the variational parameters ``xi``, with pruning. The
estimators of :mod:`ardselect.estimators._variational` prepare the basis and read the state it returns.
"""

from __future__ import annotations

import logging

import numpy as np
from scipy.special import digamma, gammaln

from ..exceptions import DataError
from ..numerics._linalg import chol_logdet, chol_solve, safe_cholesky, tri_solve

logger = logging.getLogger("ardselect")

#: Pruning starts once the relative change of the bound per iteration is below this. Early on every
#: <alpha_m> moves a lot (the first update sets all of them from the initial prior), and a function
#: frozen then would keep a sizeable weight; by then the relevant / irrelevant split is settled.
_PRUNE_START = 1e-6

_LOG_2PI = float(np.log(2.0 * np.pi))

#: Below this |xi|, lambda(xi) = tanh(xi/2) / (4 xi) is computed from its series 1/8 - xi^2/96:
#: the closed form is 0/0 at xi = 0 and loses relative accuracy near it.
_XI_SERIES = 1e-4

#: Up to this many basis functions the matrices are small and BLAS threads only add overhead (and
#: contend for cores), so the iterations run on one thread.
_SINGLE_THREAD_MAX_BASIS = 1000

#: A decrease of the bound larger than this (relative to |L|) is reported in the log: the updates
#: are exact maximisations, so only rounding can lower the bound.
_BOUND_ROUNDING = 1e-9


# --------------------------------------------------------------------------------------------------
# Closed-form pieces of the bound
# --------------------------------------------------------------------------------------------------


def jj_lambda(xi):
    """``lambda(xi) = tanh(xi/2) / (4 xi)`` of the Jaakkola-Jordan bound (eq. 50), even in xi."""
    xi = np.abs(np.asarray(xi, dtype=np.float64))
    small = xi < _XI_SERIES
    safe = np.where(small, 1.0, xi)
    return np.where(small, 0.125 - xi**2 / 96.0, np.tanh(safe / 2.0) / (4.0 * safe))


def log_sigmoid(x):
    """``ln sigma(x) = -ln(1 + exp(-x))``, computed in log space for any x."""
    return -np.logaddexp(0.0, -np.asarray(x, dtype=np.float64))


def jj_log_bound(z, xi):
    """Log of the Jaakkola-Jordan lower bound on ``sigma(z)`` (eq. 50); equal at ``|z| = |xi|``."""
    z = np.asarray(z, dtype=np.float64)
    xi = np.asarray(xi, dtype=np.float64)
    return log_sigmoid(xi) + (z - xi) / 2.0 - jj_lambda(xi) * (z**2 - xi**2)


def gamma_expected_log_pdf(shape, rate, mean, log_mean):
    """``<ln Gamma(x | shape, rate)>`` under Q, given ``<x> = mean`` and ``<ln x> = log_mean``."""
    return shape * np.log(rate) + (shape - 1.0) * log_mean - rate * mean - gammaln(shape)


def gamma_entropy(shape, rate):
    """Entropy ``-<ln Gamma(x | shape, rate)>`` of a Gamma density (eq. 64)."""
    return shape - np.log(rate) + gammaln(shape) + (1.0 - shape) * digamma(shape)


# --------------------------------------------------------------------------------------------------
# The coordinate-ascent engine (arrays in, arrays out)
# --------------------------------------------------------------------------------------------------


class _VariationalState:
    """The factors of Q and the moments the updates need.

    ``Q(w)``: the active weights ``w_A ~ N(mu_v, Lam^-1)`` (``L`` is the lower Cholesky factor of
    ``Lam``); the pruned weights ``w_P = B w_A + e0 + e`` with ``e ~ N(0, G G^T)`` independent of
    ``w_A``. ``Phi_eff = Phi_A + Phi_P B`` and ``o = Phi_P e0`` give ``Phi w = Phi_eff w_A + o +
    Phi_P e``.
    """

    def __init__(self, Phi, t, *, likelihood, a, b, c, d, prune_threshold):
        self.Phi = Phi  # (N, M)
        self.t = t  # (N,)
        self.likelihood = likelihood
        self.a, self.b, self.c, self.d = float(a), float(b), float(c), float(d)
        self.prune_threshold = float(prune_threshold)
        N, M = Phi.shape
        self.N, self.M = N, M
        self.act = np.arange(M)
        self.prn = np.zeros(0, dtype=np.intp)
        self.B = np.zeros((0, M))  # (p, k)
        self.e0 = np.zeros(0)  # (p,)
        self.G = np.zeros((0, 0))  # (p, p): factor of Cov(e)
        self.Phi_eff = Phi  # (N, k)
        self.o = np.zeros(N)  # (N,)
        self.q = np.zeros(N)  # (N,): phi_n^T Cov(e) phi_n
        self.rdiag = np.zeros(0)  # (p,): diag Cov(e)
        self.h_pruned = 0.0  # entropy of the pruned conditionals

        # Initial Q(alpha), Q(tau), xi; only their moments enter the first Q(w) update.
        # Eq. 25 / 57: a~ is the same for every m and never changes.
        self.a_t = self.a + 0.5
        # mean_n ||phi_n||^2, floored so that an all-zero design still gives a finite alpha0
        row_power = max(float(np.mean(np.sum(Phi**2, axis=1))), 1e-12)
        if likelihood == "gaussian":
            var_t = float(np.var(t)) if N > 1 else 0.0
            var_t = var_t if var_t > 0 else max(float(np.mean(t**2)), 1.0)
            # Start with a prior on Phi w whose variance is that of t, and a noise of 10% of its
            # standard deviation (the SparseBayes convention).
            alpha0 = row_power / var_t
            self.c_t = self.c + N / 2.0  # eq. 26 with N, see the module notes
            self.d_t = self.c_t * (0.1**2) * var_t
        else:
            alpha0 = row_power  # prior variance of phi_n^T w of one, on the logit scale
            self.c_t = self.d_t = np.nan
            self.s = 2.0 * t - 1.0  # (N,): 2 t_n - 1
        self.b_t = np.full(M, self.a_t / alpha0)
        if likelihood == "bernoulli":
            # xi from the initial prior: xi_n^2 = phi_n^T <w w^T> phi_n with w ~ N(0, 1/alpha0)
            self.xi = np.sqrt(np.sum(Phi**2, axis=1) / alpha0)

    # --- moments --------------------------------------------------------------------------------

    @property
    def alpha_mean(self):
        return self.a_t / self.b_t  # eq. 30

    @property
    def alpha_log_mean(self):
        return digamma(self.a_t) - np.log(self.b_t)  # eq. 31

    @property
    def tau_mean(self):
        return self.c_t / self.d_t  # eq. 32

    @property
    def tau_log_mean(self):
        return digamma(self.c_t) - np.log(self.d_t)  # eq. 33

    def _refresh_moments(self):
        """Moments of Q(w) from ``mu_v``, ``L`` and the pruned representation."""
        L = self.L
        k = L.shape[0]
        LinvT = tri_solve(L, np.eye(k))  # (k, k): L^-1, so Sigma_v = L^-T L^-1
        var_v = np.sum(LinvT**2, axis=0)  # (k,): diag Sigma_v
        self.logdet_sigma = -chol_logdet(L)
        mean_w = np.empty(self.M)
        var_w = np.empty(self.M)
        mean_w[self.act] = self.mu_v
        var_w[self.act] = var_v
        if self.prn.size:
            V = tri_solve(L, self.B.T)  # (k, p)
            mean_w[self.prn] = self.B @ self.mu_v + self.e0
            var_w[self.prn] = np.sum(V**2, axis=0) + self.rdiag
        self.mean_w = mean_w  # (M,): <w>, eq. 28
        self.var_w = var_w  # (M,): diag Sigma_w
        self.w2 = var_w + mean_w**2  # (M,): <w_m^2>, eq. 29
        W = tri_solve(L, self.Phi_eff.T)  # (k, N)
        self.f_mean = self.Phi_eff @ self.mu_v + self.o  # (N,): phi_n^T <w>
        self.f_var = np.sum(W**2, axis=0) + self.q  # (N,): phi_n^T Sigma_w phi_n

    # --- updates: each is the exact maximiser of the bound over its factor ------------------------

    def update_w(self):
        """Q(w): eqs. 23-24 (regression) or 54-55 (classification), over the active weights."""
        alpha = self.alpha_mean
        if self.likelihood == "gaussian":
            tau = self.tau_mean
            omega = np.full(self.N, tau)  # (N,)
            g = tau * (self.t - self.o)  # (N,)
        else:
            lam = jj_lambda(self.xi)
            omega = 2.0 * lam
            g = self.s / 2.0 - 2.0 * lam * self.o
        Pe = self.Phi_eff
        Lam = Pe.T @ (omega[:, None] * Pe)  # (k, k)
        Lam[np.diag_indices_from(Lam)] += alpha[self.act]
        h = Pe.T @ g  # (k,)
        if self.prn.size:
            alpha_p = alpha[self.prn]
            Lam += self.B.T @ (alpha_p[:, None] * self.B)
            h -= self.B.T @ (alpha_p * self.e0)
        self.Lam = Lam
        self.L = safe_cholesky(Lam)
        self.mu_v = chol_solve(self.L, h)
        self._refresh_moments()

    def update_alpha(self):
        """Q(alpha): eq. 25 / 57, for every basis function (pruned ones too)."""
        self.b_t = self.b + self.w2 / 2.0

    def _sq_residual(self):
        # sum_n <(t_n - phi_n^T w)^2>: the bracket of eqs. 27 and 40 in residual form, which avoids
        # the cancellation of sum t^2 - 2 <w>^T Phi^T t + ...
        return float(np.sum((self.t - self.f_mean) ** 2) + np.sum(self.f_var))

    def update_tau(self):
        """Q(tau): eqs. 26-27."""
        self.d_t = self.d + 0.5 * self._sq_residual()

    def update_xi(self):
        """xi: eq. 58."""
        self.xi = np.sqrt(self.f_mean**2 + self.f_var)

    # --- bound ------------------------------------------------------------------------------------

    def bound_terms(self) -> dict:
        """The terms of the lower bound: eqs. 39-46 (regression) or 59-64 (classification)."""
        alpha, log_alpha = self.alpha_mean, self.alpha_log_mean
        terms = {}
        if self.likelihood == "gaussian":
            tau, log_tau = self.tau_mean, self.tau_log_mean
            terms["lik"] = (  # eq. 40
                0.5 * self.N * (log_tau - _LOG_2PI) - 0.5 * tau * self._sq_residual()
            )
            terms["prior_tau"] = float(  # eq. 43
                gamma_expected_log_pdf(self.c, self.d, tau, log_tau)
            )
            terms["entropy_tau"] = float(gamma_entropy(self.c_t, self.d_t))  # eq. 46
        else:
            lam = jj_lambda(self.xi)
            terms["lik"] = float(  # eq. 60
                np.sum(
                    log_sigmoid(self.xi)
                    + 0.5 * self.s * self.f_mean
                    - 0.5 * self.xi
                    - lam * (self.f_mean**2 + self.f_var - self.xi**2)
                )
            )
        terms["prior_w"] = float(  # eq. 41 / 61
            np.sum(-0.5 * _LOG_2PI + 0.5 * log_alpha - 0.5 * alpha * self.w2)
        )
        terms["prior_alpha"] = float(  # eq. 42 / 62
            np.sum(gamma_expected_log_pdf(self.a, self.b, alpha, log_alpha))
        )
        k = self.act.size
        terms["entropy_w"] = (  # eq. 44 / 63: active marginal plus pruned conditionals
            0.5 * k * (1.0 + _LOG_2PI) + 0.5 * self.logdet_sigma + self.h_pruned
        )
        terms["entropy_alpha"] = float(np.sum(gamma_entropy(self.a_t, self.b_t)))  # eq. 45 / 64
        return terms

    def bound(self) -> float:
        return float(sum(self.bound_terms().values()))

    # --- pruning ----------------------------------------------------------------------------------

    def prune(self) -> int:
        """Move active weights with ``<alpha_m> > prune_threshold`` to the pruned block.

        Q is unchanged: the current ``N(mu_v, Lam^-1)`` is factored into the marginal of the kept
        weights times the conditional of the dropped ones. Returns how many were pruned.
        """
        sel = self.alpha_mean[self.act] > self.prune_threshold
        if not sel.any():
            return 0
        if sel.all():  # keep the least irrelevant function so that the active block is never empty
            sel[np.argmin(self.alpha_mean[self.act])] = False
            if not sel.any():
                return 0
        keep = ~sel
        n_drop = int(sel.sum())
        Lam = self.Lam
        Lc = safe_cholesky(Lam[np.ix_(sel, sel)])  # (d, d)
        Lam_da = Lam[np.ix_(sel, keep)]  # (d, k')
        B_new = -chol_solve(Lc, Lam_da)  # (d, k'): E[w_d | w_k] = mu_d + B_new (w_k - mu_k)
        c_new = self.mu_v[sel] - B_new @ self.mu_v[keep]  # (d,)
        F = tri_solve(Lc, np.eye(n_drop)).T  # (d, d): F F^T = Lam_dd^-1, the conditional covariance
        self.h_pruned += 0.5 * n_drop * (1.0 + _LOG_2PI) - 0.5 * chol_logdet(Lc)

        B_keep, B_drop = self.B[:, keep], self.B[:, sel]  # (p, k'), (p, d)
        p = self.prn.size
        self.B = np.vstack([B_keep + B_drop @ B_new, B_new])
        self.e0 = np.concatenate([self.e0 + B_drop @ c_new, c_new])
        G = np.zeros((p + n_drop, self.G.shape[1] + n_drop))
        G[:p, : self.G.shape[1]] = self.G
        G[:p, self.G.shape[1] :] = B_drop @ F
        G[p:, self.G.shape[1] :] = F
        self.G = G
        self.prn = np.concatenate([self.prn, self.act[sel]])
        self.act = self.act[keep]

        Phi_p = self.Phi[:, self.prn]  # (N, p)
        self.Phi_eff = self.Phi[:, self.act] + Phi_p @ self.B
        self.o = Phi_p @ self.e0
        self.q = np.sum((Phi_p @ self.G) ** 2, axis=1)
        self.rdiag = np.sum(self.G**2, axis=1)
        # Marginal of the kept weights: same mean, precision = Schur complement of the dropped
        # block.
        self.Lam = Lam[np.ix_(keep, keep)] + Lam[np.ix_(keep, sel)] @ B_new
        self.mu_v = self.mu_v[keep]
        self.L = safe_cholesky(self.Lam)
        self._refresh_moments()
        return n_drop

    # --- results ----------------------------------------------------------------------------------

    def predictive_var(self, Phi_new):
        """``phi(x)^T Sigma_w phi(x)`` for the rows of ``Phi_new`` (N', M)."""
        Pe = Phi_new[:, self.act]
        out = np.zeros(Phi_new.shape[0])
        if self.prn.size:
            Pp = Phi_new[:, self.prn]
            Pe = Pe + Pp @ self.B
            out += np.sum((Pp @ self.G) ** 2, axis=1)
        W = tri_solve(self.L, Pe.T)
        return out + np.sum(W**2, axis=0)


def _fit_variational(
    Phi,
    t,
    *,
    likelihood,
    a,
    b,
    c=1e-6,
    d=1e-6,
    max_iter=1000,
    tol=1e-6,
    prune_threshold=np.inf,
    trace=None,
):
    """Run coordinate ascent on the variational RVM bound.

    Parameters
    ----------
    Phi : ndarray of shape (n_samples, n_basis)
        Design matrix, float64.
    t : ndarray of shape (n_samples,)
        Targets (regression) or labels in {0, 1} (classification).
    likelihood : {"gaussian", "bernoulli"}
    a, b, c, d : float
        Gamma hyperprior parameters (shape, rate) of alpha and of the noise precision.
    max_iter, tol : int, float
        Stop when ``|L_k - L_{k-1}| <= tol * |L_k|`` or after ``max_iter`` iterations.
    prune_threshold : float
        Active basis functions whose ``<alpha>`` exceeds it are moved to the frozen block.
    trace : list or None
        If a list, ``(update_name, bound)`` is appended after every factor update and pruning step.

    Returns
    -------
    state : _VariationalState
    bounds : list of float
        The bound after each iteration.
    converged : bool
    """
    if Phi.shape[1] > _SINGLE_THREAD_MAX_BASIS:
        return _iterate(Phi, t, likelihood, a, b, c, d, max_iter, tol, prune_threshold, trace)
    from threadpoolctl import threadpool_limits  # a scikit-learn dependency

    with threadpool_limits(limits=1, user_api="blas"):
        return _iterate(Phi, t, likelihood, a, b, c, d, max_iter, tol, prune_threshold, trace)


def _iterate(Phi, t, likelihood, a, b, c, d, max_iter, tol, prune_threshold, trace):
    state = _VariationalState(
        Phi, t, likelihood=likelihood, a=a, b=b, c=c, d=d, prune_threshold=prune_threshold
    )
    third = state.update_tau if likelihood == "gaussian" else state.update_xi
    updates = (("w", state.update_w), ("alpha", state.update_alpha), (third.__name__[7:], third))
    bounds = []
    converged = False
    for _ in range(max_iter):
        for name, update in updates:
            update()
            if trace is not None:
                trace.append((name, state.bound()))
        bound = state.bound()
        if not np.isfinite(bound):
            msg = (
                f"the variational lower bound became {bound} at iteration {len(bounds) + 1}; "
                "check the scale of X and y (standardise them)."
            )
            raise DataError(msg)
        if bounds and bound < bounds[-1] - _BOUND_ROUNDING * abs(bound):
            logger.warning(
                "variational bound decreased by %.3g at iteration %d",
                bounds[-1] - bound,
                len(bounds) + 1,
            )
        bounds.append(bound)
        rel = abs(bounds[-1] - bounds[-2]) / abs(bounds[-1]) if len(bounds) > 1 else np.inf
        if rel <= _PRUNE_START:
            n_pruned = state.prune()
            if n_pruned:
                logger.debug("iteration %d: pruned %d basis functions", len(bounds), n_pruned)
                if trace is not None:
                    trace.append(("prune", state.bound()))
        if rel <= tol:
            converged = True
            break
    return state, bounds, converged
