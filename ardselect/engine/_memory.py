"""The in-memory designs: a numpy array or a scipy sparse matrix.

:class:`DenseDesign` and :class:`SparseDesign` answer the questions and products that
:mod:`ardselect.engine._design` dispatches to them. They are also the designs of a lazy design's row chunks (:mod:`ardselect.engine._lazy`), which is why
they live apart from the dispatch: the lazy design builds one per chunk.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

__all__ = ["DENSE_COLUMNS", "SPARSE_BLOCK", "DenseDesign", "NonFinite", "SparseDesign",
           "column_range", "in_memory", "is_matrix"]

#: Entries of the dense slab when a sparse design is multiplied on the left by an ``(n, n)`` matrix
#: (the sample route of the scoring; about 32 MB): memory stays ``O(n * block)``, never ``O(n * m)``.
SPARSE_BLOCK = 4_000_000
#: Columns per block when a dense matrix is scanned entry by entry (bounded temporary memory).
DENSE_COLUMNS = 512


class NonFinite(NamedTuple):
    """Where a matrix holds NaN or infinite entries (:meth:`DenseDesign.nonfinite`)."""

    n: int  #: how many
    kinds: tuple  #: (any NaN, any infinite)
    row: int  #: the first one in row order: its row ...
    col: int  #: ... and column
    min_col: int  #: the lowest column holding one


def column_range(X) -> tuple[np.ndarray, np.ndarray]:
    """Per-column minimum and maximum; for sparse X the implicit zeros count as values."""
    if not sp.issparse(X):
        X = np.asarray(X)
        return X.min(axis=0), X.max(axis=0)
    X = sp.csc_matrix(X)
    n = X.shape[0]
    nnz = np.diff(X.indptr)
    mx = np.full(X.shape[1], -np.inf)
    mn = np.full(X.shape[1], np.inf)
    has = nnz > 0
    if has.any():
        mx[has] = np.maximum.reduceat(X.data, X.indptr[:-1][has])
        mn[has] = np.minimum.reduceat(X.data, X.indptr[:-1][has])
    partial = nnz < n
    return np.where(partial, np.minimum(mn, 0.0), mn), np.where(partial, np.maximum(mx, 0.0), mx)



def in_memory(X):
    """The design of an in-memory matrix: :class:`SparseDesign` if sparse, else :class:`DenseDesign`."""
    return SparseDesign(X) if sp.issparse(X) else DenseDesign(np.asarray(X))


def is_matrix(X) -> bool:
    """Whether ``X`` is an in-memory matrix (a numpy array or a scipy sparse matrix).

    Not a store, a dask array or a list: what a check may read whole without loading anything.
    """
    return isinstance(X, np.ndarray) or sp.issparse(X)


class _InMemory:
    """What the dense and sparse designs share."""

    #: Products need no pass over row chunks (``LazyDesign`` sets it True).
    lazy = False

    def __init__(self, X):
        self.X = X

    @property
    def shape(self):
        return self.X.shape

    @property
    def dtype(self):
        return self.X.dtype

    def reduce_rows(self, fn, combine):
        """``fn(X, 0)``: an in-memory matrix is one block of rows (``LazyDesign`` combines many)."""
        del combine
        return fn(self.X, 0)

    def clip(self, lo, hi):
        """Entries below ``lo`` set to ``lo`` and above ``hi`` to ``hi`` (None: no bound).

        A new matrix; without bounds the matrix itself. A sparse matrix stays sparse when zero
        stays zero (``lo <= 0 <= hi``), else it is densified.
        """
        if lo is None and hi is None:
            return self.X
        return self._clip(lo, hi)

    def n_fractional(self, axis=0):
        """Per column (``axis=0``) or row (``axis=1``): the finite entries that are not whole numbers."""
        return self._count(lambda v: (v != np.round(v)) & np.isfinite(v), axis)

    def n_nonzero(self, axis=0):
        """Per column (``axis=0``) or row (``axis=1``): the finite entries that are not zero."""
        return self._count(lambda v: (v != 0) & np.isfinite(v), axis)

    def nonfinite(self):
        """Where the NaN and infinite entries are (a :class:`NonFinite`), None if there are none."""
        if self.X.dtype.kind not in "fc" or self._all_finite():
            return None
        values, rows, cols = self._nonfinite_entries()
        first = np.lexsort((cols, rows))[0]
        kinds = (bool(np.isnan(values).any()), bool(np.isinf(values).any()))
        return NonFinite(int(values.size), kinds, int(rows[first]), int(cols[first]),
                         int(cols.min()))

    def columns(self, idx):
        """Dense ``(n, len(idx))`` copy of the columns ``idx``."""
        return in_memory(self.X[:, idx]).dense()

    def block(self, idx):
        """The columns ``idx`` as one dense block with contiguous storage (a model's design).

        C order from a dense design; a sparse one's own order (column-major from CSC).
        """
        return in_memory(self.X[:, idx]).contiguous()

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

    sparse = False
    format = "dense"

    def stored(self):
        """The stored entries as one flat array (a dense matrix stores every entry)."""
        return self.X.ravel()

    def minimum(self):
        """The smallest entry (0 for an empty matrix)."""
        return float(self.X.min()) if self.X.size else 0.0

    def column_range(self):
        """Per-column minimum and maximum."""
        return self.X.min(axis=0), self.X.max(axis=0)

    def constant_columns(self):
        """Columns whose entries are all equal."""
        return np.ptp(self.X, axis=0) == 0

    def mean_var(self):
        """Per-column mean and variance (``ddof=0``)."""
        return self.X.mean(axis=0), self.X.var(axis=0)

    def _clip(self, lo, hi):
        return np.clip(self.X, lo, hi)

    def log(self, base, pseudocount):
        """``log_base(X + pseudocount)``, a new matrix."""
        if pseudocount == 1.0:
            return np.log1p(self.X) / math.log(base)
        return np.log(self.X + pseudocount) / math.log(base)

    def standardized(self, center, scale):
        """``(X - center) / scale`` column by column, a new matrix."""
        return (self.X - center) / scale

    def zero_nonfinite(self):
        """A copy with the NaN and infinite entries set to 0."""
        Y = np.array(self.X)
        Y[~np.isfinite(Y)] = 0.0
        return Y

    def by_columns(self):
        """The matrix for column access (a dense one as it is)."""
        return self.X

    def _count(self, flag, axis):
        # A block of columns at a time: the flags never take the matrix's size.
        X = self.X
        out = np.zeros(X.shape[1 - axis], dtype=np.int64)
        for j in range(0, X.shape[1], DENSE_COLUMNS):
            counts = flag(X[:, j:j + DENSE_COLUMNS]).sum(axis=axis)
            if axis == 0:
                out[j:j + DENSE_COLUMNS] = counts
            else:
                out += counts
        return out

    def _all_finite(self):
        return bool(np.isfinite(self.X).all())

    def _nonfinite_entries(self):
        bad = ~np.isfinite(self.X)
        rows, cols = np.nonzero(bad)
        return self.X[bad], rows, cols

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

    sparse = True

    @property
    def format(self):
        return self.X.format

    def columns(self, idx):
        X = self.X if self.X.format in ("csr", "csc") else self.X.tocsc()  # COO has no slicing
        return X[:, idx].toarray()

    def stored(self):
        """The stored entries (its implicit zeros left out)."""
        return self.X.data

    def minimum(self):
        """The smallest entry, at most 0 (the implicit zeros)."""
        v = self.X.data
        return min(float(v.min()) if v.size else 0.0, 0.0)

    def column_range(self):
        return column_range(self.X)

    def constant_columns(self):
        lo, hi = column_range(self.X)
        return hi == lo

    def mean_var(self):
        X = self.X
        mean = np.asarray(X.mean(axis=0)).ravel()
        sq = np.asarray(X.multiply(X).mean(axis=0)).ravel()
        return mean, np.maximum(sq - mean**2, 0.0)

    def _clip(self, lo, hi):
        if (lo is not None and lo > 0) or (hi is not None and hi < 0):
            return np.clip(self.X.toarray(), lo, hi)  # the implicit zeros change
        Y = self.X.copy()
        Y.data = np.clip(Y.data, lo, hi)
        return Y

    def log(self, base, pseudocount):
        if pseudocount != 1.0:
            return DenseDesign(self.X.toarray()).log(base, pseudocount)
        Y = self.X.copy()
        Y.data = np.log1p(Y.data) / math.log(base)  # log(0 + 1) = 0 keeps the zeros implicit
        return Y

    def standardized(self, center, scale):
        """Sparse (CSC) when nothing is centred, else densified."""
        if np.any(center != 0):
            return DenseDesign(self.X.toarray()).standardized(center, scale)
        return sp.csc_matrix(self.X.multiply(1.0 / scale[None, :]))

    def zero_nonfinite(self):
        Y = self.X.copy()
        Y.data[~np.isfinite(Y.data)] = 0.0
        return Y

    def by_columns(self):
        """CSC with sorted indices."""
        Y = self.X.tocsc()
        Y.sort_indices()
        return Y

    def _count(self, flag, axis):
        X = self.X if self.X.format in ("csr", "csc") else self.X.tocsr()
        mask = flag(X.data)
        size = X.shape[1 - axis]
        if (axis == 0) == (X.format == "csr"):  # counted along the index array
            return np.bincount(X.indices[mask], minlength=size)
        major = np.repeat(np.arange(size), np.diff(X.indptr))
        return np.bincount(major[mask], minlength=size)

    def _all_finite(self):
        # A block at a time: no mask (or coordinates) of every entry.
        v = self.X.data
        return all(np.isfinite(v[i:i + (1 << 20)]).all() for i in range(0, v.size, 1 << 20))

    def _nonfinite_entries(self):
        coo = sp.coo_matrix(self.X)
        bad = ~np.isfinite(coo.data)
        return coo.data[bad], coo.row[bad], coo.col[bad]

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
