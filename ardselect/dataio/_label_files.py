"""Label files: a CLS file (labels in sample order) or a table of sample id and label.

Read by :func:`ardselect.io.read_data` (``labels=``) and exported by :mod:`ardselect.io`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ..engine._validation import check_unique_names
from ..exceptions import FileFormatError, LabelError
from ._files import _read_csv, require_file

__all__ = ["read_cls", "read_labels", "refuse_samples_in_columns"]


def read_cls(path) -> np.ndarray:
    """Read a categorical Broad CLS label file; return one label per sample (as strings).

    Line 1: ``n_samples n_classes 1``; line 2: ``# name1 name2 ...``; line 3: one label per
    sample. Labels on line 3 may be the class names or any tokens (e.g. ``0 1``): as in the GSEA
    documentation, the first distinct token maps to the first name on line 2, and so on.
    """
    path = require_file(path)
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
    path = require_file(path)
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


def refuse_samples_in_columns(adata, labels, path: Path) -> None:
    """The samples of a label table are the table's columns: its genes are in rows; say so."""
    ids = read_labels(labels).index
    if len(ids) and ids.isin(adata.var_names.astype(str)).mean() > 0.5:
        msg = (f"the samples of {Path(labels).name} are columns of {path.name}, not rows: its "
               "genes look to be in rows and its samples in columns; read it with --genes-in-rows "
               "(genes_in_rows=True)")
        raise LabelError(msg)
