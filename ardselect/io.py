"""Reading expression data, preprocessing it reproducibly, and writing results and portable models.

Inputs (:func:`read_data`): ``.h5ad`` (dense or sparse ``X``, or a layer), CSV/TSV tables (samples x
genes with a label column, or genes x samples), and the Broad GCT expression format with a CLS label
file. Every reader returns an :class:`anndata.AnnData` with samples as observations, so one code path
(:func:`ardselect.rank_genes`) serves them all.

Preprocessing (:class:`Preprocessor`) is fitted on training data and replayed on new data from the
parameters stored in ``model.json``. Writers produce the ranked gene list (TSV), gene sets (GMT), the
path table and figure, and the portable model (:class:`PortableModel`), each written to a temporary
file and renamed into place, with fixed number formats so that the same input gives the same bytes.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import math
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin

from ._probit import ovr_log_proba
from ._validation import check_design, constant_columns
from ._version import __version__
from .exceptions import DataError, FileFormatError, LabelError, MissingFileError, ModelError

__all__ = [
    "FORMATS",
    "LOG_CHOICES",
    "PortableModel",
    "Preprocessor",
    "atomic_write",
    "calibration_table",
    "check_unique_names",
    "detect_format",
    "load_model",
    "plot_calibration",
    "plot_path",
    "plot_weights",
    "read_cls",
    "read_data",
    "read_gct",
    "read_h5ad",
    "read_labels",
    "read_table",
    "write_calibration_png",
    "write_cls",
    "write_gct",
    "write_gmt",
    "write_path_png",
    "write_path_tsv",
    "write_ranked_tsv",
    "write_weights_png",
]

#: Values of ``Preprocessor(log=...)``: ``auto`` picks ``log2`` or ``none`` from the data.
LOG_CHOICES = ("auto", "none", "log2", "log10", "ln")

#: Input formats :func:`read_data` knows, by file extension.
FORMATS = {
    "h5ad": (".h5ad",),
    "csv": (".csv", ".csv.gz", ".csv.bz2", ".csv.xz", ".csv.zip"),
    "tsv": (".tsv", ".tsv.gz", ".tsv.bz2", ".tsv.xz", ".txt", ".txt.gz", ".tab", ".tab.gz"),
    "gct": (".gct", ".gct.gz"),
}

MODEL_FORMAT = "ardselect-model"
MODEL_FORMAT_VERSION = 1

_HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
# Float format for TSV outputs: 10 significant digits are far more than the posterior's own
# precision, and a fixed format keeps outputs byte-identical across runs.
FLOAT_FORMAT = "%.10g"


# --------------------------------------------------------------------------------------------
# Small helpers
# --------------------------------------------------------------------------------------------


def _path(path) -> Path:
    return Path(os.fspath(path)).expanduser()


def _require_file(path) -> Path:
    path = _path(path)
    if not path.exists():
        msg = f"file not found: {path}"
        raise MissingFileError(msg)
    if path.is_dir():
        msg = f"{path} is a directory, not a file"
        raise FileFormatError(msg)
    return path


def detect_format(path) -> str:
    """Return the input format of ``path`` from its extension: one of :data:`FORMATS`.

    Examples
    --------
    >>> detect_format("expr.h5ad"), detect_format("expr.csv.gz"), detect_format("a.gct")
    ('h5ad', 'csv', 'gct')
    """
    name = _path(path).name.lower()
    for fmt, exts in FORMATS.items():
        if any(name.endswith(ext) for ext in exts):
            return fmt
    known = ", ".join(e for exts in FORMATS.values() for e in exts)
    msg = f"cannot tell the format of {_path(path).name} from its extension; known: {known}"
    raise FileFormatError(msg)


@contextlib.contextmanager
def atomic_write(path, mode: str = "w"):
    """Open a temporary file beside ``path``; rename it onto ``path`` only if the block succeeds.

    A failure or ``KeyboardInterrupt`` inside the block removes the temporary file, so ``path`` is
    either absent, untouched, or complete. Text mode writes UTF-8 with ``\\n`` line endings.
    """
    path = _path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, mode, **({"encoding": "utf-8", "newline": "\n"} if "b" not in mode else {})) as fh:
            yield fh
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(tmp, 0o666 & ~mask)  # mkstemp makes 0600 files; use the usual permissions
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def check_unique_names(names, what: str = "gene") -> None:
    """Raise :class:`DataError` if ``names`` has duplicates, naming how many and a few of them."""
    index = pd.Index(names)
    if index.is_unique:
        return
    dup = index[index.duplicated()].unique()
    shown = ", ".join(map(str, dup[:5])) + (", ..." if len(dup) > 5 else "")
    msg = (
        f"{len(dup)} duplicated {what} name(s) ({shown}); {what} names must be unique "
        "(e.g. anndata's var_names_make_unique(), or aggregate the duplicates)"
    )
    raise DataError(msg)


def _jsonable(value):
    """Plain Python version of ``value`` for JSON (numpy scalars and arrays included)."""
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return [_jsonable(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        return _jsonable(value.item())
    if isinstance(value, float):
        if math.isnan(value):
            return None
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return value
    if isinstance(value, Path):
        return str(value)
    return value


# --------------------------------------------------------------------------------------------
# Readers
# --------------------------------------------------------------------------------------------


def read_data(
    path,
    *,
    genes_in_rows: bool = False,
    label_key: str | None = None,
    labels=None,
    layer: str | None = None,
):
    """Read an expression dataset into AnnData (samples x genes), whatever its format.

    Parameters
    ----------
    path : str or Path
        ``.h5ad``, ``.csv``/``.tsv``/``.txt`` (optionally compressed) or ``.gct`` file.
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
        Duplicated gene or sample names, or no numeric data.
    """
    path = _require_file(path)
    fmt = detect_format(path)
    if fmt == "h5ad":
        if genes_in_rows:
            msg = "--genes-in-rows applies to CSV/TSV tables only; h5ad files store samples as obs"
            raise FileFormatError(msg)
        adata = read_h5ad(path, layer=layer)
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
        table = read_labels(labels, adata.obs_names)
        adata.obs[key] = table.to_numpy()
    return adata


def read_h5ad(path, *, layer: str | None = None):
    """Read an ``.h5ad`` file, checking that it is one, with one-line errors for broken files.

    With ``layer``, the layer replaces ``X`` (the original ``X`` is kept as layer ``"X"``).
    """
    import anndata as ad

    path = _require_file(path)
    with open(path, "rb") as fh:
        head = fh.read(8)
    if head != _HDF5_SIGNATURE:
        msg = f"{path.name} is not an HDF5/h5ad file (wrong signature); is the extension right?"
        raise FileFormatError(msg)
    try:
        adata = ad.read_h5ad(path)
    except Exception as exc:  # noqa: BLE001  (h5py/anndata raise many types for broken files)
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        msg = f"cannot read {path.name} as h5ad (corrupted or truncated?): {reason}"
        raise FileFormatError(msg) from None
    if layer is not None:
        if layer not in adata.layers:
            avail = ", ".join(map(str, adata.layers.keys())) or "none"
            msg = f"layer {layer!r} not found in {path.name}; available layers: {avail}"
            raise DataError(msg)
        adata.layers["X"] = adata.X
        adata.X = adata.layers[layer]
    return adata


def _read_csv(path: Path, **kwargs) -> pd.DataFrame:
    fmt = detect_format(path)
    sep = "," if fmt == "csv" else "\t"
    try:
        return pd.read_csv(path, sep=sep, **kwargs)
    except (UnicodeDecodeError, pd.errors.ParserError, OSError, EOFError, ValueError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        msg = f"cannot read {path.name} as a {fmt.upper()} table: {reason}"
        raise FileFormatError(msg) from None


def _is_numeric(series: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series)


# A first column with one of these headers holds sample ids even when they are numbers.
_ID_HEADERS = {"", "sample", "sample_id", "samples", "id", "cell", "cell_id", "barcode", "obs_names"}


def read_table(path, *, genes_in_rows: bool = False, label_key: str | None = None):
    """Read a CSV/TSV expression table into AnnData.

    Samples in rows (default): the first column holds sample ids when it is non-numeric or its
    header is empty or ``sample``, ``sample_id``, ``id``, ``cell``, ``barcode`` (any case); the
    ``label_key`` column and every other non-numeric column go to ``obs``; the remaining (numeric)
    columns are genes. Genes in rows (``genes_in_rows=True``): the first column holds gene ids,
    further non-numeric columns (e.g. ``Description``, ``symbol``) go to ``var``, and a row whose id is
    ``label_key`` holds the labels; the other columns are samples.
    """
    import anndata as ad

    path = _require_file(path)
    df = _read_csv(path, low_memory=False)
    if df.shape[0] == 0 or df.shape[1] < 2:
        msg = f"{path.name} holds no expression table ({df.shape[0]} rows x {df.shape[1]} columns)"
        raise FileFormatError(msg)
    # pandas renames duplicated column names (G1, G1.1); take the header as written instead.
    header = _read_csv(path, header=None, nrows=1, dtype=str).iloc[0]
    df.columns = ["" if pd.isna(c) else str(c) for c in header]
    if genes_in_rows:
        return _table_genes_in_rows(df, path, label_key)
    check_unique_names(df.columns[1:], "gene")
    first = df.columns[0]
    id_header = first.strip().lower() in _ID_HEADERS or first.startswith("Unnamed:")
    if (id_header or not _is_numeric(df[first])) and first != label_key:
        index = df[first].astype(str).to_numpy()
        df = df.drop(columns=first)
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

    path = _require_file(path)
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


def read_cls(path) -> np.ndarray:
    """Read a categorical Broad CLS label file; return one label per sample (as strings).

    Line 1: ``n_samples n_classes 1``; line 2: ``# name1 name2 ...``; line 3: one label per
    sample. Labels on line 3 may be the class names or any tokens (e.g. ``0 1``): as in the GSEA
    documentation, the first distinct token maps to the first name on line 2, and so on.
    """
    path = _require_file(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError) as exc:
        msg = f"cannot read {path.name} as CLS: {exc}"
        raise FileFormatError(msg) from None
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if len(lines) < 3 or not lines[1].startswith("#"):
        msg = f"{path.name} is not a categorical CLS file (expected 3 lines, the second starting '#')"
        raise FileFormatError(msg)
    try:
        n_samples, n_classes = (int(v) for v in lines[0].split()[:2])
    except ValueError:
        msg = f"{path.name}: CLS line 1 must be 'n_samples n_classes 1'"
        raise FileFormatError(msg) from None
    names = lines[1].lstrip("#").split()
    tokens = lines[2].split()
    if len(tokens) != n_samples:
        msg = f"{path.name}: CLS line 1 declares {n_samples} samples but line 3 has {len(tokens)} labels"
        raise FileFormatError(msg)
    distinct = list(dict.fromkeys(tokens))
    if len(distinct) != n_classes or (names and len(names) != n_classes):
        msg = (
            f"{path.name}: CLS line 1 declares {n_classes} classes but the file has "
            f"{len(names)} names and {len(distinct)} distinct labels"
        )
        raise FileFormatError(msg)
    if set(tokens) <= set(names):
        return np.array(tokens, dtype=object)
    mapping = dict(zip(distinct, names, strict=True))
    return np.array([mapping[t] for t in tokens], dtype=object)


def read_labels(path, sample_names=None) -> pd.Series:
    """Read sample labels from a CLS file or a two-column CSV/TSV (sample id, label).

    A CLS file gives labels in sample order, so its length must match ``sample_names``. A table is
    joined on the sample id; every sample in ``sample_names`` must have a label.
    """
    path = _require_file(path)
    if path.name.lower().endswith(".cls"):
        values = read_cls(path)
        if sample_names is not None and len(values) != len(sample_names):
            msg = f"{path.name} has {len(values)} labels but the data have {len(sample_names)} samples"
            raise LabelError(msg)
        index = sample_names if sample_names is not None else range(len(values))
        return pd.Series(values, index=pd.Index(index), name="label")
    df = _read_csv(path, dtype=str)
    if df.shape[1] < 2:
        msg = f"{path.name}: a label table needs a sample id column and a label column"
        raise FileFormatError(msg)
    series = pd.Series(df.iloc[:, 1].to_numpy(), index=pd.Index(df.iloc[:, 0].astype(str)))
    check_unique_names(series.index, "sample")
    if sample_names is None:
        return series
    missing = pd.Index(sample_names).difference(series.index)
    if len(missing):
        shown = ", ".join(map(str, missing[:5])) + (", ..." if len(missing) > 5 else "")
        msg = f"{path.name} has no label for {len(missing)} sample(s): {shown}"
        raise LabelError(msg)
    return series.reindex(pd.Index(sample_names).astype(str))


# --------------------------------------------------------------------------------------------
# Writers for inputs (GCT, CLS): used by `ardselect example` and for round trips
# --------------------------------------------------------------------------------------------


def _dense(X) -> np.ndarray:
    return X.toarray() if sp.issparse(X) else np.asarray(X)


def write_gct(adata, path, *, description_key: str | None = None) -> None:
    """Write AnnData ``X`` as a GCT 1.2 file (genes in rows). Descriptions from ``var[description_key]``."""
    path = _path(path)
    X = _dense(adata.X).T
    desc = (
        adata.var[description_key].astype(str).to_numpy()
        if description_key is not None
        else np.array(["na"] * adata.n_vars, dtype=object)
    )
    table = pd.DataFrame(X, columns=list(map(str, adata.obs_names)))
    table.insert(0, "Description", desc)
    table.insert(0, "Name", list(map(str, adata.var_names)))
    body = table.to_csv(sep="\t", index=False, lineterminator="\n", float_format="%.10g")
    opener = gzip.open if path.name.lower().endswith(".gz") else None
    head = f"#1.2\n{adata.n_vars}\t{adata.n_obs}\n"
    if opener is None:
        with atomic_write(path) as fh:
            fh.write(head + body)
    else:
        with atomic_write(path, "wb") as fh:
            fh.write(gzip.compress((head + body).encode(), mtime=0))


def write_cls(labels, path) -> None:
    """Write a categorical CLS file; class names in order of first appearance."""
    labels = [str(v) for v in labels]
    for v in labels:
        if not v or any(ch.isspace() for ch in v):
            msg = f"CLS labels cannot be empty or contain spaces: {v!r}"
            raise LabelError(msg)
    names = list(dict.fromkeys(labels))
    text = f"{len(labels)} {len(names)} 1\n# {' '.join(names)}\n{' '.join(labels)}\n"
    with atomic_write(path) as fh:
        fh.write(text)


# --------------------------------------------------------------------------------------------
# Preprocessing
# --------------------------------------------------------------------------------------------


def _values(X) -> np.ndarray:
    return X.data if sp.issparse(X) else np.asarray(X).ravel()


def _min_max(X) -> tuple[float, float]:
    v = _values(X)
    if sp.issparse(X) and X.nnz < X.shape[0] * X.shape[1]:
        lo = min(float(v.min()) if v.size else 0.0, 0.0)
        hi = max(float(v.max()) if v.size else 0.0, 0.0)
        return lo, hi
    return float(v.min()), float(v.max())


def _looks_like_counts(X) -> bool:
    """True when X looks like counts or raw intensities: non-negative and large, or integer-valued."""
    lo, hi = _min_max(X)
    if lo < 0:
        return False
    if hi > 100:
        return True
    v = _values(X)
    return bool(hi > 1 and np.all(v == np.round(v)))


class Preprocessor(TransformerMixin, BaseEstimator):
    """Per-gene preprocessing applied before ARD: floor/cap, log, constant-gene removal, standardisation.

    The steps run in this order on a samples x genes matrix:

    1. values below ``floor`` are set to ``floor`` and values above ``cap`` to ``cap`` (the Golub
       convention is floor 100, cap 16000 for Affymetrix MAS 4 intensities);
    2. a log transform, ``log_b(x + pseudocount)``;
    3. genes that are constant on the training data are dropped (their number is in ``n_dropped_``);
    4. with ``standardize``, each gene is centred and scaled to unit standard deviation
       (``ddof=0``) with the training mean and sd. Sparse input is scaled but not centred, which
       keeps it sparse; with an intercept in the model centring only moves the intercept.

    Parameters
    ----------
    log : {"auto", "none", "log2", "log10", "ln"}, default="auto"
        ``"auto"`` chooses ``"log2"`` when the (floored, capped) training data look like counts or
        raw intensities (no negative values, and a maximum above 100 or integer values), and
        ``"none"`` otherwise (data already on a log scale, or centred/scaled). The choice made is in
        ``log_``.
    pseudocount : float, optional
        Added before taking logs. The default is 0 when a positive ``floor`` is set (the floor
        already keeps the logs finite: the Golub convention is ``log10`` of floored values) and
        1 otherwise (``log2(x + 1)`` for counts). Values with ``x + pseudocount <= 0`` raise
        :class:`DataError` (use ``floor``).
    floor, cap : float, optional
        Lower and upper bounds applied first.
    standardize : bool, default=True
        Centre and scale each gene.

    Attributes
    ----------
    log_ : str
        The transform actually applied (never ``"auto"``).
    pseudocount_ : float
        The pseudocount actually used.
    keep_ : ndarray of bool, shape (n_features_in_,)
        Genes kept (not constant).
    n_dropped_ : int
        Number of constant genes dropped.
    center_, scale_ : ndarray of shape (n_kept,)
        Subtracted and divided per kept gene (0 and 1 without standardisation).
    n_features_in_ : int
    feature_names_in_ : ndarray of str, shape (n_features_in_,)
        Set when fitted on a DataFrame or given ``feature_names``.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[10.0, 5, 200], [30, 5, 900], [70, 5, 4000]])
    >>> pre = Preprocessor().fit(X)
    >>> pre.log_, pre.n_dropped_
    ('log2', 1)
    >>> pre.transform(X).shape
    (3, 2)
    """

    def __init__(
        self,
        log: str = "auto",
        *,
        pseudocount: float | None = None,
        floor: float | None = None,
        cap: float | None = None,
        standardize: bool = True,
    ):
        self.log = log
        self.pseudocount = pseudocount
        self.floor = floor
        self.cap = cap
        self.standardize = standardize

    # The steps ----------------------------------------------------------------------------
    def _check_params(self):
        if self.log not in LOG_CHOICES:
            msg = f"log must be one of {', '.join(LOG_CHOICES)}; got {self.log!r}"
            raise ValueError(msg)
        if self.floor is not None and self.cap is not None and self.floor >= self.cap:
            msg = f"floor ({self.floor}) must be below cap ({self.cap})"
            raise ValueError(msg)

    @staticmethod
    def _clip(X, floor, cap):
        if floor is None and cap is None:
            return X
        if sp.issparse(X):
            if (floor is not None and floor > 0) or (cap is not None and cap < 0):
                X = X.toarray()  # implicit zeros change: densify
            else:
                X = X.copy()
                X.data = np.clip(X.data, floor, cap)
                return X
        return np.clip(X, floor, cap)

    @staticmethod
    def _log(X, log, pseudocount):
        if log == "none":
            return X
        base = {"log2": 2.0, "log10": 10.0, "ln": math.e}[log]
        v = _values(X)
        lo = min(float(v.min()) if v.size else 0.0, 0.0 if sp.issparse(X) else np.inf)
        if lo + pseudocount <= 0:
            n_bad = int(np.sum(v + pseudocount <= 0))
            msg = (
                f"cannot take {log} of {n_bad} value(s) <= {-pseudocount:g} (minimum {lo:g}); "
                "set a floor (e.g. --floor 100 for raw intensities) or --log none"
            )
            raise DataError(msg)
        if sp.issparse(X) and pseudocount == 1.0:
            X = X.copy()
            X.data = np.log1p(X.data) / math.log(base)  # log(0 + 1) = 0 keeps zeros implicit
            return X
        X = _dense(X)
        if pseudocount == 1.0:
            return np.log1p(X) / math.log(base)
        return np.log(X + pseudocount) / math.log(base)

    def _steps(self, X, log):
        X = self._clip(X, self.floor, self.cap)
        return self._log(X, log, self.pseudocount_)

    # sklearn API ----------------------------------------------------------------------------
    def fit(self, X, y=None, *, feature_names=None):
        """Fit on training data ``X`` of shape (n_samples, n_features); returns ``self``."""
        self._check_params()
        if isinstance(X, pd.DataFrame):
            feature_names = X.columns
        X = check_design(X, estimator_name="Preprocessor")
        self.n_features_in_ = X.shape[1]
        if feature_names is not None:
            names = np.asarray([str(n) for n in feature_names], dtype=object)
            if names.shape[0] != X.shape[1]:
                msg = f"{names.shape[0]} feature names for {X.shape[1]} columns"
                raise DataError(msg)
            self.feature_names_in_ = names
        if self.pseudocount is None:
            self.pseudocount_ = 0.0 if (self.floor is not None and self.floor > 0) else 1.0
        else:
            self.pseudocount_ = float(self.pseudocount)
        clipped = self._clip(X, self.floor, self.cap)
        if self.log == "auto":
            self.log_ = "log2" if _looks_like_counts(clipped) else "none"
        else:
            self.log_ = self.log
        Z = self._log(clipped, self.log_, self.pseudocount_)
        self.keep_ = ~constant_columns(Z)
        self.n_dropped_ = int((~self.keep_).sum())
        if not self.keep_.any():
            msg = f"all {X.shape[1]} genes are constant across the samples; nothing to classify"
            raise DataError(msg)
        Z = Z[:, self.keep_]
        self.sparse_ = bool(sp.issparse(Z))
        n_kept = Z.shape[1]
        if self.standardize:
            if sp.issparse(Z):
                mean = np.asarray(Z.mean(axis=0)).ravel()
                sq = np.asarray(Z.multiply(Z).mean(axis=0)).ravel()
                var = np.maximum(sq - mean**2, 0.0)
                self.center_ = np.zeros(n_kept)
            else:
                mean = Z.mean(axis=0)
                var = Z.var(axis=0)
                self.center_ = mean
            sd = np.sqrt(var)
            # A gene that is not exactly constant can still have a sd that rounds to 0; keep
            # its scale at 1 rather than divide by ~0.
            self.scale_ = np.where(sd > 0, sd, 1.0)
        else:
            self.center_ = np.zeros(n_kept)
            self.scale_ = np.ones(n_kept)
        return self

    def transform(self, X):
        """Apply the fitted steps; returns an array (or sparse matrix) of shape (n_samples, n_kept)."""
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self, "keep_")
        X = check_design(X, estimator_name="Preprocessor")
        if X.shape[1] != self.n_features_in_:
            msg = f"X has {X.shape[1]} genes but the preprocessor was fitted on {self.n_features_in_}"
            raise DataError(msg)
        Z = self._steps(X, self.log_)[:, self.keep_]
        return self._standardize(Z, self.center_, self.scale_)

    @staticmethod
    def _standardize(Z, center, scale):
        if sp.issparse(Z):
            if np.any(center != 0):
                Z = Z.toarray()
            else:
                return sp.csc_matrix(Z.multiply(1.0 / scale[None, :]))
        return (np.asarray(Z) - center) / scale

    def get_feature_names_out(self, input_features=None):
        """Names of the kept genes."""
        names = input_features
        if names is None:
            names = getattr(
                self, "feature_names_in_", np.array([f"x{i}" for i in range(self.n_features_in_)])
            )
        return np.asarray(names, dtype=object)[self.keep_]

    # Serialisation ----------------------------------------------------------------------------
    def to_dict(self, features: Sequence[int] | None = None) -> dict:
        """JSON-ready parameters; with ``features`` (indices into the kept genes), only theirs."""
        cols = np.arange(self.center_.shape[0]) if features is None else np.asarray(features, int)
        return {
            "floor": self.floor,
            "cap": self.cap,
            "log": self.log_,
            "log_requested": self.log,
            "pseudocount": float(self.pseudocount_),
            "standardize": bool(self.standardize),
            "center": self.center_[cols].tolist(),
            "scale": self.scale_[cols].tolist(),
        }

    @staticmethod
    def apply_dict(params: Mapping, X):
        """Apply stored parameters (:meth:`to_dict`) to ``X`` whose columns are the stored genes."""
        X = _dense(check_design(X, estimator_name="model"))
        Z = Preprocessor._clip(X, params["floor"], params["cap"])
        Z = Preprocessor._log(Z, params["log"], float(params["pseudocount"]))
        center = np.asarray(params["center"], dtype=np.float64)
        scale = np.asarray(params["scale"], dtype=np.float64)
        return (np.asarray(Z, dtype=np.float64) - center) / scale

    def describe(self) -> str:
        """One line saying what was done, for logs and the CLI."""
        parts = []
        if self.floor is not None:
            parts.append(f"floor {self.floor:g}")
        if self.cap is not None:
            parts.append(f"cap {self.cap:g}")
        if self.log_ != "none":
            pc = "" if self.pseudocount_ == 0 else f" + {self.pseudocount_:g}"
            auto = " (auto: data look like counts/intensities)" if self.log == "auto" else ""
            parts.append(f"{self.log_}(x{pc}){auto}")
        else:
            parts.append("no log" + (" (auto: data look log-scaled)" if self.log == "auto" else ""))
        parts.append(f"dropped {self.n_dropped_} constant gene(s)")
        if self.standardize:
            parts.append("scaled per gene" if self.sparse_ else "standardised per gene")
        return ", ".join(parts)


# --------------------------------------------------------------------------------------------
# Portable model
# --------------------------------------------------------------------------------------------


def _versions() -> dict:
    import platform

    import scipy
    import sklearn

    return {
        "ardselect": __version__,
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "scikit-learn": sklearn.__version__,
        "python": platform.python_version(),
    }


class PortableModel:
    """A fitted ARD probit model as plain data: applies to new data without pickles.

    Built by :func:`ardselect.rank_genes` (stored as JSON in ``adata.uns[key]["model_json"]``) and
    by ``ardselect fit`` (``model.json``); read back with :func:`load_model`.

    For each binary problem (one for two classes; one per class, one-vs-rest, otherwise) the model
    keeps the Gaussian posterior ``N(mean, cov)`` of the weights of the genes in the model (and the
    intercept, index ``-1``). The probability of the problem's positive class for a sample ``x``
    (after replaying the stored preprocessing) is ``Phi(h / sqrt(1 + v))`` with ``h = mean . x_A``
    and ``v = x_A' cov x_A``: the probit predictive probability with the weight uncertainty
    integrated out. Multi-class probabilities combine the one-vs-rest answers as ARDClassifier does.
    """

    def __init__(self, data: Mapping):
        self.data = dict(data)
        if self.data.get("format") != MODEL_FORMAT:
            msg = "not an ardselect model (missing or wrong 'format' field)"
            raise ModelError(msg)
        version = self.data.get("format_version")
        if version != MODEL_FORMAT_VERSION:
            msg = (
                f"model format version {version!r} is not supported by ardselect {__version__} "
                f"(which reads version {MODEL_FORMAT_VERSION})"
            )
            raise ModelError(msg)
        try:
            self.features = [str(f) for f in self.data["features"]]
            self.classes = list(self.data["classes"])
            self.problems = list(self.data["problems"])
            self.preprocessing = dict(self.data["preprocessing"])
        except (KeyError, TypeError) as exc:
            msg = f"model is missing the field {exc}"
            raise ModelError(msg) from None

    @classmethod
    def from_estimator(
        cls,
        estimator,
        preprocessor: Preprocessor,
        feature_names: Sequence[str],
        classes: Sequence,
        *,
        extra: Mapping | None = None,
    ) -> PortableModel:
        """Build from a fitted ``ARDClassifier`` and the :class:`Preprocessor` that fed it.

        ``feature_names`` name the estimator's input columns (the preprocessor's kept genes) and
        ``classes`` the original class labels, in the order of ``estimator.classes_``.
        """
        posteriors = list(estimator.posteriors_)
        classes = list(classes)
        if len(classes) == 2:
            positives = [classes[1]]
        else:
            positives = classes
        if len(posteriors) != len(positives):
            msg = f"{len(posteriors)} posteriors for {len(classes)} classes"
            raise ModelError(msg)
        used = sorted({int(i) for post in posteriors for i in np.asarray(post.index) if i >= 0})
        position = {j: k for k, j in enumerate(used)}
        problems = []
        for positive, post in zip(positives, posteriors, strict=True):
            index = np.asarray(post.index, dtype=int)
            problems.append(
                {
                    "positive": _jsonable(positive),
                    "index": [position[int(i)] if i >= 0 else -1 for i in index],
                    "mean": np.asarray(post.mean, dtype=np.float64).tolist(),
                    "cov": np.asarray(post.cov, dtype=np.float64).tolist(),
                }
            )
        data = {
            "format": MODEL_FORMAT,
            "format_version": MODEL_FORMAT_VERSION,
            "classes": _jsonable(classes),
            "features": [str(feature_names[j]) for j in used],
            "preprocessing": preprocessor.to_dict(used),
            "problems": problems,
            "n_features_trained": int(preprocessor.n_features_in_),
            "versions": _versions(),
        }
        if extra:
            data.update(_jsonable(dict(extra)))
        return cls(data)

    def to_json(self) -> str:
        """The model as JSON text (floats written with full round-trip precision)."""
        return json.dumps(_jsonable(self.data), indent=1, sort_keys=True, allow_nan=False) + "\n"

    def save(self, path) -> None:
        """Write the model as JSON, atomically."""
        with atomic_write(path) as fh:
            fh.write(self.to_json())

    @property
    def input_space(self) -> dict:
        """Where the model's genes were read in AnnData: ``{"layer": name or None, "use_raw": bool}``."""
        space = self.data.get("input") or {}
        return {"layer": space.get("layer"), "use_raw": bool(space.get("use_raw", False))}

    def _input_matrix(self, adata):
        """``(gene names, matrix)`` of ``adata`` in the model's input space, or a clear refusal."""
        space = self.input_space
        if space["use_raw"]:
            if adata.raw is None:
                msg = ("the model was fitted on raw.X (use_raw) but the data have no raw; give "
                       "the same kind of values the model was fitted on")
                raise ModelError(msg)
            return adata.raw.var_names, adata.raw.X
        if space["layer"] is not None:
            if space["layer"] not in adata.layers:
                msg = (f"the model was fitted on layer {space['layer']!r}, which the data lack "
                       f"(layers: {', '.join(adata.layers.keys()) or 'none'})")
                raise ModelError(msg)
            return adata.var_names, adata.layers[space["layer"]]
        return adata.var_names, adata.X

    def _columns(self, data, feature_names=None) -> np.ndarray:
        """The model's genes from ``data`` (AnnData, DataFrame, or array + names), as a dense array."""
        X = data
        if hasattr(data, "var_names") and hasattr(data, "X"):
            names, X = self._input_matrix(data)
        elif isinstance(data, pd.DataFrame):
            names = data.columns
            X = data.to_numpy()
        else:
            names = feature_names
            if names is None:
                msg = "give feature_names with an array (genes are matched by name)"
                raise ModelError(msg)
        names = pd.Index([str(n) for n in names])
        check_unique_names(names, "gene")
        pos = names.get_indexer(self.features)
        missing = [f for f, p in zip(self.features, pos, strict=True) if p < 0]
        if missing:
            shown = ", ".join(missing[:10]) + (", ..." if len(missing) > 10 else "")
            msg = (
                f"the data lack {len(missing)} of the model's {len(self.features)} genes: {shown}"
            )
            raise ModelError(msg)
        if sp.issparse(X):
            return sp.csc_matrix(X)[:, pos].toarray()
        return np.asarray(X)[:, pos]

    def predict_proba(self, data, feature_names=None) -> np.ndarray:
        """Class probabilities, shape (n_samples, n_classes), columns in ``classes`` order."""
        Z = Preprocessor.apply_dict(self.preprocessing, self._columns(data, feature_names))
        ones = np.ones((Z.shape[0], 1))
        design = np.hstack([Z, ones])  # column -1 is the intercept
        Z_std = np.empty((Z.shape[0], len(self.problems)))  # standardised latents
        for k, prob in enumerate(self.problems):
            index = np.asarray(prob["index"], dtype=int)
            XA = design[:, index]  # (n, d)
            mean = np.asarray(prob["mean"], dtype=np.float64)
            cov = np.asarray(prob["cov"], dtype=np.float64).reshape(index.size, index.size)
            h = XA @ mean
            v = np.einsum("ij,jk,ik->i", XA, cov, XA)
            Z_std[:, k] = h / np.sqrt(1.0 + v)
        return np.exp(ovr_log_proba(Z_std))  # the estimators' own combination rule

    def predict(self, data, feature_names=None) -> np.ndarray:
        """Most probable class per sample."""
        proba = self.predict_proba(data, feature_names)
        return np.asarray(self.classes, dtype=object)[np.argmax(proba, axis=1)]


def load_model(path) -> PortableModel:
    """Read a ``model.json`` written by ``ardselect fit`` or :meth:`PortableModel.save`."""
    path = _require_file(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        msg = f"{path.name} is not a JSON model file: {exc}"
        raise FileFormatError(msg) from None
    if not isinstance(data, dict):
        msg = f"{path.name} is not an ardselect model (JSON object expected)"
        raise FileFormatError(msg)
    return PortableModel(data)


# --------------------------------------------------------------------------------------------
# Result writers
# --------------------------------------------------------------------------------------------


def _tsv_text(df: pd.DataFrame) -> str:
    out = df.copy()
    for col in out.columns:
        if pd.api.types.is_bool_dtype(out[col]):
            out[col] = np.where(out[col].to_numpy(), "true", "false")
    return out.to_csv(
        sep="\t", index=False, lineterminator="\n", float_format=FLOAT_FORMAT, na_rep=""
    )


def write_ranked_tsv(table: pd.DataFrame, path) -> None:
    """Write a ranked gene table (from :func:`ardselect.get.ranked_genes_df`) as TSV, atomically.

    Booleans are written ``true``/``false``, floats with 10 significant digits, missing values
    (e.g. the entry step of a gene that never entered) as empty fields, ``alpha`` of genes outside
    the model as ``inf``.
    """
    with atomic_write(path) as fh:
        fh.write(_tsv_text(table))


def write_path_tsv(path_table: pd.DataFrame, path) -> None:
    """Write the ARD path table as TSV, atomically (same formats as :func:`write_ranked_tsv`)."""
    with atomic_write(path) as fh:
        fh.write(_tsv_text(path_table))


def write_gmt(gene_sets: Mapping[str, tuple[str, Sequence[str]]], path) -> None:
    """Write gene sets in GMT format: one line per set, ``name<TAB>description<TAB>gene...``.

    ``gene_sets`` maps a set name to ``(description, genes)``. Tabs and newlines in names and
    descriptions are replaced by spaces.
    """

    def clean(s) -> str:
        return " ".join(str(s).split())

    lines = []
    for name, (description, genes) in gene_sets.items():
        fields = [clean(name), clean(description), *(clean(g) for g in genes)]
        lines.append("\t".join(fields))
    with atomic_write(path) as fh:
        fh.write("\n".join(lines) + ("\n" if lines else ""))


_PATH_PANELS = (
    ("log_evidence", "log evidence"),
    ("loo_error", "LOO error"),
    ("loo_prob_error", "LOO error probability"),
    ("n_features", "genes in model"),
)
#: The LOO error probability panel is on a log scale (as the paper's Figure 2): on separable data
#: it falls to ~1e-300. Values below this floor (including exact zeros) are drawn at the floor.
_LOG_PANEL_FLOOR = 1e-300


def _log_probability_axis(ax, values):
    """Log y axis from the smallest value (floored) to 1, ticked at round powers of ten."""
    from matplotlib.ticker import MaxNLocator

    lo = np.log10(max(float(np.min(values)), _LOG_PANEL_FLOOR))
    exps = MaxNLocator(nbins=4, steps=[1, 2, 5, 10], integer=True).tick_values(min(lo, -1.0), 0.0)
    exps = exps[(exps >= np.floor(min(lo, -1.0))) & (exps <= 0)]
    ax.set_yscale("log")
    ax.set_yticks(10.0**exps, [("1" if e == 0 else f"1e{int(e)}") for e in exps])
    ax.minorticks_off()
    ax.set_ylim(10.0 ** (min(lo, -1.0) - 0.05 * max(1.0, -lo)), 2.0)


def plot_path(path_table: pd.DataFrame, *, title: str | None = None, fig=None):
    """Plot evidence, LOO error, LOO error probability and model size along the ARD path.

    ``path_table`` has the columns of :func:`ardselect.get.path_df` (``class``, ``step``, the four
    quantities, and ``chosen`` marking the chosen step of each class). Each panel shares the step
    axis; the chosen step is marked by a dashed line (binary) or a dot per class (multi-class), as
    in Figure 2 of Qi et al. (2004). The LOO error probability is on a log scale, as in the
    paper (values below 1e-300, and zeros, are drawn at 1e-300). Returns the matplotlib Figure.
    """
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    if fig is None:
        fig = Figure(figsize=(7.0, 8.0))
    axes = fig.subplots(len(_PATH_PANELS), 1, sharex=True)
    classes = list(dict.fromkeys(path_table["class"].astype(str)))
    multi = len(classes) > 1
    for ax, (col, label) in zip(axes, _PATH_PANELS, strict=True):
        for i, cls in enumerate(classes):
            sub = path_table[path_table["class"].astype(str) == cls]
            color = f"C{i % 10}"
            values = sub[col].to_numpy(dtype=float)
            if col == "loo_prob_error":
                values = np.maximum(values, _LOG_PANEL_FLOOR)
            ax.plot(sub["step"], values, color=color, lw=1.2, label=cls if multi else None)
            chosen = sub["chosen"].astype(bool).to_numpy()
            if chosen.any():
                if multi:
                    ax.plot(sub["step"][chosen], values[chosen], "o", color=color, ms=5)
                else:
                    step = int(sub["step"][chosen].iloc[0])
                    ax.axvline(float(step), color="k", ls="--", lw=1.0,
                               label=f"chosen step {step}")
        if col == "loo_prob_error":
            _log_probability_axis(ax, path_table[col].to_numpy(dtype=float))
            label += " (log)"
        ax.set_ylabel(label)
        ax.grid(True, alpha=0.3)
    axes[-1].set_xlabel("path step")
    axes[-1].xaxis.set_major_locator(MaxNLocator(integer=True))
    axes[-1].yaxis.set_major_locator(MaxNLocator(integer=True))
    if multi:
        axes[0].legend(
            fontsize="small", ncol=2, title="class vs rest (dot: chosen step)",
            title_fontsize="small",
        )
    elif path_table["chosen"].astype(bool).any():
        axes[0].legend(fontsize="small", loc="lower right")
    if title:
        axes[0].set_title(title)
    fig.align_ylabels(axes)
    fig.tight_layout()
    return fig


def write_path_png(path_table: pd.DataFrame, path, *, title: str | None = None) -> None:
    """Save :func:`plot_path` as PNG (100 dpi, no software or date metadata), atomically."""
    fig = plot_path(path_table, title=title)
    with atomic_write(path, "wb") as fh:
        fig.savefig(fh, format="png", dpi=100, metadata={"Software": None})


def plot_weights(ranked: pd.DataFrame, *, top: int = 25, title: str | None = None, fig=None):
    """Forest plot of the selected genes: posterior mean of the weight with +-2 sd bars.

    ``ranked`` is a ranked table (:meth:`ARDClassifier.ranked_features` or
    :func:`ardselect.get.ranked_genes_df`: columns ``rank``, ``gene`` or ``feature``, ``selected``,
    ``mean``, ``sd``, optionally ``class`` and ``description``). The ``top`` best-ranked selected genes
    of each class are drawn, best at the top; a bar that crosses zero marks a weight whose sign the
    data do not pin down. One panel per class (at most 12). Returns the matplotlib Figure.
    """
    from matplotlib.figure import Figure

    table = ranked.copy()
    if "class" not in table:
        table["class"] = ""
    name_col = "gene" if "gene" in table else "feature"
    classes = list(dict.fromkeys(table["class"].astype(str)))[:12]
    n_rows = [min(int(table.loc[(table["class"].astype(str) == c) & table["selected"]].shape[0]),
                  top) for c in classes]
    height = max(2.5, 0.22 * max(n_rows + [1]) + 1.2)
    ncol = min(len(classes), 3)
    nrow = -(-len(classes) // ncol)
    if fig is None:
        fig = Figure(figsize=(4.6 * ncol, height * nrow))
    axes = np.atleast_1d(fig.subplots(nrow, ncol, squeeze=False)).ravel()
    for ax, cls in zip(axes, classes, strict=False):
        sub = table[(table["class"].astype(str) == cls) & table["selected"].astype(bool)]
        sub = sub.sort_values("rank", kind="stable").head(top)
        k = len(sub)
        ypos = np.arange(k)[::-1]
        labels = sub[name_col].astype(str).to_numpy()
        if "description" in sub:
            desc = sub["description"].fillna("").astype(str).str.slice(0, 22).to_numpy()
            labels = np.array([f"{g} {d}".strip() for g, d in zip(labels, desc, strict=True)])
        mean = sub["mean"].to_numpy(float)
        sd = sub["sd"].to_numpy(float)
        colors = np.where(np.abs(mean) > 2 * sd, "C0", "0.6")
        ax.errorbar(mean, ypos, xerr=2 * sd, fmt="none", ecolor=colors, elinewidth=1.2)
        ax.scatter(mean, ypos, c=colors, s=14, zorder=3)
        ax.axvline(0.0, color="k", lw=0.8)
        ax.set_yticks(ypos)
        ax.set_yticklabels(labels, fontsize=7)
        ax.set_xlabel("weight (posterior mean +- 2 sd)")
        ax.grid(True, axis="x", alpha=0.3)
        sub_title = f"{cls} vs rest" if len(classes) > 1 else (title or "")
        if sub_title:
            ax.set_title(sub_title, fontsize=9)
        if k == 0:
            ax.text(0.5, 0.5, "no gene selected", ha="center", va="center",
                    transform=ax.transAxes)
    for ax in axes[len(classes):]:
        ax.set_visible(False)
    if title and len(classes) > 1:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def write_weights_png(ranked: pd.DataFrame, path, *, top: int = 25, title: str | None = None):
    """Save :func:`plot_weights` as PNG (100 dpi, no software or date metadata), atomically."""
    fig = plot_weights(ranked, top=top, title=title)
    with atomic_write(path, "wb") as fh:
        fig.savefig(fh, format="png", dpi=100, metadata={"Software": None})


def calibration_table(predictions: pd.DataFrame, *, n_bins: int = 10) -> pd.DataFrame:
    """Reliability of held-out probabilities: observed accuracy per bin of predicted confidence.

    ``predictions`` has columns ``criterion``, ``confidence`` (the predicted probability of the
    predicted class) and ``correct`` (bool). Bins are equal-width on [0.5, 1] for two classes and
    [0, 1] otherwise (``n_classes`` column, if present, decides; default [0, 1]). Returns one row per
    criterion and non-empty bin: ``criterion``, ``bin_low``, ``bin_high``, ``n``, ``mean_confidence``,
    ``accuracy``; plus the expected calibration error per criterion in ``ece`` (same on every row).
    """
    rows = []
    lo = 0.5 if "n_classes" in predictions and (predictions["n_classes"] == 2).all() else 0.0
    edges = np.linspace(lo, 1.0, n_bins + 1)
    for crit, sub in predictions.groupby("criterion", sort=False):
        conf = sub["confidence"].to_numpy(float)
        corr = sub["correct"].to_numpy(bool)
        idx = np.clip(np.searchsorted(edges, conf, side="right") - 1, 0, n_bins - 1)
        ece = 0.0
        crit_rows = []
        for b in range(n_bins):
            m = idx == b
            if not m.any():
                continue
            mc, acc = float(conf[m].mean()), float(corr[m].mean())
            ece += m.mean() * abs(mc - acc)
            crit_rows.append({"criterion": crit, "bin_low": edges[b], "bin_high": edges[b + 1],
                              "n": int(m.sum()), "mean_confidence": mc, "accuracy": acc})
        for r in crit_rows:
            r["ece"] = ece
        rows.extend(crit_rows)
    return pd.DataFrame(rows, columns=["criterion", "bin_low", "bin_high", "n", "mean_confidence",
                                       "accuracy", "ece"])


def plot_calibration(table: pd.DataFrame, *, title: str | None = None, fig=None):
    """Reliability diagram from :func:`calibration_table`: accuracy against mean confidence per bin.

    Points on the diagonal are calibrated; below it, over-confident. Marker area follows the number
    of held-out predictions in the bin. Returns the matplotlib Figure.
    """
    from matplotlib.figure import Figure

    if fig is None:
        fig = Figure(figsize=(5.0, 4.6))
    ax = fig.subplots()
    lo = float(table["bin_low"].min()) if len(table) else 0.0
    ax.plot([lo, 1], [lo, 1], color="k", lw=0.8, ls="--", label="calibrated")
    for i, (crit, sub) in enumerate(table.groupby("criterion", sort=False)):
        size = 12 + 200 * sub["n"] / max(1, table["n"].max())
        ax.plot(sub["mean_confidence"], sub["accuracy"], "-", color=f"C{i}", lw=1.0)
        ax.scatter(sub["mean_confidence"], sub["accuracy"], s=size, color=f"C{i}",
                   label=f"{crit} (ECE {sub['ece'].iloc[0]:.3f})", zorder=3)
    ax.set_xlabel("predicted probability of the predicted class")
    ax.set_ylabel("observed accuracy on held-out samples")
    ax.set_xlim(lo - 0.02, 1.02)
    ax.set_ylim(min(lo, float(table["accuracy"].min()) if len(table) else 0) - 0.05, 1.05)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small", loc="lower right")
    if title:
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig


def write_calibration_png(table: pd.DataFrame, path, *, title: str | None = None) -> None:
    """Save :func:`plot_calibration` as PNG (100 dpi, no software or date metadata), atomically."""
    fig = plot_calibration(table, title=title)
    with atomic_write(path, "wb") as fh:
        fig.savefig(fh, format="png", dpi=100, metadata={"Software": None})
