"""Lazy AnnData (dask arrays in row chunks): preprocessing, rank_genes and the CLI equal the in-memory run."""

import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

import ardselect
from ardselect.exceptions import DataError
from ardselect.preprocessing import Preprocessor

da = pytest.importorskip("dask.array")
ad = pytest.importorskip("anndata")


def _counts(n=240, p=60, seed=0):
    """Sparse integer counts with three classes, each marked by more counts in two genes."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, size=n)
    X = sp.random(n, p, density=0.15, format="csr", random_state=seed + 1)
    X.data = np.round(X.data * 6)
    X = X + sp.csr_matrix((np.full(2 * n, 4.0), (np.tile(np.arange(n), 2),
                                                  np.concatenate([2 * y, 2 * y + 1]))),
                          shape=(n, p))
    X = sp.csr_matrix(X)
    X.eliminate_zeros()
    return X, y


def _lazy(X, rows=70, cols=-1):
    return da.from_array(X, chunks=(rows, cols), asarray=False)


def _dense(Z):
    return Z.toarray() if sp.issparse(Z) else np.asarray(Z)


CASES = [
    ("dense counts", {}),
    ("dense counts", {"log": "none"}),
    ("dense counts", {"floor": 1.0, "cap": 6.0}),
    ("sparse counts", {}),
    ("sparse counts", {"pseudocount": 0.5}),
    ("sparse counts", {"log": "none", "standardize": False}),
    ("normal", {}),
]


def _matrix(kind):
    X, _ = _counts()
    if kind == "dense counts":
        X = X.toarray()
        X[:, 5] = 3.0  # a constant gene is dropped
        return X
    if kind == "normal":
        return np.random.default_rng(3).normal(size=(240, 30))
    return X


@pytest.mark.parametrize(("kind", "params"), CASES)
@pytest.mark.parametrize("chunks", [(70, -1), (240, 25)])
def test_preprocessor_on_chunks_equals_in_memory(kind, params, chunks):
    # One pass of per-chunk statistics merged pairwise (odd number of chunks, and chunks split
    # over the genes) gives the in-memory fit up to rounding, and the same transform.
    X = _matrix(kind)
    ref = Preprocessor(**params).fit(X)
    got = Preprocessor(**params).fit(_lazy(X, *chunks))
    assert (got.log_, got.log_reason_, got.sparse_) == (ref.log_, ref.log_reason_, ref.sparse_)
    np.testing.assert_array_equal(got.keep_, ref.keep_)
    np.testing.assert_allclose(got.center_, ref.center_, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(got.scale_, ref.scale_, rtol=1e-12)
    Z = got.transform(_lazy(X, *chunks))
    assert isinstance(Z, da.Array)
    np.testing.assert_allclose(_dense(Z.compute()), _dense(ref.transform(X)), atol=1e-12)


def test_lazy_preprocessor_refuses_what_the_in_memory_one_refuses():
    X = _matrix("dense counts")
    for bad in ([(7, 4, np.nan)], [(7, 4, np.inf)], [(7, 6, np.nan), (150, 4, -np.inf)]):
        Y = X.copy()
        for i, j, v in bad:
            Y[i, j] = v
        with pytest.raises(DataError) as in_memory:
            Preprocessor().fit(Y)
        with pytest.raises(DataError) as lazy:  # the same words: count, kinds, first column
            Preprocessor().fit(_lazy(Y))
        assert str(lazy.value) == str(in_memory.value)
    assert str(lazy.value).startswith("Input X contains 2 NaN and infinite value(s) (first in "
                                      "column 4)")
    D = _matrix("dense counts")
    D[9, 3] = np.nan  # sparse: the column, not the row, is named (row 9 was named once)
    S = sp.csr_matrix(D)
    for Z in (S, _lazy(S)):
        with pytest.raises(DataError, match=r"1 NaN value\(s\) \(first in column 3\)"):
            Preprocessor().fit(Z)
    X[7, 4] = np.nan
    X[7, 4] = -3.0  # counts-like data with one negative value: log2(x + 1) cannot take it
    with pytest.raises(DataError, match="cannot take log2"):
        Preprocessor(log="log2").fit(_lazy(X))
    with pytest.raises(DataError, match="constant"):
        Preprocessor().fit(_lazy(np.ones((10, 4))))


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    X, y = _counts()
    obs = pd.DataFrame({"cell_type": np.array(["T", "B", "NK"])[y]},
                       index=[f"c{i}" for i in range(y.size)])
    var = pd.DataFrame({"symbol": [f"S{j}" for j in range(X.shape[1])]},
                       index=[f"g{j}" for j in range(X.shape[1])])
    adata = ad.AnnData(X=X, obs=obs, var=var, layers={"counts": X.copy()})
    root = tmp_path_factory.mktemp("stores")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # anndata's note on the zarr format version
        adata.write_zarr(root / "cells.zarr")
    adata.write_h5ad(root / "cells.h5ad")
    return root, adata


@pytest.mark.parametrize(("name", "max_samples"), [
    ("cells.zarr", 120), ("cells.h5ad", 120),
    pytest.param("cells.zarr", None, marks=pytest.mark.slow),  # every cell, by passes (~30 s)
])
def test_rank_genes_on_a_lazy_store_equals_in_memory(stores, name, max_samples):
    # With max_samples a sketch is gathered; without, every cell is fitted exactly by passes
    # over the chunks (the store is never loaded).
    root, adata = stores
    lazy = ardselect.io.read_lazy(root / name, chunk_rows=70)
    assert isinstance(lazy.X, da.Array)
    assert lazy.X.chunks[0] == (70, 70, 70, 30)
    params = {"estimator": ardselect.ARDClassifier(max_samples=max_samples)}
    ref = adata.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ardselect.rank_genes(ref, "cell_type", **params)
        ardselect.rank_genes(lazy, "cell_type", **params)
    a, b = ardselect.get.ranked_genes_df(ref), ardselect.get.ranked_genes_df(lazy)
    cols = ["class", "rank", "gene", "description", "selected"]
    pd.testing.assert_frame_equal(a[cols], b[cols])
    np.testing.assert_allclose(b["weight"], a["weight"], rtol=1e-9, atol=1e-12)
    assert lazy.uns["ardselect"]["n_fit_samples"] == (max_samples or adata.n_obs)
    assert (lazy.uns["ardselect"]["n_store_passes"] > 0) == (max_samples is None)
    assert ref.uns["ardselect"]["n_store_passes"] == 0
    assert (lazy.uns["ardselect"]["preprocessing"]["description"]
            == ref.uns["ardselect"]["preprocessing"]["description"])
    for c in ("T", "B", "NK"):
        np.testing.assert_allclose(lazy.uns["ardselect"]["logfoldchanges"][c],
                                   ref.uns["ardselect"]["logfoldchanges"][c], rtol=1e-12)
    assert isinstance(lazy.X, da.Array)  # still on disk


def test_read_lazy_layer_and_errors(stores, tmp_path):
    root, adata = stores
    lazy = ardselect.io.read_lazy(root / "cells.zarr", layer="counts")
    assert set(lazy.layers.keys()) == {"X", "counts"}
    assert abs(lazy.X.compute() - adata.layers["counts"]).max() == 0
    with pytest.raises(DataError, match="layer 'nope' not found in cells.zarr; available layers: "
                                        "counts"):
        ardselect.io.read_lazy(root / "cells.zarr", layer="nope")
    (tmp_path / "empty.zarr").mkdir()
    with pytest.raises(ardselect.exceptions.FileFormatError, match="empty.zarr"):
        ardselect.io.read_lazy(tmp_path / "empty.zarr")
    (tmp_path / "flat.zarr").write_text("not a store")
    with pytest.raises(ardselect.exceptions.FileFormatError, match="is not a zarr store"):
        ardselect.io.read_data(tmp_path / "flat.zarr")


@pytest.mark.parametrize(("sketch", "criterion"), [
    ([], ["--criterion", "evidence", "--max-steps", "20", "--no-certainty"]),
    # (the default, on a sketch and by passes over every cell: 20 to 40 s each)
    pytest.param(["--max-samples", "120"], [], marks=pytest.mark.slow),
    pytest.param([], [], marks=pytest.mark.slow),
])
def test_cli_fit_lazy_store_equals_in_memory_file(stores, tmp_path, sketch, criterion):
    # Without --max-samples the store is fitted exactly by passes over its chunks.
    from ardselect_cli.main import app
    from typer.testing import CliRunner

    root, _ = stores
    runner = CliRunner()
    common = ["--label-key", "cell_type", *sketch, *criterion, "--show", "0"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = runner.invoke(app, ["fit", "--no-figures", str(root / "cells.h5ad"), "-o", str(tmp_path / "a"),
                                  *common, "--quiet"])
        got = runner.invoke(app, ["fit", "--no-figures", str(root / "cells.zarr"), "--lazy", "-o",
                                  str(tmp_path / "b"), *common])
    assert ref.exit_code == 0, ref.output
    assert got.exit_code == 0, got.output
    a = pd.read_csv(tmp_path / "a" / "genes.tsv", sep="\t")
    b = pd.read_csv(tmp_path / "b" / "genes.tsv", sep="\t")
    pd.testing.assert_frame_equal(a[["class", "rank", "gene", "selected"]],
                                  b[["class", "rank", "gene", "selected"]])
    said = ("fitted on a stratified sketch of 120 of 240 samples" if sketch
            else "fitted exactly on all 240 samples of the store, by ")
    assert said in got.output


@pytest.mark.parametrize(("args", "message"), [
    (["--lazy", "--use-raw"], "--use-raw cannot be read lazily"),
    (["--max-samples", "1"], "--max-samples must be an integer >= 2, 'auto' or 'all', got '1'"),
    (["--max-samples", "some"], "--max-samples must be an integer >= 2, 'auto' or 'all'"),
])
def test_cli_fit_lazy_refusals(stores, tmp_path, args, message):
    from ardselect_cli.main import app
    from typer.testing import CliRunner

    root, _ = stores
    res = CliRunner().invoke(app, ["fit", "--no-figures", str(root / "cells.zarr"), "--label-key", "cell_type",
                                   "-o", str(tmp_path / "out"), *args])
    assert res.exit_code == 2
    assert message in res.output
    assert not (tmp_path / "out").exists()


def test_cli_lazy_needs_a_store(tmp_path):
    from ardselect_cli.main import app
    from typer.testing import CliRunner

    table = tmp_path / "x.csv"
    pd.DataFrame({"label": ["a", "b"] * 5, "g1": np.arange(10.0),
                  "g2": np.arange(10.0)[::-1] ** 2}).to_csv(table, index=False)
    res = CliRunner().invoke(app, ["fit", "--no-figures", str(table), "--lazy", "-o", str(tmp_path / "out")])
    assert res.exit_code == 1
    assert "lazy reading applies to .h5ad and .zarr input, not csv" in res.output


def test_predict_reads_only_the_models_genes_from_a_lazy_store(stores, tmp_path):
    from ardselect_cli.main import app
    from typer.testing import CliRunner

    root, adata = stores
    fitted = adata.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ardselect.rank_genes(fitted, "cell_type",
                             estimator=ardselect.ARDClassifier(max_samples=120))
    model = ardselect.get.model(fitted)
    lazy = ardselect.io.read_lazy(root / "cells.zarr", chunk_rows=70)
    np.testing.assert_array_equal(model.predict_proba(lazy).to_numpy(),
                                  model.predict_proba(adata).to_numpy())
    model.save(tmp_path / "model.json")
    runner = CliRunner()
    ref = runner.invoke(app, ["predict", str(tmp_path / "model.json"), str(root / "cells.h5ad"),
                              "-o", str(tmp_path / "a.tsv"), "--quiet"])
    got = runner.invoke(app, ["predict", str(tmp_path / "model.json"), str(root / "cells.zarr"),
                              "--lazy", "-o", str(tmp_path / "b.tsv"), "--quiet"])
    assert ref.exit_code == 0, ref.output
    assert got.exit_code == 0, got.output
    assert (tmp_path / "a.tsv").read_text() == (tmp_path / "b.tsv").read_text()
