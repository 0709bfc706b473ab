"""ARDClassifier: predictive ARD probit classification by EP along a sequential path."""

from __future__ import annotations

import copy
import functools
import logging
import warnings
from numbers import Integral, Real

import numpy as np
import pandas as pd
import scipy.sparse as sp
from sklearn.base import ClassifierMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import _safe_indexing
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import _num_samples, check_is_fitted
from threadpoolctl import ThreadpoolController

from ._base import ConstantFeatureWarning, _ARDPathEstimator, _Chosen, label
from ._basis import make_basis, unit_rms
from ._certainty import inclusion_certainty, leave_one_out_sq
from ._criteria import CRITERIA, check_criterion, choose_step, comparable_loo, group_cavities
from ._cv import choose_candidate, fit_combine_temperature, step_latent
from ._ep import LatentPosterior, loo_error, loo_prob_error, run_ep
from ._joint import JointPath
from ._lazy import LazyDesign, default_client
from ._probit import moderated_latent, probit_log_proba, tilted_moments
from ._screen import INTERCEPT_ALPHA, screen_order, screen_steps
from ._sequential import SequentialPath, Step, score_candidates
from ._validation import check_binary_labels
from .exceptions import DataError, LabelError
from .model import Posterior

__all__ = ["ARDClassifier", "ConstantFeatureWarning"]

logger = logging.getLogger("ardselect")


class _EPProbitProblem:
    """The EP probit model as the sequential engine sees it (see ``_sequential.SequentialPath``)."""

    def __init__(self, design, allowed, *, loo_prob_scale, damping, ep_tol, ep_max_iter):
        self._design = design  # (n, m) signed, column-scaled
        self._basis = self._signs = None
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

    def release(self, basis, signs):
        """Drop the signed copy of the design once the path is done; keep the shared ``basis``.

        ``design`` is then ``diag(signs) @ basis``, rebuilt when asked for and not kept, and
        ``columns`` signs only the columns it takes (bitwise the same: the signs are +-1). A fit
        of many classes on a large matrix then holds one design, not one per class.
        """
        self._basis, self._signs, self._design = basis, signs, None

    @property
    def design(self):
        """The signed, column-scaled design ``(n, m)``."""
        return self._design if self._design is not None else _signed(self._basis, self._signs)

    def columns(self, active):
        if self._design is None:
            P = self._basis[:, active]
            P = P.toarray() if sp.issparse(P) else np.asarray(P)
            return np.ascontiguousarray(self._signs[:, None] * P)
        P = self._design[:, active]
        return P.toarray() if sp.issparse(P) else np.ascontiguousarray(P)

    def initial_virtual(self):
        return self.tau0.copy(), self.nu0 / self.tau0

    def scores(self, post, b, t, sq_cache=None):
        """``S_j, Q_j`` of every column of the signed design (``score_candidates``).

        A released design is scored from the shared basis and the signs, with no signed copy.
        """
        if self._design is not None:
            return score_candidates(self._design, post, b, t, sq_cache=sq_cache)
        return score_candidates(self._basis, post, b, t, sq_cache=sq_cache, signs=self._signs)

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

#: The second ARD candidate of ``criterion="cv"`` (``ml_candidate``): its name in ``cv_results_``,
#: its ``action`` in ``path_``, and its precision floor (on unit-RMS features; no inclusion penalty).
ML_CANDIDATE = "ard-ml"
#: Candidate of ``multiclass="shared"``: the shared path's first model, the genes relevant to the
#: classes together (at most ``max_init``), each at its own optimal precision.
START_CANDIDATE = "ard-start"
ML_ACTION = "ml"
ML_ALPHA_MIN = 1.0


@functools.cache
def _blas_controller():
    """One :class:`threadpoolctl.ThreadpoolController`, made on first use and kept.

    Making one scans the loaded libraries (about 4 ms here, which a fit used to pay once per fold
    and class).
    """
    return ThreadpoolController()


def _one_blas_thread():
    """A context in which BLAS runs on one thread."""
    return _blas_controller().limit(limits=1, user_api="blas")


def _fit_binary(est, k, label, y_idx, Phi_s, allowed):
    """One binary problem (class ``k`` against the rest) on the full training set."""
    t = np.where(y_idx == k, 1.0, -1.0)
    with _one_blas_thread():
        prob, converged, steps, n_ard = est._problem_steps(_signed(Phi_s, t), t, allowed, label)
    prob.release(Phi_s, t)
    return prob, converged, steps, n_ard


def _fold_design(est, Phi_s, allowed, train, test):
    """A fold's training design, the genes that may enter there and its held-out rows.

    As a refit on the fold would: columns back to unit RMS on the fold's training part (the
    precision floor is defined on that scale), genes constant there left out. The held-out rows
    are scaled the same way. Returns ``(Phi_tr, allowed_f, rows)``.
    """
    from ._validation import constant_columns

    Phi_tr, scale, nonzero = unit_rms(Phi_s[train])
    allowed_f = allowed & nonzero & ~constant_columns(Phi_tr)
    if est._icol >= 0:
        allowed_f[est._icol] = allowed[est._icol]  # the intercept column is constant by design
    rows = Phi_s[test] @ sp.diags(1.0 / scale) if sp.issparse(Phi_s) else Phi_s[test] / scale
    return Phi_tr, allowed_f, rows


def _fold_candidates(est, k, label, y_idx, Phi_s, allowed, train, test):
    """One problem refitted on a fold's training part; its candidates' held-out latents.

    Returns a dict candidate name -> ``(latent, n_genes)``: ``"ard"`` (the LOO-chosen ARD step),
    ``"screen k"`` for every screened size and the ML candidate; ``latent`` is the ``(2, n_test)``
    posterior mean and variance of the held-out latents (:func:`ardselect._cv.step_latent`).
    """
    Phi_tr, allowed_f, rows = _fold_design(est, Phi_s, allowed, train, test)
    t = np.where(y_idx[train] == k, 1.0, -1.0)
    with _one_blas_thread(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the full fit reports its own warnings
        prob, _, steps, n_ard = est._problem_steps(_sign_in_place(Phi_tr, t), t, allowed_f,
                                                   label, fold=True)
        picked = {"ard": steps[_path_choice(steps[:n_ard], "loo")]}
        extra = steps[n_ard:]
        if est._ml:
            picked[ML_CANDIDATE] = extra.pop()
        picked.update({f"screen {kk}": st for kk, st in zip(est._screen_k, extra, strict=True)})
        return {name: (step_latent(prob, st, rows), int(np.sum(st.active != est._icol)))
                for name, st in picked.items()}


def _fold_joint(est, y_idx, Phi_s, allowed, train, test):
    """The shared-precision path (``multiclass="shared"``) refitted on a fold's training part.

    Returns one dict per class, as :func:`_fold_candidates` does for one problem: candidate name ->
    ``(latent, n_genes)`` for the joint path's LOO step (``"ard"``), its first step
    (``"ard-start"``) and, with the ML candidate, the LOO step of the joint ML path. Every class
    holds the same genes at each candidate.
    """
    Phi_tr, allowed_f, rows = _fold_design(est, Phi_s, allowed, train, test)
    with _one_blas_thread(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the full fit reports its own warnings
        probs, _, steps, n_ard = est._joint_steps(Phi_tr, y_idx[train], allowed_f, fold=True)
        out = []
        for prob, class_steps in zip(probs, steps, strict=True):
            picked = {"ard": class_steps[_path_choice(class_steps[:n_ard], "loo")]}
            picked[START_CANDIDATE] = class_steps[0]
            if est._ml:
                picked[ML_CANDIDATE] = class_steps[-1]
            out.append({name: (step_latent(prob, st, rows), int(np.sum(st.active != est._icol)))
                        for name, st in picked.items()})
        return out


def _no_loo_errors(stats):
    """True once a step has no EP leave-one-out errors (the LOO criterion cannot do better)."""
    return stats["loo_error"] <= 0.0


class _LooStall:
    """Stop rule of a path that is read only by its LOO choice (the ``"ard-ml"`` candidate).

    The path ends once a step has no EP leave-one-out errors, or when its smallest LOO error has
    not fallen over the last ``patience`` steps. ``choose_step(..., "loo")`` keeps the *first*
    step of smallest LOO error, so the first rule never changes the choice; the second bounds
    how far the path runs past its best LOO model (without it, a path with no inclusion penalty
    on dense data with many samples keeps adding weakly relevant genes up to ``max_steps``).
    """

    def __init__(self, patience):
        self.patience = int(patience)
        self.best = np.inf
        self.since = 0

    def __call__(self, stats):
        v = float(comparable_loo(stats["loo_error"]))  # as choose_step compares them
        if v < self.best:
            self.best, self.since = v, 0
        else:
            self.since += 1
        return v <= 0.0 or (self.patience > 0 and self.since >= self.patience)


def _signed(Phi, t):
    """The design with row i multiplied by ``t[i]`` (CSC if sparse)."""
    if isinstance(Phi, LazyDesign):
        return Phi.with_signs(t)
    return (sp.diags(t) @ Phi).tocsc() if sp.issparse(Phi) else t[:, None] * Phi


def _sign_in_place(Phi, t):
    """:func:`_signed` without a copy, for a design this caller owns (CSC or dense)."""
    if isinstance(Phi, LazyDesign):
        return Phi.with_signs(t)
    if sp.issparse(Phi):
        Phi = sp.csc_matrix(Phi)
        Phi.data *= t[Phi.indices]
    else:
        Phi *= t[:, None]
    return Phi


def _path_choice(steps, criterion):
    """The step a path criterion picks among ``steps`` (ARD steps: evidence and LOO records)."""
    return choose_step(np.array([s.stats["log_evidence"] for s in steps]),
                       np.array([s.stats["loo_error"] for s in steps]),
                       np.array([s.stats["loo_prob_error"] for s in steps]), criterion)


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

        self.n_ard = len(steps)  # the ARD steps; screened models (criterion="cv") follow them
        self.cv_step = None  # the step the inner cross-validation chose (criterion="cv")
        self.step_calibration = {}  # step -> (temperature, variance scale) fitted by the inner CV

    def choose(self, criterion):
        if criterion == "cv":
            if self.cv_step is None:
                msg = "criterion 'cv' is chosen while fitting: fit with criterion='cv' to use it."
                raise ValueError(msg)
            return self.cv_step
        return _path_choice(self.steps[: self.n_ard], criterion)

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

    The model is ``P(y = +1 | x) = Phi(w . phi(x))`` with independent priors ``w_j ~ N(0, 1/alpha_j)``.
    ``fit`` runs the fast sequential add / delete / re-estimate algorithm of Faul & Tipping on EP's
    virtual regression, refreshing EP after every step, records the EP evidence, the EP leave-one-out
    error and the LOO error probability at each step (the *path*; Qi, Minka, Picard & Ghahramani
    2004), and keeps the model the ``criterion`` picks. By default (``criterion="cv"``) that choice
    is made honestly, by an inner cross-validation between the path's predictive model and
    *screened* models (the ``k`` individually strongest genes under one shared prior precision),
    which also fits a temperature that calibrates the chosen model's probabilities. With more than
    two classes, one binary problem per class is fitted (one-vs-rest), each with its own genes
    or, with ``multiclass="shared"``, all with the same genes (one precision per gene).

    Parameters
    ----------
    criterion : {"cv", "loo", "loo-prob", "evidence"}, default="cv"
        How the model is chosen. ``"cv"``: by an inner ``cv``-fold cross-validation, among the
        model ``"loo"`` picks on the path (genes chosen jointly), the screened models of
        ``screen_sizes`` (genes ranked one at a time, weights shrunk together) and, with
        ``ml_candidate``, the LOO model of a second ARD path; each candidate's
        held-out probabilities are calibrated by a temperature in ``[0.01, 1]`` and the one with
        the lowest held-out log-loss is kept, with its temperature (see Notes and
        ``cv_results_``). The paper's criteria read the path alone: smallest EP leave-one-out
        error (``"loo"``, predictive ARD; ties go to the first such step), smallest LOO error
        probability (``"loo-prob"``), or largest EP evidence (``"evidence"``).
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
        Add a constant basis function (the intercept).
    intercept_alpha : float > 0 or "ard", default=0.01
        Prior precision of the intercept. A number holds the intercept in every model of the path
        at that precision: 0.01 is a prior sd of 10 latent units, nearly flat, so that the model
        does not depend on where a gene's zero lies (with a pruned or shrunk intercept, a gene
        whose mean is off in an unbalanced sample stands in for it). ``"ard"`` gives the intercept
        its own ARD precision, competing like any feature and prunable, as in the paper (its
        reproductions use it). Paired over 50 partitions of each shared microarray set, the fixed
        intercept lowered the default model's mean error on six of seven sets (Borovecki by 1.1 ±
        0.5 points, the others by less than one s.e.) and left Khan and PBMC unchanged (README,
        "Accuracy").
    init : {"auto", "relevant", "single"} or int, default="auto"
        Starting model of the path. ``"relevant"`` starts from every feature that is relevant on its
        own (``theta_j > 0`` on the initial virtual targets, each at its own optimal precision; at most
        ``max_init`` of them), the paper's "small fraction of features". With a held intercept
        (``intercept_alpha`` a number) the gains are taken beside it, on the intercept-only model's
        EP sites, so that a gene's mean is not counted as evidence. ``"single"`` starts from the
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
    inclusion_penalty : float >= 0 or "bic", default="bic"
        Prior log odds against a gene, in nats: the path maximises the log evidence minus this much
        per gene in the model (an addition must gain more, a deletion gains it back; the intercept
        is not a gene and is free). 0 is the
        paper's type-II maximum likelihood, where a pure-noise gene enters with probability about
        0.32 (``q^2 / s`` is then chi-square with one degree of freedom), so with many samples and
        genes the path runs long. ``"bic"`` is ``log(n_samples) / 2`` (a BIC-like cost per gene);
        see README, "Long paths on large dense data", for its effect on path length and accuracy.
    cv : int, default=5
        Folds of the inner cross-validation (``criterion="cv"``; fewer when the smallest class has
        fewer samples, and ``"loo"`` with a warning if it has only one).
    cv_repeats : int, default=1
        Repeats of the inner cross-validation, each with its own shuffle of the folds
        (scikit-learn's ``RepeatedStratifiedKFold``): every sample is held out once per repeat,
        and the candidates are compared and calibrated on all ``cv_repeats`` held-out predictions
        of every sample. More repeats make the choice among close candidates less noisy; each
        costs ``cv`` more fold fits. 1 is a single cross-validation.
    screen_sizes : sequence of int, default=(1, 2, 5, 10, 20, 50, 100, 200)
        Sizes ``k`` of the screened models that compete in the inner cross-validation (capped at
        the number of usable genes). Screened models are fitted for the feature basis only.
    screen_alpha : float, default=3.0
        Shared prior precision of the screened models' weights, on unit-RMS genes (a prior sd of
        0.58 latent units per gene sd: about the shrinkage of an L2-logistic regression with
        C = 1 on standardised genes, in probit units). The inner cross-validation's temperature
        rescales the weights afterwards, so the value matters less than it seems.
    ml_candidate : bool, default=True
        With ``criterion="cv"`` and the feature basis, one more candidate competes in the inner
        cross-validation (``"ard-ml"``): the model the LOO error picks on a second ARD path, run
        from the same start with no inclusion penalty (the paper's type-II maximum likelihood)
        and the precision floor raised to 1 (``alpha_min`` on unit-RMS genes: a prior sd of at
        most 1 latent unit per gene sd). The cap keeps any one gene from carrying the
        prediction, so the path keeps more, smaller weights, which predicts better on data
        where many genes carry weak signal (Shipp: 2.5 points lower error; README, "Accuracy").
        Only its LOO choice is used, so the path ends at its first step without LOO errors or
        after ``patience`` steps without a lower LOO error. It costs about a fifth more fit time
        on a microarray partition, 70% more on PBMC's 466 cells and several times more on dense
        data with thousands of samples, where it rarely wins (README, "The precision floor");
        ``False`` leaves it out (the previous default).
    multiclass : {"ovr", "shared"}, default="ovr"
        With more than two classes: ``"ovr"`` fits one ARD path and chooses one model per class
        (the class against the rest), so each class has its own genes and the model uses their
        union. ``"shared"`` gives every gene one prior precision for all the classes' problems
        (group ARD, :mod:`ardselect._joint`): one path adds, deletes and re-estimates a gene for
        all classes at once by their summed evidence, so every class uses the same genes, each
        with its own weights. With ``criterion="cv"`` the candidates are then that path's LOO
        model, its first model (``"ard-start"``: the genes relevant to the classes together, at
        most ``max_init``, each at its own optimal precision) and, with ``ml_candidate``, the LOO
        model of a joint ML path; one candidate for all classes, chosen by the multi-class
        held-out log-loss (no screened models: they rank genes per class). A much smaller
        signature at some cost in accuracy (README, "Shared genes across classes"). Two-class
        fits are the same either way.
    variance_scale_min : float in [0, 1], default=0.5
        With ``criterion="cv"``, the smallest *variance scale* ``s`` the calibration may fit:
        the chosen model predicts ``Phi(T m / sqrt(1 + s v))``, ``v`` the posterior variance of
        the latent, ``s`` fitted with the temperature ``T`` on the held-out predictions. ``s < 1``
        discounts the prior variance along directions no training sample constrained, which left
        the predictive underconfident on every microarray set; the bound keeps at least half of
        it (README, "Calibration: the variance scale", has the measurements at 0, 0.25, 0.5 and
        0.75). ``1`` keeps the full Bayesian predictive (the temperature alone calibrates), ``0``
        lets the calibration go as far as the point estimate ``Phi(T m)``.
    random_state : int, RandomState instance or None, default=0
        Seeds the folds of the inner cross-validation (the only random choice of a fit; the path
        itself is deterministic). The default makes every fit reproducible.
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
        Binary problems (one-vs-rest classes) and the fits of the inner cross-validation's folds
        in parallel threads (joblib; ``None`` = 1, ``-1`` = all cores), sharing the design in
        memory; with a dask Client running and a dask array as ``X``, they run as tasks on it.
        Results do not depend on it. Threads pay where the work is large matrix products
        (thousands of cells: README, "Single-cell scale"). On microarray-sized data (tens of
        samples) a fit is interpreter-bound and two threads are slower than one (a five-class fit
        of 85 samples: 3.4 s against 2.3 s); parallelise over data sets or partitions with
        processes there (``model_selection.evaluate``'s ``n_jobs``).

    The path makes no random choice (ties between candidates go to the first feature): with the
    paper's criteria the same data give the same model whatever ``random_state``.

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
        Posterior mean, standard deviation and ARD precision of the intercept (0, 0 and ``inf``
        if it was pruned or ``fit_intercept=False``).
    path_ : pandas.DataFrame
        One row per step and binary problem: ``class`` (the problem's positive class), ``step``,
        ``action`` ("init", "add", "delete", "reestimate"; "screen" for the screened models that
        ``criterion="cv"`` records after the ARD steps, then "ml" for the ``ml_candidate``
        model), ``feature`` (for a screened model, the weakest of its genes), ``n_basis`` (basis functions in the model, the intercept
        excluded), ``log_evidence``, ``loo_error``, ``loo_prob_error``, ``ep_sweeps``.
    cv_results_ : pandas.DataFrame
        With ``criterion="cv"``: one row per binary problem and candidate, ``class``,
        ``candidate`` ("ard", "screen k" or "ard-ml"), ``step`` (its step on the full path),
        ``n_genes``, ``cv_n_genes`` (mean over the fold models), ``cv_log_loss_raw`` and
        ``cv_log_loss`` (pooled held-out log-loss before and after the temperature alone: the
        choice), ``temperature`` and ``variance_scale`` (the candidate's calibration, fitted
        jointly), ``cv_log_loss_final`` (the log-loss with both), ``chosen``.
    temperature_ : ndarray of shape (n_problems,)
        Temperature of each problem's model (``P = Phi(T m / sqrt(1 + s v))``): the one the inner
        cross-validation fitted for it, else 1.
    variance_scale_ : ndarray of shape (n_problems,)
        Variance scale ``s`` of each problem's model, in ``[0.5, 1]``: how much of the latent's
        posterior variance the predictive counts (fitted by the inner cross-validation, else 1).
    combine_temperature_ : float
        Temperature of the multi-class combination (1 for two classes or a model the inner
        cross-validation did not choose).
    chosen_step_ : ndarray of int of shape (n_problems,)
        Path step chosen by ``criterion`` for each binary problem (the rows of ``coef_``).
    support_ : ndarray of bool, shape (n_features_in_,)
        Features in the chosen model (of any class).
    posteriors_ : list of Posterior
        Posterior of each binary problem's weights (portable: see :class:`ardselect.model.Posterior`).
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
    Why ``criterion="cv"``: with far more genes than samples every score computed on the training
    data after the genes were chosen (the evidence, the EP leave-one-out error or density) is
    optimistic for the models selection favoured, so the path's own criteria drift towards models
    that predict worse than tuned L1-logistic regression; and data sets differ in which inductive
    bias wins (a few jointly chosen genes, many individually strong genes shrunk together, or
    many jointly chosen genes with capped weights: the ``ml_candidate``).
    The inner cross-validation refits the path and the screened models on each fold exactly as on
    the full training set (columns rescaled on the fold, genes ranked on the fold) and scores the
    held-out fold. Its temperatures are bounded by 1: they only soften a model (selection on the
    training data leaves a posterior overconfident; on separable folds sharpening would be
    unbounded). The variance scale can only sharpen, by discounting at most half the posterior
    variance of the latent, which with far more genes than samples is mostly prior variance in
    directions no training sample constrained (``ardselect._cv``). Fold paths stop at their first
    step without leave-one-out errors, which is the model the LOO criterion would pick on the full
    path; the inner cross-validation costs about
    one more path in total (README, "Speed"); the ``ml_candidate`` path stops the same way, on
    the full training set too.

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

    def __init__(self, *, criterion="cv", kernel="features", gamma="scale", degree=3,
                 coef0=1.0, fit_intercept=True, init="auto", max_init="auto", max_steps=2000,
                 tol=1e-5, alpha_min=0.1, patience=20, inclusion_penalty="bic",
                 intercept_alpha=INTERCEPT_ALPHA, cv=5, cv_repeats=1,
                 screen_sizes=(1, 2, 5, 10, 20, 50, 100, 200), screen_alpha=3.0,
                 ml_candidate=True, multiclass="ovr", variance_scale_min=0.5, random_state=0,
                 loo_prob_scale=50.0, damping=1.0, ep_tol=1e-5, ep_max_iter=200,
                 constant_features="warn", max_samples=None, n_jobs=None):
        self.criterion = criterion
        self.cv = cv
        self.cv_repeats = cv_repeats
        self.screen_sizes = screen_sizes
        self.screen_alpha = screen_alpha
        self.ml_candidate = ml_candidate
        self.multiclass = multiclass
        self.variance_scale_min = variance_scale_min
        self.random_state = random_state
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
        self.loo_prob_scale = loo_prob_scale
        self.damping = damping
        self.ep_tol = ep_tol
        self.ep_max_iter = ep_max_iter
        self.constant_features = constant_features
        self.max_samples = max_samples
        self.n_jobs = n_jobs

    #: The parameter contract, checked by scikit-learn's validation at the start of ``fit``.
    _parameter_constraints: dict = {
        **_ARDPathEstimator._path_constraints,
        "criterion": [StrOptions(set(CRITERIA))],
        "cv": [Interval(Integral, 2, None, closed="left")],
        "cv_repeats": [Interval(Integral, 1, None, closed="left")],
        "screen_sizes": ["array-like"],
        "screen_alpha": [Interval(Real, 0, None, closed="neither")],
        "ml_candidate": ["boolean"],
        "multiclass": [StrOptions({"ovr", "shared"})],
        "variance_scale_min": [Interval(Real, 0, 1, closed="both")],
        "random_state": ["random_state"],
        "init": [StrOptions({"auto", "relevant", "single"}), Interval(Integral, 1, None, closed="left")],
        "max_init": [StrOptions({"auto"}), Interval(Integral, 1, None, closed="left"), None],
        "inclusion_penalty": [Interval(Real, 0, None, closed="left"), StrOptions({"bic"})],
        "intercept_alpha": [Interval(Real, 0, None, closed="neither"), StrOptions({"ard"})],
        "loo_prob_scale": [Interval(Real, 0, None, closed="neither")],
        "damping": [Interval(Real, 0, 1, closed="right")],
        "ep_tol": [Interval(Real, 0, None, closed="neither")],
        "ep_max_iter": [Interval(Integral, 1, None, closed="left")],
        "constant_features": [StrOptions({"warn", "ignore", "raise"})],
        "max_samples": [Interval(Integral, 2, None, closed="left"), None],
        "n_jobs": [Integral, None],
    }

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
        self._validate_params()  # scikit-learn: one clear error naming the parameter and its range
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
                    "fit a stratified sketch instead (README, 'Beyond one machine').",
                    UserWarning, stacklevel=2)
            X = self._validate_lazy(X.X)
            client = None  # the passes use the active scheduler; the classes run here
        elif client is not None:
            if self.sketch_ is None and X.shape[0] > GATHER_WARN_ROWS:
                warnings.warn(
                    f"max_samples is None: all {X.shape[0]:,} rows of the dask array are gathered "
                    "into memory and fitted exactly; pass max_samples (e.g. 5000) to fit a "
                    "stratified sketch instead (README, 'Single-cell scale').", UserWarning,
                    stacklevel=2)
            X = X.compute()  # the sketch's rows (or everything), gathered from the chunks
        if not lazy:
            X = self._validate_x(X, reset=True)
        classes, y_idx = check_binary_labels(y, X.shape[0])
        self.classes_ = classes
        basis = make_basis(self.kernel, self.gamma, self.degree, self.coef0)
        Phi_s, scale, allowed = self._prepare_design(X, basis,
                                                     constant_features=self.constant_features)
        problems = [1] if classes.size == 2 else list(range(classes.size))
        cv = self.criterion == "cv"
        # multiclass="shared": one path for all classes, the genes' precisions shared.
        self._joint = self.multiclass == "shared" and classes.size > 2
        self._screening = cv and self._is_features and not self._joint
        self._screen_k = self._screen_sizes(allowed) if self._screening else []
        self._ml = cv and self._is_features and bool(self.ml_candidate)
        # The path is thousands of small dense operations; multi-threaded BLAS only adds contention
        # there (measured 50x slower on a loaded 2-core machine), so the fit runs on one BLAS thread.
        with _one_blas_thread():
            self._fit_problems(problems, classes, y_idx, Phi_s, allowed, scale, client)
            if cv:
                self._cross_validate(problems, classes, y_idx, Phi_s, allowed, client)
        self._set_steps([f.choose(self.criterion) for f in self._fits])
        if lazy:
            self._n_passes = X.n_passes
            logger.info("exact fit on the dask array: %d passes over its row chunks", X.n_passes)
        extra = {name: (lambda s, n=name: s.stats[n])
                 for name in ("loo_error", "loo_prob_error", "ep_sweeps")}
        self.path_ = pd.concat([self._path_frame(f.steps, extra, problem_label=f.positive_class)
                                for f in self._fits], ignore_index=True)
        return self

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

    def _problem_steps(self, design, signs, allowed, label, *, fold=False):
        """The ARD path of one signed design and, with ``criterion="cv"``, the screened models.

        Returns the likelihood adapter, whether the path converged, its steps (ARD steps, then
        screened models) and the number of ARD steps. A ``fold`` of the inner cross-validation
        only needs the model the LOO error picks, the *first* step of smallest LOO error: its path
        ends at the first step without LOO errors, which none can beat (on separable microarray
        data often the starting model), the same model a full path would pick.
        """
        init = self.init
        if init == "auto":
            init = "relevant" if self._is_features else "single"
        fixed = self._held_intercept()
        prob = _EPProbitProblem(design, allowed, loo_prob_scale=self.loo_prob_scale,
                                damping=self.damping, ep_tol=self.ep_tol,
                                ep_max_iter=self.ep_max_iter)

        def run_path(alpha_min, penalty, stop):
            return SequentialPath(prob, init=init, max_steps=self.max_steps, tol=self.tol,
                                  max_init=self._max_init(design.shape[0]), alpha_min=alpha_min,
                                  patience=self.patience, progress_label=str(label),
                                  penalty=penalty, stop=stop, fixed=fixed).run()

        path = run_path(self.alpha_min, self._penalty(design.shape[0], design.shape[1]),
                        _no_loo_errors if fold else None)
        steps = list(path.steps)
        n_ard = len(steps)
        if self._screening:
            order = screen_order(design, signs, allowed, self._icol)
            steps += screen_steps(prob, order, self._screen_k, self.screen_alpha, self._icol,
                                  n_ard, intercept_alpha=(INTERCEPT_ALPHA if self.intercept_alpha
                                                          == "ard" else self.intercept_alpha))
        if self._ml:
            # The second ARD candidate: the paper's type-II maximum likelihood (no inclusion
            # penalty) with the precision floor raised to ML_ALPHA_MIN, read only by its LOO
            # choice, so it ends at its first step without LOO errors or LOO-stalled (_LooStall).
            ml = run_path(ML_ALPHA_MIN, 0.0, _LooStall(self.patience))
            pick = ml.steps[_path_choice(ml.steps, "loo")]
            steps.append(Step(len(steps), ML_ACTION, -1, pick.active, pick.alpha, pick.stats,
                              pick.state))
        return prob, path.converged, steps, n_ard

    def _held_intercept(self):
        """``{column: alpha}`` of the intercept held at ``intercept_alpha`` in every model, or None.

        With a number for ``intercept_alpha`` the intercept is never acted on; with ``"ard"`` (or
        no intercept) nothing is held.
        """
        if self.intercept_alpha == "ard" or self._icol < 0:
            return None
        return {self._icol: float(self.intercept_alpha)}

    def _joint_steps(self, Phi, y_idx, allowed, *, fold=False):
        """The shared-precision path of every class (``multiclass="shared"``).

        ``Phi`` is the unsigned, unit-RMS design. Returns the classes' likelihood adapters, whether
        the path converged, one list of steps per class (the joint path's steps, then with the ML
        candidate the LOO step of a joint ML path) and the number of path steps. A ``fold`` ends
        its path at the first step without LOO errors, as :meth:`_problem_steps` does.
        """
        n, m = Phi.shape
        probs = []
        for k in range(int(y_idx.max()) + 1):
            t = np.where(y_idx == k, 1.0, -1.0)
            prob = _EPProbitProblem(Phi, allowed, loo_prob_scale=self.loo_prob_scale,
                                    damping=self.damping, ep_tol=self.ep_tol,
                                    ep_max_iter=self.ep_max_iter)
            prob.release(Phi, t)  # one design for all classes, signed when used
            probs.append(prob)
        fixed = self._held_intercept()

        def run_path(alpha_min, penalty, stop):
            return JointPath(probs, allowed, alpha_min=alpha_min, penalty=penalty, fixed=fixed,
                             max_init=self._max_init(n), max_steps=self.max_steps, tol=self.tol,
                             patience=self.patience, stop=stop, progress_label="all").run()

        path = run_path(self.alpha_min, self._penalty(n, m), _no_loo_errors if fold else None)
        steps = [list(s) for s in path.steps]
        n_ard = len(steps[0])
        if self._ml:
            ml = run_path(ML_ALPHA_MIN, 0.0, _LooStall(self.patience))
            pick = _path_choice(ml.steps[0], "loo")
            for class_steps, ml_steps in zip(steps, ml.steps, strict=True):
                st = ml_steps[pick]
                class_steps.append(Step(n_ard, ML_ACTION, -1, st.active, st.alpha, st.stats,
                                        st.state))
        return probs, path.converged, steps, n_ard

    def _run_tasks(self, fn, args, client):
        """``[fn(*a) for a in args]``: on the user's dask Client, with joblib (``n_jobs``) or here."""
        n_jobs = 1 if self.n_jobs is None else self.n_jobs
        if client and len(args) > 1:
            futures = [client.submit(fn, *a, pure=False) for a in args]
            return client.gather(futures)
        if n_jobs != 1 and len(args) > 1:
            from joblib import Parallel, delayed

            # Threads, not processes: the design is shared instead of copied into every worker
            # (measured: +75 MB against +506 MB for two workers on a 6,000-cell sketch problem,
            # and faster), and the heavy parts (BLAS, large ufuncs) release the GIL.
            return Parallel(n_jobs=n_jobs, prefer="threads")(delayed(fn)(*a) for a in args)
        return [fn(*a) for a in args]

    def _fit_problems(self, problems, classes, y_idx, Phi_s, allowed, scale, client=None):
        # hash=False: a content-hashed key would be shared with the inner-CV scatter of the same
        # matrix, and releasing one future would lose the other's data on the workers.
        design = Phi_s
        if client and len(problems) > 1 and not self._joint:
            design = client.scatter(Phi_s, broadcast=True, hash=False)
        if self._joint:
            probs, converged, steps, n_ard = self._joint_steps(Phi_s, y_idx, allowed)
            results = [(prob, converged, class_steps, n_ard)
                       for prob, class_steps in zip(probs, steps, strict=True)]
        else:
            results = self._run_tasks(
                _fit_binary, [(self, k, classes[k], y_idx, design, allowed) for k in problems],
                client)
        self._fits = []
        n_iter = 0
        for k, (prob, converged, steps, n_ard) in zip(problems, results, strict=True):
            if not converged and not (self._joint and k != problems[0]):
                what = "shared path" if self._joint else f"path for class {label(classes[k])}"
                warnings.warn(
                    f"The {type(self).__name__} {what} stopped at "
                    f"max_steps={self.max_steps} before converging; raise max_steps (the chosen "
                    "model is still valid).", ConvergenceWarning, stacklevel=3)
            if prob.n_ep_unconverged:
                logger.info("EP hit ep_max_iter at %d path steps", prob.n_ep_unconverged)
            n_iter = max(n_iter, n_ard - 1)
            fit = _BinaryFit(classes[k], steps, converged, prob, scale, self._basis_names,
                             self._icol)
            fit.n_ard = n_ard
            fit.signs = np.where(y_idx == k, 1.0, -1.0)  # (n,) +1 for the problem's class
            self._fits.append(fit)
        self.n_iter_ = n_iter

    def _screen_sizes(self, allowed):
        """The screened model sizes for this fit: ``screen_sizes`` capped at the usable genes."""
        sizes = np.asarray(self.screen_sizes).ravel()
        if sizes.size == 0 or sizes.dtype.kind not in "iu" or np.any(sizes < 1):
            msg = ("screen_sizes must be a non-empty sequence of positive ints; "
                   f"got {self.screen_sizes!r}.")
            raise ValueError(msg)
        n_genes = int(allowed.sum()) - int(self._icol >= 0 and allowed[self._icol])
        return sorted({min(int(k), n_genes) for k in sizes if n_genes > 0})

    def _cross_validate(self, problems, classes, y_idx, Phi_s, allowed, client=None):
        """Choose each problem's model and temperature by inner cross-validation (``_cv``)."""
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
                fit.cv_step = fit.choose("loo")
            self.cv_results_ = pd.DataFrame()
            self._combine_temperature = 1.0
            return
        # Repeat r's held-out latents go to rows r * n ... (r + 1) * n - 1 of the pooled
        # predictions; with one repeat, the folds are those of StratifiedKFold with this seed.
        seed = check_random_state(self.random_state).randint(np.iinfo(np.int32).max)
        reps = int(self.cv_repeats)
        splitter = RepeatedStratifiedKFold(n_splits=n_folds, n_repeats=reps, random_state=seed)
        folds = [(tr, te, f // n_folds * n)
                 for f, (tr, te) in enumerate(splitter.split(np.zeros(n), y_idx))]
        # The candidates in the order ties are broken (no screened models with shared genes).
        names = [f"screen {k}" for k in self._screen_k] + ["ard"]
        if self._joint:
            names.append(START_CANDIDATE)
        if self._ml:
            names.append(ML_CANDIDATE)
        design = client.scatter(Phi_s, broadcast=True, hash=False) if client else Phi_s
        if self._joint:  # one task per fold, all classes in it
            per_fold = self._run_tasks(
                _fold_joint, [(self, y_idx, design, allowed, tr, te) for tr, te, _ in folds],
                client)
            results = [(i, off, te, res[i]) for (_, te, off), res in zip(folds, per_fold,
                                                                           strict=True)
                       for i in range(len(problems))]
        else:
            keys = [(i, off, tr, te) for tr, te, off in folds for i in range(len(problems))]
            tasks = [(self, problems[i], classes[problems[i]], y_idx, design, allowed, tr, te)
                     for i, _, tr, te in keys]
            results = [(i, off, te, res) for (i, off, _, te), res in zip(
                keys, self._run_tasks(_fold_candidates, tasks, client), strict=True)]
        oof = [{name: np.zeros((2, reps * n)) for name in names} for _ in problems]
        fold_genes = [{name: [] for name in names} for _ in problems]
        for i, off, test, res in results:
            for name, (latent, genes) in res.items():
                oof[i][name][:, off + test] = latent
                fold_genes[i][name].append(genes)
        y_idx = np.tile(y_idx, reps)  # the labels of the pooled predictions
        tables = []
        chosen = []  # per problem, its candidate of lowest held-out log-loss
        calib = []  # per problem, candidate -> (temperature, variance scale)
        step_ofs = []  # per problem, candidate -> its step
        for i, (k, fit) in enumerate(zip(problems, self._fits, strict=True)):
            t = np.where(y_idx == k, 1.0, -1.0)
            best, _, rows = choose_candidate(oof[i], t, self.variance_scale_min)
            step_of = {"ard": fit.choose("loo")}
            if self._joint:
                step_of[START_CANDIDATE] = 0
            step_of.update({f"screen {kk}": fit.n_ard + j for j, kk in enumerate(self._screen_k)})
            if self._ml:
                step_of[ML_CANDIDATE] = len(fit.steps) - 1
            fit.step_calibration = {step_of[r["candidate"]]: (r["temperature"], r["variance_scale"])
                                    for r in rows}
            for r in rows:
                step = step_of[r["candidate"]]
                r.update({"class": fit.positive_class, "step": step,
                          "n_genes": int(np.sum(fit.steps[step].active != self._icol)),
                          "cv_n_genes": float(np.mean(fold_genes[i][r["candidate"]]))})
            step_ofs.append(step_of)
            tables.append(rows)
            chosen.append(best)
            calib.append({r["candidate"]: (r["temperature"], r["variance_scale"]) for r in rows})

        def combined(pick):
            """Combination temperature and multi-class held-out log-loss of one pick per problem."""
            z = [moderated_latent(*oof[i][c], variance_scale=calib[i][c][1])
                 for i, c in enumerate(pick)]
            temps = np.array([calib[i][c][0] for i, c in enumerate(pick)])
            return fit_combine_temperature(np.column_stack(z), temps, y_idx)

        self._combine_temperature = 1.0
        if self._joint:
            # The same candidate in every class (so the genes stay shared): the one of lowest
            # multi-class held-out log-loss, the first on ties.
            scored = [(combined([name] * len(problems)), name) for name in names]
            (self._combine_temperature, _), best = min(scored, key=lambda c: c[0][1])
            chosen = [best] * len(problems)
        elif len(problems) > 1:
            self._combine_temperature = combined(chosen)[0]
        for fit, rows, best, step_of in zip(self._fits, tables, chosen, step_ofs, strict=True):
            fit.cv_step = step_of[best]
            for r in rows:
                r["chosen"] = r["candidate"] == best
        tables = [r for rows in tables for r in rows]
        cols = ["class", "candidate", "step", "n_genes", "cv_n_genes", "cv_log_loss_raw",
                "cv_log_loss", "temperature", "variance_scale", "cv_log_loss_final", "chosen"]
        self.cv_results_ = pd.DataFrame(tables)[cols]

    def _penalty(self, n_samples, n_columns=None):
        """``inclusion_penalty`` in nats (``"bic"``: ``log(n_samples) / 2``).

        With ``n_columns``, one value per design column, 0 for the intercept (the prior is on genes).
        """
        c = (0.5 * np.log(n_samples) if isinstance(self.inclusion_penalty, str)
             else float(self.inclusion_penalty))
        if n_columns is None or c == 0.0:
            return c
        per = np.full(n_columns, c)
        if self._icol >= 0:
            per[self._icol] = 0.0
        return per

    def _max_init(self, n_samples):
        """``max_init`` with ``"auto"`` resolved: at most one starting gene per sample, and 100."""
        return min(int(n_samples), 100) if self.max_init == "auto" else self.max_init

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
        # The calibration the inner cross-validation fitted belongs to the candidates it scored;
        # any other step predicts with its plain posterior (temperature and variance scale 1).
        calibration = np.array([f.step_calibration.get(f.chosen, (1.0, 1.0)) for f in self._fits])
        self.temperature_, self.variance_scale_ = calibration[:, 0], calibration[:, 1]
        at_cv = all(f.chosen == f.cv_step for f in self._fits)
        self.combine_temperature_ = (float(getattr(self, "_combine_temperature", 1.0))
                                     if at_cv else 1.0)

    # ------------------------------------------------------------------ model choice
    def choose_step(self, criterion):
        """Path step that ``criterion`` picks for each binary problem.

        Returns
        -------
        ndarray of int of shape (n_problems,)
            Aligned with the rows of ``coef_``, as ``chosen_step_``.
        """
        check_is_fitted(self)
        check_criterion(criterion)
        return np.array([f.choose(criterion) for f in self._fits], dtype=np.intp)

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
    def decision_function(self, X):
        """The moderated latent ``T m / sqrt(1 + s v)`` (per class for multi-class).

        ``m`` and ``v`` are the posterior mean and variance of the latent ``w . phi(x)``, ``T`` and
        ``s`` the calibration the inner cross-validation fitted (``temperature_``,
        ``variance_scale_``; both 1 otherwise); each binary problem's probability is ``Phi`` of
        this score, so the score ranks samples exactly as
        :meth:`predict_proba` does (the posterior mean ``m`` alone would not: a sample far from the
        training data has a large ``v``). Its sign gives the prediction; multi-class: its argmax.

        Returns
        -------
        ndarray of shape (n_samples,) or (n_samples, n_classes)
        """
        m, v = self._latent(X)
        z = moderated_latent(m, v, self.temperature_, self.variance_scale_)
        return z[:, 0] if z.shape[1] == 1 else z

    def predict_proba(self, X):
        """Class probabilities, integrating over the Gaussian weight posterior.

        For each binary problem ``P = Phi(T m / sqrt(1 + s v))`` with ``m, v`` the posterior mean
        and variance of the latent and ``T, s`` its calibration (``temperature_``,
        ``variance_scale_``: 1 unless fitted by ``criterion="cv"``). With more than two classes the
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
                                self.variance_scale_)

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
        (:meth:`predict_proba`, with the model's calibration: ``temperature_``,
        ``variance_scale_`` and ``combine_temperature_``). No refit is run. As with EP's per-sample leave-one-out, the
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
                                       self.variance_scale_))

    # ------------------------------------------------------------------ selection
    def ranked_features(self):
        """Every feature (basis function) ranked, for the chosen model of each binary problem.

        Selected features come first, ordered by relevance (the inverse ARD precision on the unit-RMS
        scale), equal relevance (a screened model's shared precision, precisions at the floor) by
        ``|z|``; the others follow, ordered by the evidence gain they would bring if added to the
        chosen model. Remaining ties keep input order.

        Returns
        -------
        pandas.DataFrame
            Columns ``class``, ``rank`` (1 = best), ``feature``, ``selected``, ``relevance``, ``mean``,
            ``sd``, ``alpha``, ``entered_step`` (first path step with the feature in the model, <NA>
            if never), ``log_bf`` (log Bayes factor of the feature in the model against out of it,
            the others as chosen, under a uniform prior on its weight's prior variance up to
            ``1 / alpha_min``), ``pip`` (posterior inclusion probability at even prior odds) and
            ``p_sign`` (probability that the weight has the sign of ``mean``, or for a feature
            outside the model the sign it would take if added); see ``ardselect._certainty``;
            ``z`` (signed: posterior mean / sd of the weight in the model; outside it, the z the
            weight would have if the feature entered with a flat prior, ``q / sqrt(s)``, whose
            square orders those features), ``log_bf_marginal`` (the log Bayes factor of the feature
            and the intercept against the intercept alone, on the EP sites of the intercept-only
            model: how much it predicts on its own, where ``log_bf`` says whether the model needs
            it beside the others). NaN for
            features that cannot enter (constant ones).
            Ordered by class, then rank.
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
            design = fit.problem.design  # rebuilt once per problem (see _EPProbitProblem.release)
            S, Q = score_candidates(design, st.post, tau, t)
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
            # Signed z of each weight: posterior mean / sd in the model (= q / sqrt(alpha + s) in
            # the virtual regression); outside it, the z the weight would have if it entered with
            # a flat prior, q / sqrt(s), whose square is the potential that ranks those genes.
            with np.errstate(divide="ignore", invalid="ignore"):
                z_out = q_loo[:n_basis] / np.sqrt(s_loo[:n_basis])
                z_in = self.coef_[i] / self.coef_sd_[i]
            z = np.where(np.isfinite(self.alpha_[i]), z_in, z_out)
            z = np.where(usable, z, np.nan)
            # Marginal evidence: the gene alone (beside the intercept) against the intercept alone,
            # on the EP sites of the intercept-only model (the intercept at its fixed precision,
            # or with intercept_alpha="ard" at the widest prior the path allows): a
            # one-gene Bayes factor, by the same closed form. Without the intercept, genes high in
            # the larger class would score for the class imbalance itself.
            if fit.intercept_col >= 0:
                base = np.array([fit.intercept_col])
                a0 = self.alpha_min if self.intercept_alpha == "ard" else self.intercept_alpha
                st0 = fit.problem.fit_sites(base, np.array([float(a0)]), None, tol=1e-9)
                b0 = st0.tau
                t0 = np.where(b0 > 0, st0.nu / np.where(b0 > 0, b0, 1.0), 0.0)
                post0 = st0.post
            else:
                b0, t0 = fit.problem.initial_virtual()
                post0 = LatentPosterior(np.zeros((b0.shape[0], 0)), np.zeros(0), b0, b0 * t0)
            S0, Q0 = score_candidates(design, post0, b0, t0)
            log_bf_marginal, _, _ = inclusion_certainty(S0[:n_basis], Q0[:n_basis],
                                                        1.0 / self.alpha_min)
            log_bf_marginal = np.where(usable, log_bf_marginal, np.nan)
            potential = np.where(fit.problem.allowed[:n_basis], potential, -np.inf)
            selected = np.isfinite(self.alpha_[i])
            key = np.where(selected, relevance, potential)
            # Selected first, then by key descending; equal relevance (a screened model's shared
            # precision, or precisions at the floor) is ordered by |weight / sd|.
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
                "relevance": relevance[order],
                "mean": self.coef_[i, order],
                "sd": self.coef_sd_[i, order],
                "alpha": self.alpha_[i, order],
                "entered_step": pd.array(np.where(entered[order] >= 0, entered[order], -1),
                                         dtype="Int64"),
                "log_bf": log_bf[order],
                "pip": pip[order],
                "p_sign": p_sign[order],
                "z": z[order],
                "log_bf_marginal": log_bf_marginal[order],
            }))
        out = pd.concat(frames, ignore_index=True)
        out.loc[out["entered_step"] < 0, "entered_step"] = pd.NA
        return out

