"""Readers, writers, preprocessing and the portable model of ardselect.io (no ARD fit here)."""

from __future__ import annotations

import gzip
import json

import anndata as ad
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from ardselect import DataError, FileFormatError, LabelError, MissingFileError, ModelError
from ardselect import io as aio

# ------------------------------------------------------------------------------ formats


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("a.h5ad", "h5ad"),
        ("a.CSV", "csv"),
        ("a.csv.gz", "csv"),
        ("a.tsv", "tsv"),
        ("a.txt.gz", "tsv"),
        ("a.gct", "gct"),
        ("a.gct.gz", "gct"),
    ],
)
def test_detect_format(name, fmt):
    assert aio.detect_format(name) == fmt


def test_detect_format_unknown():
    with pytest.raises(FileFormatError, match=r"cannot tell the format of a\.xlsx.*known: \.h5ad"):
        aio.detect_format("a.xlsx")


def test_missing_file(tmp_path):
    with pytest.raises(MissingFileError, match="file not found"):
        aio.read_data(tmp_path / "nope.h5ad")


def test_csv_samples_in_rows(tmp_path, expression):
    df = expression()
    df.insert(2, "batch", "b1")
    path = tmp_path / "x.csv"
    df.to_csv(path, index=False)
    adata = aio.read_data(path, label_key="label")
    assert adata.shape == (36, 24)
    assert list(adata.obs.columns) == ["label", "batch"]
    assert adata.obs_names[0] == "s00"
    assert adata.var_names[0] == "G0"
    np.testing.assert_array_equal(adata.X, df.iloc[:, 3:].to_numpy())


def test_csv_numeric_sample_ids(tmp_path, expression):
    df = expression(n_samples=6, n_genes=3)
    df["sample"] = range(101, 107)
    df.to_csv(tmp_path / "x.csv", index=False)
    adata = aio.read_data(tmp_path / "x.csv", label_key="label")
    assert list(adata.var_names) == ["G0", "G1", "G2"]
    assert adata.obs_names[0] == "101"


def test_tsv_gz_numeric_labels(tmp_path, expression):
    df = expression()
    df["label"] = (df["label"] == "case").astype(int)
    path = tmp_path / "x.tsv.gz"
    df.to_csv(path, sep="\t", index=False)
    adata = aio.read_data(path, label_key="label")
    assert "label" in adata.obs.columns  # a numeric label column is not taken as a gene
    assert adata.n_vars == 24


def test_csv_genes_in_rows_with_label_row(tmp_path, expression):
    df = expression(n_samples=6, n_genes=4)
    genes = df.drop(columns=["sample", "label"]).T
    genes.columns = df["sample"].to_numpy()
    genes.insert(0, "Description", [f"gene {g}" for g in genes.index])
    label_row = pd.DataFrame([["", *df["label"]]], columns=genes.columns, index=["label"])
    table = pd.concat([label_row, genes])
    path = tmp_path / "g.csv"
    table.rename_axis("gene").to_csv(path)
    adata = aio.read_data(path, genes_in_rows=True, label_key="label")
    assert adata.shape == (6, 4)
    assert list(adata.obs["label"]) == list(df["label"])
    assert adata.var.loc["G2", "Description"] == "gene G2"
    np.testing.assert_allclose(adata.X, df.iloc[:, 2:].to_numpy())


def test_labels_from_table(tmp_path, expression):
    df = expression(n_samples=6, n_genes=3)
    path = tmp_path / "x.csv"
    df.drop(columns="label").to_csv(path, index=False)
    lab = tmp_path / "labels.tsv"
    df[["sample", "label"]].iloc[::-1].to_csv(lab, sep="\t", index=False)  # any order
    adata = aio.read_data(path, labels=lab, label_key="grp")
    assert list(adata.obs["grp"]) == list(df["label"])
    df[["sample", "label"]].iloc[:4].to_csv(lab, sep="\t", index=False)
    with pytest.raises(LabelError, match="no label for 2 sample"):
        aio.read_data(path, labels=lab)


def test_duplicated_genes_csv(tmp_path, expression):
    df = expression(n_samples=6, n_genes=3)
    path = tmp_path / "x.csv"
    df.to_csv(path, index=False)
    text = path.read_text().replace("G2", "G1", 1)
    path.write_text(text)
    with pytest.raises(DataError, match=r"1 duplicated gene name\(s\) \(G1"):
        aio.read_data(path, label_key="label")


def test_not_a_table(tmp_path):
    path = tmp_path / "x.csv.gz"
    path.write_bytes(b"this is not gzip")
    with pytest.raises(FileFormatError, match="cannot read x.csv.gz as a CSV table"):
        aio.read_data(path)


# ------------------------------------------------------------------------------ h5ad


def test_h5ad_wrong_signature(tmp_path):
    path = tmp_path / "x.h5ad"
    path.write_text("sample,label\n")
    with pytest.raises(FileFormatError, match="not an HDF5/h5ad file"):
        aio.read_data(path)


def test_h5ad_truncated(tmp_path, adata_factory):
    path = tmp_path / "x.h5ad"
    adata_factory().write_h5ad(path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 3])
    with pytest.raises(FileFormatError, match="cannot read x.h5ad as h5ad"):
        aio.read_data(path)


def test_h5ad_layer(tmp_path, adata_factory):
    adata = adata_factory()
    adata.layers["counts"] = sp.csr_matrix(np.round(adata.X))
    path = tmp_path / "x.h5ad"
    adata.write_h5ad(path)
    back = aio.read_data(path, layer="counts")
    assert sp.issparse(back.X)
    with pytest.raises(DataError, match="layer 'nope' not found.*available layers: counts"):
        aio.read_data(path, layer="nope")
    with pytest.raises(FileFormatError, match="genes-in-rows applies to CSV/TSV"):
        aio.read_data(path, genes_in_rows=True)


# ------------------------------------------------------------------------------ GCT / CLS


def test_gct_cls_round_trip(tmp_path, adata_factory):
    adata = adata_factory(n_samples=8, n_genes=5)
    gct = tmp_path / "x.gct"
    cls = tmp_path / "x.cls"
    aio.write_gct(adata, gct, description_key="symbol")
    aio.write_cls(adata.obs["label"], cls)
    assert gct.read_text().startswith("#1.2\n5\t8\nName\tDescription\ts00\t")
    back = aio.read_data(gct, labels=cls)
    np.testing.assert_allclose(back.X, adata.X, rtol=1e-9)
    assert list(back.var_names) == list(adata.var_names)
    assert list(back.var["description"]) == list(adata.var["symbol"])
    assert list(back.obs["label"]) == list(adata.obs["label"])


def test_gct_gz_round_trip(tmp_path, adata_factory):
    adata = adata_factory(n_samples=4, n_genes=3)
    path = tmp_path / "x.gct.gz"
    aio.write_gct(adata, path)
    with gzip.open(path, "rt") as fh:
        assert fh.readline() == "#1.2\n"
    np.testing.assert_allclose(aio.read_gct(path).X, adata.X, rtol=1e-9)


def test_gct_errors(tmp_path):
    path = tmp_path / "x.gct"
    path.write_text("#1.3\n1\t1\n")
    with pytest.raises(FileFormatError, match="not a GCT 1.2 file"):
        aio.read_gct(path)
    path.write_text("#1.2\n2\t2\nName\tDescription\ta\tb\ng1\td\t1\t2\n")
    with pytest.raises(FileFormatError, match="declares 2 genes x 2 samples but the table has 1 x 2"):
        aio.read_gct(path)
    path.write_text("#1.2\n2\t1\nName\tDescription\ta\ng1\td\t1\ng1\td\t2\n")
    with pytest.raises(DataError, match="duplicated gene name"):
        aio.read_gct(path)


def test_cls_numeric_tokens(tmp_path):
    path = tmp_path / "x.cls"
    path.write_text("5 2 1\n# AML ALL\n1 1 0 0 1\n")
    # First distinct token (1) is the first name (AML), as the GSEA documentation says.
    assert list(aio.read_cls(path)) == ["AML", "AML", "ALL", "ALL", "AML"]


def test_cls_errors(tmp_path):
    path = tmp_path / "x.cls"
    path.write_text("4 2 1\n# A B\nA A B\n")
    with pytest.raises(FileFormatError, match="declares 4 samples but line 3 has 3 labels"):
        aio.read_cls(path)
    path.write_text("just text\n")
    with pytest.raises(FileFormatError, match="not a categorical CLS file"):
        aio.read_cls(path)
    with pytest.raises(LabelError, match="cannot be empty or contain spaces"):
        aio.write_cls(["a b", "c"], tmp_path / "y.cls")


def test_cls_length_mismatch(tmp_path, adata_factory):
    adata = adata_factory(n_samples=4, n_genes=3)
    gct = tmp_path / "x.gct"
    aio.write_gct(adata, gct)
    cls = tmp_path / "x.cls"
    aio.write_cls(["a", "b", "a"], cls)
    with pytest.raises(LabelError, match="3 labels but the data have 4 samples"):
        aio.read_data(gct, labels=cls)


# ------------------------------------------------------------------------------ preprocessing


def test_preprocessor_auto_log():
    counts = np.array([[0.0, 10, 3], [5, 300, 4], [2, 40, 9]])
    assert aio.Preprocessor().fit(counts).log_ == "log2"
    logged = np.log2(counts + 1) - 3.0  # negative values: already log scale
    assert aio.Preprocessor().fit(logged).log_ == "none"
    small_ints = np.array([[0.0, 1, 3], [2, 0, 4], [1, 1, 0]])
    assert aio.Preprocessor().fit(small_ints).log_ == "log2"
    scaled = np.array([[0.1, 0.5], [0.9, 0.3]])
    assert aio.Preprocessor().fit(scaled).log_ == "none"


def test_preprocessor_golub_convention():
    X = np.array([[-50.0, 20000, 7], [300, 1000, 7], [5000, 100, 7]])
    pre = aio.Preprocessor("log10", pseudocount=0.0, floor=100, cap=16000, standardize=False)
    Z = pre.fit_transform(X)
    expected = np.log10(np.clip(X[:, :2], 100, 16000))
    np.testing.assert_allclose(Z, expected)
    assert pre.n_dropped_ == 1
    assert list(pre.get_feature_names_out(["a", "b", "c"])) == ["a", "b"]
    assert "floor 100, cap 16000, log10(x), dropped 1 constant gene(s)" in pre.describe()


def test_preprocessor_default_pseudocount():
    X = np.array([[150.0, 5], [300, 9], [1000, 2]])
    assert aio.Preprocessor("log10", floor=100).fit(X).pseudocount_ == 0.0
    assert aio.Preprocessor("log10").fit(X).pseudocount_ == 1.0
    assert aio.Preprocessor("log10", floor=100, pseudocount=2).fit(X).pseudocount_ == 2.0


def test_preprocessor_log_of_negative():
    X = np.array([[-5.0, 1], [3, 2]])
    with pytest.raises(DataError, match="cannot take log2 of 1 value.*set a floor"):
        aio.Preprocessor("log2").fit(X)


def test_preprocessor_standardize_and_replay():
    rng = np.random.default_rng(3)
    X = np.exp(rng.normal(size=(20, 6)) + 4)
    pre = aio.Preprocessor().fit(X, feature_names=[f"g{i}" for i in range(6)])
    Z = pre.transform(X)
    np.testing.assert_allclose(Z.mean(axis=0), 0, atol=1e-12)
    np.testing.assert_allclose(Z.std(axis=0), 1, atol=1e-12)
    # Stored parameters of a subset of genes replay the same transform on those genes.
    params = json.loads(json.dumps(pre.to_dict([1, 4])))
    np.testing.assert_allclose(aio.Preprocessor.apply_dict(params, X[:, [1, 4]]), Z[:, [1, 4]],
                               rtol=0, atol=1e-14)


def test_preprocessor_sparse_keeps_sparsity():
    rng = np.random.default_rng(4)
    X = sp.random(30, 8, density=0.3, random_state=4, format="csr") * 50
    X = sp.csr_matrix(np.round(X.toarray()))
    pre = aio.Preprocessor().fit(X)
    Z = pre.transform(X)
    assert sp.issparse(Z)
    dense = aio.Preprocessor().fit(X.toarray())
    assert pre.log_ == dense.log_ == "log2"
    # Sparse data are scaled, not centred: same as the dense result plus the dense centre.
    np.testing.assert_allclose(Z.toarray() - dense.transform(X.toarray()),
                               np.broadcast_to(dense.center_ / dense.scale_, Z.shape), atol=1e-12)
    del rng


def test_preprocessor_all_constant():
    with pytest.raises(DataError, match="all 2 genes are constant"):
        aio.Preprocessor().fit(np.ones((4, 2)))


def test_preprocessor_nan():
    X = np.array([[1.0, np.nan], [2.0, 3.0]])
    with pytest.raises(DataError, match="NaN"):
        aio.Preprocessor().fit(X)


# ------------------------------------------------------------------------------ writers


def test_atomic_write_cleans_up(tmp_path):
    target = tmp_path / "out.txt"
    with pytest.raises(KeyboardInterrupt), aio.atomic_write(target) as fh:
        fh.write("partial")
        raise KeyboardInterrupt
    assert list(tmp_path.iterdir()) == []
    with aio.atomic_write(target) as fh:
        fh.write("done\n")
    assert target.read_text() == "done\n"
    assert list(tmp_path.iterdir()) == [target]


def test_write_gmt(tmp_path):
    path = tmp_path / "x.gmt"
    aio.write_gmt({"A_vs_rest": ("desc\twith tab", ["g1", "g2"]), "B": ("d", [])}, path)
    assert path.read_text() == "A_vs_rest\tdesc with tab\tg1\tg2\nB\td\n"


def test_ranked_tsv_formats(tmp_path):
    table = pd.DataFrame(
        {
            "rank": [1, 2],
            "gene": ["a", "b"],
            "selected": [True, False],
            "alpha": [0.123456789012, np.inf],
            "entered_step": pd.array([3, pd.NA], dtype="Int64"),
        }
    )
    path = tmp_path / "g.tsv"
    aio.write_ranked_tsv(table, path)
    assert path.read_text() == (
        "rank\tgene\tselected\talpha\tentered_step\n1\ta\ttrue\t0.123456789\t3\n2\tb\tfalse\tinf\t\n"
    )


def test_path_png_deterministic(tmp_path):
    path_table = pd.DataFrame(
        {
            "class": ["b"] * 4,
            "step": [0, 1, 2, 3],
            "log_evidence": [-9.0, -8.0, -7.5, -7.4],
            "loo_error": [0.2, 0.1, 0.1, 0.1],
            "loo_prob_error": [0.21, 0.12, 0.1, 0.1],
            "n_features": [1, 2, 3, 3],
            "chosen": [False, True, False, False],
        }
    )
    a, b = tmp_path / "a.png", tmp_path / "b.png"
    aio.write_path_png(path_table, a, title="t")
    aio.write_path_png(path_table, b, title="t")
    assert a.read_bytes() == b.read_bytes()
    assert a.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_path_plot_loo_probability_is_log_scaled_down_to_its_smallest_value():
    """Separable data give LOO error probabilities near 1e-300 (and exact zeros): the panel is on a
    log scale whose range reaches the smallest value, with zeros drawn at the 1e-300 floor."""
    path_table = pd.DataFrame(
        {
            "class": ["b"] * 4,
            "step": [0, 1, 2, 3],
            "log_evidence": [-9.0, -8.0, -7.5, -7.4],
            "loo_error": [0.2, 0.0, 0.0, 0.0],
            "loo_prob_error": [0.21, 1e-40, 1e-120, 0.0],
            "n_features": [1, 2, 3, 3],
            "chosen": [False, True, False, False],
        }
    )
    ax = aio.plot_path(path_table).axes[2]
    assert ax.get_yscale() == "log"
    lo, hi = ax.get_ylim()
    assert lo <= 1e-300 and 1.0 <= hi < 10.0
    line = ax.get_lines()[0].get_ydata()
    np.testing.assert_array_equal(line, [0.21, 1e-40, 1e-120, 1e-300])
    ticks = ax.get_yticks()
    assert ticks.max() == 1.0 and ticks.min() >= lo and len(ticks) >= 3


# ------------------------------------------------------------------------------ portable model


def _toy_model(n_classes=2):
    pre = aio.Preprocessor("none", standardize=True).fit(
        np.array([[0.0, 1, 5], [2, 3, 1], [4, 1, 0]]), feature_names=["a", "b", "c"]
    )

    class Post:
        def __init__(self, index, mean, cov):
            self.index, self.mean, self.cov = np.array(index), np.array(mean), np.array(cov)

    class Est:
        pass

    est = Est()
    posts = [Post([0, -1], [1.5, -0.2], [[0.3, 0.05], [0.05, 0.2]])]
    if n_classes == 3:
        posts += [Post([2], [-1.0], [[0.1]]), Post([0, 2, -1], [0.4, 0.7, 0.1], np.eye(3) * 0.2)]
    est.posteriors_ = posts
    classes = ["n", "p"] if n_classes == 2 else ["x", "y", "z"]
    return aio.PortableModel.from_estimator(est, pre, ["a", "b", "c"], classes), pre, posts


def test_portable_model_binary(tmp_path):
    from scipy.special import ndtr

    model, pre, posts = _toy_model()
    assert model.features == ["a"]  # only the genes in the model are required
    path = tmp_path / "m.json"
    model.save(path)
    back = aio.load_model(path)
    data = pd.DataFrame({"c": [9.0, 1.0], "a": [1.0, 3.0], "zz": [0.0, 0.0]})
    proba = back.predict_proba(data)
    z = pre.transform(data.assign(b=0.0)[["a", "b", "c"]].to_numpy())[:, 0]
    cov = posts[0].cov
    h = 1.5 * z - 0.2
    v = cov[0, 0] * z**2 + 2 * cov[0, 1] * z + cov[1, 1]
    np.testing.assert_allclose(proba[:, 1], ndtr(h / np.sqrt(1 + v)), rtol=1e-14)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert list(back.predict(data)) == [["n", "p"][int(p > 0.5)] for p in proba[:, 1]]


def test_portable_model_multiclass_missing_genes():
    model, _, _ = _toy_model(3)
    assert model.features == ["a", "c"]
    proba = model.predict_proba(pd.DataFrame({"a": [0.0, 4.0], "c": [5.0, 0.0]}))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    with pytest.raises(ModelError, match="the data lack 1 of the model's 2 genes: c"):
        model.predict_proba(pd.DataFrame({"a": [0.0]}))
    adata = ad.AnnData(np.zeros((1, 2)), var=pd.DataFrame(index=["a", "a2"]))
    with pytest.raises(ModelError, match="lack 1 .*: c"):
        model.predict_proba(adata)


def test_load_model_errors(tmp_path):
    path = tmp_path / "m.json"
    path.write_text("{not json")
    with pytest.raises(FileFormatError, match="not a JSON model file"):
        aio.load_model(path)
    path.write_text('{"format": "other"}')
    with pytest.raises(ModelError, match="not an ardselect model"):
        aio.load_model(path)
    path.write_text('{"format": "ardselect-model", "format_version": 99}')
    with pytest.raises(ModelError, match="format version 99 is not supported"):
        aio.load_model(path)


def test_calibration_table_counts_and_ece():
    import pandas as pd

    from ardselect.io import calibration_table

    pred = pd.DataFrame({
        "criterion": ["loo"] * 4 + ["evidence"] * 2,
        "n_classes": 2,
        "confidence": [0.55, 0.58, 0.95, 0.97, 0.6, 0.99],
        "correct": [True, False, True, True, True, False],
    })
    t = calibration_table(pred, n_bins=5)
    loo = t[t.criterion == "loo"]
    assert loo["n"].tolist() == [2, 2]
    assert loo["accuracy"].tolist() == [0.5, 1.0]
    # ECE = sum_b (n_b / n) |conf_b - acc_b|, computed by hand
    expected = 0.5 * abs(0.565 - 0.5) + 0.5 * abs(0.96 - 1.0)
    assert loo["ece"].iloc[0] == pytest.approx(expected)
    assert t.loc[t.criterion == "evidence", "bin_low"].tolist() == pytest.approx([0.6, 0.9])


def test_weights_and_calibration_plots_are_written(tmp_path, expression):
    import pandas as pd

    from ardselect import ARDClassifier
    from ardselect.io import (
        calibration_table,
        write_calibration_png,
        write_weights_png,
    )

    df = expression(n_samples=40, n_genes=12, n_classes=3, seed=2)
    X = pd.DataFrame(np.log(df.iloc[:, 2:].to_numpy()), columns=df.columns[2:])
    clf = ARDClassifier().fit(X, df["label"])
    ranked = clf.ranked_features()
    write_weights_png(ranked, tmp_path / "w.png", title="three classes")
    pred = pd.DataFrame({"criterion": "loo", "n_classes": 3,
                         "confidence": clf.predict_proba(X).max(axis=1),
                         "correct": clf.predict(X) == df["label"].to_numpy()})
    write_calibration_png(calibration_table(pred), tmp_path / "c.png")
    for name in ("w.png", "c.png"):
        data = (tmp_path / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000
