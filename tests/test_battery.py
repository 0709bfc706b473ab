"""A battery of odd inputs, signals and file-system states, one group per kind of defect.

Each case was once a data loss, a false claim, a silent wrong answer or an internal error. Every
input is built here; the cases that need a file system of their own (a full or read-only tmpfs)
mount one and are skipped without root. The per-module tests beside the code check each
mechanism in detail; this module runs the cases as a user meets them.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import anndata as ad
import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import ardselect
from ardselect import GibbsRVMClassifier, ep_probit
from ardselect.exceptions import DataError
from tests.conftest import make_adata, make_expression, one_error, run_cli, scripted_path_loop

REPO = Path(__file__).resolve().parents[1]
runner = CliRunner()


run = run_cli


def listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def hidden(folder: Path) -> list[str]:
    return [name for name in listing(folder) if any(part.startswith(".") for part in
                                                     Path(name).parts)]


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    """A small two-class CSV (24 samples x 6 genes) and a fitted results folder of it."""
    d = tmp_path_factory.mktemp("battery")
    make_expression(n_samples=24, n_genes=6, seed=3).to_csv(d / "data.csv", index=False)
    result = run("fit", d / "data.csv", "--out", d / "fitted", "--criterion", "loo", "-q")
    assert result.exit_code == 0, result.stderr
    return d


def previous_results(folder: Path) -> Path:
    """A results folder of a previous run: ardselect's file names, known contents."""
    folder.mkdir(parents=True)
    for name in ("genes.tsv", "model.json"):
        (folder / name).write_text(f"previous {name}\n")
    return folder


def is_previous(folder: Path) -> bool:
    return (listing(folder) == ["genes.tsv", "model.json"]
            and (folder / "genes.tsv").read_text() == "previous genes.tsv\n")


# ------------------------------------------------------------------------------ 1. --overwrite


def test_1_overwrite_never_deletes_the_input_or_other_files(table, tmp_path, monkeypatch):
    proj = tmp_path / "proj"
    proj.mkdir()
    shutil.copy(table / "data.csv", proj / "data.csv")
    (proj / "notes.txt").write_text("mine\n")
    before = listing(proj)
    one_error(run("fit", "--no-figures", proj / "data.csv", "--out", proj, "--overwrite"), 2,
              r"output folder .*proj holds the input .*data\.csv")
    monkeypatch.chdir(proj)  # `--out .` inside the input's folder: "Device or resource busy"
    one_error(run("fit", "--no-figures", "data.csv", "--out", ".", "--overwrite"), 2,
              r"output folder \. holds the input data\.csv")
    (proj / "data.csv").rename(proj / "input.csv.keep")
    one_error(run("fit", "--no-figures", tmp_path / "other.csv", "--out", ".", "--overwrite"), 2,
              r"output folder \. is the current folder or holds it")
    (proj / "input.csv.keep").rename(proj / "data.csv")
    one_error(run("evaluate", "data.csv", "-o", "..", "--overwrite"), 2, "holds the input")
    assert listing(proj) == before
    assert hidden(tmp_path) == []
    results = proj / "results"
    previous_results(results)
    (results / "plot.pdf").write_text("mine\n")
    one_error(run("fit", "--no-figures", "data.csv", "--out", "results", "--overwrite"), 2,
              r"output folder results holds files ardselect did not write \(plot\.pdf\)")
    assert (results / "plot.pdf").exists()


# ------------------------------------------------------------------------------ 2. false claims


def test_2_every_output_claimed_is_there(table, tmp_path):
    one_error(run("fit", table / "data.csv", "--out", tmp_path / "res",
                  "--write-h5ad", tmp_path / "res" / "annot.h5ad"), 2,
              r"--write-h5ad .*annot\.h5ad is inside the output folder")
    one_error(run("fit", table / "data.csv", "--out", tmp_path / "same.h5ad",
                  "--write-h5ad", tmp_path / "same.h5ad"), 2, "are the same path")
    assert list(tmp_path.iterdir()) == []
    result = run("fit", table / "data.csv", "--out", tmp_path / "res", "--criterion", "loo",
                 "--write-h5ad", tmp_path / "res.h5ad")
    assert result.exit_code == 0, result.stderr
    wrote = next(ln for ln in result.stdout.splitlines() if ln.startswith("wrote "))
    for name in wrote.removeprefix("wrote ").split(", "):
        assert Path(name).is_file(), name


# ------------------------------------------------------------------------------ 3. signals

_HOOKED = textwrap.dedent("""
    import contextlib, io, json, os, signal, sys, time
    import ardselect
    from ardselect_cli import _outputs
    from ardselect_cli.main import app

    def term():
        os.kill(os.getpid(), signal.SIGTERM)

    real = {"tsv": ardselect.io.write_tsv, "rank": ardselect.fit_signature,
            "place": _outputs._place_folder}

    def write_tsv(*a, **k):  # SIGTERM after the first table is in the temporary folder
        real["tsv"](*a, **k)
        term()

    def fit_signature(*a, **k):  # SIGTERM as the fit starts
        term()
        return real["rank"](*a, **k)

    def place(tmp, final, **k):  # SIGTERM between putting the folder in place and the .h5ad file
        previous = real["place"](tmp, final, **k)
        term()
        return previous

    def waiting(*a, **k):  # a fit that waits for a signal from outside
        open(os.environ["MARKER"], "w").close()
        for _ in range(600):
            time.sleep(0.1)

    hooks = {"writing": (ardselect.io, "write_tsv", write_tsv),
             "fit": (ardselect, "fit_signature", fit_signature),
             "commit": (_outputs, "_place_folder", place),
             "waiting": (ardselect, "fit_signature", waiting)}
    outcomes = []
    for where, args in json.loads(sys.argv[1]):  # one command per hook, in this process
        module, name, hook = hooks[where]
        setattr(module, name, hook)
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            code = app(args, prog_name="ardselect", standalone_mode=False)
        setattr(module, name, real[{"write_tsv": "tsv", "fit_signature": "rank",
                                    "_place_folder": "place"}[name]])
        outcomes.append([code, err.getvalue()])
    print(json.dumps(outcomes))
""")


def _cli_process(tmp_path, commands, env=None):
    """A Python process running ``ardselect`` commands, each with the hook it names."""
    script = tmp_path / "hooked.py"
    script.write_text(_HOOKED)
    commands = [[where, [str(a) for a in args]] for where, args in commands]
    return subprocess.Popen([sys.executable, str(script), json.dumps(commands)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=REPO, env={**os.environ, **(env or {})})


def test_3_sigterm_leaves_no_temporary_output_and_the_previous_results(table, tmp_path):
    # Three times out of three a .res.XXXX.tmp/.genes.tsv.XXXX.tmp was left, and an interrupt
    # between moving the old folder away and the new one in left the previous results only in a
    # hidden .res.XXXX.old folder.
    places = ("writing", "fit", "commit")
    commands = []
    for where in places:
        work = tmp_path / where
        res = previous_results(work / "res")
        (work / "res.h5ad").write_text("previous\n")
        commands.append((where, ["fit", "--no-figures", table / "data.csv", "--out", res, "--overwrite",
                                 "--criterion", "loo", "--write-h5ad", work / "res.h5ad", "-q"]))
    proc = _cli_process(tmp_path, commands)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    for where, (code, message) in zip(places, json.loads(out), strict=True):
        work, res = tmp_path / where, tmp_path / where / "res"
        assert code == 143, message
        assert "Traceback" not in message
        assert hidden(work) == []
        if where == "commit":  # the signal waits until every output is in place
            assert message.startswith("ardselect: error: stopped by SIGTERM after its outputs "
                                      "were written (complete)"), message
            assert "model.json" in listing(res)
            assert (work / "res.h5ad").read_bytes().startswith(b"\x89HDF")
        else:
            assert message.strip() == "ardselect: error: stopped by SIGTERM; no output was written"
            assert is_previous(res)
            assert (work / "res.h5ad").read_text() == "previous\n"


def test_3_sigterm_from_outside_during_the_fit(table, tmp_path):
    work = tmp_path / "work"
    res = previous_results(work / "res")
    marker = tmp_path / "fitting"
    proc = _cli_process(tmp_path, [("waiting", ["fit", "--no-figures", table / "data.csv", "--out", res,
                                                 "--overwrite", "-q"])],
                        env={"MARKER": str(marker)})
    deadline = time.monotonic() + 120
    while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marker.exists(), proc.communicate()[1]
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    [(code, message)] = json.loads(out)
    assert code == 143, message
    assert message.strip() == "ardselect: error: stopped by SIGTERM; no output was written"
    assert hidden(work) == []
    assert is_previous(res)


def test_3_two_overwrites_of_one_folder_at_once(table, tmp_path):
    # They could fail with "Directory not empty" and leave a hidden .old folder.
    res = previous_results(tmp_path / "res")
    args = ("fit", "--no-figures", table / "data.csv", "--out", res, "--overwrite", "--criterion", "loo", "-q")
    procs = [subprocess.Popen([sys.executable, "-m", "ardselect_cli", *map(str, args)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              cwd=REPO) for _ in range(2)]
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
    assert hidden(tmp_path) == []
    assert "model.json" in listing(res)
    assert (res / "genes.tsv").read_bytes() == (table / "fitted" / "genes.tsv").read_bytes()


@pytest.fixture
def tmpfs(tmp_path):
    """A 1 MB tmpfs mounted at ``tmp_path / "fs"`` (root only)."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root")
    fs = tmp_path / "fs"
    fs.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(fs)],
                          capture_output=True, check=False)
    if done.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield fs
    finally:
        subprocess.run(["umount", "-l", str(fs)], check=False)


def test_3_a_full_file_system(table, tmpfs):
    res = previous_results(tmpfs / "res")
    (tmpfs / "filler").write_bytes(b"\0" * 950_000)  # the figures no longer fit
    result = run("fit", table / "data.csv", "--out", res, "--overwrite", "--criterion", "loo")
    one_error(result, 1, r"No space left on device")
    assert hidden(tmpfs) == []
    assert is_previous(res)


def test_3_a_read_only_file_system(table, tmpfs):
    res = previous_results(tmpfs / "res")
    subprocess.run(["mount", "-o", "remount,ro", str(tmpfs)], check=True)
    result = run("fit", "--no-figures", table / "data.csv", "--out", res, "--overwrite", "--criterion", "loo")
    one_error(result, 1, r"Read-only file system")
    assert is_previous(res)


# ------------------------------------------------------------------------------ 4. model.json


def _edit(data, path, value):
    *parents, last = path
    for key in parents:
        data = data[key]
    if value is None and last == "center":
        del data[last]
    else:
        data[last] = value


@pytest.mark.parametrize(("path", "value", "pattern"), [
    (["problems", 0, "mean", 0], float("nan"), r"problems\[0\]\.mean\[0\] must be a finite"),
    (["preprocessing", "scale", 0], 0, r"preprocessing\.scale\[0\] must be a positive number"),
    (["preprocessing", "center"], None, r"preprocessing\.center must be a list of"),
    (["preprocessing", "center"], [], r"preprocessing\.center must be a list of \d+ .*got 0"),
    (["preprocessing", "log"], "log7", r"preprocessing\.log must be one of none, log2"),
    (["preprocessing", "floor"], "abc", r"preprocessing\.floor must be a finite number"),
    (["preprocessing", "pseudocount"], "null", r"preprocessing\.pseudocount must be a number"),
    (["classes"], ["ctrl"], r"field classes must be a list of at least two"),
    (["problems"], [], r"field problems must be a list of 1 problem"),
    (["problems", 0, "cov", 0, 0], 1e308, r"problems\[0\]\.cov\[0\]\[0\] must be a finite"),
    (["format_version"], 6, r"format version 6 is not supported .* written by a newer "
                            r"ardselect: upgrade"),
])
def test_4_an_edited_model_is_refused_naming_the_field(table, tmp_path, path, value, pattern):
    data = json.loads((table / "fitted" / "model.json").read_text())
    _edit(data, path, value)
    (tmp_path / "model.json").write_text(json.dumps(data))
    result = run("predict", tmp_path / "model.json", table / "data.csv", "-o", tmp_path / "p.tsv")
    one_error(result, 1, r"model\.json: model .*" + pattern)
    assert not (tmp_path / "p.tsv").exists()


def test_4_deeply_nested_json(table, tmp_path):
    (tmp_path / "model.json").write_text("[" * 100_000 + "]" * 100_000)
    result = run("predict", tmp_path / "model.json", table / "data.csv")
    one_error(result, 1, r"not a JSON model file: its values are nested too deeply")


# ------------------------------------------------------------------------------ 5.-7. inputs


@pytest.mark.parametrize("word", ["n/a?", "abc"])
def test_5_a_word_in_a_gene_column_is_reported(tmp_path, word):
    df = make_expression(n_samples=24, n_genes=6, seed=3).astype({"G3": object})
    df.loc[4, "G3"] = word
    df.to_csv(tmp_path / "t.csv", index=False)
    result = run("fit", tmp_path / "t.csv", "--out", tmp_path / "r", "--criterion", "loo", "-q")
    assert result.exit_code == 0, result.stderr
    assert re.search(rf"warning: 1 column\(s\) of t\.csv hold numbers and a few words.*'G3' "
                     rf"\('{re.escape(word)}' in row 's04'\)", result.stderr), result.stderr
    assert "G3" not in pd.read_csv(tmp_path / "r" / "genes.tsv", sep="\t")["gene"].tolist()


def test_6_a_layer_against_a_model_fitted_on_x(tmp_path):
    adata = make_adata(make_expression(n_samples=24, n_genes=6, seed=3))
    adata.layers["lognorm"] = np.log1p(adata.X)
    adata.write_h5ad(tmp_path / "d.h5ad")
    assert run("fit", "--no-figures", tmp_path / "d.h5ad", "-o", tmp_path / "r", "--criterion", "loo",
               "-q").exit_code == 0
    one_error(run("predict", tmp_path / "r" / "model.json", tmp_path / "d.h5ad", "--layer",
                  "lognorm"), 2, r"fitted on X and applies it itself; --layer lognorm")


def test_7_a_gene_as_the_label(tmp_path):
    make_expression(n_samples=51, n_genes=5).to_csv(tmp_path / "t.csv", index=False)
    one_error(run("fit", "--no-figures", tmp_path / "t.csv", "-g", "G1", "-o", tmp_path / "r"), 1,
              r"the labels look continuous \(51 distinct numbers")


# ------------------------------------------------------------------------------ 8.-9. evaluate


def test_8_and_9_few_groups_and_piped_tables(tmp_path):
    adata = make_adata(make_expression(n_samples=30, n_genes=5, seed=2))
    adata.obs["phase"] = ["G1", "S", "G2M"] * 10
    adata.write_h5ad(tmp_path / "d.h5ad")
    result = run("evaluate", tmp_path / "d.h5ad", "--groups", "phase", "--splits", 3, "-j", 1,
                 "-o", tmp_path / "ev")
    assert result.exit_code == 0, result.stderr
    pred = pd.read_csv(tmp_path / "ev" / "predictions.tsv", sep="\t")
    tests = pred[pred["method"] == "ARD-EP"].groupby("split")["sample"].apply(frozenset)
    assert len(set(tests)) == 3  # no partition twice
    assert re.search(r"3 random (\d+)-(\d+)/(\d+)-(\d+) train/test partitions", result.stdout)
    # 9: written to a pipe, the tables are whole
    assert "…" not in result.stdout
    for text in ("| L1-logistic ", "| ARD-EP (evidence) |", "confidence - accuracy"):
        assert text in result.stdout


# ------------------------------------------------------------------------------ 10. messages


def test_10_messages_in_the_users_terms(tmp_path):
    df = make_expression(n_samples=24, n_genes=6, seed=3)
    df.loc[5, "G2"] = np.nan
    df.to_csv(tmp_path / "nan.csv", index=False)
    one_error(run("fit", "--no-figures", tmp_path / "nan.csv", "-o", tmp_path / "r"), 1,
              r"1 NaN value\(s\), the first for gene 'G2' in sample 's05'")
    unlabelled = make_expression(n_samples=24, n_genes=6, seed=3).astype({"label": object})
    unlabelled.loc[3, "label"] = None
    unlabelled.to_csv(tmp_path / "lab.csv", index=False)
    result = run("fit", "--no-figures", tmp_path / "lab.csv", "-o", tmp_path / "r")
    one_error(result, 1, r"1 sample\(s\) have no label in 'label' \(s03\)")
    assert "adata" not in result.stderr
    adata = make_adata(make_expression(n_samples=24, n_genes=6, seed=3))
    adata.write_h5ad(tmp_path / "d.h5ad")
    one_error(run("fit", "--no-figures", tmp_path / "d.h5ad", "--layer", "counts", "-o", tmp_path / "r"), 2,
              r"--layer counts: d\.h5ad has no layer 'counts'; its layers: none")
    one_error(run("fit", "--no-figures", tmp_path / "d.h5ad", "--positive", "CASE", "-o", tmp_path / "r"), 2,
              r"--positive CASE: not a label; labels: case, ctrl")
    wide = make_expression(n_samples=24, n_genes=6, seed=3).set_index("sample").T
    wide.to_csv(tmp_path / "wide.csv", index_label="gene")
    one_error(run("fit", "--no-figures", tmp_path / "wide.csv", "-o", tmp_path / "r"), 1,
              r"no column 'label' but a row named so.*--genes-in-rows")
    assert not (tmp_path / "r").exists()


# ------------------------------------------------------------------------------ 11. smaller


def test_11_options(table, tmp_path):
    for seed in (-1, 2**70):
        result = run("fit", "--no-figures", table / "data.csv", "--seed", seed, "-o", tmp_path / f"s{seed}", "-q")
        assert result.exit_code == 0, result.stderr
    one_error(run("evaluate", table / "data.csv", "--train-size", "inf"), 2,
              r"--train-size must be a fraction")
    result = run("evaluate", table / "data.csv", "--splits", 1, "-j", 1)
    assert result.exit_code == 0, result.stderr
    assert "nan" not in result.stdout


def test_11_example_bytes(tmp_path, monkeypatch):
    monkeypatch.setattr(ardselect.datasets, "load_example",
                        lambda name: ardselect.datasets.leukaemia()[:, :20].copy())
    for name in ("g.csv.gz", "g.csv.bz2", "g.csv.xz"):
        assert run("example", "leukaemia", tmp_path / "1" / name, "-q").exit_code == 0
    time.sleep(1.1)  # a gzip header once held the time of writing
    for name in ("g.csv.gz", "g.csv.bz2", "g.csv.xz"):
        assert run("example", "leukaemia", tmp_path / "2" / name, "-q").exit_code == 0
        assert (tmp_path / "1" / name).read_bytes() == (tmp_path / "2" / name).read_bytes()
        assert not (tmp_path / "1" / name).read_bytes().startswith(b"sample_id")  # compressed


def _bad_input(tmp_path: Path, case: str) -> Path:
    """An input file of one odd kind."""
    if case == "plain .csv.xz":
        path = tmp_path / "data.csv.xz"
        path.write_text("sample,label,G1\ns1,a,1\n")
        return path
    adata = make_adata(make_expression(n_samples=24, n_genes=6, seed=3))
    if case == "text in X":
        text = np.asarray(adata.X).astype(str)
        text[1, 1] = "abc"
        adata = ad.AnnData(text, obs=adata.obs, var=adata.var)
    elif case == "repeated sample":
        adata.obs_names = ["s0"] * adata.n_obs
    elif case == "empty gene name":
        adata.var_names = ["G0", "", "G2", "G3", "G4", "G5"]
    elif case == "tab in a gene name":
        adata.var_names = ["G0", "G\t1", "G2", "G3", "G4", "G5"]
    elif case == "no samples":
        adata = adata[:0].copy()
    path = tmp_path / "data.h5ad"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # anndata's own, about repeated names
        adata.write_h5ad(path)
    return path


@pytest.mark.parametrize(("case", "pattern"), [
    ("plain .csv.xz", r"cannot read data\.csv\.xz as a CSV table"),
    ("text in X", r"X of data\.h5ad holds text, not numbers: 'abc' for gene 'G1' in sample 's01'"),
    ("repeated sample", r"1 duplicated sample name\(s\) \(s0\)"),
    ("empty gene name", r"gene name number 2 is empty"),
    ("tab in a gene name", r"gene name 'G\\t1' holds a tab"),
    ("no samples", r"data\.h5ad holds 0 samples x 6 genes: nothing to fit"),
])
def test_11_inputs(tmp_path, case, pattern):
    path = _bad_input(tmp_path, case)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # anndata's own, about repeated names
        result = run("fit", "--no-figures", path, "-o", tmp_path / "r")
    one_error(result, 1, pattern)
    assert not (tmp_path / "r").exists()


# ------------------------------------------------------------------------------ 12. library


def test_12_library(rng):
    X = rng.normal(size=(40, 6))
    y = (X[:, 0] + 0.3 * rng.normal(size=40) > 0).astype(int)
    for factor in (1e-200, 1e200):
        with pytest.raises(DataError, match="rescale X"):
            ardselect.ARDClassifier().fit(X * factor, y)
    with pytest.raises(DataError, match="every feature is constant"):
        ardselect.ARDClassifier(fit_intercept=False, constant_features="ignore").fit(
            np.ones_like(X), y)
    with np.errstate(all="ignore"), pytest.raises(DataError, match="non-finite evidence"):
        ep_probit(X * 1e200, y, np.ones(6))
    with pytest.raises(ValueError, match="loo_prob_scale must be a positive number"):
        ep_probit(X, y, np.ones(6), loo_prob_scale=float("nan"))
    with pytest.raises(ValueError, match="route must be None, 'weight' or 'sample'"):
        ep_probit(X, y, np.ones(6), route="dual")
    adata = make_adata(make_expression(n_samples=12, n_genes=4))
    adata.X[:, 1] = 3.0
    with pytest.raises(DataError, match=r"1 gene\(s\) are constant \(e\.g\. 'G1'\)"):
        ardselect.rank_genes(adata, "label",
                             estimator=ardselect.ARDClassifier(constant_features="raise"))
    raw = rng.uniform(100, 16_000, size=(30, 10))
    for factor in (1.0, 1e12):
        with pytest.raises(DataError, match="standardise X"):
            GibbsRVMClassifier(n_draws=5, n_burnin=5, n_chains=1).fit(raw * factor,
                                                                      np.arange(30) % 2)


# ------------------------------------------------------------------------------ 13. path cycles


def test_13_a_deletion_that_lowers_the_objective_does_not_cycle():
    # PBMC 'CD4+/CD25 T Reg' on raw.X deleted and re-added SPIB every five steps from about
    # step 120 to 215: each deletion cost more evidence than the penalty it saved.
    from ardselect.engine._sequential import ADD, DELETE, REESTIMATE

    cycle = [(1, DELETE, -3.0), (1, ADD, 1.0), (0, REESTIMATE, 1.5)] * 4
    loop = scripted_path_loop(cycle)._loop(np.array([1.0, 1.0]))
    assert [a for a in loop.taken if a == ("delete", 1)] == [("delete", 1)]

