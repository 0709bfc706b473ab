"""``ardselect fit --model spike-slab``: its files, its summary and the options it refuses."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from ardselect_cli import _options as options
from ardselect_cli import fit as fit_module
from ardselect_cli import main as cli
from typer.testing import CliRunner

import ardselect
from ardselect._anndata import _SPIKESLAB_COLUMNS, MODELS

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
                                                    "genes.rnk", "genes.tsv"]
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
    for name in ("genes.tsv", "credible_sets.tsv", "genes.gmt", "genes.rnk"):
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


def test_help_and_choices():
    assert options.MODELS == MODELS
    result = run("fit", "--help")
    text = " ".join(result.stdout.split())
    assert "spike-slab" in text
    assert "posterior probability" in text
    assert "0.5" in text
    assert "credible_sets.tsv" in fit_module.FIT_FOLDER
