"""Dense linear algebra for the posterior: Cholesky factors, solves and log-determinants.

There is one jitter policy: when a matrix that must be positive definite fails to factor, a multiple of
its mean diagonal (starting at ``JITTER``, times 10 per retry, at most ``MAX_TRIES`` times) is added to the
diagonal, and the escalation is logged. Rounding makes this happen only for near-singular matrices,
e.g. duplicated features with tiny prior precision.
"""

from __future__ import annotations

import logging

import numpy as np
from scipy.linalg import lapack

__all__ = ["JITTER", "safe_cholesky", "chol_solve", "chol_logdet", "tri_solve"]

logger = logging.getLogger("ardselect")

#: Relative jitter added to the diagonal when a Cholesky factorisation fails.
JITTER = 1e-10
MAX_TRIES = 8


def safe_cholesky(A: np.ndarray) -> np.ndarray:
    """Lower Cholesky factor of a symmetric positive (semi)definite matrix, with escalating jitter."""
    if not np.all(np.isfinite(A)):
        # LAPACK may "succeed" on NaN input and return NaN: never let that through silently.
        msg = "matrix to factor contains NaN or infinite values"
        raise np.linalg.LinAlgError(msg)
    # Direct LAPACK calls: these matrices are small and factored thousands of times along a path,
    # where the checking wrappers of scipy.linalg cost more than the arithmetic.
    L, info = lapack.dpotrf(A, lower=1, clean=1)
    if info == 0:
        return L
    scale = float(np.mean(np.abs(np.diag(A)))) or 1.0
    jitter = JITTER * scale
    for _ in range(MAX_TRIES):
        L, info = lapack.dpotrf(A + jitter * np.eye(A.shape[0]), lower=1, clean=1)
        if info != 0:
            jitter *= 10.0
            continue
        logger.debug("Cholesky needed jitter %.3g (relative %.3g)", jitter, jitter / scale)
        return L
    msg = f"matrix is not positive definite even with jitter {jitter:.3g} added to its diagonal"
    raise np.linalg.LinAlgError(msg)


def chol_solve(L: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Solve ``(L L^T) X = B`` given the lower factor ``L``."""
    X, info = lapack.dpotrs(L, B, lower=1)
    if info != 0:
        msg = f"dpotrs failed with info={info}"
        raise ValueError(msg)
    return X


def tri_solve(L: np.ndarray, B: np.ndarray, *, trans: bool = False) -> np.ndarray:
    """Solve ``L X = B`` (or ``L^T X = B`` with ``trans``) for lower-triangular ``L``."""
    X, info = lapack.dtrtrs(L, B, lower=1, trans=1 if trans else 0)
    if info != 0:
        msg = f"singular triangular factor (dtrtrs info={info})"
        raise np.linalg.LinAlgError(msg)
    return X


def chol_logdet(L: np.ndarray) -> float:
    """``log |L L^T| = 2 sum log diag(L)``."""
    return 2.0 * float(np.sum(np.log(np.diag(L))))
