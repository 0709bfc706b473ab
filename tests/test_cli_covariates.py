"""``fit``, ``evaluate`` and ``predict`` with ``--covariates`` and ``--pseudobulk``."""

from __future__ import annotations

import anndata as ad
import numpy as np
import pandas as pd
import pytest

from tests.conftest import one_error, run_cli
from tests.test_pseudobulk import cells

run = run_cli


@pytest.fixture
def batch_h5ad(tmp_path, rng):
    """Cells whose gene g2 follows the batch only; the batch is partly confounded with the type."""
    n, p = 120, 20
    batch = rng.integers(0, 2, n)
    y = np.where(rng.random(n) < 0.8, batch, 1 - batch)
    X = rng.normal(size=(n, p))
    X[:, 0] += 1.2 * y
    X[:, 1] -= 1.2 * y
    X[:, 2] += 4.0 * batch
    obs = pd.DataFrame({"cell_type": np.array(["B", "T"])[y],
                        "batch": np.array(["b1", "b2"])[batch],
                        "pct_mito": rng.uniform(0, 10, n)}, index=[f"c{i}" for i in range(n)])
    path = tmp_path / "cells.h5ad"
    ad.AnnData(X, obs=obs, var=pd.DataFrame(index=[f"g{j}" for j in range(p)])).write_h5ad(path)
    return path


def test_fit_with_covariates_writes_their_table_and_lists_genes_only(batch_h5ad, tmp_path):
    out = tmp_path / "res"
    result = run("fit", batch_h5ad, "-g", "cell_type", "--covariates", "batch,pct_mito", "-o",
                 out, "-j", "1")
    assert result.exit_code == 0, result.stderr
    assert "covariates held in every model: batch, pct_mito" in result.stdout
    genes = pd.read_csv(out / "genes.tsv", sep="\t")
    assert set(genes["gene"]) == {f"g{j}" for j in range(20)}
    assert not genes.set_index("gene").loc["g2", "selected"]
    weights = pd.read_csv(out / "covariates.tsv", sep="\t", keep_default_na=False)
    assert list(weights["column"]) == ["batch[b2]", "pct_mito"]
    assert "Covariates held" in (out / "report.html").read_text()
    # predict reads the covariates by name, and refuses data without them
    pred = run("predict", out / "model.json", batch_h5ad, "-o", tmp_path / "p.tsv")
    assert pred.exit_code == 0, pred.stderr
    lacking = ad.read_h5ad(batch_h5ad)
    lacking.obs = lacking.obs.drop(columns="batch")
    lacking.write_h5ad(tmp_path / "lacking.h5ad")
    one_error(run("predict", out / "model.json", tmp_path / "lacking.h5ad"), 1,
              "covariate 'batch' is not a column")


def test_without_covariates_the_batch_gene_is_selected(batch_h5ad, tmp_path):
    result = run("fit", "--no-figures", batch_h5ad, "-g", "cell_type", "-o", tmp_path / "plain", "-j", "1")
    assert result.exit_code == 0, result.stderr
    genes = pd.read_csv(tmp_path / "plain" / "genes.tsv", sep="\t")
    assert genes.set_index("gene").loc["g2", "selected"]
    assert not (tmp_path / "plain" / "covariates.tsv").exists()


def test_covariate_usage_errors(batch_h5ad, tmp_path):
    one_error(run("fit", "--no-figures", batch_h5ad, "-g", "cell_type", "--covariates", "sex", "-o",
                  tmp_path / "a"), 2, "--covariates: 'sex' is not a column .* obs columns")
    one_error(run("fit", "--no-figures", batch_h5ad, "-g", "cell_type", "--covariates", "cell_type", "-o",
                  tmp_path / "b"), 2, "label key 'cell_type' cannot also be a covariate")
    one_error(run("fit", "--no-figures", batch_h5ad, "-g", "cell_type", "--covariates", "batch", "--model",
                  "spike-slab", "-o", tmp_path / "c"), 2, "--covariates does not apply")


def test_covariates_from_a_table_column(batch_h5ad, tmp_path):
    adata = ad.read_h5ad(batch_h5ad)
    table = adata.to_df()
    table.insert(0, "cell_type", adata.obs["cell_type"])
    table["mito_pct"] = adata.obs["pct_mito"]  # numeric: read as a gene unless named
    table.index.name = "cell"
    path = tmp_path / "cells.tsv"
    table.to_csv(path, sep="\t")
    out = tmp_path / "res"
    result = run("fit", "--no-figures", path, "-g", "cell_type", "--covariates", "mito_pct", "-o", out, "-j",
                 "1")
    assert result.exit_code == 0, result.stderr
    genes = pd.read_csv(out / "genes.tsv", sep="\t")
    assert "mito_pct" not in set(genes["gene"])
    pred = run("predict", out / "model.json", path)
    assert pred.exit_code == 0, pred.stderr


def test_evaluate_with_covariates(batch_h5ad, tmp_path):
    result = run("evaluate", batch_h5ad, "-g", "cell_type", "--covariates", "batch",
                 "--splits", "2", "-j", "1", "--no-l1", "-o", tmp_path / "ev")
    assert result.exit_code == 0, result.stderr
    assert "covariates held in every ARD-EP model: batch" in result.stdout
    selection = pd.read_csv(tmp_path / "ev" / "selection.tsv", sep="\t")
    assert "batch" not in " ".join(map(str, selection.columns)) + " ".join(
        map(str, selection.iloc[:, 0]))


@pytest.fixture
def cells_h5ad(tmp_path, rng):
    path = tmp_path / "cells.h5ad"
    cells(rng, n_donors=10, per=20).write_h5ad(path)
    return path


def test_fit_and_evaluate_pseudobulk_hold_out_donors(cells_h5ad, tmp_path):
    out = tmp_path / "res"
    result = run("fit", cells_h5ad, "-g", "cell_type", "--pseudobulk", "donor", "--covariates",
                 "sex", "-o", out, "-j", "1")
    assert result.exit_code == 0, result.stderr
    assert "pseudobulk: 20 donor-and-label samples from 200 cells" in result.stdout
    groups = pd.read_csv(out / "groups.tsv", sep="\t")
    assert sorted(groups["donor"]) == [f"d{i}" for i in range(10)]
    assert (groups["n_samples"] == 2).all()
    assert "Pseudobulk" in (out / "report.html").read_text()
    weights = pd.read_csv(out / "covariates.tsv", sep="\t")
    assert list(weights["column"]) == ["sex[M]"]  # a donor-level covariate carried over
    pred = run("predict", out / "model.json", cells_h5ad, "-o", tmp_path / "p.tsv")
    assert pred.exit_code == 0, pred.stderr
    assert len(pd.read_csv(tmp_path / "p.tsv", sep="\t")) == 20
    ev = run("evaluate", cells_h5ad, "-g", "cell_type", "--pseudobulk", "donor", "--splits",
             "2", "-j", "1", "--no-l1", "-o", tmp_path / "ev")
    assert ev.exit_code == 0, ev.stderr
    assert "of the pseudobulk samples (one per donor and label)" in ev.stdout
    predictions = pd.read_csv(tmp_path / "ev" / "predictions.tsv", sep="\t")
    donors = predictions["sample"].str.split("|").str[0]
    for _, block in predictions.assign(donor=donors).groupby(["split", "method"]):
        # a held-out donor's samples are all in the test part of the partition
        assert block.groupby("donor").size().max() == 2


def test_pseudobulk_errors(cells_h5ad, tmp_path):
    logged = ad.read_h5ad(cells_h5ad)
    logged.X = np.log1p(logged.X)
    logged.write_h5ad(tmp_path / "logged.h5ad")
    one_error(run("fit", "--no-figures", tmp_path / "logged.h5ad", "-g", "cell_type", "--pseudobulk", "donor",
                  "-o", tmp_path / "a"), 1, "pseudobulk sums counts, but X hold")
    one_error(run("fit", "--no-figures", cells_h5ad, "-g", "cell_type", "--pseudobulk", "patient", "-o",
                  tmp_path / "b"), 2, "--pseudobulk patient: no column 'patient' in cells.h5ad")
    one_error(run("fit", "--no-figures", cells_h5ad, "-g", "cell_type", "--pseudobulk", "donor", "--groups",
                  "donor", "-o", tmp_path / "c"), 2, "leave --groups out")
