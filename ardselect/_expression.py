"""Which matrix of an AnnData is read, and the genes of its columns.

``X``, a layer or ``raw.X``: :func:`expression` decides, once, for every AnnData entry point
(:func:`ardselect.rank_genes`, the portable model's predictions, and the command line's ``fit``,
``evaluate`` and ``predict``), so that they read the same values under the same gene names.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .exceptions import DataError, LabelError

__all__ = ["Expression", "ExpressionData", "ScaledXWarning", "expression", "find_symbols"]


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


@dataclass(frozen=True, eq=False)
class ExpressionData:
    """Labelled expression data, read once under one set of rules: the input of every fit.

    Build it with :meth:`from_anndata`. It decides which matrix is read (``X``, a layer or
    ``raw.X``), the genes of its columns and their descriptions (gene symbols), the labels, the
    groups held out whole by the inner cross-validation, and the known covariates; every entry
    point that fits or evaluates (:func:`ardselect.rank_genes`, the command line's ``fit`` and
    ``evaluate``) reads its data through it.

    Attributes
    ----------
    X : {ndarray, sparse matrix, dask array} of shape (n_samples, n_genes)
        The values, as stored (a backed or h5py dataset is read into memory).
    labels : ndarray of shape (n_samples,)
        The class of each sample, as given (compared as strings by the fit).
    var_names : pandas.Index of shape (n_genes,)
        The gene of each column of ``X``.
    obs_names : pandas.Index of shape (n_samples,)
        The sample of each row.
    label_key : str
        The ``obs`` column the labels come from.
    descriptions : ndarray of shape (n_genes,) or None
        Each gene's symbol or description, from ``var[symbol_key]``.
    symbol_key : str or None
        The ``var`` column of ``descriptions``.
    groups : ndarray of shape (n_samples,) or None
        Each sample's group (donor, patient, batch), from ``obs[groups_key]``.
    groups_key : str or None
        The ``obs`` column of ``groups``.
    covariates : tuple of str
        The ``obs`` columns of known covariates (empty when none).
    obs : pandas.DataFrame of shape (n_samples, n_columns)
        The sample annotation (covariates are read from it by name).
    layer : str or None
        The layer read, if any.
    use_raw : bool
        Whether ``raw.X`` was read.
    pseudobulk : dict
        How the samples were pooled, when :func:`ardselect.pseudobulk` made them (else empty).
    log1p_base : float or None
        The base of scanpy's ``log1p`` when ``uns["log1p"]`` records one.
    """

    X: object
    labels: np.ndarray
    var_names: pd.Index
    obs_names: pd.Index
    label_key: str
    descriptions: np.ndarray | None = None
    symbol_key: str | None = None
    groups: np.ndarray | None = None
    groups_key: str | None = None
    covariates: tuple = ()
    obs: pd.DataFrame | None = None
    layer: str | None = None
    use_raw: bool = False
    pseudobulk: dict = field(default_factory=dict)
    log1p_base: float | None = None

    @property
    def shape(self) -> tuple[int, int]:
        """``(n_samples, n_genes)``."""
        return tuple(self.X.shape)

    @property
    def source(self) -> str:
        """Where the values were read, for messages: ``"X"``, ``"layer 'name'"`` or ``"raw.X"``."""
        if self.use_raw:
            return "raw.X"
        return "X" if self.layer is None else f"layer {self.layer!r}"

    @classmethod
    def from_anndata(cls, adata, label_key: str, *, layer: str | None = None,
                     use_raw: bool = False, groups: str | None = None,
                     symbol_key: str | None = None,
                     covariates: Sequence[str] | None = None) -> ExpressionData:
        """The labelled data of an AnnData: ``X``, ``layers[layer]`` or ``raw.X``.

        Parameters
        ----------
        adata : anndata.AnnData of shape (n_obs, n_vars)
            Samples (cells) as observations, genes as variables.
        label_key : str
            The ``obs`` column of class labels.
        layer : str, optional
            Read ``adata.layers[layer]`` instead of ``X``.
        use_raw : bool, default=False
            Read ``adata.raw.X``, under ``raw``'s genes, which may be more than ``var``'s
            (scanpy's layout after selecting highly variable genes).
        groups : str, optional
            An ``obs`` column of groups held out whole by the inner cross-validation.
        symbol_key : str, optional
            The ``var`` column of gene symbols; by default the first text column among
            ``symbol``, ``gene_symbol(s)``, ``gene_name(s)``, ``feature_name``, ``description``.
        covariates : sequence of str, optional
            ``obs`` columns of known covariates.

        Raises
        ------
        LabelError
            ``label_key`` or ``groups`` is not an ``obs`` column (the message lists them).
        DataError
            No such layer, ``use_raw`` without ``raw``, or no ``symbol_key`` column.
        ValueError
            Both ``layer`` and ``use_raw``, or the label key also given as a covariate.
        """
        import anndata as ad
        import scipy.sparse as sp

        from ._lazy import is_dask

        if not isinstance(adata, ad.AnnData):
            msg = f"adata must be an AnnData object, not {type(adata).__name__}"
            raise TypeError(msg)
        _require_obs(adata, label_key, "label key")
        source = expression(adata, layer=layer, use_raw=use_raw)
        if groups is not None:
            _require_obs(adata, groups, "groups")
        covariates = (covariates,) if isinstance(covariates, str) else tuple(covariates or ())
        if label_key in covariates:
            msg = f"the label key {label_key!r} cannot also be a covariate"
            raise ValueError(msg)
        X = source.X
        if not (sp.issparse(X) or isinstance(X, np.ndarray) or is_dask(X)):
            X = X[...] if hasattr(X, "shape") else np.asarray(X)  # backed / h5py datasets
        skey = find_symbols(source.var, symbol_key)
        if layer is None and not use_raw:
            _notice_scaled_x(adata, X)
        return cls(
            X=X,
            labels=adata.obs[label_key].to_numpy(),
            var_names=source.var_names,
            obs_names=adata.obs_names,
            label_key=label_key,
            descriptions=source.var[skey].to_numpy() if skey is not None else None,
            symbol_key=skey,
            groups=None if groups is None else adata.obs[groups].to_numpy(),
            groups_key=groups,
            covariates=covariates,
            obs=adata.obs,
            layer=layer,
            use_raw=bool(use_raw),
            pseudobulk=_pseudobulk_record(adata),
            log1p_base=_log1p_base(adata),
        )


#: var columns searched, in order, for gene symbols or descriptions when ``symbol_key`` is not given.
SYMBOL_KEYS = (
    "symbol",
    "symbols",
    "gene_symbol",
    "gene_symbols",
    "gene_name",
    "gene_names",
    "feature_name",
    "description",
    "Description",
)


def find_symbols(var: pd.DataFrame, symbol_key: str | None) -> str | None:
    """The ``var`` column of gene symbols, or None when there is none.

    ``symbol_key`` when given (it must exist), else the first of :data:`SYMBOL_KEYS` that holds text.
    """
    if symbol_key is not None:
        if symbol_key not in var.columns:
            avail = ", ".join(map(str, var.columns)) or "none"
            msg = f"symbol_key {symbol_key!r} is not a var column; var columns: {avail}"
            raise DataError(msg)
        return symbol_key
    for key in SYMBOL_KEYS:
        if key in var.columns and not pd.api.types.is_numeric_dtype(var[key]):
            return key
    return None


def _require_obs(adata, key: str, what: str) -> None:
    if key not in adata.obs.columns:
        avail = ", ".join(map(str, adata.obs.columns)) or "none"
        msg = f"{what} {key!r} is not an obs column; available: {avail}"
        raise LabelError(msg)


def _pseudobulk_record(adata) -> dict:
    """``{"pseudobulk": ...}`` for the model of data made by :func:`ardselect.pseudobulk`."""
    record = adata.uns.get("pseudobulk")
    if not isinstance(record, Mapping) or "donor" not in record:
        return {}
    return {"pseudobulk": {"donor": str(record["donor"]),
                           "normalisation": str(record.get("normalisation", ""))}}


def _log1p_base(adata):
    """The log base scanpy's ``pp.log1p`` recorded (``uns['log1p']['base']``), else None (natural)."""
    rec = adata.uns.get("log1p")
    base = rec.get("base") if isinstance(rec, Mapping) else None
    return None if base is None or (isinstance(base, str) and base == "None") else float(base)


class ScaledXWarning(UserWarning):
    """``X`` holds scaled values while ``adata.raw`` holds unscaled ones of its genes."""


def _notice_scaled_x(adata, X):
    """Warn when ``X`` looks scaled (negative values) and ``raw`` holds its genes unscaled.

    That is scanpy's usual layout after ``sc.pp.scale`` (``raw`` often keeps more genes than
    ``X``); its ``rank_genes_groups`` then reads ``raw`` by default. In-memory matrices only (a
    lazy store would need a pass to tell).
    """
    raw = adata.raw
    if raw is None or not adata.var_names.isin(raw.var_names).all():
        return
    import scipy.sparse as sp

    in_memory = [sp.issparse(M) or isinstance(M, np.ndarray) for M in (X, raw.X)]
    if not all(in_memory) or 0 in X.shape or not X.min() < 0 or raw.X.min() < 0:
        return
    warnings.warn(
        "X holds scaled values (some negative) and adata.raw unscaled values of its genes; "
        "fitting X as given. scanpy's rank_genes_groups reads raw by default: pass "
        "use_raw=True (ardselect fit --use-raw) to fit raw instead.", ScaledXWarning,
        stacklevel=3)


