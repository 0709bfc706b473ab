"""Variational Relevance Vector Machines (Bishop & Tipping, 2000).

A sparse linear model over basis functions (a bias and one kernel function per training point),
``y(x) = sum_m w_m phi_m(x)``, with the hierarchical prior ``w_m ~ N(0, 1/alpha_m)``, ``alpha_m ~
Gamma(a, b)`` and, for regression, a noise precision ``tau ~ Gamma(c, d)``. The posterior is
approximated by the factorised ``Q(w) Q(alpha) Q(tau)`` that maximises the lower bound ``L`` on the
log evidence, by cycling through the free-form updates of each factor. For classification the
logistic likelihood is replaced by the Jaakkola-Jordan bound with one variational parameter ``xi_n``
per sample.

Notation (paper symbol -> code name, equation of Bishop & Tipping 2000):

=================================  ===================  ==================================
paper                              code                 equations
=================================  ===================  ==================================
design matrix Phi (N x M)          ``Phi``              (1), (7)
targets t_n                        ``t``                (2), (8)
mu_w, Sigma_w  /  m, S             ``mean_w``, ``L``    (20, 23, 24) / (53-55)
a~_m, b~_m                         ``a_t``, ``b_t``     (22, 25) / (56, 57)
<alpha_m>, <ln alpha_m>            ``alpha_mean``, ...  (30, 31)
c~, d~                             ``c_t``, ``d_t``     (21, 26, 27)
<tau>, <ln tau>                    ``tau_mean``, ...    (32, 33)
xi_n, lambda(xi_n)                 ``xi``, ``lam``      (50, 54, 58)
phi_n^T <w>                        ``f_mean``           (24), (55)
phi_n^T Sigma_w phi_n              ``f_var``            (38), (58)
lower bound L                      ``bound()``          (39-46) / (59-64)
=================================  ===================  ==================================

Deviations from the printed paper, each derived from its own model and checked by the tests:

* eq. 26 prints ``c~ = c + (N + 1)/2``; the likelihood has N factors ``tau^(1/2)``, so ``c~ = c +
  N/2``.
* eq. 41 prints ``-1/2 sum <ln alpha_m>``; the Gaussian prior gives ``+1/2`` (as eq. 61 has it).
* eqs. 45-46 print ``<ln Q>`` under the name ``-<ln Q>``; the entropies used are those of eq. 64.
* eq. 23 writes ``diag(alpha_m)``: it is ``diag(<alpha_m>)``.

Pruning. Irrelevant basis functions have ``<alpha_m>`` that grows for hundreds of iterations;
removing them makes each iteration cheaper. Setting ``w_m = 0`` would change the model and the
bound, so pruning is done *without changing Q*: the joint Gaussian ``Q(w)`` is written as the
marginal of the active weights times the exact conditional of the pruned weights given the active
ones, ``w_P = B w_A + c + e`` with ``e ~ N(0, C)``. That is the same distribution, so the bound is
unchanged at the moment of pruning. From then on ``B``, ``c`` and ``C`` are held fixed, which
restricts the family over which ``Q(w)`` is optimised (only ``Q(w_A)`` is free), and each update is
still the exact optimum over its factor inside that family: the recorded bound is the bound of the
full model (every basis function, its ``alpha`` included) and can never decrease, pruning or not.
The pruned weights keep their (tiny) posterior means, which predictions use; ``Q(alpha_m)`` of
pruned functions goes on being updated.
"""

from __future__ import annotations

import logging
import warnings
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from scipy.special import digamma, expit, gammaln
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, is_regressor
from sklearn.exceptions import ConvergenceWarning, DataConversionWarning
from sklearn.utils.validation import check_is_fitted, validate_data

from ._base import basis_constraints
from ._basis import design_matrix, make_basis
from ._constraints import Interval, SklearnConstraints, check_params
from ._linalg import chol_logdet, chol_solve, safe_cholesky, tri_solve
from ._validation import check_binary_labels, check_design
from .exceptions import DataError, LabelError

__all__ = ["VariationalRVMClassifier", "VariationalRVMRegressor"]

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


# --------------------------------------------------------------------------------------------------
# Estimators
# --------------------------------------------------------------------------------------------------

_SVC_KERNELS = ("linear", "rbf", "poly")


class _VariationalRVMBase(BaseEstimator):
    """Fitting and prediction shared by the two estimators (not public)."""

    _likelihood = "gaussian"

    #: Constraints shared by the two estimators; each adds its own.
    _shared_constraints: dict = {
        **basis_constraints(_SVC_KERNELS),
        "alpha_shape": [Interval(Real, 0, None, closed="neither")],
        "alpha_rate": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "prune_threshold": [Interval(Real, 0, np.inf, closed="right")],  # inf: no pruning
    }

    def _validate_x(self, X, *, reset):
        Xc = check_design(X, estimator_name=type(self).__name__)
        validate_data(self, X, reset=reset, skip_check_array=True)
        return Xc

    def _design(self, X):
        """Dense basis matrix, the intercept's column of ones last (as in the whole family)."""
        K = design_matrix(self.basis_, X, fit_intercept=self.fit_intercept)
        return np.asarray(K.toarray() if sp.issparse(K) else K, dtype=np.float64)

    def _fit_design(self, X, t, c, d):
        self.basis_ = make_basis(
            self.kernel, gamma=self.gamma, degree=self.degree, coef0=self.coef0
        )
        self.basis_.fit(X)
        Phi = self._design(X)
        if not np.all(np.isfinite(Phi)):
            msg = (
                "the kernel produced NaN or infinite values on the training data; check the kernel "
                "and its parameters."
            )
            raise DataError(msg)
        state, bounds, converged = _fit_variational(
            Phi,
            t,
            likelihood=self._likelihood,
            a=self.alpha_shape,
            b=self.alpha_rate,
            c=c,
            d=d,
            max_iter=self.max_iter,
            tol=self.tol,
            prune_threshold=self.prune_threshold,
        )
        if not converged:
            change = abs(bounds[-1] - bounds[-2]) / abs(bounds[-1]) if len(bounds) > 1 else np.nan
            warnings.warn(
                f"{type(self).__name__} did not converge in max_iter={self.max_iter} iterations "
                f"(last relative change of the bound {change:.3g} > tol={self.tol}); increase "
                "max_iter or tol.",
                ConvergenceWarning,
                stacklevel=3,
            )
        # Keep what prediction needs; drop the training design matrix.
        state.Phi = state.Phi_eff = None
        self._state = state
        n_basis = state.M - int(self.fit_intercept)  # the intercept is the last column
        sd = np.sqrt(state.var_w)
        alpha = state.alpha_mean
        coef, coef_sd, coef_alpha = (v[:n_basis].copy() for v in (state.mean_w, sd, alpha))
        if self.fit_intercept:
            icpt = (float(state.mean_w[-1]), float(sd[-1]), float(alpha[-1]))
        else:
            icpt = (0.0, 0.0, np.inf)  # a weight fixed at 0: precision inf, as in the family
        if is_regressor(self):
            self.coef_, self.coef_sd_, self.alpha_ = coef, coef_sd, coef_alpha
            self.intercept_, self.intercept_sd_, self.intercept_alpha_ = icpt
        else:  # one binary problem: one row, as every classifier of the family
            self.coef_, self.coef_sd_, self.alpha_ = coef[None], coef_sd[None], coef_alpha[None]
            self.intercept_, self.intercept_sd_, self.intercept_alpha_ = (
                np.array([v]) for v in icpt)
        relevant = np.zeros(state.M, dtype=bool)
        relevant[state.act] = True
        relevant &= alpha <= self.prune_threshold
        self.relevance_vectors_ = np.flatnonzero(relevant[:n_basis])
        self.lower_bound_ = list(bounds)
        self.n_iter_ = len(bounds)
        self.converged_ = bool(converged)
        return state

    def _latent(self, X):
        """Mean and variance of ``y(x) = w^T phi(x)`` under Q(w)."""
        check_is_fitted(self)
        Xc = self._validate_x(X, reset=False)
        Phi = self._design(Xc)
        mean = Phi @ self._state.mean_w
        return mean, Phi

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


class VariationalRVMRegressor(RegressorMixin, _VariationalRVMBase):
    """Relevance vector regression by variational inference (Bishop & Tipping, 2000).

    ``t = w^T phi(x) + noise``, with one kernel function per training point and a bias as basis,
    ``w_m ~ N(0, 1/alpha_m)``, ``alpha_m ~ Gamma(a, b)`` and noise precision ``tau ~ Gamma(c, d)``
    (the paper's names; the parameters are ``alpha_shape``, ``alpha_rate``, ``noise_shape`` and
    ``noise_rate``).
    The factorised posterior ``Q(w) Q(alpha) Q(tau)`` maximises a lower bound on the log evidence.
    Computations run in float64 whatever the input dtype.

    Parameters
    ----------
    kernel : {"rbf", "linear", "poly"} or callable, default="rbf"
        Kernel of the basis functions, as in :class:`sklearn.svm.SVC`. A width ``r`` as in the
        papers (``exp(-|x - x'|^2 / r^2)``) is ``gamma = 1 / r**2``.
    gamma : float or {"scale", "auto"}, default="scale"
        Kernel coefficient of "rbf" and "poly".
    degree : int, default=3
        Degree of "poly".
    coef0 : float, default=1.0
        Constant of "poly".
    fit_intercept : bool, default=True
        Add a bias basis function (a column of ones) with its own ``alpha``.
    alpha_shape, alpha_rate : float, default=1e-6
        Shape ``a`` and rate ``b`` of the Gamma hyperprior on each weight precision ``alpha_m``
        (eq. 18).
    noise_shape, noise_rate : float, default=1e-6
        Shape ``c`` and rate ``d`` of the Gamma hyperprior on the noise precision ``tau``.
    max_iter : int, default=2000
        Maximum number of sweeps over the factors ``Q(w)``, ``Q(alpha)``, ``Q(tau)``.
    tol : float, default=1e-9
        Stop when the relative change of the lower bound between sweeps is at most ``tol``.
    prune_threshold : float, default=100.0
        A basis function whose posterior mean precision ``<alpha_m>`` exceeds this value is
        irrelevant: it is not a relevance vector, and it is pruned from the iterations for speed
        (see Notes). It is in units of 1/y**2: the default suits targets of order one, as do the
        default hyperpriors; rescale ``y`` or change it for other scales.

    Attributes
    ----------
    coef_ : ndarray of shape (n_train,)
        Posterior mean of the weight of each kernel function (one per training point).
    coef_sd_ : ndarray of shape (n_train,)
        Posterior standard deviation of those weights.
    alpha_ : ndarray of shape (n_train,)
        Posterior mean ``<alpha_m>`` of their precisions.
    intercept_, intercept_sd_, intercept_alpha_ : float
        The same for the bias (0.0, 0.0 and ``inf`` without ``fit_intercept``).
    noise_variance_ : float
        ``1 / <tau>``, the noise variance the predictions use (``<tau>`` is the posterior mean of
        the noise precision); the noise standard deviation estimate is ``noise_variance_ ** 0.5``.
    relevance_vectors_ : ndarray of int
        Indices of the training points whose kernel functions are relevant
        (``alpha_ <= prune_threshold``).
    lower_bound_ : list of float
        The variational lower bound after every iteration (non-decreasing).
    n_iter_ : int
        Number of iterations run.
    converged_ : bool
        Whether ``tol`` was reached before ``max_iter``.
    basis_ : object
        The fitted kernel basis.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Names of features seen during fit, when ``X`` has feature names that are all strings.

    See Also
    --------
    VariationalRVMClassifier : the classification version.
    sklearn.linear_model.ARDRegression : type-II maximum-likelihood ARD on the input features.

    Notes
    -----
    Each iteration updates ``Q(w)`` (Gaussian, eqs. 23-24), ``Q(alpha)`` (Gammas, eq. 25) and
    ``Q(tau)`` (Gamma, eqs. 26-27, with ``c~ = c + N/2``; the paper's ``(N+1)/2`` is a misprint) and
    then evaluates the bound (eqs. 39-46). Each update maximises the bound over its factor, so the
    bound never decreases. Predictions use eqs. 37-38, with ``tau`` replaced by its posterior mean.

    Pruning: once the bound changes by less than 1e-6 (relative) per iteration, active basis
    functions with ``<alpha_m> > prune_threshold`` are taken out of the Gaussian update. The joint
    ``Q(w)`` is rewritten as the marginal of the remaining weights times the exact conditional of
    the pruned ones, which is held fixed afterwards: ``Q`` and the bound are unchanged at the moment
    of pruning, the bound is that of the full model (every basis function counted), and later
    updates, exact within the restricted family, still cannot decrease it.

    References
    ----------
    C. M. Bishop and M. E. Tipping (2000). Variational relevance vector machines. *Proceedings of
    the 16th Conference on Uncertainty in Artificial Intelligence*, 46-53.

    Examples
    --------
    >>> import numpy as np
    >>> from ardselect import VariationalRVMRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-10, 10, size=(40, 1))
    >>> y = np.sinc(X[:, 0] / np.pi) + 0.1 * rng.standard_normal(40)
    >>> model = VariationalRVMRegressor(gamma=1 / 3.0**2).fit(X, y)
    >>> len(model.relevance_vectors_) < 15
    True
    >>> mean, std = model.predict(X[:3], return_std=True)
    >>> bool(np.all(std > 0)) and bool(np.all(np.diff(model.lower_bound_) >= -1e-9))
    True
    """

    def __init__(
        self,
        *,
        kernel="rbf",
        gamma="scale",
        degree=3,
        coef0=1.0,
        fit_intercept=True,
        alpha_shape=1e-6,
        alpha_rate=1e-6,
        noise_shape=1e-6,
        noise_rate=1e-6,
        max_iter=2000,
        tol=1e-9,
        prune_threshold=100.0,
    ):
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.fit_intercept = fit_intercept
        self.alpha_shape = alpha_shape
        self.alpha_rate = alpha_rate
        self.noise_shape = noise_shape
        self.noise_rate = noise_rate
        self.max_iter = max_iter
        self.tol = tol
        self.prune_threshold = prune_threshold

    #: The parameter contract, checked by scikit-learn's validation at the start of ``fit``.
    _constraints: dict = {
        **_VariationalRVMBase._shared_constraints,
        "noise_shape": [Interval(Real, 0, None, closed="neither")],
        "noise_rate": [Interval(Real, 0, None, closed="neither")],
    }
    _parameter_constraints = SklearnConstraints()  # for scikit-learn's checks

    def fit(self, X, y):
        """Fit the variational RVM.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training inputs.
        y : array-like of shape (n_samples,)
            Targets.

        Returns
        -------
        self : VariationalRVMRegressor
            The fitted estimator.
        """
        check_params(self)
        Xc = self._validate_x(X, reset=True)
        _require_y(self, y)
        t = _check_target(y, Xc.shape[0])
        state = self._fit_design(Xc, t, self.noise_shape, self.noise_rate)
        self.noise_variance_ = 1.0 / float(state.tau_mean)
        return self

    def predict(self, X, *, return_std=False):
        """Predictive mean (eq. 37) and, optionally, standard deviation (eq. 38).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Inputs.
        return_std : bool, default=False
            Also return the predictive standard deviation ``sqrt(1/<tau> + phi^T Sigma_w phi)``.

        Returns
        -------
        y_mean : ndarray of shape (n_samples,)
        y_std : ndarray of shape (n_samples,)
            Only with ``return_std=True``.
        """
        mean, Phi = self._latent(X)
        if not return_std:
            return mean
        var = self.noise_variance_ + self._state.predictive_var(Phi)  # eq. 38
        return mean, np.sqrt(var)


class VariationalRVMClassifier(ClassifierMixin, _VariationalRVMBase):
    """Binary relevance vector classification by variational inference (Bishop & Tipping, 2000).

    ``P(t = 1 | x) = sigma(w^T phi(x))`` with one kernel function per training point and a bias as
    basis, ``w_m ~ N(0, 1/alpha_m)`` and ``alpha_m ~ Gamma(a, b)`` (``alpha_shape``,
    ``alpha_rate``). The logistic likelihood is
    bounded below by the Jaakkola-Jordan bound, and ``Q(w) Q(alpha)`` and the bound's parameters
    ``xi`` maximise the resulting lower bound on the log evidence. Computations run in float64
    whatever the input dtype.

    Parameters
    ----------
    kernel : {"rbf", "linear", "poly"} or callable, default="rbf"
        Kernel of the basis functions, as in :class:`sklearn.svm.SVC`. A width ``r`` as in the
        papers (``exp(-|x - x'|^2 / r^2)``) is ``gamma = 1 / r**2``.
    gamma : float or {"scale", "auto"}, default="scale"
        Kernel coefficient of "rbf" and "poly".
    degree : int, default=3
        Degree of "poly".
    coef0 : float, default=1.0
        Constant of "poly".
    fit_intercept : bool, default=True
        Add a bias basis function (a column of ones) with its own ``alpha``.
    alpha_shape, alpha_rate : float, default=1e-6
        Shape ``a`` and rate ``b`` of the Gamma hyperprior on each weight precision ``alpha_m``
        (eq. 18).
    max_iter : int, default=2000
        Maximum number of sweeps over ``Q(w)``, ``Q(alpha)`` and ``xi``.
    tol : float, default=1e-9
        Stop when the relative change of the lower bound between sweeps is at most ``tol``.
    prune_threshold : float, default=10.0
        A basis function whose posterior mean precision ``<alpha_m>`` exceeds this value is
        irrelevant: it is not a relevance vector, and it is pruned from the iterations for speed
        (see the Notes of :class:`VariationalRVMRegressor`). The logistic link fixes the latent
        scale: relevant weights are typically several units (``alpha`` well below 1), irrelevant
        ``alpha`` climb to 10-1000.
    moderated : bool, default=False
        If False, ``predict_proba`` plugs the posterior mean weights into the sigmoid (eq. 65, as in
        the paper). If True, it uses MacKay's approximation to the integral over ``Q(w)``,
        ``sigma(mu / sqrt(1 + pi s^2 / 8))``; the decision boundary is the same.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        The class labels; ``classes_[1]`` is the positive class (``t = 1``).
    coef_ : ndarray of shape (1, n_train)
        Posterior mean of the weight of each kernel function (one per training point); one row,
        the binary problem, as every classifier of the family.
    coef_sd_ : ndarray of shape (1, n_train)
        Posterior standard deviation of those weights.
    alpha_ : ndarray of shape (1, n_train)
        Posterior mean ``<alpha_m>`` of their precisions.
    intercept_, intercept_sd_, intercept_alpha_ : ndarray of shape (1,)
        The same for the bias (0, 0 and ``inf`` without ``fit_intercept``).
    relevance_vectors_ : ndarray of int
        Indices of the training points whose kernel functions are relevant
        (``alpha_ <= prune_threshold``).
    xi_ : ndarray of shape (n_train,)
        The Jaakkola-Jordan parameters (eq. 58).
    lower_bound_ : list of float
        The variational lower bound after every iteration (non-decreasing).
    n_iter_ : int
        Number of iterations run.
    converged_ : bool
        Whether ``tol`` was reached before ``max_iter``.
    basis_ : object
        The fitted kernel basis.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Names of features seen during fit, when ``X`` has feature names that are all strings.

    See Also
    --------
    VariationalRVMRegressor : the regression version, whose Notes describe pruning.

    Notes
    -----
    Each iteration updates ``Q(w)`` (eqs. 53-55), ``Q(alpha)`` (eqs. 56-57) and ``xi`` (eq. 58),
    each the exact maximiser of the bound (eqs. 59-64) over its part, so the bound never decreases.

    References
    ----------
    C. M. Bishop and M. E. Tipping (2000). Variational relevance vector machines. *Proceedings of
    the 16th Conference on Uncertainty in Artificial Intelligence*, 46-53.

    T. S. Jaakkola and M. I. Jordan (2000). Bayesian parameter estimation via variational methods.
    *Statistics and Computing* 10, 25-37.

    Examples
    --------
    >>> import numpy as np
    >>> from ardselect import VariationalRVMClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = np.vstack([rng.normal(-1, 0.7, (25, 2)), rng.normal(1, 0.7, (25, 2))])
    >>> y = np.repeat(["a", "b"], 25)
    >>> clf = VariationalRVMClassifier(gamma=0.5).fit(X, y)
    >>> clf.predict([[-1.0, -1.0], [1.0, 1.0]]).tolist()
    ['a', 'b']
    >>> clf.predict_proba([[1.0, 1.0]]).shape
    (1, 2)
    """

    _likelihood = "bernoulli"

    def __init__(
        self,
        *,
        kernel="rbf",
        gamma="scale",
        degree=3,
        coef0=1.0,
        fit_intercept=True,
        alpha_shape=1e-6,
        alpha_rate=1e-6,
        max_iter=2000,
        tol=1e-9,
        prune_threshold=10.0,
        moderated=False,
    ):
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.fit_intercept = fit_intercept
        self.alpha_shape = alpha_shape
        self.alpha_rate = alpha_rate
        self.max_iter = max_iter
        self.tol = tol
        self.prune_threshold = prune_threshold
        self.moderated = moderated

    #: The parameter contract, checked by scikit-learn's validation at the start of ``fit``.
    _constraints: dict = {
        **_VariationalRVMBase._shared_constraints,
        "moderated": ["boolean"],
    }
    _parameter_constraints = SklearnConstraints()  # for scikit-learn's checks

    def fit(self, X, y):
        """Fit the variational RVM classifier.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training inputs.
        y : array-like of shape (n_samples,)
            Two class labels.

        Returns
        -------
        self : VariationalRVMClassifier
            The fitted estimator.
        """
        check_params(self)
        Xc = self._validate_x(X, reset=True)
        if Xc.shape[0] < 2:
            msg = f"{type(self).__name__} needs at least 2 samples (one per class); got 1 sample."
            raise DataError(msg)
        _require_y(self, y)
        y = _column_to_1d(y)
        classes, y_index = check_binary_labels(y, Xc.shape[0])
        if classes.size > 2:
            shown = ", ".join(repr(c) for c in classes[:5]) + (", ..." if classes.size > 5 else "")
            msg = (
                f"Only binary classification is supported. {type(self).__name__} got y with "
                f"{classes.size} classes ({shown}); fit one model per pair of classes or per class "
                "against the rest."
            )
            raise LabelError(msg)
        self.classes_ = classes
        # c, d (the noise prior) do not enter the Bernoulli likelihood.
        state = self._fit_design(Xc, y_index.astype(np.float64), 1e-6, 1e-6)
        self.xi_ = state.xi.copy()
        return self

    def decision_function(self, X):
        """The score :meth:`predict_proba` is the sigmoid of; positive means ``classes_[1]``.

        The posterior mean of the latent function ``w^T phi(x)``, or with ``moderated=True`` its
        moderated version ``mu / sqrt(1 + pi s^2 / 8)``; either way the score ranks samples
        exactly as :meth:`predict_proba` does, and its sign is the same.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Inputs.

        Returns
        -------
        score : ndarray of shape (n_samples,)
        """
        return self._log_proba_pos(X)

    def _log_proba_pos(self, X):
        mean, Phi = self._latent(X)
        if self.moderated:
            # MacKay (1992): sigma(kappa mu), kappa = (1 + pi s^2 / 8)^(-1/2)
            mean = mean / np.sqrt(1.0 + np.pi * self._state.predictive_var(Phi) / 8.0)
        return mean

    def predict_proba(self, X):
        """Class probabilities: ``sigma(<w>^T phi(x))`` (eq. 65), or its moderated version.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Inputs.

        Returns
        -------
        proba : ndarray of shape (n_samples, 2)
            Columns in the order of ``classes_``.
        """
        z = self._log_proba_pos(X)
        return np.column_stack([expit(-z), expit(z)])

    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`, computed in log space.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Inputs.

        Returns
        -------
        log_proba : ndarray of shape (n_samples, 2)
        """
        z = self._log_proba_pos(X)
        return np.column_stack([log_sigmoid(-z), log_sigmoid(z)])

    def predict(self, X):
        """Predicted class: ``classes_[1]`` where the decision function is positive.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Inputs.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
        """
        positive = self.decision_function(X) > 0
        return self.classes_[positive.astype(np.intp)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags


def _require_y(est, y):
    if y is None:
        msg = f"{type(est).__name__} requires y to be passed, but the target y is None."
        raise LabelError(msg)


def _column_to_1d(y):
    """A column vector y becomes 1-d with scikit-learn's DataConversionWarning."""
    arr = np.asarray(y)
    if arr.ndim == 2 and arr.shape[1] == 1:
        warnings.warn(
            "A column-vector y was passed when a 1d array was expected. Please change the shape of "
            "y to (n_samples,), for example using ravel().",
            DataConversionWarning,
            stacklevel=3,
        )
        return arr.ravel()
    return y


def _check_target(y, n_samples):
    """Regression targets as a finite float64 vector of length ``n_samples``."""
    y = np.asarray(_column_to_1d(y))
    if y.ndim != 1:
        msg = f"y must be one-dimensional; got an array of shape {y.shape}."
        raise DataError(msg)
    if y.shape[0] != n_samples:
        msg = (
            f"y has {y.shape[0]} values but X has {n_samples} samples; they must match one to one."
        )
        raise DataError(msg)
    try:
        y = y.astype(np.float64)
    except (TypeError, ValueError):
        msg = f"y must be numeric for regression; got values of dtype {y.dtype}."
        raise DataError(msg) from None
    if not np.all(np.isfinite(y)):
        msg = f"y contains {int(np.sum(~np.isfinite(y)))} NaN or infinite value(s)."
        raise DataError(msg)
    return y
