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
from sklearn.metrics.pairwise import linear_kernel, polynomial_kernel, rbf_kernel

from ._design import as_design

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
                var = as_design(X).variance()
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
    return as_design(basis.transform(X)).with_intercept(fit_intercept=fit_intercept)


def unit_rms(Phi):
    """Scale every column to unit root mean square.

    ARD models are invariant to the scale of a basis function (its precision absorbs it), so this
    changes no result; it keeps the algebra well conditioned for features whose scales span many
    orders of magnitude. Returns ``(Phi_scaled, scale, nonzero)``; all-zero columns keep scale 1 and
    are flagged in ``nonzero`` so callers can keep them out of the model. Sparse stays sparse (CSC);
    a lazy design stays lazy (one pass for the scales).
    """
    return as_design(Phi).unit_rms()
