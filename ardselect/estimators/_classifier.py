"""ARDClassifier: sparse probit classification by EP along the ARD path, the model size chosen honestly."""

from __future__ import annotations

import copy
import logging
from numbers import Integral, Real

import numpy as np
import pandas as pd
from sklearn.base import ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from ..choices import CRITERIA, CV_RULES, MULTICLASS, resolve_multiclass
from ..engine._basis import make_basis
from ..engine._design import as_design
from ..engine._parallel import one_blas_thread, run_tasks, task_work
from ..engine._problem import SIZE_GRID, PathSpec, ep_tol_for
from ..engine._rows import (
    from_dask,
    rows_to_fit,
    sketch,
    stratified_sketch,  # noqa: F401 (tests and benchmarks import it from here)
)
from ..engine._validation import check_binary_labels, check_covariates, require_y
from ..exceptions import DataError
from ..numerics._criteria import check_criterion, group_cavities
from ..numerics._probit import moderated_latent, probit_log_proba
from ._base import ConstantFeatureWarning, _ARDPathEstimator, _Chosen
from ._binary_fit import check_steps, fit_problems
from ._calibration import Calibration
from ._certainty import certainty_table
from ._constraints import Interval, Options, check_params
from ._cv import SMALL_N, check_groups, choose_by_cv
from ._neighbourhood import (
    add_certainty_columns,
    certainty_frames,
    certainty_problem,
    solve_certainty,
)
from ._panel import check_panel, choose_panel
from ._posterior import Posterior

__all__ = ["INTERCEPT_ALPHA", "ARDClassifier", "ConstantFeatureWarning"]

logger = logging.getLogger("ardselect")

#: Default prior precision of the intercept (sd 10 latent units): weak, but proper.
INTERCEPT_ALPHA = 1e-2


#: The settings of Qi et al. (2004) that differ from the defaults: the path of the LOO model that
#: ``cv_rule="min+paper"`` sets against the frontier's choice below ``SMALL_N`` samples.
PAPER_SETTINGS = {"alpha_min": 1e-2, "inclusion_penalty": 0.0, "intercept_alpha": "ard",
                  "tol": 1e-5}

#: A dask array with more rows than this, fitted without ``max_samples``, is gathered whole with a
#: warning: exact EP on that many samples is slow, and the matrix may not fit in memory.
GATHER_WARN_ROWS = 50_000


class ARDClassifier(ClassifierMixin, _ARDPathEstimator):
    """Sparse Bayesian probit classifier with ARD priors, fitted by Expectation Propagation.

    The model is ``P(y = +1 | x) = Phi(w . phi(x))`` with independent priors
    ``w_j ~ N(0, 1 / alpha_j)``. ``fit`` runs Faul & Tipping's sequential add / delete /
    re-estimate algorithm on EP's virtual regression, refreshing EP after every step and recording
    the EP evidence, leave-one-out error and LOO error probability of each step (the *path*; Qi,
    Minka, Picard & Ghahramani 2004). With ``criterion="cv"`` the path is continued down to one
    gene, and the number of genes is chosen by an inner cross-validation that refits the path on
    each fold (the *frontier*, ``cv_results_``); the same folds calibrate the probabilities. More
    than two classes are fitted one-vs-rest, or with shared genes (``multiclass``). The user
    guide's "Choosing the model" explains the choices.

    Parameters
    ----------
    criterion : {"cv", "loo", "loo-prob", "evidence"}, default="cv"
        ``"cv"``: the model size of lowest held-out log-loss in an inner cross-validation along
        the path (``cv_rule``, ``max_genes``). The paper's criteria read the path alone: ``"loo"``
        the fewest EP leave-one-out errors (ties: smallest LOO error probability, fewest genes),
        ``"loo-prob"`` the smallest LOO error probability, ``"evidence"`` the largest EP evidence.
    kernel : {"features", "linear", "rbf", "poly"} or callable, default="features"
        ``"features"`` uses the input features (gene selection); any other value centres one
        kernel function on each training point (SVC conventions): relevance vectors.
    gamma : float or {"scale", "auto"}, default="scale"
        Coefficient of the "rbf" and "poly" kernels (``1 / (2 sigma^2)`` for an RBF width sigma).
    degree : int, default=3
        Degree of the "poly" kernel.
    coef0 : float, default=1.0
        Constant term of the "poly" kernel.
    fit_intercept : bool, default=True
        Add a constant basis function (the intercept).
    intercept_alpha : float > 0 or "ard", default=0.01
        Prior precision of the intercept, held in every model (sd 10); ``"ard"``: prunable.
    init : {"auto", "relevant", "single"} or int, default="auto"
        Starting model: every feature relevant on its own (``"relevant"``, at most ``max_init``),
        the single best basis function (``"single"``) or the k best (an int). ``"auto"``:
        ``"relevant"`` for the feature basis, ``"single"`` for kernel bases.
    max_init : "auto", int >= 1 or None, default="auto"
        Largest starting model; ``"auto"`` is ``min(n_samples, 100)``, None no bound.
    max_steps : int >= 0, default=2000
        Largest number of add / delete / re-estimate steps.
    tol : float >= 0, default=0.01
        The path stops when no action gains more than ``tol`` nats of marginal likelihood.
    alpha_min : float >= 0, default=10.0
        Floor of the ARD precisions on unit-RMS features (the paper used 0.01).
    patience : int >= 0, default=20
        The path also stops when the EP evidence has not risen by ``tol`` for this many steps.
    inclusion_penalty : float >= 0 or "bic", default=0.0
        Prior log odds against a gene, in nats per gene in the model: 0 is the paper's type-II
        maximum likelihood, ``"bic"`` is ``log(n_samples) / 2``.
    cv : int >= 2 or "holdout", default=5
        Folds of the inner cross-validation (at most the size of the smallest class), or
        ``"holdout"``: one validation split holding out a fifth of the samples.
    cv_repeats : int >= 1, default=1
        Repeats of the inner cross-validation with new folds, pooled.
    cv_rule : {"min", "1se", "min+paper"}, default="min"
        The size of lowest held-out log-loss, or the smallest within one standard error of it;
        ``"min+paper"``: below 500 samples, that or the paper settings' LOO model (``cv_choice_``).
    max_genes : int >= 1 or None, default=None
        Gene budget: the best model with at most this many genes per binary problem.
    panel : int >= 1 or None, default=None
        At most this many distinct genes over all classes: the frontier's models of least summed
        held-out log-loss within it (guide: "A panel of N genes"). ``criterion="cv"`` only.
    multiclass : {"auto", "ovr", "shared"}, default="auto"
        More than two classes: a path and size per class ("ovr"), or one path for all, each gene's
        precision shared by every class ("shared"); "auto": "shared" with a ``panel``, else "ovr".
    variance_scale_min : float in [0, 1], default=0.5
        Smallest ``s`` of the calibration ``Phi(a + T m / sqrt(1 + s v))`` (1: full predictive).
    random_state : int, RandomState instance or None, default=0
        Seeds the folds of the inner cross-validation, the only random choice of a fit.
    loo_prob_scale : float > 0, default=50.0
        Pre-scale of ``z_i`` in the LOO error probability (the paper's eq. 13).
    damping : float in (0, 1], default=1.0
        Largest fraction of the full EP step per parallel sweep (it halves on oscillation).
    ep_tol : float > 0 or "auto", default="auto"
        EP convergence tolerance along the path (the chosen model is refined to 1e-9);
        ``"auto"``: 1e-5 below 500 training samples, 1e-3 from 500 on.
    ep_max_iter : int >= 1, default=200
        Largest number of EP sweeps per path step.
    constant_features : {"warn", "ignore", "raise"}, default="warn"
        Constant features are kept out with a warning, silently, or refused (DataError).
    max_samples : int >= 2, "auto" or None, default="auto"
        Fit a stratified sketch of at most this many samples (``sketch_``); ``"auto"``: 2,000
        above 2,000, at least 50 of each class, with a warning; None: every sample.
    n_jobs : int or None, default=-1
        Problems and folds in parallel (-1: every core; None or 1: one); same results.
    certainty : bool, default=True
        ``pip_`` and ``credible_sets_`` by spike-and-slab EP on the selection's neighbourhood
        (guide: "How sure is each gene"; feature basis without covariates).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    coef_, coef_sd_ : ndarray of shape (n_problems, n_basis)
        Posterior mean and sd of the weights, 0 outside the model. One row for two classes
        (``classes_[1]`` against ``classes_[0]``), else one per class (against the rest).
    alpha_ : ndarray of shape (n_problems, n_basis)
        ARD precisions in the units of the input, ``inf`` outside the model.
    intercept_, intercept_sd_, intercept_alpha_ : ndarray of shape (n_problems,)
    covariate_coef_, covariate_coef_sd_ : ndarray of shape (n_problems, n_covariates_in_)
        Posterior mean and sd of the weights of the covariates held (``fit(..., covariates=)``).
    path_ : pandas.DataFrame
        One row per step and problem: ``class``, ``step``, ``action`` (init, add, delete,
        reestimate, prune), ``feature``, ``n_basis``, ``log_evidence``, ``loo_error``,
        ``loo_prob_error``, ``ep_sweeps``.
    cv_results_ : pandas.DataFrame
        The frontier: per problem and size ``n_genes``, ``step``, ``cv_log_loss``,
        ``cv_log_loss_se``, ``cv_error``, ``cv_error_se``, the calibration (``temperature``,
        ``variance_scale``, ``offset``), ``cv_log_loss_final``, ``chosen`` and ``one_se``.
    cv_choice_ : pandas.DataFrame (``cv_rule="min+paper"``: the rule kept per class, its scores)
    cv_groups_ : pandas.DataFrame
        After ``fit(X, y, groups=...)``: each group's held-out error and log-loss.
    temperature_, variance_scale_, calibration_offset_ : ndarray of shape (n_problems,)
        The calibration ``P = Phi(a + T m / sqrt(1 + s v))`` of each problem (1, 1, 0 if none).
    combine_temperature_ : float (the temperature of the multi-class combination)
    chosen_step_ : ndarray of int of shape (n_problems,) (the step chosen for each problem)
    support_ : ndarray of bool of shape (n_features_in_,) (in the chosen model of any class)
    pip_ : ndarray of shape (n_problems, n_basis) (inclusion probabilities, NaN if not examined)
    credible_sets_ : pandas.DataFrame (per gene of a set: class, set, feature, pip, ...)
    posteriors_ : list of Posterior (of each problem's selected weights, ardselect.model)
    relevance_vectors_ : ndarray of int (kernel basis: the training points in the model)
    n_iter_ : int (the largest number of path steps of a binary problem)
    n_features_in_, n_covariates_in_ : int
    feature_names_in_ : ndarray of str (only when X has string column names)

    See Also
    --------
    ardselect.diagnostics.ep_probit : EP at fixed precisions.
    ardselect.RVMClassifier : the Laplace-approximation ARD (Seq-ARD-Laplace).

    Notes
    -----
    EP runs in float64 whatever the input dtype; sparse X is never densified whole. Features are
    scaled internally to unit root mean square, which leaves the ARD model unchanged.

    References
    ----------
    Qi, Y., Minka, T. P., Picard, R. W., Ghahramani, Z. (2004). Predictive automatic relevance
    determination by expectation propagation. ICML.
    Faul, A. C., Tipping, M. E. (2002). Analysis of sparse Bayesian learning. NIPS 14.

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
    """

    def __init__(self, *, criterion=CRITERIA[0], kernel="features", gamma="scale", degree=3,
                 coef0=1.0, fit_intercept=True, init="auto", max_init="auto", max_steps=2000,
                 tol=1e-2, alpha_min=10.0, patience=20, inclusion_penalty=0.0,
                 intercept_alpha=INTERCEPT_ALPHA, cv=5, cv_repeats=1, cv_rule=CV_RULES[0],
                 max_genes=None, panel=None, multiclass=MULTICLASS[0], variance_scale_min=0.5, random_state=0,
                 loo_prob_scale=50.0, damping=1.0, ep_tol="auto", ep_max_iter=200,
                 constant_features="warn", max_samples="auto", n_jobs=-1, certainty=True):
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
        self.panel = panel
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
        self.certainty = certainty

    #: The parameter contract, checked by ``check_params`` at the start of ``fit``.
    _constraints: dict = {
        **_ARDPathEstimator._path_constraints,
        "criterion": [Options(set(CRITERIA))],
        "cv": [Interval(Integral, 2, None, closed="left"), Options({"holdout"})],
        "cv_repeats": [Interval(Integral, 1, None, closed="left")],
        "cv_rule": [Options(set(CV_RULES))],
        "max_genes": [Interval(Integral, 1, None, closed="left"), None],
        "panel": [Interval(Integral, 1, None, closed="left"), None],
        "multiclass": [Options(set(MULTICLASS))],
        "variance_scale_min": [Interval(Real, 0, 1, closed="both")],
        "random_state": ["random_state"],
        "init": [Options({"auto", "relevant", "single"}), Interval(Integral, 1, None, closed="left")],
        "max_init": [Options({"auto"}), Interval(Integral, 1, None, closed="left"), None],
        "inclusion_penalty": [Interval(Real, 0, None, closed="left"), Options({"bic"})],
        "intercept_alpha": [Interval(Real, 0, None, closed="neither"), Options({"ard"})],
        "loo_prob_scale": [Interval(Real, 0, None, closed="neither")],
        "damping": [Interval(Real, 0, 1, closed="right")],
        "ep_tol": [Interval(Real, 0, None, closed="neither"), Options({"auto"})],
        "ep_max_iter": [Interval(Integral, 1, None, closed="left")],
        "constant_features": [Options({"warn", "ignore", "raise"})],
        "max_samples": [Interval(Integral, 2, None, closed="left"), Options({"auto"}), None],
        "n_jobs": [Interval(Integral, 1, None, closed="left"),
                   Interval(Integral, None, -1, closed="right"), None],
        "certainty": ["boolean"],
    }

    # ------------------------------------------------------------------ fitting
    def fit(self, X, y, groups=None, *, covariates=None):
        """Run the ARD path on (X, y) and keep the model chosen by ``criterion``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data (samples x genes). NaN or infinite values raise :class:`DataError`.
        y : array-like of shape (n_samples,)
            Class labels: {0, 1}, {-1, +1}, booleans, strings; more than two classes are fitted
            one-vs-rest.
        groups : array-like of shape (n_samples,), optional
            A group label per sample (donor, patient, batch). The inner cross-validation of
            ``criterion="cv"`` then holds out whole groups (scikit-learn's
            ``StratifiedGroupKFold``; ``min(cv, number of groups)`` folds), so the number of
            genes is chosen for new groups, and ``cv_groups_`` reports each group's held-out
            error and log-loss. At least two groups; only with ``criterion="cv"``.
        covariates : array-like of shape (n_samples, n_covariates), optional
            Known covariates (batch, sex, age, percent mitochondrial reads), numeric and already
            encoded (a categorical one as one-hot columns with one level dropped;
            :func:`~ardselect.rank_genes` and the command line encode ``obs`` columns by name).
            They enter every model of the path beside the intercept at its fixed weak prior
            (``intercept_alpha`` on unit-RMS columns; 0.01 with ``"ard"``): never pruned, never
            counted as genes, absent from ``coef_``, ``support_`` and the ranked table. Their
            weights are ``covariate_coef_``. Prediction then needs the same columns
            (``predict(X, covariates=...)``). See the user guide, "Known covariates and
            donor-level signatures".

        Returns
        -------
        self : ARDClassifier
        """
        check_params(self)  # one clear error naming the parameter and its range
        check_panel(self.panel, self.criterion)
        require_y(self, y)
        if hasattr(self, "cv_groups_"):
            del self.cv_groups_  # a refit without groups must not keep the last fit's table
        groups = check_groups(groups, y, self.criterion)
        # Validate: the rows to fit (a sketch, a dask array gathered or kept lazy), X and y.
        X, y, client = from_dask(X, y)
        if covariates is not None:
            covariates = check_covariates(covariates, np.asarray(y).shape[0])
        if covariates is not None and client is not None:
            msg = ("covariates are not taken with a dask X; gather X into memory (or fit a "
                   "max_samples sketch of it) first")
            raise DataError(msg)
        X, y, self.sketch_, groups, covariates = self._sketch(X, y, groups, covariates)
        # A dask array fitted whole with the gene basis stays where it is: every pass the path
        # makes over the design is a dask reduction over its row chunks (a lazy design).
        lazy = client is not None and self.sketch_ is None and self.kernel == "features"
        if client is not None:
            X = rows_to_fit(X, client, lazy=lazy, warn_rows=GATHER_WARN_ROWS,
                            name=type(self).__name__)
        if lazy:
            client = None  # the passes use the active scheduler; the classes run here
            self.n_features_in_ = int(X.shape[1])
            if hasattr(self, "feature_names_in_"):
                del self.feature_names_in_
        else:
            X = self._validate_x(X, reset=True)
        classes, y_idx = check_binary_labels(y, X.shape[0])
        self.classes_ = classes
        # Prepare the design.
        basis = make_basis(self.kernel, self.gamma, self.degree, self.coef0)
        Phi_s, scale, allowed = self._prepare_design(X, basis,
                                                     constant_features=self.constant_features)
        Phi_s, scale, allowed = self._append_covariates(Phi_s, scale, allowed, covariates)
        problems = [1] if classes.size == 2 else list(range(classes.size))
        # multiclass="shared": one path for all classes, the genes' precisions shared.
        self._joint = (resolve_multiclass(self.multiclass, self.panel) == "shared"
                       and classes.size > 2)
        spec = self._path_spec(Phi_s.shape[0])

        # Each task is one path (or a fold's); a dask array's tasks stay in this process, in
        # threads (their passes over the chunks overlap).
        work = None if lazy else task_work(*Phi_s.shape)

        def tasks(fn, args):
            return run_tasks(fn, args, n_jobs=self.n_jobs, client=client, work=work)

        # Run the paths (and, for criterion="cv", the inner cross-validation's fold paths).
        with one_blas_thread():
            self._fits, self.n_iter_ = fit_problems(
                spec, problems, classes, y_idx, Phi_s, allowed, scale, joint=self._joint,
                tasks=tasks, client=client, names=self._basis_names, icol=self._icol,
                estimator_name=type(self).__name__, max_steps=self.max_steps)
            if hasattr(self, "cv_choice_"):
                del self.cv_choice_
            if self.criterion == "cv":
                paper = self._paper_fits(Phi_s, problems, classes, y_idx, allowed, scale, tasks,
                                         client)
                rule = "min" if self.cv_rule == "min+paper" else self.cv_rule
                self.cv_results_, self._combine_temperature, by_group, choice = choose_by_cv(
                    self._fits, spec, problems, y_idx, Phi_s, allowed, cv=self.cv,
                    cv_repeats=self.cv_repeats, random_state=self.random_state,
                    s_min=self.variance_scale_min, rule=rule, max_genes=self.max_genes,
                    joint=self._joint, tasks=tasks, client=client, groups=groups, paper=paper,
                    panel=self.panel)
                if by_group is not None:
                    self.cv_groups_ = by_group
                if choice is not None:
                    self.cv_choice_ = choice
        # Choose, and set the fitted attributes.
        self._set_steps([f.choose(self.criterion, self.max_genes) for f in self._fits])
        if lazy:
            self._n_passes = X.n_passes
            logger.info("exact fit on the dask array: %d passes over its row chunks", X.n_passes)
        extra = {name: (lambda s, n=name: s.stats[n])
                 for name in ("loo_error", "loo_prob_error", "ep_sweeps")}
        self.path_ = pd.concat([self._path_frame(f.steps, extra, problem_label=f.positive_class)
                                for f in self._fits], ignore_index=True)
        return self

    def _paper_fits(self, Phi_s, problems, classes, y_idx, allowed, scale, tasks, client):
        """``(spec, fits)`` of the paper settings' full paths, when ``cv_rule="min+paper"`` applies.

        It applies below ``SMALL_N`` training samples, with one-vs-rest problems and no gene
        budget (``max_genes`` or ``panel``); otherwise None.
        """
        if (self.cv_rule != "min+paper" or Phi_s.shape[0] >= SMALL_N or self._joint
                or self.max_genes is not None or self.panel is not None):
            return None
        paper = copy.copy(self)
        for key, value in {**PAPER_SETTINGS, "criterion": "loo"}.items():
            setattr(paper, key, value)
        spec = paper._path_spec(Phi_s.shape[0])
        fits, _ = fit_problems(
            spec, problems, classes, y_idx, Phi_s, allowed, scale, joint=False, tasks=tasks,
            client=client, names=self._basis_names, icol=self._icol,
            estimator_name=type(self).__name__, max_steps=self.max_steps)
        return spec, fits

    def _sketch(self, X, y, groups=None, covariates=None):
        """The rows ``fit`` fits: ``(X, y, rows, groups, covariates)``, ``rows`` None for every row.

        The deterministic stratified sketch of ``max_samples``
        (:func:`~ardselect.engine._rows.sketch`), the groups and covariates taken at its rows;
        :func:`~ardselect.fit_signature` asks for them to preprocess those rows only.
        """
        return sketch(X, y, self.max_samples, groups, covariates)

    def _path_spec(self, n_samples):
        """The settings of every path run of this fit (the full fit's and the folds')."""
        init = self.init
        if init == "auto":
            init = "relevant" if self._is_features else "single"
        fixed = None
        if self.intercept_alpha != "ard" and self._icol >= 0:
            fixed = {self._icol: float(self.intercept_alpha)}  # held in every model
        if self._cov_cols.size:
            # The known covariates: held in every model at the intercept's weak prior.
            held = INTERCEPT_ALPHA if self.intercept_alpha == "ard" else self.intercept_alpha
            fixed = {**(fixed or {}), **{int(c): float(held) for c in self._cov_cols}}
        penalty = (0.5 * np.log(n_samples) if self.inclusion_penalty == "bic"
                   else float(self.inclusion_penalty))
        # The pruning tail: down to every size of the frontier (and to the gene and panel
        # budgets themselves), for criterion="cv", or within the gene budget for the paper's
        # criteria.
        sizes = None
        if self.criterion == "cv" or self.max_genes is not None:
            budgets = {int(b) for b in (self.max_genes, self.panel) if b is not None}
            grid = set(SIZE_GRID) | budgets
            if fixed is None or self.criterion != "cv":
                grid.discard(0)  # no intercept-only model to fall back to (or to choose)
            sizes = tuple(sorted(grid))
        return PathSpec(init=init, max_init=self.max_init, max_steps=self.max_steps,
                        tol=self.tol, alpha_min=self.alpha_min, patience=self.patience,
                        penalty=penalty, icol=self._icol, fixed=fixed,
                        loo_prob_scale=self.loo_prob_scale, damping=self.damping,
                        ep_tol=ep_tol_for(self.ep_tol, n_samples), ep_max_iter=self.ep_max_iter,
                        sizes=sizes, covariates=tuple(int(c) for c in self._cov_cols))

    def _append_covariates(self, Phi_s, scale, allowed, covariates):
        """The design with the covariates' columns appended at unit RMS (after the intercept).

        Sets ``_cov_cols`` (their columns; empty without covariates) and ``n_covariates_in_``;
        without covariates the design is returned as it is.
        """
        from ..engine._basis import unit_rms

        self._cov_cols = np.zeros(0, dtype=np.intp)
        self.n_covariates_in_ = 0
        if covariates is None:
            return Phi_s, scale, allowed
        const = np.ptp(covariates, axis=0) == 0
        if const.any():
            msg = (f"covariates column {int(np.flatnonzero(const)[0])} is constant: it would "
                   "duplicate the intercept; drop it (a categorical covariate needs two levels "
                   "among the samples fitted)")
            raise DataError(msg)
        C_s, c_scale, _ = unit_rms(covariates)
        m = Phi_s.shape[1]
        self._cov_cols = np.arange(m, m + C_s.shape[1], dtype=np.intp)
        self.n_covariates_in_ = int(C_s.shape[1])
        self._basis_names = np.concatenate(
            [self._basis_names, [f"(covariate {k})" for k in range(C_s.shape[1])]])
        Phi_s = as_design(Phi_s).append_columns(C_s)
        return (Phi_s, np.concatenate([scale, c_scale]),
                np.concatenate([allowed, np.ones(C_s.shape[1], dtype=bool)]))

    def _with_covariates(self, Phi, covariates):
        """The basis ``Phi`` of new samples with their covariates appended, as in the fit."""
        n_cov = getattr(self, "n_covariates_in_", 0)
        if not n_cov:
            if covariates is not None:
                msg = ("covariates were given, but the model was fitted without them; leave "
                       "them out")
                raise DataError(msg)
            return Phi
        C = check_covariates(covariates, Phi.shape[0], expected=n_cov)
        return as_design(Phi).append_columns(C, fmt="csr")
    def _set_steps(self, steps):
        rows, posts = [], []
        for fit, step in zip(self._fits, steps, strict=True):
            fit.set_step(step)
            rows.append(self._input_units(fit.active, fit.post.mean, fit.var_scaled,
                                          fit.alpha_scaled, fit.scale))
            index = np.where(fit.active != fit.intercept_col, fit.active, -1)
            if self._cov_cols.size:
                # Covariate k is column -(2 + k) of Posterior.latent's design (after the genes,
                # the covariates in reverse order, then the intercept).
                cov = np.isin(fit.active, self._cov_cols)
                index = np.where(cov, -2 - (fit.active - self._cov_cols[0]), index)
            posts.append(Posterior(index, fit.mean.copy(), fit.cov(), fit.positive_class))
        self._set_weights(rows, [f.chosen for f in self._fits])
        self._set_covariate_weights()
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
        self._set_certainty()

    def _set_certainty(self):
        """``pip_`` and ``credible_sets_`` of the chosen models (:mod:`ardselect.estimators._neighbourhood`)."""
        on = self.certainty and self.kernel == "features" and not self._cov_cols.size
        a0 = INTERCEPT_ALPHA if self.intercept_alpha == "ard" else float(self.intercept_alpha)
        problems = [certainty_problem(f, self._n_basis, intercept_alpha=a0) if on else None
                    for f in self._fits]
        todo = [p for p in problems if p is not None]
        # One task per problem, side by side as the paths are (the same answer for any n_jobs).
        solved = iter(run_tasks(solve_certainty, [(p,) for p in todo], n_jobs=self.n_jobs,
                                work=max((task_work(*p[1].shape) for p in todo), default=0)))
        results = [None if p is None else next(solved) for p in problems]
        self.pip_, self.credible_sets_ = certainty_frames(
            results, [f.positive_class for f in self._fits], self._basis_names,
            len(self._fits), self._n_basis)

    def _set_covariate_weights(self):
        """``covariate_coef_`` and ``covariate_coef_sd_``: the covariates' weights per problem.

        In the units of the covariates as given to ``fit``; ``(n_problems, n_covariates)``.
        """
        c = self._cov_cols
        coef = np.zeros((len(self._fits), c.size))
        sd = np.zeros((len(self._fits), c.size))
        for i, fit in enumerate(self._fits):
            pos = np.searchsorted(fit.active, c)  # held in every model: always active
            coef[i] = fit.mean[pos]  # (already in the units of the basis: fit.mean)
            sd[i] = np.sqrt(fit.var_scaled[pos]) / fit.scale[c]
        self.covariate_coef_, self.covariate_coef_sd_ = coef, sd

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

    def _at_panel(self, panel):
        """A fitted copy using the models a fit with ``panel`` would choose, without refitting.

        The copy keeps this fit's ``multiclass`` (one-vs-rest or shared), whatever ``"auto"``
        would resolve to with a panel.

        For benchmarks that compare many budgets on one fit. The choice reads the frontier
        (``cv_results_``) as a fit with ``panel`` makes it, with two differences: the frontier
        holds the default grid of sizes (a fit with ``panel`` adds the budget itself), and the
        copy keeps the calibration the inner cross-validation fitted at each size without its
        variance scale (fitted for the chosen sizes only) and with a combination temperature of
        1. One-vs-rest: :func:`~ardselect.estimators._panel.choose_panel`, each class at most the
        size it chose; shared: the size of least pooled multi-class log-loss within the budget.
        """
        check_is_fitted(self)
        if self.criterion != "cv" or getattr(self, "cv_results_", pd.DataFrame()).empty:
            msg = "a panel is chosen on the inner cross-validation's frontier (criterion='cv')"
            raise ValueError(msg)
        r = self.cv_results_
        fronts = [r[r["class"] == f.positive_class].sort_values("n_genes") for f in self._fits]
        if getattr(self, "_joint", False):
            pooled = self._fits[0].joint_losses
            sizes = [k for k in sorted(pooled) if k <= panel]
            best = min(sizes, key=lambda k: (pooled[k], k))
            step = int(fronts[0].loc[fronts[0]["n_genes"] == best, "step"].iloc[0])
            return self.at_step(step)
        def genes(fit, step):
            act = fit.steps[int(step)].active
            return frozenset(act[~(np.isin(act, fit.covariate_cols)
                                   | (act == fit.intercept_col))].tolist())

        sets = [[genes(f, st) for st in fr["step"]]
                for f, fr in zip(self._fits, fronts, strict=True)]
        upto = [int(np.flatnonzero(fr["chosen"].to_numpy())[0]) for fr in fronts]
        pick = choose_panel([fr["cv_log_loss"].tolist() for fr in fronts], sets, panel, upto)
        return self.at_step([int(fr["step"].iloc[j]) for fr, j in zip(fronts, pick, strict=True)])

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
        steps = check_steps(step, self._fits, joint=getattr(self, "_joint", False))
        new = copy.copy(self)
        new._fits = [copy.copy(f) for f in self._fits]
        new._set_steps(steps)
        return new

    # ------------------------------------------------------------------ prediction
    def _calibrated(self, X, covariates=None):
        """``a + T m / sqrt(1 + s v)`` of every problem at ``X``: ``(n_samples, n_problems)``."""
        m, v = self._latent(X, covariates)
        return (moderated_latent(m, v, self.temperature_, self.variance_scale_)
                + self.calibration_offset_)

    def decision_function(self, X, covariates=None):
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
        z = self._calibrated(X, covariates)
        return z[:, 0] if z.shape[1] == 1 else z

    def predict_proba(self, X, covariates=None):
        """Class probabilities, integrating over the Gaussian weight posterior.

        For each binary problem ``P = Phi(a + T m / sqrt(1 + s v))`` with ``m, v`` the posterior
        mean and variance of the latent and ``a, T, s`` its calibration (:meth:`decision_function`).
        With more than two classes the
        one-vs-rest answers are combined as independent answers conditioned on exactly one class
        being true: ``P(k)`` is proportional to the odds ``P_k / (1 - P_k)`` (see
        :func:`ardselect.numerics._probit.probit_log_proba`).

        Returns
        -------
        ndarray of shape (n_samples, n_classes), columns in ``classes_`` order.
        """
        return np.exp(self.predict_log_proba(X, covariates))

    def predict_log_proba(self, X, covariates=None):
        """Log of :meth:`predict_proba`, computed in log space."""
        m, v = self._latent(X, covariates)
        return probit_log_proba(m, v, self.temperature_, self.combine_temperature_,
                                self.variance_scale_, self.calibration_offset_)

    def predict(self, X, covariates=None):
        """Most probable class (the argmax of :meth:`predict_proba`).

        ``covariates`` (``(n_samples, n_covariates)``) are required when the model was fitted
        with them, and refused otherwise; the same holds for :meth:`predict_proba`,
        :meth:`predict_log_proba` and :meth:`decision_function`.
        """
        proba = self.predict_proba(X, covariates)
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

        Selected features come first, by their ``contribution`` to the separation of the class
        from the rest (largest first), then by ``|z|``; the others follow, by the evidence gain
        they would bring if added to the chosen model. Remaining ties keep input order.

        Returns
        -------
        pandas.DataFrame
            One row per feature and binary problem, ordered by class, then rank:

            * ``class``, ``rank`` (1 = best), ``feature``, ``selected``;
            * ``pip``, ``credible_set``, ``set_probability``, ``alternatives``: the gene's
              posterior inclusion probability, its credible set (``credible_sets_``), the
              probability that the model holds one of the set's genes, and the set's other
              genes, best first, as ``"NAME (pip)"``; NaN / <NA> / empty for genes outside the
              neighbourhood of the selection, and with ``certainty=False``
              (:mod:`ardselect.estimators._neighbourhood`);
            * ``contribution``: the posterior mean weight times the feature's mean in the class
              minus its mean in the rest (training data): the feature's part of the difference
              between the model's mean latent score in the class and in the rest, which the
              contributions of the selected features add up to. Negative for a feature whose
              weight opposes its own class difference (it corrects the others); 0 outside the
              model;
            * ``std_weight``: the posterior mean weight times the feature's standard deviation
              in the training data, the change of the latent class score per standard
              deviation of the feature (0 outside the model); its sign is the weight's;
            * ``relevance``: ``1 / alpha*``, the prior variance the evidence would give the
              feature beside the model's other features, on the unit-RMS scale and without the
              floor ``alpha_min`` (the model itself caps it at ``1 / alpha_min``); 0 when the
              evidence would leave a selected feature out, and for features outside the model;
            * ``weight``, ``weight_sd``, ``alpha``: the weight's posterior mean and sd in the
              chosen model and the precision it uses (input units; 0, 0 and ``inf`` outside the
              model). The sd is that of the one chosen model, the other features held in it and
              ``alpha`` often at its floor ``alpha_min``: it restates the prior and says little
              about how sure the model is of the feature (``pip`` does);
            * ``entered_step``: first path step with the feature in the model (<NA> if never);
            * ``log_bf_conditional``: log Bayes factor of the feature in the model against out of
              it, given the other selected features as chosen, under a uniform prior on its
              weight's prior variance up to ``1 / alpha_min`` (:mod:`ardselect.estimators._certainty`):
              whether the model needs it beside the others, near 0 for features whose signal
              another selected feature carries, however relevant;
            * ``z``: signed posterior mean / sd of the weight in the model; outside it, the z the
              weight would have if the feature entered with a flat prior, ``q / sqrt(s)``;
            * ``log_bf_marginal``: log Bayes factor of the feature and the intercept against the
              intercept alone (how much it predicts on its own);
            * ``cv_frequency``: share of the inner cross-validation's fold models of the chosen
              size that hold the feature (NaN without ``criterion="cv"``): how reproducible the
              selection is when a fifth of the samples is left out;
            * ``t_stat``: Welch's t statistic of the feature's values in the problem's class
              against the rest (positive: higher in the class), whatever the model.

            ``log_bf_conditional``, ``z``, ``log_bf_marginal`` and ``t_stat`` are NaN for
            features that cannot enter (constant ones).
        """
        check_is_fitted(self)
        table = certainty_table(self._fits, self.coef_, self.coef_sd_, self.alpha_,
                                alpha_min=self.alpha_min, intercept_alpha=self.intercept_alpha)
        return add_certainty_columns(table, self.pip_, self.credible_sets_, self._basis_names,
                                     [f.positive_class for f in self._fits])
