"""``ardselect example``: write a bundled dataset in any input format."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ._options import Example, OverwriteOpt, QuietOpt
from ._util import Transaction, check_output, handle_errors, info_line


def example(
    name: Annotated[Example, typer.Argument(help="Dataset name.", show_default=False, metavar="NAME")],
    path: Annotated[
        Path | None,
        typer.Argument(
            help="Where to write it: .h5ad (default golub_leukaemia.h5ad), .csv/.tsv (samples in "
            "rows with label and split columns) or .gct (with a .cls label file beside it).",
            show_default=False,
            metavar="PATH",
        ),
    ] = None,
    overwrite: OverwriteOpt = False,
    quiet: QuietOpt = False,
):
    """Write a bundled real dataset: 'leukaemia' is Golub et al. (1999), ALL vs AML, 72 x 7129."""
    with handle_errors():
        import ardselect

        if path is None:
            path = Path("golub_leukaemia.h5ad")
        fmt = ardselect.io.detect_format(path)
        check_output(path, overwrite=overwrite, kind="file")
        adata = ardselect.datasets.load_example(name.value)
        written = [path]
        with Transaction() as tx:
            if fmt == "h5ad":
                adata.write_h5ad(tx.file(path))
            elif fmt in ("csv", "tsv"):
                import pandas as pd

                table = pd.DataFrame(
                    adata.X.astype("int64"), index=adata.obs_names, columns=adata.var_names
                )
                table.insert(0, "split", adata.obs["split"].astype(str).to_numpy())
                table.insert(0, "label", adata.obs["label"].astype(str).to_numpy())
                table.index.name = "sample_id"
                sep = "," if fmt == "csv" else "\t"
                text = table.to_csv(sep=sep, lineterminator="\n").encode("utf-8")
                tx.file(path).write_bytes(_compressed(text, path))
            else:
                cls_path = path.with_name(path.name.removesuffix(".gz").removesuffix(".gct")
                                          + ".cls")
                check_output(cls_path, overwrite=overwrite, kind="file")
                ardselect.io.write_gct(adata, tx.file(path), description_key="description")
                ardselect.io.write_cls(adata.obs["label"].astype(str), tx.file(cls_path))
                written.append(cls_path)
            tx.commit()
        info_line(
            f"wrote {', '.join(map(str, written))}: {adata.n_obs} samples x {adata.n_vars} genes "
            f"(labels in '{'label' if fmt != 'gct' else written[-1].name}'); raw intensities: "
            "use --floor 100 --cap 16000 --log log10",
            quiet=quiet,
        )


def _compressed(data: bytes, path: Path) -> bytes:
    """``data`` compressed as the name of ``path`` says (.gz, .bz2, .xz, .zip; else as is).

    Without time stamps or temporary names in the headers, so the same data give the same bytes.
    """
    name = path.name.lower()
    if name.endswith(".gz"):
        import gzip

        return gzip.compress(data, mtime=0)
    if name.endswith(".bz2"):
        import bz2

        return bz2.compress(data)
    if name.endswith(".xz"):
        import lzma

        return lzma.compress(data, format=lzma.FORMAT_XZ)
    if name.endswith(".zip"):
        import io
        import zipfile

        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            member = zipfile.ZipInfo(path.name[: -len(".zip")], date_time=(1980, 1, 1, 0, 0, 0))
            member.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(member, data)
        return buffer.getvalue()
    return data
