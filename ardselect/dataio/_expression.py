"""The input door: which matrix of the data is read, its genes, its labels and their groups.

Every rule about the input is decided here, once, for every entry point (:func:`ardselect.rank_genes`,
the portable model's predictions, and the command line's ``fit``, ``evaluate`` and ``predict``):

* :func:`expression`: ``X``, a layer or ``raw.X``, and the genes of its columns;
* :meth:`ExpressionData.check_source`: ``layer`` and ``use_raw`` apply to AnnData stores only,
  exclude each other, and a layer must exist (read from the store's index, before any work);
* :meth:`ExpressionData.read` and :meth:`ExpressionData.from_anndata`: the labelled data of a
  file or an AnnData (label column, missing labels, groups, covariates, gene symbols).

Each refusal carries the name of its rule (``exc.rule``) and the values it names
(``exc.details``), so that a front end (the command line) can say it in its own terms without
deciding the rule again.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ..engine._design import as_design, is_matrix
from ..engine._validation import blank_labels
from ..exceptions import DataError, FileFormatError, LabelError, ScaledXWarning
from ._files import detect_format
from ._input_rules import (
    check_layer,
    check_layer_and_raw,
    check_var_in_raw,
    refusal,
    require_obs,
    transposed_table,
)

__all__ = [
    "Expression",
    "ExpressionData",
    "Input",
    "ScaledXWarning",
    "expression",
    "find_symbols",
]


@dataclass(frozen=True)
class Input:
    """Which matrix of an AnnData the values are read from: ``X``, a layer, or ``raw.X``.

    ``str(input)`` names it in messages (``"X"``, ``"layer 'counts'"``, ``"raw.X"``);
    :meth:`to_dict` is what a portable model records as its ``input``.

    Attributes
    ----------
    layer : str or None
        A key of ``adata.layers``, or None.
    use_raw : bool
        Whether ``raw.X`` is read.

    Examples
    --------
    >>> from ardselect.io import Input
    >>> str(Input()), str(Input(layer="counts")), str(Input(use_raw=True))
    ('X', "layer 'counts'", 'raw.X')
    >>> Input.from_dict({"layer": "counts", "use_raw": False}) == Input(layer="counts")
    True
    """

    layer: str | None = None
    use_raw: bool = False

    def __str__(self) -> str:
        if self.use_raw:
            return "raw.X"
        return "X" if self.layer is None else f"layer {self.layer!r}"

    def to_dict(self) -> dict:
        """``{"layer": name or None, "use_raw": bool}``."""
        return {"layer": self.layer, "use_raw": bool(self.use_raw)}

    @classmethod
    def from_dict(cls, record: Mapping | None) -> Input:
        """The input a record holds; ``X`` for None or an empty record."""
        record = record or {}
        return cls(layer=record.get("layer"), use_raw=bool(record.get("use_raw", False)))


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
    def input(self) -> Input:
        """Which matrix the values were read from (``str()`` names it: ``"X"``, ``"raw.X"``...)."""
        return Input(self.layer, bool(self.use_raw))


def expression(adata, *, layer: str | None = None, use_raw: bool = False) -> Expression:
    """The expression matrix of ``adata`` to read, and the genes of its columns.

    ``X`` by default; ``adata.layers[layer]`` with ``layer``; ``adata.raw.X`` with
    ``use_raw=True``. ``raw`` may hold more genes than ``adata.var`` (scanpy's usual layout after
    selecting highly variable genes: ``raw`` keeps every gene): its columns are then ``raw``'s
    genes, as scanpy's ``rank_genes_groups(use_raw=True)`` reads them. A ``raw`` lacking genes
    of ``var`` is refused: ``raw`` is the data ``var``'s genes were selected from.

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
        ``adata.raw`` or with a ``raw`` that lacks genes of ``var``, or no ``X``.

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
    check_layer_and_raw(layer, use_raw)
    if use_raw:
        raw = adata.raw
        if raw is None:
            msg = "use_raw=True but adata.raw is empty"
            raise refusal(DataError, "no_raw", msg)
        check_var_in_raw(adata.var_names, raw.var_names)
        var = raw.var.copy()
        for col in adata.var.columns:
            if col not in var.columns:
                var[col] = adata.var[col].reindex(var.index)
        return Expression(raw.X, raw.var_names, var, use_raw=True)
    if layer is not None:
        check_layer(layer, list(adata.layers.keys()))
        return Expression(adata.layers[layer], adata.var_names, adata.var, layer=layer)
    if adata.X is None:
        msg = "the AnnData object has no expression matrix X"
        raise refusal(DataError, "no_x", msg)
    return Expression(adata.X, adata.var_names, adata.var)


@dataclass(frozen=True, eq=False)
class ExpressionData:
    """Labelled expression data, read once under one set of rules: the input of every fit.

    Build it from a file with :meth:`read` or from an AnnData with :meth:`from_anndata`. It
    decides which matrix is read (``X``, a layer or ``raw.X``), the genes of its columns and
    their descriptions (gene symbols), the labels, the groups held out whole by the inner
    cross-validation, and the known covariates; every entry point that fits, evaluates or
    predicts (:func:`ardselect.rank_genes`, the portable model's predictions, the command line's
    ``fit``, ``evaluate`` and ``predict``) reads its data through it. The rules:

    * ``X`` by default; ``layer`` reads ``adata.layers[layer]`` (which must exist);
      ``use_raw=True`` reads ``adata.raw.X`` under ``raw``'s genes, which may be more than
      ``var``'s (scanpy's layout after selecting highly variable genes) but must include them;
      ``layer`` and ``use_raw`` exclude each other and apply to AnnData (``.h5ad``, ``.zarr``)
      only. No reader puts a layer in place of ``X``: the layer read is the layer recorded.
    * The labels come from the ``obs`` column ``label_key``; a sample without a label (missing,
      NaN, or empty or whitespace-only text) is refused by name. ``label_key=None`` reads
      unlabelled data (to predict).
    * ``groups`` and each covariate name an ``obs`` column; a covariate is not the label.
    * ``symbol_key`` names a ``var`` column; by default the first text column of
      :data:`SYMBOL_KEYS`.

    Each refusal is an :class:`~ardselect.ArdselectError` (or ``ValueError``) whose ``rule``
    attribute names the rule and ``details`` the values involved.

    Attributes
    ----------
    X : {ndarray, sparse matrix, dask array} of shape (n_samples, n_genes)
        The values, as stored (a backed or h5py dataset is read into memory).
    labels : ndarray of shape (n_samples,) or None
        The class of each sample, as given (compared as strings by the fit); None for
        unlabelled data.
    var_names : pandas.Index of shape (n_genes,)
        The gene of each column of ``X``.
    obs_names : pandas.Index of shape (n_samples,)
        The sample of each row.
    label_key : str or None
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
    adata : anndata.AnnData or None
        The AnnData the data were read from (results are written back into it).

    Examples
    --------
    >>> import numpy as np, anndata as ad, pandas as pd
    >>> from ardselect.io import ExpressionData
    >>> full = ad.AnnData(np.arange(12.0).reshape(3, 4),
    ...                   obs=pd.DataFrame({"label": ["a", "b", "a"]}, index=["s1", "s2", "s3"]),
    ...                   var=pd.DataFrame(index=["g1", "g2", "g3", "g4"]))
    >>> adata = full[:, ["g2", "g4"]].copy()
    >>> adata.raw = full
    >>> data = ExpressionData.from_anndata(adata, "label", use_raw=True)
    >>> data.shape, list(data.var_names), str(data.input), list(data.labels)
    ((3, 4), ['g1', 'g2', 'g3', 'g4'], 'raw.X', ['a', 'b', 'a'])
    >>> adata.obs.loc["s2", "label"] = None
    >>> ExpressionData.from_anndata(adata, "label")
    Traceback (most recent call last):
    ...
    ardselect.exceptions.LabelError: 1 sample(s) have no label in 'label' (s2); give them one or drop them from the data
    """

    X: object
    labels: np.ndarray | None
    var_names: pd.Index
    obs_names: pd.Index
    label_key: str | None
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
    adata: object = field(default=None, repr=False)

    @property
    def shape(self) -> tuple[int, int]:
        """``(n_samples, n_genes)``."""
        return tuple(self.X.shape)

    @property
    def input(self) -> Input:
        """Which matrix the values were read from (``str()`` names it: ``"X"``, ``"raw.X"``...)."""
        return Input(self.layer, bool(self.use_raw))

    @staticmethod
    def check_source(path, *, layer: str | None = None, use_raw: bool = False,
                     lazy: bool = False):
        """Check ``layer`` and ``use_raw`` against a file before reading it; its layers' names.

        They apply to ``.h5ad`` and ``.zarr`` stores only and exclude each other; a layer must
        be in the store, whose layer names are read from its index alone (nothing is loaded);
        ``raw`` is not read lazily.

        Returns
        -------
        list of str or None
            The store's layer names; None for a table or a store that cannot be opened (its
            reader then says why).

        Raises
        ------
        MissingFileError
            No such file.
        FileFormatError
            A directory that is not a ``.zarr`` store, or ``layer`` or ``use_raw`` for a table
            (rule ``"anndata_only"``).
        ValueError
            Both given (rule ``"layer_and_raw"``), or ``use_raw`` with ``lazy``
            (``"lazy_raw"``).
        DataError
            No such layer in the store (rule ``"layer"``; ``details``: the layer and the
            store's layers).
        """
        from ._files import require_file
        from ._readers import store_layers

        path = require_file(path)  # missing, or a directory that is not a .zarr store
        fmt = detect_format(path)
        if (layer is not None or use_raw) and fmt not in ("h5ad", "zarr"):
            msg = f"layer and use_raw apply to .h5ad and .zarr input, not {fmt}"
            raise refusal(FileFormatError, "anndata_only", msg, format=fmt)
        check_layer_and_raw(layer, use_raw)
        if lazy and use_raw:
            msg = "raw cannot be read lazily; give the matrix as X or a layer"
            raise refusal(ValueError, "lazy_raw", msg)
        names = store_layers(path) if fmt in ("h5ad", "zarr") else None
        if layer is not None and names is not None:
            check_layer(layer, names, path.name)
        return names

    @classmethod
    def read(cls, path, label_key: str | None = "label", *, labels=None,
             layer: str | None = None, use_raw: bool = False, genes_in_rows: bool = False,
             gene_columns: Sequence[str] | None = None, drop: Sequence[str] = (),
             groups: str | None = None, symbol_key: str | None = None,
             covariates: Sequence[str] | None = None, check_columns: bool = True,
             lazy: bool = False) -> ExpressionData:
        """The labelled data of a file: ``.h5ad``, ``.zarr``, CSV/TSV, or GCT with CLS labels.

        :meth:`read_anndata` reads the file, then :meth:`from_anndata` applies the rules.

        Parameters
        ----------
        path : str or Path
            The data (see :func:`ardselect.io.read_data` for the formats).
        label_key : str or None, default="label"
            The labels: an ``obs`` column, a table column (or, with ``genes_in_rows``, a row),
            or the column ``labels`` go to; None for unlabelled data.
        labels : str or Path, optional
            A separate label file (CLS, or a table of sample id and label).
        layer, use_raw :
            As in :meth:`from_anndata`; AnnData stores only (:meth:`check_source`).
        genes_in_rows, gene_columns, drop, check_columns :
            CSV/TSV tables only, as in :func:`ardselect.io.read_data`.
        groups, symbol_key, covariates :
            As in :meth:`from_anndata`. A covariate that a table holds as a numeric column is
            read as a sample annotation, not a gene.
        lazy : bool, default=False
            Leave the matrix on disk in row chunks (``.h5ad`` and ``.zarr``; needs dask).
        """
        adata = cls.read_anndata(path, label_key=label_key, labels=labels, layer=layer,
                             use_raw=use_raw, genes_in_rows=genes_in_rows,
                             gene_columns=gene_columns, drop=drop, covariates=covariates,
                             check_columns=check_columns, lazy=lazy)
        if label_key is not None and label_key not in adata.obs.columns and not genes_in_rows \
                and labels is None and detect_format(path) in ("csv", "tsv"):
            _refuse_transposed(adata, label_key, Path(path).name)
        return cls.from_anndata(adata, label_key, layer=layer, use_raw=use_raw, groups=groups,
                                symbol_key=symbol_key, covariates=covariates)

    @classmethod
    def from_anndata(cls, adata, label_key: str | None, *, layer: str | None = None,
                     use_raw: bool = False, groups: str | None = None,
                     symbol_key: str | None = None,
                     covariates: Sequence[str] | None = None) -> ExpressionData:
        """The labelled data of an AnnData: ``X``, ``layers[layer]`` or ``raw.X``.

        Parameters
        ----------
        adata : anndata.AnnData of shape (n_obs, n_vars)
            Samples (cells) as observations, genes as variables.
        label_key : str or None
            The ``obs`` column of class labels; None reads unlabelled data (to predict).
        layer : str, optional
            Read ``adata.layers[layer]`` instead of ``X``.
        use_raw : bool, default=False
            Read ``adata.raw.X``, under ``raw``'s genes, which may be more than ``var``'s
            (scanpy's layout after selecting highly variable genes) but must include them.
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
            ``label_key``, ``groups`` or a covariate is not an ``obs`` column (rule
            ``"obs_column"``; the message lists them), or samples have no label (rule
            ``"missing_labels"``) or an empty one (``"empty_labels"``; the message names them).
        DataError
            No such layer (``"layer"``), ``use_raw`` without ``raw`` (``"no_raw"``) or with a
            ``raw`` lacking genes of ``var`` (``"raw_genes"``), no ``X`` (``"no_x"``), or no
            ``symbol_key`` column (``"symbol_key"``).
        ValueError
            Both ``layer`` and ``use_raw`` (``"layer_and_raw"``), or the label key also given
            as a covariate (``"label_is_covariate"``).
        """
        import anndata as ad

        from ..engine._lazy import is_dask

        if not isinstance(adata, ad.AnnData):
            msg = f"adata must be an AnnData object, not {type(adata).__name__}"
            raise TypeError(msg)
        if label_key is not None:
            require_obs(adata, label_key, "label key")
        source = expression(adata, layer=layer, use_raw=use_raw)
        if groups is not None:
            require_obs(adata, groups, "groups")
        covariates = (covariates,) if isinstance(covariates, str) else tuple(covariates or ())
        if label_key is not None and label_key in covariates:
            msg = f"the label key {label_key!r} cannot also be a covariate"
            raise refusal(ValueError, "label_is_covariate", msg, key=label_key)
        for name in covariates:
            require_obs(adata, name, "covariate")
        labels = None if label_key is None else cls.labels_of(adata, label_key)
        X = source.X
        if not (is_matrix(X) or is_dask(X)):
            X = X[...] if hasattr(X, "shape") else np.asarray(X)  # backed / h5py datasets
        skey = find_symbols(source.var, symbol_key)
        return cls(
            X=X,
            labels=labels,
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
            adata=adata,
        )

    @staticmethod
    def read_anndata(path, *, label_key: str | None = None, labels=None,
                     layer: str | None = None, use_raw: bool = False, genes_in_rows: bool = False,
                     gene_columns: Sequence[str] | None = None, drop: Sequence[str] = (),
                     covariates: Sequence[str] | None = None, check_columns: bool = True,
                     lazy: bool = False):
        """A file as an AnnData, read for :meth:`ExpressionData.from_anndata`: nothing moved.

        The layers stay layers and ``raw`` stays ``raw`` (``layer`` only says which layer a lazy
        read opens); ``layer`` and ``use_raw`` are checked first (:meth:`ExpressionData.check_source`).
        A covariate that a table holds as a numeric column (read as a gene) becomes an ``obs``
        column; a covariate that is neither is left to :meth:`ExpressionData.from_anndata` to
        refuse.

        Raises
        ------
        FileFormatError
            ``gene_columns`` or ``drop`` for an AnnData or GCT file (rule ``"table_only"``), and the
            refusals of :meth:`ExpressionData.check_source` and :func:`ardselect.io.read_data`.
        """
        from ._files import require_file
        from ._readers import _read_data

        path = require_file(path)
        fmt = detect_format(path)
        if (gene_columns is not None or drop) and fmt not in ("csv", "tsv"):
            msg = (f"choosing gene columns (--gene-columns, --drop) applies to CSV/TSV tables, not "
                   f"{fmt}; subset the genes of {path.name} instead")
            raise refusal(FileFormatError, "table_only", msg, format=fmt)
        ExpressionData.check_source(path, layer=layer, use_raw=use_raw, lazy=lazy)
        adata = _read_data(path, genes_in_rows=genes_in_rows, label_key=label_key, labels=labels,
                           layer=layer, gene_columns=gene_columns, drop=drop or (),
                           check_columns=check_columns, lazy=lazy, layer_as_x=False)
        return _covariates_to_obs(adata, covariates)

    @staticmethod
    def labels_of(adata, label_key: str) -> np.ndarray:
        """The labels of ``obs[label_key]``, every sample holding one.

        A missing label (None, NaN) is refused by rule ``"missing_labels"``, an empty or
        whitespace-only text label by rule ``"empty_labels"``; both name the samples.
        """
        require_obs(adata, label_key, "label key")
        values = adata.obs[label_key].to_numpy()
        series = pd.Series(values, dtype=object)
        absent = pd.isna(series).to_numpy()
        blank = blank_labels(series.to_numpy())
        for mask, rule, what in ((absent, "missing_labels", "no label"),
                                 (blank, "empty_labels", "an empty label")):
            if mask.any():
                samples = adata.obs_names[mask].astype(str)
                shown = ", ".join(samples[:5]) + (", ..." if len(samples) > 5 else "")
                msg = (f"{len(samples)} sample(s) have {what} in {label_key!r} ({shown}); give "
                       "them one or drop them from the data")
                raise refusal(LabelError, rule, msg, key=label_key,
                              samples=[str(m) for m in samples])
        return values

    def notice_scaled_x(self) -> None:
        """Warn (:class:`ScaledXWarning`) when ``X`` was read, looks scaled, and ``raw`` is not.

        Negative values in ``X`` beside a non-negative ``raw`` that holds its genes is scanpy's
        usual layout after ``sc.pp.scale`` (``raw`` often keeps more genes than ``X``); its
        ``rank_genes_groups`` then reads ``raw`` by default. In-memory matrices only (a lazy
        store would need a pass to tell).
        """
        adata = self.adata
        if self.layer is not None or self.use_raw or adata is None:
            return
        raw = adata.raw
        if raw is None or not adata.var_names.isin(raw.var_names).all():
            return

        X = self.X
        in_memory = [is_matrix(M) for M in (X, raw.X)]
        if not all(in_memory) or 0 in X.shape or not X.min() < 0 or raw.X.min() < 0:
            return
        warnings.warn(
            "X holds scaled values (some negative) and adata.raw unscaled values of its genes; "
            "fitting X as given. scanpy's rank_genes_groups reads raw by default: pass "
            "use_raw=True (ardselect fit --use-raw) to fit raw instead.", ScaledXWarning,
            stacklevel=3)


def _refuse_transposed(adata, label_key: str, name: str) -> None:
    """A table without its label column that looks like genes in rows: say to read it so.

    The refusal is the label key's (rule ``"obs_column"``), with the reason in ``details``
    (``"transposed"``) and the hint in the message.
    """
    reason = transposed_table(adata)
    if not reason:
        return
    names = [str(c) for c in adata.obs.columns]
    msg = (f"label key {label_key!r} is not a column of {name}, and {reason}: its genes look to "
           "be in rows and its samples in columns; read it with genes_in_rows=True "
           "(--genes-in-rows), the labels in a row or a separate file")
    raise refusal(LabelError, "obs_column", msg, role="label key", key=label_key,
                  available=names, transposed=reason)


def _covariates_to_obs(adata, names):
    """The AnnData with every covariate that ``var`` holds (a table's column read as a gene) in ``obs``."""
    names = (names,) if isinstance(names, str) else tuple(names or ())
    var = [n for n in names if n not in adata.obs.columns and n in adata.var_names]
    if not var:
        return adata
    cols = adata.var_names.get_indexer(var)
    X = adata.X
    values = as_design(X).columns(cols)
    keep = np.ones(adata.n_vars, dtype=bool)
    keep[cols] = False
    out = adata[:, keep].copy()
    for k, name in enumerate(var):
        out.obs[name] = values[:, k]
    return out


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
            raise refusal(DataError, "symbol_key", msg, key=symbol_key)
        return symbol_key
    for key in SYMBOL_KEYS:
        if key in var.columns and not pd.api.types.is_numeric_dtype(var[key]):
            return key
    return None


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
