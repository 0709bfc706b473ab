"""``ardselect fit --model spike-slab``: its files, its summary and the options it refuses."""

from __future__ import annotations

import inspect
import json

import numpy as np
import pandas as pd
import pytest
from ardselect_cli import _options as options
from ardselect_cli import fit as fit_module
from ardselect_cli import main as cli
from typer.testing import CliRunner

import ardselect
from ardselect.signature._kinds import _SPIKESLAB_COLUMNS, MODELS

runner = CliRunner()


def run(*args):
    return runner.invoke(cli.app, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    """80 samples x 30 genes: g0 decides the class, g1 is a near copy of it."""
    rng = np.random.default_rng(0)
    n, p = 80, 30
    X = rng.normal(size=(n, p))
    X[:, 1] = X[:, 0] + 0.05 * rng.normal(size=n)
    y = np.where(2.0 * X[:, 0] + 0.5 * rng.normal(size=n) > 0, "tumour", "normal")
    df = pd.DataFrame(X, columns=[f"g{j}" for j in range(p)])
    df.insert(0, "label", y)
    path = tmp_path_factory.mktemp("data") / "copies.csv"
    df.to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def fitted(table, tmp_path_factory):
    work = tmp_path_factory.mktemp("fit")
    result = run("fit", table, "--model", "spike-slab", "--out", work / "res",
                 "--write-h5ad", work / "res.h5ad")
    return result, work


def test_files_and_columns(fitted):
    result, work = fitted
    assert result.exit_code == 0, result.stderr
    out = work / "res"
    assert sorted(p.name for p in out.iterdir()) == ["credible_sets.tsv", "genes.gmt",
                                                    "genes.rnk", "genes.tsv", "model.json"]
    genes = pd.read_csv(out / "genes.tsv", sep="\t", keep_default_na=False)
    assert list(genes.columns) == [c for c in _SPIKESLAB_COLUMNS if c != "class"]
    by_gene = genes.set_index("gene")
    # credible_set: the set's id, empty for a gene in no set.
    assert by_gene.loc["g0", "credible_set"] == by_gene.loc["g1", "credible_set"] == "1"
    assert by_gene.loc["g5", "credible_set"] == ""
    pip = genes["pip"].astype(float)
    assert ((pip >= 0) & (pip <= 1)).all()
    assert (genes["selected"].astype(str).str.lower() == np.where(pip > 0.5, "true", "false")).all()
    sets = pd.read_csv(out / "credible_sets.tsv", sep="\t")
    assert set(sets["gene"]) == {"g0", "g1"}
    assert (sets["set_pip"] >= 0.95).all()
    assert "spike-and-slab" in (out / "genes.gmt").read_text()
    assert "credible set" in result.stdout
    assert "pip" in result.stdout


def test_h5ad_record(fitted):
    import anndata as ad

    _, work = fitted
    adata = ad.read_h5ad(work / "res.h5ad")
    genes = pd.read_csv(work / "res" / "genes.tsv", sep="\t")
    stored = ardselect.get.ranked_genes_df(adata)
    np.testing.assert_allclose(stored["pip"], genes["pip"], rtol=1e-9)
    assert adata.var.loc["g0", "ardselect_credible_set"] == 1
    assert len(ardselect.get.credible_sets_df(adata)) == 2


def test_deterministic(table, fitted, tmp_path):
    _, work = fitted
    assert run("fit", table, "-m", "spike-slab", "-q", "--out", tmp_path / "again").exit_code == 0
    for name in ("genes.tsv", "credible_sets.tsv", "genes.gmt", "genes.rnk", "model.json"):
        assert (tmp_path / "again" / name).read_bytes() == (work / "res" / name).read_bytes()


def test_default_model_is_ard(table, tmp_path):
    result = run("fit", table, "-q", "--criterion", "evidence", "--out", tmp_path / "ard")
    assert result.exit_code == 0, result.stderr
    header = (tmp_path / "ard" / "genes.tsv").read_text().splitlines()[0].split("\t")
    assert "set_pip" not in header  # the ARD signature's sets carry set_probability instead
    assert "set_probability" in header
    assert "cv_frequency" in header
    assert (tmp_path / "ard" / "model.json").exists()


@pytest.mark.parametrize("args", [
    ("--criterion", "loo"), ("--criterion", "cv"), ("--max-genes", "3"), ("--cv-rule", "1se"),
    ("--inclusion-penalty", "bic"), ("--max-steps", "10"), ("--multiclass", "shared"),
    ("--seed", "1"), ("--max-samples", "40"), ("--lazy",), ("--groups", "label"),
    ("-j", "2"),
])
def test_ard_options_refused(table, tmp_path, args):
    result = run("fit", table, "--model", "spike-slab", *args, "--out", tmp_path / "x")
    assert result.exit_code == 2
    errors = [ln for ln in result.stderr.splitlines() if ln.startswith("ardselect: error: ")]
    assert len(errors) == 1
    assert "Traceback" not in result.stderr
    option = {"-j": "--n-jobs"}.get(args[0], args[0])
    assert f"{option} does not apply to --model spike-slab" in errors[0]
    assert not (tmp_path / "x").exists()


def test_unknown_model(table, tmp_path):
    result = run("fit", table, "--model", "lasso", "--out", tmp_path / "x")
    assert result.exit_code == 2
    assert "lasso" in result.stderr


def test_the_refused_options_are_those_the_spike_and_slab_estimator_lacks():
    ard = set(ardselect.ARDClassifier().get_params())
    spikeslab = set(ardselect.SpikeSlabClassifier().get_params())
    estimator_settings = {name for name in options.ARD_ONLY if name in ard}
    assert estimator_settings.isdisjoint(spikeslab)
    # Every estimator setting of ARD's that the spike-and-slab model lacks and the command line
    # takes is refused (the rest are the command line's own: seed, lazy, groups, ...).
    cli_params = set(inspect.signature(fit_module.fit).parameters)
    assert (ard - spikeslab) & cli_params <= set(options.ARD_ONLY)
    assert set(options.EVALUATE_ARD_ONLY) <= set(options.ARD_ONLY)


def test_help_and_choices():
    assert options.MODELS == MODELS
    result = run("fit", "--help")
    text = " ".join(result.stdout.split())
    assert "spike-slab" in text
    assert "posterior probability" in text
    assert "0.5" in text
    assert "credible_sets.tsv" in fit_module.FIT_FOLDER


# ------------------------------------------------------------------------ model.json and predict
def _in_memory(table):
    """SpikeSlabClassifier on the preprocessing fit applies to the table (no log: normal values)."""
    from ardselect.preprocessing import Preprocessor

    df = pd.read_csv(table)
    y = df.pop("label").astype(str).to_numpy()
    pre = Preprocessor().fit(df.to_numpy(), feature_names=df.columns)
    assert pre.log_ == "none"
    Z = pre.transform(df.to_numpy())
    return ardselect.SpikeSlabClassifier().fit(Z, y), Z, df


def _check_predict(table, folder, tmp_path):
    est, Z, df = _in_memory(table)
    model = ardselect.model.load_model(folder / "model.json")
    assert model.kind == "spike-slab"
    expected = est.predict_proba(Z)
    np.testing.assert_allclose(model.predict_proba(df).to_numpy(), expected, rtol=1e-12,
                               atol=1e-300)
    result = run("predict", folder / "model.json", table, "-o", tmp_path / "pred.tsv")
    assert result.exit_code == 0, result.stderr
    pred = pd.read_csv(tmp_path / "pred.tsv", sep="\t")
    classes = [str(c) for c in est.classes_]
    assert list(pred.columns) == ["sample", "label", "predicted",
                                  *(f"prob_{c}" for c in classes)]
    # written with 12 significant digits
    np.testing.assert_allclose(pred[[f"prob_{c}" for c in classes]].to_numpy(), expected,
                               rtol=1e-11, atol=1e-15)
    np.testing.assert_array_equal(pred["predicted"], est.predict(Z))
    assert "misclassified (label)" in result.stderr


def test_model_json_predicts_as_the_estimator(table, fitted, tmp_path):
    _, work = fitted
    _check_predict(table, work / "res", tmp_path)


@pytest.fixture(scope="module")
def wide_three_classes(tmp_path_factory):
    """30 samples x 45 genes, three classes: genes outnumber samples (the file holds the rows)."""
    rng = np.random.default_rng(1)
    n, p = 30, 45
    X = rng.normal(size=(n, p))
    X[:, 1] = X[:, 0] + 0.05 * rng.normal(size=n)
    y = np.where(X[:, 0] > 0.4, "a", np.where(X[:, 5] > 0, "b", "c"))
    df = pd.DataFrame(X, columns=[f"g{j}" for j in range(p)])
    df.insert(0, "label", y)
    path = tmp_path_factory.mktemp("wide") / "wide.csv"
    df.to_csv(path, index=False)
    return path


def test_model_json_predicts_as_the_estimator_three_classes(wide_three_classes, tmp_path):
    result = run("fit", wide_three_classes, "-m", "spike-slab", "-q", "--out", tmp_path / "res")
    assert result.exit_code == 0, result.stderr
    stored = json.loads((tmp_path / "res" / "model.json").read_text())
    assert stored["model"] == "spike-slab"
    assert len(stored["problems"]) == 3
    assert len(stored["design"]) == 30  # sample space: the standardised training rows
    _check_predict(wide_three_classes, tmp_path / "res", tmp_path)


def test_edited_model_json_is_refused_in_one_line(fitted, table, tmp_path):
    _, work = fitted
    data = json.loads((work / "res" / "model.json").read_text())
    data["problems"][0]["nodes"][0]["alpha"][2] = -1.0
    (tmp_path / "model.json").write_text(json.dumps(data))
    result = run("predict", tmp_path / "model.json", table, "-o", tmp_path / "p.tsv")
    assert result.exit_code != 0
    errors = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert len(errors) == 1
    assert "nodes[0].alpha[2] must be a positive number" in errors[0]
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "p.tsv").exists()


# ------------------------------------------------------------------------------------- evaluate
def _evaluate(table, folder, *args):
    return run("evaluate", table, "--splits", 2, "-j", 1, "-q", "-o", folder, *args)


def test_evaluate_spikeslab_writes_the_default_outputs(table, tmp_path):
    from ardselect_cli import evaluate as evaluate_module

    result = _evaluate(table, tmp_path / "ev", "--model", "spike-slab")
    assert result.exit_code == 0, result.stderr
    # every file of the default evaluate but EP's leave-one-group-out (--groups only)
    expected = {f for f in evaluate_module.EVALUATE_FOLDER if not f.startswith("leave_group")}
    assert {p.name for p in (tmp_path / "ev").iterdir()} == expected
    summary = pd.read_csv(tmp_path / "ev" / "summary.tsv", sep="\t")
    assert list(summary["method"]) == ["SpikeSlab-EP", "L1-logistic"]
    pred = pd.read_csv(tmp_path / "ev" / "predictions.tsv", sep="\t")
    assert {"prob_normal", "prob_tumour"} <= set(pred.columns)
    spike = pred[pred["method"] == "SpikeSlab-EP"]
    np.testing.assert_allclose(spike[["prob_normal", "prob_tumour"]].sum(axis=1), 1.0)
    assert (summary["error_rate_mean"] < 0.2).all()
    assert "SpikeSlab-EP" in (tmp_path / "ev" / "report.html").read_text()


@pytest.mark.slow
def test_evaluate_spikeslab_files_and_columns_match_ard(table, tmp_path):
    assert _evaluate(table, tmp_path / "ss", "--model", "spike-slab").exit_code == 0
    assert _evaluate(table, tmp_path / "ard").exit_code == 0
    ss = sorted(p.name for p in (tmp_path / "ss").iterdir())
    assert ss == sorted(p.name for p in (tmp_path / "ard").iterdir())
    for name in ss:
        if name.endswith(".tsv"):
            a = pd.read_csv(tmp_path / "ss" / name, sep="\t", nrows=1)
            b = pd.read_csv(tmp_path / "ard" / name, sep="\t", nrows=1)
            if name == "selection.tsv":  # one column per method
                continue
            assert list(a.columns) == list(b.columns), name


@pytest.mark.parametrize("args", [
    ("--max-steps", "10"), ("--max-genes", "3"), ("--cv-rule", "1se"),
    ("--multiclass", "shared"), ("--covariates", "g3"),
])
def test_evaluate_refuses_ard_options(table, tmp_path, args):
    result = run("evaluate", table, "--model", "spike-slab", *args, "-o", tmp_path / "x")
    assert result.exit_code == 2
    errors = [ln for ln in result.stderr.splitlines() if ln.startswith("ardselect: error: ")]
    assert len(errors) == 1
    assert f"{args[0]} does not apply to --model spike-slab" in errors[0]
    assert not (tmp_path / "x").exists()


def test_evaluate_help_names_the_model():
    text = " ".join(run("evaluate", "--help").stdout.split())
    assert "spike-slab" in text
    assert "SpikeSlab-EP" in text
