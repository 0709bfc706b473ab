"""Input checks shared by every estimator: one place for the messages users see."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from sklearn.exceptions import DataConversionWarning
from sklearn.utils.validation import check_array

from ..exceptions import DataError, LabelError
from ._design import as_design, dense, is_matrix

__all__ = [
    "blank_labels",
    "check_binary_labels",
    "check_design",
    "check_regression_target",
    "check_sparse_values",
    "check_unique_names",
    "constant_columns",
]


def nonfinite_message(n_bad: int, kinds: tuple, col: int) -> str:
    """The one wording of a refusal of NaN or infinite input (in memory and chunk by chunk).

    ``kinds`` is ``(has_nan, has_inf)``.
    """
    kinds = " and ".join(k for k, has in zip(("NaN", "infinite"), kinds, strict=True) if has)
    return (f"Input X contains {n_bad} {kinds} value(s) (first in column {col}); "
            "impute or drop them before fitting.")


def check_finite_named(X, sample_names, gene_names, *, what: str = "the data") -> None:
    """Refuse NaN or infinite values in ``X`` naming the first one's gene and sample.

    ``X`` is an in-memory matrix of shape (n_samples, n_genes), dense or sparse (anything else,
    e.g. a lazily read store, is left to the chunked checks). The message speaks of genes and
    samples, for people who know their data by those names rather than by column numbers.
    """
    found = as_design(X).nonfinite() if is_matrix(X) else None
    if found is None:
        return
    kinds = " and ".join(k for k, has in zip(("NaN", "infinite"), found.kinds, strict=True) if has)
    msg = (f"{what} contain {found.n} {kinds} value(s), the first for gene "
           f"{str(gene_names[found.col])!r} in sample {str(sample_names[found.row])!r}; impute "
           "them or drop those genes or samples before fitting")
    raise DataError(msg)


def check_real(X) -> None:
    """Refuse complex numbers in one line (:class:`DataError`), without printing the matrix."""
    dtype = getattr(X, "dtype", None)
    if dtype is None and isinstance(X, pd.DataFrame):  # its columns' types, without a copy
        dtype = next((d for d in X.dtypes if getattr(d, "kind", "") == "c"), np.dtype(float))
    if dtype is None or not hasattr(dtype, "kind"):
        dtype = as_design(X).dtype
    if dtype.kind == "c":
        msg = (f"Complex data not supported: the data hold complex numbers (dtype {dtype}); "
               "expression values must be real numbers")
        raise DataError(msg)


def check_design(X, *, estimator_name: str = "estimator", accept_sparse: bool = True):
    """Return X as float64 (CSC sparse or C-contiguous dense) after checking it.

    Raises :class:`DataError` for complex numbers, an empty matrix and NaN or infinite values,
    naming how many entries are bad and the first bad column.
    """
    check_real(X)
    try:
        X = check_array(
            X,
            accept_sparse=["csc", "csr"] if accept_sparse else False,
            dtype=np.float64,
            ensure_all_finite=False,
            ensure_2d=True,
            ensure_min_samples=1,
            ensure_min_features=1,
            estimator=estimator_name,
        )
    except ValueError as exc:
        if "sparse" in str(exc) and not accept_sparse:
            raise
        raise DataError(str(exc)) from None
    design = as_design(X)
    found = design.nonfinite()
    if found is not None:
        raise DataError(nonfinite_message(found.n, found.kinds, found.min_col))
    return design.by_columns()


def check_sparse_values(X, *, estimator_name: str = "estimator"):
    """Check a CSR matrix as :func:`check_design` does, without converting it (no copy).

    The errors are those of :func:`check_design`; the values are checked a block of entries at a
    time, so the check allocates a fraction of the matrix. Returns ``X``.
    """
    try:
        X = check_array(X, accept_sparse=["csr"], dtype="numeric", ensure_all_finite=False,
                        ensure_2d=True, ensure_min_samples=1, ensure_min_features=1,
                        estimator=estimator_name)
    except ValueError as exc:
        raise DataError(str(exc)) from None
    if X.dtype.kind not in "fc":
        return X
    n_bad, has_nan, has_inf, col = 0, False, False, X.shape[1]
    step = 1 << 20
    for start in range(0, X.nnz, step):
        values = X.data[start:start + step]
        bad = ~np.isfinite(values)
        if bad.any():
            n_bad += int(bad.sum())
            has_nan |= bool(np.isnan(values[bad]).any())
            has_inf |= bool(np.isinf(values[bad]).any())
            col = min(col, int(X.indices[start:start + step][bad].min()))
    if n_bad:
        raise DataError(nonfinite_message(n_bad, (has_nan, has_inf), col))
    return X


def constant_columns(X) -> np.ndarray:
    """Boolean mask of the columns of X whose values are all equal (all-zero columns included)."""
    return as_design(X).constant_columns()  # a lazy design's from its moments (one pass)


def check_binary_labels(y, n_samples: int, *, stacklevel: int = 3):
    """Check labels against X and encode them.

    Returns ``(classes, y_index)`` where ``classes`` is sorted as ``np.unique`` sorts it and
    ``y_index`` is an int array into ``classes``. Accepts {0,1}, {-1,+1}, booleans, strings, or more
    than two classes (the caller decides whether it supports them). ``stacklevel`` (as
    :func:`warnings.warn` takes it, from this function) points the column-vector warning at the
    user's call.
    """
    y = _target_vector(y, n_samples, error=LabelError, noun="labels", stacklevel=stacklevel + 1)
    if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
        msg = "y contains NaN or infinite labels."
        raise LabelError(msg)
    if y.dtype.kind == "O" and any(v is None or (isinstance(v, float) and np.isnan(v)) for v in y):
        msg = "y contains missing labels (None or NaN)."
        raise LabelError(msg)
    blank = blank_labels(y)
    if blank.any():
        where = ", ".join(str(i) for i in np.flatnonzero(blank)[:5]) + \
            (", ..." if blank.sum() > 5 else "")
        msg = (f"y contains {int(blank.sum())} empty label(s) ('' or whitespace only), at "
               f"position(s) {where}; give those samples a class or drop them.")
        raise LabelError(msg)
    if y.dtype.kind == "f" and np.any(y != np.round(y)):
        msg = (
            "y holds continuous values; ardselect classifiers need class labels "
            "(for a continuous target use RVMRegressor)."
        )
        raise LabelError(msg)
    if y.dtype.kind == "O" and len({isinstance(v, str) for v in y}) > 1:
        msg = ("y mixes strings and numbers (e.g. 1 and '1'); give the labels as one type, "
               "e.g. y.astype(str).")
        raise LabelError(msg)
    classes, y_index = np.unique(y, return_inverse=True)
    if classes.size < 2:
        only = classes[0].item() if isinstance(classes[0], np.generic) else classes[0]
        msg = f"y has one class only ({only!r}); a classifier needs at least two classes."
        raise LabelError(msg)
    return classes, y_index.astype(np.intp)


def check_regression_target(estimator, y, n_samples: int, *, stacklevel: int = 3) -> np.ndarray:
    """Regression targets as a finite float64 vector of ``n_samples`` values.

    ``y=None``, a shape other than ``(n,)`` or ``(n, 1)`` (a column vector is ravelled with
    scikit-learn's ``DataConversionWarning``), another number of values, values that are not
    numbers and NaN or infinite values raise :class:`~ardselect.exceptions.DataError`. ``stacklevel`` as
    for :func:`check_binary_labels`.
    """
    require_y(estimator, y, DataError)
    y = _target_vector(y, n_samples, error=DataError, noun="values", stacklevel=stacklevel + 1)
    try:
        y = y.astype(np.float64)
    except (TypeError, ValueError):
        msg = (f"y must be numeric for regression; got values of dtype {y.dtype}. For class "
               "labels use a classifier (RVMClassifier, VariationalRVMClassifier).")
        raise DataError(msg) from None
    bad = ~np.isfinite(y)
    if bad.any():
        msg = f"y contains {int(bad.sum())} NaN or infinite value(s)."
        raise DataError(msg)
    return y


def _target_vector(y, n_samples: int, *, error, noun: str, stacklevel: int) -> np.ndarray:
    """``y`` as a 1-d array of ``n_samples`` entries (``noun``: what they are, in messages).

    A column vector is ravelled with scikit-learn's warning; any other shape, or another length,
    raises ``error``.
    """
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        warnings.warn(
            "A column-vector y was passed when a 1d array was expected. Please change the shape "
            "of y to (n_samples,), for example using ravel().",
            DataConversionWarning,
            stacklevel=stacklevel,
        )
        y = y.ravel()
    if y.ndim != 1:
        msg = f"y must be one-dimensional, got an array of shape {y.shape}."
        raise error(msg)
    if y.shape[0] != n_samples:
        msg = (f"y has {y.shape[0]} {noun} but X has {n_samples} samples; they must match one "
               "to one.")
        raise error(msg)
    return y


def blank_labels(values) -> np.ndarray:
    """Boolean mask of the labels that are empty or whitespace-only text (no class)."""
    values = np.asarray(values)
    if values.dtype.kind not in "OUS":
        return np.zeros(values.shape, dtype=bool)
    return np.fromiter((isinstance(v, (str, bytes, np.str_, np.bytes_)) and not v.strip()
                        for v in values.ravel()), dtype=bool, count=values.size).reshape(values.shape)


def check_unique_names(names, what: str = "gene") -> None:
    """Raise :class:`DataError` if ``names`` has duplicates, naming how many and a few of them."""
    index = pd.Index(names)
    if index.is_unique:
        return
    dup = index[index.duplicated()].unique()
    shown = ", ".join(map(str, dup[:5])) + (", ..." if len(dup) > 5 else "")
    fix = "obs_names_make_unique()" if what == "sample" else "var_names_make_unique()"
    msg = (
        f"{len(dup)} duplicated {what} name(s) ({shown}); {what} names must be unique "
        f"(e.g. anndata's {fix}, or aggregate the duplicates)"
    )
    raise DataError(msg)


def check_clean_names(names, what: str = "gene") -> None:
    """Refuse empty names and names with tabs, line breaks or other control characters.

    Such names break the tab-separated and GMT outputs; a :class:`DataError` names the first.
    """
    for k, name in enumerate(map(str, names)):
        if not name.strip():
            msg = (f"{what} name number {k + 1} is empty; every {what} needs a name (give it "
                   "one, or drop it)")
            raise DataError(msg)
        if any(ch < " " or ch == "\x7f" for ch in name):
            msg = (f"{what} name {name!r} holds a tab, line break or other control character, "
                   f"which the tab-separated outputs cannot hold; rename the {what}")
            raise DataError(msg)


def check_class_labels(labels: pd.Series) -> None:
    """Refuse label columns that cannot be classes: continuous values, or a class per sample."""
    n = len(labels)
    numeric = pd.to_numeric(labels, errors="coerce")
    if numeric.notna().all():
        values = numeric.to_numpy(dtype=float)
        uniq = np.unique(values)
        # Integer codes 0..k-1 or 1..k are classes (cluster ids); any other set of more than 10
        # distinct numbers (fractions, ages, counts) is a measurement.
        codes = np.all(uniq == np.round(uniq)) and uniq[0] in (0.0, 1.0) and \
            uniq[-1] - uniq[0] == uniq.size - 1
        if uniq.size > 10 and not codes:
            msg = (f"the labels look continuous ({uniq.size} distinct numbers from {uniq[0]:g} "
                   f"to {uniq[-1]:g}); ardselect classifies: bin them into classes or choose a "
                   "categorical column")
            raise LabelError(msg)
    counts = labels.astype(str).value_counts()
    if counts.size > 2 and counts.size > n / 2:
        msg = (f"the label column has {counts.size} classes for {n} samples (e.g. "
               f"{', '.join(map(repr, counts.index[:3]))}): it looks like a sample id, not a class")
        raise LabelError(msg)
    single = counts[counts < 2]
    if single.size:
        shown = ", ".join(repr(c) for c in single.index[:5]) + (", ..." if single.size > 5 else "")
        msg = (f"{single.size} class(es) have a single sample ({shown}); a classifier needs at "
               "least two per class: merge or drop them")
        raise LabelError(msg)


def n_rows(X) -> int:
    """The number of samples of an input not yet validated (array, sparse, frame or sequence)."""
    if not hasattr(X, "shape") and not hasattr(X, "__len__") and hasattr(X, "__array__"):
        X = np.asarray(X)
    shape = getattr(X, "shape", None)
    if shape is not None and len(shape) > 0 and isinstance(shape[0], (int, np.integer)):
        return int(shape[0])
    try:
        return len(X)
    except TypeError:
        msg = f"Expected sequence or array-like, got {type(X)}"
        raise TypeError(msg) from None


def take_rows(X, rows):
    """Rows ``rows`` of an input not yet validated, of the same kind (frame, array, list)."""
    if X is None:
        return None
    if hasattr(X, "iloc"):
        return X.iloc[rows]
    if hasattr(X, "shape"):
        return X[rows]
    if not hasattr(X, "__len__") and hasattr(X, "__array__"):
        return np.asarray(X)[rows]
    return [X[i] for i in rows]


def require_y(estimator, y, error=LabelError) -> None:
    """Refuse ``y=None`` in scikit-learn's words.

    ``error`` is the class raised: ``LabelError`` for the classifiers, ``DataError`` for the RVMs.
    """
    if y is None:
        msg = f"{type(estimator).__name__} requires y to be passed, but the target y is None."
        raise error(msg)


def check_covariates(covariates, n_samples: int, *, expected: int | None = None):
    """Known covariates as a dense float64 ``(n_samples, c)`` array, or None for none.

    ``covariates`` is an (already encoded) numeric array-like with one row per sample; a 1-D
    array is one covariate. ``expected`` is the number of columns a fitted model holds (at
    prediction). Non-numeric, missing or infinite values raise :class:`DataError`.
    """
    if covariates is None:
        if expected:
            msg = (f"the model holds {expected} covariate column(s) in every model; give them "
                   "with covariates= (the same columns, encoded as for the fit)")
            raise DataError(msg)
        return None
    try:
        C = np.asarray(dense(covariates), dtype=np.float64)
    except (TypeError, ValueError):
        msg = ("covariates must be numbers (encode categorical covariates first, e.g. one-hot "
               "with one level dropped; rank_genes and the command line do it from obs columns)")
        raise DataError(msg) from None
    if C.ndim == 1:
        C = C[:, None]
    if C.ndim != 2 or C.shape[0] != n_samples:
        msg = f"covariates has shape {C.shape} for {n_samples} samples; give one row per sample"
        raise DataError(msg)
    if not np.isfinite(C).all():
        col = int(np.flatnonzero(~np.isfinite(C).all(axis=0))[0])
        msg = f"covariates column {col} holds missing or infinite values; give every sample one"
        raise DataError(msg)
    if expected is not None and C.shape[1] != expected:
        msg = (f"covariates has {C.shape[1]} column(s), but the model was fitted with "
               f"{expected}; give the same columns, encoded as for the fit")
        raise DataError(msg)
    if expected is None and C.shape[1] == 0:
        return None
    return C
