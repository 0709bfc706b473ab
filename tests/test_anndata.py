"""ardselect.rank_genes: what it writes into AnnData, h5ad round trips, errors, portable model."""

from __future__ import annotations

import inspect

import anndata as ad
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

import ardselect
from ardselect import ARDClassifier, ExpressionData, fit_signature
from ardselect.exceptions import DataError, LabelError
from ardselect.preprocessing import Preprocessor

#: A paper-style model (type-II maximum likelihood, the intercept an ARD weight, precision floor
#: 0.1, tol 1e-5) for the fixtures that check the path and certainty plumbing on a known model.
_PAPER = {"inclusion_penalty": 0.0, "intercept_alpha": "ard", "alpha_min": 0.1, "tol": 1e-5}


def _fit(X, labels, genes, **kwargs):
    """fit_signature of arrays: samples named "row i"."""
    data = ExpressionData(X=X, labels=np.asarray(labels), var_names=pd.Index(genes),
                          obs_names=pd.Index([f"row {i}" for i in range(X.shape[0])]),
                          label_key="label")
    return fit_signature(data, **kwargs)


@pytest.fixture(scope="module")
def binary(adata_factory):
    adata = adata_factory(n_samples=36, n_genes=24)
    adata.X[:, 5] = 42.0  # a constant gene: dropped and counted
    # The paper's model (criterion "loo", type-II maximum likelihood): these tests check the path
    # and certainty plumbing on a known model.
    out = ardselect.rank_genes(adata, "label", copy=True,
                               estimator=ARDClassifier(criterion="loo", **_PAPER))
    return adata, out


@pytest.fixture(scope="module")
def multi(adata_factory):
    adata = adata_factory(n_samples=36, n_genes=24, n_classes=3)
    ardselect.rank_genes(adata, "label", key_added="markers",
                         estimator=ARDClassifier(criterion="loo", **_PAPER))
    return adata


def test_signature_conventions():
    params = list(inspect.signature(ardselect.rank_genes).parameters.values())
    assert [p.name for p in params[:2]] == ["adata", "groupby"]
    assert all(p.kind is p.KEYWORD_ONLY for p in params[2:-1])
    assert params[-1].kind is params[-1].VAR_KEYWORD  # refuses any other keyword, with a hint
    names = {p.name for p in params}
    assert {"layer", "key_added", "copy", "preprocessor", "estimator"} <= names
    assert inspect.signature(ardselect.rank_genes).parameters["key_added"].default == "ardselect"


def test_binary_writes_var_and_uns(binary):
    original, adata = binary
    assert "ardselect" not in original.uns  # copy=True leaves the input alone
    assert "ardselect_rank" not in original.var
    var = adata.var
    assert var["ardselect_rank"].dtype == np.int64
    assert var["ardselect_selected"].dtype == bool
    assert var["ardselect_weight"].dtype == np.float64
    assert sorted(var["ardselect_rank"]) == list(range(1, 25))
    # G0 marks "case", G1 marks "ctrl"; the positive class is "ctrl" (second in sorted order).
    top = var.sort_values("ardselect_rank").index[:2]
    assert set(top) == {"G0", "G1"}
    assert var.loc["G1", "ardselect_weight"] > 0 > var.loc["G0", "ardselect_weight"]
    assert not var.loc["G5", "ardselect_selected"]
    assert var.loc["G5", "ardselect_rank"] == 24  # the dropped constant gene ranks last
    uns = adata.uns["ardselect"]
    assert list(uns["classes"]) == ["case", "ctrl"]
    assert uns["positive"] == "ctrl"
    assert uns["params"]["version"] == ardselect.__version__
    assert uns["params"]["groupby"] == "label"
    assert uns["preprocessing"]["n_dropped"] == 1
    assert list(uns["preprocessing"]["dropped"]) == ["G5"]
    assert uns["preprocessing"]["log"] == "log2"
    assert set(ardselect.get.chosen_steps(adata)) == {"ctrl"}


def test_binary_tables(binary):
    _, adata = binary
    ranked = ardselect.get.ranked_genes_df(adata)
    assert list(ranked.columns) == [
        "class", "rank", "gene", "description", "selected", "pip", "credible_set",
        "set_probability", "alternatives", "contribution", "std_weight",
        "relevance", "weight", "weight_sd", "alpha", "entered_step", "log_bf_conditional", "z",
        "log_bf_marginal", "cv_frequency", "t_stat",
        "log2_fc", "direction", "note",
    ]
    assert len(ranked) == 24
    assert ranked["rank"].tolist() == list(range(1, 25))
    assert ranked.loc[ranked["gene"] == "G1", "description"].item() == "SYM1"
    sel = ranked[ranked["selected"]]
    assert np.isfinite(sel["alpha"]).all()
    assert np.isinf(ranked.loc[~ranked["selected"], "alpha"]).all()
    assert sel["entered_step"].notna().all()
    path = ardselect.get.path_df(adata)
    assert list(path.columns) == [
        "class", "step", "action", "gene", "n_features", "log_evidence", "loo_error",
        "loo_prob_error", "chosen",
    ]
    assert path["chosen"].sum() == 1
    assert path.loc[path["chosen"], "step"].item() == ardselect.get.chosen_steps(adata)["ctrl"]
    assert set(path["action"]) <= {"init", "add", "delete", "reestimate", "prune"}
    assert path.loc[path["chosen"], "n_features"].item() == sel.shape[0]


def test_certainty_in_var_matches_the_estimator(binary, multi):
    _, adata = binary
    est = ardselect.get.ranked_genes_df(adata).set_index("gene")
    var = adata.var
    for col in ("log_bf_conditional", "log_bf_marginal", "cv_frequency", "t_stat"):
        assert var[f"ardselect_{col}"].dtype == np.float64
        np.testing.assert_array_equal(var[f"ardselect_{col}"], est.loc[var.index, col])
    # The planted genes are likely (an inclusion probability above 0.8 at even prior odds; 0.89
    # and 0.86 in the 4-gene model chosen) and far apart in the data; the dropped constant gene
    # has no evidence either way.
    assert (var.loc[["G0", "G1"], "ardselect_log_bf_conditional"] > np.log(4)).all()
    assert (np.abs(var.loc[["G0", "G1"], "ardselect_t_stat"]) > 3).all()
    assert np.isnan(var.loc["G5", "ardselect_log_bf_conditional"])
    assert "ardselect_log_bf" not in var
    assert "ardselect_p_sign" not in var
    assert np.isnan(var.loc["G5", "ardselect_t_stat"])
    assert var["ardselect_cv_frequency"].isna().all()  # criterion "loo": no inner folds
    for k in range(3):
        block = ardselect.get.ranked_genes_df(multi, "markers", group=f"class{k}")
        block = block.set_index("gene").loc[multi.var_names]
        np.testing.assert_array_equal(multi.varm["markers_t_stat"][:, k], block["t_stat"])
        np.testing.assert_array_equal(multi.varm["markers_log_bf_conditional"][:, k],
                                      block["log_bf_conditional"])


def test_h5ad_round_trip(binary, tmp_path):
    _, adata = binary
    path = tmp_path / "r.h5ad"
    adata.write_h5ad(path)
    back = ad.read_h5ad(path)
    pd.testing.assert_frame_equal(
        ardselect.get.ranked_genes_df(back), ardselect.get.ranked_genes_df(adata)
    )
    pd.testing.assert_frame_equal(ardselect.get.path_df(back), ardselect.get.path_df(adata))
    np.testing.assert_array_equal(
        ardselect.get.model(back).predict_proba(back), ardselect.get.model(adata).predict_proba(adata)
    )
    pd.testing.assert_frame_equal(back.var, adata.var)


def test_multiclass(multi, tmp_path):
    adata = multi
    uns = adata.uns["markers"]
    assert list(uns["classes"]) == ["class0", "class1", "class2"]
    assert adata.varm["markers_rank"].shape == (24, 3)
    assert adata.varm["markers_selected"].dtype == bool
    ranked = ardselect.get.ranked_genes_df(adata, "markers")
    assert len(ranked) == 72
    for k in range(3):
        block = ardselect.get.ranked_genes_df(adata, "markers", group=f"class{k}")
        assert block["gene"].iloc[0] == f"G{k}"  # each class's marker gene ranks first
        assert block["weight"].iloc[0] > 0
    assert list(adata.var.loc[["G0", "G1", "G2"], "markers_class"]) == ["class0", "class1", "class2"]
    assert adata.var["markers_selected"].to_numpy().tolist() == adata.varm["markers_selected"].any(
        axis=1
    ).tolist()
    sets = ardselect.get.gene_sets(adata, "markers")
    assert list(sets) == [f"class{k}_{d}" for k in range(3) for d in ("up", "down")]
    proba = ardselect.get.model(adata, "markers").predict_proba(adata)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    adata.write_h5ad(tmp_path / "m.h5ad")  # class names and tables are h5ad-writable
    back = ad.read_h5ad(tmp_path / "m.h5ad")
    np.testing.assert_array_equal(back.varm["markers_rank"], adata.varm["markers_rank"])


@pytest.mark.parametrize("n_classes", [2, 3])
def test_portable_model_matches_estimator_on_held_out(n_classes, expression):
    df = expression(n_samples=48, n_genes=20, n_classes=n_classes, seed=5)
    genes = [c for c in df.columns if c.startswith("G")]
    train, test = df.iloc[:36], df.iloc[36:]
    res = _fit(train[genes].to_numpy(), train["label"].to_numpy(), genes)
    expected = res.estimator.predict_proba(res.preprocessing.transform(test[genes].to_numpy()))
    # The portable model needs only its own genes, in any order, among others.
    shuffled = test[genes[::-1]].assign(extra=1.0)
    got = res.model.predict_proba(shuffled)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-10)
    back = ardselect.model.PortableModel(__import__("json").loads(res.model.to_json()))
    np.testing.assert_allclose(back.predict_proba(shuffled), expected, rtol=0, atol=1e-10)


def test_positive_versus_rest(adata_factory):
    adata = adata_factory(n_samples=36, n_genes=12, n_classes=3, seed=2)
    ardselect.rank_genes(adata, "label", positive="class2")
    uns = adata.uns["ardselect"]
    assert list(uns["classes"]) == ["rest", "class2"]
    assert "ardselect_class" not in adata.var
    assert adata.var.sort_values("ardselect_rank").index[0] == "G2"
    ranked = ardselect.get.ranked_genes_df(adata, selected_only=True)
    sets = ardselect.get.gene_sets(adata)
    assert set(sets) == {f"class2_{d}" for d in ranked["direction"]}  # no empty set
    assert "than in rest" in sets["class2_up"][0]


def test_sparse_layer_and_symbol_key(adata_factory):
    adata = adata_factory(n_samples=36, n_genes=16, seed=3)
    counts = np.round(adata.X / 10.0)
    counts[counts < 5] = 0  # sparse counts
    adata.layers["counts"] = sp.csr_matrix(counts)
    adata.var["name"] = [f"N{i}" for i in range(16)]
    ardselect.rank_genes(adata, "label", layer="counts", symbol_key="name")
    ranked = ardselect.get.ranked_genes_df(adata)
    assert ranked["description"].str.startswith("N").all()
    assert "scaled per gene" in adata.uns["ardselect"]["preprocessing"]["description"]


# ------------------------------------------------------------------------------ errors


@pytest.fixture
def small(adata_factory):
    return adata_factory(n_samples=12, n_genes=6)


def test_missing_groupby_lists_columns(small):
    small.obs["batch"] = "x"
    with pytest.raises(LabelError, match="'cell_type' is not an obs column; available: label, batch"):
        ardselect.rank_genes(small, "cell_type")


def test_single_class(small):
    small.obs["label"] = "ctrl"
    with pytest.raises(LabelError, match="single class"):
        ardselect.rank_genes(small, "label")


def test_missing_labels(small):
    small.obs["label"] = small.obs["label"].astype(object)
    small.obs.iloc[0, 0] = None
    with pytest.raises(LabelError, match="1 sample\\(s\\) have no label"):
        ardselect.rank_genes(small, "label")


def test_nan_in_matrix(small):
    small.X[2, 3] = np.nan
    with pytest.raises(DataError, match="NaN"):
        ardselect.rank_genes(small, "label")


def test_duplicated_gene_names(small):
    small.var_names = ["a", "b", "a", "c", "d", "b"]
    with pytest.raises(DataError, match=r"2 duplicated gene name\(s\) \(a, b\)"):
        ardselect.rank_genes(small, "label")


def test_unknown_positive(small):
    with pytest.raises(LabelError, match="positive class 'AML' is not a label; labels: case, ctrl"):
        ardselect.rank_genes(small, "label", positive="AML")


def test_layer_errors(small):
    with pytest.raises(DataError, match="layer 'counts' not found"):
        ardselect.rank_genes(small, "label", layer="counts")
    with pytest.raises(ValueError, match="either layer or use_raw"):
        ardselect.rank_genes(small, "label", layer="counts", use_raw=True)
    with pytest.raises(DataError, match="adata.raw is empty"):
        ardselect.rank_genes(small, "label", use_raw=True)


@pytest.mark.parametrize(
    ("options", "error", "match"),
    [({"key_added": "ard/v1"}, ValueError, "without '/'"),
     ({"key_added": ""}, ValueError, "non-empty string")],
)
def test_rank_options_refused_before_any_work(small, options, error, match):
    # A key with "/" would write results that an h5ad file reads back under another key.
    # Nothing is written.
    before = (set(small.uns), list(small.var.columns))
    with pytest.raises(error, match=match):
        ardselect.rank_genes(small, "label", **options)
    assert (set(small.uns), list(small.var.columns)) == before


def test_not_anndata():
    with pytest.raises(TypeError, match="must be an AnnData"):
        ardselect.rank_genes(np.zeros((3, 3)), "label")


@pytest.mark.parametrize(
    ("labels", "match"),
    [
        ([f"s{i}" for i in range(24)], "looks like a sample id"),
        (list(np.linspace(0.1, 5.3, 24)), r"look continuous \(24 distinct numbers from 0.1 to "
                                          r"5.3\)"),
        (list(np.repeat(np.arange(30, 42), 2)), r"look continuous \(12 distinct numbers from 30 "
                                                r"to 41\)"),  # ages, counts: integers all the same
        (["a"] * 11 + ["b"] * 12 + ["c"], r"1 class\(es\) have a single sample \('c'\)"),
    ],
)
def test_labels_that_cannot_be_classes_are_refused(labels, match):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(24, 6))
    with pytest.raises(ardselect.exceptions.LabelError, match=match):
        _fit(X, np.array(labels, dtype=object), [f"g{i}" for i in range(6)])


def test_cluster_ids_are_classes():
    rng = np.random.default_rng(1)
    y = np.repeat(np.arange(12), 3)  # 12 clusters numbered 0..11: classes, not a measurement
    X = rng.normal(size=(36, 14))
    X[np.arange(36), y] += 4.0
    res = _fit(X, y, [f"g{i}" for i in range(14)])
    assert len(res.classes) == 12


def test_integer_coded_labels_are_classes():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(24, 6))
    y = np.repeat([0, 1], 12)
    X[:, 0] += 2 * y
    res = _fit(X, y, [f"g{i}" for i in range(6)])
    assert res is not None


def test_any_class_name_survives_write_h5ad(tmp_path):
    # Issue 12, item 2: a class keyed record named "CD4+/CD25 T Reg" came back as nested groups.
    rng = np.random.default_rng(5)
    names = ["CD4+/CD25 T Reg", "a.b", "\u00e9t\u00e9 \u2014 \u03b1", " x ", "plain"]
    y = np.repeat(names, 8)
    X = rng.normal(size=(y.size, 12))
    for k in range(len(names)):
        X[y == names[k], k] += 3.0
    adata = ad.AnnData(X=X, obs=pd.DataFrame({"cell": y}, index=[f"c{i}" for i in range(y.size)]),
                       var=pd.DataFrame(index=[f"g{j}" for j in range(12)]))
    ardselect.rank_genes(adata, "cell")
    before = ardselect.get.chosen_steps(adata)
    assert set(before) == set(names)
    adata.write_h5ad(tmp_path / "r.h5ad")
    back = ad.read_h5ad(tmp_path / "r.h5ad")
    assert ardselect.get.chosen_steps(back) == before
    assert set(ardselect.get.ranked_genes_df(back)["class"]) == set(names)
    proba = ardselect.get.model(back).predict_proba(back)
    assert proba.shape == (y.size, len(names))


def test_path_warnings_name_classes_by_their_labels():
    # A multi-class path stopped at max_steps was reported as "class 9" (the internal code).
    rng = np.random.default_rng(6)
    names = ["CD4+/CD25 T Reg", "b", "c"]
    y = np.repeat(names, 10)
    X = rng.normal(size=(y.size, 8))
    for k in range(3):
        X[y == names[k], k] += 2.0
    adata = ad.AnnData(X=X, obs=pd.DataFrame({"cell": y}, index=[f"c{i}" for i in range(y.size)]),
                       var=pd.DataFrame(index=[f"g{j}" for j in range(8)]))
    with pytest.warns(UserWarning, match="stopped at max_steps") as record:
        ardselect.rank_genes(adata, "cell", estimator=ARDClassifier(max_steps=1))
    texts = [str(w.message) for w in record if "max_steps" in str(w.message)]
    assert any("class 'CD4+/CD25 T Reg' stopped at max_steps=1 " in t for t in texts), texts
    assert not any("class 0" in t or "class 2" in t for t in texts)


@pytest.mark.parametrize("space", ["layer", "raw"])
def test_model_reads_its_input(space):
    # A model fitted on a layer or raw.X must read the same values, whatever X is.
    rng = np.random.default_rng(8)
    y = np.repeat(["a", "b"], 15)
    counts = rng.poisson(20.0, size=(30, 10)).astype(float)
    counts[y == "b", 3] += 30.0
    adata = ad.AnnData(X=rng.permutation(counts.ravel()).reshape(counts.shape),
                       obs=pd.DataFrame({"y": y}, index=[f"s{i}" for i in range(30)]),
                       var=pd.DataFrame(index=[f"g{j}" for j in range(10)]))
    if space == "layer":
        adata.layers["counts"] = counts
        ardselect.rank_genes(adata, "y", layer="counts")
    else:
        adata.raw = ad.AnnData(X=counts, var=adata.var.copy())
        ardselect.rank_genes(adata, "y", use_raw=True)
    model = ardselect.get.model(adata)
    from_space = model.predict_proba(adata)
    frame = pd.DataFrame(counts, index=adata.obs_names, columns=adata.var_names)
    pd.testing.assert_frame_equal(from_space, model.predict_proba(frame))
    assert (model.predict(adata) == y).mean() > 0.9


def test_constant_features_raise_reaches_the_preprocessed_genes(adata_factory):
    # The preprocessing drops constant genes before the estimator sees them, so
    # constant_features="raise" never raised.
    adata = adata_factory(n_samples=12, n_genes=4)
    adata.X[:, 2] = 5.0
    with pytest.raises(DataError, match=r"1 gene\(s\) are constant \(e\.g\. 'G2'\); drop them or "
                                        r"pass constant_features='warn' or 'ignore'"):
        ardselect.rank_genes(adata, "label",
                             estimator=ARDClassifier(constant_features="raise"))


def _sparse_counts(rng, n, p, n_classes):
    labels = np.repeat([f"type{k}" for k in range(n_classes)], n // n_classes)
    X = sp.random(n, p, density=0.3, format="csr", dtype=np.float32, random_state=rng,
                  data_rvs=lambda k: rng.poisson(3.0, k) + 1.0).toarray()
    for k in range(n_classes):  # a marker per class
        X[labels == f"type{k}", k] += 6.0
    return sp.csr_matrix(X), labels


def test_sketch_rows_are_transformed_and_fitted_as_the_estimator_would(rng):
    """rank_genes transforms only the sketch's rows; the fit is the estimator's own sketched fit."""
    X, labels = _sparse_counts(rng, 240, 30, 3)
    params = {"max_samples": 90, "constant_features": "ignore"}
    res = _fit(X, labels, [f"g{j}" for j in range(30)],
               estimator=ARDClassifier(criterion="loo", **params))
    codes = np.unique(labels, return_inverse=True)[1]
    pre = Preprocessor().fit(X)
    est = ARDClassifier(criterion="loo", **params).fit(pre.transform(X), codes)
    assert res.n_fit_samples == len(est.sketch_) == 90
    np.testing.assert_array_equal(res.estimator.coef_, est.coef_)
    np.testing.assert_array_equal(res.estimator.intercept_, est.intercept_)
    np.testing.assert_array_equal(res.estimator.alpha_, est.alpha_)
    adata = ad.AnnData(X, obs=pd.DataFrame({"cell_type": labels},
                                           index=[f"c{i}" for i in range(240)]))
    ardselect.rank_genes(adata, "cell_type", estimator=ARDClassifier(criterion="loo", **params))
    assert adata.uns["ardselect"]["n_fit_samples"] == 90


def test_class_sums_of_a_sparse_matrix_by_row_blocks(rng, monkeypatch):
    """The fold changes' class sums, a block of rows at a time, equal the whole product bit for bit."""
    import ardselect.signature._anndata_results as results

    X, _ = _sparse_counts(rng, 300, 40, 3)
    X.data += rng.random(X.nnz).astype(np.float32)  # fractions: rounding shows in the sums
    codes = rng.integers(0, 3, 300)
    monkeypatch.setattr(results, "_SUM_ENTRIES", 97)
    for params in ({}, {"log": "none"}, {"cap": 4.0}):
        pre = Preprocessor(**params).fit(X)
        sums, counts, lowest = results._class_sums(pre, codes, 3, X, 0)
        L = X.astype(np.float64)
        if pre.log_ != "none":
            L.data = np.log1p(np.clip(L.data, pre.floor, pre.cap))
        onehot = sp.csr_matrix((np.ones(300), (codes, np.arange(300))), shape=(3, 300))
        np.testing.assert_array_equal(sums, (onehot @ L).toarray())
        np.testing.assert_array_equal(counts, np.bincount(codes, minlength=3))
        assert lowest == L.data.min()
