"""The CLI's output safety (cli/_outputs.py): checks before a run, the transaction, signals."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import pytest
from ardselect_cli import _outputs
from ardselect_cli._outputs import (
    Interrupted,
    Transaction,
    UsageError,
    check_apart,
    check_output,
    signals_raise,
    written,
)

OURS = ("genes.tsv", "model.json", "rnk", "rnk/*.rnk")


def hidden(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def make_folder(path: Path, text: str, names=("genes.tsv", "model.json")) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    for name in names:
        (path / name).write_text(text)
    return path


def commit_folder(final: Path, text: str, file: Path | None = None, before_commit=None,
                  unwritten: Path | None = None) -> None:
    """One transaction: a folder (and a file) of ``text``, then ``before_commit()``, then commit."""
    with Transaction() as tx:
        make_folder(tx.directory(final), text)
        if file is not None:
            tx.file(file).write_text(text)
        if unwritten is not None:
            tx.file(unwritten)
        if before_commit is not None:
            before_commit()
        tx.commit()


@pytest.fixture(params=["exchange", "rename"])
def swap(request, monkeypatch):
    """Run a test with the atomic exchange and with the two-rename fallback (no renameat2)."""
    if request.param == "rename":
        monkeypatch.setattr(_outputs, "_EXCHANGE", None)
    elif _outputs._EXCHANGE is None:
        pytest.skip("this system has no renameat2")
    return request.param


# ------------------------------------------------------------------------------ checks


def test_folder_holding_the_input_is_refused(tmp_path, monkeypatch):
    proj = make_folder(tmp_path / "proj", "old")
    data = proj / "data.h5ad"
    data.write_text("input")
    with pytest.raises(UsageError, match=r"output folder .*proj holds the input .*data\.h5ad; "
                                         r"it is replaced as a whole"):
        check_output(proj, overwrite=True, kind="output folder", folder=True, inputs=[data])
    # named through another path to the same folder
    (tmp_path / "link").symlink_to(proj)
    with pytest.raises(UsageError, match="holds the input"):
        check_output(tmp_path / "link" / ".." / "proj", overwrite=True, kind="output folder",
                     folder=True, inputs=[tmp_path / "link" / "data.h5ad"])
    # an input above the folder is no concern
    check_output(proj / "res", overwrite=True, kind="output folder", folder=True,
                 inputs=[data], ours=OURS)
    monkeypatch.chdir(proj)
    with pytest.raises(UsageError, match=r"output folder \. is the current folder or holds it"):
        check_output(Path("."), overwrite=True, kind="output folder", folder=True, ours=OURS)
    with pytest.raises(UsageError, match=r"is the current folder or holds it"):
        check_output(Path(".."), overwrite=True, kind="output folder", folder=True, ours=OURS)


def test_file_output_that_is_an_input_is_refused(tmp_path):
    data = tmp_path / "data.h5ad"
    data.write_text("input")
    with pytest.raises(UsageError, match=r"file .*data\.h5ad is the input .*data\.h5ad itself; "
                                         r"an output never replaces an input"):
        check_output(data, overwrite=True, kind="file", inputs=[None, data])


def test_folder_with_files_ardselect_did_not_write_is_refused(tmp_path):
    res = make_folder(tmp_path / "res", "old")
    (res / "rnk").mkdir()
    (res / "rnk" / "A.rnk").write_text("old")
    assert check_output(res, overwrite=True, kind="output folder", folder=True, ours=OURS) == res
    (res / "notes.txt").write_text("mine")
    (res / "rnk" / "mine.txt").write_text("mine")
    with pytest.raises(UsageError, match=r"output folder .*res holds files ardselect did not "
                                         r"write \(notes\.txt, rnk/mine\.txt\); it is replaced "
                                         r"as a whole"):
        check_output(res, overwrite=True, kind="output folder", folder=True, ours=OURS)
    (res / "notes.txt").unlink()
    (res / "rnk" / "mine.txt").unlink()
    (res / "model.json").unlink()
    (res / "model.json").symlink_to(tmp_path / "elsewhere.json")  # never written by ardselect
    with pytest.raises(UsageError, match=r"did not write \(model\.json\)"):
        check_output(res, overwrite=True, kind="output folder", folder=True, ours=OURS)


@pytest.mark.parametrize(("folder", "file", "pattern"), [
    ("res", "res/annot.h5ad", r"--write-h5ad .*annot\.h5ad is inside the output folder .*res"),
    ("same.h5ad", "same.h5ad", r"--write-h5ad same\.h5ad and --out same\.h5ad are the same path"),
    ("a.h5ad/res", "a.h5ad", r"the output folder a\.h5ad/res is inside --write-h5ad a\.h5ad"),
])
def test_file_output_inside_the_output_folder_is_refused(tmp_path, monkeypatch, folder, file,
                                                         pattern):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UsageError, match=pattern):
        check_apart(Path(folder), Path(file), folder_option="--out", file_option="--write-h5ad")
    check_apart(Path("res"), Path("res.h5ad"), folder_option="--out", file_option="--write-h5ad")


# ------------------------------------------------------------------------------ the transaction


def test_commit_replaces_a_folder_whole(tmp_path, swap):
    final = make_folder(tmp_path / "res", "old", names=("genes.tsv", "path.tsv"))
    commit_folder(final, "new")
    assert sorted(p.name for p in final.iterdir()) == ["genes.tsv", "model.json"]
    assert (final / "genes.tsv").read_text() == "new"
    assert hidden(tmp_path) == []


def test_commit_restores_every_output_when_one_fails(tmp_path, swap, monkeypatch):
    folder = make_folder(tmp_path / "res", "old")
    single = tmp_path / "res.h5ad"
    single.write_text("old")
    real_replace = os.replace

    def failing(src, dst):
        if Path(dst) == single:
            raise OSError(28, "No space left on device", str(dst))
        return real_replace(src, dst)

    monkeypatch.setattr(_outputs.os, "replace", failing)
    with pytest.raises(OSError, match="No space left"):
        commit_folder(folder, "new", single)
    assert (folder / "genes.tsv").read_text() == "old"
    assert single.read_text() == "old"
    assert hidden(tmp_path) == []


def test_commit_refuses_an_output_that_was_not_written(tmp_path):
    with pytest.raises(FileNotFoundError, match="an output was not written"):
        commit_folder(tmp_path / "res", "new", unwritten=tmp_path / "res.h5ad")
    assert list(tmp_path.iterdir()) == []


def test_concurrent_commits_of_one_folder(tmp_path, swap):
    # Two `--overwrite` runs of the same folder at once once failed with "Directory not empty"
    # and left a hidden .old folder.
    final = make_folder(tmp_path / "res", "old")
    errors = []
    barrier = threading.Barrier(4)

    def run(k):
        try:
            for i in range(25):
                barrier.wait()
                commit_folder(final, f"{k}-{i}")
        except Exception as exc:  # noqa: BLE001  (reported below)
            errors.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=run, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sorted(p.name for p in final.iterdir()) == ["genes.tsv", "model.json"]
    assert (final / "genes.tsv").read_text() == (final / "model.json").read_text()
    assert (final / "genes.tsv").read_text().endswith("-24")
    assert hidden(tmp_path) == []


# ------------------------------------------------------------------------------ signals


@pytest.fixture
def main_thread():
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signal handlers can only be set in the main thread")


def test_sigterm_raises_and_removes_the_temporary_outputs(tmp_path, main_thread):
    final = make_folder(tmp_path / "res", "old")
    with signals_raise(), pytest.raises(Interrupted, match="SIGTERM"):
        commit_folder(final, "new", before_commit=lambda: os.kill(os.getpid(), signal.SIGTERM))
    assert (final / "genes.tsv").read_text() == "old"
    assert hidden(tmp_path) == []
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def test_signal_during_commit_waits_until_every_output_is_in_place(tmp_path, swap, main_thread,
                                                                   monkeypatch):
    # A signal between moving the old folder away and moving the new one in once left the
    # previous results only in a hidden .old folder.
    final = make_folder(tmp_path / "res", "old")
    single = tmp_path / "res.h5ad"
    single.write_text("old")
    real_rename, real_place = os.rename, _outputs._place_folder

    def rename_then_signal(src, dst):
        real_rename(src, dst)
        os.kill(os.getpid(), signal.SIGTERM)

    def place_then_signal(tmp, final, **kwargs):
        previous = real_place(tmp, final, **kwargs)
        os.kill(os.getpid(), signal.SIGTERM)
        return previous

    monkeypatch.setattr(_outputs.os, "rename", rename_then_signal)
    monkeypatch.setattr(_outputs, "_place_folder", place_then_signal)
    with signals_raise(), pytest.raises(Interrupted):
        commit_folder(final, "new", single)
    assert (final / "genes.tsv").read_text() == "new"
    assert single.read_text() == "new"
    assert hidden(tmp_path) == []


def test_ignored_signals_stay_ignored(main_thread):
    previous = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        with signals_raise():
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
            assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
    finally:
        signal.signal(signal.SIGHUP, previous)


def test_written_lists_what_was_put_in_place(tmp_path, main_thread):
    with signals_raise():
        commit_folder(tmp_path / "res", "new")
        assert written() == [tmp_path / "res"]


def test_two_runs_to_one_output_folder_the_first_to_finish_wins(tmp_path):
    from ardselect_cli._outputs import Transaction

    out = tmp_path / "res"
    with Transaction() as tx:
        mine = tx.directory(out, replace=False)  # checked: no folder yet (no --overwrite)
        (mine / "genes.tsv").write_text("mine\n")
        out.mkdir()  # another run to the same --out finishes first
        (out / "genes.tsv").write_text("theirs\n")
        with pytest.raises(FileExistsError, match="another run wrote the output folder res "
                           "meanwhile; it was kept"):
            tx.commit()
    assert (out / "genes.tsv").read_text() == "theirs\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["res"]  # no temporary left
    # With --overwrite the last run replaces it.
    with Transaction() as tx:
        mine = tx.directory(out, replace=True)
        (mine / "genes.tsv").write_text("mine\n")
        tx.commit()
    assert (out / "genes.tsv").read_text() == "mine\n"
