"""Files in and out: the input formats by extension, the rule that an input must exist, atomic writes.

Shared by the readers (:mod:`ardselect.dataio._readers`), the writers of :mod:`ardselect.io` and the
command line (through :mod:`ardselect.io`, which exports them).
"""

from __future__ import annotations

import contextlib
import lzma
import os
import tempfile
import zipfile
from pathlib import Path

import pandas as pd

from ..exceptions import FileFormatError, MissingFileError

#: Input formats :func:`read_data` knows, by file extension.
FORMATS = {
    "h5ad": (".h5ad",),
    "zarr": (".zarr",),
    "csv": (".csv", ".csv.gz", ".csv.bz2", ".csv.xz", ".csv.zip"),
    "tsv": (".tsv", ".tsv.gz", ".tsv.bz2", ".tsv.xz", ".txt", ".txt.gz", ".tab", ".tab.gz"),
    "gct": (".gct", ".gct.gz"),
}

_HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
# --------------------------------------------------------------------------------------------
# Small helpers
# --------------------------------------------------------------------------------------------


def _path(path) -> Path:
    return Path(os.fspath(path)).expanduser()


def require_file(path) -> Path:
    """``path`` (``~`` expanded) if it exists and is a file, or a directory for a ``.zarr`` store.

    Every reader checks its input with this rule first; it raises
    :class:`~ardselect.exceptions.MissingFileError` for a missing path and
    :class:`~ardselect.exceptions.FileFormatError` for a directory (or a ``.zarr`` name that is not one).
    """
    path = _path(path)
    if not path.exists():
        msg = f"file not found: {path}"
        raise MissingFileError(msg)
    if path.name.lower().endswith(".zarr"):
        if not path.is_dir():
            msg = f"{path} is not a zarr store (a .zarr store is a directory)"
            raise FileFormatError(msg)
        return path
    if path.is_dir():
        msg = f"{path} is a directory, not a file"
        raise FileFormatError(msg)
    return path


def detect_format(path) -> str:
    """Return the input format of ``path`` from its extension: one of :data:`FORMATS`.

    Examples
    --------
    >>> detect_format("expr.h5ad"), detect_format("expr.csv.gz"), detect_format("cells.zarr")
    ('h5ad', 'csv', 'zarr')
    """
    name = _path(path).name.lower()
    for fmt, exts in FORMATS.items():
        if any(name.endswith(ext) for ext in exts):
            return fmt
    known = ", ".join(e for exts in FORMATS.values() for e in exts)
    msg = f"cannot tell the format of {_path(path).name} from its extension; known: {known}"
    raise FileFormatError(msg)


def _read_csv(path: Path, **kwargs) -> pd.DataFrame:
    """A CSV/TSV file (by its extension) as pandas reads it; an unreadable one is refused."""
    fmt = detect_format(path)
    sep = "," if fmt == "csv" else "\t"
    try:
        return pd.read_csv(path, sep=sep, **kwargs)
    except (UnicodeDecodeError, pd.errors.ParserError, OSError, EOFError, ValueError,
            lzma.LZMAError, zipfile.BadZipFile) as exc:  # (gzip and bz2 raise OSError)
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        msg = f"cannot read {path.name} as a {fmt.upper()} table: {reason}"
        raise FileFormatError(msg) from None



@contextlib.contextmanager
def atomic_write(path, mode: str = "w"):
    r"""Open a temporary file beside ``path``; rename it onto ``path`` only if the block succeeds.

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
