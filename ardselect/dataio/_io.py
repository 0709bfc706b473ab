"""The code of :mod:`ardselect.io`, which re-exports its public names and documents them."""

from __future__ import annotations

import gzip
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ..engine._design import dense
from ..engine._validation import check_unique_names
from ..exceptions import LabelError
from ._expression import Expression, ExpressionData, Input, expression
from ._files import FORMATS, _path, atomic_write, detect_format, require_file
from ._label_files import read_cls, read_labels
from ._readers import (
    ANNOTATION_WORDS,
    AnnotationColumnWarning,
    looks_like_annotation,
    read_data,
    read_gct,
    read_h5ad,
    read_lazy,
    read_table,
    split_gene_columns,
)

__all__ = [
    "ANNOTATION_WORDS",
    "FORMATS",
    "AnnotationColumnWarning",
    "Expression",
    "ExpressionData",
    "Input",
    "atomic_write",
    "check_unique_names",
    "detect_format",
    "expression",
    "looks_like_annotation",
    "read_cls",
    "read_data",
    "read_gct",
    "read_h5ad",
    "read_labels",
    "read_lazy",
    "read_table",
    "require_file",
    "split_gene_columns",
    "write_cls",
    "write_gct",
    "write_gmt",
    "write_rnk",
    "write_tsv",
]

# Float format for TSV outputs: 10 significant digits are far more than the posterior's own
# precision, and a fixed format keeps outputs byte-identical across runs.
FLOAT_FORMAT = "%.10g"


# --------------------------------------------------------------------------------------------
# Writers for inputs (GCT, CLS): used by `ardselect example` and for round trips
# --------------------------------------------------------------------------------------------



def write_gct(adata, path, *, description_key: str | None = None) -> None:
    """Write AnnData ``X`` as a GCT 1.2 file (genes in rows). Descriptions from ``var[description_key]``."""
    path = _path(path)
    X = dense(adata.X).T
    desc = (
        adata.var[description_key].astype(str).to_numpy()
        if description_key is not None
        else np.array(["na"] * adata.n_vars, dtype=object)
    )
    table = pd.DataFrame(X, columns=list(map(str, adata.obs_names)))
    table.insert(0, "Description", desc)
    table.insert(0, "Name", list(map(str, adata.var_names)))
    body = table.to_csv(sep="\t", index=False, lineterminator="\n", float_format=FLOAT_FORMAT)
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


def write_tsv(table: pd.DataFrame, path) -> None:
    """Write a table as TSV, atomically, in the fixed formats of every ardselect output.

    Booleans are written ``true``/``false``, floats with 10 significant digits, missing values
    (e.g. the entry step of a gene that never entered) as empty fields, infinities (``alpha`` of
    genes outside the model) as ``inf``.
    """
    with atomic_write(path) as fh:
        fh.write(_tsv_text(table))


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


def write_rnk(ranked: pd.DataFrame, path) -> None:
    """Write a pre-ranked gene list (GSEA ``.rnk``): ``gene<TAB>score`` per line, no header.

    ``ranked`` has columns ``gene`` and ``score`` (:func:`ardselect.get.ranked_list`); rows are
    written in the given order, scores with 10 significant digits.
    """
    if list(ranked.columns[:2]) != ["gene", "score"]:
        msg = f"a ranked list needs the columns gene and score; got {list(ranked.columns)}"
        raise ValueError(msg)
    genes = [" ".join(str(g).split()) for g in ranked["gene"]]
    lines = [f"{g}\t{FLOAT_FORMAT % v}" for g, v in zip(genes, ranked["score"], strict=True)]
    with atomic_write(path) as fh:
        fh.write("\n".join(lines) + ("\n" if lines else ""))
