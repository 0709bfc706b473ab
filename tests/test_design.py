"""The design type: every kind of matrix answers the path's questions with the same numbers."""

import numpy as np
import pytest
import scipy.sparse as sp

from ardselect._design import DenseDesign, SparseDesign, as_design, by_rows, dense


def _x(seed=0, n=30, m=12):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, m))
    X[np.abs(X) < 0.7] = 0.0  # sparse enough for CSC to hold fewer entries
    return X


def _kinds(X):
    yield "dense", X
    yield "csc", sp.csc_matrix(X)
    yield "csr", sp.csr_matrix(X)


def test_as_design_dispatches_once_and_is_idempotent():
    X = _x()
    assert isinstance(as_design(X), DenseDesign)
    assert isinstance(as_design(sp.csc_matrix(X)), SparseDesign)
    d = as_design(X)
    assert as_design(d) is d
    assert isinstance(dense(sp.csr_matrix(X)), np.ndarray)
    assert by_rows(sp.csc_matrix(X)).format == "csr"
    np.testing.assert_array_equal(dense(sp.csr_matrix(X)), X)


@pytest.mark.parametrize("kind", ["dense", "csc", "csr"])
def test_products_match_the_direct_formulas(kind):
    X = _x(1)
    M = dict(_kinds(X))[kind]
    D = as_design(M)
    rng = np.random.default_rng(2)
    n, m = X.shape
    b = rng.uniform(0.1, 2.0, size=n)
    v = rng.normal(size=n)
    R = rng.normal(size=(n, 4))
    Mn = rng.normal(size=(n, n))
    zt = rng.normal(size=n)
    t = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    idx = np.array([3, 0, 7])
    np.testing.assert_allclose(D.weighted_sq(b), (X**2 * b[:, None]).sum(0), rtol=1e-12)
    np.testing.assert_allclose(as_design(D.squared()).vecmat(b), (X**2 * b[:, None]).sum(0),
                               rtol=1e-12)
    np.testing.assert_allclose(D.tvec(v), X.T @ v, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(D.rmat(R), R.T @ X, rtol=1e-12, atol=1e-12)
    G, sq = D.scores_products(R, b, None)
    np.testing.assert_allclose(G, R.T @ X, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(sq, (X**2 * b[:, None]).sum(0), rtol=1e-12)
    S, Q = D.left_scores(Mn, zt)
    Z = Mn @ X
    np.testing.assert_allclose(S, (Z**2).sum(0), rtol=1e-10)
    np.testing.assert_allclose(Q, zt @ Z, rtol=1e-10, atol=1e-10)
    np.testing.assert_array_equal(D.columns(idx), X[:, idx])
    np.testing.assert_array_equal(D.block(idx), X[:, idx])
    np.testing.assert_array_equal(dense(D.signed(t)), t[:, None] * X)
    np.testing.assert_array_equal(dense(as_design(M.copy()).sign_in_place(t)), t[:, None] * X)
    scale = rng.uniform(0.5, 2.0, size=m)
    np.testing.assert_allclose(dense(D.scaled_rows(idx, scale)), X[idx] / scale, rtol=1e-15)
    np.testing.assert_allclose(dense(D.with_intercept()), np.hstack([X, np.ones((n, 1))]))
    np.testing.assert_array_equal(dense(D.with_intercept(fit_intercept=False)), X)
    np.testing.assert_allclose(dense(D.append_columns(np.ones((n, 2)))),
                               np.hstack([X, np.ones((n, 2))]))
    np.testing.assert_allclose(D.variance(), X.var(), rtol=1e-12)


@pytest.mark.parametrize("kind", ["dense", "csc"])
def test_unit_rms_scales_every_column_to_one_and_flags_zero_columns(kind):
    X = _x(3)
    X[:, 4] = 0.0
    X[:, 5] *= 1e-200  # squares underflow: measured relative to the column's largest value
    Xs, scale, nonzero = as_design(dict(_kinds(X))[kind]).unit_rms()
    Xs = dense(Xs)
    rms = np.sqrt(np.mean(Xs**2, axis=0))
    assert not nonzero[4]
    assert scale[4] == 1.0
    np.testing.assert_allclose(rms[nonzero], 1.0, rtol=1e-12)


def test_a_sparse_block_keeps_its_column_major_order_and_a_dense_one_is_c_ordered():
    # The model's EP runs on this block: its memory order is part of the bits of a fit.
    X = _x(4)
    assert as_design(sp.csc_matrix(X)).block(np.array([1, 2])).flags.f_contiguous
    assert as_design(np.asfortranarray(X)).block(np.array([1, 2])).flags.c_contiguous


def test_a_lazy_design_answers_like_the_in_memory_one():
    da = pytest.importorskip("dask.array")
    from ardselect._lazy import LazyDesign

    X = _x(5)
    L = LazyDesign(da.from_array(X, chunks=(7, X.shape[1])), intercept=False)
    assert as_design(L) is L
    assert L.lazy
    assert not as_design(X).lazy
    rng = np.random.default_rng(6)
    b = rng.uniform(0.1, 2.0, size=X.shape[0])
    R = rng.normal(size=(X.shape[0], 3))
    D = as_design(X)
    G, sq = L.scores_products(R, b, None)
    np.testing.assert_allclose(G, D.rmat(R), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(sq, D.weighted_sq(b), rtol=1e-12)
    np.testing.assert_allclose(L.tvec(b), D.tvec(b), rtol=1e-12)
    np.testing.assert_allclose(L.block(np.array([2, 5])), X[:, [2, 5]])
    assert L.squared() is None
    assert L.column_major() is None
    with pytest.raises(TypeError, match="never gathered whole"):
        L.dense()
