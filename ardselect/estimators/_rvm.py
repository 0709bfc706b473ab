"""Relevance vector machines by type-II maximum likelihood: regression and Laplace classification.

Both estimators run the shared sequential add / delete / re-estimate engine
(:class:`ardselect.engine._sequential.SequentialPath`, Tipping & Faul 2003) on a *virtual regression*
``N(t_i; phi_i . w, 1/b_i)``:

===================  ============================  ==============================================
model                ``b`` (per-sample precision)  ``t`` (virtual targets)
===================  ============================  ==============================================
Gaussian regression  ``beta = 1/sigma^2``          ``y`` (scaled to unit standard deviation)
logistic (Laplace)   ``s_i (1 - s_i)``             IRLS working targets ``f_i + (y_i - s_i)/b_i``
===================  ============================  ==============================================

with ``s_i = sigmoid(f_i)`` and ``f = Phi w_MP`` at the posterior mode. After every action of the
engine the model refreshes ``(b, t)``: regression re-estimates the noise (the exact 1-D maximum of
the marginal likelihood over ``log sigma^2`` for the current precisions), classification re-runs
IRLS (Newton with step halving, warm-started) to the new mode.

Notation (Tipping 2001; Bishop, PRML sec. 7.2.3) -> code
--------------------------------------------------------
=====================  =====================  ===============================================
paper                  code                   meaning
=====================  =====================  ===============================================
``Phi`` (N x M)        ``Phi``                basis (design) matrix, one column per function
``alpha_i``            ``alpha``              ARD precisions of the weights
``sigma^2``, ``beta``  ``noise``, ``beta``    noise variance and precision (regression)
``mu``, ``Sigma``      ``post.mean``,         posterior mean / covariance of the active weights
                       ``post.cov()``
``B`` (7.111)          ``b``                  diagonal of ``s (1 - s)`` at the mode
``w_MP`` (7.112)       ``w``                  Laplace mode
``eta_k``              ``eta``                per-input scales of the ARD-RBF kernel
=====================  =====================  ===============================================
"""

from __future__ import annotations

import logging
from numbers import Integral, Real

import numpy as np
import pandas as pd
from scipy.optimize import minimize
from scipy.special import expit, log_expit
from sklearn.base import RegressorMixin
from threadpoolctl import threadpool_limits

from ..engine._basis import make_basis
from ..engine._design import dense
from ..engine._validation import check_regression_target
from ._base import _ARDPathEstimator, _BinaryClassifierMixin, _Chosen
from ._constraints import Interval, Options, check_params
from ._rvm_eta import _ARDRBFBasis, _gp_input_scales, _log_ml_joint, log_marginal_eta
from ._rvm_likelihoods import (
    NOISE_CEIL,
    NOISE_FLOOR,
    _gaussian_log_ml,
    _GaussianProblem,
    _LaplaceProblem,
    _optimise_noise,  # noqa: F401 (the tests import it from here)
    laplace_mode,
)

__all__ = ["RVMClassifier", "RVMRegressor", "laplace_mode", "log_marginal_eta"]

logger = logging.getLogger("ardselect")

#: eta-RVR: path tolerance (nats) of the intermediate rounds, and the gain of a round below
#: which the alternation stops (a last path then runs at the estimator's ``tol``).
ETA_PATH_TOL = 1e-3
ETA_ROUND_TOL = 1e-3


# --------------------------------------------------------------------------------------------------
# Shared estimator plumbing
# --------------------------------------------------------------------------------------------------
class _RVMBase(_ARDPathEstimator):
    """What the two RVMs add to the path plumbing: the Gaussian path (regression and eta-RVR)."""

    #: The RVMs stop on a positive tolerance.
    _path_constraints: dict = {
        **_ARDPathEstimator._path_constraints,
        "tol": [Interval(Real, 0, None, closed="neither")],
    }

    def _gaussian_path(self, X, basis, t, noise, lo, hi, init, tol=None):
        """Design matrix of ``basis`` and the sequential path on it: ``(path, problem, scale)``."""
        Phi_s, scale, allowed = self._prepare_design(X, basis)
        problem = _GaussianProblem(Phi_s, allowed, t, noise, noise_lo=lo, noise_hi=hi,
                                   fit_noise=self.noise_variance is None)
        path = self._run_path(problem, init=init, max_init=self.max_init, tol=tol)
        return path, problem, scale


# --------------------------------------------------------------------------------------------------
# RVMRegressor
# --------------------------------------------------------------------------------------------------
class RVMRegressor(RegressorMixin, _RVMBase):
    """Relevance vector regression: Gaussian likelihood, ARD prior, type-II maximum likelihood.

    The model is ``y = w . phi(x) + b + e`` with ``e ~ N(0, sigma^2)`` and ``w_m ~ N(0,
    1/alpha_m)``. The precisions ``alpha`` and the noise variance maximise the marginal likelihood
    ``p(y | alpha, sigma^2)``, found by the fast sequential algorithm of Tipping & Faul (2003):
    basis functions are added, deleted or re-estimated one at a time, each time by the action that
    raises the marginal likelihood most, and the noise is re-estimated after every action.
    Computations run in float64.

    Parameters
    ----------
    kernel : {"rbf", "linear", "poly", "features"} or callable, default="rbf"
        Basis: one kernel function per training point (scikit-learn SVC convention; the selected
        ones are *relevance vectors*), or ``"features"`` for a linear model over the input features
        (ARD feature selection).
    gamma : float or {"scale", "auto"}, default="scale"
        Kernel coefficient of "rbf" and "poly": ``exp(-gamma |x - z|^2)``; a width ``r`` as in
        Tipping's ``exp(-|x - z|^2 / r^2)`` is ``gamma = 1 / r**2``. With ``optimize_eta`` it is the
        starting value of every input scale.
    degree : int, default=3
        Degree of "poly".
    coef0 : float, default=1.0
        Constant of "poly".
    fit_intercept : bool, default=True
        Add a bias basis function (a column of ones) with its own ARD precision.
    optimize_eta : bool, default=False
        Use the RBF kernel ``exp(-sum_k eta_k (x_k - z_k)^2)`` with one input scale per dimension
        and maximise the marginal likelihood over ``eta`` as well (Tipping's eta-RVR; needs
        ``kernel="rbf"``). See Notes.
    eta_init : {"gp", "uniform"}, default="gp"
        With ``optimize_eta``: where the input scales start. ``"gp"``: at the scales of an ARD
        Gaussian process fitted to the data (scikit-learn's, its length scales starting at
        ``gamma``); ``"uniform"``: every scale at ``gamma``. The sparse model's marginal
        likelihood has many local maxima in ``eta``; the dense GP's is smoother and leads to
        better ones (see Notes).
    eta_max_iter : int, default=50
        With ``optimize_eta``: maximum number of rounds (sequential path, then gradient steps on
        ``log eta``).
    noise_variance : float or None, default=None
        Fix the noise variance (in units of ``y**2``) instead of estimating it.
    init : {"auto", "single", "relevant"} or int, default="auto"
        Starting model: the single basis function that raises the marginal likelihood most (Tipping
        & Faul), every function relevant on its own (``"relevant"``, the closest start to Tipping's
        prune-from-all algorithm), or the k best. Growing from one function can stop at sparser,
        noisier evidence maxima: on Friedman #1 ``"relevant"`` (with ``max_init=None``) gives test
        MSE 2.91 against 3.38 over 20 data sets (benchmarks/rvm_regression.py), at about twice the
        fitting time. ``"auto"``:
        ``"single"``, or ``"relevant"`` with ``optimize_eta`` (from wide or GP scales a single
        function can stop the path at a few functions and a test MSE above 10 on Friedman #1).
    max_init : int or None, default=100
        Upper bound on the size of the starting model (the ``max_init`` functions of largest gain);
        ``None``: no bound. From wide kernels every function is relevant on its own, and each step
        costs ``O(m^3)`` in the ``m`` functions in the model: on Friedman #3 (N = 240) the bound
        makes eta-RVR 2-3 times faster at the same test error, and without it N = 2000 takes over
        15 minutes.
    max_steps : int, default=2000
        Maximum number of add / delete / re-estimate steps.
    tol : float, default=1e-6
        Stop when no action raises the log marginal likelihood by more than ``tol`` (nats).
    alpha_min : float, default=0.0
        Lower bound on the precisions of unit-RMS basis functions.
    patience : int, default=20
        Also stop when the log marginal likelihood has not risen by ``tol`` over ``patience`` steps.

    Attributes
    ----------
    coef_ : ndarray of shape (n_basis,)
        Posterior mean of the weights (0 outside the model); ``n_basis`` is the number of training
        points for a kernel basis and ``n_features_in_`` for ``kernel="features"``.
    coef_sd_ : ndarray of shape (n_basis,)
        Posterior standard deviations of the weights (0 outside the model).
    alpha_ : ndarray of shape (n_basis,)
        ARD precisions in the units of the basis and of ``y``; ``inf`` outside the model.
    intercept_, intercept_sd_, intercept_alpha_ : float
        The same for the bias (0, 0 and inf if it is out of the model or ``fit_intercept=False``).
    noise_variance_ : float
        Estimated (or fixed) noise variance ``sigma^2``.
    log_marginal_likelihood_ : float
        ``log p(y | alpha, sigma^2)`` of the fitted model (exact: the likelihood is Gaussian).
    chosen_step_ : int
        Path step of the fitted model, the last one (of the last eta round): the log marginal
        likelihood never decreases along the path.
    path_ : pandas.DataFrame
        One row per step: ``round`` (eta round, 0 without ``optimize_eta``), ``step``, ``action``,
        ``feature`` (the basis function acted on), ``n_basis`` (functions in the model, bias
        excluded), ``log_evidence`` (the log marginal likelihood in the units of ``y``),
        ``noise_variance``.
    relevance_vectors_ : ndarray of int
        Kernel basis only: indices of the training points whose functions are in the model.
    support_ : ndarray of bool of shape (n_features_in_,)
        Features in the model for ``kernel="features"``; all True for a kernel basis (the
        kernel uses every feature). ``get_support`` and ``transform`` read it.
    eta_ : ndarray of shape (n_features_in_,)
        ``optimize_eta`` only: the fitted input scales.
    eta_init_ : ndarray of shape (n_features_in_,)
        ``optimize_eta`` only: the starting input scales of the kept fit.
    eta_start_ : {"gp", "uniform"}
        ``optimize_eta`` only: where the kept fit started. With ``eta_init="gp"`` it is
        ``"uniform"`` when the GP start ended below the plain RVM at ``gamma`` (see Notes).
    n_iter_ : int
        Number of path steps (summed over eta rounds).
    basis_ : object
        The fitted basis.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when X has string column names.

    See Also
    --------
    RVMClassifier : the Laplace-approximation classifier.
    VariationalRVMRegressor : the variational treatment (Bishop & Tipping 2000).
    sklearn.linear_model.ARDRegression : ARD over the input features by the original re-estimation.

    Notes
    -----
    Basis columns are scaled to unit root mean square and ``y`` to unit standard deviation inside
    the fit (the model is equivariant to both; results are reported in the original units). The
    noise re-estimate after every action is the exact maximum of the marginal likelihood over ``log
    sigma^2`` for the current precisions (a 1-D Newton iteration on the eigen-decomposition of the
    active basis), so the log marginal likelihood never decreases along the path; the final model is
    a stationary point in ``alpha`` and ``sigma^2`` jointly. The noise variance is kept above
    ``1e-10 var(y)``.

    ``predict(X, return_std=True)`` returns the predictive standard deviation of a new *target*,
    ``sqrt(sigma^2 + phi(x)^T Sigma phi(x))`` (noise included, as in :class:`~sklearn.linear_model.
    ARDRegression`).

    eta-RVR alternates two steps that each raise the marginal likelihood: the sequential path at
    fixed ``eta`` (warm-started from the previous precisions), and L-BFGS on ``log eta``, the log
    precisions of the active functions and the log noise variance jointly (analytic gradients; see
    :func:`log_marginal_eta`). Intermediate paths stop at a loose tolerance (``1e-3`` nats); when a
    round gains less than ``1e-3`` nats, or after ``eta_max_iter`` rounds, a last path runs at
    ``tol``. Input dimensions that do not matter get ``eta_k -> 0``. The result is a local
    maximum, and which one depends on the start: on Friedman #3 a uniform start at
    ``gamma = 0.02`` ends 11-42 nats below the GP start, with a test MSE of 0.0200 against 0.0142
    (20 data sets drawn as in benchmarks/rvm_regression.py). The GP stage costs one scikit-learn
    ARD GP fit (``O(n^3)`` per iteration; on more than 1000 points it is fitted to a seeded
    subsample of 1000). A GP models a linear trend by a very long length scale, at which every RVM
    kernel is nearly constant: from there the path can find nothing to add. So when the GP start
    ends with less evidence than the plain RVM at ``gamma`` (the uniform start's first path), the
    fit restarts from the uniform scales (``eta_start_``); eta-RVR therefore never ends below the
    plain RVM path at ``gamma``.

    With many more candidate functions than samples (e.g. ``kernel="features"`` on thousands of
    genes) the marginal likelihood can be maximised by interpolating the data: the noise variance
    then sits at its floor. Check ``noise_variance_`` in that regime.

    References
    ----------
    Tipping, M. E. (2001). Sparse Bayesian learning and the relevance vector machine. JMLR 1,
    211-244. Tipping, M. E., Faul, A. C. (2003). Fast marginal likelihood maximisation for sparse
    Bayesian models. AISTATS.

    Examples
    --------
    >>> import numpy as np
    >>> from ardselect import RVMRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-10, 10, size=(60, 1))
    >>> y = np.sinc(X[:, 0] / np.pi) + 0.1 * rng.standard_normal(60)
    >>> model = RVMRegressor(gamma=1 / 3.0**2).fit(X, y)
    >>> len(model.relevance_vectors_) < 15
    True
    >>> mean, std = model.predict(X[:3], return_std=True)
    >>> bool(np.all(std > 0.05)) and bool(np.all(np.diff(model.path_["log_evidence"]) > -1e-8))
    True
    """

    def __init__(self, *, kernel="rbf", gamma="scale", degree=3, coef0=1.0, fit_intercept=True,
                 optimize_eta=False, eta_init="gp", eta_max_iter=50, noise_variance=None,
                 init="auto", max_init=100, max_steps=2000, tol=1e-6, alpha_min=0.0, patience=20):
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.fit_intercept = fit_intercept
        self.optimize_eta = optimize_eta
        self.eta_init = eta_init
        self.eta_max_iter = eta_max_iter
        self.noise_variance = noise_variance
        self.init = init
        self.max_init = max_init
        self.max_steps = max_steps
        self.tol = tol
        self.alpha_min = alpha_min
        self.patience = patience

    #: The parameter contract, checked by ``check_params`` at the start of ``fit``.
    _constraints: dict = {
        **_RVMBase._path_constraints,
        "optimize_eta": ["boolean"],
        "eta_init": [Options({"gp", "uniform"})],
        "eta_max_iter": [Interval(Integral, 1, None, closed="left")],
        "noise_variance": [Interval(Real, 0, None, closed="neither"), None],
        "init": [Options({"auto", "single", "relevant"}),
                 Interval(Integral, 1, None, closed="left")],
    }

    def fit(self, X, y):
        """Fit the RVM by the sequential marginal-likelihood algorithm.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training inputs; NaN or infinite values raise :class:`~ardselect.exceptions.DataError`.
        y : array-like of shape (n_samples,)
            Real targets.

        Returns
        -------
        self : RVMRegressor
        """
        check_params(self)
        if self.optimize_eta and not (isinstance(self.kernel, str) and self.kernel == "rbf"):
            msg = f"optimize_eta=True needs kernel='rbf'; got kernel={self.kernel!r}."
            raise ValueError(msg)
        X = self._validate_x(X, reset=True)
        y = check_regression_target(self, y, X.shape[0])
        basis = make_basis(self.kernel, self.gamma, self.degree, self.coef0)
        # Targets at unit standard deviation (the model is equivariant: alpha -> alpha / c^2,
        # sigma^2 -> c^2 sigma^2, log p -> log p - n log c).
        sd = float(np.std(y))
        rms = float(np.sqrt(np.mean(y * y)))
        self._y_scale = ys = sd if sd > 1e-12 * max(rms, 1e-300) else (rms if rms > 0 else 1.0)
        t = y / ys
        n = X.shape[0]
        var_t = float(np.var(t)) if sd > 0 else 1.0
        noise0 = 0.1 * var_t if self.noise_variance is None else self.noise_variance / ys**2
        lo = NOISE_FLOOR * var_t
        hi = NOISE_CEIL * max(float(np.mean(t * t)), var_t)
        if self.noise_variance is not None:
            lo = hi = noise0
        for name in ("eta_", "eta_init_", "eta_start_"):
            if hasattr(self, name):
                delattr(self, name)  # a refit without optimize_eta must not keep stale ones
        with threadpool_limits(limits=1, user_api="blas"):
            if self.optimize_eta:
                self._fit_eta(X, t, basis, noise0, lo, hi)
            else:
                self._finish([self._gaussian_path(X, basis, t, noise0, lo, hi,
                                                  self._path_init())], n)
        return self

    def _path_init(self):
        if isinstance(self.init, str) and self.init == "auto":
            return "relevant" if self.optimize_eta else "single"
        return self.init

    def _fit_eta(self, X, t, basis, noise0, lo, hi):
        Xd = dense(X)
        gamma = basis._gamma_value(X)
        # log eta stays within 1e-8 .. 1e4 times gamma
        lo_eta, hi_eta = gamma * np.exp(-18.0), gamma * np.exp(9.0)
        bounds = [(np.log(lo_eta), np.log(hi_eta))] * X.shape[1]
        uniform = np.full(X.shape[1], gamma)
        eta0, start = uniform, "uniform"
        if self.eta_init == "gp":
            eta0, start = np.clip(_gp_input_scales(Xd, t, gamma), lo_eta, hi_eta), "gp"
            logger.debug("eta-RVR: ARD GP start, eta = %s", np.array2string(eta0, precision=3))
        rounds = self._eta_rounds(X, Xd, t, eta0, bounds, noise0, lo, hi)
        if start == "gp":
            # Guard: the GP can model a linear trend by a very long length scale, at which every
            # RVM kernel is nearly constant and the path finds nothing to add, so the fit stalls
            # far below even the plain RVM at ``gamma``. Ending below that point (which eta-RVR
            # from the uniform start never does) means the start failed: use the uniform one.
            end = rounds[-1][0].steps[-1].stats["log_evidence"]
            first = self._gaussian_path(X, _ARDRBFBasis(uniform), t, noise0, lo, hi,
                                        self._path_init(), tol=max(self.tol, ETA_PATH_TOL))
            if first[0].steps[-1].stats["log_evidence"] > end:
                logger.debug("eta-RVR: the GP start ended below the uniform start's first path; "
                             "restarting from the uniform scales")
                eta0, start = uniform, "uniform"
                rounds = self._eta_rounds(X, Xd, t, eta0, bounds, noise0, lo, hi, first=first)
        self.eta_init_, self.eta_start_ = eta0, start
        self.eta_ = rounds[-1][3]
        self.basis_ = _ARDRBFBasis(self.eta_).fit(X)  # _design left the last design's basis
        self._finish([(p, pr, s) for p, pr, s, _ in rounds], X.shape[0])

    def _eta_rounds(self, X, Xd, t, eta, bounds, noise0, lo, hi, first=None):
        """Alternate the sequential path and joint L-BFGS steps from the input scales ``eta``.

        ``first``: round 0's ``(path, problem, scale)`` when it has been run already.
        """
        rounds = []
        init, noise, best = self._path_init(), noise0, -np.inf
        final = False
        for r in range(self.eta_max_iter + 1):
            if r == 0 and first is not None:
                path, problem, scale = first
            else:
                # Intermediate rounds only need a better model, not a converged one.
                tol = self.tol if final else max(self.tol, ETA_PATH_TOL)
                path, problem, scale = self._gaussian_path(X, _ARDRBFBasis(eta), t, noise, lo,
                                                           hi, init, tol=tol)
            rounds.append((path, problem, scale, eta.copy()))
            last = path.steps[-1]
            act = last.active
            alpha_raw = last.alpha * scale[act] ** 2  # precisions of the unscaled columns
            noise = last.stats["noise_variance"]
            logger.debug("eta-RVR round %d: %d functions, scaled log marginal likelihood %.6g",
                         r, act.size, last.stats["log_evidence"])
            if final:
                break
            gain = last.stats["log_evidence"] - best
            best = max(best, last.stats["log_evidence"])
            final = (r > 0 and gain < ETA_ROUND_TOL) or r == self.eta_max_iter - 1
            if not final:
                # Joint L-BFGS step on (log eta, log alpha of the active functions, log sigma^2):
                # moving the precisions with the scales avoids the slow zig-zag of alternating
                # one block at a time. The path then adds / deletes functions for the new kernel.
                kern = act != self._icol
                order = np.concatenate([np.flatnonzero(kern), np.flatnonzero(~kern)])  # bias last
                centres = Xd[act[kern]]
                theta0 = np.concatenate([np.log(eta), np.log(alpha_raw[order]), [np.log(noise)]])
                fixed_noise = self.noise_variance is not None
                la = np.log(alpha_raw[order])
                bnds = (bounds + [(v - 20.0, v + 20.0) for v in la]
                        + [(np.log(noise),) * 2 if fixed_noise else (np.log(lo), np.log(hi))])

                has_bias = bool((~kern).any())

                def neg_log_ml(th, c=centres, hb=has_bias):
                    value, grad = _log_ml_joint(th, Xd, c, t, hb)
                    return -value, -grad

                res = minimize(neg_log_ml, theta0, jac=True, method="L-BFGS-B", bounds=bnds,
                               options={"maxiter": 100})
                if -res.fun > last.stats["log_evidence"]:
                    D = eta.size
                    eta = np.exp(res.x[:D])
                    alpha_raw[order] = np.exp(res.x[D:-1])
                    noise = float(np.exp(res.x[-1]))
            # warm start of the next path: the same raw precisions on the re-scaled columns
            new_scale = np.sqrt(np.mean(_ARDRBFBasis(eta).fit(Xd).transform(Xd) ** 2, axis=0))
            new_scale = np.append(new_scale, 1.0) if self.fit_intercept else new_scale
            init = np.full(scale.shape[0], np.inf)
            init[act] = alpha_raw / new_scale[act] ** 2
        return rounds

    def _finish(self, rounds, n):
        path, problem, scale = rounds[-1]
        ys = self._y_scale
        # The path is monotone in the log marginal likelihood, so its last step is the fitted model.
        step = path.steps[-1]
        noise = step.stats["noise_variance"]
        b, post = problem.posterior(step.active, step.alpha, noise)
        self._chosen = [_Chosen(step.active, scale, post)]
        self._set_weights([self._input_units(step.active, post.mean, post.var(), step.alpha,
                                             scale, factor=ys)], [step.step])
        self.noise_variance_ = float(noise * ys**2)
        shift = n * np.log(ys)
        self.log_marginal_likelihood_ = float(_gaussian_log_ml(post, b, problem.t) - shift)
        extra = {"noise_variance": lambda s: s.stats["noise_variance"] * ys**2}
        self.path_ = pd.concat([self._path_frame(p.steps, extra, round_=r)
                                for r, (p, _, _) in enumerate(rounds)], ignore_index=True)
        self.path_["log_evidence"] -= shift
        self.n_iter_ = int(sum(len(p.steps) - 1 for p, _, _ in rounds))

    def predict(self, X, *, return_std=False):
        """Predictive mean and, optionally, standard deviation.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        return_std : bool, default=False
            Also return ``sqrt(noise_variance_ + phi^T Sigma phi)``, the predictive standard
            deviation of a new target (noise included).

        Returns
        -------
        mean : ndarray of shape (n_samples,)
        std : ndarray of shape (n_samples,)
            Only with ``return_std=True``.
        """
        m, v = self._latent(X)
        ys = self._y_scale
        mean = ys * m[:, 0]
        if not return_std:
            return mean
        return mean, np.sqrt(self.noise_variance_ + ys**2 * v[:, 0])


# --------------------------------------------------------------------------------------------------
# RVMClassifier
# --------------------------------------------------------------------------------------------------
class RVMClassifier(_BinaryClassifierMixin, _RVMBase):
    """Relevance vector classification: logistic likelihood, ARD prior, Laplace approximation.

    ``P(y = classes_[1] | x) = sigmoid(w . phi(x) + b)`` with ``w_m ~ N(0, 1/alpha_m)``. For given
    precisions the weight posterior is approximated by a Gaussian at its mode (found by IRLS, i.e.
    Newton's method) with the inverse Hessian as covariance; the precisions are re-estimated by the
    sequential algorithm of Tipping & Faul (2003) on the Laplace virtual regression (``b = s (1 -
    s)``, targets the IRLS working targets), re-running IRLS after every action. This is the
    "Seq-ARD-Laplace" baseline of Qi et al. (2004). Binary problems only.

    Parameters
    ----------
    kernel : {"rbf", "linear", "poly", "features"} or callable, default="rbf"
        Basis, as in :class:`RVMRegressor`.
    gamma : float or {"scale", "auto"}, default="scale"
        Kernel coefficient of "rbf" and "poly" (``gamma = 1 / r**2`` for Tipping's width ``r``).
    degree : int, default=3
    coef0 : float, default=1.0
    fit_intercept : bool, default=True
        Add a bias basis function with its own ARD precision.
    init : {"single", "relevant"} or int, default="single"
        Starting model (the best single basis function, every function relevant on its own, or the k
        best).
    max_init : int or None, default=100
        Upper bound on the size of the starting model (the ``max_init`` functions of largest gain);
        ``None``: no bound.
    max_steps : int, default=2000
    tol : float, default=1e-5
        Stop when no action raises the virtual-regression log marginal likelihood by ``tol`` nats.
    alpha_min : float, default=1e-3
        Lower bound on the precisions of unit-RMS basis functions (a prior sd of about 32 logits).
        With separable classes the evidence keeps growing as precisions go to 0; the bound ends it.
    patience : int, default=20
        Also stop when the Laplace log evidence has not risen by ``tol`` over ``patience`` steps.
    irls_tol : float, default=1e-10
        Convergence tolerance of IRLS (relative size of the Newton step).
    irls_max_iter : int, default=100
        Maximum Newton steps per refresh.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
    coef_ : ndarray of shape (1, n_basis)
        Posterior mode of the weights (0 outside the model); one row, the binary problem, as
        every classifier of the family.
    coef_sd_ : ndarray of shape (1, n_basis)
        Laplace posterior standard deviations.
    alpha_ : ndarray of shape (1, n_basis)
        ARD precisions in the units of the basis; ``inf`` outside the model.
    intercept_, intercept_sd_, intercept_alpha_ : ndarray of shape (1,)
        The same for the bias (0, 0 and ``inf`` if it is out of the model or not fitted).
    log_marginal_likelihood_ : float
        Laplace approximation of ``log p(y | alpha)`` (PRML eq. 7.114) of the chosen model.
    chosen_step_ : ndarray of int of shape (1,)
        Path step of the fitted model: the one with the largest Laplace log evidence.
    path_ : pandas.DataFrame
        One row per step: ``class`` (``classes_[1]``), ``step``, ``action``, ``feature``,
        ``n_basis``, ``log_evidence``, ``irls_iter``.
    relevance_vectors_ : ndarray of int
        Kernel basis only: training points whose functions are in the model.
    support_ : ndarray of bool of shape (n_features_in_,)
        Features in the model for ``kernel="features"``; all True for a kernel basis.
    n_iter_ : int
        Number of path steps.
    basis_ : object
    n_features_in_ : int
    feature_names_in_ : ndarray of str

    See Also
    --------
    ARDClassifier : the EP probit ARD, with predictive model choice.
    RVMRegressor : the regression RVM.

    Notes
    -----
    ``predict_proba`` integrates the logistic over the Gaussian posterior of the latent with
    MacKay's probit approximation, ``P = sigmoid(m / sqrt(1 + pi v / 8))`` (``m, v`` the latent mean
    and variance), not the plug-in ``sigmoid(m)``; both give the same labels (``m > 0``).
    ``decision_function`` returns the moderated latent ``m / sqrt(1 + pi v / 8)``, the score
    ``predict_proba`` is the logistic of, so the two rank samples alike. The Laplace log evidence
    is not guaranteed to rise at every step (the engine maximises the virtual regression's marginal
    likelihood), so the fitted model is the step of the path with the largest Laplace log
    evidence. Computations run in float64.

    References
    ----------
    Tipping, M. E. (2001). Sparse Bayesian learning and the relevance vector machine. JMLR 1,
    211-244. Bishop, C. M. (2006). Pattern Recognition and Machine Learning, sec. 7.2.3.
    Tipping, M. E., Faul, A. C. (2003). Fast marginal likelihood maximisation for sparse Bayesian
    models. AISTATS.

    Examples
    --------
    >>> import numpy as np
    >>> from ardselect import RVMClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(80, 2))
    >>> y = (X[:, 0] ** 2 + X[:, 1] ** 2 > 1.4).astype(int)
    >>> clf = RVMClassifier(gamma=0.5).fit(X, y)
    >>> bool(clf.score(X, y) > 0.85) and len(clf.relevance_vectors_) < 20
    True
    >>> clf.predict_proba(X[:2]).shape
    (2, 2)
    """

    def __init__(self, *, kernel="rbf", gamma="scale", degree=3, coef0=1.0, fit_intercept=True,
                 init="single", max_init=100, max_steps=2000, tol=1e-5, alpha_min=1e-3,
                 patience=20, irls_tol=1e-10, irls_max_iter=100):
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.fit_intercept = fit_intercept
        self.init = init
        self.max_init = max_init
        self.max_steps = max_steps
        self.tol = tol
        self.alpha_min = alpha_min
        self.patience = patience
        self.irls_tol = irls_tol
        self.irls_max_iter = irls_max_iter

    #: The parameter contract, checked by ``check_params`` at the start of ``fit``.
    _constraints: dict = {
        **_RVMBase._path_constraints,
        "init": [Options({"single", "relevant"}), Interval(Integral, 1, None, closed="left")],
        "irls_tol": [Interval(Real, 0, None, closed="neither")],
        "irls_max_iter": [Interval(Integral, 1, None, closed="left")],
    }

    def fit(self, X, y):
        """Fit the Laplace RVM classifier.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training inputs; NaN or infinite values raise :class:`~ardselect.exceptions.DataError`.
        y : array-like of shape (n_samples,)
            Two classes ({0, 1}, {-1, +1}, booleans, strings); ``classes_[1]`` is the positive one.

        Returns
        -------
        self : RVMClassifier
        """
        check_params(self)
        X = self._validate_x(X, reset=True)
        classes, y_idx = self._class_labels(y, X.shape[0])
        basis = make_basis(self.kernel, self.gamma, self.degree, self.coef0)
        Phi_s, scale, allowed = self._prepare_design(X, basis)
        y01 = y_idx.astype(np.float64)
        problem = _LaplaceProblem(Phi_s, allowed, y01, irls_tol=self.irls_tol,
                                  irls_max_iter=self.irls_max_iter)
        with threadpool_limits(limits=1, user_api="blas"):
            path = self._run_path(problem, init=self.init, max_init=self.max_init,
                                  problem_label=classes[1])
            ev = np.array([s.stats["log_evidence"] for s in path.steps])
            k = int(np.argmax(ev))
            step = path.steps[k]
            lap = problem.mode(step.active, step.alpha, step.state)
        if problem.n_irls_unconverged:
            logger.info("IRLS hit irls_max_iter at %d path steps", problem.n_irls_unconverged)
        self._chosen = [_Chosen(step.active, scale, lap["post"])]
        self._set_weights([self._input_units(step.active, lap["w"], lap["post"].var(), step.alpha,
                                             scale)], [k])
        self.log_marginal_likelihood_ = lap["log_evidence"]
        self.path_ = self._path_frame(path.steps, {"irls_iter": lambda s: s.stats["irls_iter"]},
                                      problem_label=classes[1])
        self.n_iter_ = len(path.steps) - 1
        return self

    def decision_function(self, X):
        """The moderated latent ``m / sqrt(1 + pi v / 8)`` (positive favours ``classes_[1]``).

        ``m`` and ``v`` are the Laplace posterior mean (mode) and variance of the latent
        ``w . phi(x) + b``. :meth:`predict_proba` is the logistic of this score, so the two rank
        samples alike; ``m`` alone would not, since ``v`` grows away from the relevance vectors.

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        return self._moderated(X)

    def _moderated(self, X):
        m, v = (a[:, 0] for a in self._latent(X))
        return m / np.sqrt(1.0 + np.pi * v / 8.0)  # MacKay (1992): E[sigmoid(f)] ~ sigmoid(kappa m)

    def predict_proba(self, X):
        """Class probabilities: the logistic integrated over the Gaussian posterior.

        MacKay's probit approximation ``sigmoid(m / sqrt(1 + pi v / 8))``.

        Returns
        -------
        ndarray of shape (n_samples, 2), columns in ``classes_`` order.
        """
        z = self._moderated(X)
        return np.column_stack([expit(-z), expit(z)])

    def predict_log_proba(self, X):
        """Log of :meth:`predict_proba`, computed in log space."""
        z = self._moderated(X)
        return np.column_stack([log_expit(-z), log_expit(z)])

    def predict(self, X):
        """Most probable class (``decision_function > 0`` gives ``classes_[1]``)."""
        positive = self.decision_function(X) > 0
        return self.classes_[positive.astype(int)]

