"""The input door: one set of rules for X, layers, raw, labels, groups and gene symbols.

Every case of the table goes through :meth:`ardselect.io.ExpressionData.from_anndata` (and
``rank_genes``, for the refusals) and through the command line's ``fit``, ``evaluate`` and
``predict``; each must accept or refuse it alike, for the same reason. The layouts are the ones
scanpy users meet: ``raw`` with the same genes as ``var``, with more (highly variable genes
selected), with fewer (refused: ``raw`` is the data ``var``'s genes were selected from).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import anndata as ad
import numpy as np
import pandas as pd
import pytest

import ardselect
from ardselect.exceptions import DataError, LabelError
from ardselect.io import ExpressionData, Input
from conftest import one_error, run_cli

GENES = [f"G{j}" for j in range(12)]
#: The genes kept in var (X), in an order other than raw's; G2 and G9 mark class "b".
HVG = ["G7", "G2", "G0", "G5", "G1"]
N = 40


def _cells(seed=0):
    """Counts of every gene; labels a/b; a var column of symbols."""
    rng = np.random.default_rng(seed)
    labels = np.array(["a", "b"])[np.arange(N) % 2]
    counts = rng.poisson(2.0, size=(N, len(GENES))).astype(float)
    for marker in ("G2", "G9"):
        counts[labels == "b", GENES.index(marker)] += rng.poisson(6.0, (labels == "b").sum())
    obs = pd.DataFrame({"label": labels}, index=[f"c{i:02d}" for i in range(N)])
    var = pd.DataFrame({"symbol": [f"SYM{g[1:]}" for g in GENES]}, index=GENES)
    return ad.AnnData(counts, obs=obs, var=var)


def _layout(raw: str = "none", *, layers: bool = True, nan_labels: bool = False,
            blank_labels: bool = False):
    """X: log1p of the HVG counts; layer "counts"; raw with the same, more or fewer genes."""
    cells = _cells()
    full = ad.AnnData(np.log1p(cells.X), obs=cells.obs, var=cells.var)
    adata = full[:, HVG].copy()
    if layers:
        adata.layers["counts"] = cells[:, HVG].X.copy()
    if raw == "more":
        adata.raw = full
    elif raw == "same":
        adata.raw = adata.copy()
    elif raw == "fewer":
        adata.raw = adata[:, HVG[:-2]].copy()
    if nan_labels:
        adata.obs["label"] = adata.obs["label"].astype(object)
        adata.obs.loc[["c03", "c10"], "label"] = None
    if blank_labels:  # text that names no class: empty, and whitespace only
        adata.obs["label"] = adata.obs["label"].astype(object)
        adata.obs.loc["c03", "label"] = ""
        adata.obs.loc["c10", "label"] = "  "
    return adata


@dataclass
class Case:
    """One row of the table: the data, the options, and what every entry point must do."""

    name: str
    data: dict
    options: dict = field(default_factory=dict)
    #: None: accepted; else (library error, rule, fit/evaluate exit code, message pattern)
    refusal: tuple | None = None
    #: predict on the same data: None (accepted), "skip" (not a predict option), or
    #: (model fitted on, extra options, exit code, message pattern)
    predict: object = None
    #: The genes read (accepted cases).
    genes: list | None = None
    commands: tuple = ("fit", "evaluate", "predict")


CASES = [
    Case("X only", {}, genes=HVG),
    Case("a layer", {}, {"layer": "counts"}, genes=HVG),
    Case("raw, the same genes", {"raw": "same"}, {"use_raw": True}, genes=HVG),
    Case("raw, more genes", {"raw": "more"}, {"use_raw": True}, genes=GENES),
    Case("raw, fewer genes", {"raw": "fewer"}, {"use_raw": True},
         refusal=(DataError, "raw_genes", 1,
                  r"use_raw: 2 gene\(s\) of adata\.var are not in adata\.raw \('G5', 'G1'\)"),
         predict=("raw, the same genes", (), 1, r"2 gene\(s\) of adata\.var are not in adata\.raw")),
    Case("no raw", {}, {"use_raw": True},
         refusal=(DataError, "no_raw", 1, r"--use-raw: d\.h5ad has no raw data"),
         predict=("raw, the same genes", (), 1, r"fitted on raw\.X \(use_raw\) but the data have "
                                                r"no raw")),
    Case("missing label column", {}, {"label_key": "cell_type"},
         refusal=(LabelError, "obs_column", 2,
                  r"label key 'cell_type' not found in d\.h5ad; available: label$"),
         predict=("X only", ("--label-key", "cell_type"), 2,
                  r"label key 'cell_type' not found in d\.h5ad; available: label$")),
    Case("missing labels", {"nan_labels": True}, {},
         refusal=(LabelError, "missing_labels", 1,
                  r"2 sample\(s\) have no label in 'label' \(c03, c10\); give them one or drop "
                  r"them from the data$"),
         predict=("X only", ("--label-key", "label"), 1,
                  r"2 sample\(s\) have no label in 'label' \(c03, c10\)")),
    Case("empty labels", {"blank_labels": True}, {},
         refusal=(LabelError, "empty_labels", 1,
                  r"2 sample\(s\) have an empty label in 'label' \(c03, c10\); give them one or "
                  r"drop them from the data$"),
         predict=("X only", ("--label-key", "label"), 1,
                  r"2 sample\(s\) have an empty label in 'label' \(c03, c10\)")),
    Case("unknown layer", {"layers": False}, {"layer": "counts"},
         refusal=(DataError, "layer", 2, r"--layer counts: d\.h5ad has no layer 'counts'; its "
                                         r"layers: none$"),
         predict=("a layer", (), 1, r"fitted on layer 'counts', which the data lack")),
    Case("layer and raw", {"raw": "more"}, {"layer": "counts", "use_raw": True},
         refusal=(ValueError, "layer_and_raw", 2, r"give --layer or --use-raw, not both$"),
         predict="skip"),
    Case("groups column missing", {}, {"groups": "donor"},
         refusal=(LabelError, "obs_column", 2,
                  r"--groups donor: no column 'donor' in d\.h5ad; available: label$"),
         predict="skip"),
    Case("symbol key present", {}, {"symbol_key": "symbol"}, genes=HVG,
         commands=("fit",)),
    Case("symbol key absent", {}, {"symbol_key": "gene_symbol"},
         refusal=(DataError, "symbol_key", 1, r"symbol_key 'gene_symbol' is not a var column"),
         commands=("fit",)),
]
BY_NAME = {case.name: case for case in CASES}


def _args(case: Case) -> list[str]:
    opts = case.options
    args = ["--label-key", opts.get("label_key", "label")]
    if opts.get("layer"):
        args += ["--layer", opts["layer"]]
    if opts.get("use_raw"):
        args.append("--use-raw")
    if opts.get("groups"):
        args += ["--groups", opts["groups"]]
    if opts.get("symbol_key"):
        args += ["--symbol-key", opts["symbol_key"]]
    return args


def _write(case: Case, folder):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "d.h5ad"
    _layout(**case.data).write_h5ad(path)
    return path


#: The cheapest fits the command line makes: the path chosen by LOO (groups need the inner CV,
#: refused before it starts), a short path, no certainty columns.
FIT = ("--no-certainty", "--max-steps", "8", "--no-figures", "-q")
EVALUATE = ("--splits", "1", "--no-l1", "--max-steps", "8", "--no-figures", "-q")


@pytest.fixture(scope="module")
def fits(tmp_path_factory):
    """``fit`` of every accepted case: ``{case: (data file, results folder, result)}``."""
    out = {}
    for case in CASES:
        if case.refusal is not None or "fit" not in case.commands:
            continue
        folder = tmp_path_factory.mktemp("fit")
        path = _write(case, folder)
        result = run_cli("fit", path, *_args(case), "--criterion", "loo", *FIT,
                         "-o", folder / "r")
        out[case.name] = (path, folder / "r", result)
    return out


# ---- the library: ExpressionData.from_anndata (and rank_genes for the refusals) ---------------

@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_from_anndata(case):
    adata = _layout(**case.data)
    opts = dict(case.options)
    label_key = opts.pop("label_key", "label")
    if case.refusal is None:
        data = ExpressionData.from_anndata(adata, label_key, **opts)
        assert list(data.var_names) == case.genes
        assert data.shape == (N, len(case.genes))
        assert data.input == Input(opts.get("layer"), bool(opts.get("use_raw")))
        expected = (adata.raw.X if opts.get("use_raw") else
                    adata.layers[opts["layer"]] if opts.get("layer") else adata.X)
        np.testing.assert_array_equal(np.asarray(data.X), np.asarray(expected))
        np.testing.assert_array_equal(data.labels, adata.obs["label"].to_numpy())
        if opts.get("symbol_key"):
            assert list(data.descriptions) == [f"SYM{g[1:]}" for g in case.genes]
        return
    error, rule, _, _ = case.refusal
    with pytest.raises(error) as caught:
        ExpressionData.from_anndata(adata, label_key, **opts)
    assert caught.value.rule == rule
    with pytest.raises(error) as ranked:
        ardselect.rank_genes(adata.copy(), label_key,
                             estimator=ardselect.ARDClassifier(criterion="loo"), **opts)
    assert ranked.value.rule == rule


# ---- the command line: fit, evaluate, predict accept and refuse the same cases --------------

@pytest.mark.parametrize("case", [c for c in CASES if "fit" in c.commands], ids=lambda c: c.name)
def test_cli_fit(case, fits, tmp_path):
    if case.refusal is not None:
        path = _write(case, tmp_path)
        criterion = "cv" if case.options.get("groups") else "loo"
        result = run_cli("fit", "--no-figures", path, *_args(case), "--criterion", criterion, *FIT,
                         "-o", tmp_path / "r")
        one_error(result, case.refusal[2], case.refusal[3])
        assert not (tmp_path / "r").exists()
        return
    _, out, result = fits[case.name]
    assert result.exit_code == 0, result.stderr
    genes = pd.read_csv(out / "genes.tsv", sep="\t")
    assert sorted(genes["gene"]) == sorted(case.genes)  # the genes the door read
    model = json.loads((out / "model.json").read_text())
    assert model["input"] == {"layer": case.options.get("layer"),
                              "use_raw": bool(case.options.get("use_raw"))}
    if case.options.get("symbol_key"):
        assert dict(zip(genes["gene"], genes["description"], strict=True))["G2"] == "SYM2"


@pytest.mark.parametrize("case", [c for c in CASES if "evaluate" in c.commands],
                         ids=lambda c: c.name)
def test_cli_evaluate(case, tmp_path):
    path = _write(case, tmp_path)
    result = run_cli("evaluate", path, *_args(case), *EVALUATE, "-o", tmp_path / "e")
    if case.refusal is not None:
        one_error(result, case.refusal[2], case.refusal[3])
        assert not (tmp_path / "e").exists()
        return
    assert result.exit_code == 0, result.stderr
    selection = pd.read_csv(tmp_path / "e" / "selection.tsv", sep="\t")
    assert sorted(selection.iloc[:, 0].astype(str)) == sorted(case.genes)


@pytest.mark.parametrize("case", [c for c in CASES if "predict" in c.commands
                                  and c.predict != "skip"], ids=lambda c: c.name)
def test_cli_predict(case, fits, tmp_path):
    if case.refusal is None:
        path, out, _ = fits[case.name]
        result = run_cli("predict", out / "model.json", path, "-o", tmp_path / "p.tsv")
        assert result.exit_code == 0, result.stderr
        pred = pd.read_csv(tmp_path / "p.tsv", sep="\t")
        assert list(pred["sample"]) == [f"c{i:02d}" for i in range(N)]
        assert (pred["predicted"] == pred["label"]).mean() > 0.8
        return
    fitted_on, extra, code, pattern = case.predict
    model = fits[fitted_on][1] / "model.json"
    path = _write(case, tmp_path)
    result = run_cli("predict", model, path, *extra, "-o", tmp_path / "p.tsv")
    one_error(result, code, pattern)
    assert not (tmp_path / "p.tsv").exists()


def test_raw_with_more_genes_is_one_layout_everywhere(fits):
    # scanpy's layout: the fit, the model's predictions and the API read raw's genes alike.
    path, out, _ = fits["raw, more genes"]
    adata = ad.read_h5ad(path)
    model = ardselect.model.load_model(out / "model.json")
    assert model.input == Input(use_raw=True)
    frame = pd.DataFrame(np.asarray(adata.raw.X), index=adata.obs_names,
                         columns=adata.raw.var_names)
    pd.testing.assert_frame_equal(model.predict_proba(adata), model.predict_proba(frame))


def test_the_layer_read_is_the_layer_recorded(fits, tmp_path):
    # No reader puts the layer in place of X: X stays X, and the model reads the layer it names.
    path, out, _ = fits["a layer"]
    data = ExpressionData.read(path, "label", layer="counts")
    original = ad.read_h5ad(path)
    np.testing.assert_array_equal(data.adata.X, original.X)
    np.testing.assert_array_equal(data.X, original.layers["counts"])
    model = ardselect.model.load_model(out / "model.json")
    assert model.input == Input(layer="counts")
    lacking = original.copy()
    lacking.X = np.zeros_like(lacking.X)  # X holds other values: the model reads its layer
    pd.testing.assert_frame_equal(model.predict_proba(lacking), model.predict_proba(original))


@pytest.mark.parametrize(("kwargs", "rule"), [
    ({"layer": "counts", "use_raw": True}, "layer_and_raw"),
    ({"layer": "nope"}, "layer"),
    ({"use_raw": True, "lazy": True}, "lazy_raw"),
])
def test_check_source_reads_the_store_index(kwargs, rule, tmp_path):
    path = _write(BY_NAME["raw, more genes"], tmp_path)
    assert ExpressionData.check_source(path) == ["counts"]
    with pytest.raises(ValueError, match=".") as caught:
        ExpressionData.check_source(path, **kwargs)
    assert caught.value.rule == rule


def test_layer_and_raw_apply_to_anndata_only(tmp_path):
    table = _layout().to_df()
    table.insert(0, "label", _layout().obs["label"])
    table.to_csv(tmp_path / "t.csv")
    with pytest.raises(ardselect.exceptions.FileFormatError, match="apply to .h5ad and .zarr input, not csv"):
        ExpressionData.read(tmp_path / "t.csv", "label", layer="counts")
    data = ExpressionData.read(tmp_path / "t.csv", "label")
    assert list(data.var_names) == HVG
    result = run_cli("fit", "--no-figures", tmp_path / "t.csv", "--use-raw", "-o", tmp_path / "r")
    one_error(result, 2, r"--layer and --use-raw apply to \.h5ad and \.zarr input only")
