"""The readers of :mod:`ardselect.io`: expression data in, as an AnnData with samples as observations.

``.h5ad`` and ``.zarr`` stores (in memory or lazily, in row chunks), CSV/TSV tables (samples x
genes with a label column, or genes x samples; annotation columns told apart from genes), the Broad
GCT format (its CLS labels and other label files are read by :mod:`._label_files`). The public
names are exported by :mod:`ardselect.io`; this module holds their bodies.
"""

from __future__ import annotations

import gzip
import re
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ..engine._design import as_design, dense
from ..engine._validation import (
    blank_labels,
    check_class_labels,
    check_clean_names,
    check_unique_names,
)
from ..exceptions import DataError, FileFormatError, LabelError
from ._files import _HDF5_SIGNATURE, _read_csv, detect_format, require_file
from ._input_rules import check_layer
from ._label_files import read_labels, refuse_samples_in_columns

# --------------------------------------------------------------------------------------------
# Readers
# --------------------------------------------------------------------------------------------


class AnnotationColumnWarning(UserWarning):
    """Numeric columns of a table were taken for sample annotations, not genes."""


#: Words that name sample annotations, not genes: a numeric table column whose name holds one of
#: them as a word (``age``, ``n_counts``, ``TimePoint``, ``label_code``) is not made a gene unless
#: named in ``gene_columns``. Gene symbols and probe ids (``ID1``, ``CD4``, ``1007_s_at``,
#: ``ENSG00000141510``) hold none of them.
ANNOTATION_WORDS = frozenset({
    "age", "sex", "gender", "bmi", "weight", "height", "batch", "plate", "lane", "run", "well",
    "replicate", "donor", "patient", "subject", "individual", "sample", "cell", "id", "idx",
    "index", "code", "codes", "label", "labels", "class", "group", "cluster", "condition",
    "treatment", "dose", "time", "timepoint", "day", "days", "hour", "hours", "week", "weeks",
    "month", "months", "year", "years", "stage", "grade", "status", "score", "survival", "event",
    "outcome", "response", "pfs", "dfs", "efs", "rfs", "num", "count", "counts", "total", "pct",
    "percent", "frac", "fraction", "mito", "ribo", "umi", "umis", "genes", "size", "factor",
    "phase", "type", "tissue", "site", "center", "centre", "date", "target", "diagnosis",
    "row", "rows", "number",
    # ... and gene annotations beside the samples of a genes-in-rows table
    "chromosome", "chrom", "chr", "cytoband", "strand", "locus",
})

#: A numeric column holding each of ``n`` consecutive integers exactly once, over at least this
#: many samples, is a row number or an id, not a gene (whatever its name).
ROW_NUMBER_MIN_SAMPLES = 10
#: More columns than this that hold row numbers are genes given as ranks (each gene's samples
#: ranked 1..n), not ids: they stay genes.
ROW_NUMBER_MAX_COLUMNS = 2


def _row_number_columns(X) -> np.ndarray:
    """Positions of the columns of ``X`` that hold each of ``n`` consecutive integers once.

    A gene measured on ``n >= ROW_NUMBER_MIN_SAMPLES`` samples does not: counts repeat, and
    continuous values are not integers.
    """
    n = X.shape[0]
    if n < ROW_NUMBER_MIN_SAMPLES:
        return np.zeros(0, dtype=np.intp)
    X = np.asarray(dense(X), dtype=np.float64)
    with np.errstate(invalid="ignore"):
        span = np.max(X, axis=0) - np.min(X, axis=0)
    cand = np.flatnonzero(span == n - 1)
    cand = cand[np.all(X[:, cand] == np.round(X[:, cand]), axis=0)]
    steps = np.diff(np.sort(X[:, cand], axis=0), axis=0)
    return cand[np.all(steps == 1, axis=0)]


def _name_words(name) -> list[str]:
    """Lower-case words of a column name: split at non-alphanumerics and camelCase, digits kept."""
    words = []
    for part in re.split(r"[^0-9A-Za-z]+", str(name)):
        words += re.findall(r"[A-Z]+[0-9]*(?![a-z])|[A-Z]?[a-z]+[0-9]*|[0-9]+", part)
    return [w.lower() for w in words]


def looks_like_annotation(name, label_key: str | None = None) -> bool:
    """True when a column name reads as a sample annotation rather than a gene.

    It holds a word of :data:`ANNOTATION_WORDS`, or the label key as a word (``label_code``).

    Examples
    --------
    >>> [looks_like_annotation(n) for n in ("age", "n_counts", "TimePoint", "ID1", "CD4", "G7")]
    [True, True, True, False, False, False]
    >>> looks_like_annotation("subtype_num", label_key="subtype")
    True
    """
    words = _name_words(name)
    if any(w in ANNOTATION_WORDS for w in words):
        return True
    if label_key:
        key = re.escape(str(label_key).lower())
        return re.search(rf"(^|[^0-9a-z]){key}($|[^0-9a-z])", str(name).lower()) is not None
    return False


def _expand_columns(spec: Sequence[str], names: pd.Index, what: str) -> list[str]:
    """Column names from ``spec``: names, or ``FIRST:LAST`` ranges (inclusive, in table order)."""
    out: list[str] = []
    for item in spec:
        item = str(item)
        if item in names:
            out.append(item)
            continue
        first, sep, last = item.partition(":")
        if sep and first in names and last in names:
            i, j = names.get_loc(first), names.get_loc(last)
            if i > j:
                msg = f"{what}: range {item!r} runs backwards ({first} comes after {last})"
                raise DataError(msg)
            out.extend(names[i:j + 1])
            continue
        shown = ", ".join(map(str, names[:8])) + (", ..." if len(names) > 8 else "")
        msg = (f"{what}: {item!r} is not a numeric column of the table (nor a FIRST:LAST range of "
               f"them); numeric columns: {shown}")
        raise DataError(msg)
    return list(dict.fromkeys(out))


def _label_codes(adata, label_key) -> list[str]:
    """Gene columns that encode the label: a single value within each class, not all equal."""
    labels = pd.Series(adata.obs[label_key].to_numpy()).astype(str)
    if labels.nunique() < 2:
        return []
    X = np.asarray(dense(adata.X), dtype=np.float64)
    same = np.ones(X.shape[1], dtype=bool)
    firsts = []
    for cls in labels.unique():
        block = X[(labels == cls).to_numpy()]
        same &= np.all(block == block[0], axis=0)
        firsts.append(block[0])
    differ = np.any(np.vstack(firsts) != firsts[0], axis=0)
    return list(adata.var_names[same & differ])


def split_gene_columns(
    adata,
    *,
    label_key: str | None = None,
    gene_columns: Sequence[str] | None = None,
    drop: Sequence[str] = (),
    check: bool = True,
    source: str = "the table",
):
    """Decide which numeric columns of a table are genes; the others become ``obs`` annotations.

    ``drop`` names columns that are not genes; ``gene_columns`` names the genes (names or
    ``FIRST:LAST`` ranges), every other numeric column then being an annotation. Without
    ``gene_columns`` and with ``check``, numeric columns whose name reads as an annotation
    (:func:`looks_like_annotation`: ``age``, ``code``, ``label_num``) or that hold row numbers
    (each of ``n`` consecutive integers once, over at least ``ROW_NUMBER_MIN_SAMPLES`` samples,
    in at most ``ROW_NUMBER_MAX_COLUMNS`` columns) are not made genes, with an :class:`AnnotationColumnWarning` naming them. With ``check``, a
    gene column that encodes the label (a single value within each class) is an error. Returns a
    new AnnData.
    """
    names = pd.Index(adata.var_names.astype(str))
    dropped = _expand_columns(drop, names, "drop") if drop else []
    if gene_columns is not None:
        genes = _expand_columns(gene_columns, names, "gene columns")
        both = [g for g in genes if g in set(dropped)]
        if both:
            msg = f"column(s) {', '.join(map(repr, both))} are both dropped and gene columns"
            raise DataError(msg)
        moved = [n for n in names if n not in set(genes)]
    else:
        moved = list(dropped)
        if check:
            auto = [n for n in names if n not in set(dropped) and looks_like_annotation(n, label_key)]
            if auto:
                shown = ", ".join(map(repr, auto[:10])) + (", ..." if len(auto) > 10 else "")
                msg = (f"{len(auto)} numeric column(s) of {source} read as sample annotations, not "
                       f"genes, and are left out of the genes: {shown} (name them with "
                       "--gene-columns to use them as genes)")
                warnings.warn(msg, AnnotationColumnWarning, stacklevel=3)
                moved += auto
            rows = [names[j] for j in _row_number_columns(adata.X) if names[j] not in set(moved)]
            # A table has an id column or two; many such columns are genes given as ranks.
            if 0 < len(rows) <= ROW_NUMBER_MAX_COLUMNS:
                shown = ", ".join(map(repr, rows[:10])) + (", ..." if len(rows) > 10 else "")
                msg = (f"{len(rows)} numeric column(s) of {source} hold row numbers (each of "
                       f"{adata.n_obs} consecutive integers once), read as sample annotations, "
                       f"not genes: {shown} (name them with --gene-columns to use them as genes)")
                warnings.warn(msg, AnnotationColumnWarning, stacklevel=3)
                moved += rows
    if moved:
        keep = ~names.isin(moved)
        if not keep.any():
            msg = f"{source} has no gene columns left once annotations are set aside"
            raise DataError(msg)
        cols = np.flatnonzero(~keep)
        X = adata.X
        values = as_design(X).columns(cols)
        obs = adata.obs.copy()
        for k, j in enumerate(cols):
            if names[j] not in obs.columns:
                obs[names[j]] = values[:, k]
        adata = adata[:, keep].copy()
        adata.obs = obs
    if check and label_key is not None and label_key in adata.obs.columns:
        # Labels that cannot be classes (continuous numbers, one class per sample) are refused
        # as such first: every gene is trivially "one value within each class" of one sample.
        labels = pd.Series(adata.obs[label_key].to_numpy()).dropna()
        check_class_labels(labels[~blank_labels(labels.to_numpy())])  # the door names the blanks
        codes = _label_codes(adata, label_key)
        if codes:
            shown = ", ".join(map(repr, codes[:5])) + (", ..." if len(codes) > 5 else "")
            msg = (f"column(s) {shown} encode the label {label_key!r} (a single value within each "
                   f"class): they cannot be genes; leave them out with --drop "
                   f"{','.join(map(str, codes[:5]))} (read_data's drop=)")
            raise DataError(msg)
    return adata


def read_data(
    path,
    *,
    genes_in_rows: bool = False,
    label_key: str | None = None,
    labels=None,
    layer: str | None = None,
    gene_columns: Sequence[str] | None = None,
    drop: Sequence[str] = (),
    check_columns: bool = True,
    lazy: bool = False,
):
    """Read an expression dataset into AnnData (samples x genes), whatever its format.

    Parameters
    ----------
    path : str or Path
        ``.h5ad``, ``.csv``/``.tsv``/``.txt`` (optionally compressed) or ``.gct`` file, or a
        ``.zarr`` AnnData store (a directory).
    genes_in_rows : bool, default=False
        For CSV/TSV only: the table has one row per gene and one column per sample.
    label_key : str, optional
        For CSV/TSV: the column (or, with ``genes_in_rows``, the row) holding the labels; it becomes
        an ``obs`` column rather than a gene. For GCT with ``labels`` it names the ``obs`` column the
        labels go to (default ``"label"``).
    labels : str or Path, optional
        A separate label file: a CLS file, or a CSV/TSV with a sample id column and a label column
        (see :func:`read_labels`). Required to classify GCT data.
    layer : str, optional
        For h5ad: use this layer as ``X``.
    gene_columns : sequence of str, optional
        CSV/TSV only: the gene columns (rows with ``genes_in_rows``), as names or ``FIRST:LAST``
        ranges; every other numeric column becomes an ``obs`` annotation.
    drop : sequence of str, default=()
        CSV/TSV only: numeric columns (or ranges) that are not genes; they become ``obs``
        annotations.
    check_columns : bool, default=True
        CSV/TSV only: set aside numeric columns named like annotations (``age``, ``code``; see
        :func:`split_gene_columns`, with a warning) and refuse a gene column that encodes the label.
    lazy : bool, default=False
        ``.h5ad`` and ``.zarr`` only: leave ``X`` (or the layer) on disk as a dask array in row
        chunks (:func:`read_lazy`; needs the ``dask`` extra).

    Returns
    -------
    adata : anndata.AnnData
        Observations are samples, variables genes. Gene descriptions or symbols found in the file
        (GCT ``Description``, a non-numeric column beside the gene ids) are in ``var``.

    Raises
    ------
    MissingFileError
        The file does not exist.
    FileFormatError
        The file is not what its extension says, or is corrupted.
    DataError
        Duplicated gene or sample names, no numeric data, an unknown column in ``drop`` or
        ``gene_columns``, or a gene column that encodes the label.
    """
    return _read_data(path, genes_in_rows=genes_in_rows, label_key=label_key, labels=labels,
                      layer=layer, gene_columns=gene_columns, drop=drop,
                      check_columns=check_columns, lazy=lazy, layer_as_x=True)


def _read_data(path, *, genes_in_rows, label_key, labels, layer, gene_columns, drop,
               check_columns, lazy, layer_as_x):
    """:func:`read_data`, the layer as ``X`` or, with ``layer_as_x=False``, left a layer.

    Left a layer, it is only checked (and opened, when lazy): :class:`~ardselect.io.ExpressionData`
    reads it from there.
    """
    path = require_file(path)
    fmt = detect_format(path)
    if (gene_columns is not None or drop) and fmt not in ("csv", "tsv"):
        msg = (f"choosing gene columns (--gene-columns, --drop) applies to CSV/TSV tables, not "
               f"{fmt}; subset the genes of {path.name} instead")
        raise FileFormatError(msg)
    if lazy and fmt not in ("h5ad", "zarr"):
        msg = f"lazy reading applies to .h5ad and .zarr input, not {fmt}"
        raise FileFormatError(msg)
    if fmt in ("h5ad", "zarr"):
        if genes_in_rows:
            msg = (f"--genes-in-rows applies to CSV/TSV tables only; {fmt} stores hold samples "
                   "as obs")
            raise FileFormatError(msg)
        if lazy:
            adata = _read_lazy(path, layer=layer, layer_as_x=layer_as_x)
        elif fmt == "zarr":
            adata = _read_zarr(path, layer=layer, layer_as_x=layer_as_x)
        else:
            adata = _read_h5ad(path, layer=layer, layer_as_x=layer_as_x)
    else:
        if layer is not None:
            msg = f"a layer ({layer!r}) can only be chosen for .h5ad input, not {fmt}"
            raise FileFormatError(msg)
        if fmt == "gct":
            adata = read_gct(path)
        else:
            adata = read_table(path, genes_in_rows=genes_in_rows, label_key=label_key)
    if labels is not None:
        key = label_key or "label"
        try:
            table = read_labels(labels, adata.obs_names)
        except LabelError:
            if fmt in ("csv", "tsv") and not genes_in_rows:
                refuse_samples_in_columns(adata, labels, path)
            raise
        adata.obs[key] = table.to_numpy()
    if fmt in ("csv", "tsv"):
        adata = split_gene_columns(
            adata, label_key=label_key or ("label" if labels is not None else None),
            gene_columns=gene_columns, drop=drop, check=check_columns, source=path.name,
        )
    if adata.n_obs == 0 or adata.n_vars == 0:
        msg = f"{path.name} holds {adata.n_obs} samples x {adata.n_vars} genes: nothing to fit"
        raise DataError(msg)
    for names, what in ((adata.var_names, "gene"), (adata.obs_names, "sample")):
        check_unique_names(names, what)
        check_clean_names(names, what)
    return adata


#: Rows per chunk when ``X`` is read lazily (:func:`read_lazy`): 10,000 cells of 20,000 genes at
#: 5% non-zero are about 120 MB of CSR.
LAZY_CHUNK_ROWS = 10_000


def _open_store(path: Path):
    """The root group of a ``.h5ad`` file (h5py, kept open) or ``.zarr`` store, read-only."""
    try:
        if detect_format(path) == "zarr":
            import zarr

            return zarr.open(str(path), mode="r")
        import h5py

        _check_hdf5(path)
        return h5py.File(path, "r")
    except FileFormatError:
        raise
    except Exception as exc:  # noqa: BLE001  (zarr/h5py raise many types for broken stores)
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        msg = f"cannot open {path.name} (corrupted or not an AnnData store?): {reason}"
        raise FileFormatError(msg) from None


def read_lazy(path, *, layer: str | None = None, chunk_rows: int = LAZY_CHUNK_ROWS):
    """Read an AnnData ``.h5ad`` file or ``.zarr`` store with ``X`` left on disk, in row chunks.

    ``obs``, ``var`` and ``uns["log1p"]`` are read into memory; ``X`` (or ``layer``, which then
    replaces it; the original is kept as layer ``"X"``) becomes a dask array of ``chunk_rows``
    rows (CSR chunks for sparse data) read by :func:`anndata.experimental.read_elem_lazy`. The
    preprocessing and the fold changes of :func:`ardselect.rank_genes` then take one pass over the
    store each, and :class:`~ardselect.ARDClassifier` gathers only the rows it fits on
    (``max_samples``). An ``.h5ad`` file stays open while the result is alive.

    Raises
    ------
    ImportError
        dask is not installed (the ``dask`` extra).
    FileFormatError
        The store cannot be opened or has no ``obs`` / ``var`` / ``X``.
    DataError
        ``layer`` is not in the store.
    """
    return _read_lazy(path, layer=layer, chunk_rows=chunk_rows, layer_as_x=True)


def _read_lazy(path, *, layer: str | None = None, chunk_rows: int = LAZY_CHUNK_ROWS,
               layer_as_x: bool = True):
    """:func:`read_lazy`; with ``layer_as_x=False`` ``X`` stays ``X`` and the layer a layer."""
    import anndata as ad

    try:
        import dask.array  # noqa: F401
        from anndata.experimental import read_elem_lazy
    except ImportError:
        msg = "reading X lazily needs dask: pip install 'dask[array]' distributed (the dask extra)"
        raise ImportError(msg) from None
    path = require_file(path)
    root = _open_store(path)
    missing = [k for k in ("obs", "var") if k not in root]
    if missing or ("X" not in root and layer is None):
        what = ", ".join(missing + ([] if "X" in root or layer is not None else ["X"]))
        msg = f"{path.name} is not an AnnData store: it has no {what}"
        raise FileFormatError(msg)
    layers = root.get("layers", {})
    if layer is not None:
        check_layer(layer, list(layers.keys()), path.name)
    chunks = (int(chunk_rows), -1)
    X = read_elem_lazy(root["X"], chunks=chunks) if "X" in root else None
    obs, var = ad.io.read_elem(root["obs"]), ad.io.read_elem(root["var"])
    uns = {}
    if "uns" in root and "log1p" in root["uns"]:
        uns["log1p"] = ad.io.read_elem(root["uns"]["log1p"])
    adata = ad.AnnData(obs=obs, var=var, uns=uns)
    if layer is not None:
        adata.layers[layer] = read_elem_lazy(layers[layer], chunks=chunks)
        if layer_as_x:
            if X is not None:
                adata.layers["X"] = X
            X = adata.layers[layer]
    adata.X = X
    return adata


def _read_zarr(path: Path, *, layer: str | None = None, layer_as_x: bool = True):
    """Read a ``.zarr`` AnnData store into memory (``layer`` replaces ``X``, as for h5ad)."""
    import anndata as ad

    adata = _as_numbers(_read_with(ad.read_zarr, path, "an AnnData zarr store"), path)
    return _use_layer(adata, layer, path, layer_as_x=layer_as_x)


def _read_with(reader, path: Path, what: str):
    """``reader(path)``, any failure of a broken file as one :class:`FileFormatError` line."""
    try:
        return reader(path)
    except Exception as exc:  # noqa: BLE001  (h5py/zarr/anndata raise many types for broken files)
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        msg = f"cannot read {path.name} as {what}: {reason}"
        raise FileFormatError(msg) from None


def _check_hdf5(path: Path):
    with open(path, "rb") as fh:
        head = fh.read(8)
    if head != _HDF5_SIGNATURE:
        msg = f"{path.name} is not an HDF5/h5ad file (wrong signature); is the extension right?"
        raise FileFormatError(msg)


def _as_numbers(adata, path: Path):
    """``X`` and the layers of ``adata`` as numbers when stored as text (strings of numbers).

    Text that is not a number is refused naming its gene and sample; missing entries (None)
    become NaN, which the fit refuses by name.
    """
    for key in [None, *adata.layers.keys()]:
        M = adata.X if key is None else adata.layers[key]
        name = "X" if key is None else f"layer {key!r}"
        if not isinstance(M, np.ndarray) or M.dtype.kind not in "OUS":
            continue
        values = pd.DataFrame(M).apply(lambda col: pd.to_numeric(col, errors="coerce"))
        given = pd.DataFrame(M).notna().to_numpy()
        bad = given & values.isna().to_numpy()
        if bad.any():
            i, j = (int(v) for v in np.argwhere(bad)[0])
            msg = (f"{name} of {path.name} holds text, not numbers: {M[i, j]!r} for gene "
                   f"{str(adata.var_names[j])!r} in sample {str(adata.obs_names[i])!r}")
            raise DataError(msg)
        numbers = values.to_numpy(dtype=np.float64)
        if key is None:
            adata.X = numbers
        else:
            adata.layers[key] = numbers
    return adata


def _use_layer(adata, layer, path: Path, *, layer_as_x: bool = True):
    """``adata`` with ``layer`` (which must exist) as ``X``, or as it is with ``layer_as_x=False``."""
    if layer is not None:
        check_layer(layer, list(adata.layers.keys()), path.name)
        if layer_as_x:
            adata.layers["X"] = adata.X
            adata.X = adata.layers[layer]
    return adata


def store_layers(path) -> list[str] | None:
    """The layer names of a ``.h5ad`` file or ``.zarr`` store, read from its index alone.

    None when the store cannot be opened (its reader then says why).
    """
    path = Path(path)
    try:
        if detect_format(path) == "zarr":
            import zarr

            root = zarr.open(str(path), mode="r")
            return [str(k) for k in root["layers"].keys()] if "layers" in root else []  # noqa: SIM118
        import h5py

        with h5py.File(path, "r") as root:
            return [str(k) for k in root["layers"]] if "layers" in root else []
    except Exception:  # noqa: BLE001  (any broken store: the reader reports it)
        return None


def read_h5ad(path, *, layer: str | None = None):
    """Read an ``.h5ad`` file, checking that it is one, with one-line errors for broken files.

    With ``layer``, the layer replaces ``X`` (the original ``X`` is kept as layer ``"X"``).
    """
    return _read_h5ad(path, layer=layer, layer_as_x=True)


def _read_h5ad(path, *, layer: str | None = None, layer_as_x: bool = True):
    import anndata as ad

    path = require_file(path)
    _check_hdf5(path)
    adata = _as_numbers(_read_with(ad.read_h5ad, path, "h5ad (corrupted or truncated?)"), path)
    return _use_layer(adata, layer, path, layer_as_x=layer_as_x)


def _is_numeric(series: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series)


_DECIMAL_COMMA = r"^[-+]?\d*,\d+(?:[eE][-+]?\d+)?$"


def _check_text_numbers(df: pd.DataFrame, path: Path, skip=(), *, row_names=None,
                        genes_in_rows: bool = False) -> None:
    """Refuse text columns that hold numbers: decimal commas (``5,35``) or spreadsheet errors.

    Read as text, such a column would become an annotation and the table would lose a gene
    silently. ``1,234`` may be a thousands separator and ``#VALUE!`` a broken formula, so neither
    is converted by guess. A column of mostly numbers with other words among them (``n/a?``,
    ``abc``) stays an annotation, with an :class:`AnnotationColumnWarning` naming the column, the
    word and its row (by ``row_names``, the table's first column): the gene (or, with
    ``genes_in_rows``, the sample) is then left out, and the warning says so.
    """
    commas, stray, words = [], {}, {}
    for i, c in enumerate(df.columns):  # by position: names may repeat (refused later)
        col = df.iloc[:, i]
        if c in skip or _is_numeric(col):
            continue
        values = col.dropna().astype(str).str.strip()
        if not len(values):
            continue
        if values.str.fullmatch(_DECIMAL_COMMA).mean() >= 0.9:
            commas.append((c, values.iloc[0]))
            continue
        if looks_like_annotation(c):  # ("age" with a few "unknown": an annotation anyway)
            continue
        number = pd.to_numeric(values, errors="coerce").notna()
        # Only a spreadsheet's error values (#VALUE!, #DIV/0!, #REF!, ...) count as stray: other
        # words among numbers mean an annotation (a chromosome column: 1..22, X, Y).
        if 0.9 <= number.mean() < 1.0 and values[~number].str.startswith("#").all():
            stray[c] = values[~number].iloc[0]
        elif 0.5 <= number.mean() < 1.0:
            first = values.index[~number.to_numpy()][0]
            row = "" if row_names is None else f" in row {str(row_names[first])!r}"
            words[c] = f"{values[~number].iloc[0]!r}{row}"
    if commas:
        shown = ", ".join(repr(c) for c, _ in commas[:5]) + (", ..." if len(commas) > 5 else "")
        msg = (f"{len(commas)} column(s) of {path.name} hold numbers written with a decimal comma "
               f"({shown}; e.g. {commas[0][1]!r}), which would be read as text, not genes: save "
               "the table with a decimal point ('.') instead")
        raise FileFormatError(msg)
    if stray:
        shown = ", ".join(f"{c!r} ({v!r})" for c, v in list(stray.items())[:5])
        msg = (f"{len(stray)} column(s) of {path.name} hold numbers and a few spreadsheet error "
               f"values, which would make them text, not genes: {shown}"
               f"{', ...' if len(stray) > 5 else ''}; make those values numbers or empty (missing)")
        raise FileFormatError(msg)
    if words:
        shown = ", ".join(f"{c!r} ({v})" for c, v in list(words.items())[:5])
        kept, lost = ("a gene annotation", "sample") if genes_in_rows else ("a sample annotation",
                                                                              "gene")
        msg = (f"{len(words)} column(s) of {path.name} hold numbers and a few words, and are "
               f"read as text, {kept}, not as a {lost}: {shown}"
               f"{', ...' if len(words) > 5 else ''}; make those values numbers or empty "
               f"(missing) to keep the {lost}(s)")
        warnings.warn(msg, AnnotationColumnWarning, stacklevel=4)


# A first column with one of these headers holds sample ids even when they are numbers.
_ID_HEADERS = {"", "sample", "sample_id", "samples", "id", "cell", "cell_id", "barcode", "obs_names"}


def read_table(path, *, genes_in_rows: bool = False, label_key: str | None = None):
    """Read a CSV/TSV expression table into AnnData.

    Samples in rows (default): the first column holds sample ids when it is non-numeric or its
    header is empty or ``sample``, ``sample_id``, ``id``, ``cell``, ``barcode`` (any case); when
    it does not, the one other column with such a header and unique values does (if any); the
    ``label_key`` column and every other non-numeric column go to ``obs``; the remaining (numeric)
    columns are genes. Genes in rows (``genes_in_rows=True``): the first column holds gene ids,
    further non-numeric columns (e.g. ``Description``, ``symbol``) go to ``var``, and a row whose id is
    ``label_key`` holds the labels; the other columns are samples.
    """
    import anndata as ad

    path = require_file(path)
    df = _read_csv(path, low_memory=False)
    if df.shape[0] == 0 or df.shape[1] < 2:
        msg = f"{path.name} holds no expression table ({df.shape[0]} rows x {df.shape[1]} columns)"
        raise FileFormatError(msg)
    # pandas renames duplicated column names (G1, G1.1); take the header as written instead.
    header = _read_csv(path, header=None, nrows=1, dtype=str).iloc[0]
    df.columns = ["" if pd.isna(c) else str(c) for c in header]
    if genes_in_rows:
        return _table_genes_in_rows(df, path, label_key)
    if (label_key is not None and label_key not in df.columns
            and (df.iloc[:, 0].astype(str) == str(label_key)).any()):
        msg = (f"{path.name} has no column {label_key!r} but a row named so: its genes look to be "
               "in rows and its samples in columns; read it with --genes-in-rows "
               "(genes_in_rows=True)")
        raise LabelError(msg)
    _check_text_numbers(df, path, skip=(df.columns[0], label_key),
                        row_names=df.iloc[:, 0].astype(str))
    check_unique_names(df.columns[1:], "gene")
    first = df.columns[0]
    id_header = first.strip().lower() in _ID_HEADERS or first.startswith("Unnamed:")
    # Elsewhere in the table, one column headed like sample ids, with unique values, holds them.
    named = [c for c in df.columns[1:] if c.strip().lower() in _ID_HEADERS - {""}
             and c != label_key and df[c].notna().all() and df[c].astype(str).is_unique]
    if (id_header or not _is_numeric(df[first])) and first != label_key:
        index = df[first].astype(str).to_numpy()
        df = df.drop(columns=first)
    elif len(named) == 1:
        index = df[named[0]].astype(str).to_numpy()
        df = df.drop(columns=named[0])
    else:
        index = np.array([f"sample_{i + 1}" for i in range(df.shape[0])], dtype=object)
    check_unique_names(index, "sample")
    obs_cols = [c for c in df.columns if c == label_key or not _is_numeric(df[c])]
    gene_cols = [c for c in df.columns if c not in obs_cols]
    if not gene_cols:
        msg = f"{path.name} has no numeric gene columns"
        raise FileFormatError(msg)
    check_unique_names(gene_cols, "gene")
    X = df[gene_cols].to_numpy(dtype=np.float64)
    obs = df[obs_cols].copy()
    obs.index = pd.Index(index)
    var = pd.DataFrame(index=pd.Index(gene_cols))
    return ad.AnnData(X=X, obs=obs, var=var)


def _table_genes_in_rows(df: pd.DataFrame, path: Path, label_key: str | None):
    import anndata as ad

    check_unique_names(df.columns[1:], "sample")
    first = df.columns[0]
    gene_ids = df[first].astype(str)
    label_row = None
    if label_key is not None and (gene_ids == label_key).any():
        pos = np.flatnonzero((gene_ids == label_key).to_numpy())
        label_row = df.iloc[pos[0]]
        df = df.drop(index=df.index[pos]).reset_index(drop=True)
        gene_ids = df[first].astype(str)
    rest = df.drop(columns=first)
    _check_text_numbers(rest, path, row_names=gene_ids, genes_in_rows=True)
    # Annotation columns (gene descriptions, symbols) are non-numeric; samples are numeric once
    # the label row is gone. Convert object columns that parse as numbers.
    var_cols, sample_cols = [], []
    for c in rest.columns:
        col = rest[c]
        if _is_numeric(col):
            sample_cols.append(c)
            continue
        converted = pd.to_numeric(col, errors="coerce")
        if converted.notna().sum() == col.notna().sum() and col.notna().any():
            rest[c] = converted
            sample_cols.append(c)
        else:
            var_cols.append(c)
    if not sample_cols:
        msg = f"{path.name} has no numeric sample columns"
        raise FileFormatError(msg)
    check_unique_names(gene_ids, "gene")
    check_unique_names(sample_cols, "sample")
    X = rest[sample_cols].to_numpy(dtype=np.float64).T
    var = rest[var_cols].copy()
    var.index = pd.Index(gene_ids.to_numpy())
    obs = pd.DataFrame(index=pd.Index(sample_cols))
    if label_row is not None:
        obs[label_key] = label_row[sample_cols].astype(str).to_numpy()
    return ad.AnnData(X=X, obs=obs, var=var)


def read_gct(path):
    """Read a Broad GCT 1.2 expression file into AnnData (samples x genes).

    The ``Name`` column becomes ``var_names`` and ``Description`` the ``var["description"]`` column.
    The declared dimensions on line 2 are checked against the table.
    """
    import anndata as ad

    path = require_file(path)
    opener = gzip.open if path.name.lower().endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8", newline="") as fh:
            version = fh.readline().strip()
            dims = fh.readline().rstrip("\r\n").split("\t")
            if version != "#1.2":
                msg = (
                    f"{path.name} is not a GCT 1.2 file (first line {version[:20]!r}, "
                    "expected '#1.2')"
                )
                raise FileFormatError(msg)
            try:
                n_rows, n_cols = int(dims[0]), int(dims[1])
            except (ValueError, IndexError):
                msg = f"{path.name}: line 2 must give the numbers of genes and samples"
                raise FileFormatError(msg) from None
            df = pd.read_csv(fh, sep="\t", dtype={0: str, 1: str}, low_memory=False)
    except FileFormatError:
        raise
    except (UnicodeDecodeError, pd.errors.ParserError, OSError, EOFError, ValueError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        msg = f"cannot read {path.name} as GCT: {reason}"
        raise FileFormatError(msg) from None
    if list(df.columns[:2]) != ["Name", "Description"]:
        msg = f"{path.name}: the GCT header must start with Name and Description"
        raise FileFormatError(msg)
    if df.shape != (n_rows, n_cols + 2):
        msg = (
            f"{path.name}: line 2 declares {n_rows} genes x {n_cols} samples but the table has "
            f"{df.shape[0]} x {df.shape[1] - 2}"
        )
        raise FileFormatError(msg)
    samples = [str(c) for c in df.columns[2:]]
    values = df.iloc[:, 2:]
    if not all(_is_numeric(values[c]) for c in values.columns):
        bad = next(c for c in values.columns if not _is_numeric(values[c]))
        msg = f"{path.name}: sample column {bad!r} holds non-numeric values"
        raise FileFormatError(msg)
    check_unique_names(df["Name"], "gene")
    check_unique_names(samples, "sample")
    var = pd.DataFrame(
        {"description": df["Description"].fillna("").astype(str).to_numpy()},
        index=pd.Index(df["Name"].astype(str).to_numpy()),
    )
    obs = pd.DataFrame(index=pd.Index(samples))
    return ad.AnnData(X=values.to_numpy(dtype=np.float64).T, obs=obs, var=var)
