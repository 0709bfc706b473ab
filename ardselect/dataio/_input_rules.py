"""The named rules of the input door (:class:`ardselect.io.ExpressionData`).

Each check refuses with an :class:`~ardselect.ArdselectError` (or ``ValueError``) that carries the
name of its rule (``exc.rule``) and the values it names (``exc.details``), so that a front end can
say it in its own terms. The door applies them; the readers check a layer by the same rule.
"""

from __future__ import annotations

from ..exceptions import DataError, LabelError

__all__ = ["check_layer", "check_layer_and_raw", "check_var_in_raw", "refusal", "require_obs"]


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
