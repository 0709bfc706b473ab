"""Gibbs-sampled probit RVM (Murphy & Abreau 2019, *Fully Bayesian Analysis of RVMs*).

The model of the paper, section 1.2 (its "reformulated classification RVM"), written with latent
variables as in its section 2.3 (Albert & Chib 1993)::

    y_i        = 1[z_i > 0]
    z_i        ~ N(phi_i . w, sigma^2)     sigma^2 = 1 (first model) or sampled (final model)
    w_j        ~ N(0, 1 / alpha_j)
    alpha_j    ~ Gamma(a, b) truncated to [alpha_lower, alpha_max]
    p(sigma^2) ~ 1 / sigma^2               (only when the noise is sampled)

Every conditional is a standard distribution, so the sampler draws blocks exactly:

======================  =========================================  ==========================
paper                   conditional                                code
======================  =========================================  ==========================
p(z_i | w, sigma, y)    TruncNorm_{y_i}(phi_i . w, sigma^2)         ``sample_latent``
p(w | alpha, z, sigma)  N(beta_hat, Sigma_hat), Sigma_hat =         ``_sample_weights_primal``
                        (Phi^T Phi / sigma^2 + diag(alpha))^-1,     ``_sample_weights_dual``
                        beta_hat = Sigma_hat Phi^T z / sigma^2
p(alpha_j | w)          Gamma(a + 1/2, b + w_j^2 / 2) truncated     ``_sample_truncated_gamma``
                        (paper: a = 1, b = 0, i.e. Gamma(3/2, w^2/2))
p(sigma^2 | z, w)       Inv-chi^2(N, tau^2),                        ``_sample_noise_var``
                        tau^2 = mean((z - Phi w)^2)
======================  =========================================  ==========================

Paper symbol -> code name: Phi (design, N x M) -> ``Phi``; w -> ``w``; alpha -> ``alpha``; z ->
``z``; sigma^2 -> ``noise_var``; the truncation constant a of "alpha ~ Unif(a, inf)" ->
``alpha_lower``.

Convergence diagnostics (split-R-hat and bulk effective sample size) are in ``_mcmc.py``, public as
:func:`ardselect.diagnostics.split_rhat` and :func:`ardselect.diagnostics.effective_sample_size`.
"""

from __future__ import annotations

import logging
import numbers
import warnings
from numbers import Integral, Real

import numpy as np
import scipy.linalg  # noqa: F401 (the tests patch scipy.linalg through this module)
from scipy.special import (
    log_ndtr,
    logsumexp,
)
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted
from threadpoolctl import threadpool_limits

from ..engine._basis import design_matrix, make_basis
from ..engine._design import dense
from ..exceptions import DataError
from ..numerics._mcmc import effective_sample_size, split_rhat
from ._base import _BinaryClassifierMixin, _FamilyEstimator, basis_constraints
from ._constraints import Interval, check_params
from ._gibbs_sampler import (  # noqa: F401 (the tests reach the samplers through this module)
    _gamma_tail_rejection,
    _run_chain,
    _sample_noise_var,
    _sample_truncated_gamma,
    _sample_weights_dual,
    _sample_weights_primal,
    _seed_sequence,
    _std_normal_above,
    _unit_plus_solve,
    sample_latent,
)

__all__ = ["GibbsRVMClassifier", "sample_latent"]

logger = logging.getLogger("ardselect")

#: R-hat above which ``fit`` warns that the chains have not mixed (Vehtari et al. 2021 recommend
# 1.01
#: for final results; 1.05 is the looser bound the project uses for a warning).
RHAT_WARN = 1.05

# Upper end of the alpha support when the user gives none. The paper's flat prior on alpha makes the
# joint posterior improper (the marginal prior of w_j is ~ |w_j|^-3 near 0), so an irrelevant
# weight's alpha grows geometrically and overflows after a few hundred sweeps. Truncating at 1e10
# (prior sd of w_j at 1e-5) keeps the sampler finite and the prior proper without touching any
# weight that matters.
_ALPHA_MAX_DEFAULT = 1e10

# Weight-space (Cholesky of the M x M precision, O(M^3)) or sample-space (Bhattacharya et al. 2016,
# O(N^2 M)) draw of w: the sample-space route is used when M > _DUAL_RATIO * N. With a kernel basis
# M = N + 1, where the weight-space route is ~3x faster (the N x M Gram matrix is precomputed once);
# for p >> n gene data the sample-space route never forms a p x p matrix.
_DUAL_RATIO = 2

# Smallest precision the sampler draws: alpha_j >= max(alpha_lower, _ALPHA_FLOOR_REL * ||Phi_j||^2,
# _ALPHA_FLOOR). A prior precision 1e-8 times the data precision ||Phi_j||^2 of weight j is flat for
# all practical purposes, so the cut does not change the posterior of any weight the data determine.
# It matters for weights the data cannot identify (a linear-kernel basis has rank d + 1 << M): with
# heavy- tailed priors their prior variance 1/alpha would otherwise random-walk to 1e60, where
# rounding in Phi @ w (of size eps * |Phi| * |w|) feeds garbage back into the latent variables and
# the chain overflows. The absolute floor keeps 1/sqrt(alpha) finite for an all-zero column.
_ALPHA_FLOOR_REL = 1e-8
_ALPHA_FLOOR = 1e-100

# ----------------------------------------------------------------------------------------------
# Estimator
# ----------------------------------------------------------------------------------------------
class GibbsRVMClassifier(_BinaryClassifierMixin, _FamilyEstimator):
    """Probit relevance vector machine sampled by Gibbs sampling (Murphy & Abreau 2019).

    A fully Bayesian RVM for two classes: the probit model ``P(y=1 | x) = Phi(phi(x) . w / sigma)``
    with an ARD prior ``w_j ~ N(0, 1/alpha_j)``, conjugate Gamma hyperpriors on ``alpha_j``
    (optionally truncated below, the paper's "truncated alpha prior"), and optionally a sampled
    noise variance ``sigma^2`` with the prior ``1/sigma^2``. The sampler draws the Albert-Chib
    latent variables, the weights, the precisions and the noise variance in turn, each from its
    exact conditional, in several independent chains.

    Parameters
    ----------
    kernel : {"linear", "rbf", "poly", "features"} or callable, default="linear"
        Basis. A kernel centres one function on every training point (the RVM); ``"features"`` uses
        the input features themselves. The default is the paper's: a linear kernel
        ``k(x, x') = x . x'``.
    gamma : float or {"scale", "auto"}, default="scale"
        Coefficient of the "rbf" and "poly" kernels (sklearn's SVC convention).
    degree : int, default=3
        Degree of the "poly" kernel.
    coef0 : float, default=1.0
        Constant of the "poly" kernel.
    fit_intercept : bool, default=True
        Add a column of ones to the basis (the paper's ``Phi[:, 0]``; here the last column, as in
        every estimator of the family), with its own ``alpha``. Its weight is ``intercept_``,
        never part of ``coef_``.
    n_draws : int, default=1000
        Draws kept per chain (after burn-in and thinning).
    n_burnin : int, default=1000
        Sweeps discarded at the start of each chain.
    thin : int, default=1
        Keep every ``thin``-th sweep after burn-in.
    n_chains : int, default=4
        Independent chains, each with its own random stream and an overdispersed start.
    alpha_shape : float, default=1.0
        Shape ``a`` of the Gamma(a, b) prior of every ``alpha_j``. The paper's uniform prior on
        ``alpha`` is ``a=1, b=0``, which gives its conditional ``Gamma(3/2, w_j^2 / 2)``.
    alpha_rate : float, default=1e-2
        Rate ``b`` of that prior. ``alpha_rate=0`` is the paper's flat prior, whose posterior is
        improper (see Notes): its chains collapse weights to 0 or let them diverge. The default is
        the weakest round value that gave a proper, well-mixing sampler on Ripley's data: with
        ``a=1`` the marginal prior of each weight is a Student t with 2 degrees of freedom and scale
        ``sqrt(b / a) = 0.1``, sparsity-inducing but proper.
    alpha_lower : float or None, default=None
        Truncate the prior of every ``alpha_j`` to ``alpha_j >= alpha_lower``: the paper's truncated
        prior ``alpha ~ Unif(a, inf)`` (section 3.3.3; the paper reports ``a = 10``). It bounds the
        prior variance of each weight by ``1 / alpha_lower`` and stops relevant weights from
        diverging. ``None`` means no truncation.
    alpha_max : float or None, default=None
        Upper end of the support of every ``alpha_j``. ``None`` means 1e10, a numerical stabiliser:
        with the paper's flat prior irrelevant precisions grow without bound (the joint posterior is
        improper), and the cap keeps them finite. Set it to ``np.inf`` with a proper prior
        (``alpha_rate > 0``) to sample the untruncated model.
    sample_noise : bool, default=False
        Sample ``sigma^2`` (prior ``1/sigma^2``, conditional ``Inv-chi^2(N, tau^2)``), the paper's
        final model, which the paper pairs with ``alpha_lower=10``. ``False`` fixes ``sigma^2 = 1``
        (its first reformulated model). Caution: the likelihood depends on ``w / sigma`` only, so
        with the scale-free prior ``1/sigma^2`` the posterior is improper whatever the prior on
        ``alpha`` (integrating ``sigma`` out diverges as ``sigma -> inf``); the chain drifts along
        ``(w, sigma) -> (c w, c sigma)`` and R-hat flags it. Predictions use ``w / sigma``.
    sample_alpha : bool, default=True
        Sample the precisions. ``False`` fixes them at ``alpha_init`` (a conditionally conjugate
        probit regression with a fixed Gaussian prior; ``np.inf`` entries exclude columns).
    alpha_init : float or array-like of shape (n_weights,), default=1.0
        Starting precisions (clipped into ``[alpha_lower, alpha_max]``), or the fixed ones when
        ``sample_alpha=False``. An array has one entry per basis function, then the intercept's
        last (``n_weights = n_basis + fit_intercept``).
    random_state : int, numpy.random.Generator, SeedSequence, RandomState or None, default=None
        Seed. Each chain gets an independent child stream via ``numpy.random.SeedSequence.spawn``;
        the same integer seed gives the same draws.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        Class labels; ``classes_[1]`` is the positive class (``y = 1``).
    n_features_in_ : int
        Number of input features.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Input feature names, when ``X`` had string column names.
    coef_samples_ : ndarray of shape (n_chains, n_draws, n_basis)
        Kept draws of the weights of the basis functions (``n_basis``: the input features for
        ``kernel="features"``, the training points for a kernel).
    intercept_samples_ : ndarray of shape (n_chains, n_draws)
        Kept draws of the intercept (zeros without ``fit_intercept``).
    alpha_samples_ : ndarray of shape (n_chains, n_draws, n_basis)
        Kept precision draws of the basis weights.
    intercept_alpha_samples_ : ndarray of shape (n_chains, n_draws)
        Kept precision draws of the intercept (``inf`` without ``fit_intercept``).
    noise_variance_samples_ : ndarray of shape (n_chains, n_draws)
        Kept ``sigma^2`` draws (all 1 unless ``sample_noise``).
    coef_ : ndarray of shape (1, n_basis)
        Posterior mean of the weights (one binary problem: one row, as every classifier of the
        family).
    coef_sd_ : ndarray of shape (1, n_basis)
        Posterior standard deviation of the weights.
    alpha_ : ndarray of shape (1, n_basis)
        Posterior mean of their precisions.
    intercept_, intercept_sd_, intercept_alpha_ : ndarray of shape (1,)
        The same for the intercept (0, 0 and ``inf`` without ``fit_intercept``).
    rhat_ : ndarray of shape (1, n_basis)
        Rank-normalised split-R-hat of each weight (Vehtari et al. 2021); NaN if it cannot be
        computed (fewer than 4 kept draws, or a weight fixed at 0).
    intercept_rhat_ : ndarray of shape (1,)
        The same for the intercept (NaN without ``fit_intercept``).
    ess_ : ndarray of shape (1, n_basis)
        Bulk effective sample size of each weight, over all chains.
    intercept_ess_ : ndarray of shape (1,)
        The same for the intercept.
    n_iter_ : int
        Sweeps run per chain (burn-in included).

    See Also
    --------
    ardselect.RVMClassifier : the type-II maximum likelihood (Laplace) RVM.
    ardselect.ARDClassifier : EP probit ARD with sequential model selection.

    Notes
    -----
    One sweep draws, in order, (1) the latent ``z_i`` from ``N(phi_i . w, sigma^2)`` truncated to
    the side of 0 given by ``y_i`` (inverse CDF in log space, exact in the far tails); (2) the
    weights from ``N(Sigma Phi^T z / sigma^2, Sigma)``, ``Sigma = (Phi^T Phi / sigma^2 +
    diag(alpha))^-1``: by a Cholesky factor of the precision, ``w = mean + L^-T xi``, when there are
    at most twice as many weights as training points (a kernel basis: M = N + 1), and otherwise by
    the exact sample-space algorithm of Bhattacharya et al. (2016), which costs O(N^2 M) instead of
    O(M^3) and never forms an M x M matrix (gene data, p >> n); (3) each ``alpha_j`` from
    ``Gamma(a + 1/2, b + w_j^2 / 2)`` truncated to ``[alpha_lower, alpha_max]``; (4) if sampled,
    ``sigma^2`` from ``Inv-chi^2(N, mean((z - Phi w)^2))``.

    Predictive probabilities average ``Phi(phi(x) . w / sigma)`` over every kept draw (computed with
    ``log_ndtr`` and ``logsumexp``); ``decision_function`` is the log-odds of that average, so its
    sign agrees with ``predict``.

    With the paper's flat prior on ``alpha`` (``alpha_rate=0``) the joint posterior is improper: the
    induced marginal prior of each weight behaves like ``|w|^-3`` near 0, which is not integrable,
    so every weight is eventually absorbed at 0 (precision at ``alpha_max``), and weights the
    likelihood pushes outwards can diverge first. The paper reports both ("most of our weights went
    to 0"; the relevant weights "diverged"); its remedy, the truncation ``alpha >= a`` with a
    sampled ``sigma^2``, bounds the weights but not the collapse to 0, and adds a scale direction
    ``(w, sigma) -> (c w, c sigma)`` that the likelihood cannot fix. On Ripley's and Pima data such
    fits give split-R-hat around 1.5-2 (see ``benchmarks/gibbs_classification.py``). Hence the
    default ``alpha_rate=1e-2``: a proper prior and a proper posterior, with the paper's shape
    ``a = 1``.

    Two numerical bounds on the precisions, both documented in the module: ``alpha_max`` (default
    1e10) and a per-weight floor ``alpha_j >= 1e-8 ||Phi_j||^2`` (a prior 1e8 times weaker than the
    data's precision for that weight), which keeps the weights the data cannot identify (a linear
    kernel basis has rank ``d + 1``) from wandering to magnitudes where rounding in ``Phi w`` feeds
    back into the chain.

    After fitting, a :class:`sklearn.exceptions.ConvergenceWarning` is issued when the largest R-hat
    exceeds 1.05: run longer chains.

    References
    ----------
    D. Murphy and S. Abreau (2019). Fully Bayesian Analysis of RVMs.

    J. H. Albert and S. Chib (1993). Bayesian analysis of binary and polychotomous response data.
    JASA 88(422), 669-679.

    A. Bhattacharya, A. Chakraborty and B. K. Mallick (2016). Fast sampling with Gaussian
    scale-mixture priors in high-dimensional regression. Biometrika 103(4), 985-991.

    A. Vehtari, A. Gelman, D. Simpson, B. Carpenter and P.-C. Buerkner (2021). Rank-normalization,
    folding, and localization: an improved R-hat for assessing convergence of MCMC. Bayesian
    Analysis 16(2), 667-718.

    Examples
    --------
    >>> import numpy as np
    >>> from ardselect import GibbsRVMClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(40, 2))
    >>> y = (X[:, 0] - X[:, 1] + 0.5 * rng.normal(size=40) > 0).astype(int)
    >>> clf = GibbsRVMClassifier(kernel="features", n_draws=2000, n_burnin=500, n_chains=2,
    ...                          random_state=0).fit(X, y)
    >>> clf.coef_samples_.shape  # (n_chains, n_draws, 2 features); the intercept apart
    (2, 2000, 2)
    >>> bool(clf.rhat_.max() < 1.05 and clf.score(X, y) > 0.8)
    True
    >>> lower, upper = clf.credible_interval(0.95)
    >>> bool(lower[0, 0] > 0 and upper[0, 1] < 0)  # x0 raises, x1 lowers the odds of class 1
    True
    """

    def __init__(
        self,
        *,
        kernel="linear",
        gamma="scale",
        degree=3,
        coef0=1.0,
        fit_intercept=True,
        n_draws=1000,
        n_burnin=1000,
        thin=1,
        n_chains=4,
        alpha_shape=1.0,
        alpha_rate=1e-2,
        alpha_lower=None,
        alpha_max=None,
        sample_noise=False,
        sample_alpha=True,
        alpha_init=1.0,
        random_state=None,
    ):
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.fit_intercept = fit_intercept
        self.n_draws = n_draws
        self.n_burnin = n_burnin
        self.thin = thin
        self.n_chains = n_chains
        self.alpha_shape = alpha_shape
        self.alpha_rate = alpha_rate
        self.alpha_lower = alpha_lower
        self.alpha_max = alpha_max
        self.sample_noise = sample_noise
        self.sample_alpha = sample_alpha
        self.alpha_init = alpha_init
        self.random_state = random_state

    #: The parameter contract, checked by ``check_params`` at the start of ``fit``.
    _constraints: dict = {
        **basis_constraints(),
        "n_draws": [Interval(Integral, 1, None, closed="left")],
        "n_burnin": [Interval(Integral, 0, None, closed="left")],
        "thin": [Interval(Integral, 1, None, closed="left")],
        "n_chains": [Interval(Integral, 1, None, closed="left")],
        "alpha_shape": [Interval(Real, 0, None, closed="neither")],
        "alpha_rate": [Interval(Real, 0, None, closed="left")],
        "alpha_lower": [Interval(Real, 0, None, closed="left"), None],
        "alpha_max": [Interval(Real, 0, np.inf, closed="right"), None],
        "sample_noise": ["boolean"],
        "sample_alpha": ["boolean"],
        "alpha_init": [Interval(Real, 0, np.inf, closed="right"), "array-like"],
        "random_state": ["random_state", np.random.Generator, np.random.SeedSequence],
    }

    # -- parameter checks ----------------------------------------------------------------------
    def _check_params(self):
        """Validate the parameters; return the support ``(lo, hi)`` of the precisions."""
        check_params(self)
        lo = 0.0 if self.alpha_lower is None else float(self.alpha_lower)
        hi = _ALPHA_MAX_DEFAULT if self.alpha_max is None else float(self.alpha_max)
        if not hi > lo:
            msg = (
                f"alpha_max must be greater than alpha_lower; got alpha_max={hi!r}, "
                f"alpha_lower={lo!r}."
            )
            raise ValueError(msg)
        if self.sample_alpha and not np.isfinite(hi) and self.alpha_rate == 0:
            msg = (
                "alpha_max=inf needs a proper Gamma prior (alpha_rate > 0): with alpha_rate=0 the "
                "precisions of irrelevant weights grow without bound."
            )
            raise ValueError(msg)
        return lo, hi

    def _alpha_start(self, M, lo, hi):
        """Starting (or fixed) precisions; ``lo`` is the per-weight lower bound."""
        a0 = np.asarray(self.alpha_init, dtype=np.float64)
        if a0.ndim == 0:
            a0 = np.full(M, float(a0))
        if a0.shape != (M,):
            msg = (
                f"alpha_init must be a float or an array of shape ({M},) "
                "(one per basis function, then the intercept); "
                f"got shape {a0.shape}."
            )
            raise ValueError(msg)
        if np.any(np.isnan(a0)) or np.any(a0 <= 0):
            msg = "alpha_init must be positive (np.inf excludes a weight)."
            raise ValueError(msg)
        if self.sample_alpha:
            if np.any(np.isinf(a0)):
                msg = "alpha_init=inf (an excluded weight) needs sample_alpha=False."
                raise ValueError(msg)
            a0 = np.clip(a0, lo, hi)
        elif not np.any(np.isfinite(a0)):
            msg = "alpha_init excludes every weight (all inf); keep at least one finite."
            raise ValueError(msg)
        return a0

    # -- design --------------------------------------------------------------------------------
    def _design(self, X):
        """Dense basis matrix, the intercept's column of ones last (as in the whole family)."""
        B = design_matrix(self.basis_, X, fit_intercept=self.fit_intercept)
        B = np.asarray(dense(B), dtype=np.float64)
        return np.ascontiguousarray(B)

    def fit(self, X, y):
        """Run the Gibbs chains on training data.

        The recipe: check the parameters, ``X`` and the labels; build the design (basis and
        intercept); bound the precisions per weight; run the chains; keep the draws; summarise
        them (means, sds, R-hat, effective sample sizes) and warn if the chains have not mixed.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data (converted to float64).
        y : array-like of shape (n_samples,)
            Two class labels: {0, 1}, {-1, +1}, booleans or two strings; the second sorted class is
            the positive one.

        Returns
        -------
        self : GibbsRVMClassifier
            The fitted estimator.
        """
        lo, hi = self._check_params()
        X = self._validate_x(X, reset=True)
        _, y_idx = self._class_labels(y, X.shape[0])
        Phi = self._fit_design(X)  # (N, M)
        lo_vec = self._precision_floor(Phi, X, lo, hi)  # (M,)
        alpha0 = self._alpha_start(Phi.shape[1], lo_vec, hi)
        W, A, S = self._run_chains(Phi, y_idx == 1, alpha0, lo_vec, hi)
        self._keep_draws(W, A, S, Phi)
        rhat = self._summarise(W, A)
        self._warn_unmixed(rhat)
        return self

    def _fit_design(self, X):
        """Fit the basis on ``X``; the dense training design, checked to be finite."""
        self.basis_ = make_basis(
            self.kernel, gamma=self.gamma, degree=self.degree, coef0=self.coef0
        )
        self.basis_.fit(X)
        Phi = self._design(X)
        if not np.all(np.isfinite(Phi)):
            msg = "the basis matrix has NaN or infinite values; check the kernel and gamma."
            raise DataError(msg)
        return Phi

    def _precision_floor(self, Phi, X, lo, hi):
        """Lower bound of each weight's precision: ``alpha_lower``, ``1e-8 ||Phi_j||^2``, 1e-100.

        Refuses basis functions so large that the floor reaches ``alpha_max`` (see the module's
        notes on ``_ALPHA_FLOOR_REL``).
        """
        col_sq = np.einsum("ij,ij->j", Phi, Phi)  # (M,) data precision ||Phi_j||^2 of each weight
        floor = _ALPHA_FLOOR_REL * col_sq  # (M,)
        if self.sample_alpha and np.any(floor >= hi):
            # Clipped to alpha_max, the precisions of these weights would be pinned there, their
            # weights held near 0 (and the tail sampler of the precision never accepts a draw).
            j = int(np.argmax(floor))
            msg = (f"{int((floor >= hi).sum())} basis function(s) have a squared norm up to "
                   f"{col_sq[j]:.3g} (largest |x| in X: {np.max(np.abs(X)):.3g}): their precision "
                   f"floor ({floor[j]:.3g}, 1e-8 times that) reaches alpha_max ({hi:.3g}) and "
                   "would pin their weights at 0; standardise X (or raise alpha_max)")
            raise DataError(msg)
        lo_vec = np.maximum(np.maximum(lo, floor), _ALPHA_FLOOR)  # (M,)
        return np.minimum(lo_vec, hi)

    def _run_chains(self, Phi, positive, alpha0, lo_vec, hi):
        """Run ``n_chains`` chains, each on its own child stream of ``random_state``.

        Returns the kept draws of the weights and precisions, ``(n_chains, n_draws, M)`` each,
        and of the noise variance, ``(n_chains, n_draws)``.
        """
        N, M = Phi.shape
        dual = M > _DUAL_RATIO * N
        G = None if dual else Phi.T @ Phi  # (M, M) Gram matrix, reused every sweep
        children = _seed_sequence(self.random_state).spawn(self.n_chains)
        C, K = self.n_chains, self.n_draws
        W = np.empty((C, K, M))
        A = np.empty((C, K, M))
        S = np.empty((C, K))
        fallbacks = [0]
        # One BLAS thread: the sweeps are many small factorisations, for which threading costs more
        # than it gains (measured 3-40x slower on a shared 2-core machine with the default pool).
        with threadpool_limits(limits=1, user_api="blas"):
            for c, seq in enumerate(children):
                rng = np.random.default_rng(seq)
                W[c], A[c], S[c] = _run_chain(
                    Phi,
                    G,
                    positive,
                    alpha0=alpha0,
                    sample_alpha=bool(self.sample_alpha),
                    alpha_shape=float(self.alpha_shape),
                    alpha_rate=float(self.alpha_rate),
                    alpha_lower=lo_vec,
                    alpha_max=hi,
                    sample_noise=bool(self.sample_noise),
                    n_burnin=self.n_burnin,
                    n_keep=K,
                    thin=self.thin,
                    dual=dual,
                    rng=rng,
                    fallbacks=fallbacks,
                )
                logger.debug("GibbsRVMClassifier: chain %d of %d done", c + 1, C)
        self.n_iter_ = self.n_burnin + K * self.thin
        if fallbacks[0]:
            logger.info(
                "GibbsRVMClassifier: %d of %d weight draws used the eigendecomposition fallback "
                "(near-singular precision: unidentified weights with very small alpha).",
                fallbacks[0],
                C * self.n_iter_,
            )
        return W, A, S

    def _keep_draws(self, W, A, S, Phi):
        """Refuse non-finite draws; set the ``*_samples_`` attributes (the intercept apart)."""
        if not (np.isfinite(W).all() and np.isfinite(S).all()):
            # (no silent NaN draws: an overflow in the algebra is refused)
            msg = (f"{int((~np.isfinite(W)).sum())} weight draws are not finite: the basis values "
                   f"(up to {np.max(np.abs(Phi)):.3g}) overflow the sampler's algebra; standardise X")
            raise DataError(msg)
        C, K, M = W.shape
        n_basis = M - int(self.fit_intercept)  # the intercept is the last column
        self.coef_samples_ = W[:, :, :n_basis]
        self.alpha_samples_ = A[:, :, :n_basis]
        self.noise_variance_samples_ = S
        if self.fit_intercept:
            self.intercept_samples_ = W[:, :, -1]
            self.intercept_alpha_samples_ = A[:, :, -1]
        else:
            self.intercept_samples_ = np.zeros((C, K))
            self.intercept_alpha_samples_ = np.full((C, K), np.inf)

    def _summarise(self, W, A):
        """Posterior means, sds, precisions, R-hat and ESS of the weights; returns R-hat ``(M,)``."""
        C, K, M = W.shape
        n_basis = M - int(self.fit_intercept)
        flat = W.reshape(C * K, M)
        mean = flat.mean(axis=0)  # (M,)
        sd = flat.std(axis=0, ddof=1) if C * K > 1 else np.zeros(M)
        with np.errstate(invalid="ignore"):  # inf - inf for weights excluded by alpha_init
            alpha = A.reshape(C * K, M).mean(axis=0)
        if K >= 4:
            with np.errstate(invalid="ignore", divide="ignore"):
                rhat = split_rhat(W)
                ess = effective_sample_size(W)
        else:
            rhat = ess = np.full(M, np.nan)
        # The family's contract: one row (one binary problem), the intercept apart.
        self._set_weight_attributes(
            mean[None, :n_basis], sd[None, :n_basis], alpha[None, :n_basis],
            (mean[-1:], sd[-1:], alpha[-1:]) if self.fit_intercept else None)
        self.rhat_, self.ess_ = rhat[None, :n_basis], ess[None, :n_basis]
        if self.fit_intercept:
            self.intercept_rhat_, self.intercept_ess_ = rhat[-1:], ess[-1:]
        else:
            self.intercept_rhat_ = self.intercept_ess_ = np.full(1, np.nan)
        return rhat

    def _warn_unmixed(self, rhat):
        """One ``ConvergenceWarning`` if the largest R-hat exceeds ``RHAT_WARN``."""
        finite = np.isfinite(rhat)
        if not finite.any():
            return
        j = int(np.flatnonzero(finite)[np.argmax(rhat[finite])])
        worst = float(rhat[j])
        if worst <= RHAT_WARN:
            return
        which = "the intercept" if self.fit_intercept and j == rhat.size - 1 else f"weight {j}"
        msg = (
            f"The Gibbs chains have not mixed: max split-R-hat = {worst:.3f} ({which}) > "
            f"{RHAT_WARN}. Run more draws (increase n_draws and n_burnin) before using "
            "the posterior summaries."
        )
        if self.sample_alpha and self.alpha_rate == 0:
            msg += (
                " With alpha_rate=0 (the paper's flat prior on alpha) the posterior is "
                "improper and longer runs may not help; a proper prior "
                "(alpha_rate > 0) does."
            )
        warnings.warn(msg, ConvergenceWarning, stacklevel=3)

    # -- posterior summaries -------------------------------------------------------------------
    def credible_interval(self, level: float = 0.95):
        """Equal-tailed posterior credible interval of each weight, from the pooled draws.

        Parameters
        ----------
        level : float, default=0.95
            Posterior mass inside the interval, in (0, 1).

        Returns
        -------
        lower, upper : ndarray of shape (1, n_basis)
            The ``(1 - level) / 2`` and ``(1 + level) / 2`` quantiles of each weight, in the shape
            of ``coef_`` (those of the intercept come from ``intercept_samples_``).
        """
        check_is_fitted(self, "coef_samples_")
        if not (isinstance(level, numbers.Real) and 0 < level < 1):
            msg = f"level must be a float strictly between 0 and 1; got {level!r}."
            raise ValueError(msg)
        flat = self.coef_samples_.reshape(-1, self.coef_samples_.shape[2])
        q = np.quantile(flat, [(1 - level) / 2, (1 + level) / 2], axis=0)
        return q[:1], q[1:]

    # -- prediction ----------------------------------------------------------------------------
    def _latent_draws(self, X):
        """Standardised latent f / sigma for every kept draw: shape (n_test, n_draws)."""
        check_is_fitted(self, "coef_samples_")
        Phi = self._design(self._validate_x(X, reset=False))  # (n, M): the basis, then the intercept's ones
        W = self.coef_samples_.reshape(-1, self.coef_samples_.shape[2])  # (S, n_basis)
        if self.fit_intercept:
            W = np.hstack([W, self.intercept_samples_.reshape(-1, 1)])  # (S, M)
        sd = np.sqrt(self.noise_variance_samples_.reshape(-1))  # (S,)
        return (Phi @ W.T) / sd  # (n, S)

    def predict_log_proba(self, X):
        """Log of the posterior predictive class probabilities.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Data to classify.

        Returns
        -------
        log_proba : ndarray of shape (n_samples, 2)
            ``log mean_s Phi(-f_s)`` and ``log mean_s Phi(f_s)``, columns in ``classes_`` order.
        """
        F = self._latent_draws(X)
        log_S = np.log(F.shape[1])
        # log Phi in log space, averaged by logsumexp: exact also when one class has tiny mass.
        lp1 = logsumexp(log_ndtr(F), axis=1) - log_S
        lp0 = logsumexp(log_ndtr(-F), axis=1) - log_S
        # Rounding guard: logsumexp - log S of values <= 0 can exceed 0 by an ulp (a probability of
        # 1 + 2e-16); clamping the log at 0 changes nothing else.
        return np.minimum(np.column_stack([lp0, lp1]), 0.0)

    def predict_proba(self, X):
        """Posterior predictive class probabilities, averaged over every kept draw.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Data to classify.

        Returns
        -------
        proba : ndarray of shape (n_samples, 2)
            ``P(y = classes_[k] | x, data)``; rows sum to 1.
        """
        return np.exp(self.predict_log_proba(X))

    def decision_function(self, X):
        """Log-odds of the posterior predictive probability of ``classes_[1]``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Data to classify.

        Returns
        -------
        scores : ndarray of shape (n_samples,)
            Positive where ``predict`` returns ``classes_[1]``.
        """
        lp = self.predict_log_proba(X)
        return lp[:, 1] - lp[:, 0]

    def predict(self, X):
        """Most probable class under the posterior predictive distribution.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Data to classify.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Labels from ``classes_``.
        """
        positive = self.decision_function(X) > 0
        return self.classes_[positive.astype(np.intp)]
