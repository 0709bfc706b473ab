"""Dask arrays in row chunks (a lazily read AnnData store): one-pass reductions over the rows.

The preprocessing statistics and scanpy's fold changes need every cell, but only a few numbers per
gene from each chunk. :func:`reduce_rows` maps a function over the row chunks and combines the
partial results pairwise in a tree of dask tasks, so the whole matrix is read once, chunk by
chunk, on whatever scheduler is active (the user's ``distributed`` Client if one runs), and only
the per-gene summaries travel. :class:`LazyDesign` does the same for the exact fit of every row:
the products the ARD path needs from its design, one pass each. Dask is imported only when a dask
array is given.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ._memory import column_range, in_memory

__all__ = ["is_dask", "reduce_rows", "moments", "combine_moments", "LazyDesign"]


def is_dask(X) -> bool:
    """True for a dask array (checked without importing dask)."""
    return type(X).__module__.split(".")[0] == "dask" and hasattr(X, "chunks")


def reduce_rows(X, fn, combine):
    """``combine`` over the row chunks of the dask array ``X`` of ``fn(block, start)``.

    ``fn`` gets one in-memory row block (dense, or CSR) and the index of its first row; ``combine``
    merges two partial results (it must be associative). Chunks split over the columns are joined
    first, so each block holds whole rows.
    """
    import dask

    if len(X.chunks[1]) > 1:
        X = X.rechunk({1: -1})
    starts = np.concatenate([[0], np.cumsum(X.chunks[0])[:-1]]).astype(np.int64)
    blocks = X.to_delayed().ravel()
    parts = [dask.delayed(_block_call)(fn, b, int(s)) for b, s in zip(blocks, starts, strict=True)]
    return _tree_compute(parts, combine)


def _tree_compute(parts, combine):
    """Merge the delayed ``parts`` pairwise with ``combine`` and compute the result.

    A binary tree of merges: no single task holds every partial result.
    """
    import dask

    while len(parts) > 1:
        merged = [dask.delayed(combine)(parts[i], parts[i + 1]) for i in range(0, len(parts) - 1, 2)]
        if len(parts) % 2:
            merged.append(parts[-1])
        parts = merged
    (out,) = dask.compute(parts[0])
    return out


def _block_call(fn, block, start):
    if sp.issparse(block):
        block = sp.csr_matrix(block)
    return fn(block, start)


def moments(Z):
    """Per-column ``(n, mean, M2, min, max)`` of a dense or sparse block, implicit zeros included.

    ``M2`` is the sum of squared deviations from the block's mean (two passes over the block).
    """
    n = Z.shape[0]
    if sp.issparse(Z):
        Z = sp.csc_matrix(Z)
        nnz = np.diff(Z.indptr)
        cols = np.repeat(np.arange(Z.shape[1]), nnz)
        mean = np.bincount(cols, weights=Z.data, minlength=Z.shape[1]) / max(n, 1)
        dev = Z.data - mean[cols]
        m2 = np.bincount(cols, weights=dev * dev, minlength=Z.shape[1]) + (n - nnz) * mean**2
        lo, hi = column_range(Z)
    else:
        Z = np.asarray(Z, dtype=np.float64)
        mean = Z.mean(axis=0) if n else np.zeros(Z.shape[1])
        m2 = ((Z - mean) ** 2).sum(axis=0)
        lo = Z.min(axis=0) if n else np.full(Z.shape[1], np.inf)
        hi = Z.max(axis=0) if n else np.full(Z.shape[1], -np.inf)
    return {"n": n, "mean": mean, "m2": m2, "min": lo, "max": hi}


def combine_moments(a, b):
    """Merge two :func:`moments` results (Chan, Golub & LeVeque's pairwise update)."""
    n = a["n"] + b["n"]
    if a["n"] == 0 or b["n"] == 0:
        return dict(b if a["n"] == 0 else a)
    delta = b["mean"] - a["mean"]
    return {
        "n": n,
        "mean": a["mean"] + delta * (b["n"] / n),
        "m2": a["m2"] + b["m2"] + delta * delta * (a["n"] * b["n"] / n),
        "min": np.minimum(a["min"], b["min"]),
        "max": np.maximum(a["max"], b["max"]),
    }


#: Row-aligned vectors of one pass at least this large are scattered to a distributed Client's
#: workers rather than embedded in the task graph (a scatter costs about 10 ms more per pass).
SCATTER_MIN_BYTES = 4_000_000


class LazyDesign:
    """The ARD design ``diag(signs) [X, 1] diag(1 / scale)`` on rows of a dask array, never loaded.

    ``X`` is a dask array in row chunks (dense or sparse chunks, as anndata reads a store lazily);
    ``rows`` (global row indices, any order) restricts the design to some of its rows (an inner
    cross-validation fold), ``signs`` (one per row of the design, +-1) sign the rows of a binary
    problem, ``scale`` divides the columns, and with ``intercept`` a column of ones is appended.

    What the ARD path asks of its design is answered by passes over the chunks, each a
    :func:`reduce_rows`-like tree of dask tasks on whatever scheduler is active (the user's
    ``distributed`` Client if one runs): ``Phi^T R`` for a few row-aligned columns ``R``
    (``design.T @ R`` or ``R.T @ design``), the weighted squared column norms
    ``sum_i b_i Phi_ij^2`` (:meth:`weighted_sq`), per-column moments (:meth:`moments`) and the dense
    columns of the genes in or near the model (``design[:, idx]``). Gathered columns are kept (one
    ``(n,)`` vector per gene, shared by every design on the same rows), so a gene is read once per
    row set. ``n_passes`` counts the passes (shared too): the cost model's unit.

    The results equal the in-memory design's up to the order of floating-point sums.
    """

    __array_ufunc__ = None  # numpy defers ``R @ design`` to __rmatmul__
    #: Every product is a pass over the row chunks (``_design``: the in-memory designs set False).
    lazy = True

    def __init__(self, X, *, intercept, scale=None, rows=None, signs=None, cols=None,
                 _shared=None):
        if len(X.chunks[1]) > 1:
            X = X.rechunk({1: -1})
        self.X = X
        # ``cols``: the design restricted to these genes of X (``select``), for scoring them.
        self.cols = None if cols is None else np.asarray(cols, dtype=np.intp)
        self.p = int(X.shape[1]) if self.cols is None else self.cols.size
        self.intercept = bool(intercept)
        self.rows = None if rows is None else np.asarray(rows, dtype=np.int64)
        n = int(X.shape[0]) if self.rows is None else self.rows.size
        self.shape = (n, self.p + int(self.intercept))
        self.scale = np.ones(self.shape[1]) if scale is None else np.asarray(scale, float)
        self.signs = None if signs is None else np.asarray(signs, dtype=np.float64)
        # Shared by every design on the same rows: raw gathered columns, moments, the pass count.
        self._shared = _shared if _shared is not None else {"cols": {}, "moments": None,
                                                             "passes": [0], "plan": None}

    # ------------------------------------------------------------------ derived designs
    def _derive(self, **kw):
        args = {"intercept": self.intercept, "scale": self.scale, "rows": self.rows,
                "signs": self.signs, "cols": self.cols, "_shared": self._shared}
        args.update(kw)
        return LazyDesign(self.X, **args)

    def select(self, idx):
        """The design restricted to its gene columns ``idx`` (no intercept), never gathered.

        Scoring many candidate genes (``_screening``) through it is one pass with an output of a
        few numbers per gene, where gathering their columns would hold ``n x len(idx)`` values.
        """
        idx = np.asarray(idx, dtype=np.intp)
        if np.any(idx >= self.p):
            msg = "select takes gene columns only (not the intercept)"
            raise IndexError(msg)
        raw = idx if self.cols is None else self.cols[idx]
        return self._derive(intercept=False, scale=self.scale[idx], cols=raw)

    def with_intercept(self, *, fit_intercept=True):
        """The same design with a column of ones appended (the intercept, last), if asked."""
        if self.intercept or not fit_intercept:
            return self
        return self._derive(intercept=True, scale=np.append(self.scale, 1.0))

    def with_signs(self, signs):
        """The same design with row ``i`` multiplied by ``signs[i]``."""
        return self._derive(signs=np.asarray(signs, dtype=np.float64))

    def __truediv__(self, scale):
        """Columns divided by ``scale`` (one value per column)."""
        return self._derive(scale=self.scale * np.asarray(scale, dtype=np.float64))

    def __getitem__(self, key):
        if isinstance(key, tuple):
            if len(key) != 2 or not (isinstance(key[0], slice) and key[0] == slice(None)):
                msg = "a LazyDesign takes design[:, columns] or design[rows]"
                raise IndexError(msg)
            return self.columns(np.atleast_1d(np.asarray(key[1], dtype=np.intp)))
        sel = np.arange(self.shape[0])[key]
        rows = sel if self.rows is None else self.rows[sel]
        shared = {"cols": {j: v[sel] for j, v in self._shared["cols"].items()}, "moments": None,
                  "passes": self._shared["passes"], "plan": None}
        return self._derive(rows=rows, signs=None if self.signs is None else self.signs[sel],
                            _shared=shared)

    @property
    def T(self):  # noqa: N802 (numpy's name)
        return _Transposed(self)

    @property
    def n_passes(self):
        """Passes over the chunks so far (by this design and every design derived from it)."""
        return self._shared["passes"][0]

    # ------------------------------------------------------------------ passes
    def _plan(self):
        """Per chunk: ``(block, pos, local)``: the positions in this design of the chunk's rows."""
        if self._shared["plan"] is None:
            sizes = np.asarray(self.X.chunks[0], dtype=np.int64)
            starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
            blocks = self.X.to_delayed().ravel()
            plan = []
            for blk, lo, size in zip(blocks, starts, sizes, strict=True):
                if self.rows is None:
                    plan.append((blk, np.arange(lo, lo + size), None))
                    continue
                pos = np.flatnonzero((self.rows >= lo) & (self.rows < lo + size))
                if pos.size:
                    plan.append((blk, pos, self.rows[pos] - lo))
            self._shared["plan"] = plan
        return self._shared["plan"]

    def _reduce(self, fn, combine, *arrays, const=(), restrict=True):
        """``combine`` over the chunks of ``fn(block, *arrays_on_its_rows, *const)``: one pass."""
        import dask

        cols = self.cols if restrict else None
        plan = self._plan()
        per_chunk = [[a[pos] for a in arrays] for _, pos, _ in plan]
        large = bool(arrays) and sum(a.nbytes for a in arrays) >= SCATTER_MIN_BYTES
        client = _distributed_client() if large else None
        if client is not None:
            # On a distributed Client large vectors go to the workers directly, chunk by chunk,
            # instead of inside the task graph through the scheduler (n x k values per pass).
            flat = client.scatter([x for xs in per_chunk for x in xs], hash=False)
            k = len(arrays)
            per_chunk = [flat[i * k:(i + 1) * k] for i in range(len(plan))]
        parts = [dask.delayed(_rows_call)(fn, blk, local, cols, *xs, *const)
                 for (blk, _, local), xs in zip(plan, per_chunk, strict=True)]
        self._shared["passes"][0] += 1
        return _tree_compute(parts, combine)

    def _row_weights(self, R):
        """``R`` as ``(n, k)`` with this design's row signs applied, C-contiguous."""
        W = np.asarray(R, dtype=np.float64).reshape(self.shape[0], -1)
        return np.ascontiguousarray(W * self.signs[:, None] if self.signs is not None else W)

    def _products(self, G, W):
        """The genes' ``X^T W`` as ``Phi^T R``: the intercept's row appended, columns scaled."""
        if self.intercept:
            G = np.vstack([G, W.sum(axis=0)[None, :]])
        return G / self.scale[:, None]

    def _squares(self, sq, b):
        """The genes' ``sum_i b_i X_ij^2`` as the design's: the intercept's appended, scaled."""
        if self.intercept:
            sq = np.append(sq, float(np.sum(b)))
        return sq / self.scale**2

    def tmatmul(self, R):
        """``Phi^T R`` for ``R`` of shape ``(n,)`` or ``(n, k)``: one pass."""
        W = self._row_weights(R)
        G = self._products(self._reduce(_block_tmatmul, np.add, W), W)  # (m, k)
        return G[:, 0] if np.ndim(R) == 1 else G

    def __rmatmul__(self, A):
        A = np.asarray(A, dtype=np.float64)
        if A.ndim == 1:
            return self.tmatmul(A)
        return self.tmatmul(A.T).T

    def weighted_sq(self, b):
        """``sum_i b_i Phi_ij^2`` for every column ``j``: one pass."""
        b = np.asarray(b, dtype=np.float64)
        return self._squares(self._reduce(_block_weighted_sq, np.add, b), b)

    def scores_pass(self, R, b):
        """``(Phi^T R, sum_i b_i Phi_ij^2)`` in one pass (the two products of a full rescoring)."""
        W = self._row_weights(R)
        b = np.asarray(b, dtype=np.float64)
        G, sq = self._reduce(_block_scores, _add_pair, W, b)
        return self._products(G, W), self._squares(sq, b)

    def moments(self):
        """Per-column :func:`moments` of the raw values (``X`` unsigned, unscaled) on these rows."""
        if self._shared["moments"] is None:
            self._shared["moments"] = self._reduce(moments, combine_moments, restrict=False)
        mo = self._shared["moments"]
        if self.cols is None:
            return mo
        return {k: (v if k == "n" else v[self.cols]) for k, v in mo.items()}

    def unit_rms(self):
        """``_basis.unit_rms`` of this design: ``(design / scale, scale, nonzero)``, one pass."""
        mo = self.moments()
        n = max(int(mo["n"]), 1)
        rms = np.sqrt(mo["mean"] ** 2 + mo["m2"] / n)
        if self.intercept:
            rms = np.append(rms, 1.0)
        rms = rms / self.scale
        nonzero = rms > 0
        rms = np.where(nonzero, rms, 1.0)
        return self / rms, rms, nonzero

    def constant_columns(self):
        """Columns whose values are all equal on these rows (the intercept's included)."""
        mo = self.moments()
        const = mo["max"] == mo["min"]
        return np.append(const, True) if self.intercept else const

    def columns(self, idx):
        """Dense ``(n, len(idx))`` columns of the design (gathered once, then kept)."""
        idx = np.asarray(idx, dtype=np.intp)
        cache = self._shared["cols"]  # raw columns of X, by their index in X
        gene = idx < self.p
        raw = np.full(idx.size, -1, dtype=np.intp)
        raw[gene] = idx[gene] if self.cols is None else self.cols[idx[gene]]
        miss = np.unique([j for j in raw if j >= 0 and j not in cache]).astype(np.intp)
        if miss.size:
            pos, vals = self._reduce(_block_columns, _concat_pair, np.arange(self.shape[0]),
                                     const=(miss,), restrict=False)
            got = np.empty((self.shape[0], miss.size))
            got[pos] = vals
            for k, j in enumerate(miss):
                cache[int(j)] = got[:, k].copy()
        out = np.empty((self.shape[0], idx.size))
        for k, j in enumerate(raw):
            out[:, k] = cache[int(j)] if j >= 0 else 1.0
        out /= self.scale[idx]
        if self.signs is not None:
            out *= self.signs[:, None]
        return out


    # ------------------------------------------------------------------ the design interface
    # The operations of ``_design.DenseDesign`` / ``SparseDesign``, answered by passes.
    def tvec(self, v):
        """``Phi^T v`` as an ``(m,)`` vector: one pass."""
        return self.tmatmul(v)

    def rmat(self, R):
        """``R^T Phi``: ``(k, m)``, one pass."""
        return self.tmatmul(R).T

    def scores_products(self, R, b, sq):
        """``(R^T Phi, sum_i b_i Phi_ij^2)``: one pass for both (one for the first if ``sq``)."""
        if sq is not None:
            return self.rmat(R), sq
        G, sq = self.scores_pass(R, b)
        return G.T, sq

    def left_scores(self, M, zt):
        """``(sum_i Z_ij^2, zt^T Z)`` for ``Z = M Phi``: one pass."""
        Z = M @ self
        return np.einsum("ij,ij->j", Z, Z), zt @ Z

    def squared(self):
        """None: the weighted squares come from a pass (:meth:`weighted_sq`), never a stored square."""
        return None

    def column_major(self):
        return None

    def signed(self, t):
        return self.with_signs(t)

    sign_in_place = signed

    def divide_columns(self, scale):
        return self / scale

    def scaled_rows(self, rows, scale):
        return self[rows] / scale

    def block(self, idx):
        """The columns ``idx`` as one C-ordered dense block (gathered once, then kept)."""
        return np.ascontiguousarray(self.columns(idx))

    def dense(self):
        msg = "a lazy design is never gathered whole; ask for its columns"
        raise TypeError(msg)

    # ------------------------------------------------------------------ the values as stored
    # The per-gene questions of the preprocessing and the checks, for a dask array as given
    # (``_design.as_design``): each a pass, each chunk answered by its in-memory design.
    format = "dask"

    @property
    def sparse(self):
        """Whether the chunks are sparse matrices."""
        return sp.issparse(getattr(self.X, "_meta", None))

    @property
    def dtype(self):
        return self.X.dtype

    def _as_stored(self, what):
        """Refuse ``what`` on a derived design: it reads the dask array's values as given."""
        if (self.rows is not None or self.cols is not None or self.signs is not None
                or self.intercept or np.any(self.scale != 1.0)):
            msg = (f"{what} reads the values as stored: a lazy design of a whole dask array "
                   "(no rows, columns, signs, scale or intercept)")
            raise ValueError(msg)

    def reduce_rows(self, fn, combine):
        """:func:`reduce_rows` of the dask array: ``combine`` over its chunks of ``fn(block, start)``."""
        self._as_stored("reduce_rows")
        return reduce_rows(self.X, fn, combine)

    def column_range(self):
        """Per-column minimum and maximum, implicit zeros included (from the moments' pass)."""
        self._as_stored("column_range")
        mo = self.moments()
        return mo["min"], mo["max"]

    def mean_var(self):
        """Per-column mean and variance (``ddof=0``), up to the rounding of the merged moments."""
        self._as_stored("mean_var")
        mo = self.moments()
        return mo["mean"], mo["m2"] / max(int(mo["n"]), 1)

    def minimum(self):
        """The smallest entry; at most 0 for sparse chunks (their implicit zeros)."""
        lo = float(self.column_range()[0].min())
        return min(lo, 0.0) if self.sparse else lo

    def n_fractional(self, axis=0):
        """Per column (``axis=0``) or row (``axis=1``): finite entries that are not whole numbers."""
        return self._count("n_fractional", axis)

    def n_nonzero(self, axis=0):
        """Per column (``axis=0``) or row (``axis=1``): finite entries that are not zero."""
        return self._count("n_nonzero", axis)

    def _count(self, name, axis):
        self._as_stored(name)
        if axis == 0:
            return self._reduce(_block_count, np.add, const=(name,))
        pos, counts = self._reduce(_block_row_count, _concat_rows, np.arange(self.shape[0]),
                                   const=(name,))
        out = np.empty(self.shape[0], dtype=np.int64)
        out[pos] = counts
        return out

    def nonfinite(self):
        """Where the NaN and infinite entries are (``_design.NonFinite``), None if none: one pass."""
        self._as_stored("nonfinite")
        return self._reduce(_block_nonfinite, _merge_nonfinite, np.arange(self.shape[0]))

    def _in_memory_only(self, *args, **kwargs):
        msg = ("a lazy design is transformed chunk by chunk: map the transform over its row "
               "blocks (each an in-memory design)")
        raise TypeError(msg)

    stored = clip = log = standardized = zero_nonfinite = by_columns = _in_memory_only


class _Transposed:
    """``design.T``: only ``design.T @ R`` is defined."""

    def __init__(self, design):
        self.design = design

    def __matmul__(self, R):
        return self.design.tmatmul(R)


def default_client():
    """The user's running dask.distributed Client, or None (never creates one)."""
    try:
        from distributed import default_client as _default

        return _default()
    except (ImportError, ValueError):
        return None


def _distributed_client():
    """The user's dask.distributed Client when it is the scheduler dask.compute will use, else None."""
    import dask

    client = default_client()
    scheduler = dask.base.get_scheduler() if client is not None else None
    return client if getattr(scheduler, "__self__", None) is client else None


def _rows_call(fn, block, local, cols, *arrays):
    block = sp.csr_matrix(block) if sp.issparse(block) else np.asarray(block, dtype=np.float64)
    if local is not None:
        block = block[local]
    if cols is not None:
        block = block[:, cols]
    return fn(block, *arrays)


def _block_tmatmul(B, W):
    return np.asarray(B.T @ W, dtype=np.float64)


def _block_weighted_sq(B, b):
    if sp.issparse(B):
        return np.asarray(B.multiply(B).T @ b, dtype=np.float64).ravel()
    return np.einsum("ij,ij,i->j", B, B, b)


def _block_scores(B, W, b):
    return _block_tmatmul(B, W), _block_weighted_sq(B, b)


def _add_pair(a, b):
    return a[0] + b[0], a[1] + b[1]


def _block_columns(B, pos, idx):
    C = B[:, idx]
    return pos, (C.toarray() if sp.issparse(C) else np.asarray(C, dtype=np.float64))


def _concat_pair(a, b):
    return np.concatenate([a[0], b[0]]), np.vstack([a[1], b[1]])


def _block_count(B, name):
    return getattr(in_memory(B), name)(0)


def _block_row_count(B, pos, name):
    return pos, getattr(in_memory(B), name)(1)


def _concat_rows(a, b):
    return np.concatenate([a[0], b[0]]), np.concatenate([a[1], b[1]])


def _block_nonfinite(B, pos):
    found = in_memory(B).nonfinite()
    return None if found is None else found._replace(row=int(pos[found.row]))


def _merge_nonfinite(a, b):
    if a is None or b is None:
        return b if a is None else a
    first = min((a.row, a.col), (b.row, b.col))
    return a._replace(n=a.n + b.n, kinds=tuple(u or v for u, v in zip(a.kinds, b.kinds, strict=True)),
                      row=first[0], col=first[1], min_col=min(a.min_col, b.min_col))
