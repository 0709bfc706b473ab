"""The ardselect command line: outputs, determinism, every bad-input case, atomicity."""

from __future__ import annotations

import inspect
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import anndata as ad
import numpy as np
import pandas as pd
import pytest
from ardselect_cli import _options as options
from ardselect_cli import main as cli
from ardselect_cli.evaluate import evaluate as evaluate_command
from ardselect_cli.fit import fit as fit_command
from typer.testing import CliRunner

import ardselect

runner = CliRunner()
FILES = ("genes.tsv", "genes.gmt", "genes.rnk", "frontier.tsv", "frontier.png", "path.tsv",
         "path.png", "inclusion.png", "certainty.png", "model.json", "report.html")


def run(*args):
    return runner.invoke(cli.app, [str(a) for a in args], catch_exceptions=False)


def assert_one_line_error(result, code, pattern):
    assert result.exit_code == code, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    errors = [ln for ln in lines if ln.startswith("ardselect: error: ")]
    assert len(errors) == 1, result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    import re

    assert re.search(pattern, errors[0]), errors[0]


def no_temporaries(folder: Path):
    return [p.name for p in folder.iterdir() if p.name.startswith(".")] == []


@pytest.fixture(scope="module")
def data(tmp_path_factory, expression):
    """A folder with binary (train/test) and multi-class tables."""
    d = tmp_path_factory.mktemp("data")
    df = expression(n_samples=48, n_genes=20, seed=11)
    df.iloc[:36].to_csv(d / "train.csv", index=False)
    df.iloc[36:].to_csv(d / "test.csv", index=False)
    df.to_csv(d / "all.csv", index=False)
    expression(n_samples=36, n_genes=15, n_classes=3, seed=12).to_csv(
        d / "multi.tsv", sep="\t", index=False
    )
    return d


@pytest.fixture(scope="module")
def fitted(data, tmp_path_factory):
    work = tmp_path_factory.mktemp("fit")
    out = work / "res"
    result = run("fit", data / "train.csv", "--out", out,
                 "--write-h5ad", work / "res.h5ad")
    return result, out, work


# ------------------------------------------------------------------------------ basics


def _console_script():
    script = Path(sys.executable).parent / "ardselect"
    if script.exists():
        return str(script)
    return shutil.which("ardselect")


def test_help_subprocess():
    script = _console_script()
    if script is None:
        pytest.skip("the ardselect console script is not installed (pip install -e .)")
    proc = subprocess.run([script, "--help"], capture_output=True, text=True, timeout=60,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    for command in ("fit", "predict", "evaluate", "example"):
        assert command in proc.stdout
    assert proc.stderr == ""


def test_version():
    result = run("--version")
    assert result.exit_code == 0
    assert result.stdout.strip() == f"ardselect {ardselect.__version__}"


def test_cli_choices_and_defaults_are_the_library_s():
    assert tuple(c.value for c in options.LogChoice) == ardselect.preprocessing.LOG_CHOICES
    assert tuple(c.value for c in options.Example) == ardselect.datasets.EXAMPLES
    assert tuple(c.value for c in options.Criterion) == ardselect.choices.CRITERIA
    clf = ardselect.ARDClassifier()
    assert options.DEFAULT_CRITERION.value == clf.criterion
    assert options.DEFAULT_CV_RULE.value == clf.cv_rule
    assert options.DEFAULT_MULTICLASS.value == clf.multiclass
    assert options.DEFAULT_LOG.value == ardselect.preprocessing.Preprocessor().log
    # Every choice the command line offers is one the estimator accepts, and no more.
    for name, enum in (("cv_rule", options.CvRule), ("multiclass", options.Multiclass)):
        assert {c.value for c in enum} == clf._constraints[name][0].options
    # The defaults each command shows are those.
    for command in (fit_command, evaluate_command):
        params = inspect.signature(command).parameters
        for name in ("cv_rule", "multiclass", "log"):
            assert params[name].default is getattr(options, f"DEFAULT_{name.upper()}")


def test_main_help_lists_every_criterion_and_the_default():
    result = run("--help")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    for criterion in ardselect.choices.CRITERIA:
        assert any(line.split()[:1] == [criterion] for line in lines), criterion
    default = next(line for line in lines if line.split()[:1] == ["cv"])
    assert "(default)" in default
    assert ardselect.ARDClassifier().criterion == "cv"


def test_fit_help_documents_defaults():
    result = run("fit", "--no-figures", "--help")
    assert result.exit_code == 0
    text = " ".join(result.stdout.split())
    for option in ("--label-key", "--criterion", "--positive", "--layer", "--out",
                   "--overwrite", "--quiet", "--log", "--floor", "--cap", "--standardize",
                   "--write-h5ad", "--genes-in-rows", "--labels"):
        assert option in text
    assert "16000" in text
    assert "[default: auto]" in text


# ------------------------------------------------------------------------------ fit outputs


def test_fit_outputs(fitted):
    result, out, work = fitted
    assert result.exit_code == 0, result.stderr
    assert sorted(p.name for p in out.iterdir()) == sorted(FILES)
    assert no_temporaries(work)
    genes = pd.read_csv(out / "genes.tsv", sep="\t", keep_default_na=False)
    assert list(genes.columns) == [
        "rank", "gene", "description", "selected", "pip", "credible_set", "set_probability",
        "alternatives", "contribution", "std_weight", "relevance",
        "weight", "weight_sd", "alpha", "entered_step", "log_bf_conditional", "z",
        "log_bf_marginal", "cv_frequency", "t_stat",
        "log2_fc", "direction", "note",
    ]
    assert len(genes) == 20
    assert genes["rank"].tolist() == list(range(1, 21))
    assert genes["selected"].dtype == bool  # written as true/false
    assert "\ttrue\t" in (out / "genes.tsv").read_text()
    assert set(genes["gene"][:2]) == {"G0", "G1"}
    gmt = [line.split("\t") for line in (out / "genes.gmt").read_text().splitlines()]
    assert [f[0] for f in gmt] == ["ctrl_up", "ctrl_down"]
    sel = genes[genes["selected"]]
    # Up and down by the data; no symbol column: identifiers, and the description says so.
    assert gmt[0][2:] == sel.loc[sel["direction"] == "up", "gene"].tolist()
    assert gmt[1][2:] == sel.loc[sel["direction"] == "down", "gene"].tolist()
    assert "with mean higher in label=ctrl than in case" in gmt[0][1]
    assert "identifiers" in gmt[0][1]
    rnk = pd.read_csv(out / "genes.rnk", sep="\t", header=None, names=["gene", "score"])
    assert sorted(rnk["gene"]) == sorted(genes["gene"])
    assert rnk["score"].is_monotonic_decreasing
    assert not rnk.loc[~rnk["gene"].isin(sel["gene"]), "score"].duplicated().any()
    scores = rnk.set_index("gene").loc[genes["gene"], "score"].to_numpy()
    np.testing.assert_array_equal(np.sign(scores), np.sign(genes["t_stat"]))
    frontier = pd.read_csv(out / "frontier.tsv", sep="\t", keep_default_na=False)
    assert frontier["chosen"].sum() == 1
    assert frontier.loc[frontier["chosen"], "n_genes"].item() == len(sel)
    path = pd.read_csv(out / "path.tsv", sep="\t", keep_default_na=False)
    assert path["chosen"].sum() == 1
    assert (out / "path.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    model = json.loads((out / "model.json").read_text())
    assert model["format"] == "ardselect-model"
    assert model["classes"] == ["case", "ctrl"]
    assert model["versions"]["ardselect"] == ardselect.__version__
    assert model["preprocessing"]["log"] == "log2"
    assert model["criterion"] == "cv"
    assert model["label_key"] == "label"
    assert "selected by cross-validation: held-out log-loss" in result.stdout
    assert "log2(x + 1) (auto" in result.stdout


def test_no_figures_writes_everything_else_the_same(fitted, data, tmp_path):
    _, out, _ = fitted
    bare = tmp_path / "bare"
    result = run("fit", data / "train.csv", "--out", bare, "--no-figures")
    assert result.exit_code == 0, result.stderr
    tables = [name for name in FILES if not name.endswith(".png")]
    assert sorted(p.name for p in bare.iterdir()) == sorted(tables)
    for name in ("genes.tsv", "genes.gmt", "genes.rnk", "frontier.tsv", "path.tsv"):
        assert (bare / name).read_bytes() == (out / name).read_bytes(), name
    wrote = result.stdout.split("wrote ", 1)[1]
    assert ".png" not in wrote
    assert f"{bare}/report.html" in wrote
    page = (bare / "report.html").read_text(encoding="utf-8")
    assert "<img" not in page
    assert "No figures: the run was given <code>--no-figures</code>." in page
    assert "No figures" not in (out / "report.html").read_text(encoding="utf-8")


def test_evaluate_no_figures(data, tmp_path):
    out = tmp_path / "ev"
    result = run("evaluate", data / "all.csv", "--splits", 1, "--out", out, "--no-figures",
                 "--max-steps", 5, "--no-l1")
    assert result.exit_code == 0, result.stderr
    names = {p.name for p in out.iterdir()}
    assert "calibration.png" not in names
    assert {"calibration.tsv", "report.html"} <= names
    assert "calibration.png" not in result.stdout
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "<img" not in page
    assert "<code>calibration.tsv</code> holds the reliability diagram's bins" in page


def test_fit_write_h5ad(fitted):
    _, _, work = fitted
    adata = ad.read_h5ad(work / "res.h5ad")
    for col in ("ardselect_rank", "ardselect_selected", "ardselect_weight"):
        assert col in adata.var.columns
    assert "random_state" not in adata.uns["ardselect"]["params"]
    assert len(ardselect.get.path_df(adata)) > 1
    assert "label" in adata.obs


def test_fit_deterministic(fitted, data, tmp_path):
    _, out, _ = fitted
    again = tmp_path / "again"
    result = run("fit", data / "train.csv", "--out", again, "--quiet")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == ""
    for name in FILES:
        if name == "report.html":  # the same page but for the command line it shows
            command = re.compile(rb"<pre>ardselect fit .*?</pre>")
            assert (command.sub(b"", (again / name).read_bytes())
                    == command.sub(b"", (out / name).read_bytes()))
            continue
        assert (again / name).read_bytes() == (out / name).read_bytes(), name


def test_predict_held_out_matches_estimator(fitted, data, tmp_path):
    _, out, _ = fitted
    pred = tmp_path / "pred.tsv"
    result = run("predict", out / "model.json", data / "test.csv", "--out", pred)
    assert result.exit_code == 0, result.stderr
    assert "misclassified (label)" in result.stderr
    table = pd.read_csv(pred, sep="\t")
    assert list(table.columns) == ["sample", "label", "predicted", "prob_case", "prob_ctrl"]
    train = pd.read_csv(data / "train.csv")
    test = pd.read_csv(data / "test.csv")
    genes = [c for c in train.columns if c.startswith("G")]
    res = ardselect.fit_signature(ardselect.ExpressionData(
        X=train[genes].to_numpy(), labels=train["label"].to_numpy(), var_names=pd.Index(genes),
        obs_names=pd.Index(train["sample"].astype(str)), label_key="label"))
    expected = res.estimator.predict_proba(res.preprocessing.transform(test[genes].to_numpy()))
    np.testing.assert_allclose(table[["prob_case", "prob_ctrl"]].to_numpy(), expected,
                               rtol=0, atol=1e-10)
    assert (table["predicted"] == np.where(expected[:, 1] > 0.5, "ctrl", "case")).all()


def test_predict_to_stdout(fitted, data):
    _, out, _ = fitted
    result = run("predict", out / "model.json", data / "test.csv")
    assert result.exit_code == 0
    assert result.stdout.splitlines()[0] == "sample\tlabel\tpredicted\tprob_case\tprob_ctrl"
    assert len(result.stdout.splitlines()) == 13


def test_predict_missing_genes(fitted, data, tmp_path):
    _, out, _ = fitted
    model = json.loads((out / "model.json").read_text())
    lacking = pd.read_csv(data / "test.csv").drop(columns=model["features"][:2])
    lacking.to_csv(tmp_path / "lack.csv", index=False)
    result = run("predict", out / "model.json", tmp_path / "lack.csv", "-o", tmp_path / "p.tsv")
    n = len(model["features"])
    shown = ", ".join(model["features"][:2])
    assert_one_line_error(result, 1, rf"the data lack 2 of the model's {n} genes: {shown}")
    assert not (tmp_path / "p.tsv").exists()


def test_overwrite(fitted, data, tmp_path):
    out = tmp_path / "res"
    out.mkdir()
    (out / "genes.tsv").write_text("old")
    (out / "rnk").mkdir()
    (out / "rnk" / "a.rnk").write_text("old")
    result = run("fit", data / "train.csv", "--out", out, "--quiet")
    assert_one_line_error(result, 2, r"output folder .*res already exists; use --overwrite")
    assert (out / "genes.tsv").read_text() == "old"
    result = run("fit", data / "train.csv", "--out", out, "--quiet", "--overwrite")
    assert result.exit_code == 0, result.stderr
    assert sorted(p.name for p in out.iterdir()) == sorted(FILES)
    assert no_temporaries(tmp_path)
    assert (out / "genes.tsv").read_bytes() == (fitted[1] / "genes.tsv").read_bytes()


def test_overwrite_never_replaces_the_input_or_files_it_did_not_write(data, tmp_path,
                                                                       monkeypatch):
    proj = tmp_path / "proj"
    proj.mkdir()
    shutil.copy(data / "train.csv", proj / "data.csv")
    (proj / "notes.txt").write_text("mine")
    before = sorted(p.name for p in proj.iterdir())
    result = run("fit", proj / "data.csv", "--out", proj, "--overwrite", "-q")
    assert_one_line_error(result, 2, r"output folder .*proj holds the input .*data\.csv; it is "
                                     r"replaced as a whole, so give a new folder")
    monkeypatch.chdir(proj)
    result = run("fit", "data.csv", "--out", ".", "--overwrite", "-q")
    assert_one_line_error(result, 2, r"output folder \. holds the input data\.csv")
    (proj / "res").mkdir()
    (proj / "res" / "notes.txt").write_text("mine")
    result = run("evaluate", "data.csv", "-o", "res", "--overwrite", "--splits", "1", "-q")
    assert_one_line_error(result, 2, r"output folder res holds files ardselect did not write "
                                     r"\(notes\.txt\)")
    result = run("predict", "res/notes.txt", "data.csv", "-o", "data.csv", "--overwrite")
    assert_one_line_error(result, 2, r"file data\.csv is the input data\.csv itself")
    assert sorted(p.name for p in proj.iterdir()) == [*before, "res"]
    assert (proj / "res" / "notes.txt").read_text() == "mine"
    assert (proj / "data.csv").read_bytes() == (data / "train.csv").read_bytes()


@pytest.mark.parametrize(("out", "h5ad", "pattern"), [
    ("res", "res/annot.h5ad", r"--write-h5ad res/annot\.h5ad is inside the output folder res"),
    ("same.h5ad", "same.h5ad", r"--write-h5ad same\.h5ad and --out same\.h5ad are the same"),
    ("res", "data.h5ad", r"file data\.h5ad is the input data\.h5ad itself"),
])
def test_write_h5ad_never_collides(adata_factory, tmp_path, monkeypatch, out, h5ad, pattern):
    monkeypatch.chdir(tmp_path)
    adata_factory(n_samples=12, n_genes=4).write_h5ad("data.h5ad")
    result = run("fit", "data.h5ad", "--out", out, "--write-h5ad", h5ad, "--overwrite", "-q")
    assert_one_line_error(result, 2, pattern)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.h5ad"]


# ------------------------------------------------------------------------------ multi-class, inputs


def test_multiclass(data, tmp_path):
    out = tmp_path / "m"
    result = run("fit", data / "multi.tsv", "-g", "label", "-o", out)
    assert result.exit_code == 0, result.stderr
    genes = pd.read_csv(out / "genes.tsv", sep="\t", keep_default_na=False)
    assert genes.columns[0] == "class"
    assert len(genes) == 45
    for k in range(3):
        # Class k vs the rest: all three planted markers are informative (G_k up in the class,
        # the others up in the rest); the class's own must be in, with a positive weight, and the
        # top-ranked gene is one of the three (by contribution, another class's marker can be first).
        block = genes[genes["class"] == f"class{k}"].set_index("gene")
        assert block.loc[f"G{k}", "selected"]
        assert block.loc[f"G{k}", "weight"] > 0
        assert block.index[0] in {"G0", "G1", "G2"}
        assert block.loc[f"G{k}", "rank"] <= 3
    gmt = [ln.split("\t")[0] for ln in (out / "genes.gmt").read_text().splitlines()]
    genes = pd.read_csv(out / "genes.tsv", sep="\t", keep_default_na=False)
    sel = genes[genes["selected"]]
    # One set per class and direction that holds a selected gene, no empty set.
    assert gmt == [f"{c}_{d}" for c in dict.fromkeys(sel["class"]) for d in ("up", "down")
                   if ((sel["class"] == c) & (sel["direction"] == d)).any()]
    assert sorted(p.name for p in (out / "rnk").iterdir()) == [f"class{k}.rnk" for k in range(3)]
    assert "rnk/ (3 .rnk files)" in result.stdout
    pred = run("predict", out / "model.json", data / "multi.tsv")
    assert pred.exit_code == 0
    table = pd.read_csv(pd.io.common.StringIO(pred.stdout), sep="\t")
    probs = table[["prob_class0", "prob_class1", "prob_class2"]].to_numpy()
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, atol=1e-9)
    assert (table["predicted"] == table["label"]).mean() > 0.8


def test_multiclass_shared(data, tmp_path):
    out = tmp_path / "s"
    result = run("fit", "--no-figures", data / "multi.tsv", "-g", "label", "-o", out, "--multiclass", "shared")
    assert result.exit_code == 0, result.stderr
    genes = pd.read_csv(out / "genes.tsv", sep="\t", keep_default_na=False)
    chosen = [set(g.loc[g["selected"], "gene"]) for _, g in genes.groupby("class")]
    assert len(chosen) == 3
    assert all(c == chosen[0] for c in chosen)  # one gene set for every class
    assert {"G0", "G1", "G2"} <= chosen[0]
    pred = run("predict", out / "model.json", data / "multi.tsv")
    assert pred.exit_code == 0
    table = pd.read_csv(pd.io.common.StringIO(pred.stdout), sep="\t")
    assert (table["predicted"] == table["label"]).mean() > 0.8
    bad = run("fit", "--no-figures", data / "multi.tsv", "-g", "label", "-o", tmp_path / "b",
              "--multiclass", "joint")
    assert bad.exit_code == 2
    assert "multiclass" in bad.stderr
    assert not (tmp_path / "b").exists()


def test_gct_with_cls(data, tmp_path):
    df = pd.read_csv(data / "train.csv")
    adata = ad.AnnData(
        df.filter(like="G").to_numpy(),
        obs=pd.DataFrame(index=df["sample"].to_numpy()),
        var=pd.DataFrame({"d": [f"gene {c}" for c in df.filter(like="G").columns]},
                         index=df.filter(like="G").columns),
    )
    ardselect.io.write_gct(adata, tmp_path / "x.gct", description_key="d")
    ardselect.io.write_cls(df["label"], tmp_path / "x.cls")
    result = run("fit", "--no-figures", tmp_path / "x.gct", "--out", tmp_path / "noLabels")
    assert_one_line_error(result, 2, r"label key 'label' not found in x.gct; available: none \(give"
                                     r" labels with --labels FILE\)")
    result = run("fit", "--no-figures", tmp_path / "x.gct", "--labels", tmp_path / "x.cls", "--out",
                 tmp_path / "g", "--quiet")
    assert result.exit_code == 0, result.stderr
    genes = pd.read_csv(tmp_path / "g" / "genes.tsv", sep="\t", keep_default_na=False)
    assert genes["description"].str.startswith("gene G").all()
    assert set(genes["gene"][:2]) == {"G0", "G1"}


def test_genes_in_rows(data, tmp_path):
    df = pd.read_csv(data / "train.csv")
    t = df.set_index("sample").drop(columns="label").T
    t.index.name = "gene"
    t.to_csv(tmp_path / "t.csv")
    df[["sample", "label"]].to_csv(tmp_path / "labels.csv", index=False)
    result = run("fit", "--no-figures", tmp_path / "t.csv", "--genes-in-rows", "--labels", tmp_path / "labels.csv",
                 "-o", tmp_path / "r", "--quiet")
    assert result.exit_code == 0, result.stderr


def test_h5ad_sparse_layer_and_raw(adata_factory, tmp_path):
    import scipy.sparse as sp

    adata = adata_factory(n_samples=36, n_genes=12, seed=6)
    counts = np.round(adata.X / 20.0)
    adata.layers["counts"] = sp.csr_matrix(counts)
    adata.raw = ad.AnnData(np.log1p(counts), var=adata.var)
    path = tmp_path / "sc.h5ad"
    adata.write_h5ad(path)
    result = run("fit", "--no-figures", path, "--layer", "counts", "-o", tmp_path / "layer", "-q")
    assert result.exit_code == 0, result.stderr
    model = json.loads((tmp_path / "layer" / "model.json").read_text())
    assert model["preprocessing"]["log"] == "log2"  # integer counts: auto picks log2(x + 1)
    pred = run("predict", tmp_path / "layer" / "model.json", path, "--layer", "counts")
    assert pred.exit_code == 0, pred.stderr
    assert "misclassified (label)" in pred.stderr
    result = run("fit", "--no-figures", path, "--use-raw", "-o", tmp_path / "raw", "-q")
    assert result.exit_code == 0, result.stderr
    model = json.loads((tmp_path / "raw" / "model.json").read_text())
    assert model["preprocessing"]["log"] == "none"  # raw holds log values
    result = run("fit", "--no-figures", path, "--layer", "nope", "-o", tmp_path / "x")
    assert_one_line_error(result, 2, r"--layer nope: sc\.h5ad has no layer 'nope'; its layers: "
                                     r"counts$")
    result = run("evaluate", path, "--layer", "nope", "-o", tmp_path / "x")
    assert_one_line_error(result, 2, r"--layer nope: sc\.h5ad has no layer 'nope'")
    # Read lazily, the layer asked for is the one read.
    result = run("fit", "--no-figures", path, "--layer", "counts", "--lazy", "-o", tmp_path / "lazy", "-q")
    assert result.exit_code == 0, result.stderr
    model = json.loads((tmp_path / "lazy" / "model.json").read_text())
    assert model["input"]["layer"] == "counts"
    assert model["preprocessing"]["log"] == "log2"


@pytest.mark.parametrize("command", ["fit", "evaluate"])
def test_unknown_positive_class_is_a_usage_error(data, tmp_path, command):
    result = run(command, data / "train.csv", "--positive", "Case", "-o", tmp_path / "r")
    assert_one_line_error(result, 2, r"--positive Case: not a label; labels: case, ctrl$")


def test_transposed_table_suggests_genes_in_rows(data, tmp_path):
    # (labels as words make every sample column text; as numbers, the label row a gene)
    table = pd.read_csv(data / "train.csv").set_index("sample").T
    table.to_csv(tmp_path / "wide.csv", index_label="gene")
    coded = table.copy()
    coded.loc["label"] = (coded.loc["label"] == "case").astype(int)
    coded.to_csv(tmp_path / "coded.csv", index_label="gene")
    for name in ("wide.csv", "coded.csv"):
        result = run("fit", "--no-figures", tmp_path / name, "-o", tmp_path / "r")
        assert_one_line_error(result, 1, rf"{name[:-4]}\.csv has no column 'label' but a row named "
                                         r"so: its genes look to be in rows and its samples in "
                                         r"columns; read it with --genes-in-rows")
        assert "warning" not in result.stderr
    result = run("fit", "--no-figures", tmp_path / "wide.csv", "--genes-in-rows", "-o", tmp_path / "r", "-q",
                 "--criterion", "loo")
    assert result.exit_code == 0, result.stderr


def test_genes_in_rows_without_a_label_row_suggests_genes_in_rows(tmp_path):
    # No label row to find: the hint comes from the table's shape, its row ids, or a label file
    # whose samples are the table's columns.
    import ardselect

    rng = np.random.default_rng(0)
    values = rng.gamma(2.0, 50.0, size=(120, 12)).round(2)
    samples = [f"s{i:02d}" for i in range(12)]
    for name, ids in (("ensembl.csv", [f"ENSG{i:011d}" for i in range(120)]),
                      ("symbols.tsv", [f"GENE{i}" for i in range(120)])):
        pd.DataFrame(values, index=pd.Index(ids, name="gene"), columns=samples).to_csv(
            tmp_path / name, sep="\t" if name.endswith(".tsv") else ",")
    reason = {"ensembl.csv": r"its row ids look like gene ids \(ENSG00000000000, ",
              "symbols.tsv": r"it has 120 rows and only 12 numeric columns"}
    for name, why in reason.items():
        for command in ("fit", "evaluate"):
            result = run(command, tmp_path / name, "-o", tmp_path / "r")
            assert_one_line_error(result, 2, rf"label key 'label' not found in {name}, and {why}"
                                             r".*: its genes look to be in rows and its samples in "
                                             r"columns; read it with --genes-in-rows")
            assert not (tmp_path / "r").exists()
        with pytest.raises(ardselect.exceptions.LabelError, match=rf"{why}.*genes_in_rows=True") as caught:
            ardselect.io.ExpressionData.read(tmp_path / name, "label")
        assert caught.value.rule == "obs_column"
    labels = pd.DataFrame({"sample": samples, "label": ["a", "b"] * 6})
    labels.to_csv(tmp_path / "labels.csv", index=False)
    result = run("fit", "--no-figures", tmp_path / "ensembl.csv", "--labels", tmp_path / "labels.csv",
                 "-o", tmp_path / "r")
    assert_one_line_error(result, 1, r"the samples of labels\.csv are columns of ensembl\.csv, not "
                                     r"rows: .* read it with --genes-in-rows")
    # A table with its samples in rows and no label column keeps the plain message.
    wide = pd.DataFrame(values.T, index=pd.Index(samples, name="sample"),
                        columns=[f"G{i}" for i in range(120)])
    wide.to_csv(tmp_path / "wide.csv")
    result = run("fit", "--no-figures", tmp_path / "wide.csv", "-o", tmp_path / "r")
    assert_one_line_error(result, 2, r"label key 'label' not found in wide\.csv; available: none "
                                     r"\(give labels with --labels FILE\)$")


# ------------------------------------------------------------------------------ bad input


def test_missing_file(tmp_path):
    result = run("fit", "--no-figures", tmp_path / "nope.h5ad", "-o", tmp_path / "r")
    assert_one_line_error(result, 1, r"file not found: .*nope\.h5ad")
    assert not (tmp_path / "r").exists()


def test_wrong_extension(data, tmp_path):
    fake = tmp_path / "x.h5ad"
    shutil.copy(data / "train.csv", fake)
    result = run("fit", "--no-figures", fake, "-o", tmp_path / "r")
    assert_one_line_error(result, 1, r"x\.h5ad is not an HDF5/h5ad file")
    result = run("fit", "--no-figures", data / "train.csv", "--layer", "counts", "-o", tmp_path / "r")
    assert_one_line_error(result, 2, r"--layer and --use-raw apply to \.h5ad and \.zarr input only")
    (tmp_path / "x.xlsx").write_text("x")
    result = run("fit", "--no-figures", tmp_path / "x.xlsx", "-o", tmp_path / "r")
    assert_one_line_error(result, 1, r"cannot tell the format of x\.xlsx")
    assert not (tmp_path / "r").exists()


def test_corrupted_h5ad(adata_factory, tmp_path):
    path = tmp_path / "c.h5ad"
    adata_factory(n_samples=10, n_genes=5).write_h5ad(path)
    blob = bytearray(path.read_bytes())
    path.write_bytes(bytes(blob[: len(blob) // 2]))
    result = run("fit", "--no-figures", path, "-o", tmp_path / "r")
    assert_one_line_error(result, 1, r"cannot read c\.h5ad as h5ad \(corrupted or truncated\?\)")


def test_label_key_missing_lists_available(adata_factory, tmp_path):
    adata = adata_factory(n_samples=10, n_genes=5)
    adata.obs["batch"] = "b"
    adata.write_h5ad(tmp_path / "a.h5ad")
    result = run("fit", "--no-figures", tmp_path / "a.h5ad", "-g", "cell_type", "-o", tmp_path / "r")
    assert_one_line_error(result, 2, r"label key 'cell_type' not found in a\.h5ad; available: "
                                     r"label, batch")


def test_single_class(expression, tmp_path):
    df = expression(n_samples=10, n_genes=4)
    df["label"] = "ctrl"
    df.to_csv(tmp_path / "one.csv", index=False)
    result = run("fit", "--no-figures", tmp_path / "one.csv", "-o", tmp_path / "r")
    assert_one_line_error(result, 1, r"single class \('ctrl'\)")
    assert not (tmp_path / "r").exists()


def test_nan_in_matrix(expression, tmp_path):
    df = expression(n_samples=10, n_genes=4)
    df.loc[3, "G2"] = np.nan
    df.to_csv(tmp_path / "nan.csv", index=False)
    result = run("fit", "--no-figures", tmp_path / "nan.csv", "-o", tmp_path / "r")
    assert_one_line_error(result, 1, r"the data contain 1 NaN value\(s\), the first for gene "
                                     r"'G2' in sample 's03'; impute them or drop")
    result = run("evaluate", tmp_path / "nan.csv", "-o", tmp_path / "r", "--splits", "1")
    assert_one_line_error(result, 1, r"1 NaN value\(s\), the first for gene 'G2' in sample 's03'")


def test_samples_without_label_are_named(expression, tmp_path):
    df = expression(n_samples=10, n_genes=4).astype({"label": object})
    df.loc[[2, 5], "label"] = None
    df.to_csv(tmp_path / "t.csv", index=False)
    result = run("fit", "--no-figures", tmp_path / "t.csv", "-o", tmp_path / "r")
    assert_one_line_error(result, 1, r"2 sample\(s\) have no label in 'label' \(s02, s05\); give "
                                     r"them one or drop them from the data")
    result = run("evaluate", tmp_path / "t.csv", "-o", tmp_path / "r", "--splits", "1")
    assert_one_line_error(result, 1, r"2 sample\(s\) have no label in 'label' \(s02, s05\)")
    assert "adata" not in result.stderr


def test_samples_with_empty_labels_are_named(expression, tmp_path):
    # Whitespace is no class: refused by name, not fitted as a class nor counted as the rest.
    df = expression(n_samples=10, n_genes=4).astype({"label": object})
    df.loc[[2, 5], "label"] = " "
    df.to_csv(tmp_path / "t.csv", index=False)
    positive = str(df.loc[0, "label"])
    result = run("fit", "--no-figures", tmp_path / "t.csv", "--positive", positive, "-o", tmp_path / "r")
    assert_one_line_error(result, 1, r"2 sample\(s\) have an empty label in 'label' \(s02, s05\)")
    assert not (tmp_path / "r").exists()
    result = run("evaluate", tmp_path / "t.csv", "-o", tmp_path / "r", "--splits", "1")
    assert_one_line_error(result, 1, r"2 sample\(s\) have an empty label in 'label' \(s02, s05\)")
    assert not (tmp_path / "r").exists()


def test_duplicated_genes(expression, tmp_path):
    df = expression(n_samples=10, n_genes=4)
    text = df.to_csv(index=False).replace("G3", "G1", 1)
    (tmp_path / "dup.csv").write_text(text)
    result = run("fit", "--no-figures", tmp_path / "dup.csv", "-o", tmp_path / "r")
    assert_one_line_error(result, 1, r"1 duplicated gene name\(s\) \(G1\)")


def test_bad_model_file(data, tmp_path):
    (tmp_path / "m.json").write_text("[1, 2]")
    result = run("predict", tmp_path / "m.json", data / "test.csv")
    assert_one_line_error(result, 1, r"m\.json is not an ardselect model")


def test_write_h5ad_needs_extension(data, tmp_path):
    result = run("fit", "--no-figures", data / "train.csv", "-o", tmp_path / "r", "--write-h5ad", tmp_path / "x.csv")
    assert_one_line_error(result, 2, r"--write-h5ad needs a \.h5ad file name")


def test_interrupt_leaves_no_partial_output(data, tmp_path, monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(ardselect.pl, "save_png", interrupted)
    out = tmp_path / "r"
    result = run("fit", data / "train.csv", "-o", out, "--write-h5ad", tmp_path / "r.h5ad")
    assert_one_line_error(result, 130, "interrupted; no output was written")
    assert list(tmp_path.iterdir()) == []
    # With --overwrite, an interrupted run keeps the previous results intact.
    out.mkdir()
    (out / "genes.tsv").write_text("previous")
    result = run("fit", data / "train.csv", "-o", out, "--overwrite")
    assert result.exit_code == 130
    assert [p.name for p in tmp_path.iterdir()] == ["r"]
    assert [p.name for p in out.iterdir()] == ["genes.tsv"]
    assert (out / "genes.tsv").read_text() == "previous"


def test_fit_without_matplotlib_asks_for_the_plot_extra(data, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now fails
    result = run("fit", data / "train.csv", "-o", tmp_path / "r")
    assert_one_line_error(result, 1, r"figures need matplotlib: pip install matplotlib \(the plot extra\)")
    assert list(tmp_path.iterdir()) == []  # refused before the fit, nothing written
    # Without the figures, matplotlib is not needed.
    result = run("fit", data / "train.csv", "-o", tmp_path / "r", "--no-figures", "-q",
                 "--criterion", "loo")
    assert result.exit_code == 0, result.stderr
    assert (tmp_path / "r" / "genes.tsv").is_file()


def test_unexpected_error_is_one_line(data, tmp_path, monkeypatch):
    def broken(*args, **kwargs):
        msg = "boom"
        raise RuntimeError(msg)

    monkeypatch.setattr(ardselect.io, "write_gmt", broken)
    monkeypatch.delenv("ARDSELECT_DEBUG", raising=False)
    result = run("fit", data / "train.csv", "-o", tmp_path / "r")
    assert_one_line_error(result, 1, r"internal error \(RuntimeError: boom\)")
    assert list(tmp_path.iterdir()) == []


def test_progress_handler_follows_the_path(adata_factory):
    """The CLI's logging handler receives every path step, with the original class labels."""
    import io
    import logging

    from ardselect_cli._util import PathProgress
    from rich.console import Console
    from rich.progress import Progress

    adata = adata_factory(n_samples=30, n_genes=8, n_classes=3, seed=4)
    progress = Progress(console=Console(file=io.StringIO(), force_terminal=True))
    log = logging.getLogger("ardselect.path")
    old = log.level
    log.setLevel(logging.DEBUG)
    for criterion, n_folds, per_fit in (("loo", 0, 1), ("cv", 6, 1)):  # 3 folds x 2 repeats
        n_paths = 3 * (1 + n_folds) * per_fit
        handler = PathProgress(progress, n_paths)
        log.addHandler(handler)
        try:
            with progress:
                folds = {"cv": 3, "cv_repeats": 2} if n_folds else {}
                ardselect.rank_genes(adata, "label", estimator=ardselect.ARDClassifier(
                    criterion=criterion, **folds))
        finally:
            log.removeHandler(handler)
        # One path per class, then (criterion="cv") one per class in every fold; the classes
        # run in parallel threads (n_jobs=-1), so their paths finish in any order.
        per_class = [c for c in ("class0", "class1", "class2") for _ in range(per_fit)]
        assert sorted(handler.labels) == sorted(per_class * (1 + n_folds))
        task = progress.tasks[-1]
        assert task.completed == n_paths - 1
        assert task.fields["step"].startswith("step ")
    log.setLevel(old)


# ------------------------------------------------------------------------------ evaluate, example


def test_evaluate(data, tmp_path):
    out = tmp_path / "ev"
    result = run("evaluate", data / "all.csv", "--splits", 3, "--train-size", 0.75, "--seed", 1,
                 "-j", 2, "-o", out)
    assert result.exit_code == 0, result.stderr
    methods = ["ARD-EP", "ARD-EP (loo)", "ARD-EP (evidence)", "L1-logistic"]
    splits = pd.read_csv(out / "splits.tsv", sep="\t")
    assert len(splits) == 12
    assert list(splits["method"][:4]) == methods
    assert (splits["n_train"] == 36).all()
    assert (splits["n_test"] == 12).all()
    summary = pd.read_csv(out / "summary.tsv", sep="\t")
    assert list(summary["method"]) == methods
    row = summary.iloc[0]
    sub = splits[splits["method"] == "ARD-EP"]["error_rate"]
    assert row["error_rate_mean"] == pytest.approx(sub.mean())
    assert row["error_rate_se"] == pytest.approx(sub.std(ddof=1) / np.sqrt(3))
    assert "± " in result.stdout
    # Not a terminal (a pipe, a log): the tables are whole, in ASCII, whatever their width.
    assert "…" not in result.stdout
    for text in ("| ARD-EP (evidence) |", "| L1-logistic ", "confidence - accuracy",
                 "if calibrated", "Jaccard (mean ± sd over pairs)"):
        assert text in result.stdout
    # Held-out predictions: sample ids, true and predicted labels, one probability per class; they
    # agree with the error counts, and the calibration files are written.
    pred = pd.read_csv(out / "predictions.tsv", sep="\t")
    assert len(pred) == 3 * 4 * 12
    samples = pd.read_csv(data / "all.csv")["sample"]
    assert set(pred["sample"]) <= set(samples.astype(str))
    prob = pred.filter(like="prob_")
    assert prob.shape[1] == 2
    np.testing.assert_allclose(prob.sum(axis=1), 1.0)
    wrong = (pred["predicted"] != pred["label"]).groupby([pred["split"], pred["method"]]).sum()
    for r in splits.itertuples():
        assert wrong[(r.split, r.method)] == r.errors
    calib = pd.read_csv(out / "calibration.tsv", sep="\t")
    assert set(calib["method"]) <= set(methods)
    assert calib.groupby("method")["n"].sum().eq(36).all()
    assert (out / "calibration.png").read_bytes()[:4] == b"\x89PNG"
    # How often each gene was selected, and how alike the selected sets are, per method.
    freq = pd.read_csv(out / "selection.tsv", sep="\t")
    assert list(freq.columns) == ["gene", *methods]
    genes = [c for c in pd.read_csv(data / "all.csv").columns if c.startswith("G")]
    assert sorted(freq["gene"]) == sorted(genes)
    for method in methods:
        mean_genes = splits.loc[splits["method"] == method, "genes"].mean()
        assert freq[method].sum() == pytest.approx(mean_genes)
    stab = pd.read_csv(out / "stability.tsv", sep="\t").set_index("method")
    assert list(stab.index) == methods
    assert ((stab["jaccard_mean"] >= 0) & (stab["jaccard_mean"] <= 1)).all()
    assert "most often selected by ARD-EP: G" in result.stdout
    assert "most often selected by L1-logistic" in result.stdout


def test_evaluate_with_baselines_and_groups(data, tmp_path):
    table = pd.read_csv(data / "all.csv")
    table.insert(2, "donor", [f"d{i // 4}" for i in range(len(table))])
    path = tmp_path / "grouped.csv"
    table.to_csv(path, index=False)
    out = tmp_path / "ev"
    result = run("evaluate", path, "--splits", 2, "--baselines", "--groups", "donor", "-j", 1,
                 "-o", out)
    assert result.exit_code == 0, result.stderr
    splits = pd.read_csv(out / "splits.tsv", sep="\t")
    assert {"L1-logistic", "elastic-net", "linear SVM", "top-k t-test + L2"} <= set(splits["method"])
    pred = pd.read_csv(out / "predictions.tsv", sep="\t")
    donor = dict(zip(table["sample"].astype(str), table["donor"], strict=True))
    size = table["donor"].value_counts()
    for _, sub in pred[pred["method"] == "L1-logistic"].groupby("split"):
        held = pd.Series([donor[s] for s in sub["sample"]]).value_counts()
        assert (held == size[held.index]).all()  # every held-out donor is held out whole
        assert len(held) < len(size)
    logo = pd.read_csv(out / "leave_group_out.tsv", sep="\t")
    assert list(logo["method"]) == ["ARD-EP", "ARD-EP (loo)", "ARD-EP (evidence)"]
    assert (logo["n_groups"] == len(size)).all()
    logo_pred = pd.read_csv(out / "leave_group_out_predictions.tsv", sep="\t")
    assert len(logo_pred) == 3 * len(table)
    assert "EP leave-one-donor-out from one fit" in result.stdout
    assert "whole donor groups held out" in result.stdout


@pytest.mark.parametrize(("args", "pattern"), [
    (["--pseudocount", -1], r"--pseudocount: The 'pseudocount' parameter of Preprocessor must be"),
    (["--floor", 10, "--cap", 5], r"--floor: floor \(10.0\) must be below cap \(5.0\)"),
])
@pytest.mark.parametrize("command", ["fit", "evaluate"])
def test_option_values_out_of_range_are_usage_errors(data, tmp_path, command, args, pattern):
    # They were "internal error" lines with exit code 1.
    result = run(command, data / "all.csv", "--out", tmp_path / "o", *args)
    assert_one_line_error(result, 2, pattern)
    assert not (tmp_path / "o").exists()


def test_evaluate_bad_train_size(data):
    result = run("evaluate", data / "all.csv", "--train-size", 100)
    assert_one_line_error(result, 1, r"--train-size 100 must be below the number of samples \(48\)")
    result = run("evaluate", data / "all.csv", "--train-size", 1.5)  # was a 1-sample training part
    assert_one_line_error(result, 2, r"--train-size must be a fraction in \(0, 1\) or a whole")
    # Training parts too small for a baseline's inner CV: which method, partition and sizes
    # (it was an "internal error"); the same for -j 0.
    result = run("evaluate", data / "all.csv", "--train-size", 4, "--splits", 1)
    assert_one_line_error(result, 1, r"L1-logistic could not be fitted on partition 1 \(4 "
                          r"training samples, the smallest class 2\): ")
    result = run("evaluate", data / "all.csv", "-j", 0)
    assert_one_line_error(result, 2, r"--n-jobs must be a number of workers \(1 or more\) or -1")
    for value in ("inf", "nan", "-inf"):  # inf was an internal error
        result = run("evaluate", data / "all.csv", "--train-size", value)
        assert_one_line_error(result, 2, rf"--train-size must be a fraction .* got {value}$")


@pytest.mark.parametrize("seed", [-1, 2**70])
def test_any_integer_is_a_seed(data, tmp_path, seed):
    # They were refused as out of the range of numpy seeds.
    for k in (1, 2):
        result = run("fit", "--no-figures", data / "train.csv", "--seed", seed, "-o", tmp_path / f"r{k}", "-q")
        assert result.exit_code == 0, result.stderr
    assert (tmp_path / "r1" / "genes.tsv").read_bytes() == (tmp_path / "r2" / "genes.tsv").read_bytes()
    result = run("evaluate", data / "all.csv", "--seed", seed, "--splits", 1, "-j", 1, "--no-l1")
    assert result.exit_code == 0, result.stderr
    from ardselect_cli._options import seed_value

    assert len({seed_value(v) for v in (-1, 1, 2**70, 2**32, 0)}) == 5
    assert seed_value(7) == 7
    assert 0 <= seed_value(seed) < 2**32


def test_one_partition_has_no_standard_errors(data):
    result = run("evaluate", data / "all.csv", "--splits", 1, "-j", 1)
    assert result.exit_code == 0, result.stderr
    assert "nan" not in result.stdout
    assert "one partition: no standard errors (--splits 2 or more for them)" in result.stdout


# The full 72 x 7129 set in each format; the CSV and GCT writers are also round-tripped on small
# data in test_io.py, so those two runs are in the slow set.
@pytest.mark.parametrize("name", ["golub.h5ad", pytest.param("golub.csv", marks=pytest.mark.slow),
                                  pytest.param("golub.gct", marks=pytest.mark.slow)])
def test_example(tmp_path, name):
    path = tmp_path / name
    result = run("example", "leukaemia", path)
    assert result.exit_code == 0, result.stderr
    labels = tmp_path / "golub.cls" if name.endswith(".gct") else None
    adata = ardselect.io.read_data(path, label_key="label", labels=labels)
    assert adata.shape == (72, 7129)
    assert adata.obs["label"].value_counts().to_dict() == {"ALL": 47, "AML": 25}
    ref = ardselect.datasets.leukaemia()
    np.testing.assert_array_equal(np.asarray(adata.X), np.asarray(ref.X))
    result = run("example", "leukaemia", path)
    assert_one_line_error(result, 2, "already exists; use --overwrite")


@pytest.mark.parametrize("name", ["g.csv.gz", "g.csv.bz2", "g.csv.xz", "g.csv.zip"])
def test_example_is_compressed_and_byte_identical(tmp_path, name, monkeypatch):
    # The gzip header once held the time of writing, and .bz2 / .xz names got plain text.
    import bz2
    import gzip
    import lzma
    import zipfile

    monkeypatch.setattr(ardselect.datasets, "load_example",
                        lambda name: ardselect.datasets.leukaemia()[:, :30].copy())
    first = tmp_path / "a" / name
    second = tmp_path / "b" / name
    for path in (first, second):
        result = run("example", "leukaemia", path, "-q")
        assert result.exit_code == 0, result.stderr
    assert first.read_bytes() == second.read_bytes()
    if first.suffix == ".zip":
        with zipfile.ZipFile(first) as archive:
            head = archive.read(name[:-4])[:15]
    else:
        opener = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}[first.suffix]
        with opener(first) as fh:
            head = fh.read(15)
    assert head == b"sample_id,label"
    assert ardselect.io.read_data(first, label_key="label").shape == (72, 30)


def test_example_default_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = run("example", "leukaemia", "-q")
    assert result.exit_code == 0
    assert os.listdir(tmp_path) == ["golub_leukaemia.h5ad"]


@pytest.mark.slow
def test_golub_fit_end_to_end(tmp_path):
    """The quick start's job: the bundled leukaemia data, Dudoit preprocessing, LOO model choice."""
    h5ad = tmp_path / "golub.h5ad"
    assert run("example", "leukaemia", h5ad, "-q").exit_code == 0
    result = run("fit", "--no-figures", h5ad, "--floor", 100, "--cap", 16000, "--log", "log10", "--positive",
                 "AML", "-o", tmp_path / "res")
    assert result.exit_code == 0, result.stderr
    assert "floor 100, cap 16000, log10(x), dropped" in result.stdout  # pseudocount 0 by default
    genes = pd.read_csv(tmp_path / "res" / "genes.tsv", sep="\t", keep_default_na=False)
    assert len(genes) == 7129
    assert genes["description"].iloc[0] != ""


@pytest.mark.parametrize("command", ["fit", "evaluate"])
def test_layer_and_use_raw_exclude_each_other(command, adata_factory, tmp_path):
    path = tmp_path / "a.h5ad"
    adata_factory(n_samples=12, n_genes=6).write_h5ad(path)
    result = run(command, path, "--layer", "counts", "--use-raw", "-o", tmp_path / "r")
    assert_one_line_error(result, 2, r"give --layer or --use-raw, not both")
    assert not (tmp_path / "r").exists()


def test_third_party_warnings_are_not_shown_as_ours(capsys):
    # Issue 12, item 9: anndata's warnings were printed as "ardselect: warning: ...".
    import warnings as _w
    from pathlib import Path as _Path

    from ardselect_cli._util import _relay_warnings

    import ardselect.estimators._classifier as ours

    foreign = [_w.WarningMessage("Element '/X' was written without encoding metadata", UserWarning,
                                 "/x/lib/python3.11/site-packages/anndata/_io/h5ad.py", 10)] * 34
    mine = [_w.WarningMessage("3 of 30 features are constant", ours.ConstantFeatureWarning,
                              "/somewhere/else.py", 1),
            _w.WarningMessage("path stopped", UserWarning, str(_Path(ours.__file__)), 1)]
    _relay_warnings(foreign + mine, debug=False)
    err = capsys.readouterr().err.splitlines()
    assert "ardselect: warning: 3 of 30 features are constant" in err
    assert "ardselect: warning: path stopped" in err
    assert "ardselect: note: 34 warning(s) from anndata, not about your results " \
           "(ARDSELECT_DEBUG=1 shows them)" in err
    assert not any("encoding metadata" in line for line in err)
    _relay_warnings(foreign, debug=True)
    assert "anndata warned: Element '/X'" in capsys.readouterr().err


def test_use_raw_model_predicts_on_raw(adata_factory, tmp_path):
    # Issue 12, item 1: a --use-raw model scored adata.X (here: unrelated values) without a word.
    import anndata as ad

    adata = adata_factory(n_samples=40, n_genes=12, seed=21)
    raw = adata.copy()
    rng = np.random.default_rng(0)
    adata.X = rng.permutation(np.asarray(adata.X, dtype=float).ravel()).reshape(adata.shape)
    adata.raw = raw
    path = tmp_path / "d.h5ad"
    adata.write_h5ad(path)
    out = tmp_path / "r"
    result = run("fit", "--no-figures", path, "--use-raw", "--out", out, "--quiet")
    assert result.exit_code == 0, result.stderr
    model = json.loads((out / "model.json").read_text())
    assert model["input"] == {"layer": None, "use_raw": True}
    pred_file = tmp_path / "p.tsv"
    result = run("predict", out / "model.json", path, "-o", pred_file)
    assert result.exit_code == 0, result.stderr
    pred = pd.read_csv(pred_file, sep="\t")
    assert (pred["predicted"] == pred["label"]).mean() > 0.9  # scored on raw.X, as fitted
    # Data without raw are refused, and so is a --layer that contradicts the model.
    bare = ad.AnnData(X=np.asarray(raw.X), obs=raw.obs, var=raw.var)
    bare.write_h5ad(tmp_path / "bare.h5ad")
    result = run("predict", out / "model.json", tmp_path / "bare.h5ad", "-o", tmp_path / "q.tsv")
    assert_one_line_error(result, 1, "fitted on raw.X")
    assert not (tmp_path / "q.tsv").exists()
    result = run("predict", out / "model.json", path, "--layer", "counts", "-o", tmp_path / "q.tsv")
    assert_one_line_error(result, 2, "--layer counts would score other values")


def test_predict_refuses_a_layer_for_a_model_fitted_on_x(adata_factory, tmp_path):
    # PBMC: a model fitted on the scaled X, applied with --layer lognorm, misclassified 290 of
    # 700 cells without a warning (the model's scaling hides the change of values).
    adata = adata_factory(n_samples=24, n_genes=6, seed=3)
    adata.layers["lognorm"] = np.log1p(adata.X)
    path = tmp_path / "d.h5ad"
    adata.write_h5ad(path)
    result = run("fit", "--no-figures", path, "--out", tmp_path / "r", "--criterion", "loo", "-q")
    assert result.exit_code == 0, result.stderr
    result = run("predict", tmp_path / "r" / "model.json", path, "--layer", "lognorm",
                 "-o", tmp_path / "p.tsv")
    assert_one_line_error(result, 2, r"the model was fitted on X and applies it itself; "
                                     r"--layer lognorm would score other values")
    assert not (tmp_path / "p.tsv").exists()


# ------------------------------------------------------------------ numeric non-gene columns


@pytest.fixture(scope="module")
def coded(tmp_path_factory, expression):
    """Issue 12, item 3: a table with a numeric `code` column whose sign is the label."""
    d = tmp_path_factory.mktemp("coded")
    df = expression(n_samples=30, n_genes=12, seed=31)
    rng = np.random.default_rng(31)
    sign = np.where(df["label"] == "case", 1.0, -1.0)
    df.insert(2, "code", sign * rng.uniform(0.5, 2.0, size=len(df)))
    df.to_csv(d / "coded.csv", index=False)
    df.drop(columns="code").assign(y=np.where(sign > 0, 7.0, 3.0)).to_csv(d / "y.csv", index=False)
    return d


def test_annotation_named_column_is_not_a_gene(coded, tmp_path):
    out = tmp_path / "r"
    result = run("fit", "--no-figures", coded / "coded.csv", "--out", out)
    assert result.exit_code == 0, result.stderr
    assert ("ardselect: warning: 1 numeric column(s) of coded.csv read as sample annotations, not "
            "genes, and are left out of the genes: 'code' (name them with --gene-columns to use "
            "them as genes)") in result.stderr
    genes = pd.read_csv(out / "genes.tsv", sep="\t")
    assert "code" not in set(genes["gene"])
    assert len(genes) == 12
    # The auto log is decided on the real genes, and the decision is printed with its reason.
    assert "log2(x + 1) (auto: 12 of 12 genes reach above 50" in result.stdout


def test_gene_columns_and_drop_choose_the_genes(coded, tmp_path):
    result = run("fit", "--no-figures", coded / "coded.csv", "--gene-columns", "G0:G11", "--out", tmp_path / "a",
                 "-q")
    assert result.exit_code == 0, result.stderr
    assert "warning" not in result.stderr
    genes = pd.read_csv(tmp_path / "a" / "genes.tsv", sep="\t")
    assert sorted(genes["gene"]) == sorted(f"G{j}" for j in range(12))
    result = run("fit", "--no-figures", coded / "coded.csv", "--drop", "code", "--gene-columns", "G0,G1",
                 "--gene-columns", "G2:G5", "--out", tmp_path / "b", "-q")
    assert result.exit_code == 0, result.stderr
    genes = pd.read_csv(tmp_path / "b" / "genes.tsv", sep="\t")
    assert sorted(genes["gene"]) == sorted(f"G{j}" for j in range(6))


def test_a_named_gene_with_negatives_is_refused_by_the_log(coded, tmp_path):
    # Forced to be a gene, `code` cannot take the automatic log2 of the count genes: an error
    # naming it, not a log silently switched off for every gene.
    result = run("fit", "--no-figures", coded / "coded.csv", "--gene-columns", "code,G0:G11", "--out",
                 tmp_path / "r")
    assert_one_line_error(result, 1, r"cannot take log2 \(auto: 12 of 13 genes reach above 50: "
                                     r"counts or intensities\): 1 gene\(s\) have values <= -1 "
                                     r"\('code'; minimum -\d")
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("command", ["fit", "evaluate"])
def test_a_gene_given_as_the_label_is_called_continuous(expression, tmp_path, command):
    # `-g G0` (51 distinct numbers) was diagnosed as "columns 'G1' ... encode the label".
    df = expression(n_samples=51, n_genes=5)
    df.to_csv(tmp_path / "t.csv", index=False)
    result = run(command, tmp_path / "t.csv", "-g", "G0", "-o", tmp_path / "r")
    assert_one_line_error(result, 1, r"the labels look continuous \(51 distinct numbers from ")
    assert not (tmp_path / "r").exists()


def test_column_encoding_the_label_is_refused(coded, tmp_path):
    result = run("fit", "--no-figures", coded / "y.csv", "--out", tmp_path / "r")
    assert_one_line_error(result, 1, r"column\(s\) 'y' encode the label 'label' \(a single value "
                                     r"within each class\): they cannot be genes; leave them out "
                                     r"with --drop y")
    assert not (tmp_path / "r").exists()
    result = run("fit", "--no-figures", coded / "y.csv", "--drop", "y", "--out", tmp_path / "r", "-q")
    assert result.exit_code == 0, result.stderr
    assert "y" not in set(pd.read_csv(tmp_path / "r" / "genes.tsv", sep="\t")["gene"])


@pytest.mark.parametrize(
    ("args", "code", "pattern"),
    [(["--drop", "nope"], 1, r"drop: 'nope' is not a numeric column of the table \(nor a "
                             r"FIRST:LAST range of them\); numeric columns: code, G0, G1"),
     (["--gene-columns", "G5:G1"], 1, r"range 'G5:G1' runs backwards"),
     (["--gene-columns", "G1", "--drop", "G1"], 1, r"'G1' are both dropped and gene columns"),
     (["--gene-columns", ","], 2, r"--gene-columns names no column")],
)
def test_bad_column_choices(coded, tmp_path, args, code, pattern):
    result = run("fit", "--no-figures", coded / "coded.csv", *args, "--out", tmp_path / "r")
    assert_one_line_error(result, code, pattern)


def test_column_choices_need_a_table(adata_factory, tmp_path):
    path = tmp_path / "d.h5ad"
    adata_factory(n_samples=12, n_genes=6).write_h5ad(path)
    result = run("fit", "--no-figures", path, "--drop", "G1", "--out", tmp_path / "r")
    assert_one_line_error(result, 2, r"--gene-columns and --drop apply to CSV/TSV tables only")


def test_predict_does_not_warn_about_annotation_columns(coded, tmp_path):
    out = tmp_path / "r"
    assert run("fit", "--no-figures", coded / "coded.csv", "--out", out, "-q").exit_code == 0
    result = run("predict", out / "model.json", coded / "coded.csv", "-o", tmp_path / "p.tsv")
    assert result.exit_code == 0, result.stderr
    assert "warning" not in result.stderr


# ------------------------------------------------------------------ summary and special outputs


def test_summary_tables_are_whole_when_piped(expression, tmp_path):
    # (on a terminal the description column is cut to 40 characters)
    table = expression(n_samples=24, n_genes=4, seed=5)
    long = "a gene description much longer than forty characters, kept whole"
    gct = tmp_path / "t.gct"
    genes = table.drop(columns="label").set_index("sample").T
    gct.write_text("#1.2\n4\t24\nName\tDescription\t" + "\t".join(genes.columns) + "\n"
                   + "".join(f"{g}\t{long} {g}\t" + "\t".join(f"{v:g}" for v in row) + "\n"
                             for g, row in genes.iterrows()))
    (tmp_path / "t.cls").write_text("24 2 1\n# case ctrl\n" + " ".join(table["label"]) + "\n")
    result = run("fit", "--no-figures", gct, "--labels", tmp_path / "t.cls", "-o", tmp_path / "r",
                 "--criterion", "loo")
    assert result.exit_code == 0, result.stderr
    assert f"{long} G0" in result.stdout
    assert "…" not in result.stdout
    assert "+--" in result.stdout  # ASCII, not box drawing


def test_summary_shows_what_the_rank_means(fitted):
    result, _, _ = fitted
    header = next(ln for ln in result.stdout.splitlines() if "rank" in ln and "gene" in ln)
    assert all(col in header for col in ("contribution", "direction", "in folds"))
    assert ("contribution: the gene's part of the model's separation of the class from the rest "
            "(ranks the genes)") in " ".join(result.stdout.split())


def test_show_zero_prints_no_table(data, tmp_path):
    result = run("fit", "--no-figures", data / "multi.tsv", "--show", "0", "--out", tmp_path / "r")
    assert result.exit_code == 0, result.stderr
    assert "rank" not in result.stdout
    assert "┏" not in result.stdout
    assert result.stdout.count("gene(s) selected by cross-validation") == 3
    result = run("fit", "--no-figures", data / "multi.tsv", "--show", "-1", "--out", tmp_path / "s")
    assert_one_line_error(result, 2, r"--show must be 0 or more, got -1")


def test_predict_writes_through_devices(fitted, data, tmp_path):
    _, out, _ = fitted
    result = run("predict", out / "model.json", data / "test.csv", "-o", "/dev/null")
    assert result.exit_code == 0, result.stderr
    assert Path("/dev/null").is_char_device()
    # Like `-o /dev/stdout > file`: a link into /proc/self/fd whose descriptor is a regular file.
    # It is written through (the file gets the table) and the link itself is left alone.
    target = tmp_path / "redirected.tsv"
    link = tmp_path / "stdout-link"
    with open(target, "w") as fh:
        os.symlink(f"/proc/self/fd/{fh.fileno()}", link)
        result = run("predict", out / "model.json", data / "test.csv", "-o", link)
        assert result.exit_code == 0, result.stderr
        assert link.is_symlink()
    assert target.read_text().startswith("sample\tlabel\tpredicted\tprob_case")
    from ardselect_cli._util import is_stream

    assert is_stream(Path("/dev/stdout"))
    assert is_stream(Path("-"))
    assert not is_stream(target)
    assert not is_stream(tmp_path / "new.tsv")


@pytest.mark.parametrize(
    ("command", "extra"),
    [("evaluate", ["--splits", "1"]), ("fit", []), ("predict", None), ("example", None)],
)
def test_devices_and_pipes_are_never_replaced(fitted, data, tmp_path, command, extra):
    # `-o /dev/null --overwrite` once replaced (fit, evaluate: deleted) the device; a pipe in a
    # temporary folder stands in for it here.
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    _, out, _ = fitted
    if command == "predict":
        args = ["predict", out / "model.json", data / "test.csv", "-o", tmp_path / "p.tsv",
                "--overwrite"]
        (tmp_path / "p.tsv").mkdir()
        result = run(*args)
        assert_one_line_error(result, 2, r"file .*p\.tsv exists and is a folder, not a file")
        return
    if command == "example":
        pipe_h5ad = tmp_path / "pipe.h5ad"
        os.mkfifo(pipe_h5ad)
        result = run("example", "leukaemia", pipe_h5ad, "--overwrite")
        assert_one_line_error(result, 2, r"pipe\.h5ad exists and is a named pipe, not a file")
        assert pipe_h5ad.is_fifo()
        return
    result = run(command, data / "train.csv", *extra, "-o", pipe, "--overwrite", "-q")
    assert_one_line_error(result, 2, r"output folder .*pipe exists and is a named pipe, not a "
                                     r"folder that can be replaced")
    assert pipe.is_fifo()


@pytest.mark.parametrize(
    ("column", "pattern"),
    [("sample_code", r"the label column has 24 classes for 24 samples \(e\.g\. 'S0', 'S1', "
                     r"'S2'\): it looks like a sample id, not a class"),
     ("n_counts", r"the labels look continuous \(24 distinct numbers from 1000 to 1023\)"),
     ("batch", r"1 class\(es\) have a single sample \('b3'\)")],
)
def test_fit_refuses_label_columns_that_cannot_be_classes(adata_factory, tmp_path, column,
                                                          pattern):
    # Issue 12, item 5: `fit -g sample_code` fitted one-sample classes without a word.
    adata = adata_factory(n_samples=24, n_genes=6)
    adata.obs["sample_code"] = [f"S{i}" for i in range(24)]
    adata.obs["n_counts"] = np.arange(1000, 1024)
    adata.obs["batch"] = ["b1"] * 12 + ["b2"] * 11 + ["b3"]
    path = tmp_path / "expr.h5ad"
    adata.write_h5ad(path)
    result = run("fit", "--no-figures", path, "-g", column, "--out", tmp_path / "r")
    assert_one_line_error(result, 1, pattern)
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("column", ["sample_code", "n_counts", "batch"])
def test_evaluate_refuses_the_same_label_columns(adata_factory, tmp_path, column):
    adata = adata_factory(n_samples=24, n_genes=6)
    adata.obs["sample_code"] = [f"S{i}" for i in range(24)]
    adata.obs["n_counts"] = np.repeat(np.arange(1000, 1012), 2)  # every "class" twice
    adata.obs["batch"] = ["b1"] * 12 + ["b2"] * 11 + ["b3"]
    path = tmp_path / "expr.h5ad"
    adata.write_h5ad(path)
    result = run("evaluate", path, "-g", column, "--splits", "2", "-j", "1", "-o", tmp_path / "r")
    assert_one_line_error(result, 1, "looks like a sample id|look continuous|single sample")
    assert not (tmp_path / "r").exists()


def test_write_h5ad_keeps_odd_class_names(expression, tmp_path):
    # Issue 12, item 2, through the CLI: chosen steps keyed by "CD4+/CD25 T Reg" came back nested.
    df = expression(n_samples=36, n_genes=12, n_classes=3, seed=13)
    names = {"class0": "CD4+/CD25 T Reg", "class1": "a.b", "class2": "\u00e9t\u00e9 \u03b1"}
    df["label"] = df["label"].map(names)
    df.to_csv(tmp_path / "odd.csv", index=False)
    result = run("fit", "--no-figures", tmp_path / "odd.csv", "--out", tmp_path / "r", "--write-h5ad",
                 tmp_path / "r.h5ad", "-q")
    assert result.exit_code == 0, result.stderr
    back = ad.read_h5ad(tmp_path / "r.h5ad")
    steps = ardselect.get.chosen_steps(back)
    assert set(steps) == set(names.values())
    assert steps == json.loads((tmp_path / "r" / "model.json").read_text())["chosen_step"]


def test_inclusion_penalty_option(data, tmp_path):
    for value, expected in (("0", 0.0), ("bic", "bic")):
        result = run("fit", "--no-figures", data / "train.csv", "--inclusion-penalty", value, "-o",
                     tmp_path / value, "-q", "--write-h5ad", tmp_path / f"{value}.h5ad")
        assert result.exit_code == 0, result.stderr
        params = ad.read_h5ad(tmp_path / f"{value}.h5ad").uns["ardselect"]["params"]
        assert params["estimator_params"]["inclusion_penalty"] == expected
    for bad in ("-1", "aic", "inf"):
        result = run("fit", "--no-figures", data / "train.csv", "--inclusion-penalty", bad, "-o", tmp_path / "x")
        assert_one_line_error(result, 2, r"--inclusion-penalty must be 'bic' or a number >= 0")
        assert not (tmp_path / "x").exists()


def test_max_genes_and_cv_rule_options(data, tmp_path, monkeypatch):
    """--max-genes and --cv-rule reach the estimator, in fit and in evaluate."""
    out = tmp_path / "capped"
    result = run("fit", "--no-figures", data / "train.csv", "--max-genes", "1", "--cv-rule", "1se", "-o", out,
                 "-q", "--write-h5ad", tmp_path / "capped.h5ad")
    assert result.exit_code == 0, result.stderr
    params = ad.read_h5ad(tmp_path / "capped.h5ad").uns["ardselect"]["params"]
    assert int(params["estimator_params"]["max_genes"]) == 1
    assert params["estimator_params"]["cv_rule"] == "1se"
    genes = pd.read_csv(out / "genes.tsv", sep="\t", keep_default_na=False)
    assert genes["selected"].sum() <= 1
    result = run("fit", "--no-figures", data / "train.csv", "--max-genes", "0", "-o", tmp_path / "zero")
    assert result.exit_code == 2
    assert "--max-genes" in result.stderr
    made = []

    class Spy(ardselect.ARDClassifier):
        def fit(self, X, y):
            made.append((self.max_genes, self.cv_rule))
            return super().fit(X, y)

    monkeypatch.setattr(ardselect, "ARDClassifier", Spy)
    result = run("evaluate", data / "all.csv", "--splits", 2, "--max-genes", 3, "-j", 1)
    assert result.exit_code == 0, result.stderr
    assert made
    assert set(made) == {(3, "min")}

def test_predict_and_evaluate_warn_about_data_on_another_scale(fitted, data, tmp_path):
    # Intensities that are not whole numbers, logged by the user and then again by the model.
    test = pd.read_csv(data / "test.csv")
    genes = [c for c in test.columns if c.startswith("G")]
    test[genes] = np.log2(test[genes])
    test.to_csv(tmp_path / "log2.csv", index=False)
    _, out, _ = fitted
    result = run("predict", out / "model.json", tmp_path / "log2.csv", "-o", tmp_path / "p.tsv")
    assert result.exit_code == 0, result.stderr
    warned = [ln for ln in result.stderr.splitlines() if ln.startswith("ardselect: warning: ")]
    assert len(warned) == 1, result.stderr
    assert "another kind of values than the model was fitted on" in warned[0]
    result = run("predict", out / "model.json", data / "test.csv", "-o", tmp_path / "q.tsv")
    assert "warning" not in result.stderr
    # evaluate: a batch of samples logged among unlogged ones.
    table = pd.read_csv(data / "all.csv")
    table.loc[::4, genes] = np.log2(table.loc[::4, genes])
    table.to_csv(tmp_path / "mixed.csv", index=False)
    result = run("evaluate", tmp_path / "mixed.csv", "--splits", 1, "-j", 1, "--no-l1", "-q")
    assert result.exit_code == 0, result.stderr
    assert re.search(r"ardselect: warning: 12 of the 48 samples \(s00, s04, s08, s12, s16, "
                     r"\.\.\.\) look like another kind of values", result.stderr), result.stderr


def test_evaluate_reports_one_ece_everywhere(data, tmp_path):
    out = tmp_path / "ev"
    result = run("evaluate", data / "all.csv", "--splits", 3, "-j", 1, "-o", out)
    assert result.exit_code == 0, result.stderr
    summary = pd.read_csv(out / "summary.tsv", sep="\t").set_index("method")
    assert "ece_mean" not in summary.columns  # never averaged over partitions
    calibration = pd.read_csv(out / "calibration.tsv", sep="\t").groupby("method")["ece"].first()
    predictions = pd.read_csv(out / "predictions.tsv", sep="\t")
    report = (out / "report.html").read_text(encoding="utf-8")
    for method, ece in summary["ece"].items():
        sub = predictions[predictions["method"] == method]
        prob = sub.filter(like="prob_").to_numpy()
        pooled = ardselect.model_selection.expected_calibration_error(
            prob.max(axis=1), (sub["predicted"] == sub["label"]).to_numpy())
        assert ece == pytest.approx(pooled, abs=1e-9)
        assert calibration[method] == pytest.approx(ece, abs=1e-9)
        assert re.search(rf"{re.escape(method)} .*? {ece:.3f} ", result.stdout), result.stdout
        assert f">{ece:.3f}<" in report


def test_genes_tsv_has_no_negative_zero_and_no_t_for_constant_genes(tmp_path, expression):
    df = expression(n_samples=30, n_genes=10, seed=2)
    df["FLAT"] = 100.0
    df["ROUNDED"] = np.where(np.arange(30) % 2 == 0, 0.3, 0.1 + 0.2)
    df.to_csv(tmp_path / "d.csv", index=False)
    result = run("fit", "--no-figures", tmp_path / "d.csv", "--out", tmp_path / "res", "--criterion", "loo", "-q")
    assert result.exit_code == 0, result.stderr
    text = (tmp_path / "res" / "genes.tsv").read_text()
    assert not re.search(r"(^|\t)-0(\t|$)", text, re.M)
    genes = pd.read_csv(tmp_path / "res" / "genes.tsv", sep="\t").set_index("gene")
    for gene in ("FLAT", "ROUNDED"):
        assert np.isnan(genes.loc[gene, "t_stat"])
        assert genes.loc[gene, "contribution"] == 0.0
        assert not genes.loc[gene, "selected"]
    assert (genes["contribution"] == 0).sum() >= 2


@pytest.mark.parametrize(("args", "pattern"), [
    (["fit", "DATA", "--criterion", "foo"],
     r"^--criterion: 'foo' is not one of 'cv', 'loo', 'loo-prob', 'evidence' "
     r"\(see 'ardselect fit --help'\)$"),
    (["evaluate", "DATA", "--log", "log3"],
     r"^--log: 'log3' is not one of 'auto', 'none', 'log2', 'log10', 'ln' "),
    (["example", "nope", "x.h5ad"], r"^NAME: 'nope' is not one of 'leukaemia' "),
    (["fit", "DATA", "--nope"], r"No such option: --nope"),
    (["fit"], r"Missing argument 'DATA'"),
    (["bogus"], r"No such command 'bogus' \(see 'ardselect --help'\)"),
])
def test_usage_errors_of_the_command_line_are_one_line(data, args, pattern):
    args = [str(data / "train.csv") if a == "DATA" else a for a in args]
    result = run(*args)
    assert_one_line_error(result, 2, pattern.replace("^", "^ardselect: error: ", 1)
                          if pattern.startswith("^") else pattern)
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_a_missing_groups_column_is_named_as_the_groups_option(data, tmp_path):
    result = run("fit", "--no-figures", data / "train.csv", "--groups", "donor", "--out", tmp_path / "r")
    assert_one_line_error(result, 2, r"--groups donor: no column 'donor' in train.csv; "
                          r"available: label")
    assert "label key" not in result.stderr


def test_an_error_is_not_preceded_by_notes_about_other_packages_warnings(tmp_path):
    X = np.random.default_rng(0).normal(size=(20, 5)) + 5.0
    obs = pd.DataFrame({"label": ["a", "b"] * 10}, index=["s"] * 20)
    with pytest.warns(UserWarning, match="not unique"):  # anndata warns; so does its reader
        adata = ad.AnnData(X, obs=obs, var=pd.DataFrame(index=[f"g{i}" for i in range(5)]))
    adata.write_h5ad(tmp_path / "dup.h5ad")
    result = run("fit", "--no-figures", tmp_path / "dup.h5ad", "--out", tmp_path / "r")
    assert_one_line_error(result, 1, r"duplicated sample name")
    assert result.stderr.strip().splitlines()[0].startswith("ardselect: error: ")


def test_complex_input_is_refused_in_one_short_line(tmp_path):
    X = np.random.default_rng(0).normal(size=(20, 5)) + 1j
    adata = ad.AnnData(X, obs=pd.DataFrame({"label": ["a", "b"] * 10},
                                           index=[f"s{i}" for i in range(20)]))
    adata.write_h5ad(tmp_path / "cx.h5ad")
    for args in (["fit", "--no-figures", tmp_path / "cx.h5ad", "--out", tmp_path / "r"],
                 ["evaluate", tmp_path / "cx.h5ad"]):
        result = run(*args)
        assert_one_line_error(result, 1, r"Complex data not supported: the data hold complex "
                              r"numbers \(dtype complex128\); expression values must be real "
                              r"numbers$")
        assert len(result.stderr) < 200, result.stderr


def test_an_output_name_near_the_file_system_limit_is_written(data, tmp_path):
    name = "r" * 250
    result = run("fit", data / "train.csv", "--criterion", "loo", "--out", tmp_path / name, "-q")
    assert result.exit_code == 0, result.stderr
    assert (tmp_path / name / "genes.tsv").is_file()
    assert [p.name for p in tmp_path.iterdir()] == [name]


def test_gene_symbols_attach_to_a_samples_in_rows_table(data, tmp_path):
    genes = [c for c in pd.read_csv(data / "train.csv").columns if c.startswith("G")]
    pd.DataFrame({"id": genes[:-1], "symbol": [f"SYM{g[1:]}" for g in genes[:-1]]}).to_csv(
        tmp_path / "symbols.csv", index=False)
    out = tmp_path / "res"
    result = run("fit", "--no-figures", data / "train.csv", "--gene-symbols", tmp_path / "symbols.csv",
                 "--criterion", "loo", "--out", out, "-q")
    assert result.exit_code == 0, result.stderr
    table = pd.read_csv(out / "genes.tsv", sep="\t", keep_default_na=False).set_index("gene")
    assert table.loc["G0", "description"] == "SYM0"
    assert table.loc[genes[-1], "description"] == ""  # not in the file: its identifier only
    gmt = (out / "genes.gmt").read_text()
    assert "SYM0" in gmt
    assert "gene symbols from var['symbol']" in gmt
    rnk = pd.read_csv(out / "genes.rnk", sep="\t", header=None)
    assert "SYM1" in set(rnk[0])
    assert genes[-1] in set(rnk[0])
    result = run("fit", "--no-figures", data / "train.csv", "--gene-symbols", data / "test.csv", "--out",
                 tmp_path / "r2")
    assert_one_line_error(result, 2, r"--gene-symbols test.csv: none of its identifiers")


def test_a_description_column_does_not_name_genes_in_gmt_and_rnk(adata_factory, tmp_path):
    adata = adata_factory(n_samples=40, n_genes=20, seed=4)
    adata.var["description"] = [f"protein {i} of some family, isoform a" for i in range(20)]
    adata.write_h5ad(tmp_path / "d.h5ad")
    out = tmp_path / "res"
    result = run("fit", "--no-figures", tmp_path / "d.h5ad", "--symbol-key", "description", "--criterion",
                 "loo", "--out", out, "-q")
    assert result.exit_code == 0, result.stderr
    genes = pd.read_csv(out / "genes.tsv", sep="\t")
    assert genes["description"].str.startswith("protein").all()  # shown in the table
    gmt = (out / "genes.gmt").read_text()
    assert "protein" not in gmt.split("\t", 2)[2]  # the genes of the sets: identifiers
    assert "holds descriptions, not symbols" in gmt
    rnk = pd.read_csv(out / "genes.rnk", sep="\t", header=None)
    assert len(rnk) == 20  # one row per gene: no description collapsed them
    assert set(rnk[0]) == set(adata.var_names)


@pytest.mark.parametrize("command", ["fit", "evaluate", "predict"])
def test_a_directory_is_called_a_directory(fitted, command, tmp_path):
    # Only a .zarr store is a directory that holds data; other directories are named as such,
    # not as files of unknown format.
    folder = tmp_path / "some_dir"
    folder.mkdir()
    _, out, _ = fitted
    args = {"fit": ["fit", "--no-figures", folder, "-o", tmp_path / "r"],
            "evaluate": ["evaluate", folder, "--splits", "1", "-o", tmp_path / "r"],
            "predict": ["predict", out / "model.json", folder, "-o", tmp_path / "p.tsv"]}[command]
    result = run(*args)
    assert_one_line_error(result, 1, r"some_dir is a directory, not a file$")
    assert not (tmp_path / "r").exists()
    assert not (tmp_path / "p.tsv").exists()
    with pytest.raises(ardselect.exceptions.FileFormatError, match="is a directory, not a file"):
        ardselect.io.ExpressionData.check_source(folder)


def test_class_counts_list_clusters_in_number_order():
    labels = [str(i % 11) for i in range(33)]
    assert options.class_counts(labels) == " / ".join(f"{i} 3" for i in range(11))
    assert options.display_classes(["b", "10", "2", "a"]) == ["2", "10", "a", "b"]
