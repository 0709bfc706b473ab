"""The dask path (the ``dask`` extra) equals the in-memory path on a small on-disk store."""

import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from ardselect import ARDClassifier

da = pytest.importorskip("dask.array")


def _data():
    rng = np.random.default_rng(0)
    n, p = 240, 80
    y = rng.integers(0, 3, size=n)
    X = sp.random(n, p, density=0.1, format="csr", random_state=1)
    X = (X + sp.csr_matrix((np.full(n, 2.0), (np.arange(n), y)), shape=(n, p))).tocsr()
    return X, y


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    ad = pytest.importorskip("anndata")

    X, y = _data()
    path = tmp_path_factory.mktemp("zarr") / "cells.zarr"
    obs = pd.DataFrame({"cell_type": y.astype(str)}, index=[f"c{i}" for i in range(y.size)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # anndata's note on the zarr format version
        ad.AnnData(X=X, obs=obs).write_zarr(path)
    return path, X, y


def _lazy_x(path):
    import zarr
    from anndata.experimental import read_elem_lazy

    return read_elem_lazy(zarr.open(path)["X"], chunks=(100, -1))


def _assert_same_fit(got, ref, X):
    """The same path (actions, genes) and model, up to the order of floating-point sums."""
    a, b = ref.path_, got.path_
    assert len(a) == len(b)
    np.testing.assert_array_equal(a["action"].to_numpy(), b["action"].to_numpy())
    np.testing.assert_array_equal(a["feature"].to_numpy(), b["feature"].to_numpy())
    num = a.select_dtypes("number").columns
    np.testing.assert_allclose(b[num].to_numpy(float), a[num].to_numpy(float), rtol=1e-9,
                               atol=1e-9)
    np.testing.assert_allclose(got.coef_, ref.coef_, rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(got.predict_proba(X), ref.predict_proba(X), rtol=0, atol=1e-11)
    ra, rb = ref.ranked_features(), got.ranked_features()
    np.testing.assert_array_equal(ra["feature"].to_numpy(), rb["feature"].to_numpy())
    np.testing.assert_allclose(rb["log_bf_conditional"].to_numpy(),
                               ra["log_bf_conditional"].to_numpy(), rtol=1e-8, atol=1e-8)
    if hasattr(ref, "cv_results_"):
        np.testing.assert_array_equal(got.cv_results_["chosen"], ref.cv_results_["chosen"])


def test_lazy_zarr_sketch_equals_in_memory(store):
    path, X, y = store
    dX = _lazy_x(path)
    assert isinstance(dX, da.Array)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = ARDClassifier(max_samples=100).fit(X, y)
        got = ARDClassifier(max_samples=100).fit(dX, y)
    assert got.path_.equals(ref.path_)
    np.testing.assert_array_equal(got.coef_, ref.coef_)
    np.testing.assert_array_equal(got.sketch_, ref.sketch_)


@pytest.mark.parametrize("params", [
    {"criterion": "loo"},
    pytest.param({}, marks=pytest.mark.slow),  # the default: its fold paths too (~30 s)
])
def test_exact_fit_of_a_lazy_zarr_store_equals_in_memory(store, params):
    # Without max_samples the store is not gathered: every pass of the path (three classes; with
    # the default's inner cross-validation, its fold paths too) is a reduction over the chunks.
    path, X, y = store
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = ARDClassifier(**params).fit(X, y)
        got = ARDClassifier(**params).fit(_lazy_x(path), y)
    assert got.sketch_ is None
    assert got._n_passes > 0
    _assert_same_fit(got, ref, X)
    # Predictions for a dask array read only the models' genes from the chunks.
    np.testing.assert_array_equal(got.predict_proba(_lazy_x(path)), got.predict_proba(X))
    np.testing.assert_array_equal(got.predict(_lazy_x(path)), got.predict(X))


def test_predicting_a_dask_array_equals_in_memory():
    from ardselect.exceptions import DataError

    X, y = _data()
    # (the kernel basis on the sparse matrix only: its columns are dense either way)
    cases = [(X, {"criterion": "loo"}), (X.toarray(), {"criterion": "loo"}),
             (X, {"kernel": "rbf", "max_samples": 120})]
    for Xin, params in cases:
        dX = da.from_array(Xin, chunks=(100, -1), asarray=False)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = ARDClassifier(**params).fit(Xin, y)
        np.testing.assert_array_equal(m.predict_proba(dX), m.predict_proba(Xin))
        np.testing.assert_array_equal(m.decision_function(dX), m.decision_function(Xin))
    with pytest.raises(DataError, match="X has 3 features, but ARDClassifier is expecting 80"):
        m.predict(da.from_array(np.ones((5, 3)), chunks=(2, -1)))


@pytest.mark.parametrize("params", [
    {"criterion": "loo"},  # the paper's criterion
    pytest.param({}, marks=pytest.mark.slow),  # the default (~20 s)
])
@pytest.mark.parametrize("chunks", ["dense", "sparse"])
def test_exact_lazy_fit_with_screening_equals_in_memory(chunks, params):
    # 400 genes: the path scores its candidates through the safe screening (_screening), whose
    # bounds need the products of two vectors with the design per step (one fused pass).
    from ardselect.engine._sequential import SCREEN_MIN_FEATURES

    rng = np.random.default_rng(3)
    n, p = 150, 400
    assert p >= SCREEN_MIN_FEATURES
    y = rng.integers(0, 2, size=n)
    X = rng.normal(size=(n, p))
    X[:, :4] += 1.2 * y[:, None]
    if chunks == "sparse":
        X = sp.csr_matrix(np.where(np.abs(X) > 0.8, X, 0.0))
    dX = da.from_array(X, chunks=(40, -1), asarray=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = ARDClassifier(**params).fit(X, y)
        got = ARDClassifier(**params).fit(dX, y)
    _assert_same_fit(got, ref, X)


def test_lazy_design_products_equal_the_matrix():
    from ardselect.engine._basis import unit_rms
    from ardselect.engine._lazy import LazyDesign
    from ardselect.engine._validation import constant_columns

    rng = np.random.default_rng(0)
    n, p = 57, 9
    Z = np.where(rng.random((n, p)) < 0.4, rng.normal(size=(n, p)), 0.0)
    Z[:, 4] = 0.0  # an all-zero gene
    Z[:, 6] = 2.5  # a constant gene
    for X in (Z, sp.csr_matrix(Z)):
        dX = da.from_array(X, chunks=(10, -1), asarray=False)
        scale = rng.uniform(0.5, 2.0, size=p + 1)
        rows = rng.permutation(n)[:31]  # any order
        signs = rng.choice([-1.0, 1.0], size=rows.size)
        lazy = (LazyDesign(dX, intercept=False).with_intercept() / scale)[rows].with_signs(signs)
        dense = signs[:, None] * np.column_stack([Z, np.ones(n)])[rows] / scale
        R = rng.normal(size=(rows.size, 3))
        b = rng.uniform(0.1, 2.0, size=rows.size)
        before = lazy.n_passes
        np.testing.assert_allclose(lazy.T @ R, dense.T @ R, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(R.T @ lazy, R.T @ dense, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(lazy.T @ R[:, 0], dense.T @ R[:, 0], rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(lazy.weighted_sq(b), (dense**2).T @ b, rtol=1e-12)
        G, sq = lazy.scores_pass(R, b)
        np.testing.assert_allclose(G, dense.T @ R, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(sq, (dense**2).T @ b, rtol=1e-12)
        assert lazy.n_passes == before + 5  # one pass per product
        idx = np.array([8, 2, p, 2])  # repeats and the intercept
        np.testing.assert_allclose(lazy[:, idx], dense[:, idx], rtol=1e-14)
        passes = lazy.n_passes
        np.testing.assert_allclose(lazy[:, [2, p]], dense[:, [2, p]], rtol=1e-14)
        assert lazy.n_passes == passes  # gathered columns are kept
        sel = lazy.select([1, 5, 2])  # candidate genes scored without gathering them
        np.testing.assert_allclose(sel.T @ R, dense[:, [1, 5, 2]].T @ R, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(sel.weighted_sq(b), (dense[:, [1, 5, 2]] ** 2).T @ b,
                                   rtol=1e-12)
        np.testing.assert_allclose(sel[:, [0, 2]], dense[:, [1, 2]], rtol=1e-14)
        assert sel.shape == (rows.size, 3)
        with pytest.raises(IndexError, match="gene columns only"):
            lazy.select([p])
        scaled, s, nonzero = unit_rms(lazy)
        ref, s_ref, nz_ref = unit_rms(dense)
        np.testing.assert_allclose(s, s_ref, rtol=1e-12)
        np.testing.assert_array_equal(nonzero, nz_ref)
        np.testing.assert_allclose(scaled[:, np.arange(p + 1)], ref, rtol=1e-12, atol=1e-15)
        # Constant on these rows before signing (the intercept too), as the fit asks it.
        unsigned = np.column_stack([Z, np.ones(n)])[rows]
        np.testing.assert_array_equal(constant_columns(lazy), constant_columns(unsigned))
        assert constant_columns(lazy)[[4, 6, p]].all()
        assert lazy.shape == dense.shape


def test_lazy_fit_refuses_nan_and_text():
    from ardselect.exceptions import DataError

    Z = np.ones((30, 4))
    Z[::2, 1] = 3.0
    Z[7, 2] = np.nan
    y = np.arange(30) % 2
    with pytest.raises(DataError, match="NaN or infinite values in 1 column"):
        ARDClassifier().fit(da.from_array(Z, chunks=(10, -1)), y)
    with pytest.raises(DataError, match="must be numeric"):
        ARDClassifier().fit(da.from_array(np.full((30, 4), "a"), chunks=(10, -1)), y)


def test_a_large_dask_array_fitted_whole_warns(store, monkeypatch):
    # Without max_samples every row is fitted exactly (by passes over the chunks, or gathered for a
    # kernel basis); above GATHER_WARN_ROWS rows the user is told the cost (and how to sketch).
    # With a sketch, no warning.
    from ardselect.estimators import _classifier
    from ardselect.exceptions import LabelError

    path, X, y = store
    monkeypatch.setattr(_classifier, "GATHER_WARN_ROWS", 200)
    one_class = np.zeros(y.size)  # the fit then stops right after the warning: no path is run
    with pytest.warns(UserWarning, match="the exact fit reads all 240 rows of the dask array"), \
            pytest.raises(LabelError):
        ARDClassifier().fit(_lazy_x(path), one_class)
    with pytest.warns(UserWarning, match="all 240 rows of the dask array are gathered"), \
            pytest.raises(LabelError):
        ARDClassifier(kernel="rbf").fit(_lazy_x(path), one_class)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(LabelError):
            ARDClassifier(max_samples=100).fit(_lazy_x(path), one_class)


@pytest.mark.slow
def test_classes_run_as_tasks_on_the_users_client(store):
    distributed = pytest.importorskip("distributed")
    path, X, y = store
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = ARDClassifier(max_samples=100).fit(X, y)
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                      dashboard_address=None) as cluster, \
                distributed.Client(cluster):
            got = ARDClassifier(max_samples=100).fit(_lazy_x(path), y)
    assert got.path_.equals(ref.path_)
    np.testing.assert_array_equal(got.coef_, ref.coef_)


@pytest.mark.slow
@pytest.mark.parametrize("scatter_min_bytes", [None, 0])
def test_exact_lazy_passes_run_on_the_users_client(store, monkeypatch, scatter_min_bytes):
    # With 0 every pass's vectors are scattered to the workers (as large ones are), not embedded.
    distributed = pytest.importorskip("distributed")
    from ardselect.engine import _lazy

    if scatter_min_bytes is not None:
        monkeypatch.setattr(_lazy, "SCATTER_MIN_BYTES", scatter_min_bytes)
    path, X, y = store
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = ARDClassifier(criterion="loo").fit(X, y)
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                      dashboard_address=None) as cluster, \
                distributed.Client(cluster) as client, \
                distributed.get_task_stream(client) as tasks:
            assert _lazy._distributed_client() is client
            got = ARDClassifier(criterion="loo").fit(_lazy_x(path), y)
    assert _lazy._distributed_client() is None
    assert len(tasks.data) >= got._n_passes  # every pass ran as tasks on the cluster
    _assert_same_fit(got, ref, X)


@pytest.mark.slow
def test_evaluation_partitions_run_as_tasks_on_the_users_client():
    # model_selection.evaluate under joblib's dask backend: the partitions are tasks on the
    # user's Client, and the results are those of the in-process run.
    distributed = pytest.importorskip("distributed")
    import joblib

    from ardselect.model_selection import evaluate

    X, y = _data()
    X = X.toarray()
    methods = {"ARD-EP": ARDClassifier(criterion="loo", max_steps=20)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref, ref_pred = evaluate(X, y, methods, n_splits=3, random_state=1)
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                      dashboard_address=None) as cluster, \
                distributed.Client(cluster) as client, joblib.parallel_config(backend="dask"), \
                distributed.get_task_stream(client) as tasks:
            got, got_pred = evaluate(X, y, methods, n_splits=3, random_state=1)
    assert len(tasks.data) >= 3  # the partitions (in joblib's batches) ran on the cluster
    cols = ["split", "method", "errors", "log_loss", "genes"]
    pd.testing.assert_frame_equal(got[cols], ref[cols])
    pd.testing.assert_frame_equal(got_pred, ref_pred)
