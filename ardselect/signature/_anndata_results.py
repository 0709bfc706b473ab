"""What :func:`ardselect.rank_genes` stores in an AnnData, and how.

Each selected gene's direction in the data, the log fold changes and scanpy's
``rank_genes_groups`` record, and :func:`write_signature`, which puts the tables of a
:class:`~ardselect.Signature` into ``uns`` (as h5ad-writable dicts of columns) and the per-gene
columns into ``var``. :mod:`ardselect.signature._signature` fits it; :mod:`ardselect.get` reads the results
back.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ..dataio._preprocessing import Preprocessor
from ..engine._design import as_design, dense
from ._kinds import KINDS

#: The note of a selected gene whose weight has the opposite sign of its class difference.
OPPOSITE_NOTE = "weight opposite to the class difference (conditional on the other genes)"


def _table_to_uns(df: pd.DataFrame) -> dict:
    """A DataFrame as an h5ad-writable dict of columns (column order kept in ``"columns"``)."""
    out = {"columns": np.array(list(df.columns), dtype=object)}
    for col in df.columns:
        s = df[col]
        if isinstance(s.dtype, pd.Int64Dtype):
            out[col] = s.fillna(-1).to_numpy(dtype=np.int64)  # -1 stands for <NA>
        elif pd.api.types.is_bool_dtype(s):
            out[col] = s.to_numpy(dtype=bool)
        elif pd.api.types.is_numeric_dtype(s):
            out[col] = s.to_numpy()
        else:
            out[col] = s.astype(str).to_numpy(dtype=object)
    return out


def _uns_value(value):
    """Make a parameter value storable in ``uns`` (h5ad): None and paths become strings."""
    if value is None:
        return "None"
    if isinstance(value, Mapping):
        return {str(k): _uns_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return np.array([str(v) for v in value], dtype=object)
    if isinstance(value, (bool, int, float, str, np.generic)):
        return value
    return str(value)


def _with_directions(ranked, lfc, gene_names, classes, positive):
    """The ranked table with each gene's direction in the data and a note where the model differs.

    ``direction`` is ``"up"`` or ``"down"``: the sign of ``t_stat``, the class against the rest
    (for two classes: the positive class against the other), empty when undefined. ``log2_fc`` is
    scanpy's log2 fold change of the same contrast (NaN unless the data are on a non-negative log
    scale). A selected gene whose weight has the other sign gets :data:`OPPOSITE_NOTE`.
    """
    ranked = ranked.copy()
    column = {str(g): j for j, g in enumerate(gene_names)}
    idx = np.array([column[str(g)] for g in ranked["gene"]])
    fc = np.full(len(ranked), np.nan)
    for cls in dict.fromkeys(ranked["class"]):
        rows = (ranked["class"] == cls).to_numpy()
        if cls in lfc:
            fc[rows] = lfc[cls][idx[rows]]
    ranked["log2_fc"] = fc
    t = ranked["t_stat"].to_numpy(float)
    ranked["direction"] = np.where(t > 0, "up", np.where(t < 0, "down", ""))
    w = ranked["weight"].to_numpy(float)
    opposite = ranked["selected"].to_numpy(bool) & (np.sign(w) * np.sign(t) < 0)
    note = np.full(len(ranked), "", dtype=object)  # (not a fixed-width array of the long note)
    note[opposite] = OPPOSITE_NOTE
    ranked["note"] = note
    return ranked


#: ``params`` entries that scanpy's readers of ``rank_genes_groups`` results look for.
_SCANPY_PARAMS = {"reference": "rest", "method": "ardselect", "corr_method": "none"}


def _log_fold_changes(X, labels, pre: Preprocessor, *, log1p_base=None) -> dict:
    """log2 fold change of expression, each class against the rest, as scanpy defines it.

    scanpy's ``rank_genes_groups`` works on ``log1p`` data and reports
    ``log2((expm1(mean_in) + 1e-9) / (expm1(mean_rest) + 1e-9))``, the means taken on the log
    scale. We do the same on the matrix ardselect read when it took no log itself (scanpy's
    convention: natural log unless ``uns['log1p']['base']`` says otherwise), and on
    ``log1p`` of the input (after ``floor`` / ``cap``) when ardselect took the log (counts or
    intensities). When that log-scale matrix has negative values (z-scores, log-ratios) the
    formula means nothing and every fold change is NaN. A dask ``X`` is summed chunk by chunk
    (one pass over the store).
    """
    uniq, codes = np.unique(labels, return_inverse=True)
    fn = functools.partial(_class_sums, pre, codes, uniq.size)
    sums, counts, lowest = as_design(X).reduce_rows(fn, _add_sums)
    base = log1p_base if pre.log_ == "none" else None

    def expm1(v):
        return np.expm1(v) if base is None else np.expm1(v * np.log(base))

    total, n = sums.sum(axis=0), counts.sum()
    out = {}
    for k, c in enumerate(uniq):
        if lowest < 0 or counts[k] == n:
            out[c] = np.full(X.shape[1], np.nan)
            continue
        m_in = sums[k] / counts[k]
        m_out = (total - sums[k]) / (n - counts[k])
        out[c] = np.log2((expm1(m_in) + 1e-9) / (expm1(m_out) + 1e-9))
    return out


#: Stored entries per block of rows when a sparse matrix is summed by class (:func:`_class_sums`).
_SUM_ENTRIES = 1 << 20


def _class_sums(pre: Preprocessor, codes, n_classes, X, start):
    """Per-class sums of the log-scale rows ``X`` (labels ``codes[start:]``), counts, minimum."""
    rows = codes[start:start + X.shape[0]]
    keeps_sparse = not ((pre.floor is not None and pre.floor > 0)
                        or (pre.cap is not None and pre.cap < 0))
    if as_design(X).sparse and (pre.log_ == "none" or keeps_sparse):
        return _sparse_class_sums(pre, rows, n_classes, X)
    if pre.log_ == "none":
        L = X
    else:  # dense: a sparse X whose clip changes its zeros is densified by the clip
        L = np.log1p(np.asarray(dense(pre._clip(X, pre.floor, pre.cap)), dtype=np.float64))
    values = as_design(L).stored()
    lowest = float(np.min(values)) if values.size else 0.0
    onehot = sp.csr_matrix((np.ones(rows.size), (rows, np.arange(rows.size))),
                           shape=(n_classes, rows.size))
    return dense(onehot @ L), np.bincount(rows, minlength=n_classes), lowest


def _sparse_class_sums(pre: Preprocessor, rows, n_classes, X):
    """:func:`_class_sums` of a sparse ``X`` a block of rows at a time, without a copy of it.

    Each class's sum of a gene is accumulated sample after sample in row order, in float64,
    as the product of the class indicator matrix with the log-scale matrix accumulates it, so the
    sums are those of that product, bit for bit.
    """
    X = sp.csr_matrix(X)
    n_genes = X.shape[1]
    sums = np.zeros((n_classes, n_genes))
    flat = sums.reshape(-1)
    lowest, any_value = np.inf, False
    step = max(1, int(_SUM_ENTRIES * X.shape[0] // max(X.nnz, 1)))
    for r0 in range(0, X.shape[0], step):
        B = X[r0:r0 + step]
        if pre.log_ == "none":
            values = B.data.astype(np.float64)
        else:
            values = pre._clip(B, pre.floor, pre.cap).data.astype(np.float64)
            np.log1p(values, out=values)
        if values.size:
            any_value = True
            lowest = min(lowest, float(np.min(values)))
        cls = np.repeat(rows[r0:r0 + step].astype(np.int64), np.diff(B.indptr))
        np.add.at(flat, cls * n_genes + B.indices, values)
    counts = np.bincount(rows, minlength=n_classes)
    return sums, counts, lowest if any_value else 0.0


def _add_sums(a, b):
    return a[0] + b[0], a[1] + b[1], min(a[2], b[2])


def _scanpy_record(result, var_names, lfc: Mapping) -> dict:
    """The ``names`` / ``scores`` / ``pvals`` / ``pvals_adj`` / ``logfoldchanges`` record arrays.

    One field per class (``sc.tl.rank_genes_groups`` layout, reference ``"rest"``). A class's list
    comes from the binary problem of that class against the rest (for two classes, the negative
    class gets the one problem with its weights negated). Genes in the chosen model come first, by
    decreasing score ``weight / sd`` (the posterior mean of the weight over its posterior sd: up
    markers first, then the genes whose absence marks the class); genes the model leaves out follow
    in ardselect's rank order with score 0. There are no p-values: ``pvals`` and ``pvals_adj`` are
    NaN.
    """
    ranked = result.ranked
    problems = list(dict.fromkeys(ranked["class"]))
    lists = {}
    for cls in problems:
        lists[cls] = (ranked[ranked["class"] == cls], 1.0)
    if len(problems) == 1 and len(result.classes) == 2 and result.classes[0] != "rest":
        other = result.classes[0] if problems[0] == result.classes[1] else result.classes[1]
        lists = {other: (lists[problems[0]][0], -1.0), **lists}
    var_index = pd.Index(np.asarray(var_names).astype(str))
    groups = [str(g) for g in lists]
    n = len(ranked[ranked["class"] == problems[0]])
    names = np.empty(n, dtype=[(g, object) for g in groups])
    fields = {f: np.empty(n, dtype=[(g, np.float64) for g in groups])
              for f in ("scores", "pvals", "pvals_adj", "logfoldchanges")}
    for g, (block, sign) in lists.items():
        sel = block["selected"].to_numpy(bool)
        with np.errstate(divide="ignore", invalid="ignore"):
            z = np.where(sel, sign * block["weight"].to_numpy(float)
                         / block["weight_sd"].to_numpy(float), 0.0)
        order_sel = np.flatnonzero(sel)[np.argsort(-z[sel], kind="stable")]
        order = np.concatenate([order_sel, np.flatnonzero(~sel)])
        genes = block["gene"].to_numpy()[order]
        names[str(g)] = genes.astype(str).astype(object)
        fields["scores"][str(g)] = z[order]
        fields["pvals"][str(g)] = np.nan
        fields["pvals_adj"][str(g)] = np.nan
        change = lfc.get(str(g))
        fields["logfoldchanges"][str(g)] = (np.full(n, np.nan) if change is None
                                            else change[var_index.get_indexer(genes)])
    return {"names": names, **fields}


def _write_results(adata, result, key: str, params: dict):
    """The ``var``, ``varm`` and ``uns[key]`` entries of the :class:`~ardselect.Signature` ``result``."""
    ranked = result.ranked
    genes = adata.var_names.astype(str)
    problems = list(dict.fromkeys(ranked["class"]))
    multi = len(problems) > 1
    n_vars = adata.n_vars
    rank = np.zeros((n_vars, len(problems)), dtype=np.int64)
    weight = np.zeros((n_vars, len(problems)))
    sd = np.zeros((n_vars, len(problems)))
    selected = np.zeros((n_vars, len(problems)), dtype=bool)
    kind = KINDS[result.kind]
    columns = kind.certainty_columns
    certainty = {c: np.full((n_vars, len(problems)), np.nan) for c in columns}
    credible_set = np.zeros((n_vars, len(problems)), dtype=np.int64)  # 0: in no set
    for k, cls in enumerate(problems):
        block = ranked[ranked["class"] == cls]
        # By name: with use_raw the table holds raw's genes, which may be more than var's.
        pos = genes.get_indexer(block["gene"])
        block, pos = block[pos >= 0], pos[pos >= 0]
        rank[pos, k] = block["rank"].to_numpy()
        weight[pos, k] = block["weight"].to_numpy()
        sd[pos, k] = block["weight_sd"].to_numpy()
        selected[pos, k] = block["selected"].to_numpy()
        for c in columns:
            certainty[c][pos, k] = block[c].to_numpy(dtype=np.float64)
        credible_set[pos, k] = block["credible_set"].fillna(0).to_numpy(dtype=np.int64)
    best = np.argmin(rank, axis=1)  # first class on ties
    rows = np.arange(n_vars)
    adata.var[f"{key}_rank"] = rank[rows, best]
    adata.var[f"{key}_selected"] = selected.any(axis=1)
    adata.var[f"{key}_weight"] = weight[rows, best]
    adata.var[f"{key}_weight_sd"] = sd[rows, best]
    for c in columns:
        adata.var[f"{key}_{c}"] = certainty[c][rows, best]
    adata.var[f"{key}_credible_set"] = credible_set[rows, best]
    if multi:
        adata.var[f"{key}_class"] = np.asarray(problems, dtype=object)[best]
        adata.varm[f"{key}_rank"] = rank
        adata.varm[f"{key}_weight"] = weight
        adata.varm[f"{key}_selected"] = selected
        for c in columns:
            adata.varm[f"{key}_{c}"] = certainty[c]
        adata.varm[f"{key}_credible_set"] = credible_set
    if not kind.has_path:
        adata.uns[key] = _pip_record(result, problems, params)
        return
    adata.uns[key] = {
        "params": _uns_value(params),
        "classes": np.asarray(result.classes, dtype=object),
        "problems": np.asarray(problems, dtype=object),
        "positive": "None" if result.positive is None else str(result.positive),
        # Per-class records are arrays aligned with "problems", never dicts keyed by class: h5ad
        # turns a key such as "CD4+/CD25 T Reg" into nested groups.
        "chosen_step": np.array([int(result.chosen_step[p]) for p in problems], dtype=np.int64),
        "ranked": _table_to_uns(ranked),
        "credible_sets": _table_to_uns(result.credible_sets),
        "path": _table_to_uns(result.path),
        "frontier": _table_to_uns(result.frontier),
        **({"cv_groups": _table_to_uns(result.cv_groups)}
           if result.cv_groups is not None and len(result.cv_groups) else {}),
        **({"covariates": _table_to_uns(result.covariates)}
           if result.covariates is not None and len(result.covariates) else {}),
        # Samples the model was fitted on: all of them, or the stratified sketch (max_samples).
        "n_fit_samples": int(result.n_fit_samples),
        # Passes over the chunks of a lazily read X fitted exactly (0: the fit held its rows).
        "n_store_passes": int(result.n_store_passes),
        "preprocessing": _preprocessing_record(result),
        "model_json": result.model.to_json(),
    }


def _preprocessing_record(result) -> dict:
    """``uns[key]["preprocessing"]``: what the preprocessing did, and the symbol column."""
    pre = result.preprocessing
    symbol_key = result.symbol_key
    return {
        "log": pre.log_,
        "description": pre.describe(),
        "n_dropped": int(pre.n_dropped_),
        "dropped": np.asarray(result.dropped, dtype=object),
        "symbol_key": "None" if symbol_key is None else str(symbol_key),
    }


def _pip_record(result, problems, params):
    """``uns[key]`` of a model without a path (spike-and-slab): no path, frontier or chosen step."""
    return {
        "params": _uns_value(params),
        "model": result.kind,
        "classes": np.asarray(result.classes, dtype=object),
        "problems": np.asarray(problems, dtype=object),
        "positive": "None" if result.positive is None else str(result.positive),
        "threshold": float(result.estimator.threshold),
        "coverage": float(result.estimator.coverage),
        "ranked": _table_to_uns(result.ranked),
        "credible_sets": _table_to_uns(result.credible_sets),
        "hyper": _table_to_uns(result.hyper),
        "n_fit_samples": int(result.n_fit_samples),
        "n_store_passes": 0,
        "preprocessing": _preprocessing_record(result),
        "model_json": result.model.to_json(),
    }


def write_signature(adata, sig, key: str, params: dict) -> None:
    """Write the :class:`~ardselect.Signature` ``sig`` into ``adata`` under ``key``, with ``params``."""
    _write_results(adata, sig, key, params)
    record = _scanpy_record(sig, sig.genes, sig.log2_fc)
    if record is not None:
        adata.uns[key].update(record)
        adata.uns[key]["params"].update(_SCANPY_PARAMS)


def check_key(key_added) -> None:
    """``key_added`` must name one ``uns`` entry."""
    if not isinstance(key_added, str) or not key_added or "/" in key_added:
        # h5ad and zarr read "a/b" back as a nested group, so the results would be lost.
        msg = f"key_added must be a non-empty string without '/'; got {key_added!r}"
        raise ValueError(msg)
