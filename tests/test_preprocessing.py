"""ardselect.preprocessing.Preprocessor: the steps, their choices and their replay from stored parameters."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp

from ardselect.exceptions import DataError
from ardselect.preprocessing import Preprocessor


def test_preprocessor_auto_log():
    counts = np.array([[0.0, 10, 3], [5, 300, 4], [2, 40, 9]])
    assert Preprocessor().fit(counts).log_ == "log2"
    logged = np.log2(counts + 1) - 3.0  # negative values: already log scale
    assert Preprocessor().fit(logged).log_ == "none"
    small_ints = np.array([[0.0, 1, 3], [2, 0, 4], [1, 1, 0]])
    assert Preprocessor().fit(small_ints).log_ == "log2"
    scaled = np.array([[0.1, 0.5], [0.9, 0.3]])
    assert Preprocessor().fit(scaled).log_ == "none"


def test_preprocessor_golub_convention():
    X = np.array([[-50.0, 20000, 7], [300, 1000, 7], [5000, 100, 7]])
    pre = Preprocessor(log="log10", pseudocount=0.0, floor=100, cap=16000, standardize=False)
    Z = pre.fit_transform(X)
    expected = np.log10(np.clip(X[:, :2], 100, 16000))
    np.testing.assert_allclose(Z, expected)
    assert pre.n_dropped_ == 1
    assert list(pre.get_feature_names_out(["a", "b", "c"])) == ["a", "b"]
    assert "floor 100, cap 16000, log10(x), dropped 1 constant gene(s)" in pre.describe()


def test_preprocessor_default_pseudocount():
    X = np.array([[150.0, 5], [300, 9], [1000, 2]])
    assert Preprocessor(log="log10", floor=100).fit(X).pseudocount_ == 0.0
    assert Preprocessor(log="log10").fit(X).pseudocount_ == 1.0
    assert Preprocessor(log="log10", floor=100, pseudocount=2).fit(X).pseudocount_ == 2.0


def test_preprocessor_log_of_negative():
    X = np.array([[-5.0, 1], [3, 2]])
    with pytest.raises(DataError, match=r"cannot take log2: 1 gene\(s\) have values <= -1 "
                                        r"\('a'; minimum -5\).*set a floor"):
        Preprocessor(log="log2").fit(X, feature_names=["a", "b"])
    with pytest.raises(DataError, match=r"\(column 0; minimum -5\)"):
        Preprocessor(log="log2").fit(X)


def _counts(rng, n=20, p=30):
    return rng.poisson(20.0, size=(n, p)).astype(float)


@pytest.mark.parametrize("sparse", [False, True])
def test_auto_log_branches(sparse):
    # Issue 12, item 3: the decision is made on the bulk of the genes, and each branch says why.
    import scipy.sparse as sps

    from ardselect.preprocessing import auto_log

    rng = np.random.default_rng(0)
    wrap = sps.csr_matrix if sparse else np.asarray
    counts = _counts(rng)
    assert auto_log(wrap(counts)) == ("log2", "30 of 30 genes are integer-valued: counts")
    intensities = np.exp(rng.normal(5.0, 1.0, size=(20, 30)))  # non-integer, many above 50
    choice, reason = auto_log(wrap(intensities))
    assert choice == "log2"
    assert reason.endswith("genes reach above 50: counts or intensities")
    logged = np.log2(intensities + 1.0)
    assert auto_log(wrap(logged)) == (
        "none", "30 of 30 genes stay below 50 and are not counts: data look log-scaled")
    centred = logged - logged.mean(axis=0)
    assert auto_log(wrap(centred)) == (
        "none", "30 of 30 genes have negative values: data look log-scaled or centred")


def test_auto_log_not_flipped_by_a_minority_of_odd_columns():
    from ardselect.preprocessing import auto_log

    rng = np.random.default_rng(1)
    counts = _counts(rng)
    y = np.repeat([-1.0, 1.0], 10)
    code = y * rng.uniform(0.5, 2.0, size=20)  # its sign is the label
    assert auto_log(np.column_stack([counts, code]))[0] == "log2"
    logged = np.log2(np.exp(rng.normal(5.0, 1.0, size=(20, 30))))
    weight = rng.uniform(60, 120, size=(20, 2))  # two covariates above 50 among 32 columns
    assert auto_log(np.column_stack([logged, weight]))[0] == "none"
    # ... and the log then refuses the odd column by name instead of skipping the log silently.
    pre = Preprocessor()
    with pytest.raises(DataError, match=r"cannot take log2 \(auto: 30 of 31 genes are "
                                        r"integer-valued: counts\): 1 gene\(s\) .*'code'"):
        pre.fit(np.column_stack([counts, code]),
                feature_names=[f"g{j}" for j in range(30)] + ["code"])


def test_describe_prints_the_auto_decision():
    rng = np.random.default_rng(2)
    pre = Preprocessor().fit(_counts(rng))
    assert pre.log_reason_ == "30 of 30 genes are integer-valued: counts"
    assert "log2(x + 1) (auto: 30 of 30 genes are integer-valued: counts)" in pre.describe()
    assert Preprocessor(log="none").fit(_counts(rng)).log_reason_ == "requested"


def test_preprocessor_standardize_and_replay():
    rng = np.random.default_rng(3)
    X = np.exp(rng.normal(size=(20, 6)) + 4)
    pre = Preprocessor().fit(X, feature_names=[f"g{i}" for i in range(6)])
    Z = pre.transform(X)
    np.testing.assert_allclose(Z.mean(axis=0), 0, atol=1e-12)
    np.testing.assert_allclose(Z.std(axis=0), 1, atol=1e-12)
    # Stored parameters of a subset of genes replay the same transform on those genes.
    params = json.loads(json.dumps(pre.to_dict([1, 4])))
    np.testing.assert_allclose(Preprocessor.apply_dict(params, X[:, [1, 4]]), Z[:, [1, 4]],
                               rtol=0, atol=1e-14)


def test_preprocessor_sparse_keeps_sparsity():
    rng = np.random.default_rng(4)
    X = sp.random(30, 8, density=0.3, random_state=4, format="csr") * 50
    X = sp.csr_matrix(np.round(X.toarray()))
    pre = Preprocessor().fit(X)
    Z = pre.transform(X)
    assert sp.issparse(Z)
    dense = Preprocessor().fit(X.toarray())
    assert pre.log_ == dense.log_ == "log2"
    # Sparse data are scaled, not centred: same as the dense result plus the dense centre.
    np.testing.assert_allclose(Z.toarray() - dense.transform(X.toarray()),
                               np.broadcast_to(dense.center_ / dense.scale_, Z.shape), atol=1e-12)
    del rng


def test_preprocessor_all_constant():
    with pytest.raises(DataError, match="all 2 genes are constant"):
        Preprocessor().fit(np.ones((4, 2)))


def test_preprocessor_nan():
    X = np.array([[1.0, np.nan], [2.0, 3.0]])
    with pytest.raises(DataError, match="NaN"):
        Preprocessor().fit(X)


def test_a_gene_constant_up_to_rounding_is_dropped_as_constant():
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.normal(size=10) + 5.0,
                         np.where(np.arange(10) % 2 == 0, 0.3, 0.1 + 0.2),
                         np.full(10, 2.0)])
    pre = Preprocessor(log="none").fit(X)
    assert pre.keep_.tolist() == [True, False, False]
    assert pre.n_dropped_ == 2


def _counts_csr(rng, n, p, density):
    """A CSR count matrix (float32, as an h5ad holds one) with a few genes of every kind."""
    X = sp.random(n, p, density=density, format="csr", dtype=np.float32, random_state=rng,
                  data_rvs=lambda k: rng.poisson(4.0, k) + 1.0)
    X = X.tolil()
    X[:, 0] = 0.0  # an all-zero gene
    X[:, 1] = 7.0  # a constant gene without zeros
    X[: n // 2, 2] = 2.5  # a gene with fractions
    return X.tocsr()


@pytest.mark.parametrize("params", [{}, {"log": "none"}, {"log": "log10"}, {"cap": 5.0},
                                    {"floor": 0.0, "log": "ln"}, {"standardize": False}])
def test_sparse_fit_by_gene_blocks_equals_the_whole_matrix(params, rng, monkeypatch):
    import ardselect.dataio._preprocessing as module

    X = _counts_csr(rng, 300, 90, 0.2)
    monkeypatch.setattr(module, "_BLOCK_ENTRIES", 500)
    assert len(module._gene_blocks(X)) > 5
    blocks = Preprocessor(**params).fit(X)
    whole = Preprocessor(**params).fit(X.tocsc())  # CSC input: the whole-matrix route
    for name in ("log_", "log_reason_", "n_dropped_", "keep_", "center_", "scale_", "sparse_"):
        np.testing.assert_array_equal(getattr(blocks, name), getattr(whole, name), err_msg=name)
    if blocks.standardize:
        np.testing.assert_array_equal(blocks.mean_, whole.mean_)
    # The statistics are those of the dense matrix (to rounding: the sums run in another order).
    D = np.clip(X.toarray().astype(np.float64), blocks.floor, blocks.cap)
    base = {"log2": 2.0, "log10": 10.0, "ln": np.e}.get(blocks.log_)
    L = D if base is None else np.log1p(D) / np.log(base)
    np.testing.assert_array_equal(blocks.keep_, np.ptp(L, axis=0) > 0)
    if blocks.standardize:
        np.testing.assert_allclose(blocks.mean_, L[:, blocks.keep_].mean(axis=0), rtol=1e-12)
        np.testing.assert_allclose(blocks.scale_, L[:, blocks.keep_].std(axis=0), rtol=1e-10)
    # The transform of some rows is the whole transform's rows, bit for bit.
    rows = np.arange(0, 300, 7)
    Z, Z_all = blocks.transform(X[rows]), blocks.transform(X)
    assert Z.format == "csc"
    np.testing.assert_array_equal(Z.toarray(), Z_all.toarray()[rows])


def test_sparse_fit_and_sketch_transform_stay_below_a_matrix_copy(rng):
    """Fitting a CSR matrix and transforming a tenth of its rows allocate a fraction of it.

    The matrix is float32 with int32 indices; a float64 copy of it alone (or a CSC copy) is 1.5x
    (or 1x) its size.
    """
    import tracemalloc

    X = _counts_csr(rng, 20000, 2000, 0.05)
    size = X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
    rows = np.arange(0, X.shape[0], 10)
    tracemalloc.start()
    try:
        pre = Preprocessor().fit(X)
        Z = pre.transform(X[rows])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert sp.issparse(Z)
    assert Z.shape[0] == rows.size
    assert peak < 0.75 * size, f"peak {peak / size:.2f}x the matrix"


def test_sparse_fit_refuses_nan_like_the_whole_matrix_route():
    X = sp.csr_matrix(np.array([[1.0, 0.0, 2.0], [0.0, np.inf, 1.0], [np.nan, 0.0, 3.0]],
                               dtype=np.float32))
    with pytest.raises(DataError, match=r"2 NaN and infinite value\(s\) \(first in column 0\)"):
        Preprocessor().fit(X)
