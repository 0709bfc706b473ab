"""Plumbing shared by the commands: one-line errors, atomic outputs, warnings and progress on stderr."""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import re
import sys
import warnings
from pathlib import Path

import typer

from ._outputs import (  # noqa: F401  (the commands import these from here)
    Transaction,
    UsageError,
    check_apart,
    check_output,
    is_stream,
    signal_exit_code,
    signals_raise,
    written,
)

PROG = "ardselect"


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


class _WarningRelay:
    """ardselect's own warnings as they are issued, one ``warning:`` line each; others noted once.

    Other packages' warnings (anndata, ...) are counted and noted at the end (:meth:`close`). A
    warning is ours when its category is defined in ardselect or it was issued from ardselect's
    code; scikit-learn's ``ConvergenceWarning`` raised by our estimators counts as ours. Installed
    as ``warnings.showwarning``, so that a notice issued before a long fit is read before it.
    """

    def __init__(self, *, debug: bool):
        self.debug = debug
        self.seen: set[str] = set()
        self.foreign: dict[str, list[str]] = {}

    def __call__(self, message, category, filename, lineno, file=None, line=None):
        w = warnings.WarningMessage(message, category, filename, lineno, file, line)
        if issubclass(w.category, FutureWarning) and not self.debug:
            return
        ours = w.category.__module__.startswith("ardselect") or _package_of(w) == "ardselect"
        if ours:
            text = f"{w.category.__name__}: {w.message}"
            if text not in self.seen:
                self.seen.add(text)
                warn_line(str(w.message))
        else:
            self.foreign.setdefault(_package_of(w), []).append(" ".join(str(w.message).split()))

    def close(self) -> None:
        _note_foreign(self.foreign, debug=self.debug)


def _relay_warnings(caught, *, debug: bool) -> None:
    """Relay recorded warnings (``warnings.WarningMessage``) as :class:`_WarningRelay` does."""
    relay = _WarningRelay(debug=debug)
    for w in caught:
        relay(w.message, w.category, w.filename, w.lineno, w.file, w.line)
    relay.close()


def _note_foreign(foreign: dict, *, debug: bool) -> None:
    """One note per package whose warnings were held back (each message with ARDSELECT_DEBUG)."""
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
    2 for usage errors; 130 on Ctrl-C, 143 on SIGTERM (a scheduler's time limit, ``timeout``),
    129 on SIGHUP: each interrupt removes the temporary outputs first (:func:`signals_raise`).
    Library warnings (e.g. a path that hit ``max_steps``) are shown as one ``warning:`` line each
    and do not change the exit code. Set ``ARDSELECT_DEBUG=1`` to get tracebacks of unexpected
    errors.
    """
    import ardselect
    from ardselect.exceptions import ParameterError

    debug = os.environ.get("ARDSELECT_DEBUG", "") not in ("", "0")
    try:
        relay = _WarningRelay(debug=debug)
        with signals_raise(), warnings.catch_warnings():
            warnings.simplefilter("always")
            warnings.showwarning = relay
            try:
                yield
            except BaseException as exc:
                if not (isinstance(exc, typer.Exit) and exc.exit_code == 0):
                    relay.foreign.clear()  # a failed command's error line stands alone
                raise
            finally:
                relay.close()
    except typer.Exit:
        raise
    except UsageError as exc:
        error_line(str(exc))
        raise typer.Exit(2) from None
    except ParameterError as exc:  # an option's value out of a parameter's range
        error_line(_option_message(str(exc)))
        raise typer.Exit(2) from None
    except KeyboardInterrupt as exc:
        code = signal_exit_code(exc)
        how = "interrupted" if code == 130 else f"stopped by {exc}"
        done = written()
        if done:
            error_line(f"{how} after its outputs were written (complete): "
                       f"{', '.join(map(str, done))}")
        else:
            error_line(f"{how}; no output was written")
        raise typer.Exit(code) from None
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
        raise ardselect.exceptions.FileFormatError(msg)
    return path


def stdout_console():
    """A Rich console for the summary on stdout.

    On a terminal, tables fit its width. Piped or redirected (a log, ``| less``), the width is
    unlimited and colours are off, so tables are written whole: no name is cut to fit 80 columns.
    """
    from rich.console import Console

    console = Console(file=sys.stdout, highlight=False, soft_wrap=True)
    if not console.is_terminal:
        console = Console(file=sys.stdout, highlight=False, soft_wrap=True, width=1_000_000,
                          color_system=None)
    return console


def summary_table(console, **kwargs):
    """A Rich table; in plain ASCII when the console is not a terminal."""
    from rich import box
    from rich.table import Table

    if not console.is_terminal:
        kwargs.setdefault("box", box.ASCII)
    return Table(**kwargs)


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
