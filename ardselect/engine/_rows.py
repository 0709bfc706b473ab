"""Which rows a fit reads: the stratified sketch (``max_samples``), and dask arrays.

A dask array ``X`` is either gathered into memory (its sketch's rows, or all of them) or, fitted
whole with the gene basis, kept where it is as a lazy design (:mod:`ardselect.engine._lazy`) whose products
are passes over its row chunks. :func:`sketch` draws the rows of ``max_samples`` from any input
before validation; :func:`rows_to_fit` makes the gather-or-keep choice.
"""

from __future__ import annotations

import logging
import warnings

import numpy as np

from ..choices import AUTO_SKETCH, SKETCH_FLOOR
from ..exceptions import DataError
from ._design import as_design, by_rows
from ._lazy import default_client
from ._validation import n_rows, take_rows

__all__ = ["from_dask", "rows_to_fit", "sketch", "sketch_size", "stratified_sketch",
           "validate_lazy"]

logger = logging.getLogger("ardselect")



def from_dask(X, y):
    """A dask array ``X`` (row chunks, dense or sparse) as something :func:`sketch` can index.

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
    """Row access to a dask array for :func:`sketch`: ``rows`` selects lazily, ``compute`` gathers."""

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
        return by_rows(out)


class _LocalDask:
    """No dask Client running: classes run in this process (or by ``n_jobs``), as in memory."""

    def __bool__(self):
        return False


def stratified_sketch(codes, max_samples, floor=1):
    """Rows of a deterministic stratified sketch: the same fraction of every class, evenly spaced.

    ``codes`` are integer class codes ``(n,)``. The ``max_samples`` rows are shared out in
    proportion to the class sizes by largest remainders (so they add up to ``max_samples``, never
    more, unless the floors alone add up to more), with at least ``floor`` rows of every class (all
    the rows of a smaller class); the rows a floor adds come back from the most over-served
    classes. Each class's rows are evenly spaced over its rows in input order. Returns sorted row
    indices.

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
    lower = np.minimum(max(int(floor), 1), sizes)
    k = np.maximum(k, lower)
    while k.sum() > max_samples and (k > lower).any():  # the ones given to small classes come
        # back from the classes most over-served for their share (so in proportion to it)
        over = np.where(k > lower, (k - quota) / quota, -np.inf)
        k[np.argmax(over)] -= 1
    rows = [np.flatnonzero(codes == c)[np.unique(np.linspace(0, size - 1, kc).round().astype(int))]
            for c, size, kc in zip(labels, sizes, k, strict=True)]
    return np.sort(np.concatenate(rows))



def sketch_size(codes, max_samples):
    """``(size, floor)`` of the sketch ``max_samples`` asks for on these class codes.

    ``max_samples`` is an int, None (every sample: ``size`` None) or ``"auto"``:
    :data:`AUTO_SKETCH` samples with :data:`SKETCH_FLOOR` of every class, or more when the
    floors alone add up to more (so a sketch is never sketched again).
    """
    if max_samples is None:
        return None, 1
    if isinstance(max_samples, str):  # "auto", as the estimators' constraints allow
        sizes = np.bincount(codes) if codes.size else np.zeros(0, dtype=int)
        floors = int(np.minimum(SKETCH_FLOOR, sizes).sum())
        return max(AUTO_SKETCH, floors), SKETCH_FLOOR
    return int(max_samples), 1


def sketch(X, y, max_samples, *aligned):
    """Rows of the stratified sketch (``max_samples``), or everything: ``(X, y, rows, *aligned)``.

    ``rows`` is None when every row is kept. ``aligned`` are arrays of one value per row (the
    groups, the covariates; None passes through), taken at the same rows. A sketch drawn because
    of ``max_samples="auto"`` is announced by a :class:`UserWarning` (how many rows, and how to
    fit them all).
    """
    n = X.shape[0] if isinstance(X, _DaskRows) else n_rows(X)
    if max_samples is None or (not isinstance(max_samples, str) and n <= max_samples):
        return X, y, None, *aligned
    if isinstance(max_samples, str) and n <= AUTO_SKETCH:
        return X, y, None, *aligned
    y_arr = np.asarray(y)
    if y_arr.ndim != 1 or y_arr.shape[0] != n:
        return X, y, None, *aligned  # validation reports the mismatch
    try:
        _, codes = np.unique(y_arr, return_inverse=True)
    except TypeError:  # labels of mixed types: validation reports them
        return X, y, None, *aligned
    size, floor = sketch_size(codes, max_samples)
    if n <= size:
        return X, y, None, *aligned
    rows = stratified_sketch(codes, size, floor)
    if isinstance(max_samples, str):
        warnings.warn(
            f"{n:,} samples: fitting a stratified sketch of {rows.size:,} (max_samples='auto': "
            f"the same fraction of every class, at least {floor} of each); max_samples=None fits "
            "every sample exactly, which can take hours at this size.", UserWarning, stacklevel=4)
    logger.info("fitting on a stratified sketch of %d of %d samples", rows.size, n)
    aligned = tuple(None if a is None else np.asarray(a)[rows] for a in aligned)
    if isinstance(X, _DaskRows):
        return X.take(rows), take_rows(y, rows), rows, *aligned
    return take_rows(X, rows), take_rows(y, rows), rows, *aligned


def rows_to_fit(X, client, *, lazy, warn_rows, name):
    """The rows of a dask input (``_DaskRows``) to fit: kept lazy, or gathered into memory.

    With ``lazy`` (a dask array fitted whole with the gene basis) the result is a checked
    lazy design (:func:`validate_lazy`), otherwise the gathered matrix.
    Above ``warn_rows`` rows without a sketch the user is told the cost.
    """
    if lazy:
        if X.shape[0] > warn_rows:
            warnings.warn(
                f"max_samples is None: the exact fit reads all {X.shape[0]:,} rows of the "
                "dask array a few times at every path step; pass max_samples (e.g. 5000) to "
                "fit a stratified sketch instead.", UserWarning, stacklevel=3)
        return validate_lazy(X.X, name)
    if X.rows is None and X.shape[0] > warn_rows:
        warnings.warn(
            f"max_samples is None: all {X.shape[0]:,} rows of the dask array are gathered "
            "into memory and fitted exactly; pass max_samples (e.g. 5000) to fit a "
            "stratified sketch instead.", UserWarning, stacklevel=3)
    return X.compute()  # the sketch's rows (or everything), gathered from the chunks


def validate_lazy(X, name):
    """A dask array as a lazy design (:func:`~ardselect.engine._design.as_design`), checked as ``_validate_x`` checks.

    One pass (the per-gene moments, kept for the scales and the constant genes) finds NaN or
    infinite values. ``name`` is the estimator's, for the message.
    """
    if X.ndim != 2 or X.shape[0] < 1 or X.shape[1] < 1:
        msg = f"Expected a non-empty 2D array, got a dask array of shape {X.shape}."
        raise DataError(msg)
    if not (np.issubdtype(X.dtype, np.number) or np.issubdtype(X.dtype, np.bool_)):
        msg = f"X must be numeric, got a dask array of dtype {X.dtype}."
        raise DataError(msg)
    design = as_design(X)
    mo = design.moments()
    bad = ~(np.isfinite(mo["mean"]) & np.isfinite(mo["min"]) & np.isfinite(mo["max"]))
    if bad.any():
        msg = (f"{name}: X contains NaN or infinite values in "
               f"{int(bad.sum())} column(s), the first is column {int(np.argmax(bad))}.")
        raise DataError(msg)
    return design
