"""Plumbing shared by the commands: one-line errors, atomic outputs, warnings and progress on stderr."""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import re
import shutil
import stat
import sys
import tempfile
import warnings
from pathlib import Path

import typer

PROG = "ardselect"


class UsageError(Exception):
    """A bad combination of arguments found after parsing (exit code 2)."""


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def error_line(message: str) -> None:
    """Write one readable error line to stderr."""
    text = " ".join(str(message).split())  # one line, whatever the message held
    sys.stderr.write(f"{PROG}: error: {text}\n")
    sys.stderr.flush()


def warn_line(message: str) -> None:
    text = " ".join(str(message).split())
    sys.stderr.write(f"{PROG}: warning: {text}\n")
    sys.stderr.flush()


def info_line(message: str, *, quiet: bool = False) -> None:
    if not quiet:
        sys.stderr.write(f"{message}\n")
        sys.stderr.flush()


def _package_of(w) -> str:
    """The top-level package a warning was issued from (by the file of the warning call)."""
    parts = Path(str(w.filename)).parts
    for marker in ("site-packages", "dist-packages"):
        if marker in parts:
            rest = parts[parts.index(marker) + 1:]
            return rest[0].split(".")[0] if rest else "?"
    here = Path(__file__).resolve().parent
    lib = Path(importlib.util.find_spec("ardselect").origin).resolve().parent
    path = Path(str(w.filename)).resolve()
    if path.is_relative_to(here) or path.is_relative_to(lib):
        return "ardselect"
    return path.stem


def _relay_warnings(caught, *, debug: bool) -> None:
    """Relay ardselect's own warnings as one ``warning:`` line each; others (anndata, ...) counted in one note.

    A warning is ours when its category is defined in ardselect or it was issued from ardselect's
    code; scikit-learn's ``ConvergenceWarning`` raised by our estimators counts as ours.
    """
    seen = set()
    foreign: dict[str, list[str]] = {}
    for w in caught:
        if issubclass(w.category, FutureWarning) and not debug:
            continue
        ours = w.category.__module__.startswith("ardselect") or _package_of(w) == "ardselect"
        if ours:
            text = f"{w.category.__name__}: {w.message}"
            if text not in seen:
                seen.add(text)
                warn_line(str(w.message))
        else:
            foreign.setdefault(_package_of(w), []).append(" ".join(str(w.message).split()))
    for package, messages in foreign.items():
        if debug:
            for m in dict.fromkeys(messages):
                sys.stderr.write(f"{PROG}: {package} warned: {m}\n")
        else:
            sys.stderr.write(f"{PROG}: note: {len(messages)} warning(s) from {package}, not about "
                             f"your results (ARDSELECT_DEBUG=1 shows them)\n")
    sys.stderr.flush()


#: Library parameters the commands set from an option of another name.
_OPTION_OF = {"random_state": "--seed"}


def _option_message(text: str) -> str:
    """A library parameter error, with the command-line option it came from named first."""
    match = re.search(r"The '(\w+)' parameter|^(floor|cap) ", text)
    name = match and (match.group(1) or match.group(2))
    if not name:
        return text
    option = _OPTION_OF.get(name, "--" + name.replace("_", "-"))
    return f"{option}: {text}"


@contextlib.contextmanager
def handle_errors():
    """Turn every expected failure into one line on stderr and an exit code, never a traceback.

    Exit codes: 1 for data, file and model errors (:class:`ardselect.ArdselectError`, OS errors);
    2 for usage errors; 130 on Ctrl-C. Library warnings (e.g. a path that hit ``max_steps``) are
    shown as one ``warning:`` line each and do not change the exit code. Set ``ARDSELECT_DEBUG=1``
    to get tracebacks of unexpected errors.
    """
    from sklearn.utils._param_validation import InvalidParameterError

    import ardselect

    debug = os.environ.get("ARDSELECT_DEBUG", "") not in ("", "0")
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                yield
            finally:
                _relay_warnings(caught, debug=debug)
    except typer.Exit:
        raise
    except UsageError as exc:
        error_line(str(exc))
        raise typer.Exit(2) from None
    except InvalidParameterError as exc:  # an option's value out of a parameter's range
        error_line(_option_message(str(exc)))
        raise typer.Exit(2) from None
    except KeyboardInterrupt:
        error_line("interrupted; no output was written")
        raise typer.Exit(130) from None
    except ardselect.ArdselectError as exc:
        error_line(str(exc))
        raise typer.Exit(1) from None
    except ImportError as exc:  # an optional dependency (matplotlib for the figures)
        if debug:
            raise
        error_line(str(exc))
        raise typer.Exit(1) from None
    except (OSError, MemoryError) as exc:
        if debug:
            raise
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        where = f": {exc.filename}" if isinstance(exc, OSError) and exc.filename else ""
        error_line(f"{reason or type(exc).__name__}{where}")
        raise typer.Exit(1) from None
    except Exception as exc:
        if debug:
            raise
        error_line(
            f"internal error ({type(exc).__name__}: {exc}); please report it, with "
            "ARDSELECT_DEBUG=1 set for the traceback"
        )
        raise typer.Exit(1) from None


def check_input(path: Path) -> Path:
    """The input must exist and be a readable file, or a ``.zarr`` store (one-line errors, exit 1)."""
    import ardselect

    path = ardselect.io.require_file(path)  # the library's rule: missing, a directory, not a zarr
    if not os.access(path, os.R_OK):
        msg = f"{path} is not readable"
        raise ardselect.FileFormatError(msg)
    return path


def is_stream(path: Path) -> bool:
    """True for ``-`` and for outputs written through, never replaced (``/dev/null``, a pipe).

    Also ``/dev/stdout``, ``/dev/fd/N`` and terminals. ``/dev/stdout`` is a symlink into ``/proc/<pid>/fd``, whose target may be a regular file (the
    shell's redirection); it is still a stream, written in place.
    """
    if str(path) == "-":
        return True
    path = Path(os.path.abspath(path))
    if path.is_symlink() and os.readlink(path).startswith("/proc/"):
        return True
    if os.path.realpath(path.parent).startswith("/proc/"):
        return True
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def _kind_of(path: Path) -> str:
    mode = os.stat(path).st_mode
    for test, name in ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISFIFO, "a named pipe"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISDIR, "a folder"), (stat.S_ISREG, "a file")):
        if test(mode):
            return name
    return "not a regular file"


def check_output(path: Path, *, overwrite: bool, kind: str = "output", folder: bool = False) -> Path:
    """Refuse an existing output without ``--overwrite``, and any output that cannot be replaced.

    Usage errors (exit 2). An output is written to a temporary sibling and renamed into place, so
    an existing path must be of the kind written: a folder for ``folder=True``, else a regular
    file. A device such as ``/dev/null`` or a pipe is refused here, never replaced; commands that
    can stream (``predict -o``) check :func:`is_stream` first.
    """
    path = Path(path)
    if path.exists() or path.is_symlink():
        if not path.exists():
            msg = f"{kind} {path} is a broken symbolic link; remove it or give another name"
            raise UsageError(msg)
        actual = _kind_of(path)
        wanted = "a folder" if folder else "a file"
        if actual != wanted or (folder and path.is_symlink()):
            what = "a symbolic link" if folder and path.is_symlink() else actual
            msg = f"{kind} {path} exists and is {what}, not {wanted} that can be replaced"
            raise UsageError(msg)
        if not overwrite:
            msg = f"{kind} {path} already exists; use --overwrite to replace it"
            raise UsageError(msg)
    return path


class Transaction:
    """Outputs written to temporary siblings and renamed into place together at the end.

    ``directory(path)`` and ``file(path)`` hand out temporary paths beside the final ones;
    ``commit()`` renames them (an existing directory is replaced only after the new one is
    complete). Leaving the ``with`` block by an exception (``KeyboardInterrupt`` included) deletes
    every temporary path, so a failed or interrupted run leaves no partial output.
    """

    def __init__(self):
        self._items: list[tuple[Path, Path, bool]] = []
        self._mode_dir = 0o777 & ~_umask()
        self._mode_file = 0o666 & ~_umask()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            self.cleanup()
        return False

    def directory(self, final: Path) -> Path:
        final = Path(final)
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".tmp", dir=final.parent))
        os.chmod(tmp, self._mode_dir)
        self._items.append((tmp, final, True))
        return tmp

    def file(self, final: Path) -> Path:
        final = Path(final)
        final.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(
            prefix=f".{final.stem}.", suffix=f".tmp{final.suffix}", dir=final.parent
        )
        os.close(fd)
        os.unlink(name)  # writers create it; only the unique name is needed
        tmp = Path(name)
        self._items.append((tmp, final, False))
        return tmp

    def commit(self) -> None:
        for tmp, final, is_dir in self._items:
            if is_dir:
                for child in tmp.rglob("*"):
                    if child.is_file():
                        os.chmod(child, self._mode_file)
                if final.exists() and final.is_dir() and not final.is_symlink():
                    old = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".old",
                                                dir=final.parent))
                    os.rename(final, old / "x")
                    os.rename(tmp, final)
                    shutil.rmtree(old, ignore_errors=True)
                else:
                    if final.exists() or final.is_symlink():
                        final.unlink()
                    os.rename(tmp, final)
            else:
                if tmp.exists():
                    os.chmod(tmp, self._mode_file)
                    os.replace(tmp, final)
        self._items = []

    def cleanup(self) -> None:
        for tmp, _, is_dir in self._items:
            if is_dir:
                shutil.rmtree(tmp, ignore_errors=True)
            else:
                with contextlib.suppress(FileNotFoundError):
                    tmp.unlink()
        self._items = []


class PathProgress(logging.Handler):
    """Drive a Rich progress display on stderr from the ``ardselect.path`` DEBUG records.

    Each record carries ``step``, ``max_steps`` and ``class_label``; the display shows the binary
    problem being fitted (one per class with more than two classes; with ``--criterion cv`` once
    more per fold of the inner cross-validation) and its current step. A record of step 0 starts
    a new path.
    """

    def __init__(self, progress, n_paths: int):
        super().__init__(logging.DEBUG)
        self.progress = progress
        self.task = progress.add_task("ARD path", total=n_paths, step="")
        self.labels: list[str] = []  # the class of every path started

    def emit(self, record):
        step = getattr(record, "step", None)
        if step is None:
            return
        label = str(getattr(record, "class_label", "") or "")
        if step == 0:
            if self.labels:
                self.progress.advance(self.task)
            self.labels.append(label)
        max_steps = getattr(record, "max_steps", None)
        text = f"step {step}" + (f" (max {max_steps})" if max_steps else "")
        self.progress.update(self.task, description=f"ARD path: {label}", step=text)


@contextlib.contextmanager
def path_progress(n_paths: int, *, quiet: bool):
    """Show a progress display fed by the ``ardselect.path`` logger while the block runs."""
    if quiet:
        yield
        return
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    if not console.is_terminal:
        yield
        return
    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total} paths"),
        TextColumn("{task.fields[step]}"),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )
    log = logging.getLogger("ardselect.path")
    handler = PathProgress(progress, n_paths)
    old_level = log.level
    log.setLevel(logging.DEBUG)
    log.addHandler(handler)
    try:
        with progress:
            yield
    finally:
        log.removeHandler(handler)
        log.setLevel(old_level)


def task_progress(total: int, description: str, *, quiet: bool):
    """A Rich progress bar on stderr for ``total`` tasks, or ``None`` when quiet or not a terminal."""
    if quiet:
        return None
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    if not console.is_terminal:
        return None
    return Progress(
        TextColumn(description),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )
