"""The dask path (``pip install ardselect[dask]``) equals the in-memory path on a small on-disk store."""

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


@pytest.mark.parametrize("max_samples", [pytest.param(None, marks=pytest.mark.slow), 100])
def test_lazy_zarr_equals_in_memory(store, max_samples):
    path, X, y = store
    dX = _lazy_x(path)
    assert isinstance(dX, da.Array)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = ARDClassifier(max_samples=max_samples).fit(X, y)
        got = ARDClassifier(max_samples=max_samples).fit(dX, y)
    assert got.path_.equals(ref.path_)
    np.testing.assert_array_equal(got.coef_, ref.coef_)
    if max_samples is not None:
        np.testing.assert_array_equal(got.sketch_, ref.sketch_)


def test_gathering_a_large_dask_array_whole_warns(store, monkeypatch):
    # Without max_samples every row is gathered and fitted exactly; above GATHER_WARN_ROWS rows
    # the user is told so (and how to sketch). With a sketch, no warning.
    from ardselect import LabelError, _classifier

    path, X, y = store
    monkeypatch.setattr(_classifier, "GATHER_WARN_ROWS", 200)
    one_class = np.zeros(y.size)  # the fit then stops right after the gather: no path is run
    with pytest.warns(UserWarning, match="all 240 rows of the dask array are gathered"), \
            pytest.raises(LabelError):
        ARDClassifier().fit(_lazy_x(path), one_class)
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
