import numpy as np
import pytest

from ardselect.numerics._linalg import chol_logdet, chol_solve, safe_cholesky, tri_solve


def test_cholesky_solve_and_logdet(rng):
    A = rng.normal(size=(6, 6))
    A = A @ A.T + 6 * np.eye(6)
    L = safe_cholesky(A)
    b = rng.normal(size=6)
    np.testing.assert_allclose(A @ chol_solve(L, b), b, atol=1e-10)
    assert chol_logdet(L) == pytest.approx(np.linalg.slogdet(A)[1], rel=1e-12)
    np.testing.assert_allclose(L @ tri_solve(L, b), b, atol=1e-12)
    np.testing.assert_allclose(L.T @ tri_solve(L, b, trans=True), b, atol=1e-12)


def test_jitter_rescues_a_singular_psd_matrix():
    v = np.array([1.0, 2.0, 3.0])
    A = np.outer(v, v)  # rank one
    L = safe_cholesky(A)
    assert np.all(np.isfinite(L))
    np.testing.assert_allclose(L @ L.T, A, atol=1e-6)


def test_non_finite_matrix_is_an_error():
    with pytest.raises(np.linalg.LinAlgError, match="NaN or infinite"):
        safe_cholesky(np.array([[1.0, np.nan], [np.nan, 1.0]]))
