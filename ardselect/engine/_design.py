"""The design matrix as one type: what the ARD path asks of it, for dense, sparse and lazy designs.

The path, the screening, the inner cross-validation and the bases ask a few things of their design:
weighted squared column norms, products with a few row-aligned vectors, dense copies of the columns
in or near the model, signed rows, scaled columns. :func:`as_design` is the one place that looks at
what kind of matrix it was given and returns the object that answers those questions for it:

* :class:`DenseDesign`: a numpy array;
* :class:`SparseDesign`: a scipy sparse matrix (columns in CSC, the format the path slices);
* :class:`~ardselect.engine._lazy.LazyDesign`: rows of a dask array that are never loaded, each product one
  pass over the row chunks.

The in-memory designs are thin views: building one copies nothing, and methods that return a matrix
return a plain numpy or scipy one, so the engine's arrays stay what they are (they travel to dask
workers and into the fold tasks as they are). Each method is the formula the engine has always used
for that kind of matrix; results are bitwise those of the direct expressions.

The preprocessing, the portable model and the readers ask their data the per-gene questions
(range, mean and variance, whole numbers, non-finite entries) and transform its stored entries
(clip, log, standardise) through the same objects: a sparse matrix stays sparse wherever its
implicit zeros stay zero. A lazy design answers the questions by passes over its row chunks; it
is transformed chunk by chunk, each chunk an in-memory design.
"""

from __future__ import annotations

from ._lazy import LazyDesign, is_dask
from ._memory import DenseDesign, NonFinite, SparseDesign, in_memory, is_matrix

__all__ = ["DenseDesign", "NonFinite", "SparseDesign", "as_design", "by_rows", "dense",
           "is_matrix"]


def as_design(X):
    """The design object of ``X``: a :class:`DenseDesign`, :class:`SparseDesign` or ``LazyDesign``.

    A dask array becomes a lazy design of its values as stored (no intercept, scale or signs);
    a design object is returned as it is.
    """
    if isinstance(X, (DenseDesign, SparseDesign, LazyDesign)):
        return X
    if is_dask(X):
        return LazyDesign(X, intercept=False)
    return in_memory(X)


def dense(X):
    """``X`` as a dense numpy array: a sparse matrix densified, a dask array computed, else an array."""
    if is_dask(X):  # asked for explicitly: a lazy design itself is never gathered whole
        return dense(X.compute())
    return as_design(X).dense()


def by_rows(X):
    """``X`` in memory for row access: CSR if sparse, else a numpy array."""
    return as_design(X).by_rows()
