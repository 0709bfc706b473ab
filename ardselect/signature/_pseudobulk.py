"""Pseudobulk: one sample per donor and label, from the summed counts of its cells.

:func:`pseudobulk` finds the counts (``raw.X``, a layer or ``X``: the first that holds
non-negative integers, or the one named), sums them over the cells of each (donor, label) pair,
and normalises the sums as bulk RNA-seq usually is: counts per million of the sample's total,
then the natural log of one plus that (``log1p(CPM)``). The result is an AnnData of donor-level
samples that :func:`ardselect.rank_genes` fits like any other (``groups`` = the donor column, so
that the inner cross-validation holds out whole donors).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ..dataio._expression import Input, expression
from ..dataio._input_rules import require_obs
from ..engine._design import as_design, dense, is_matrix
from ..exceptions import DataError, LabelError

__all__ = ["count_source", "pseudobulk"]

#: Counts per sample after normalisation: counts per million.
CPM = 1e6


def _holds_counts(M) -> bool:
    """Whether the matrix ``M`` holds non-negative integers (and some non-zero)."""
    if not is_matrix(M):
        return False
    values = as_design(M).stored()
    if values.size == 0 or not np.issubdtype(values.dtype, np.number):
        return False
    return bool(np.all(values >= 0) and np.all(np.mod(values, 1) == 0) and np.any(values > 0))


def count_source(adata, *, layer: str | None = None, use_raw: bool | None = None):
    """Where ``adata``'s counts are: ``(description, matrix, gene names)``.

    ``layer`` names a layer and ``use_raw=True`` ``raw.X``; either must hold counts. Otherwise
    the first of ``raw.X``, the layers (``"counts"`` first, then in name order) and ``X`` that
    holds non-negative integers. None holding counts raises :class:`DataError`.
    """
    if layer is not None or use_raw:
        given = expression(adata, layer=layer, use_raw=bool(use_raw))  # the input door's rules
        candidates = [(str(given.input), given.X, given.var_names)]
    else:
        candidates = []
        if adata.raw is not None:
            candidates.append((str(Input(use_raw=True)), adata.raw.X, adata.raw.var_names))
        names = sorted(adata.layers.keys(), key=lambda k: (k != "counts", str(k)))
        candidates += [(str(Input(layer=k)), adata.layers[k], adata.var_names) for k in names]
        candidates.append((str(Input()), adata.X, adata.var_names))
    for where, M, genes in candidates:
        if _holds_counts(M):
            return where, M, genes
    looked = ", ".join(w for w, _, _ in candidates)
    msg = (f"pseudobulk sums counts, but {looked} hold(s) no counts (non-negative integers); "
           "give the counts as raw, a layer or X (normalised or log values cannot be summed "
           "into a donor's counts)")
    raise DataError(msg)


def pseudobulk(adata, groupby: str | None, donor_key: str, *, layer: str | None = None,
               use_raw: bool | None = None, min_cells: int = 1):
    """Sum the counts of each donor and label into one sample, then normalise: donor-level data.

    Parameters
    ----------
    adata : anndata.AnnData of shape (n_cells, n_genes)
        Cells; the counts are found as :func:`count_source` says.
    groupby : str or None
        The ``obs`` column of the labels (cell type, condition); None sums each donor's cells
        (new data to predict, whose labels are unknown).
    donor_key : str
        The ``obs`` column of the donors (patients, samples).
    layer : str, optional
        The layer that holds the counts (default: the first of ``raw.X``, the layers, ``X``
        that holds non-negative integers).
    use_raw : bool, optional
        Read the counts from ``raw.X``.
    min_cells : int, default=1
        Pairs of fewer cells are left out.

    Returns
    -------
    anndata.AnnData of shape (n_pairs, n_genes)
        One sample per (donor, label) pair with cells, named ``donor|label``:

        * ``X`` (float64): ``log1p`` of counts per million of the pair's summed counts;
        * ``layers["counts"]`` (float64): the summed counts;
        * ``obs[groupby]``, ``obs[donor_key]`` and ``obs["n_cells"]`` (int64); every other
          ``obs`` column that is numeric (its mean over the pair's cells) or takes one value
          within each pair (a donor's sex or batch);
        * ``uns["log1p"] = {"base": None}`` (natural log, scanpy's record) and
          ``uns["pseudobulk"]``: ``donor``, ``input``, ``normalisation``, ``n_cells``,
          ``n_samples``.

    Examples
    --------
    >>> import numpy as np, pandas as pd, anndata as ad
    >>> obs = pd.DataFrame({"cell_type": ["T", "T", "B", "T"], "donor": ["d1", "d1", "d1", "d2"]},
    ...                    index=[f"c{i}" for i in range(4)])
    >>> cells = ad.AnnData(np.array([[1.0, 0], [2, 1], [0, 5], [3, 3]]), obs=obs)
    >>> bulk = pseudobulk(cells, "cell_type", "donor")
    >>> bulk.obs_names.tolist(), bulk.layers["counts"].tolist()
    (['d1|B', 'd1|T', 'd2|T'], [[0.0, 5.0], [3.0, 1.0], [3.0, 3.0]])
    """
    import anndata as ad

    for key, what in ((groupby, "label key"), (donor_key, "donor key")):
        if key is not None:
            require_obs(adata, key, what)
    if groupby == donor_key:
        msg = "the donor key must differ from the label key"
        raise ValueError(msg)
    obs = adata.obs
    for key in (k for k in (groupby, donor_key) if k is not None):
        if obs[key].isna().any():
            msg = (f"{int(obs[key].isna().sum())} cell(s) have no {key!r}; give them one or "
                   "drop them first")
            raise LabelError(msg)
    where, M, genes = count_source(adata, layer=layer, use_raw=use_raw)
    labels = (np.full(obs.shape[0], "") if groupby is None
              else obs[groupby].astype(str).to_numpy())
    donors = obs[donor_key].astype(str).to_numpy()
    keys = pd.MultiIndex.from_arrays([donors, labels])
    codes, uniques = pd.factorize(keys, sort=True)
    n_pairs = len(uniques)
    # (n_pairs, n_cells) indicator: one matrix product sums every pair's cells
    G = sp.csr_matrix((np.ones(codes.size), (codes, np.arange(codes.size))),
                      shape=(n_pairs, codes.size))
    counts = G @ M
    counts = np.asarray(dense(counts), dtype=np.float64)
    n_cells = np.bincount(codes, minlength=n_pairs)
    keep = n_cells >= int(min_cells)
    counts, n_cells = counts[keep], n_cells[keep]
    pairs = [uniques[i] for i in np.flatnonzero(keep)]
    totals = counts.sum(axis=1)
    if np.any(totals == 0):
        k = int(np.flatnonzero(totals == 0)[0])
        msg = f"donor {pairs[k][0]!r}, label {pairs[k][1]!r} has no counts at all"
        raise DataError(msg)
    X = np.log1p(counts / totals[:, None] * CPM)
    names = [f"{d}|{lab}" if groupby is not None else d for d, lab in pairs]
    out_obs = pd.DataFrame({donor_key: [p[0] for p in pairs], "n_cells": n_cells.astype(np.int64)},
                           index=pd.Index(names))
    if groupby is not None:
        out_obs.insert(0, groupby, [p[1] for p in pairs])
    for name, values in _pair_annotations(obs, codes, keep, exclude=(groupby, donor_key)).items():
        out_obs[name] = values
    out = ad.AnnData(X, obs=out_obs, var=pd.DataFrame(index=pd.Index(genes).astype(str)),
                     layers={"counts": counts})
    out.uns["log1p"] = {"base": None}
    out.uns["pseudobulk"] = {"donor": donor_key, "input": where,
                             "normalisation": "log1p of counts per million",
                             "n_cells": int(n_cells.sum()), "n_samples": int(keep.sum())}
    return out


def _pair_annotations(obs, codes, keep, *, exclude) -> dict:
    """The ``obs`` columns a pair can carry: numeric ones averaged, constant ones kept."""
    cols = {}
    index = np.flatnonzero(keep)
    for name in obs.columns:
        if name in exclude or name == "n_cells":
            continue
        values = obs[name]
        if pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
            mean = pd.Series(values.to_numpy(dtype=np.float64)).groupby(codes).mean()
            cols[name] = mean.reindex(index).to_numpy()
            continue
        per = pd.Series(values.astype(object).to_numpy()).groupby(codes)
        if (per.nunique(dropna=False) <= 1).all():
            cols[name] = per.first().reindex(index).to_numpy()
    return cols
