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

import warnings
from numbers import Integral, Real

import numpy as np
from scipy.special import expit
from sklearn.base import RegressorMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted

from ..engine._basis import design_matrix, make_basis
from ..engine._design import dense
from ..engine._validation import check_regression_target
from ..exceptions import DataError
from ._base import _BinaryClassifierMixin, _FamilyEstimator, basis_constraints
from ._constraints import Interval, check_params
from ._variational_engine import (  # noqa: F401 (the tests import these from here)
    _fit_variational,
    _VariationalState,
    gamma_entropy,
    gamma_expected_log_pdf,
    jj_lambda,
    jj_log_bound,
    log_sigmoid,
)

__all__ = ["VariationalRVMClassifier", "VariationalRVMRegressor"]

# --------------------------------------------------------------------------------------------------
# Estimators
# --------------------------------------------------------------------------------------------------

_SVC_KERNELS = ("linear", "rbf", "poly")


class _VariationalRVMBase(_FamilyEstimator):
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

    def _design(self, X):
        """Dense basis matrix, the intercept's column of ones last (as in the whole family)."""
        K = design_matrix(self.basis_, X, fit_intercept=self.fit_intercept)
        return np.asarray(dense(K), dtype=np.float64)

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
        # One problem: one row of each; the intercept (the last column) apart.
        self._set_weight_attributes(
            *(v[None, :n_basis].copy() for v in (state.mean_w, sd, alpha)),
            [v[-1:] for v in (state.mean_w, sd, alpha)] if self.fit_intercept else None)
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

    #: The parameter contract, checked by ``check_params`` at the start of ``fit``.
    _constraints: dict = {
        **_VariationalRVMBase._shared_constraints,
        "noise_shape": [Interval(Real, 0, None, closed="neither")],
        "noise_rate": [Interval(Real, 0, None, closed="neither")],
    }

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
        t = check_regression_target(self, y, Xc.shape[0])
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


class VariationalRVMClassifier(_BinaryClassifierMixin, _VariationalRVMBase):
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

    #: The parameter contract, checked by ``check_params`` at the start of ``fit``.
    _constraints: dict = {
        **_VariationalRVMBase._shared_constraints,
        "moderated": ["boolean"],
    }

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
        classes, y_index = self._class_labels(y, Xc.shape[0])
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
