"""Dask arrays in row chunks (a lazily read AnnData store): one-pass reductions over the rows.

The preprocessing statistics and scanpy's fold changes need every cell, but only a few numbers per
gene from each chunk. :func:`reduce_rows` maps a function over the row chunks and combines the
partial results pairwise in a tree of dask tasks, so the whole matrix is read once, chunk by
chunk, on whatever scheduler is active (the user's ``distributed`` Client if one runs), and only
the per-gene summaries travel. Dask is imported only when a dask array is given.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ._validation import column_range

__all__ = ["is_dask", "reduce_rows", "moments", "combine_moments"]


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
    while len(parts) > 1:  # a binary tree of merges: no single task holds every partial result
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
