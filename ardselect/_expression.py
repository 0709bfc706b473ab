"""Which matrix of an AnnData is read, and the genes of its columns.

``X``, a layer or ``raw.X``: :func:`expression` decides, once, for every AnnData entry point
(:func:`ardselect.rank_genes`, the portable model's predictions, and the command line's ``fit``,
``evaluate`` and ``predict``), so that they read the same values under the same gene names.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from .exceptions import DataError

__all__ = ["Expression", "expression"]


@dataclass(frozen=True)
class Expression:
    """The matrix an AnnData function reads, with the genes of its columns.

    Attributes
    ----------
    X : {ndarray, sparse matrix, dask array, backed dataset} of shape (n_obs, n_genes)
        The values: ``adata.X``, ``adata.layers[layer]`` or ``adata.raw.X``, as stored.
    var_names : pandas.Index of shape (n_genes,)
        The gene of each column of ``X``: ``adata.raw.var_names`` for ``raw.X``, else
        ``adata.var_names``.
    var : pandas.DataFrame of shape (n_genes, n_columns)
        The annotation of those genes, indexed by ``var_names``: ``adata.var`` for ``X`` and
        layers; for ``raw.X``, ``adata.raw.var`` with the columns of ``adata.var`` it lacks added
        by gene name (missing for the genes ``adata.var`` does not hold).
    layer : str or None
        The layer read, if any.
    use_raw : bool
        Whether ``raw.X`` was read.
    """

    X: object
    var_names: pd.Index
    var: pd.DataFrame
    layer: str | None = None
    use_raw: bool = False

    @property
    def source(self) -> str:
        """Where the values were read, for messages: ``"X"``, ``"layer 'name'"`` or ``"raw.X"``."""
        if self.use_raw:
            return "raw.X"
        return "X" if self.layer is None else f"layer {self.layer!r}"


def expression(adata, *, layer: str | None = None, use_raw: bool = False) -> Expression:
    """The expression matrix of ``adata`` to read, and the genes of its columns.

    ``X`` by default; ``adata.layers[layer]`` with ``layer``; ``adata.raw.X`` with
    ``use_raw=True``. ``raw`` may hold more genes than ``adata.var`` (scanpy's usual layout after
    selecting highly variable genes: ``raw`` keeps every gene): its columns are then ``raw``'s
    genes, as scanpy's ``rank_genes_groups(use_raw=True)`` reads them.

    Parameters
    ----------
    adata : anndata.AnnData of shape (n_obs, n_vars)
        The data.
    layer : str, optional
        A key of ``adata.layers``.
    use_raw : bool, default=False
        Read ``adata.raw.X`` instead of ``X``.

    Returns
    -------
    Expression
        The matrix (as stored: dense, sparse, lazy or backed), its gene names and their
        annotation.

    Raises
    ------
    ValueError
        Both ``layer`` and ``use_raw`` given.
    DataError
        The layer does not exist (the message lists the layers), ``use_raw`` without
        ``adata.raw``, or no ``X``.

    Examples
    --------
    >>> import numpy as np, anndata as ad, pandas as pd
    >>> from ardselect.io import expression
    >>> full = ad.AnnData(np.ones((3, 4)), var=pd.DataFrame(index=["a", "b", "c", "d"]))
    >>> adata = full[:, ["b", "d"]].copy()
    >>> adata.raw = full
    >>> list(expression(adata).var_names), list(expression(adata, use_raw=True).var_names)
    (['b', 'd'], ['a', 'b', 'c', 'd'])
    """
    if layer is not None and use_raw:
        msg = "give either layer or use_raw, not both"
        raise ValueError(msg)
    if use_raw:
        raw = adata.raw
        if raw is None:
            msg = "use_raw=True but adata.raw is empty"
            raise DataError(msg)
        var = raw.var.copy()
        for col in adata.var.columns:
            if col not in var.columns:
                var[col] = adata.var[col].reindex(var.index)
        return Expression(raw.X, raw.var_names, var, use_raw=True)
    if layer is not None:
        if layer not in adata.layers:
            avail = ", ".join(map(str, adata.layers.keys())) or "none"
            msg = f"layer {layer!r} not found; available layers: {avail}"
            raise DataError(msg)
        return Expression(adata.layers[layer], adata.var_names, adata.var, layer=layer)
    if adata.X is None:
        msg = "the AnnData object has no expression matrix X"
        raise DataError(msg)
    return Expression(adata.X, adata.var_names, adata.var)
