"""ARDClassifier: predictive ARD probit classification by EP along a sequential path."""

from __future__ import annotations

import copy
import logging
import warnings
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np
import pandas as pd
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.feature_selection import SelectorMixin
from sklearn.utils import _safe_indexing
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import _num_samples, check_is_fitted, validate_data
from threadpoolctl import threadpool_limits

from ._basis import LinearBasis, design_matrix, make_basis, unit_rms
from ._certainty import inclusion_certainty, leave_one_out_sq
from ._criteria import CRITERIA, check_criterion, choose_step
from ._ep import loo_error, loo_prob_error, run_ep
from ._probit import ovr_log_proba, tilted_moments
from ._sequential import SequentialPath, score_candidates
from ._validation import (
    check_binary_labels,
    check_design,
    constant_columns,
)
from .exceptions import DataError, LabelError

__all__ = ["ARDClassifier", "ConstantFeatureWarning", "Posterior"]

logger = logging.getLogger("ardselect")

INTERCEPT = "(intercept)"


class ConstantFeatureWarning(UserWarning):
    """Constant features were left out of the model (``constant_features="warn"``)."""


def _label(v) -> str:
    """A class label for messages: numpy scalars shown as plain Python values."""
    return repr(v.item() if isinstance(v, np.generic) else v)


@dataclass
class Posterior:
    """Gaussian posterior of the weights of one binary problem, in the units of the input features.

    ``index`` holds the basis columns in the model (input features for the default basis, training
    points for a kernel basis); ``-1`` marks the intercept. ``P(positive | x) = Phi(h / sqrt(1 + v))``
    with ``h = sum_k mean_k x[index_k]`` (``x[-1] = 1``) and ``v = x_A^T cov x_A``.
    """

    index: np.ndarray
    mean: np.ndarray
    cov: np.ndarray
    positive_class: object


class _EPProbitProblem:
    """The EP probit model as the sequential engine sees it (see ``_sequential.SequentialPath``)."""

    def __init__(self, design, allowed, *, loo_prob_scale, damping, ep_tol, ep_max_iter):
        self.design = design  # (n, m) signed, column-scaled
        self.allowed = allowed
        self.loo_prob_scale = loo_prob_scale
        self.damping = damping
        self.ep_tol = ep_tol
        self.ep_max_iter = ep_max_iter
        n = design.shape[0]
        # Initial sites: one EP update of each sample under a unit latent prior N(0, 1), i.e. the
        # sites a sample would get if its signed latent had unit prior variance and no other data.
        _, mhat, tau0, vhat = tilted_moments(np.zeros(1), np.ones(1))
        nu0 = mhat / vhat  # cavity mean 0
        self.tau0 = np.full(n, float(tau0[0]))
        self.nu0 = np.full(n, float(nu0[0]))
        self.n_ep_unconverged = 0

    def columns(self, active):
        P = self.design[:, active]
        return P.toarray() if sp.issparse(P) else np.ascontiguousarray(P)

    def initial_virtual(self):
        return self.tau0.copy(), self.nu0 / self.tau0

    def fit_sites(self, active, alpha, state, tol=None):
        tau, nu = state if state is not None else (self.tau0, self.nu0)
        return run_ep(self.columns(active), alpha, tau, nu, damping=self.damping,
                      tol=self.ep_tol if tol is None else tol, max_iter=self.ep_max_iter)

    def refresh(self, active, alpha, state):
        st = self.fit_sites(active, alpha, state)
        if not st.converged:
            self.n_ep_unconverged += 1
        stats = {
            "log_evidence": st.log_evidence,
            "loo_error": loo_error(st.cavity_mean),
            "loo_prob_error": loo_prob_error(st.cavity_mean, st.cavity_var, self.loo_prob_scale),
            "ep_sweeps": st.n_iter,
        }
        tau = st.tau
        t = np.where(tau > 0, st.nu / np.where(tau > 0, tau, 1.0), 0.0)
        return tau, t, st.post, stats, (tau.copy(), st.nu.copy())


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
    client = _LocalDask()
    try:
        from distributed import default_client

        client = default_client()
    except (ImportError, ValueError):
        pass
    return _DaskRows(X), y, client


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

    ``codes`` are integer class codes ``(n,)``. Each class keeps ``round(n_c * max_samples / n)``
    rows (at least one, at most ``n_c``), at evenly spaced positions of its rows in input order.
    Returns sorted row indices.
    """
    codes = np.asarray(codes)
    n = codes.shape[0]
    rows = []
    for c in np.unique(codes):
        idx = np.flatnonzero(codes == c)
        k = int(min(idx.size, max(1, round(idx.size * max_samples / n))))
        rows.append(idx[np.unique(np.linspace(0, idx.size - 1, k).round().astype(int))])
    return np.sort(np.concatenate(rows))


def _fit_binary(est, k, label, y_idx, Phi_s, allowed):
    """One binary problem (class ``k`` against the rest): ``(steps, converged, problem)``."""
    t = np.where(y_idx == k, 1.0, -1.0)
    with threadpool_limits(limits=1, user_api="blas"):
        design = (sp.diags(t) @ Phi_s).tocsc() if sp.issparse(Phi_s) else t[:, None] * Phi_s
        prob = _EPProbitProblem(design, allowed, loo_prob_scale=est.loo_prob_scale,
                                damping=est.damping, ep_tol=est.ep_tol,
                                ep_max_iter=est.ep_max_iter)
        init = est.init
        if init == "auto":
            init = "relevant" if est._is_features else "single"
        path = SequentialPath(prob, init=init, max_steps=est.max_steps, tol=est.tol,
                              max_init=est._max_init(design.shape[0]), alpha_min=est.alpha_min,
                              patience=est.patience, progress_label=label).run()
    return path.steps, path.converged, prob


class _BinaryFit:
    """Everything kept of one binary problem: the path and the model chosen on it."""

    def __init__(self, positive_class, steps, converged, problem, scale, names, intercept_col):
        self.positive_class = positive_class
        self.steps = steps
        self.converged = converged
        self.problem = problem
        self.scale = scale  # (m,) column scales of the basis (design = t * basis / scale)
        self.names = names  # (m,) basis function names
        self.intercept_col = intercept_col  # column index of the intercept in the basis, or -1

    def records(self):
        return (
            np.array([s.stats["log_evidence"] for s in self.steps]),
            np.array([s.stats["loo_error"] for s in self.steps]),
            np.array([s.stats["loo_prob_error"] for s in self.steps]),
        )

    def choose(self, criterion):
        return choose_step(*self.records(), criterion)

    def set_step(self, k):
        """Rebuild the posterior at path step ``k`` with tightly converged EP."""
        s = self.steps[k]
        st = self.problem.fit_sites(s.active, s.alpha, s.state, tol=1e-9)
        self.chosen = k
        self.active = s.active
        self.alpha_scaled = s.alpha
        self.post = st.post
        c = self.scale[s.active]
        self.mean = st.post.mean / c  # back to the units of the basis
        self.var = st.post.var() / c**2
        self.ep = st

    def cov(self):
        c = self.scale[self.active]
        return self.post.cov() / np.outer(c, c)


class ARDClassifier(SelectorMixin, ClassifierMixin, BaseEstimator):
    """Sparse Bayesian probit classifier with ARD priors, fitted by Expectation Propagation.

    The model is ``P(y = +1 | x) = Phi(w . phi(x))`` with independent priors ``w_j ~ N(0, 1/alpha_j)``.
    ``fit`` runs the fast sequential add / delete / re-estimate algorithm of Faul & Tipping on EP's
    virtual regression, refreshing EP after every step, records the EP evidence, the EP leave-one-out
    error and the LOO error probability at each step (the *path*), and keeps the model the ``criterion``
    picks (Qi, Minka, Picard & Ghahramani 2004). With more than two classes, one binary problem per
    class is fitted (one-vs-rest).

    Parameters
    ----------
    criterion : {"loo", "loo-prob", "evidence"}, default="loo"
        How the model is chosen on the path: smallest EP leave-one-out error (predictive ARD; ties go
        to the first such step), smallest LOO error probability, or largest EP evidence.
    kernel : {"features", "linear", "rbf", "poly"} or callable, default="features"
        The basis. ``"features"`` uses the input features themselves (gene selection). Any other value
        centres one kernel function on each training point (scikit-learn SVC convention), and the
        selected basis functions are relevance vectors.
    gamma : float or {"scale", "auto"}, default="scale"
        Kernel coefficient for "rbf" and "poly" (``gamma = 1 / (2 sigma^2)`` for an RBF width sigma).
    degree : int, default=3
        Degree of the "poly" kernel.
    coef0 : float, default=1.0
        Constant term of the "poly" kernel.
    fit_intercept : bool, default=True
        Add a constant basis function. It has its own ARD precision and competes like any feature.
    init : {"auto", "relevant", "single"} or int, default="auto"
        Starting model of the path. ``"relevant"`` starts from every feature that is relevant on its
        own (``theta_j > 0`` on the initial virtual targets, each at its own optimal precision; at most
        ``max_init`` of them), the paper's "small fraction of features"; ``"single"`` starts from the
        single best basis function, as in Tipping & Faul; an int k starts from the k best. ``"auto"``
        is ``"relevant"`` for the feature basis and ``"single"`` for kernel bases (relevance vectors).
    max_init : "auto", int or None, default="auto"
        Upper bound on the size of the starting model (the best ``max_init`` features by their
        individual evidence gain). Since ``criterion="loo"`` keeps the *first* step with the smallest
        LOO error, this bounds the size of the predictive model. ``"auto"`` is
        ``min(n_samples, 100)``: no more starting genes than training samples (a linear model on n
        points has at most n independent directions), and at most 100. On the shared microarray sets
        this keeps the held-out error of a 100-gene start with a third to a half of the genes
        (README, "Accuracy"). The paper reproductions use 100.
    max_steps : int, default=2000
        Maximum number of add / delete / re-estimate steps.
    tol : float, default=1e-5
        The path stops when no action increases the log marginal likelihood of the virtual
        regression by more than ``tol`` (nats).
    alpha_min : float, default=0.1
        Lower bound on the ARD precisions, on the scale of unit root-mean-square features: a prior
        standard deviation of at most ``1 / sqrt(alpha_min)`` (about 3) latent units per unit-RMS
        feature. With separable classes (the rule with genes >> samples) the evidence keeps growing
        as the precisions of separating features go to 0; the bound ends that drift so the path
        converges, and it keeps any one gene from carrying the prediction alone. 0.1 predicts better
        on held-out data than 1e-2 (the bound used to reproduce Qi et al.) on every shared
        microarray set (README, "Accuracy").
    patience : int, default=20
        The path also stops when the EP evidence has not risen by more than ``tol`` over the last
        ``patience`` steps (EP refreshes can make the sequential updates cycle; see Notes).
    loo_prob_scale : float, default=50.0
        Pre-scale of ``z_i`` in the LOO error probability (the paper's eq. 13 and its value 50).
    damping : float, default=1.0
        Largest fraction of the full EP step taken per parallel sweep. The step halves automatically
        when successive sweeps oscillate and grows back to ``damping`` when they agree.
    ep_tol : float, default=1e-5
        EP convergence tolerance along the path (the chosen model is refined to 1e-9).
    ep_max_iter : int, default=200
        Maximum EP sweeps per path step.
    constant_features : {"warn", "ignore", "raise"}, default="warn"
        What to do with constant (e.g. all-zero) features: keep them out of the model (ranked last)
        with a :class:`ConstantFeatureWarning` naming how many, keep them out silently, or raise a
        :class:`~ardselect.DataError`. Inside cross-validation folds of sparse or floored data some
        genes are constant by chance, so the default does not break scikit-learn composition.
    max_samples : int or None, default=None
        Fit on a stratified *sketch* of at most this many samples when there are more: the same
        fraction of every class, evenly spaced in input order within each class (deterministic), so
        class frequencies are kept. ``None`` fits every sample (exact EP). For single-cell data, where
        cells of one type are highly redundant, a sketch of a few thousand cells keeps the marker
        genes at a fraction of the cost; the posterior is then that of the sketch (wider than with
        every cell, never narrower). See the README, "Single-cell scale", for the measured accuracy.
        ``sketch_`` holds the rows used.
    n_jobs : int or None, default=None
        Binary problems (one-vs-rest classes) fitted in parallel threads (joblib; ``None`` = 1,
        ``-1`` = all cores), sharing the design in memory. Results do not depend on it.

    The fit makes no random choice (ties between candidates go to the first feature), so it takes no
    ``random_state``: the same data give the same path.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    coef_ : ndarray of shape (1, n_basis) or (n_classes, n_basis)
        Posterior mean of the weights, 0 outside the model. ``n_basis`` is ``n_features_in_`` for the
        default basis and the number of training samples for a kernel basis.
    coef_sd_ : ndarray of the shape of ``coef_``
        Posterior standard deviation of the weights, 0 outside the model.
    alpha_ : ndarray of the shape of ``coef_``
        ARD precisions in the units of the input, ``inf`` outside the model.
    intercept_ : ndarray of shape (1,) or (n_classes,)
        Posterior mean of the intercept (0 if it was pruned or ``fit_intercept=False``).
    path_ : pandas.DataFrame
        One row per step and binary problem: ``class``, ``step``, ``action`` ("init", "add", "delete",
        "reestimate"), ``feature``, ``n_features``, ``log_evidence``, ``loo_error``,
        ``loo_prob_error``, ``ep_sweeps``.
    chosen_step_ : int or dict
        Step chosen by ``criterion`` (a dict class -> step with more than two classes).
    support_ : ndarray of bool, shape (n_features_in_,)
        Features in the chosen model (of any class).
    posteriors_ : list of Posterior
        Posterior of each binary problem's weights (portable: see :class:`Posterior`).
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
    The sequential updates maximise the marginal likelihood of EP's virtual regression for the current
    sites; EP then moves the sites. The two do not always agree, so the path can cycle: the feature
    last added or deleted cannot change back until another one does, and the path stops when the EP
    evidence stalls for ``patience`` steps. The criteria choose among all recorded steps.
    EP runs in float64 whatever the input dtype; sparse X stays sparse (candidate scoring multiplies it
    by dense matrices, it is never densified whole). Features are internally scaled to unit root mean
    square, which leaves the model unchanged (ARD is scale-invariant) and keeps the algebra well
    conditioned. When the model holds more basis functions than samples, the posterior algebra runs
    in sample space.

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
    >>> clf.predict(X[:3]).shape
    (3,)
    """

    def __init__(self, criterion="loo", *, kernel="features", gamma="scale", degree=3, coef0=1.0,
                 fit_intercept=True, init="auto", max_init="auto", max_steps=2000, tol=1e-5,
                 alpha_min=0.1, patience=20,
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
        self.loo_prob_scale = loo_prob_scale
        self.damping = damping
        self.ep_tol = ep_tol
        self.ep_max_iter = ep_max_iter
        self.constant_features = constant_features
        self.max_samples = max_samples
        self.n_jobs = n_jobs

    #: The parameter contract, checked by scikit-learn's validation at the start of ``fit``.
    _parameter_constraints: dict = {
        "criterion": [StrOptions(set(CRITERIA))],
        "kernel": [StrOptions({"features", "linear", "rbf", "poly"}), callable],
        "gamma": [Interval(Real, 0, None, closed="neither"), StrOptions({"scale", "auto"})],
        "degree": [Interval(Integral, 1, None, closed="left")],
        "coef0": [Interval(Real, None, None, closed="neither")],
        "fit_intercept": ["boolean"],
        "init": [StrOptions({"auto", "relevant", "single"}), Interval(Integral, 1, None, closed="left")],
        "max_init": [StrOptions({"auto"}), Interval(Integral, 1, None, closed="left"), None],
        "max_steps": [Interval(Integral, 0, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "alpha_min": [Interval(Real, 0, None, closed="left")],
        "patience": [Interval(Integral, 0, None, closed="left")],
        "loo_prob_scale": [Interval(Real, 0, None, closed="neither")],
        "damping": [Interval(Real, 0, 1, closed="right")],
        "ep_tol": [Interval(Real, 0, None, closed="neither")],
        "ep_max_iter": [Interval(Integral, 1, None, closed="left")],
        "constant_features": [StrOptions({"warn", "ignore", "raise"})],
        "max_samples": [Interval(Integral, 2, None, closed="left"), None],
        "n_jobs": [Integral, None],
    }

    # ------------------------------------------------------------------ tags
    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    # ------------------------------------------------------------------ fitting
    def _check_params(self):
        self._validate_params()  # scikit-learn: one clear error naming the parameter and its range

    def _basis_matrix(self, X):
        return design_matrix(self.basis_, X, self.fit_intercept)

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
        self._check_params()
        if y is None:
            raise LabelError(f"{type(self).__name__} requires y to be passed, but the target y is None.")
        X, y, client = _from_dask(X, y)
        X, y = self._sketch(X, y)
        if client is not None:
            X = X.compute()  # the sketch's rows (or everything), gathered from the chunks
        try:
            X = validate_data(self, X, accept_sparse=["csc", "csr"], dtype=np.float64,
                              ensure_all_finite=False, reset=True)
        except ValueError as exc:
            raise DataError(str(exc)) from None
        X = check_design(X, estimator_name=type(self).__name__)
        classes, y_idx = check_binary_labels(y, X.shape[0])
        self.classes_ = classes
        names = (np.asarray(self.feature_names_in_, dtype=object)
                 if hasattr(self, "feature_names_in_")
                 else np.array([f"x{i}" for i in range(X.shape[1])], dtype=object))

        self.basis_ = make_basis(self.kernel, self.gamma, self.degree, self.coef0).fit(X)
        is_features = isinstance(self.basis_, LinearBasis)
        allowed_in = np.ones(X.shape[1], dtype=bool)
        if is_features:
            const = constant_columns(X)
            if const.any():
                ex = ", ".join(repr(str(n)) for n in names[const][:5])
                if self.constant_features == "raise":
                    raise DataError(
                        f"X has {int(const.sum())} constant feature(s) (e.g. {ex}); drop them or "
                        "pass constant_features='warn' or 'ignore'."
                    )
                if self.constant_features == "warn":
                    warnings.warn(
                        f"{int(const.sum())} of {X.shape[1]} features are constant (e.g. {ex}) "
                        "and are left out of the model.", ConstantFeatureWarning, stacklevel=2)
                allowed_in = ~const
            fnames = names
        else:
            fnames = self.basis_.function_names(np.arange(X.shape[0]))
        Phi = self._basis_matrix(X)
        m = Phi.shape[1]
        allowed = np.ones(m, dtype=bool)
        allowed[: allowed_in.size] = allowed_in if is_features else True
        fnames = np.concatenate([fnames, [INTERCEPT]]) if self.fit_intercept else fnames
        icol = m - 1 if self.fit_intercept else -1

        Phi_s, scale, nonzero = unit_rms(Phi)
        allowed &= nonzero

        problems = [1] if classes.size == 2 else list(range(classes.size))
        # The path is thousands of small dense operations; multi-threaded BLAS only adds contention
        # there (measured 50x slower on a loaded 2-core machine), so the fit runs on one BLAS thread.
        self._is_features = is_features
        with threadpool_limits(limits=1, user_api="blas"):
            self._fit_problems(problems, classes, y_idx, Phi_s, allowed, fnames, icol, scale,
                               client=client)
        self._basis_names = fnames
        self._is_features = is_features
        self._set_steps([f.choose(self.criterion) for f in self._fits])
        self.path_ = self._path_frame()
        return self

    def _sketch(self, X, y):
        """Rows of the stratified sketch (``max_samples``), or everything; sets ``sketch_``."""
        n = X.shape[0] if isinstance(X, _DaskRows) else _num_samples(X)
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
            return X.take(rows), _safe_indexing(y, rows)
        return _safe_indexing(X, rows), _safe_indexing(y, rows)

    def _fit_problems(self, problems, classes, y_idx, Phi_s, allowed, fnames, icol, scale,
                      client=None):
        n_jobs = 1 if self.n_jobs is None else self.n_jobs
        if client and len(problems) > 1:
            # One task per class on the user's dask Client; the design goes to the workers once.
            design = client.scatter(Phi_s, broadcast=True)
            futures = [client.submit(_fit_binary, self, k, str(classes[k]), y_idx, design, allowed,
                                     pure=False) for k in problems]
            paths = client.gather(futures)
        elif n_jobs != 1 and len(problems) > 1:
            from joblib import Parallel, delayed

            # Threads, not processes: the design is shared instead of copied into every worker
            # (measured: +75 MB against +506 MB for two workers on a 6,000-cell sketch problem,
            # and faster), and the heavy parts (BLAS, large ufuncs) release the GIL.
            paths = Parallel(n_jobs=n_jobs, prefer="threads")(
                delayed(_fit_binary)(self, k, str(classes[k]), y_idx, Phi_s, allowed)
                for k in problems)
        else:
            paths = [_fit_binary(self, k, str(classes[k]), y_idx, Phi_s, allowed)
                     for k in problems]
        self._fits = []
        n_iter = 0
        for k, (steps, converged, prob) in zip(problems, paths, strict=True):
            if not converged:
                warnings.warn(
                    f"The ARD path for class {_label(classes[k])} stopped at max_steps={self.max_steps} "
                    "before converging; raise max_steps (the chosen model is still valid).",
                    ConvergenceWarning, stacklevel=2,
                )
            if prob.n_ep_unconverged:
                logger.info("EP hit ep_max_iter at %d path steps", prob.n_ep_unconverged)
            n_iter = max(n_iter, len(steps) - 1)
            self._fits.append(_BinaryFit(classes[k], steps, converged, prob, scale, fnames, icol))
        self.n_iter_ = n_iter

    def _max_init(self, n_samples):
        """``max_init`` with ``"auto"`` resolved: at most one starting gene per sample, and 100."""
        return min(int(n_samples), 100) if self.max_init == "auto" else self.max_init

    def _set_steps(self, steps):
        m = len(self._basis_names)
        k = len(self._fits)
        n_basis = m - 1 if self.fit_intercept else m
        coef = np.zeros((k, n_basis))
        sd = np.zeros((k, n_basis))
        alpha = np.full((k, n_basis), np.inf)
        intercept = np.zeros(k)
        posts = []
        for i, (fit, step) in enumerate(zip(self._fits, steps, strict=True)):
            fit.set_step(step)
            feat = fit.active != fit.intercept_col
            cols = fit.active[feat]
            coef[i, cols] = fit.mean[feat]
            sd[i, cols] = np.sqrt(fit.var[feat])
            alpha[i, cols] = fit.alpha_scaled[feat] * fit.scale[cols] ** 2
            if (~feat).any():
                intercept[i] = fit.mean[~feat][0]
            index = np.where(feat, fit.active, -1)
            posts.append(Posterior(index, fit.mean.copy(), fit.cov(), fit.positive_class))
        self.coef_ = coef
        self.coef_sd_ = sd
        self.alpha_ = alpha
        self.intercept_ = intercept
        self.posteriors_ = posts
        chosen = [f.chosen for f in self._fits]
        self.chosen_step_ = chosen[0] if k == 1 else {
            c: s for c, s in zip(self.classes_, chosen, strict=True)}
        in_model = np.isfinite(alpha).any(axis=0)
        if self._is_features:
            self.support_ = in_model
        else:
            self.support_ = np.ones(self.n_features_in_, dtype=bool)
            self.relevance_vectors_ = np.flatnonzero(in_model)

    def _path_frame(self):
        rows = []
        for fit in self._fits:
            for s in fit.steps:
                n_feat = int(np.sum(s.active != fit.intercept_col))
                rows.append({
                    "class": fit.positive_class,
                    "step": s.step,
                    "action": s.action,
                    "feature": "" if s.feature < 0 else str(fit.names[s.feature]),
                    "n_features": n_feat,
                    "log_evidence": s.stats["log_evidence"],
                    "loo_error": s.stats["loo_error"],
                    "loo_prob_error": s.stats["loo_prob_error"],
                    "ep_sweeps": s.stats["ep_sweeps"],
                })
        return pd.DataFrame(rows)

    # ------------------------------------------------------------------ model choice
    def choose_step(self, criterion):
        """Step of the path that ``criterion`` picks (int, or dict class -> int for multi-class)."""
        check_is_fitted(self)
        check_criterion(criterion)
        steps = [f.choose(criterion) for f in self._fits]
        return steps[0] if len(steps) == 1 else dict(zip(self.classes_, steps, strict=True))

    def at_step(self, step):
        """A fitted copy of this classifier using the model at path ``step``.

        Parameters
        ----------
        step : int or dict
            Path step (binary), or a dict class -> step (multi-class). Use :meth:`choose_step` to get
            the step another criterion would pick.
        """
        check_is_fitted(self)
        steps = [step[c] for c in self.classes_] if isinstance(step, dict) else [step]
        if len(steps) != len(self._fits):
            raise ValueError("with more than two classes, give a dict class -> step.")
        for s, fit in zip(steps, self._fits, strict=True):
            if not 0 <= int(s) < len(fit.steps):
                raise ValueError(f"step must be in [0, {len(fit.steps) - 1}]; got {s!r}.")
        new = copy.copy(self)
        new._fits = [copy.copy(f) for f in self._fits]
        new._set_steps([int(s) for s in steps])
        return new

    # ------------------------------------------------------------------ prediction
    def _latent(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse=["csc", "csr"], dtype=np.float64,
                          ensure_all_finite=False, reset=False)
        X = check_design(X, estimator_name=type(self).__name__)
        Phi = self._basis_matrix(X)
        means, variances = [], []
        for fit in self._fits:
            A = Phi[:, fit.active]
            A = A.toarray() if sp.issparse(A) else A
            m, v = fit.post.latent(A / fit.scale[fit.active])
            means.append(m)
            variances.append(v)
        return np.array(means).T, np.array(variances).T  # (n, k)

    def decision_function(self, X):
        """Posterior mean of the latent ``w . phi(x)`` (per class for multi-class).

        Returns
        -------
        ndarray of shape (n_samples,) or (n_samples, n_classes)
        """
        m, _ = self._latent(X)
        return m[:, 0] if m.shape[1] == 1 else m

    def predict_proba(self, X):
        """Class probabilities, integrating over the Gaussian weight posterior.

        For each binary problem ``P = Phi(m / sqrt(1 + v))`` with ``m, v`` the posterior mean and
        variance of the latent. With more than two classes the one-vs-rest answers are combined as
        independent answers conditioned on exactly one class being true: ``P(k)`` is proportional to
        the odds ``P_k / (1 - P_k)`` (see :func:`ardselect._probit.ovr_log_proba`).

        Returns
        -------
        ndarray of shape (n_samples, n_classes), columns in ``classes_`` order.
        """
        return np.exp(self.predict_log_proba(X))

    def predict_log_proba(self, X):
        """Log of :meth:`predict_proba`, computed in log space."""
        m, v = self._latent(X)
        return ovr_log_proba(m / np.sqrt(1.0 + v))

    def predict(self, X):
        """Most probable class (the argmax of :meth:`predict_proba`)."""
        proba = self.predict_proba(X)
        return self.classes_[np.argmax(proba, axis=1)]

    # ------------------------------------------------------------------ selection
    def _get_support_mask(self):
        check_is_fitted(self)
        return self.support_

    def ranked_features(self):
        """Every feature (basis function) ranked, for the chosen model of each binary problem.

        Selected features come first, ordered by relevance (the inverse ARD precision on the unit-RMS
        scale); the others follow, ordered by the evidence gain they would bring if added to the
        chosen model. Ties keep input order.

        Returns
        -------
        pandas.DataFrame
            Columns ``class``, ``rank`` (1 = best), ``feature``, ``selected``, ``relevance``, ``mean``,
            ``sd``, ``alpha``, ``entered_step`` (first path step with the feature in the model, <NA>
            if never), ``log_bf`` (log Bayes factor of the feature in the model against out of it,
            the others as chosen, under a uniform prior on its weight's prior variance up to
            ``1 / alpha_min``), ``pip`` (posterior inclusion probability at even prior odds) and
            ``p_sign`` (probability that the weight has the sign of ``mean``, or for a feature
            outside the model the sign it would take if added); see ``ardselect._certainty``.
            NaN for features that cannot enter (constant ones). Ordered by class, then rank.
        """
        check_is_fitted(self)
        frames = []
        n_basis = self.coef_.shape[1]
        for i, fit in enumerate(self._fits):
            relevance = np.zeros(n_basis)
            feat = fit.active != fit.intercept_col
            relevance[fit.active[feat]] = 1.0 / fit.alpha_scaled[feat]
            # Potential of the features outside the model: q^2/s on the chosen model's targets.
            st = fit.ep
            tau = st.tau
            t = np.where(tau > 0, st.nu / np.where(tau > 0, tau, 1.0), 0.0)
            S, Q = score_candidates(fit.problem.design, st.post, tau, t)
            with np.errstate(divide="ignore", invalid="ignore"):
                potential = np.where(S > 0, Q * Q / S, 0.0)[:n_basis]
            alpha_all = np.full(S.shape, np.inf)
            alpha_all[fit.active] = fit.alpha_scaled
            s_loo, q_loo = leave_one_out_sq(S, Q, alpha_all)
            log_bf, pip, p_pos = inclusion_certainty(s_loo[:n_basis], q_loo[:n_basis],
                                                     1.0 / self.alpha_min)
            usable = fit.problem.allowed[:n_basis]
            log_bf = np.where(usable, log_bf, np.nan)
            pip = np.where(usable, pip, 0.0)
            # The sign the table reports: the posterior mean's for selected genes, else the sign
            # the weight would take if the gene were added.
            p_sign = np.where(usable, np.maximum(p_pos, 1.0 - p_pos), np.nan)
            potential = np.where(fit.problem.allowed[:n_basis], potential, -np.inf)
            selected = np.isfinite(self.alpha_[i])
            key = np.where(selected, relevance, potential)
            order = np.lexsort((-key, ~selected))  # selected first, then by key descending
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
                "relevance": relevance[order],
                "mean": self.coef_[i, order],
                "sd": self.coef_sd_[i, order],
                "alpha": self.alpha_[i, order],
                "entered_step": pd.array(np.where(entered[order] >= 0, entered[order], -1),
                                         dtype="Int64"),
                "log_bf": log_bf[order],
                "pip": pip[order],
                "p_sign": p_sign[order],
            }))
        out = pd.concat(frames, ignore_index=True)
        out.loc[out["entered_step"] < 0, "entered_step"] = pd.NA
        return out

