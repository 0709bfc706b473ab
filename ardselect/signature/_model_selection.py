"""The code of :mod:`ardselect.model_selection`, which re-exports its public names and documents them."""

from __future__ import annotations

import inspect
import logging
import time
import warnings
from collections.abc import Mapping
from numbers import Integral

import numpy as np
import pandas as pd
import scipy.sparse as sp
from sklearn.base import clone

from ..dataio._preprocessing import auto_log
from ..engine._design import as_design
from ..engine._parallel import PROCESS_MIN_WORK, task_work
from ..engine._validation import (
    blank_labels,
    check_class_labels,
    check_finite_named,
    check_real,
)
from ..estimators._constraints import ParameterError
from ..exceptions import ArdselectError, DataError, LabelError
from ..numerics._criteria import CRITERIA

__all__ = [
    "FewPartitionsWarning",
    "baselines",
    "calibrated_ece",
    "calibration_table",
    "ep_leave_group_out",
    "evaluate",
    "expected_calibration_error",
    "genes_used",
    "n_genes_used",
    "paired_difference",
    "partitions",
    "selection_frequency",
    "selection_stability",
    "summarize",
]

logger = logging.getLogger("ardselect")

_METRICS = ("error_rate", "genes", "log_loss", "brier", "ece", "log_loss_prior", "fit_seconds")


def expected_calibration_error(confidence, correct, n_bins: int = 10) -> float:
    """Expected calibration error of top-label confidences.

    The confidences (probability of the predicted class) are put in ``n_bins`` equal-width bins on
    [0, 1] (the last one closed); the ECE is ``sum_b (n_b / n) |mean confidence_b - accuracy_b|``.

    Examples
    --------
    >>> expected_calibration_error([0.9, 0.9, 0.6, 0.6], [True, True, True, False])
    0.1
    """
    conf = np.asarray(confidence, dtype=np.float64)
    ok = np.asarray(correct, dtype=np.float64)
    if conf.size == 0:
        return float("nan")
    bins = np.minimum((conf * n_bins).astype(int), n_bins - 1)
    total = 0.0
    for b in np.unique(bins):
        m = bins == b
        total += m.sum() * abs(conf[m].mean() - ok[m].mean())
    return round(float(total / conf.size), 12)


def calibrated_ece(confidence, *, n_bins: int = 10, n_draws: int = 200,
                   random_state=0) -> tuple[float, float]:
    """The ECE that sampling alone gives a perfectly calibrated model with these confidences.

    An ECE is never 0 on finitely many predictions, even for a calibrated model: each bin's
    accuracy is a proportion with its own noise. Here each prediction is drawn correct with
    probability equal to its confidence (what calibration means), ``n_draws`` times, and the
    :func:`expected_calibration_error` of the draws is taken. An observed ECE well above the
    returned mean (above its 95% quantile, say) is miscalibration; one near it is noise.

    Returns
    -------
    mean, q95 : float
        Mean and 95% quantile of the ECE over the draws (seeded by ``random_state``).

    Examples
    --------
    >>> mean, q95 = calibrated_ece(np.full(50, 0.8))
    >>> bool(0.03 < mean < 0.06 < q95)
    True
    """
    conf = np.asarray(confidence, dtype=np.float64)
    if conf.size == 0:
        return float("nan"), float("nan")
    rng = np.random.default_rng(random_state)
    draws = [expected_calibration_error(conf, rng.random(conf.size) < conf, n_bins)
             for _ in range(int(n_draws))]
    return float(np.mean(draws)), float(np.quantile(draws, 0.95))


def calibration_table(predictions: pd.DataFrame, *, n_bins: int = 10) -> pd.DataFrame:
    """Reliability of held-out probabilities: observed accuracy per bin of predicted confidence.

    ``predictions`` has columns ``criterion``, ``confidence`` (the predicted probability of the
    predicted class) and ``correct`` (bool). The bins are those of
    :func:`expected_calibration_error` (``n_bins`` equal-width bins on [0, 1]; with two classes the
    confidence is at least 0.5, so only the upper half holds predictions). Returns one row per
    criterion and non-empty bin: ``criterion``, ``bin_low``, ``bin_high``, ``n``,
    ``mean_confidence``, ``accuracy``; plus the criterion's :func:`expected_calibration_error` in
    ``ece`` (the same on every row).
    """
    rows = []
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    for crit, sub in predictions.groupby("criterion", sort=False):
        conf = sub["confidence"].to_numpy(float)
        corr = sub["correct"].to_numpy(bool)
        idx = np.minimum((conf * n_bins).astype(int), n_bins - 1)  # as expected_calibration_error
        ece = expected_calibration_error(conf, corr, n_bins)
        for b in range(n_bins):
            m = idx == b
            if not m.any():
                continue
            rows.append({"criterion": crit, "bin_low": edges[b], "bin_high": edges[b + 1],
                         "n": int(m.sum()), "mean_confidence": float(conf[m].mean()),
                         "accuracy": float(corr[m].mean()), "ece": ece})
    return pd.DataFrame(rows, columns=["criterion", "bin_low", "bin_high", "n", "mean_confidence",
                                       "accuracy", "ece"])


def _unwrap(est):
    """The fitted estimator inside search and calibration wrappers."""
    while True:
        if hasattr(est, "best_estimator_"):
            est = est.best_estimator_
        elif hasattr(est, "calibrated_classifiers_"):
            est = est.calibrated_classifiers_[0].estimator
        else:
            return est


def n_genes_used(est, n_features: int) -> int:
    """Number of input genes a fitted classifier uses (the size of :func:`genes_used`)."""
    return int(genes_used(est, n_features).sum())


def genes_used(est, n_features: int) -> np.ndarray:
    """Boolean mask of the input genes a fitted classifier uses, shape ``(n_features,)``.

    Walks search wrappers (``best_estimator_``), calibration wrappers and pipelines: selectors with
    ``get_support`` narrow the set, and a final linear model keeps the columns with a non-zero
    coefficient for some class (one-vs-rest wrappers: for some binary problem). Anything else is taken
    to use every gene it receives.
    """
    est = _unwrap(est)
    steps = [s for _, s in est.steps] if hasattr(est, "steps") else [est]
    mask = np.ones(n_features, dtype=bool)
    for step in steps:
        step = _unwrap(step)
        if step is None or step == "passthrough":
            continue
        if hasattr(step, "get_support") and not hasattr(step, "coef_sd_"):
            keep = np.asarray(step.get_support(), dtype=bool)
            sub = mask.copy()
            sub[np.flatnonzero(mask)] = keep
            mask = sub
            continue
        if hasattr(step, "get_support"):  # an ARD model: its own support
            keep = np.asarray(step.get_support(), dtype=bool)
        elif hasattr(step, "estimators_"):  # one-vs-rest
            coefs = [np.atleast_2d(_unwrap(e).coef_) for e in step.estimators_]
            keep = np.any(np.vstack(coefs) != 0, axis=0)
        elif hasattr(step, "coef_"):
            keep = np.any(np.atleast_2d(step.coef_) != 0, axis=0)
        else:
            continue
        sub = mask.copy()
        sub[np.flatnonzero(mask)] = keep
        mask = sub
    return mask


def partitions(y, *, n_splits=20, train_size=2 / 3, groups=None, random_state=0):
    """Seeded stratified train/test partitions: ``[(train_idx, test_idx), ...]``.

    ``train_size`` is a fraction in (0, 1) or a number of samples. With ``groups`` (one label per
    sample, e.g. the donor or patient), whole groups are held out: each partition is one fold of a
    stratified group K-fold with ``K = round(1 / (1 - train fraction))``, reshuffled per repeat.

    The partitions are distinct: a repeat of one already drawn is skipped (a few groups allow only
    a few partitions, and duplicates would make the standard errors over partitions too small).
    When fewer than ``n_splits`` distinct partitions exist, those are returned with a
    :class:`FewPartitionsWarning` saying how many.
    """
    from sklearn.model_selection import StratifiedGroupKFold, StratifiedShuffleSplit

    y = np.asarray(y)
    n = y.shape[0]
    if not (random_state is None or isinstance(random_state, np.random.RandomState)
            or (isinstance(random_state, Integral) and 0 <= random_state < 2**32)):
        msg = (f"The 'random_state' parameter of the partitions must be an int in [0, 2**32 - 1], "
               f"a RandomState or None. Got {random_state!r} instead.")
        raise ParameterError(msg)
    frac = float(train_size) / n if train_size >= 1 else float(train_size)
    if not 0 < frac < 1 or (train_size >= 1 and train_size != int(train_size)):
        # A count must be whole: 1.5 would otherwise become a training part of one sample.
        msg = (f"train_size must be a fraction in (0, 1) or a whole count below {n}; "
               f"got {train_size!r}")
        raise DataError(msg)
    seen: set[bytes] = set()

    def new(parts):
        """The partitions of ``parts`` not drawn before (by their test samples)."""
        out = []
        for train, test in parts:
            key = np.sort(test).tobytes()
            if key not in seen:
                seen.add(key)
                out.append((train, test))
        return out

    if groups is None:
        size = int(train_size) if train_size >= 1 else float(train_size)
        out, state = [], random_state
        for r in range(_MAX_ROUNDS):
            try:
                splitter = StratifiedShuffleSplit(n_splits=n_splits, train_size=size,
                                                  random_state=state)
                out += new(splitter.split(np.zeros(n), y))
            except ValueError as exc:
                msg = f"cannot draw stratified partitions: {exc}"
                raise LabelError(msg) from None
            if len(out) >= n_splits:
                break
            # another round for the duplicates, seeded from the first
            state = int(np.random.default_rng(
                [r, *([random_state] if isinstance(random_state, Integral) else [])]
            ).integers(2**31 - 1))
        return _enough(out, n_splits, "stratified")
    groups = np.asarray(groups)
    if groups.shape[0] != n:
        msg = f"groups has {groups.shape[0]} entries for {n} samples"
        raise DataError(msg)
    k = max(2, round(1.0 / (1.0 - frac)))
    if np.unique(groups).size < k:
        msg = f"{np.unique(groups).size} groups cannot make {k} group-wise folds"
        raise LabelError(msg)
    rng = np.random.default_rng(random_state)
    out = []
    for _ in range(_MAX_ROUNDS * n_splits):  # each round (repeat) gives k partitions
        if len(out) >= n_splits:
            break
        seed = int(rng.integers(2**31 - 1))
        with warnings.catch_warnings():
            # sklearn warns when a class has fewer groups than folds; the folds stay valid.
            warnings.simplefilter("ignore", UserWarning)
            folds = StratifiedGroupKFold(n_splits=k, shuffle=True, random_state=seed).split(
                np.zeros(n), y, groups)
            out += new(folds)
    return _enough(out, n_splits, f"group-wise ({np.unique(groups).size} groups)")


#: Rounds of drawing (per partition asked for, with groups) before the distinct partitions found
#: are taken as all there are.
_MAX_ROUNDS = 20


class FewPartitionsWarning(UserWarning):
    """Fewer distinct train/test partitions exist than were asked for."""


def _enough(out, n_splits: int, how: str):
    if len(out) < n_splits:
        msg = (f"only {len(out)} distinct {how} train/test partitions exist for these samples, "
               f"not the {n_splits} asked for; using those {len(out)}")
        warnings.warn(msg, FewPartitionsWarning, stacklevel=3)
    return out[:n_splits]


def _scores(proba, y_test, classes, y_train):
    idx = np.searchsorted(classes, y_test)
    known = (idx < classes.size) & (classes[np.minimum(idx, classes.size - 1)] == y_test)
    if not known.all():
        msg = f"test labels {sorted(set(y_test[~known]))} are not among the training classes"
        raise LabelError(msg)
    rows = np.arange(y_test.size)
    pred = classes[np.argmax(proba, axis=1)]
    correct = pred == y_test
    p_true = np.clip(proba[rows, idx], 1e-15, 1.0)  # clipped for the log only
    onehot = np.zeros_like(proba)
    onehot[rows, idx] = 1.0
    freq = np.array([np.mean(y_train == c) for c in classes])
    return {
        "errors": int((~correct).sum()),
        "error_rate": float(np.mean(~correct)),
        "log_loss": float(-np.mean(np.log(p_true))),
        "brier": float(np.mean(np.sum((proba - onehot) ** 2, axis=1))),
        "ece": expected_calibration_error(proba.max(axis=1), correct),
        "log_loss_prior": float(-np.mean(np.log(np.clip(freq[idx], 1e-15, 1.0)))),
    }, pred


def _input_columns(pre, n_in: int, n_out: int):
    """Input column of each column a fitted preprocessor puts out, or None if it cannot be told."""
    for attr in ("keep_", "get_support"):
        if hasattr(pre, attr):
            keep = getattr(pre, attr)
            keep = np.asarray(keep() if callable(keep) else keep, dtype=bool)
            if keep.shape == (n_in,) and int(keep.sum()) == n_out:
                return np.flatnonzero(keep)
    return np.arange(n_in) if n_out == n_in else None


def _takes_groups(est, name="groups"):
    """Whether ``est.fit`` takes ``groups`` (its inner cross-validation can hold out groups).

    ``name="covariates"``: whether it holds known covariates.
    """
    import inspect

    try:
        return name in inspect.signature(est.fit).parameters
    except (TypeError, ValueError):
        return False


def _one_split(split, X, y, ids, train, test, methods, criteria, preprocessor, groups=None,
               covariates=None):
    classes = np.unique(y[train])
    Xtr, Xte = X[train], X[test]
    columns = np.arange(X.shape[1])
    if preprocessor is not None:
        pre = clone(preprocessor).fit(Xtr)
        Xtr, Xte = pre.transform(Xtr), pre.transform(Xte)
        columns = _input_columns(pre, X.shape[1], Xtr.shape[1])
    n_features = Xtr.shape[1]
    rows, preds, chosen = [], [], {}

    def record(name, model, seconds, *, held=False):
        if held:
            proba = model.predict_proba(Xte, covariates=covariates[test])
        else:
            proba = model.predict_proba(Xte)
        proba = np.asarray(proba, dtype=np.float64)
        model_classes = np.asarray(model.classes_)
        if not np.array_equal(model_classes.astype(str), classes.astype(str)):
            msg = f"{name}: fitted classes {model_classes} differ from the training classes"
            raise LabelError(msg)
        scores, pred = _scores(proba, y[test], classes, y[train])
        used = genes_used(model, n_features)
        if columns is not None:
            chosen[name] = columns[used]
        rows.append({"split": split, "method": name, "n_train": len(train), "n_test": len(test),
                     **scores, "genes": int(used.sum()), "fit_seconds": seconds})
        frame = pd.DataFrame({"split": split, "method": name, "sample": ids[test],
                              "label": y[test], "predicted": pred})
        for k, c in enumerate(classes):
            frame[f"prob_{c}"] = proba[:, k]
        preds.append(frame)

    for name, est in methods.items():
        model = clone(est)
        held = covariates is not None and _takes_groups(model, "covariates")
        extra = {"covariates": covariates[train]} if held else {}
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            # Per-split convergence notes of the baselines' inner searches are not actionable here.
            warnings.simplefilter("ignore")
            try:
                if (groups is not None and _takes_groups(model)
                        and np.unique(groups[train]).size >= 2):
                    model.fit(Xtr, y[train], groups=groups[train], **extra)
                else:
                    model.fit(Xtr, y[train], **extra)
            except ValueError as exc:  # a competitor's own check, e.g. its inner CV on too few
                if isinstance(exc, ArdselectError) or type(est).__module__.startswith("ardselect"):
                    raise
                _, counts = np.unique(y[train], return_counts=True)
                msg = (f"{name} could not be fitted on partition {split} ({len(train)} training "
                       f"samples, the smallest class {int(counts.min())}): {exc}")
                raise DataError(msg) from exc
        seconds = time.perf_counter() - t0
        record(name, model, seconds, held=held)
        for crit in criteria.get(name, ()):
            record(f"{name} ({crit})", model.at_step(model.choose_step(crit)), seconds, held=held)
    return rows, preds, chosen


def _check_sample_scales(X, preprocessor, ids) -> None:
    """Warn (:class:`ardselect.exceptions.DataScaleWarning`) when some samples are another kind of values.

    Partitions of such data mix them into both parts, where no model check can see them; the
    samples are compared with each other after the preprocessor's floor, cap and log.
    """
    from ..dataio._portable import DataScaleWarning, sample_scale_findings
    from ..dataio._preprocessing import Preprocessor

    Z = None
    if isinstance(preprocessor, Preprocessor) and not as_design(X).sparse:
        Z = np.asarray(X, dtype=np.float64)
        if preprocessor.floor is not None or preprocessor.cap is not None:
            Z = np.clip(Z, preprocessor.floor, preprocessor.cap)
        log = auto_log(Z)[0] if preprocessor.log == "auto" else preprocessor.log
        if log != "none":  # the base does not matter: the rules compare samples in their own units
            pseudocount = preprocessor.pseudocount
            if pseudocount is None:
                pseudocount = 0.0 if (preprocessor.floor or 0) > 0 else 1.0
            with np.errstate(all="ignore"):  # values out of the log's domain: the fit says so
                Z = np.log(Z + pseudocount)
    message = sample_scale_findings(X, Z, ids)
    if message:
        warnings.warn(message, DataScaleWarning, stacklevel=3)


# A partition fits a path for each method and each inner fold: at least this many. Partitions
# whose training part would give this many paths less than PROCESS_MIN_WORK of work run in one
# process (a 36 x 20 table's partitions take about 0.1 s each, while starting the worker processes
# takes seconds); the leukaemia set's (48 x 7,129) and any single-cell set's go to processes.
_PARTITION_PATHS = 10


def _too_small_for_processes(X, parts) -> bool:
    n_train = max(len(tr) for tr, _ in parts)
    return _PARTITION_PATHS * task_work(n_train, X.shape[1]) < PROCESS_MIN_WORK


def evaluate(X, y, methods: Mapping, *, criteria: Mapping | None = None, preprocessor=None,
             n_splits: int = 20, train_size=2 / 3, groups=None, inner_groups: bool = True,
             sample_ids=None, feature_names=None, return_selection: bool = False,
             random_state: int = 0, n_jobs: int | None = None, progress=None,
             covariates=None):
    """Score several classifiers on the same seeded train/test partitions.

    Parameters
    ----------
    X : {array-like, sparse matrix} of shape (n_samples, n_genes)
    y : array-like of shape (n_samples,)
        Class labels (compared as strings).
    methods : mapping of str to estimator
        Any scikit-learn classifiers or pipelines with ``predict_proba``; each is cloned per partition.
    criteria : mapping of str to sequence of str, optional
        For ``ARDClassifier`` methods, further criteria whose models on the same fitted path are also
        scored, as ``"NAME (CRITERION)"``: e.g. ``{"ARD-EP": ["evidence"]}``.
    preprocessor : transformer, optional
        Cloned and fitted on each training part, then applied to both parts (for example
        :class:`ardselect.preprocessing.Preprocessor`).
    n_splits, train_size, groups, random_state
        The partitions (:func:`partitions`).
    inner_groups : bool, default=True
        With ``groups``, a method whose ``fit`` takes ``groups`` (:class:`ardselect.ARDClassifier`)
        is given the training part's groups, so that its inner cross-validation holds out whole
        groups too and chooses its model for new groups (when the training part holds at least
        two groups; with one, over samples). Other methods (the baselines' grid searches) choose
        over samples. ``False`` fits every method without groups.
    sample_ids : array-like of shape (n_samples,), optional
        Identifiers written in the predictions (default: positions).
    feature_names : array-like of shape (n_genes,), optional
        Gene names for the columns of ``selection`` (default: positions).
    return_selection : bool, default=False
        Also return which genes each method used on each partition.
    n_jobs : int, optional
        Partitions run in parallel with joblib; results do not depend on ``n_jobs``. The partitions
        of a small table run here, one after the other, whatever ``n_jobs`` asks: those whose
        training part of n samples and p genes has n * min(p, 100)**2 below 200,000 (each takes
        less time than starting the worker processes). None means
        joblib's active configuration (one process unless inside ``joblib.parallel_config``): inside
        ``joblib.parallel_config(backend="dask")``, with a ``distributed`` Client running, the
        partitions run as tasks on that Client (ardselect never creates one).
    progress : callable, optional
        Called with the number of partitions done after each one.
    covariates : array-like of shape (n_samples, n_covariates), optional
        Known covariates, numeric and encoded (:meth:`ardselect.ARDClassifier.fit`): a method
        whose ``fit`` takes ``covariates`` holds the training part's in every model and predicts
        with the test part's. Other methods are fitted on the genes alone.

    Returns
    -------
    results : pandas.DataFrame
        One row per partition and method: ``split``, ``method``, ``n_train``, ``n_test``, ``errors``,
        ``error_rate``, ``log_loss``, ``brier``, ``ece``, ``log_loss_prior``, ``genes``,
        ``fit_seconds``.
    predictions : pandas.DataFrame
        One row per partition, method and test sample: ``split``, ``method``, ``sample``, ``label``,
        ``predicted``, ``prob_<class>`` for every class.
    selection : pandas.DataFrame of bool, only with ``return_selection=True``
        Index ``(split, method)``, one column per input gene: the genes the fitted model used
        (:func:`genes_used`, mapped back through the preprocessor's ``keep_`` or ``get_support``;
        rows are missing where the preprocessor's output columns cannot be traced to input genes).
        Summarise with :func:`selection_frequency` and :func:`selection_stability`.
    """
    from joblib import Parallel, delayed

    y = pd.Series(np.asarray(y, dtype=object))
    ids = np.arange(y.size) if sample_ids is None else np.asarray(sample_ids).astype(str)
    if y.isna().any():
        missing = [str(i) for i in ids[y.isna().to_numpy()]]
        shown = ", ".join(missing[:5]) + (", ..." if len(missing) > 5 else "")
        msg = (f"{len(missing)} sample(s) have no label ({shown}); give them one or drop them "
               "from the data first")
        raise LabelError(msg)
    blank = blank_labels(y.to_numpy())
    if blank.any():
        empty = [str(i) for i in ids[blank]]
        shown = ", ".join(empty[:5]) + (", ..." if len(empty) > 5 else "")
        msg = (f"{len(empty)} sample(s) have an empty label ({shown}); give them one or drop "
               "them from the data first")
        raise LabelError(msg)
    check_class_labels(y)  # continuous numbers, a class per sample, single-sample classes
    y = y.astype(str).to_numpy()
    if np.unique(y).size < 2:
        msg = f"the labels have a single class ({y[0]!r}); at least two are needed"
        raise LabelError(msg)
    X = sp.csr_matrix(X) if sp.issparse(X) else np.asarray(X)
    check_real(X)
    if X.shape[0] != y.shape[0]:
        msg = f"X has {X.shape[0]} samples but y has {y.shape[0]} labels"
        raise DataError(msg)
    if feature_names is not None and len(feature_names) == X.shape[1]:
        check_finite_named(X, ids, np.asarray(feature_names).astype(str))
    if not methods:
        msg = "give at least one method"
        raise ValueError(msg)
    criteria = dict(criteria or {})
    for name, crits in criteria.items():
        if name not in methods:
            msg = f"criteria given for {name!r}, which is not a method"
            raise ValueError(msg)
        bad = [c for c in crits if c not in CRITERIA]
        if bad:
            msg = f"unknown criteria {bad}; choose from {CRITERIA}"
            raise ValueError(msg)
    from ..dataio._preprocessing import Preprocessor

    if isinstance(preprocessor, Preprocessor):
        preprocessor._check_params()  # a value out of range is refused before any partition
    _check_sample_scales(X, preprocessor, ids)
    parts = partitions(y, n_splits=n_splits, train_size=train_size, groups=groups,
                       random_state=random_state)
    fit_groups = np.asarray(groups) if (groups is not None and inner_groups) else None
    if covariates is not None:
        covariates = np.asarray(covariates, dtype=np.float64).reshape(y.shape[0], -1)
    if n_jobs not in (None, 1) and _too_small_for_processes(X, parts):
        n_jobs = 1
    jobs = (delayed(_one_split)(i + 1, X, y, ids, tr, te, dict(methods), criteria, preprocessor,
                                fit_groups, covariates)
            for i, (tr, te) in enumerate(parts))
    rows, preds, chosen = [], [], {}
    for done, (r, p, c) in enumerate(Parallel(n_jobs=n_jobs, return_as="generator_unordered")(jobs),
                                     1):
        rows.extend(r)
        preds.extend(p)
        if r:
            chosen.update({(r[0]["split"], m): cols for m, cols in c.items()})
        if progress is not None:
            progress(done)
        logger.debug("partition %d/%d done", done, len(parts))
    names = [n for m in methods for n in (m, *(f"{m} ({c})" for c in criteria.get(m, ())))]
    results = _in_order(pd.DataFrame(rows), names)
    predictions = _in_order(pd.concat(preds, ignore_index=True), names)
    if not return_selection:
        return results, predictions
    genes = (np.arange(X.shape[1]) if feature_names is None
             else np.asarray(feature_names).astype(str))
    if genes.shape[0] != X.shape[1]:
        msg = f"{genes.shape[0]} feature names for {X.shape[1]} genes"
        raise DataError(msg)
    keys = [(int(r.split), r.method) for r in results.itertuples() if (r.split, r.method) in chosen]
    mask = np.zeros((len(keys), X.shape[1]), dtype=bool)
    for i, k in enumerate(keys):
        mask[i, chosen[k]] = True
    selection = pd.DataFrame(mask, columns=pd.Index(genes, name="gene"),
                             index=pd.MultiIndex.from_tuples(keys, names=["split", "method"]))
    return results, predictions, selection


def ep_leave_group_out(estimator, X, y, groups, *, criteria=(), preprocessor=None,
                       sample_ids=None, covariates=None):
    """EP's leave-one-group-out estimate from one fit: every group's sites removed together.

    The preprocessor and ``estimator`` (an :class:`ardselect.ARDClassifier`) are fitted once on all
    samples; then each sample's class probabilities are those of the chosen model with all of its
    group's EP sites divided out (:meth:`ARDClassifier.leave_group_out_proba`), which needs no
    refit. Genes, precisions and the preprocessing stay those fitted on all samples: selection is
    not redone, as for EP's per-sample leave-one-out, so the estimate is optimistic where selection
    overfits; :func:`evaluate` with ``groups=`` refits everything per partition and is the honest
    reference.

    Parameters
    ----------
    estimator : ARDClassifier
        Cloned and fitted on all samples.
    X, y, groups : array-likes of n_samples rows
        ``groups`` holds a group label (donor, patient) per sample.
    criteria : sequence of str, default=()
        Further criteria whose models on the same path are also scored, as ``"(criterion)"``.
    preprocessor : transformer, optional
    sample_ids : array-like, optional
    covariates : array-like of shape (n_samples, n_covariates), optional
        Known covariates held in every model (:meth:`ardselect.ARDClassifier.fit`).

    Returns
    -------
    scores : pandas.DataFrame
        One row per model: ``method`` (``"ARD-EP"`` or ``"ARD-EP (criterion)"``), ``n_groups``,
        ``errors``, ``error_rate``, ``log_loss``, ``brier``, ``ece``, ``genes``.
    predictions : pandas.DataFrame
        ``method``, ``sample``, ``group``, ``label``, ``predicted``, ``prob_<class>``.
    """
    y = np.asarray(y).astype(str)
    groups = np.asarray(groups)
    if groups.shape[0] != y.shape[0]:
        msg = f"groups has {groups.shape[0]} entries for {y.shape[0]} samples"
        raise DataError(msg)
    ids = np.arange(y.size) if sample_ids is None else np.asarray(sample_ids).astype(str)
    Z = X if preprocessor is None else clone(preprocessor).fit(X).transform(X)
    model = (clone(estimator).fit(Z, y) if covariates is None
             else clone(estimator).fit(Z, y, covariates=covariates))
    classes = np.asarray(model.classes_).astype(str)
    rows, preds = [], []
    for crit in (None, *criteria):
        name = "ARD-EP" if crit is None else f"ARD-EP ({crit})"
        m = model if crit is None else model.at_step(model.choose_step(crit))
        proba = m.leave_group_out_proba(groups)
        scores, pred = _scores(proba, y, classes, y)
        scores.pop("log_loss_prior")
        rows.append({"method": name, "n_groups": int(np.unique(groups).size), **scores,
                     "genes": n_genes_used(m, Z.shape[1])})
        frame = pd.DataFrame({"method": name, "sample": ids, "group": groups, "label": y,
                              "predicted": pred})
        for k, c in enumerate(classes):
            frame[f"prob_{c}"] = proba[:, k]
        preds.append(frame)
    return pd.DataFrame(rows), pd.concat(preds, ignore_index=True)


def selection_frequency(selection: pd.DataFrame) -> pd.DataFrame:
    """How often each gene was used, per method: the fraction of partitions (0 to 1).

    ``selection`` is the third result of :func:`evaluate` with ``return_selection=True``.
    Returns one row per gene (index ``gene``) and one column per method, in the methods' order;
    rows by decreasing frequency of the first method (stable, so ties keep the input order).
    """
    methods = list(dict.fromkeys(selection.index.get_level_values("method")))
    freq = pd.DataFrame({m: selection.xs(m, level="method").mean(axis=0) for m in methods})
    freq.index.name = "gene"
    order = np.argsort(-freq[methods[0]].to_numpy(), kind="stable")
    return freq.iloc[order]


def selection_stability(selection: pd.DataFrame) -> pd.DataFrame:
    """Stability of each method's selected gene set across partitions.

    For every pair of partitions, the Jaccard index ``|A & B| / |A | B|`` of the two selected sets
    (1: the same genes; 0: none shared); pairs where both sets are empty are left out. Returns one
    row per method: ``method``, ``n_splits``, ``genes_mean`` (set size), ``jaccard_mean``,
    ``jaccard_sd`` (over the pairs, which share partitions and so are not independent: read it
    as a spread, not a standard error) and ``genes_always`` (genes used on every partition). A method
    using every gene has Jaccard 1 by construction.
    """
    out = []
    for method in dict.fromkeys(selection.index.get_level_values("method")):
        M = selection.xs(method, level="method").to_numpy(dtype=np.float64)  # (k, p)
        k = M.shape[0]
        size = M.sum(axis=1)
        inter = M @ M.T  # (k, k)
        union = size[:, None] + size[None, :] - inter
        iu = np.triu_indices(k, 1)
        ok = union[iu] > 0
        jac = inter[iu][ok] / union[iu][ok]
        out.append({
            "method": method,
            "n_splits": k,
            "genes_mean": float(size.mean()) if k else float("nan"),
            "jaccard_mean": float(jac.mean()) if jac.size else float("nan"),
            "jaccard_sd": float(jac.std(ddof=1)) if jac.size > 1 else float("nan"),
            "genes_always": int(np.all(M > 0, axis=0).sum()) if k else 0,
        })
    return pd.DataFrame(out)


def _in_order(frame, names):
    """Rows sorted by split, then method in the order the methods were given (stable)."""
    key = frame["method"].map({n: k for k, n in enumerate(names)})
    frame = frame.assign(_k=key).sort_values(["split", "_k"], kind="stable")
    return frame.drop(columns="_k").reset_index(drop=True)


def summarize(results: pd.DataFrame, predictions: pd.DataFrame | None = None) -> pd.DataFrame:
    """Mean and standard error (sd / sqrt(n), ddof=1) of every metric per method, in input order.

    The ECE is not averaged over partitions (a per-partition ECE on a few dozen test samples is
    biased upwards): with ``predictions``, ``ece`` is the :func:`expected_calibration_error` of all
    held-out predictions of a method pooled over the partitions, the one ECE ``evaluate`` reports
    (table, ``calibration.tsv``, ``calibration.png``, ``report.html``); ``ece_if_calibrated`` and
    ``ece_if_calibrated_q95``: the mean and 95% quantile of the ECE a perfectly calibrated model
    with the same confidences would show on as many predictions (:func:`calibrated_ece`: what
    sampling alone gives); and ``confidence_gap``: mean confidence minus accuracy (positive:
    overconfident, negative: underconfident).
    """
    out = []
    for method, sub in results.groupby("method", sort=False):
        k = len(sub)
        row = {"method": method, "n_splits": k}
        for col in _METRICS:
            if col == "ece":  # pooled below, never averaged
                continue
            v = sub[col].to_numpy(dtype=float)
            row[f"{col}_mean"] = float(v.mean())
            row[f"{col}_se"] = float(v.std(ddof=1) / np.sqrt(k)) if k > 1 else float("nan")
        if predictions is not None:
            p = predictions[predictions["method"] == method]
            prob = p.filter(like="prob_").to_numpy(dtype=float)
            conf = prob.max(axis=1)
            correct = (p["predicted"] == p["label"]).to_numpy()
            row["ece"] = expected_calibration_error(conf, correct)
            row["ece_if_calibrated"], row["ece_if_calibrated_q95"] = calibrated_ece(conf)
            row["confidence_gap"] = float(conf.mean() - correct.mean()) if conf.size else np.nan
        out.append(row)
    return pd.DataFrame(out)


def paired_difference(results: pd.DataFrame, reference: str,
                      metrics=("error_rate", "log_loss", "genes")) -> pd.DataFrame:
    """Per method, the mean over partitions of (method - reference) for each metric, with its s.e.

    Negative differences in error rate or log-loss favour the method.
    """
    if reference not in set(results["method"]):
        msg = f"reference method {reference!r} is not in the results"
        raise ValueError(msg)
    ref = results[results["method"] == reference].set_index("split")
    out = []
    for method, sub in results.groupby("method", sort=False):
        d = sub.set_index("split")[list(metrics)] - ref[list(metrics)]
        d = d.dropna()
        row = {"method": method, "n_splits": len(d)}
        for col in metrics:
            row[f"d_{col}"] = float(d[col].mean())
            row[f"d_{col}_se"] = float(d[col].std(ddof=1) / np.sqrt(len(d))) if len(d) > 1 else 0.0
        out.append(row)
    return pd.DataFrame(out)


def baselines(random_state: int = 0, n_folds: int = 5) -> dict:
    """The peers ardselect is judged against, each tuned by inner stratified CV on the training part.

    * ``"L1-logistic"``: L1-penalised logistic regression, C over 10^-2..10^2 (9 values) by CV
      log-loss; one-vs-rest with more than two classes (liblinear);
    * ``"elastic-net"``: elastic-net logistic regression, C over 10^-2..10^1 (6 values) and the L1
      ratio in {0.2, 0.5, 0.8} by CV log-loss (``LogisticRegressionCV``, saga, tol 1e-2, multinomial);
    * ``"linear SVM"``: a linear SVM on all genes, C over 10^-4..10 by CV accuracy, with probabilities
      from sigmoid (Platt) calibration on internal folds;
    * ``"top-k t-test + L2"``: the k genes with the largest ANOVA F (= t^2 for two classes) and an
      L2-logistic regression on them, k in {5, 10, 20, 50, 100, 200} by CV log-loss (what scanpy
      users do with a marker list).
    """
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.feature_selection import SelectKBest, f_classif
    from sklearn.linear_model import LogisticRegression, LogisticRegressionCV
    from sklearn.model_selection import GridSearchCV, StratifiedKFold
    from sklearn.multiclass import OneVsRestClassifier
    from sklearn.pipeline import Pipeline
    from sklearn.svm import LinearSVC

    cv = StratifiedKFold(n_folds, shuffle=True, random_state=random_state)
    l1 = GridSearchCV(
        OneVsRestClassifier(LogisticRegression(l1_ratio=1.0, solver="liblinear",
                                               random_state=random_state)),
        {"estimator__C": np.logspace(-2, 2, 9)}, cv=cv, scoring="neg_log_loss")
    # LogisticRegressionCV follows each fold's regularisation path with warm starts: about 7x faster
    # than a grid search here. tol=1e-2 on standardised genes: 20 s -> 3 s on a Golub partition.
    extra = {}
    if "use_legacy_attributes" in inspect.signature(LogisticRegressionCV).parameters:
        extra["use_legacy_attributes"] = False  # scikit-learn >= 1.9; silences its transition warning
    enet = LogisticRegressionCV(Cs=np.logspace(-2, 1, 6), l1_ratios=(0.2, 0.5, 0.8), solver="saga",
                                cv=cv, scoring="neg_log_loss", tol=1e-2, max_iter=500,
                                random_state=random_state, **extra)
    svm = CalibratedClassifierCV(
        GridSearchCV(LinearSVC(random_state=random_state), {"C": np.logspace(-4, 1, 6)}, cv=cv),
        method="sigmoid", cv=StratifiedKFold(3, shuffle=True, random_state=random_state))
    topk = GridSearchCV(
        Pipeline([("select", SelectKBest(f_classif)),
                  ("logistic", LogisticRegression(max_iter=1000))]),
        {"select__k": [5, 10, 20, 50, 100, 200]}, cv=cv, scoring="neg_log_loss",
        error_score="raise")
    return {"L1-logistic": l1, "elastic-net": enet, "linear SVM": svm, "top-k t-test + L2": topk}
