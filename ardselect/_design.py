"""The design matrix as one type: what the ARD path asks of it, for dense, sparse and lazy designs.

The path, the screening, the inner cross-validation and the bases ask a few things of their design:
weighted squared column norms, products with a few row-aligned vectors, dense copies of the columns
in or near the model, signed rows, scaled columns. :func:`as_design` is the one place that looks at
what kind of matrix it was given and returns the object that answers those questions for it:

* :class:`DenseDesign`: a numpy array;
* :class:`SparseDesign`: a scipy sparse matrix (columns in CSC, the format the path slices);
* :class:`~ardselect._lazy.LazyDesign`: rows of a dask array that are never loaded, each product one
  pass over the row chunks.

The in-memory designs are thin views: building one copies nothing, and methods that return a matrix
return a plain numpy or scipy one, so the engine's arrays stay what they are (they travel to dask
workers and into the fold tasks as they are). Each method is the formula the engine has always used
for that kind of matrix; results are bitwise those of the direct expressions.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ._lazy import LazyDesign

__all__ = ["DenseDesign", "SparseDesign", "as_design", "by_rows", "dense"]

#: Entries of the dense slab when a sparse design is multiplied on the left by an ``(n, n)`` matrix
#: (the sample route of the scoring; about 32 MB): memory stays ``O(n * block)``, never ``O(n * m)``.
SPARSE_BLOCK = 4_000_000


def as_design(X):
    """The design object of ``X``: a :class:`DenseDesign`, :class:`SparseDesign` or ``LazyDesign``.

    A design object is returned as it is.
    """
    if isinstance(X, (DenseDesign, SparseDesign, LazyDesign)):
        return X
    if sp.issparse(X):
        return SparseDesign(X)
    return DenseDesign(np.asarray(X))


def dense(X):
    """``X`` as a dense numpy array (a sparse matrix densified, anything else as an array)."""
    return as_design(X).dense()


def by_rows(X):
    """``X`` in memory for row access: CSR if sparse, else a numpy array."""
    return as_design(X).by_rows()


class _InMemory:
    """What the dense and sparse designs share."""

    #: Products need no pass over row chunks (``LazyDesign`` sets it True).
    lazy = False

    def __init__(self, X):
        self.X = X

    @property
    def shape(self):
        return self.X.shape

    def columns(self, idx):
        """Dense ``(n, len(idx))`` copy of the columns ``idx``."""
        return as_design(self.X[:, idx]).dense()

    def block(self, idx):
        """The columns ``idx`` as one dense block with contiguous storage (a model's design).

        C order from a dense design; a sparse one's own order (column-major from CSC).
        """
        return as_design(self.X[:, idx]).contiguous()

    def left_scores(self, M, zt):
        """``(sum_i Z_ij^2, zt^T Z)`` for ``Z = M X``, ``M`` of shape ``(n, n)``."""
        Z = M @ self.X
        return np.einsum("ij,ij->j", Z, Z), zt @ Z

    def scores_products(self, R, b, sq):
        """``(R^T X, sum_i b_i X_ij^2)``: the two products of a full rescoring.

        ``sq`` is the second when the caller has it already (else it is computed).
        """
        return self.rmat(R), (self.weighted_sq(b) if sq is None else sq)

    def unit_rms(self):
        """Every column scaled to unit root mean square: ``(X_scaled, scale, nonzero)``.

        All-zero columns keep scale 1 and are flagged in ``nonzero``. Columns whose squares
        overflow (values beyond about 1e154) or underflow (below about 1e-162) are measured
        relative to their largest value; the other columns keep the plain formula's bits.
        """
        scale, peak = self._rms_peak()
        odd = (peak > 0) & ~((scale > 0) & np.isfinite(scale))
        if odd.any():
            cols = np.flatnonzero(odd)
            block = self.columns(cols)
            scale = scale.copy()
            scale[cols] = peak[cols] * np.sqrt(np.mean((block / peak[cols]) ** 2, axis=0))
        nonzero = scale > 0
        scale = np.where(nonzero, scale, 1.0)
        return self.divide_columns(scale), scale, nonzero


class DenseDesign(_InMemory):
    """A dense design (a numpy array)."""

    def dense(self):
        return np.asarray(self.X)

    by_rows = dense

    def contiguous(self):
        return np.ascontiguousarray(self.X)

    def weighted_sq(self, b):
        """``sum_i b_i X_ij^2`` for every column ``j``."""
        return np.einsum("ij,ij,i->j", self.X, self.X, b)

    def squared(self):
        """``X * X`` elementwise (kept along a path: the weights change, the design does not)."""
        return self.X * self.X

    def vecmat(self, b):
        """``b^T X`` as an ``(m,)`` vector (on :meth:`squared`: the weighted squared norms)."""
        return b @ self.X

    def tvec(self, v):
        """``X^T v`` as an ``(m,)`` vector."""
        return np.asarray(self.X.T @ v).ravel()

    def rmat(self, R):
        """``R^T X``: ``(k, m)`` for ``R`` of shape ``(n, k)``."""
        return R.T @ self.X

    def column_major(self):
        """A column-major copy (contiguous columns: cheap gathers and plain dgemv products)."""
        return np.asfortranarray(self.X)

    def signed(self, t):
        """Row ``i`` multiplied by ``t[i]``, a new matrix."""
        return t[:, None] * self.X

    def sign_in_place(self, t):
        """:meth:`signed` without a copy (the caller owns the matrix)."""
        self.X *= t[:, None]
        return self.X

    def divide_columns(self, scale):
        return self.X / scale

    def scaled_rows(self, rows, scale):
        """Rows ``rows`` with the columns divided by ``scale``."""
        return self.X[rows] / scale

    def with_intercept(self, *, fit_intercept=True):
        """The matrix with a column of ones appended (``fit_intercept``), else as it is."""
        if not fit_intercept:
            return self.X
        return np.hstack([self.X, np.ones((self.X.shape[0], 1))])

    def append_columns(self, C, fmt="csc"):
        """The matrix with the dense columns ``C`` appended (a sparse one in format ``fmt``)."""
        return np.hstack([self.X, C])

    def variance(self):
        """The variance of all the entries together."""
        return self.X.var()

    def _rms_peak(self):
        X = self.X
        with np.errstate(over="ignore", under="ignore"):
            scale = np.sqrt(np.mean(X * X, axis=0))
        peak = np.max(np.abs(X), axis=0) if X.shape[0] else np.zeros(X.shape[1])
        return scale, peak


class SparseDesign(_InMemory):
    """A sparse design (a scipy sparse matrix; the path keeps its columns in CSC)."""

    def dense(self):
        return self.X.toarray()

    contiguous = dense

    def by_rows(self):
        return self.X.tocsr()

    def weighted_sq(self, b):
        return np.asarray(self.X.multiply(self.X).T @ b).ravel()

    def squared(self):
        return self.X.multiply(self.X).tocsr()

    def vecmat(self, b):
        return np.asarray(self.X.T @ b).ravel()

    def tvec(self, v):
        return np.asarray(self.X.T @ v).ravel()

    def rmat(self, R):
        return np.asarray(self.X.T @ R).T

    def column_major(self):
        return None  # CSC already: a column is a slice of its arrays

    def left_scores(self, M, zt):
        # A dense (n, block) slab at a time, so memory stays O(n * block), never O(n * m).
        X = self.X
        m = X.shape[1]
        S = np.empty(m)
        Q = np.empty(m)
        block = max(1, SPARSE_BLOCK // max(1, X.shape[0]))
        for lo in range(0, m, block):
            Z = np.asarray((X[:, lo:lo + block].T @ M.T).T)  # (n, block)
            S[lo:lo + block] = np.einsum("ij,ij->j", Z, Z)
            Q[lo:lo + block] = zt @ Z
        return S, Q

    def signed(self, t):
        return (sp.diags(t) @ self.X).tocsc()

    def sign_in_place(self, t):
        X = sp.csc_matrix(self.X)
        X.data *= t[X.indices]
        return X

    def divide_columns(self, scale):
        return sp.csc_matrix(self.X @ sp.diags(1.0 / scale))

    def scaled_rows(self, rows, scale):
        return self.X[rows] @ sp.diags(1.0 / scale)

    def with_intercept(self, *, fit_intercept=True):
        X = self.X.tocsc()
        if not fit_intercept:
            return X
        return sp.hstack([X, sp.csc_matrix(np.ones((X.shape[0], 1)))], format="csc")

    def append_columns(self, C, fmt="csc"):
        as_fmt = sp.csc_matrix if fmt == "csc" else sp.csr_matrix
        return sp.hstack([self.X, as_fmt(C)], format=fmt)

    def variance(self):
        return self.X.multiply(self.X).mean() - self.X.mean() ** 2

    def _rms_peak(self):
        X = self.X
        scale = np.sqrt(np.asarray(X.multiply(X).mean(axis=0)).ravel())
        peak = np.asarray(abs(X).max(axis=0).todense()).ravel()
        return scale, peak
