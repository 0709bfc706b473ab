"""The named rules of the input door (:class:`ardselect.io.ExpressionData`).

Each check refuses with an :class:`~ardselect.ArdselectError` (or ``ValueError``) that carries the
name of its rule (``exc.rule``) and the values it names (``exc.details``), so that a front end can
say it in its own terms. The door applies them; the readers check a layer by the same rule.
"""

from __future__ import annotations

import re

from ..exceptions import DataError, LabelError

__all__ = ["check_layer", "check_layer_and_raw", "check_var_in_raw", "refusal", "require_obs",
           "transposed_table"]


def refusal(kind: type, rule: str, msg: str, **details) -> Exception:
    """``kind(msg)`` carrying its rule's name (``.rule``) and the values it names (``.details``)."""
    exc = kind(msg)
    exc.rule = rule
    exc.details = details
    return exc


def check_layer_and_raw(layer, use_raw) -> None:
    """``layer`` and ``use_raw`` name two matrices: not both."""
    if layer is not None and use_raw:
        msg = "give either layer or use_raw, not both"
        raise refusal(ValueError, "layer_and_raw", msg)


def check_layer(layer: str, names, where: str = "") -> None:
    """``layer`` must be one of the layer ``names`` (of ``where``, a file name, when given)."""
    if layer not in names:
        avail = ", ".join(map(str, names)) or "none"
        msg = f"layer {layer!r} not found{f' in {where}' if where else ''}; available layers: {avail}"
        raise refusal(DataError, "layer", msg, layer=layer, available=[str(n) for n in names])


def check_var_in_raw(var_names, raw_names) -> None:
    """Every gene of ``var`` must be in ``raw``: ``raw`` keeps the genes ``var`` was cut from."""
    missing = var_names[~var_names.isin(raw_names)]
    if len(missing):
        shown = ", ".join(map(repr, missing[:5].astype(str))) + (", ..." if len(missing) > 5 else "")
        msg = (f"use_raw: {len(missing)} gene(s) of adata.var are not in adata.raw ({shown}); "
               "raw must hold every gene of var (its genes before selection)")
        raise refusal(DataError, "raw_genes", msg, genes=[str(g) for g in missing])


def require_obs(adata, key: str, what: str) -> None:
    """``key`` must be an ``obs`` column (rule ``"obs_column"``; ``what`` names its role)."""
    if key not in adata.obs.columns:
        names = [str(c) for c in adata.obs.columns]
        avail = ", ".join(names) or "none"
        msg = f"{what} {key!r} is not an obs column; available: {avail}"
        raise refusal(LabelError, "obs_column", msg, role=what, key=key, available=names)


#: Row ids that name genes, not samples: Ensembl gene or transcript ids, RefSeq accessions,
#: Affymetrix and Illumina probe ids.
_GENE_ID = re.compile(r"^(ENS[A-Z]*[GT]\d{5,}(\.\d+)?|[NX][MR]_\d+(\.\d+)?|\d+(_[a-z])?_at|"
                      r"AFFX-.+|ILMN_\d+)$")
#: A table read with samples in rows whose rows outnumber its numeric columns this many times
#: looks like genes in rows (expression tables hold more genes than samples).
TRANSPOSED_RATIO = 5


def transposed_table(adata) -> str:
    """Why a table read with samples in rows looks like genes in rows and samples in columns.

    ``adata`` is the table as read (rows as ``obs``, numeric columns as ``var``). Returns the
    reason for a message ("" when it does not look so): most row ids are gene or probe ids, or
    the rows outnumber the numeric columns :data:`TRANSPOSED_RATIO` times or more.
    """
    rows = [str(r) for r in adata.obs_names]
    genes = [r for r in rows if _GENE_ID.match(r)]
    if rows and 2 * len(genes) > len(rows):
        return f"its row ids look like gene ids ({', '.join(genes[:3])}, ...)"
    if adata.n_vars and adata.n_obs >= TRANSPOSED_RATIO * adata.n_vars:
        return f"it has {adata.n_obs} rows and only {adata.n_vars} numeric columns"
    return ""
