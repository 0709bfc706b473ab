"""Bases: the functions phi(x) that an ARD model weighs.

A linear basis is the input features themselves (feature selection: the selected functions are genes).
A kernel basis centres one function on each training point, ``phi_m(x) = k(x, x_m)`` (the RVM): the
selected functions are training points, the *relevance vectors*.

Kernels follow scikit-learn's SVC convention:

* ``"linear"``: ``k(x, z) = x . z``
* ``"rbf"``: ``k(x, z) = exp(-gamma ||x - z||^2)``; a width ``sigma`` as in the papers is
  ``gamma = 1 / (2 sigma^2)``
* ``"poly"``: ``k(x, z) = (gamma x . z + coef0) ** degree``
* a callable ``k(X, Z) -> (n_x, n_z)`` array

``gamma="scale"`` is ``1 / (n_features * X.var())`` and ``gamma="auto"`` is ``1 / n_features``, as in SVC.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import scipy.sparse as sp
from sklearn.metrics.pairwise import linear_kernel, polynomial_kernel, rbf_kernel

from ._lazy import LazyDesign

__all__ = ["LinearBasis", "KernelBasis", "make_basis", "KERNELS", "design_matrix", "unit_rms"]

KERNELS = ("features", "linear", "rbf", "poly")


class LinearBasis:
    """The identity basis: ``phi(x) = x``. Keeps sparse input sparse."""

    kind = "features"

    def fit(self, X):
        self.n_functions_ = X.shape[1]
        return self

    def transform(self, X):
        return X

    def function_names(self, feature_names):
        return np.asarray(feature_names, dtype=object)

    def params(self) -> dict:
        return {"kernel": "features"}


class KernelBasis:
    """One kernel function centred on each training point.

    Parameters
    ----------
    kernel : {"linear", "rbf", "poly"} or callable
        The kernel; a callable takes ``(X, Z)`` and returns an ``(n_x, n_z)`` array.
    gamma : float or {"scale", "auto"}, default="scale"
        Kernel coefficient of "rbf" and "poly".
    degree : int, default=3
        Degree of "poly".
    coef0 : float, default=1.0
        Constant of "poly".
    """

    def __init__(self, kernel="rbf", gamma="scale", degree=3, coef0=1.0):
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0

    def _gamma_value(self, X) -> float:
        if isinstance(self.gamma, str):
            if self.gamma == "scale":
                var = X.multiply(X).mean() - X.mean() ** 2 if sp.issparse(X) else X.var()
                return 1.0 / (X.shape[1] * var) if var > 0 else 1.0
            if self.gamma == "auto":
                return 1.0 / X.shape[1]
            msg = f"gamma must be a positive float, 'scale' or 'auto'; got {self.gamma!r}."
            raise ValueError(msg)
        gamma = float(self.gamma)
        if not gamma > 0:
            msg = f"gamma must be positive; got {self.gamma!r}."
            raise ValueError(msg)
        return gamma

    def fit(self, X):
        self.centres_ = X
        self.gamma_ = self._gamma_value(X)
        self.n_functions_ = X.shape[0]
        return self

    def transform(self, X):
        k = self.kernel
        if callable(k):
            K = np.asarray(k(X, self.centres_), dtype=np.float64)
            if K.shape != (X.shape[0], self.centres_.shape[0]):
                msg = (
                    f"the kernel callable returned shape {K.shape}; expected "
                    f"{(X.shape[0], self.centres_.shape[0])}."
                )
                raise ValueError(msg)
            return K
        if k == "rbf":
            return rbf_kernel(X, self.centres_, gamma=self.gamma_)
        if k == "linear":
            return linear_kernel(X, self.centres_)
        if k == "poly":
            return polynomial_kernel(
                X, self.centres_, degree=self.degree, gamma=self.gamma_, coef0=self.coef0
            )
        msg = f"unknown kernel {k!r}; choose one of {KERNELS} or pass a callable."
        raise ValueError(msg)

    def function_names(self, sample_names):
        return np.asarray([f"rv:{s}" for s in sample_names], dtype=object)

    def params(self) -> dict:
        return {
            "kernel": self.kernel if isinstance(self.kernel, str) else getattr(
                self.kernel, "__name__", "callable"
            ),
            "gamma": self.gamma_,
            "degree": self.degree,
            "coef0": self.coef0,
        }


def make_basis(kernel: str | Callable = "features", gamma="scale", degree=3, coef0=1.0):
    """Return an unfitted basis object for a ``kernel`` argument.

    ``"features"`` (the default of the classifiers) is the linear basis over the input features;
    anything else centres a kernel function on every training point.
    """
    if isinstance(kernel, str) and kernel == "features":
        return LinearBasis()
    if isinstance(kernel, str) and kernel not in KERNELS:
        msg = f"unknown kernel {kernel!r}; choose one of {KERNELS} or pass a callable."
        raise ValueError(msg)
    if not (isinstance(kernel, str) or callable(kernel)):
        msg = f"kernel must be a string or a callable; got {type(kernel).__name__}."
        raise ValueError(msg)
    return KernelBasis(kernel=kernel, gamma=gamma, degree=degree, coef0=coef0)


def design_matrix(basis, X, *, fit_intercept: bool):
    """``basis.transform(X)`` (CSC if sparse), with a column of ones appended for the intercept."""
    Phi = basis.transform(X)
    if isinstance(Phi, LazyDesign):
        return Phi.with_intercept() if fit_intercept else Phi
    if sp.issparse(Phi):
        Phi = Phi.tocsc()
    if fit_intercept:
        ones = np.ones((Phi.shape[0], 1))
        Phi = (sp.hstack([Phi, sp.csc_matrix(ones)], format="csc") if sp.issparse(Phi)
               else np.hstack([Phi, ones]))
    return Phi


def unit_rms(Phi):
    """Scale every column to unit root mean square.

    ARD models are invariant to the scale of a basis function (its precision absorbs it), so this
    changes no result; it keeps the algebra well conditioned for features whose scales span many
    orders of magnitude. Returns ``(Phi_scaled, scale, nonzero)``; all-zero columns keep scale 1 and
    are flagged in ``nonzero`` so callers can keep them out of the model. Sparse stays sparse (CSC);
    a lazy design (``_lazy.LazyDesign``) stays lazy (one pass for the scales).
    """
    if isinstance(Phi, LazyDesign):
        return Phi.unit_rms()
    if sp.issparse(Phi):
        scale = np.sqrt(np.asarray(Phi.multiply(Phi).mean(axis=0)).ravel())
        peak = np.asarray(abs(Phi).max(axis=0).todense()).ravel()
    else:
        with np.errstate(over="ignore", under="ignore"):
            scale = np.sqrt(np.mean(Phi * Phi, axis=0))
        peak = np.max(np.abs(Phi), axis=0) if Phi.shape[0] else np.zeros(Phi.shape[1])
    # Squares of values beyond about 1e154 overflow, and below about 1e-162 underflow to 0 (a
    # column of X * 1e-200 looked all-zero and left the model); such columns are measured
    # relative to their largest value instead. Other columns keep the plain formula's bits.
    odd = (peak > 0) & ~((scale > 0) & np.isfinite(scale))
    if odd.any():
        cols = np.flatnonzero(odd)
        block = Phi[:, cols].toarray() if sp.issparse(Phi) else Phi[:, cols]
        scale = scale.copy()
        scale[cols] = peak[cols] * np.sqrt(np.mean((block / peak[cols]) ** 2, axis=0))
    nonzero = scale > 0
    scale = np.where(nonzero, scale, 1.0)
    Phi_s = sp.csc_matrix(Phi @ sp.diags(1.0 / scale)) if sp.issparse(Phi) else Phi / scale
    return Phi_s, scale, nonzero
