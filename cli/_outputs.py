"""Outputs that lose nothing: checks before a command runs, and a transaction that puts them in place.

A command checks every output first (:func:`check_output`, :func:`check_apart`): an existing output
is replaced only with ``--overwrite``, only by one of the same kind, and an output folder only when
it holds nothing but what the command writes and none of its inputs. The outputs are then written
to temporary siblings and renamed into place together (:class:`Transaction`). A folder is swapped
with its replacement in one atomic ``renameat2(RENAME_EXCHANGE)`` where the system has it, so no
instant exists where neither the old nor the new folder is at its name.

Interrupts: :func:`signals_raise` turns SIGINT, SIGTERM and SIGHUP into exceptions
(``KeyboardInterrupt`` and its subclass :class:`Interrupted`), so the temporary outputs are removed
on the way out whatever stopped the command; while outputs are being renamed into place or removed,
a signal waits until that is done.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fnmatch
import os
import shutil
import signal
import stat
import tempfile
import threading
import uuid
from collections.abc import Collection, Iterable
from pathlib import Path


class UsageError(Exception):
    """A bad combination of arguments found after parsing (exit code 2)."""


# ------------------------------------------------------------------------------ signals


class Interrupted(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised like Ctrl-C's ``KeyboardInterrupt`` so that cleanup runs."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


#: The signals a command turns into exceptions (SIGHUP: the terminal closed).
_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP")
                 if hasattr(signal, name))


class _State:
    critical = 0  # depth of the sections that must not be interrupted
    pending: int | None = None  # a signal received in such a section, raised at its end
    written: list[Path] = []  # outputs put in place by the running command  # noqa: RUF012


def _raise_for(signum: int):
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise Interrupted(signum)


def _on_signal(signum, frame):  # noqa: ARG001  (the signal module's handler signature)
    if _State.critical:
        _State.pending = _State.pending or signum
        return
    _raise_for(signum)


@contextlib.contextmanager
def signals_raise():
    """Within the block, SIGINT raises ``KeyboardInterrupt`` and SIGTERM, SIGHUP :class:`Interrupted`.

    Signals the shell set to be ignored (``nohup``, a background job's SIGINT) stay ignored.
    Handlers can only be set in the main thread; elsewhere the block runs unchanged.
    """
    _State.critical, _State.pending, _State.written = 0, None, []
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.getsignal(s) for s in _SIGNALS}
    for s, handler in previous.items():
        if handler is not signal.SIG_IGN:
            signal.signal(s, _on_signal)
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        _State.critical, _State.pending = 0, None


def signal_exit_code(exc: KeyboardInterrupt) -> int:
    """The shell's exit code for a command stopped by a signal: 128 + its number (Ctrl-C: 130)."""
    return 128 + int(getattr(exc, "signum", signal.SIGINT))


def written() -> list[Path]:
    """The outputs the running command has put in place so far."""
    return list(_State.written)


@contextlib.contextmanager
def _uninterrupted():
    """A signal received in the block is held back and raised once the block has finished."""
    _State.critical += 1
    try:
        yield
    finally:
        _State.critical -= 1
    if not _State.critical and _State.pending is not None:
        signum, _State.pending = _State.pending, None
        _raise_for(signum)


# ------------------------------------------------------------------------------ checks


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


def _location(path: Path) -> str:
    """``path`` made absolute with its folder's symbolic links resolved (not its own name's)."""
    path = Path(os.path.abspath(path))
    return os.path.join(os.path.realpath(path.parent), path.name)


def _within(inner: str, outer: str) -> bool:
    """True when the absolute path ``inner`` is ``outer`` or lies inside it."""
    return os.path.commonpath([inner, outer]) == outer


def _foreign_entries(folder: Path, ours: Collection[str]) -> list[str]:
    """Entries of ``folder`` (relative, ``/``-separated) that match none of the patterns ``ours``.

    Symbolic links and anything but files and folders are foreign whatever their name: the
    commands write neither. A foreign folder is listed, not its contents.
    """
    foreign = []
    for root, dirs, files in os.walk(folder):
        base = Path(root).relative_to(folder)
        keep = []
        for name in sorted(dirs) + sorted(files):
            rel = (base / name).as_posix()
            full = Path(root, name)
            plain = not full.is_symlink() and (full.is_dir() or full.is_file())
            if plain and any(fnmatch.fnmatchcase(rel, p) for p in ours):
                if name in dirs:
                    keep.append(name)
            else:
                foreign.append(rel)
        dirs[:] = keep
    return foreign


def _shown(items: list[str], n: int = 5) -> str:
    return ", ".join(items[:n]) + (f", ... ({len(items)} in all)" if len(items) > n else "")


def check_output(path: Path, *, overwrite: bool, kind: str = "output", folder: bool = False,
                 inputs: Iterable[Path | None] = (), ours: Collection[str] | None = None) -> Path:
    """Refuse an output that would replace what it must not; usage errors (exit 2).

    Refused: an existing output without ``--overwrite``; one of another kind than written (a
    folder for ``folder=True``, else a regular file: a device or pipe is never replaced; commands
    that can stream, such as ``predict -o``, check :func:`is_stream` first); an output that is one
    of ``inputs`` or, for a folder, holds one of them or the current folder; and an existing folder
    holding anything that matches none of the relative-path patterns ``ours`` (the files the
    command writes), since a folder is replaced as a whole.
    """
    path = Path(path)
    where = _location(path)
    for source in inputs:
        if source is None or str(source) == "-":
            continue
        real = os.path.realpath(source)
        if real == where or (folder and _within(real, where)):
            if real == where:
                msg = (f"{kind} {path} is the input {source} itself; an output never replaces "
                       "an input: give another name")
            else:
                msg = (f"{kind} {path} holds the input {source}; it is replaced as a whole, so "
                       "give a new folder for the results (e.g. --out results)")
            raise UsageError(msg)
    if folder and _within(os.path.realpath(os.getcwd()), where):
        msg = (f"{kind} {path} is the current folder or holds it; it is replaced as a whole, so "
               "give a folder of its own (e.g. --out results)")
        raise UsageError(msg)
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
        if folder and ours is not None:
            foreign = _foreign_entries(path, ours)
            if foreign:
                msg = (f"{kind} {path} holds files ardselect did not write ({_shown(foreign)}); "
                       "it is replaced as a whole, so --overwrite replaces only a folder of "
                       "ardselect's outputs: move them or give another folder")
                raise UsageError(msg)
    return path


def check_apart(folder: Path, file: Path, *, folder_option: str, file_option: str) -> None:
    """Refuse a file output at, inside or above an output folder (usage error, exit 2)."""
    a, b = _location(folder), _location(file)
    if a == b:
        msg = f"{file_option} {file} and {folder_option} {folder} are the same path; give two different ones"
    elif _within(b, a):
        msg = (f"{file_option} {file} is inside the output folder {folder}, which is replaced as "
               f"a whole; write it outside the folder")
    elif _within(a, b):
        msg = f"the output folder {folder} is inside {file_option} {file}; give two separate paths"
    else:
        return
    raise UsageError(msg)


# ------------------------------------------------------------------------------ the transaction


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_RENAME_EXCHANGE = 2  # <linux/fs.h>
_AT_FDCWD = -100


def _renameat2():
    """The C library's ``renameat2`` (Linux 3.15+, glibc 2.28+), or None where it is missing."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


_EXCHANGE = _renameat2() if os.uname().sysname == "Linux" else None


def _exchange(a: Path, b: Path) -> bool:
    """Swap two existing paths atomically; False where the system or file system cannot."""
    if _EXCHANGE is None:
        return False
    if _EXCHANGE(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False  # e.g. NFS: no exchange; the two-rename fallback is used
    raise OSError(code, os.strerror(code), str(b))


#: Longest file name most file systems take (ext4, xfs, btrfs, APFS, NTFS: 255).
_NAME_MAX = 255


def _stem_for(name: str, extra: int) -> str:
    """``name``, cut so that a temporary name of ``extra`` more characters fits the limit.

    An output named near the file system's limit still gets its temporary sibling.
    """
    room = _NAME_MAX - extra
    encoded = name.encode("utf-8", "surrogateescape")
    if len(encoded) <= room:
        return name
    return encoded[:room].decode("utf-8", "ignore")


def _sibling(final: Path, suffix: str) -> Path:
    """A hidden, unused name beside ``final``."""
    return final.with_name(f".{_stem_for(final.name, 10 + len(suffix))}.{uuid.uuid4().hex[:8]}"
                           f"{suffix}")


def _place_folder(tmp: Path, final: Path, *, replace: bool = True) -> list[Path]:
    """Put the complete folder ``tmp`` at ``final``; return the paths holding what it replaced.

    With ``replace=False`` (no ``--overwrite``) a folder that appeared at ``final`` since the
    command checked it (another run to the same output) is not replaced: the first run to finish
    wins and this one fails, saying so.

    With an atomic exchange, ``tmp`` ends up holding the previous folder. Without one, the previous
    folder is renamed aside first (a concurrent run may have put its own at ``final`` meanwhile:
    that one is moved aside as well and the rename retried, the last run winning).
    """
    previous: list[Path] = []
    for _ in range(100):
        try:
            os.rename(tmp, final)  # no folder at final (or an empty one, which POSIX replaces)
            return previous
        except OSError as exc:
            if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY):
                raise
            if not replace:
                msg = (f"another run wrote the output folder {final.name} meanwhile; it was "
                       "kept (--overwrite replaces it)")
                raise FileExistsError(errno.EEXIST, msg, str(final)) from None
        try:
            if _exchange(tmp, final):
                return [*previous, tmp]
        except FileNotFoundError:
            continue  # final was moved away meanwhile by a concurrent run: rename again
        aside = _sibling(final, ".old")
        try:
            os.rename(final, aside)
        except FileNotFoundError:
            continue
        previous.append(aside)
    msg = f"could not put the output folder in place (other processes keep replacing it): {final}"
    raise OSError(errno.EBUSY, msg)


def _restore_folder(tmp: Path, final: Path, previous: list[Path]) -> None:
    """Undo :func:`_place_folder`: the new folder back to ``tmp``, the previous one to ``final``."""
    if previous and previous[-1] == tmp and _exchange(tmp, final):  # exchanged: swap back
        return
    os.rename(final, tmp)
    if previous:
        os.rename(previous[0], final)


class Transaction:
    """Outputs written to temporary siblings and renamed into place together at the end.

    ``directory(path)`` and ``file(path)`` hand out temporary paths beside the final ones;
    ``commit()`` renames them into place (an existing folder is swapped with its complete
    replacement; a file is replaced atomically). If putting one output in place fails, the ones
    already placed are put back as they were. Leaving the ``with`` block by an exception
    (``KeyboardInterrupt`` and :class:`Interrupted` included) deletes every temporary path, so a
    failed or interrupted run leaves no partial output. Renaming and deleting are not interrupted
    by signals (:func:`signals_raise`): a signal received meanwhile is raised when they are done.
    """

    def __init__(self):
        self._items: list[tuple[Path, Path, bool]] = []
        self._keep: set[Path] = set()  # folders not to replace (no --overwrite)
        self._mode_dir = 0o777 & ~_umask()
        self._mode_file = 0o666 & ~_umask()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            self.cleanup()
        return False

    def _track(self, tmp: Path, final: Path, *, is_dir: bool) -> None:
        self._items.append((tmp, final, is_dir))

    def directory(self, final: Path, *, replace: bool = True) -> Path:
        """A temporary folder that :meth:`commit` puts at ``final``.

        ``replace=False``: a folder found at ``final`` at commit time is kept and the commit fails.
        """
        final = Path(os.path.abspath(final))
        if not replace:
            self._keep.add(final)
        final.parent.mkdir(parents=True, exist_ok=True)
        with _uninterrupted():  # created and tracked together
            prefix = f".{_stem_for(final.name, 16)}."  # mkdtemp adds 8 random characters
            tmp = Path(tempfile.mkdtemp(prefix=prefix, suffix=".tmp", dir=final.parent))
            self._track(tmp, final, is_dir=True)
        os.chmod(tmp, self._mode_dir)
        return tmp

    def file(self, final: Path) -> Path:
        final = Path(os.path.abspath(final))
        final.parent.mkdir(parents=True, exist_ok=True)
        # Writers create the file; only the unique name is needed. The name keeps the final
        # suffix so that writers choosing compression by extension see it.
        stem = _stem_for(final.stem, 14 + len(final.suffix.encode("utf-8", "surrogateescape")))
        tmp = final.with_name(f".{stem}.{uuid.uuid4().hex[:8]}.tmp{final.suffix}")
        self._track(tmp, final, is_dir=False)
        return tmp

    def commit(self) -> None:
        """Put every output in place, or none: a failure restores those already placed."""
        for tmp, _final, is_dir in self._items:
            if not (tmp.is_dir() if is_dir else tmp.is_file()):
                msg = f"an output was not written: {tmp}"
                raise FileNotFoundError(errno.ENOENT, msg)
        with _uninterrupted():
            placed: list[tuple[Path, Path, bool, list[Path], bool]] = []
            try:
                for tmp, final, is_dir in self._items:
                    existed = final.exists() or final.is_symlink()
                    if is_dir:
                        for child in tmp.rglob("*"):
                            if child.is_file():
                                os.chmod(child, self._mode_file)
                        previous = _place_folder(tmp, final, replace=final not in self._keep)
                    else:
                        os.chmod(tmp, self._mode_file)
                        previous = []
                        if final.is_file() and not final.is_symlink():
                            # the previous file, under a second name until every output is placed
                            backup = _sibling(final, ".old")
                            with contextlib.suppress(OSError):  # no hard links here: no restore
                                os.link(final, backup)
                                previous.append(backup)
                        try:
                            os.replace(tmp, final)
                        except BaseException:
                            for old in previous:
                                _remove(old, is_dir=False)
                            raise
                    placed.append((tmp, final, is_dir, previous, existed))
            except BaseException:
                kept: set[Path] = set()  # the previous outputs of a failed restore: never deleted
                for tmp, final, is_dir, previous, existed in reversed(placed):
                    if not _restore(tmp, final, previous, is_dir=is_dir, existed=existed):
                        kept.update(previous)
                self._items = [item for item in self._items if item[0] not in kept]
                self.cleanup([(p[2], [old for old in p[3] if old not in kept]) for p in placed])
                raise
            for _tmp, _final, is_dir, previous, _existed in placed:
                for old in previous:
                    _remove(old, is_dir=is_dir)
            _State.written.extend(p[1] for p in placed)
            self._items = []

    def cleanup(self, set_aside=()) -> None:
        """Delete every temporary path (and, after a failed commit, what it had set aside)."""
        with _uninterrupted():
            for tmp, _final, is_dir in self._items:
                _remove(tmp, is_dir=is_dir)
            for is_dir, previous in set_aside:
                for old in previous:  # after a restore, what was set aside is back in place
                    _remove(old, is_dir=is_dir)
            self._items = []


def _restore(tmp: Path, final: Path, previous: list[Path], *, is_dir: bool, existed: bool) -> bool:
    """Undo the placing of one output; False if that failed (what was set aside is then kept)."""
    try:
        if is_dir:
            _restore_folder(tmp, final, previous)
        elif previous:
            os.replace(previous[0], final)
        elif not existed:
            os.replace(final, tmp)
    except OSError:
        return False
    return True


def _remove(path: Path, *, is_dir: bool) -> None:
    if is_dir and path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
