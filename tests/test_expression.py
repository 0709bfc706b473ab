"""ardselect.io.expression: X, a layer or raw.X, and the genes of its columns, for every entry point.

The layout scanpy's tutorials produce (``raw`` keeps every gene, ``X`` the highly variable ones,
scaled) is fitted on ``raw`` by ``rank_genes`` and ``fit --use-raw``, evaluated by
``evaluate --use-raw`` and scored by ``predict``, all on ``raw``'s genes.
"""

from __future__ import annotations

import json

import anndata as ad
import numpy as np
import pandas as pd
import pytest

import ardselect
from ardselect.exceptions import DataError
from ardselect.io import Input, expression
from conftest import one_error, run_cli

#: Genes of the full data; the markers of class "b": one kept in X, one in raw only.
GENES = [f"G{j}" for j in range(16)]
MARKER_IN_VAR, MARKER_RAW_ONLY = "G3", "G12"
#: The highly variable genes kept in X, in an order other than raw's.
HVG = ["G9", "G3", "G0", "G6", "G1", "G7"]


def _layout(seed=0, n_classes=2):
    """The layout scanpy makes: raw holds log-normalised values of every gene, X the HVG z-scored."""
    rng = np.random.default_rng(seed)
    n = 48
    labels = np.array(["a", "b", "c"][:n_classes])[np.arange(n) % n_classes]
    counts = rng.poisson(2.0, size=(n, len(GENES))).astype(float)
    counts[labels == "b", GENES.index(MARKER_IN_VAR)] += rng.poisson(6.0, (labels == "b").sum())
    counts[labels == "b", GENES.index(MARKER_RAW_ONLY)] += rng.poisson(6.0, (labels == "b").sum())
    if n_classes > 2:
        counts[labels == "c", GENES.index("G14")] += rng.poisson(6.0, (labels == "c").sum())
    full = ad.AnnData(np.log1p(counts),
                      obs=pd.DataFrame({"label": labels}, index=[f"c{i}" for i in range(n)]),
                      var=pd.DataFrame({"symbol": [f"SYM{g[1:]}" for g in GENES]}, index=GENES))
    full.raw = full
    adata = full[:, HVG].copy()
    adata.var["highly_variable"] = True
    X = np.asarray(adata.X)
    adata.X = (X - X.mean(axis=0)) / X.std(axis=0)
    return adata


def _raw_frame(adata):
    return pd.DataFrame(np.asarray(adata.raw.X), index=adata.obs_names,
                        columns=adata.raw.var_names)


# ---- the one decision: which matrix, which genes ---------------------------------------------

def _with_layer_and_raw(raw):
    adata = _layout()
    adata.layers["counts"] = np.expm1(np.asarray(adata.raw[:, HVG].X))
    if raw == "none":
        del adata.raw
    elif raw == "same genes":
        adata.raw = adata.copy()
    return adata


@pytest.mark.parametrize(
    ("layer", "use_raw", "raw", "named", "genes"),
    [
        (None, False, "none", "X", HVG),
        (None, False, "more genes", "X", HVG),
        ("counts", False, "none", "layer 'counts'", HVG),
        ("counts", False, "more genes", "layer 'counts'", HVG),
        (None, True, "same genes", "raw.X", HVG),
        (None, True, "more genes", "raw.X", GENES),
    ],
)
def test_layer_and_raw_cases(layer, use_raw, raw, named, genes):
    adata = _with_layer_and_raw(raw)
    got = expression(adata, layer=layer, use_raw=use_raw)
    expected = (adata.raw.X if use_raw else adata.layers[layer] if layer else adata.X)
    assert got.X is expected
    assert list(got.var_names) == genes
    assert str(got.input) == named
    assert got.input == Input(layer, use_raw)
    assert (got.layer, got.use_raw) == (layer, use_raw)
    assert list(got.var.index) == genes
    # raw's annotation, with var's columns added by name (missing for raw-only genes)
    assert list(got.var["symbol"]) == [f"SYM{g[1:]}" for g in genes]
    hv = got.var["highly_variable"]
    assert hv[hv.index.isin(HVG)].all()
    assert hv[~hv.index.isin(HVG)].isna().all()


@pytest.mark.parametrize(
    ("layer", "use_raw", "raw", "error", "match"),
    [
        ("counts", True, "more genes", ValueError, "give either layer or use_raw, not both"),
        ("nope", False, "more genes", DataError,
         r"layer 'nope' not found; available layers: counts$"),
        (None, True, "none", DataError, r"use_raw=True but adata\.raw is empty"),
    ],
)
def test_layer_and_raw_refusals(layer, use_raw, raw, error, match):
    with pytest.raises(error, match=match):
        expression(_with_layer_and_raw(raw), layer=layer, use_raw=use_raw)


def test_no_x_is_refused():
    adata = ad.AnnData(obs=pd.DataFrame(index=["s0", "s1"]), var=pd.DataFrame(index=["g"]))
    with pytest.raises(DataError, match="no expression matrix X"):
        expression(adata)


# ---- rank_genes on raw with more genes than var ----------------------------------------------

@pytest.fixture(scope="module")
def fitted():
    adata = _layout()
    ardselect.rank_genes(adata, "label", use_raw=True,
                         estimator=ardselect.ARDClassifier(criterion="loo"))
    return adata


def test_rank_genes_fits_raws_genes(fitted):
    ranked = ardselect.get.ranked_genes_df(fitted)
    assert sorted(ranked["gene"]) == sorted(GENES)  # every gene of raw, not only var's
    chosen = set(ranked.loc[ranked["selected"], "gene"])
    assert {MARKER_IN_VAR, MARKER_RAW_ONLY} <= chosen
    assert MARKER_RAW_ONLY in set(ardselect.get.model(fitted).features)  # a gene var lacks
    assert fitted.uns["ardselect"]["params"]["use_raw"]
    # descriptions come from raw.var
    assert dict(zip(ranked["gene"], ranked["description"], strict=True))["G12"] == "SYM12"
    # scanpy's record names raw's genes too
    assert sorted(fitted.uns["ardselect"]["names"]["b"]) == sorted(GENES)


def test_var_columns_hold_each_genes_own_values(fitted):
    ranked = ardselect.get.ranked_genes_df(fitted).set_index("gene")
    var = fitted.var
    assert list(var.index) == HVG
    for column, field in [("rank", "rank"), ("weight", "weight"), ("weight_sd", "weight_sd"),
                          ("selected", "selected"), ("t_stat", "t_stat"),
                          ("log_bf_marginal", "log_bf_marginal")]:
        np.testing.assert_array_equal(var[f"ardselect_{column}"].to_numpy(),
                                      ranked.loc[HVG, field].to_numpy(), err_msg=column)
    assert var.loc[MARKER_IN_VAR, "ardselect_selected"]
    assert var.loc[MARKER_IN_VAR, "ardselect_weight"] > 0


def test_model_fitted_on_raw_predicts_the_same_layout(fitted):
    model = ardselect.get.model(fitted)
    assert model.input == Input(use_raw=True)
    proba = model.predict_proba(fitted)
    pd.testing.assert_frame_equal(proba, model.predict_proba(_raw_frame(fitted)))
    assert (model.predict(_layout(seed=1)) == _layout(seed=1).obs["label"].to_numpy()).mean() > 0.8


def test_varm_columns_by_name_with_more_classes():
    adata = _layout(n_classes=3)
    ardselect.rank_genes(adata, "label", use_raw=True,
                         estimator=ardselect.ARDClassifier(criterion="loo"))
    ranked = ardselect.get.ranked_genes_df(adata)
    problems = list(adata.uns["ardselect"]["problems"])
    for k, cls in enumerate(problems):
        block = ranked[ranked["class"] == cls].set_index("gene")
        assert sorted(block.index) == sorted(GENES)
        np.testing.assert_array_equal(adata.varm["ardselect_rank"][:, k],
                                      block.loc[HVG, "rank"].to_numpy())
        np.testing.assert_array_equal(adata.varm["ardselect_weight"][:, k],
                                      block.loc[HVG, "weight"].to_numpy())


def test_evaluate_on_raw_through_the_same_decision():
    # The API route of evaluate --use-raw: expression() picks raw.X and raw's gene names.
    from ardselect.model_selection import evaluate
    from ardselect.preprocessing import Preprocessor

    adata = _layout()
    source = expression(adata, use_raw=True)
    methods = {"ard": ardselect.ARDClassifier(criterion="loo")}
    results, _, selection = evaluate(
        source.X, adata.obs["label"].to_numpy(), methods, preprocessor=Preprocessor(log="none"),
        n_splits=2, feature_names=np.asarray(source.var_names), return_selection=True)
    assert list(selection.columns) == GENES
    assert selection[MARKER_RAW_ONLY].all()
    assert (results["error_rate"] < 0.2).all()


def test_var_genes_missing_from_raw_are_refused():
    adata = _layout()
    adata.var_names = [*HVG[:-1], "NEW"]
    with pytest.raises(DataError, match=r"use_raw: 1 gene\(s\) of adata\.var are not in "
                                        r"adata\.raw \('NEW'\)"):
        ardselect.rank_genes(adata, "label", use_raw=True,
                         estimator=ardselect.ARDClassifier(criterion="loo"))


def test_scaled_x_beside_a_larger_raw_is_announced():
    with pytest.warns(ardselect.ScaledXWarning, match="use_raw=True"):
        ardselect.rank_genes(_layout(), "label", estimator=ardselect.ARDClassifier(criterion="loo"))


# ---- the command line: fit, predict, evaluate on the same layout -----------------------------

@pytest.fixture(scope="module")
def cli_fit(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("raw")
    path = tmp / "hvg.h5ad"
    _layout().write_h5ad(path)
    out = tmp / "fit"
    result = run_cli("fit", path, "--use-raw", "--criterion", "loo", "-o", out,
                     "--write-h5ad", tmp / "fitted.h5ad")
    assert result.exit_code == 0, result.stderr
    # the summary and the report count the genes fitted: raw's
    assert result.stdout.startswith("hvg.h5ad: 48 samples x 16 genes of raw;")
    assert "48 samples x 16 genes of raw" in (out / "report.html").read_text()
    return tmp, path, out


def test_cli_fit_use_raw_writes_every_raw_gene(cli_fit):
    tmp, _, out = cli_fit
    genes = pd.read_csv(out / "genes.tsv", sep="\t")
    assert sorted(genes["gene"]) == sorted(GENES)
    assert MARKER_RAW_ONLY in set(genes.loc[genes["selected"], "gene"])
    model = json.loads((out / "model.json").read_text())
    assert model["input"] == {"layer": None, "use_raw": True}
    written = ad.read_h5ad(tmp / "fitted.h5ad")
    assert list(written.var_names) == HVG
    by_gene = genes.set_index("gene")
    np.testing.assert_array_equal(written.var["ardselect_rank"].to_numpy(),
                                  by_gene.loc[HVG, "rank"].to_numpy())
    np.testing.assert_array_equal(written.var["ardselect_selected"].to_numpy(),
                                  by_gene.loc[HVG, "selected"].to_numpy())


def test_cli_predict_with_a_raw_model_on_the_same_layout(cli_fit):
    tmp, path, out = cli_fit
    result = run_cli("predict", out / "model.json", path, "-o", tmp / "pred.tsv")
    assert result.exit_code == 0, result.stderr
    pred = pd.read_csv(tmp / "pred.tsv", sep="\t")
    assert (pred["predicted"] == pred["label"]).mean() > 0.9
    model = ardselect.model.load_model(out / "model.json")
    adata = ad.read_h5ad(path)
    expected = model.predict_proba(_raw_frame(adata))
    np.testing.assert_allclose(pred[["prob_a", "prob_b"]].to_numpy(), expected.to_numpy(),
                               rtol=1e-9)


def test_cli_evaluate_use_raw_reads_raws_genes(cli_fit):
    tmp, path, _ = cli_fit
    out = tmp / "eval"
    result = run_cli("evaluate", path, "--use-raw", "--splits", "1", "--no-l1", "--max-steps", "8",
                     "--no-figures", "-o", out, "-q")
    assert result.exit_code == 0, result.stderr
    selection = pd.read_csv(out / "selection.tsv", sep="\t")
    assert MARKER_RAW_ONLY in set(selection.iloc[:, 0].astype(str))


def test_cli_fit_use_raw_write_h5ad_refuses_var_genes_raw_lacks(tmp_path):
    adata = _layout()
    adata.var_names = [*HVG[:-1], "NEW"]
    path = tmp_path / "bad.h5ad"
    adata.write_h5ad(path)
    # (the results go into var by name when they are written into the AnnData)
    result = run_cli("fit", "--no-figures", path, "--use-raw", "-o", tmp_path / "r", "--write-h5ad",
                     tmp_path / "r.h5ad")
    one_error(result, 1, r"use_raw: 1 gene\(s\) of adata\.var are not in adata\.raw")
    assert not (tmp_path / "r").exists()
    assert not (tmp_path / "r.h5ad").exists()
