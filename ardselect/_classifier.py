"""ARDClassifier: sparse probit classification by EP along the ARD path, the model size chosen honestly."""

from __future__ import annotations

import copy
import logging
import warnings
from numbers import Integral, Real

import numpy as np
import pandas as pd
import scipy.sparse as sp
from sklearn.base import ClassifierMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted

from ._base import ConstantFeatureWarning, _ARDPathEstimator, _Chosen, label
from ._basis import make_basis
from ._certainty import class_contrast, column_sd, inclusion_certainty, leave_one_out_sq
from ._constraints import Interval, Options, SklearnConstraints, check_params
from ._criteria import CRITERIA, check_criterion, choose_step, group_cavities
from ._cv import NULL_SE, Calibration, cross_validate
from ._ep import LatentPosterior
from ._lazy import LazyDesign, default_client
from ._parallel import one_blas_thread, run_tasks
from ._probit import moderated_latent, probit_log_proba
from ._problem import SIZE_GRID, PathSpec, run_binary, run_joint, signed
from ._sequential import score_candidates
from ._validation import check_binary_labels, n_rows, take_rows
from .exceptions import DataError, LabelError
from .model import Posterior

__all__ = ["INTERCEPT_ALPHA", "ARDClassifier", "ConstantFeatureWarning"]

logger = logging.getLogger("ardselect")

#: Default prior precision of the intercept (sd 10 latent units): weak, but proper.
INTERCEPT_ALPHA = 1e-2


def _from_dask(X, y):
    """A dask array ``X`` (row chunks, dense or sparse) as something ``_sketch`` can index.

    Returns ``(X, y, client)``: ``y`` in memory; ``client`` is the user's dask.distributed Client
    when one is running (never created here), else the string ``"local"``; None for in-memory ``X``.
    """
    if not (type(X).__module__.split(".")[0] == "dask" and hasattr(X, "chunks")):
        return X, y, None
    if hasattr(y, "compute"):
        y = y.compute()
    y = np.asarray(y)
    client = default_client()
    return _DaskRows(X), y, _LocalDask() if client is None else client


class _DaskRows:
    """Row access to a dask array for ``_sketch``: ``rows`` selects lazily, ``compute`` gathers."""

    def __init__(self, X, rows=None):
        self.X = X
        self.rows = rows
        self.shape = X.shape if rows is None else (len(rows), X.shape[1])

    def __len__(self):
        return self.shape[0]

    def take(self, rows):
        return _DaskRows(self.X, rows)

    def compute(self):
        X = self.X if self.rows is None else self.X[np.asarray(self.rows)]
        out = X.compute()
        return out.tocsr() if sp.issparse(out) else np.asarray(out)


class _LocalDask:
    """No dask Client running: classes run in this process (or by ``n_jobs``), as in memory."""

    def __bool__(self):
        return False


def stratified_sketch(codes, max_samples):
    """Rows of a deterministic stratified sketch: the same fraction of every class, evenly spaced.

    ``codes`` are integer class codes ``(n,)``. The ``max_samples`` rows are shared out in
    proportion to the class sizes by largest remainders (so they add up to ``max_samples``, never
    more, unless there are more classes than that), with at least one row per class; each class's rows are evenly spaced over its rows in
    input order. Returns sorted row indices.

    Examples
    --------
    >>> stratified_sketch(np.array([0] * 71 + [1] * 76 + [2] * 93), 100).size
    100
    """
    codes = np.asarray(codes)
    labels, sizes = np.unique(codes, return_counts=True)
    quota = sizes * (max_samples / codes.shape[0])
    k = np.floor(quota).astype(int)
    spare = int(max_samples) - int(k.sum())
    if spare > 0:  # largest remainders first, ties to the larger class
        k[np.lexsort((-sizes, -(quota - k)))[:spare]] += 1
    k = np.maximum(k, 1)
    while k.sum() > max_samples and (k > 1).any():  # the ones given to small classes come back
        over = np.where(k > 1, k - quota, -np.inf)  # from the most over-served classes
        k[np.argmax(over)] -= 1
    rows = [np.flatnonzero(codes == c)[np.unique(np.linspace(0, size - 1, kc).round().astype(int))]
            for c, size, kc in zip(labels, sizes, k, strict=True)]
    return np.sort(np.concatenate(rows))


#: A dask array with more rows than this, fitted without ``max_samples``, is gathered whole with a
#: warning: exact EP on that many samples is slow, and the matrix may not fit in memory.
GATHER_WARN_ROWS = 50_000

def _fit_binary(spec, k, label, y_idx, Phi_s, allowed):
    """One binary problem (class ``k`` against the rest) on the full training set."""
    t = np.where(y_idx == k, 1.0, -1.0)
    run = run_binary(spec, signed(Phi_s, t), allowed, label)
    run.problem.release(Phi_s, t)
    return run


def _path_choice(steps, criterion):
    """The step a path criterion picks among ``steps`` (evidence and LOO records)."""
    return choose_step(np.array([s.stats["log_evidence"] for s in steps]),
                       np.array([s.stats["loo_error"] for s in steps]),
                       np.array([s.stats["loo_prob_error"] for s in steps]), criterion)


class _BinaryFit:
    """Everything kept of one binary problem: the path and the model chosen on it."""

    def __init__(self, positive_class, run, scale, names, intercept_col, signs):
        self.positive_class = positive_class
        self.steps = run.steps
        self.n_path = run.n_path  # the path proper's steps; its pruning tail follows them
        self.converged = run.converged
        self.problem = run.problem
        self.scale = scale  # (m,) column scales of the basis (design = t * basis / scale)
        self.names = names  # (m,) basis function names
        self.intercept_col = intercept_col  # column index of the intercept in the basis, or -1
        self.signs = signs  # (n,) +1 for the problem's class
        self.cv_step = None  # the step the inner cross-validation chose (criterion="cv")
        self.step_calibration = {}  # step -> Calibration fitted by the inner CV
        self.frequency = None  # (m,) share of the fold models of the chosen size holding a column

    def choose(self, criterion, max_genes=None):
        """The step ``criterion`` picks: the paper's criteria read the path proper.

        With ``max_genes`` only steps with at most that many genes compete (the pruning tail's
        too, which holds every smaller size).
        """
        if criterion == "cv":
            if self.cv_step is None:
                msg = "criterion 'cv' is chosen while fitting: fit with criterion='cv' to use it."
                raise ValueError(msg)
            return self.cv_step
        if max_genes is None:
            return _path_choice(self.steps[: self.n_path], criterion)
        idx = [i for i, s in enumerate(self.steps)
               if np.sum(s.active != self.intercept_col) <= max_genes]
        return idx[_path_choice([self.steps[i] for i in idx], criterion)]

    def set_step(self, k):
        """Rebuild the posterior at path step ``k`` with tightly converged EP."""
        s = self.steps[k]
        st = self.problem.fit_sites(s.active, s.alpha, s.state, tol=1e-9)
        self.chosen = k
        self.active = s.active
        self.alpha_scaled = s.alpha
        self.post = st.post
        self.var_scaled = st.post.var()
        self.mean = st.post.mean / self.scale[s.active]  # back to the units of the basis
        self.ep = st

    def cov(self):
        c = self.scale[self.active]
        return self.post.cov() / np.outer(c, c)


class ARDClassifier(ClassifierMixin, _ARDPathEstimator):
    """Sparse Bayesian probit classifier with ARD priors, fitted by Expectation Propagation.

    The model is ``P(y = +1 | x) = Phi(w . phi(x))`` with independent priors
    ``w_j ~ N(0, 1 / alpha_j)``. ``fit`` runs the sequential add / delete / re-estimate algorithm
    of Faul & Tipping on EP's virtual regression, refreshing EP after every step and recording the
    EP evidence, the EP leave-one-out error and the LOO error probability at each step (the
    *path*; Qi, Minka, Picard & Ghahramani 2004). By default (``criterion="cv"``) the path is
    continued down to a single gene (its pruning tail), so that it holds an ARD model of every
    size, and the size is chosen by an inner cross-validation that refits the path on each fold
    and scores every size on the held-out samples (the *frontier*, ``cv_results_``), as glmnet
    chooses its penalty along its path. The same folds calibrate the chosen model's
    probabilities. With more than two classes, one binary problem per class is fitted
    (one-vs-rest), each with its own genes or, with ``multiclass="shared"``, all with the same
    genes. The user guide, "Choosing the model", explains the choices and their measured effect.

    Parameters
    ----------
    criterion : {"cv", "loo", "loo-prob", "evidence"}, default="cv"
        How the model is chosen. ``"cv"``: the model size of lowest held-out log-loss in an inner
        ``cv``-fold cross-validation along the path (``cv_rule``, ``max_genes``). The paper's
        criteria read the path records alone: the smallest EP leave-one-out error (``"loo"``,
        predictive ARD; ties go to the first such step), the smallest LOO error probability
        (``"loo-prob"``), or the largest EP evidence (``"evidence"``).
    kernel : {"features", "linear", "rbf", "poly"} or callable, default="features"
        The basis. ``"features"`` uses the input features themselves (gene selection). Any other
        value centres one kernel function on each training point (scikit-learn SVC convention),
        and the selected basis functions are relevance vectors.
    gamma : float or {"scale", "auto"}, default="scale"
        Kernel coefficient for "rbf" and "poly" (``gamma = 1 / (2 sigma^2)`` for an RBF width
        sigma).
    degree : int, default=3
        Degree of the "poly" kernel.
    coef0 : float, default=1.0
        Constant term of the "poly" kernel.
    fit_intercept : bool, default=True
        Add a constant basis function (the intercept).
    intercept_alpha : float > 0 or "ard", default=0.01
        Prior precision of the intercept. A number holds the intercept in every model of the path
        at that precision (0.01: a prior sd of 10 latent units, nearly flat), so that the model
        does not depend on where a gene's zero lies. ``"ard"`` gives the intercept its own ARD
        precision, competing like any feature and prunable, as in the paper.
    init : {"auto", "relevant", "single"} or int, default="auto"
        Starting model of the path. ``"relevant"`` starts from every feature that is relevant on
        its own (``theta_j > 0`` on the initial virtual targets, each at its own optimal
        precision; at most ``max_init`` of them), the paper's "small fraction of features".
        ``"single"`` starts from the single best basis function, as in Tipping & Faul; an int k
        from the k best. ``"auto"`` is ``"relevant"`` for the feature basis and ``"single"`` for
        kernel bases.
    max_init : "auto", int >= 1 or None, default="auto"
        Upper bound on the size of the starting model (the best features by their individual
        evidence gain). ``"auto"`` is ``min(n_samples, 100)``; None is no bound.
    max_steps : int >= 0, default=2000
        Maximum number of add / delete / re-estimate steps of the path proper.
    tol : float >= 0, default=0.01
        The path stops when no action increases the log marginal likelihood of the virtual
        regression by more than ``tol`` nats (EP's evidence is not meaningful to finer than
        that).
    alpha_min : float >= 0, default=10.0
        Lower bound on the ARD precisions, on the scale of unit root-mean-square features: a
        prior standard deviation of at most ``1 / sqrt(alpha_min)`` (0.32) latent units per
        feature sd. With separable classes (the rule with genes >> samples) the evidence keeps
        growing as the precisions of separating features go to 0; the bound ends that drift, and
        spreads the prediction over several genes with moderate weights. The paper used 0.01.
    patience : int >= 0, default=20
        The path also stops when the EP evidence has not risen by more than ``tol`` over the
        last ``patience`` steps (EP refreshes can make the sequential updates cycle).
    inclusion_penalty : float >= 0 or "bic", default=0.0
        Prior log odds against a gene, in nats: the path maximises the log evidence minus this
        much per gene in the model (the intercept is free). 0 is the paper's type-II maximum
        likelihood; ``"bic"`` is ``log(n_samples) / 2``. With ``criterion="cv"`` the size is
        chosen on held-out data, so the penalty only shapes the path.
    cv : int >= 2, default=5
        Folds of the inner cross-validation (``criterion="cv"``), at most the size of the
        smallest class.
    cv_repeats : int >= 1, default=1
        Repeats of the inner cross-validation, each with new folds; the frontier pools every
        repeat's held-out predictions of every sample.
    cv_rule : {"min", "1se"}, default="min"
        The size chosen on the frontier: the one of lowest held-out log-loss, or the smallest
        within one standard error of it (glmnet's ``lambda.1se``: fewer genes, a little less
        accurate).
    max_genes : int >= 1 or None, default=None
        The gene budget: the best model with at most this many genes per binary problem (the
        frontier is cut there; the paper's criteria choose among such steps). None: no budget.
    multiclass : {"ovr", "shared"}, default="ovr"
        With more than two classes: ``"ovr"`` fits one path and chooses one size per class (the
        class against the rest), so each class has its own genes and the model uses their
        union. ``"shared"`` gives every gene one prior precision for all the classes' problems
        (group ARD): one path adds, deletes and re-estimates a gene for all classes at once by
        their summed evidence, so every class uses the same genes, each with its own weights,
        and one size is chosen for all, by the multi-class held-out log-loss. Two-class fits are
        the same either way.
    variance_scale_min : float in [0, 1], default=0.5
        With ``criterion="cv"``, the smallest *variance scale* ``s`` the calibration may fit:
        the chosen model predicts ``Phi(a + T m / sqrt(1 + s v))``, ``v`` the posterior variance
        of the latent, ``s`` fitted with the temperature ``T`` and offset ``a`` on the held-out
        predictions. ``1`` keeps the full Bayesian predictive; ``0`` lets the calibration go as
        far as the point estimate.
    random_state : int, RandomState instance or None, default=0
        Seeds the folds of the inner cross-validation (the only random choice of a fit; the path
        itself is deterministic). The default makes every fit reproducible.
    loo_prob_scale : float > 0, default=50.0
        Pre-scale of ``z_i`` in the LOO error probability (the paper's eq. 13 and its value 50).
    damping : float in (0, 1], default=1.0
        Largest fraction of the full EP step taken per parallel sweep. The step halves
        automatically when successive sweeps oscillate and grows back when they agree.
    ep_tol : float > 0, default=1e-5
        EP convergence tolerance along the path (the chosen model is refined to 1e-9).
    ep_max_iter : int >= 1, default=200
        Maximum EP sweeps per path step.
    constant_features : {"warn", "ignore", "raise"}, default="warn"
        What to do with constant (e.g. all-zero) features: keep them out of the model (ranked
        last) with a :class:`ConstantFeatureWarning` naming how many, keep them out silently, or
        raise a :class:`~ardselect.DataError`. Inside cross-validation folds of sparse or floored
        data some genes are constant by chance, so the default does not break composition.
    max_samples : int >= 2 or None, default=None
        Fit on a stratified *sketch* of at most this many samples when there are more: the same
        fraction of every class, evenly spaced in input order within each class
        (deterministic). ``None`` fits every sample (exact EP). ``sketch_`` holds the rows used.
    n_jobs : int or None, default=None
        Binary problems and the fits of the inner cross-validation's folds in parallel threads
        (``None`` = 1, ``-1`` = all cores), sharing the design in memory; with a dask Client
        running and a dask array as ``X``, they run as tasks on it. Results do not depend on it.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    coef_ : ndarray of shape (n_problems, n_basis)
        Posterior mean of the weights, 0 outside the model. One row per binary problem: one for
        two classes (``classes_[1]`` against ``classes_[0]``), one per class (against the rest)
        otherwise. ``n_basis`` is ``n_features_in_`` for the default basis and the number of
        training samples for a kernel basis. Never holds the intercept.
    coef_sd_ : ndarray of shape (n_problems, n_basis)
        Posterior standard deviation of the weights, 0 outside the model.
    alpha_ : ndarray of shape (n_problems, n_basis)
        ARD precisions in the units of the input, ``inf`` outside the model.
    intercept_, intercept_sd_, intercept_alpha_ : ndarray of shape (n_problems,)
        Posterior mean, standard deviation and precision of the intercept (0, 0 and ``inf`` if
        it was pruned or ``fit_intercept=False``).
    path_ : pandas.DataFrame
        One row per step and binary problem: ``class`` (the problem's positive class), ``step``,
        ``action`` ("init", "add", "delete", "reestimate"; "prune" for the deletions of the
        pruning tail that ``criterion="cv"`` adds after the path proper), ``feature`` (empty when
        a prune deleted several genes at once), ``n_basis`` (basis functions in the model, the
        intercept excluded), ``log_evidence``, ``loo_error``, ``loo_prob_error``, ``ep_sweeps``.
    cv_results_ : pandas.DataFrame
        The frontier (``criterion="cv"``): one row per binary problem and model size, ``class``,
        ``n_genes``, ``step`` (its step on the full path), ``cv_log_loss`` and
        ``cv_log_loss_se`` (pooled held-out log-loss after the offset and temperature, and its
        standard error), ``cv_error`` and ``cv_error_se``, ``temperature``, ``variance_scale``
        and ``offset`` (the size's calibration; the variance scale is fitted for the chosen and
        the ``one_se`` sizes, 1 for the others), ``cv_log_loss_final`` (the log-loss with it),
        ``chosen`` and ``one_se`` (the size ``cv_rule="1se"`` picks).
    temperature_, variance_scale_, calibration_offset_ : ndarray of shape (n_problems,)
        Each problem's calibration ``P = Phi(a + T m / sqrt(1 + s v))``: fitted by the inner
        cross-validation for the sizes it scored, else 1, 1 and 0.
    combine_temperature_ : float
        Temperature of the multi-class combination (1 for two classes or a model the inner
        cross-validation did not choose).
    chosen_step_ : ndarray of int of shape (n_problems,)
        Path step chosen by ``criterion`` for each binary problem (the rows of ``coef_``).
    support_ : ndarray of bool, shape (n_features_in_,)
        Features in the chosen model (of any class).
    posteriors_ : list of Posterior
        Posterior of each binary problem's weights (portable: :class:`ardselect.model.Posterior`).
    relevance_vectors_ : ndarray of int
        With a kernel basis: training points whose functions are in the model (any class).
    n_iter_ : int
        Largest number of path steps taken by a binary problem.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when X has string column names.

    See Also
    --------
    ardselect.ep_probit : EP at fixed precisions.
    ardselect.RVMClassifier : the Laplace-approximation ARD (Seq-ARD-Laplace).

    Notes
    -----
    With far more genes than samples every score computed on the training data after the genes
    were chosen (the evidence, the EP leave-one-out error) is optimistic for the models selection
    favoured, so ``criterion="cv"`` scores sizes on held-out folds, each fold's path refitted on
    its training part exactly as on the whole training set (columns rescaled on the fold). A size
    with genes must beat the intercept-only model on the held-out folds by one paired standard
    error, else the model is the intercept alone and the signature empty. The temperature
    (at most 1) only softens a model; the offset moves a softened model toward the class
    frequencies; the variance scale discounts at most ``1 - variance_scale_min`` of the latent's
    posterior variance.

    The sequential updates maximise the marginal likelihood of EP's virtual regression for the
    current sites; EP then moves the sites. The two do not always agree, so the path can cycle:
    an addition that lowers the refreshed evidence is undone, and the path stops when the EP
    evidence stalls for ``patience`` steps. EP runs in float64 whatever the input dtype; sparse X
    stays sparse (never densified whole). Features are internally scaled to unit root mean
    square, which leaves the model unchanged (ARD is scale-invariant) and keeps the algebra well
    conditioned. When the model holds more basis functions than samples, the posterior algebra
    runs in sample space.

    References
    ----------
    Qi, Y., Minka, T. P., Picard, R. W., Ghahramani, Z. (2004). Predictive automatic relevance
    determination by expectation propagation. ICML.
    Faul, A. C., Tipping, M. E. (2002). Analysis of sparse Bayesian learning. NIPS 14.
    Friedman, J., Hastie, T., Tibshirani, R. (2010). Regularization paths for generalized linear
    models via coordinate descent. Journal of Statistical Software 33(1).

    Examples
    --------
    >>> import numpy as np
    >>> from ardselect import ARDClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(60, 30))
    >>> y = (X[:, 3] - X[:, 7] > 0).astype(int)
    >>> clf = ARDClassifier().fit(X, y)
    >>> bool(clf.get_support()[[3, 7]].all())
    True
    >>> clf.predict(X[:3]).shape
    (3,)
    """

    def __init__(self, *, criterion="cv", kernel="features", gamma="scale", degree=3,
                 coef0=1.0, fit_intercept=True, init="auto", max_init="auto", max_steps=2000,
                 tol=1e-2, alpha_min=10.0, patience=20, inclusion_penalty=0.0,
                 intercept_alpha=INTERCEPT_ALPHA, cv=5, cv_repeats=1, cv_rule="min",
                 max_genes=None, multiclass="ovr", variance_scale_min=0.5, random_state=0,
                 loo_prob_scale=50.0, damping=1.0, ep_tol=1e-5, ep_max_iter=200,
                 constant_features="warn", max_samples=None, n_jobs=None):
        self.criterion = criterion
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
        self.inclusion_penalty = inclusion_penalty
        self.intercept_alpha = intercept_alpha
        self.cv = cv
        self.cv_repeats = cv_repeats
        self.cv_rule = cv_rule
        self.max_genes = max_genes
        self.multiclass = multiclass
        self.variance_scale_min = variance_scale_min
        self.random_state = random_state
        self.loo_prob_scale = loo_prob_scale
        self.damping = damping
        self.ep_tol = ep_tol
        self.ep_max_iter = ep_max_iter
        self.constant_features = constant_features
        self.max_samples = max_samples
        self.n_jobs = n_jobs

    #: The parameter contract, checked by scikit-learn's validation at the start of ``fit``.
    _constraints: dict = {
        **_ARDPathEstimator._path_constraints,
        "criterion": [Options(set(CRITERIA))],
        "cv": [Interval(Integral, 2, None, closed="left")],
        "cv_repeats": [Interval(Integral, 1, None, closed="left")],
        "cv_rule": [Options({"min", "1se"})],
        "max_genes": [Interval(Integral, 1, None, closed="left"), None],
        "multiclass": [Options({"ovr", "shared"})],
        "variance_scale_min": [Interval(Real, 0, 1, closed="both")],
        "random_state": ["random_state"],
        "init": [Options({"auto", "relevant", "single"}), Interval(Integral, 1, None, closed="left")],
        "max_init": [Options({"auto"}), Interval(Integral, 1, None, closed="left"), None],
        "inclusion_penalty": [Interval(Real, 0, None, closed="left"), Options({"bic"})],
        "intercept_alpha": [Interval(Real, 0, None, closed="neither"), Options({"ard"})],
        "loo_prob_scale": [Interval(Real, 0, None, closed="neither")],
        "damping": [Interval(Real, 0, 1, closed="right")],
        "ep_tol": [Interval(Real, 0, None, closed="neither")],
        "ep_max_iter": [Interval(Integral, 1, None, closed="left")],
        "constant_features": [Options({"warn", "ignore", "raise"})],
        "max_samples": [Interval(Integral, 2, None, closed="left"), None],
        "n_jobs": [Integral, None],
    }
    _parameter_constraints = SklearnConstraints()  # for scikit-learn's checks

    # ------------------------------------------------------------------ fitting
    def fit(self, X, y):
        """Run the ARD path on (X, y) and keep the model chosen by ``criterion``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data (samples x genes). NaN or infinite values raise :class:`DataError`.
        y : array-like of shape (n_samples,)
            Class labels: {0, 1}, {-1, +1}, booleans, strings; more than two classes are fitted
            one-vs-rest.

        Returns
        -------
        self : ARDClassifier
        """
        check_params(self)  # scikit-learn: one clear error naming the parameter and its range
        if y is None:
            msg = f"{type(self).__name__} requires y to be passed, but the target y is None."
            raise LabelError(msg)
        X, y, client = _from_dask(X, y)
        X, y = self._sketch(X, y)
        # A dask array fitted whole with the gene basis stays where it is: every pass the path
        # makes over the design is a dask reduction over its row chunks (``_lazy.LazyDesign``).
        lazy = client is not None and self.sketch_ is None and self.kernel == "features"
        if lazy:
            if X.shape[0] > GATHER_WARN_ROWS:
                warnings.warn(
                    f"max_samples is None: the exact fit reads all {X.shape[0]:,} rows of the "
                    "dask array a few times at every path step; pass max_samples (e.g. 5000) to "
                    "fit a stratified sketch instead.", UserWarning, stacklevel=2)
            X = self._validate_lazy(X.X)
            client = None  # the passes use the active scheduler; the classes run here
        elif client is not None:
            if self.sketch_ is None and X.shape[0] > GATHER_WARN_ROWS:
                warnings.warn(
                    f"max_samples is None: all {X.shape[0]:,} rows of the dask array are gathered "
                    "into memory and fitted exactly; pass max_samples (e.g. 5000) to fit a "
                    "stratified sketch instead.", UserWarning, stacklevel=2)
            X = X.compute()  # the sketch's rows (or everything), gathered from the chunks
        if not lazy:
            X = self._validate_x(X, reset=True)
        classes, y_idx = check_binary_labels(y, X.shape[0])
        self.classes_ = classes
        basis = make_basis(self.kernel, self.gamma, self.degree, self.coef0)
        Phi_s, scale, allowed = self._prepare_design(X, basis,
                                                     constant_features=self.constant_features)
        problems = [1] if classes.size == 2 else list(range(classes.size))
        # multiclass="shared": one path for all classes, the genes' precisions shared.
        self._joint = self.multiclass == "shared" and classes.size > 2
        spec = self._path_spec(Phi_s.shape[0])
        with one_blas_thread():
            self._fit_problems(spec, problems, classes, y_idx, Phi_s, allowed, scale, client)
            if self.criterion == "cv":
                self._cross_validate(spec, problems, y_idx, Phi_s, allowed, client)
        self._set_steps([f.choose(self.criterion, self.max_genes) for f in self._fits])
        if lazy:
            self._n_passes = X.n_passes
            logger.info("exact fit on the dask array: %d passes over its row chunks", X.n_passes)
        extra = {name: (lambda s, n=name: s.stats[n])
                 for name in ("loo_error", "loo_prob_error", "ep_sweeps")}
        self.path_ = pd.concat([self._path_frame(f.steps, extra, problem_label=f.positive_class)
                                for f in self._fits], ignore_index=True)
        return self

    def _path_spec(self, n_samples):
        """The settings of every path run of this fit (the full fit's and the folds')."""
        init = self.init
        if init == "auto":
            init = "relevant" if self._is_features else "single"
        fixed = None
        if self.intercept_alpha != "ard" and self._icol >= 0:
            fixed = {self._icol: float(self.intercept_alpha)}  # held in every model
        penalty = (0.5 * np.log(n_samples) if self.inclusion_penalty == "bic"
                   else float(self.inclusion_penalty))
        # The pruning tail: down to every size of the frontier (and to the gene budget itself),
        # for criterion="cv", or within the gene budget for the paper's criteria.
        sizes = None
        if self.criterion == "cv" or self.max_genes is not None:
            grid = set(SIZE_GRID) | ({int(self.max_genes)} if self.max_genes is not None else set())
            if fixed is None or self.criterion != "cv":
                grid.discard(0)  # no intercept-only model to fall back to (or to choose)
            sizes = tuple(sorted(grid))
        return PathSpec(init=init, max_init=self.max_init, max_steps=self.max_steps,
                        tol=self.tol, alpha_min=self.alpha_min, patience=self.patience,
                        penalty=penalty, icol=self._icol, fixed=fixed,
                        loo_prob_scale=self.loo_prob_scale, damping=self.damping,
                        ep_tol=self.ep_tol, ep_max_iter=self.ep_max_iter, sizes=sizes)

    def _validate_lazy(self, X):
        """A dask array as a :class:`~ardselect._lazy.LazyDesign`, checked as ``_validate_x`` checks.

        One pass (the per-gene moments, kept for the scales and the constant genes) finds NaN or
        infinite values. Sets ``n_features_in_``; a dask array has no feature names.
        """
        if X.ndim != 2 or X.shape[0] < 1 or X.shape[1] < 1:
            msg = f"Expected a non-empty 2D array, got a dask array of shape {X.shape}."
            raise DataError(msg)
        if not (np.issubdtype(X.dtype, np.number) or np.issubdtype(X.dtype, np.bool_)):
            msg = f"X must be numeric, got a dask array of dtype {X.dtype}."
            raise DataError(msg)
        design = LazyDesign(X, intercept=False)
        mo = design.moments()
        bad = ~(np.isfinite(mo["mean"]) & np.isfinite(mo["min"]) & np.isfinite(mo["max"]))
        if bad.any():
            msg = (f"{type(self).__name__}: X contains NaN or infinite values in "
                   f"{int(bad.sum())} column(s), the first is column {int(np.argmax(bad))}.")
            raise DataError(msg)
        self.n_features_in_ = int(X.shape[1])
        if hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        return design

    def _sketch(self, X, y):
        """Rows of the stratified sketch (``max_samples``), or everything; sets ``sketch_``."""
        n = X.shape[0] if isinstance(X, _DaskRows) else n_rows(X)
        if self.max_samples is None or n <= self.max_samples:
            self.sketch_ = None
            return X, y
        y_arr = np.asarray(y)
        if y_arr.shape[0] != n:
            return X, y  # validation reports the mismatch
        _, codes = np.unique(y_arr, return_inverse=True)
        rows = stratified_sketch(codes, self.max_samples)
        self.sketch_ = rows
        logger.info("fitting on a stratified sketch of %d of %d samples", rows.size, n)
        if isinstance(X, _DaskRows):
            return X.take(rows), take_rows(y, rows)
        return take_rows(X, rows), take_rows(y, rows)

    def _tasks(self, fn, args, client):
        return run_tasks(fn, args, n_jobs=self.n_jobs, client=client)

    def _fit_problems(self, spec, problems, classes, y_idx, Phi_s, allowed, scale, client=None):
        """Run every problem's path on the full training set; sets ``_fits`` and ``n_iter_``."""
        if self._joint:
            runs = run_joint(spec, Phi_s, y_idx, allowed)
        else:
            # hash=False: a content-hashed key would be shared with the inner-CV scatter of the
            # same matrix, and releasing one future would lose the other's data on the workers.
            design = Phi_s
            if client and len(problems) > 1:
                design = client.scatter(Phi_s, broadcast=True, hash=False)
            runs = self._tasks(_fit_binary, [(spec, k, classes[k], y_idx, design, allowed)
                                             for k in problems], client)
        self._fits = []
        for k, run in zip(problems, runs, strict=True):
            if not run.converged and not (self._joint and k != problems[0]):
                what = "shared path" if self._joint else f"path for class {label(classes[k])}"
                warnings.warn(
                    f"The {type(self).__name__} {what} stopped at "
                    f"max_steps={self.max_steps} before converging; raise max_steps (the chosen "
                    "model is still valid).", ConvergenceWarning, stacklevel=3)
            if run.problem.n_ep_unconverged:
                logger.info("EP hit ep_max_iter at %d path steps", run.problem.n_ep_unconverged)
            self._fits.append(_BinaryFit(classes[k], run, scale, self._basis_names, self._icol,
                                         np.where(y_idx == k, 1.0, -1.0)))
        self.n_iter_ = max(f.n_path - 1 for f in self._fits)

    def _cross_validate(self, spec, problems, y_idx, Phi_s, allowed, client=None):
        """Choose each problem's size and calibration by inner cross-validation (``_cv``)."""
        from sklearn.model_selection import RepeatedStratifiedKFold
        from sklearn.utils import check_random_state

        n = y_idx.shape[0]
        smallest = int(np.bincount(y_idx).min())
        n_folds = min(int(self.cv), smallest)
        if n_folds < 2:
            warnings.warn(
                f"criterion='cv' needs at least 2 samples of every class (the smallest class has "
                f"{smallest}); the model is chosen by criterion='loo' instead.", UserWarning,
                stacklevel=3)
            for fit in self._fits:
                fit.cv_step = fit.choose("loo", self.max_genes)
            self.cv_results_ = pd.DataFrame()
            self._combine_temperature = 1.0
            return
        # Repeat r's held-out latents go to rows r * n ... (r + 1) * n - 1 of the pooled
        # predictions; with one repeat, the folds are those of StratifiedKFold with this seed.
        seed = check_random_state(self.random_state).randint(np.iinfo(np.int32).max)
        splitter = RepeatedStratifiedKFold(n_splits=n_folds, n_repeats=int(self.cv_repeats),
                                           random_state=seed)
        folds = [(tr, te, f // n_folds * n)
                 for f, (tr, te) in enumerate(splitter.split(np.zeros(n), y_idx))]
        design = client.scatter(Phi_s, broadcast=True, hash=False) if client else Phi_s
        fronts, self._combine_temperature = cross_validate(
            spec, self._fits_as_runs(), design, y_idx, problems, allowed, folds,
            lambda fn, args: self._tasks(fn, args, client), joint=self._joint,
            s_min=self.variance_scale_min, rule=self.cv_rule, null_se=NULL_SE,
            max_genes=self.max_genes, labels=[f.positive_class for f in self._fits])
        rows = []
        for fit, front in zip(self._fits, fronts, strict=True):
            recs = front.records
            fit.step_calibration = {r["step"]: front.calibration(i) for i, r in enumerate(recs)}
            fit.cv_step = recs[front.chosen]["step"]
            fit.frequency = front.frequency
            one_se = front.one_se
            for i, r in enumerate(recs):
                rows.append({"class": fit.positive_class, **r, "chosen": i == front.chosen,
                             "one_se": i == one_se})
        cols = ["class", "n_genes", "step", "cv_log_loss", "cv_log_loss_se", "cv_error",
                "cv_error_se", "temperature", "variance_scale", "offset", "cv_log_loss_final",
                "chosen", "one_se"]
        self.cv_results_ = pd.DataFrame(rows, columns=cols)

    def _fits_as_runs(self):
        """The full fit's path runs, as the inner cross-validation reads them."""
        from ._problem import PathRun

        return [PathRun(f.problem, f.steps, f.converged, f.n_path) for f in self._fits]

    def _set_steps(self, steps):
        rows, posts = [], []
        for fit, step in zip(self._fits, steps, strict=True):
            fit.set_step(step)
            rows.append(self._input_units(fit.active, fit.post.mean, fit.var_scaled,
                                          fit.alpha_scaled, fit.scale))
            index = np.where(fit.active != fit.intercept_col, fit.active, -1)
            posts.append(Posterior(index, fit.mean.copy(), fit.cov(), fit.positive_class))
        self._set_weights(rows, [f.chosen for f in self._fits])
        self.posteriors_ = posts
        self._chosen = [_Chosen(f.active, f.scale, f.post) for f in self._fits]
        # The calibration the inner cross-validation fitted belongs to the sizes it scored; any
        # other step predicts with its plain posterior.
        cal = [f.step_calibration.get(f.chosen, Calibration()) for f in self._fits]
        self.temperature_ = np.array([c.temperature for c in cal])
        self.variance_scale_ = np.array([c.variance_scale for c in cal])
        self.calibration_offset_ = np.array([c.offset for c in cal])
        at_cv = all(f.chosen == f.cv_step for f in self._fits)
        self.combine_temperature_ = (float(getattr(self, "_combine_temperature", 1.0))
                                     if at_cv else 1.0)

    # ------------------------------------------------------------------ model choice
    def choose_step(self, criterion):
        """Path step that ``criterion`` picks for each binary problem (within ``max_genes``).

        Returns
        -------
        ndarray of int of shape (n_problems,)
            Aligned with the rows of ``coef_``, as ``chosen_step_``.
        """
        check_is_fitted(self)
        check_criterion(criterion)
        return np.array([f.choose(criterion, self.max_genes) for f in self._fits],
                        dtype=np.intp)

    def at_step(self, step):
        """A fitted copy of this classifier using the model at path ``step``.

        Parameters
        ----------
        step : int or array-like of int of shape (n_problems,)
            The path step of each binary problem, aligned with the rows of ``coef_`` (an int
            when there is one problem). :meth:`choose_step` gives the steps another criterion
            would pick. A ``multiclass="shared"`` fit has one path for all classes: give one
            step (an int, or the same step for every class), so that every class keeps the
            same genes.
        """
        check_is_fitted(self)
        steps = np.atleast_1d(np.asarray(step))
        if getattr(self, "_joint", False):
            if steps.size == 1 and steps.dtype.kind in "iu":
                steps = np.full(len(self._fits), steps[0])
            elif steps.ndim == 1 and np.unique(steps).size > 1:
                msg = (f"a multiclass='shared' fit holds the same genes in every class at each "
                       f"step: give one step for all classes, not {step!r}.")
                raise ValueError(msg)
        if steps.ndim != 1 or steps.size != len(self._fits) or steps.dtype.kind not in "iu":
            msg = (f"step must be an int or an array of {len(self._fits)} int(s), one per binary "
                   f"problem (a row of coef_); got {step!r}.")
            raise ValueError(msg)
        for s, fit in zip(steps, self._fits, strict=True):
            if not 0 <= int(s) < len(fit.steps):
                msg = f"step must be in [0, {len(fit.steps) - 1}]; got {int(s)}."
                raise ValueError(msg)
        new = copy.copy(self)
        new._fits = [copy.copy(f) for f in self._fits]
        new._set_steps([int(s) for s in steps])
        return new

    # ------------------------------------------------------------------ prediction
    def _calibrated(self, X):
        """``a + T m / sqrt(1 + s v)`` of every problem at ``X``: ``(n_samples, n_problems)``."""
        m, v = self._latent(X)
        return (moderated_latent(m, v, self.temperature_, self.variance_scale_)
                + self.calibration_offset_)

    def decision_function(self, X):
        """The calibrated latent ``a + T m / sqrt(1 + s v)`` (per class for multi-class).

        ``m`` and ``v`` are the posterior mean and variance of the latent ``w . phi(x)``; ``a``,
        ``T`` and ``s`` the calibration the inner cross-validation fitted
        (``calibration_offset_``, ``temperature_``, ``variance_scale_``; 0, 1 and 1 otherwise).
        Each binary problem's probability is ``Phi`` of this score, so the score ranks samples
        exactly as :meth:`predict_proba` does (the posterior mean ``m`` alone would not: a
        sample far from the training data has a large ``v``). Its sign gives the prediction;
        multi-class: its argmax.

        Returns
        -------
        ndarray of shape (n_samples,) or (n_samples, n_classes)
        """
        z = self._calibrated(X)
        return z[:, 0] if z.shape[1] == 1 else z

    def predict_proba(self, X):
        """Class probabilities, integrating over the Gaussian weight posterior.

        For each binary problem ``P = Phi(a + T m / sqrt(1 + s v))`` with ``m, v`` the posterior
        mean and variance of the latent and ``a, T, s`` its calibration (:meth:`decision_function`).
        With more than two classes the
        one-vs-rest answers are combined as independent answers conditioned on exactly one class
        being true: ``P(k)`` is proportional to the odds ``P_k / (1 - P_k)`` (see
        :func:`ardselect._probit.probit_log_proba`).

        Returns
        -------
        ndarray of shape (n_samples, n_classes), columns in ``classes_`` order.
        """
        return np.exp(self.predict_log_proba(X))

    def predict_log_proba(self, X):
        """Log of :meth:`predict_proba`, computed in log space."""
        m, v = self._latent(X)
        return probit_log_proba(m, v, self.temperature_, self.combine_temperature_,
                                self.variance_scale_, self.calibration_offset_)

    def predict(self, X):
        """Most probable class (the argmax of :meth:`predict_proba`)."""
        proba = self.predict_proba(X)
        return self.classes_[np.argmax(proba, axis=1)]

    def leave_group_out_proba(self, groups):
        """Class probabilities of each training sample with its whole group left out, from EP.

        For each group (a donor, a patient, a batch: any label per training sample), all of the
        group's EP sites are divided out of the chosen model's posterior at once, which leaves
        EP's approximation of the posterior given the other groups; the group's latents are then
        jointly Gaussian, and each sample's class probabilities follow by the usual rule
        (:meth:`predict_proba`, with the model's calibration). No refit is run. As with EP's per-sample leave-one-out, the
        genes and their precisions stay those chosen on all samples: selection is not redone, so
        the estimate is optimistic where selection itself overfits. Singleton groups give the
        per-sample EP leave-one-out (cavity) probabilities.

        Parameters
        ----------
        groups : array-like of shape (n_training_samples,)
            A group label for every sample ``fit`` saw, in the same order.

        Returns
        -------
        ndarray of shape (n_training_samples, n_classes), columns in ``classes_`` order.
        """
        check_is_fitted(self)
        groups = np.asarray(groups)
        n = self._fits[0].signs.shape[0]
        if groups.ndim != 1 or groups.shape[0] != n:
            msg = f"groups must give one label per training sample ({n}); got shape {groups.shape}"
            raise DataError(msg)
        means, variances = [], []
        for fit in self._fits:
            P = fit.problem.columns(fit.active)  # (n, d) signed, unit-RMS scaled
            mc, vc, _ = group_cavities(fit.post, P, fit.ep.tau, fit.ep.nu, groups)
            means.append(fit.signs * mc)  # back from the signed latent to the class latent
            variances.append(vc)
        return np.exp(probit_log_proba(np.array(means).T, np.array(variances).T,
                                       self.temperature_, self.combine_temperature_,
                                       self.variance_scale_, self.calibration_offset_))

    # ------------------------------------------------------------------ selection
    def ranked_features(self):
        """Every feature (basis function) ranked, for the chosen model of each binary problem.

        Selected features come first, by the size of their standardised weight ``std_weight``
        (how far the latent class score moves per standard deviation of the feature), then by
        ``|z|``; the others follow, by the evidence gain they would bring if added to the chosen
        model. Remaining ties keep input order.

        Returns
        -------
        pandas.DataFrame
            One row per feature and binary problem, ordered by class, then rank:

            * ``class``, ``rank`` (1 = best), ``feature``, ``selected``;
            * ``std_weight``: the posterior mean weight times the feature's standard deviation
              in the training data, the change of the latent class score per standard
              deviation of the feature (0 outside the model); its sign is the weight's;
            * ``relevance``: ``1 / alpha*``, the prior variance the evidence would give the
              feature beside the model's other features, on the unit-RMS scale and without the
              floor ``alpha_min`` (the model itself caps it at ``1 / alpha_min``); 0 when the
              evidence would leave a selected feature out, and for features outside the model;
            * ``mean``, ``sd``, ``alpha``: the weight's posterior and the precision the model
              uses (input units; 0, 0 and ``inf`` outside the model);
            * ``entered_step``: first path step with the feature in the model (<NA> if never);
            * ``log_bf``: log Bayes factor of the feature in the model against out of it, the
              others as chosen, under a uniform prior on its weight's prior variance up to
              ``1 / alpha_min`` (:mod:`ardselect._certainty`);
            * ``p_sign``: probability that the weight has the sign of ``mean`` (outside the model:
              the sign it would take if added);
            * ``z``: signed posterior mean / sd of the weight in the model; outside it, the z the
              weight would have if the feature entered with a flat prior, ``q / sqrt(s)``;
            * ``log_bf_marginal``: log Bayes factor of the feature and the intercept against the
              intercept alone (how much it predicts on its own);
            * ``cv_frequency``: share of the inner cross-validation's fold models of the chosen
              size that hold the feature (NaN without ``criterion="cv"``): how reproducible the
              selection is when a fifth of the samples is left out;
            * ``t_stat``: Welch's t statistic of the feature's values in the problem's class
              against the rest (positive: higher in the class), whatever the model.

            ``log_bf``, ``p_sign``, ``z``, ``log_bf_marginal`` and ``t_stat`` are NaN for
            features that cannot enter (constant ones).
        """
        check_is_fitted(self)
        frames = []
        n_basis = self.coef_.shape[1]
        for i, fit in enumerate(self._fits):
            # Potential of the features outside the model: q^2/s on the chosen model's targets.
            st = fit.ep
            tau = st.tau
            t = np.where(tau > 0, st.nu / np.where(tau > 0, tau, 1.0), 0.0)
            design = fit.problem.design  # rebuilt once per problem (see EPProbitProblem.release)
            S, Q = score_candidates(design, st.post, tau, t)
            with np.errstate(divide="ignore", invalid="ignore"):
                potential = np.where(S > 0, Q * Q / S, 0.0)[:n_basis]
            alpha_all = np.full(S.shape, np.inf)
            alpha_all[fit.active] = fit.alpha_scaled
            s_loo, q_loo = leave_one_out_sq(S, Q, alpha_all)
            s_loo, q_loo = s_loo[:n_basis], q_loo[:n_basis]
            selected = np.isfinite(self.alpha_[i])
            # The evidence-optimal prior variance given the others (Tipping & Faul), unfloored.
            with np.errstate(divide="ignore", invalid="ignore"):
                relevance = np.where(selected & (s_loo > 0),
                                     np.maximum(q_loo * q_loo - s_loo, 0.0) / s_loo**2, 0.0)
            log_bf, _, p_pos = inclusion_certainty(s_loo, q_loo, 1.0 / self.alpha_min)
            usable = fit.problem.allowed[:n_basis]
            log_bf = np.where(usable, log_bf, np.nan)
            # The sign the table reports: the posterior mean's for selected genes, else the sign
            # the weight would take if the gene were added.
            p_sign = np.where(usable, np.maximum(p_pos, 1.0 - p_pos), np.nan)
            with np.errstate(divide="ignore", invalid="ignore"):
                z_out = q_loo / np.sqrt(s_loo)
                z_in = self.coef_[i] / self.coef_sd_[i]
            z = np.where(usable, np.where(selected, z_in, z_out), np.nan)
            log_bf_marginal = np.where(usable, self._marginal_log_bf(fit, design)[:n_basis],
                                       np.nan)
            t_stat = class_contrast(fit.problem.basis, fit.signs > 0)[:n_basis]
            t_stat = np.where(usable, t_stat, np.nan)
            frequency = (np.full(n_basis, np.nan) if fit.frequency is None
                         else fit.frequency[:n_basis])
            potential = np.where(usable, potential, -np.inf)
            # basis = input / scale, so sd(input) = scale * sd(basis).
            std_weight = self.coef_[i] * (fit.scale * column_sd(fit.problem.basis))[:n_basis]
            key = np.where(selected, np.abs(std_weight), potential)
            # Selected first, then by key descending, then by |weight / sd|.
            tie = np.where(selected, -np.abs(np.nan_to_num(z)), 0.0)
            order = np.lexsort((tie, -key, ~selected))
            entered = np.full(n_basis, -1)
            for s in reversed(fit.steps):
                cols = s.active[s.active < n_basis] if fit.intercept_col >= 0 else s.active
                cols = cols[cols != fit.intercept_col]
                entered[cols] = s.step
            frames.append(pd.DataFrame({
                "class": fit.positive_class,
                "rank": np.arange(1, n_basis + 1),
                "feature": fit.names[:n_basis][order].astype(str),
                "selected": selected[order],
                "std_weight": std_weight[order],
                "relevance": relevance[order],
                "mean": self.coef_[i, order],
                "sd": self.coef_sd_[i, order],
                "alpha": self.alpha_[i, order],
                "entered_step": pd.array(np.where(entered[order] >= 0, entered[order], -1),
                                         dtype="Int64"),
                "log_bf": log_bf[order],
                "p_sign": p_sign[order],
                "z": z[order],
                "log_bf_marginal": log_bf_marginal[order],
                "cv_frequency": frequency[order],
                "t_stat": t_stat[order],
            }))
        out = pd.concat(frames, ignore_index=True)
        out.loc[out["entered_step"] < 0, "entered_step"] = pd.NA
        return out

    def _marginal_log_bf(self, fit, design):
        """Each column alone (beside the intercept) against the intercept alone: a log BF.

        On the EP sites of the intercept-only model (the intercept at its fixed precision, or with
        ``intercept_alpha="ard"`` at the widest prior the path allows), by the closed form of
        :func:`ardselect._certainty.inclusion_certainty`. Without the intercept, genes high in
        the larger class would score for the class imbalance itself.
        """
        if fit.intercept_col >= 0:
            a0 = self.alpha_min if self.intercept_alpha == "ard" else self.intercept_alpha
            st0 = fit.problem.fit_sites(np.array([fit.intercept_col]), np.array([float(a0)]),
                                        None, tol=1e-9)
            b0 = st0.tau
            t0 = np.where(b0 > 0, st0.nu / np.where(b0 > 0, b0, 1.0), 0.0)
            post0 = st0.post
        else:
            b0, t0 = fit.problem.initial_virtual()
            post0 = LatentPosterior(np.zeros((b0.shape[0], 0)), np.zeros(0), b0, b0 * t0)
        S0, Q0 = score_candidates(design, post0, b0, t0)
        return inclusion_certainty(S0, Q0, 1.0 / self.alpha_min)[0]
