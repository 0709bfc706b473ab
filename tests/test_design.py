"""The design type: every kind of matrix answers the path's questions with the same numbers."""

import numpy as np
import pytest
import scipy.sparse as sp

from ardselect.engine._design import DenseDesign, SparseDesign, as_design, by_rows, dense


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
    from ardselect.engine._lazy import LazyDesign

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


# The per-gene questions and the stored-entry transforms of the preprocessing, the model and the
# readers: each kind of matrix against the direct numpy formula on its dense values.
def _values(seed=7, n=23, m=9):
    """Counts with fractions, negatives, an all-zero column, a constant one and a fully stored one."""
    rng = np.random.default_rng(seed)
    X = rng.poisson(1.0, size=(n, m)).astype(np.float64)
    X[:, 1] *= 0.25  # fractions
    X[::3, 2] = -X[::3, 2] - 0.5  # negatives
    X[:, 3] = 0.0
    X[:, 4] = 2.0
    X[:, 5] = rng.uniform(1.0, 5.0, size=n)
    return X


def _all_kinds(X):
    yield from _kinds(X)
    da = pytest.importorskip("dask.array")
    yield "lazy", da.from_array(X, chunks=(7, X.shape[1]))
    yield "lazy_csr", da.from_array(sp.csr_matrix(X), chunks=(7, X.shape[1]), asarray=False)


KINDS = ["dense", "csc", "csr", "lazy", "lazy_csr"]


@pytest.mark.parametrize("kind", KINDS)
def test_the_per_gene_questions_match_the_direct_formulas(kind):
    X = _values()
    D = as_design(dict(_all_kinds(X))[kind])
    assert D.lazy == kind.startswith("lazy")
    sparse_kinds = {"csc", "csr", "lazy_csr"}
    assert D.sparse == (kind in sparse_kinds)
    lo, hi = D.column_range()
    np.testing.assert_array_equal(lo, X.min(axis=0))
    np.testing.assert_array_equal(hi, X.max(axis=0))
    np.testing.assert_array_equal(D.constant_columns(), np.ptp(X, axis=0) == 0)
    mean, var = D.mean_var()
    np.testing.assert_allclose(mean, X.mean(axis=0), rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(var, X.var(axis=0), rtol=1e-12, atol=1e-14)
    for axis in (0, 1):
        np.testing.assert_array_equal(D.n_fractional(axis), (np.round(X) != X).sum(axis=axis))
        np.testing.assert_array_equal(D.n_nonzero(axis), (X != 0).sum(axis=axis))
    assert D.minimum() == X.min()
    assert D.nonfinite() is None


@pytest.mark.parametrize("kind", ["dense", "csc", "csr"])
def test_a_dense_matrix_exact_statistics_are_bitwise_numpy(kind):
    X = _values(8)
    D = as_design(dict(_kinds(X))[kind])
    if kind == "dense":
        mean, var = D.mean_var()
        assert mean.tobytes() == X.mean(axis=0).tobytes()
        assert var.tobytes() == X.var(axis=0).tobytes()
    Xs = sp.csc_matrix(X)
    mean, var = as_design(Xs).mean_var()
    np.testing.assert_array_equal(mean, np.asarray(Xs.mean(axis=0)).ravel())


def test_a_sparse_minimum_counts_its_implicit_zeros_and_an_empty_one_is_zero():
    X = np.array([[1.0, 2.0], [3.0, 4.0]])
    assert as_design(X).minimum() == 1.0
    assert as_design(sp.csr_matrix(X)).minimum() == 0.0  # at most 0: its implicit zeros
    assert as_design(np.zeros((0, 3))).minimum() == 0.0


@pytest.mark.parametrize("kind", KINDS)
def test_non_finite_entries_are_counted_and_located(kind):
    X = _values(9)
    X[4, 6] = np.nan
    X[2, 7] = np.inf
    X[11, 1] = np.nan
    found = as_design(dict(_all_kinds(X))[kind]).nonfinite()
    bad = ~np.isfinite(X)
    rows, cols = np.nonzero(bad)  # row-major: the first in row order first
    assert found.n == bad.sum()
    assert found.kinds == (True, True)
    assert (found.row, found.col) == (rows[0], cols[0])
    assert found.min_col == cols.min()
    assert as_design(np.arange(6).reshape(2, 3)).nonfinite() is None  # integers are finite


@pytest.mark.parametrize("kind", ["dense", "csc", "csr"])
@pytest.mark.parametrize(("lo", "hi"), [(None, None), (-0.5, 3.0), (0.5, None), (None, -0.1)])
def test_clip_keeps_sparse_while_zero_stays_zero(kind, lo, hi):
    X = _values(10)
    M = dict(_kinds(X))[kind]
    C = as_design(M).clip(lo, hi)
    if lo is None and hi is None:
        assert C is as_design(M).X
        return
    np.testing.assert_array_equal(dense(C), np.clip(X, lo, hi))
    keeps_zero = (lo is None or lo <= 0) and (hi is None or hi >= 0)
    assert sp.issparse(C) == (kind != "dense" and keeps_zero)
    if sp.issparse(C):
        assert C.format == M.format
        assert not np.shares_memory(C.data, M.data)  # a new matrix


@pytest.mark.parametrize("kind", ["dense", "csc", "csr"])
@pytest.mark.parametrize(("base", "pseudocount"), [(2.0, 1.0), (10.0, 0.5), (np.e, 1.0)])
def test_log_keeps_sparse_with_pseudocount_one(kind, base, pseudocount):
    X = np.abs(_values(11))
    M = dict(_kinds(X))[kind]
    Z = as_design(M).log(base, pseudocount)
    np.testing.assert_allclose(dense(Z), np.log(X + pseudocount) / np.log(base), rtol=1e-14)
    assert sp.issparse(Z) == (kind != "dense" and pseudocount == 1.0)
    np.testing.assert_array_equal(dense(M), X)  # the input is left as it was


@pytest.mark.parametrize("kind", ["dense", "csc", "csr"])
@pytest.mark.parametrize("centred", [True, False])
def test_standardized_is_sparse_only_without_centring(kind, centred):
    X = _values(12)
    rng = np.random.default_rng(13)
    center = rng.normal(size=X.shape[1]) if centred else np.zeros(X.shape[1])
    scale = rng.uniform(0.5, 2.0, size=X.shape[1])
    Z = as_design(dict(_kinds(X))[kind]).standardized(center, scale)
    np.testing.assert_allclose(dense(Z), (X - center) / scale, rtol=1e-14, atol=1e-15)
    assert sp.issparse(Z) == (kind != "dense" and not centred)


@pytest.mark.parametrize("kind", ["dense", "csc", "csr"])
def test_stored_entries_zeroed_non_finite_and_column_access(kind):
    X = _values(14)
    X[3, 2] = np.nan
    M = dict(_kinds(X))[kind]
    D = as_design(M)
    stored = D.stored()
    if kind == "dense":
        assert stored.tobytes() == X.ravel().tobytes()
    else:
        assert stored is M.data
    Z = D.zero_nonfinite()
    np.testing.assert_array_equal(dense(Z), np.where(np.isfinite(X), X, 0.0))
    assert np.isnan(dense(M)[3, 2])  # a copy
    C = D.by_columns()
    np.testing.assert_array_equal(dense(C), X)
    if kind != "dense":
        assert C.format == "csc"
        assert C.has_sorted_indices
    coo = as_design(sp.coo_matrix(np.nan_to_num(X)))
    np.testing.assert_array_equal(coo.columns(np.array([5, 0])), np.nan_to_num(X)[:, [5, 0]])


@pytest.mark.parametrize("kind", KINDS)
def test_reduce_rows_sees_every_row_once(kind):
    X = _values(15)
    D = as_design(dict(_all_kinds(X))[kind])

    def fn(block, start):
        return dense(block).sum(axis=0), start + block.shape[0]

    total, _ = D.reduce_rows(fn, lambda a, b: (a[0] + b[0], max(a[1], b[1])))
    np.testing.assert_allclose(total, X.sum(axis=0), rtol=1e-14)


def test_a_lazy_design_transforms_chunk_by_chunk_and_reads_only_as_stored():
    da = pytest.importorskip("dask.array")
    X = _values(16)
    L = as_design(da.from_array(X, chunks=(7, X.shape[1])))
    for transform in (lambda: L.clip(0.0, 1.0), lambda: L.log(2.0, 1.0), L.stored,
                      lambda: L.standardized(np.zeros(9), np.ones(9)), L.zero_nonfinite,
                      L.by_columns):
        with pytest.raises(TypeError, match="chunk by chunk"):
            transform()
    with pytest.raises(ValueError, match="values as stored"):
        (L / np.full(X.shape[1], 2.0)).column_range()
    with pytest.raises(ValueError, match="values as stored"):
        L[np.arange(5)].n_fractional()
    np.testing.assert_array_equal(dense(L.X), X)  # asked for by name, a dask array is computed
    with pytest.raises(TypeError, match="never gathered whole"):
        L.dense()


def test_is_matrix_tells_in_memory_matrices_from_stores_and_lists():
    from ardselect.engine._design import is_matrix

    assert is_matrix(np.zeros((2, 2)))
    assert is_matrix(sp.csr_matrix((2, 2)))
    assert not is_matrix([[1.0]])
    assert not is_matrix(None)
