"""The Gaussian posterior of one binary problem's weights, in the units of the input features.

What a fitted estimator keeps per problem and the portable model (:mod:`ardselect.model`) writes
and reads back.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Posterior"]


@dataclass
class Posterior:
    """Gaussian posterior of the weights of one binary problem, in the units of the input features.

    ``index`` holds the basis columns in the model (input features for the default basis, training
    points for a kernel basis); ``-1`` marks the intercept and ``-2 - j`` known covariate ``j``. ``P(positive | x) = Phi(h / sqrt(1 + v))``
    with ``h = sum_k mean_k x[index_k]`` (``x[-1] = 1``) and ``v = x_A^T cov x_A``.
    """

    index: np.ndarray
    mean: np.ndarray
    cov: np.ndarray
    positive_class: object

    def latent(self, design):
        """Posterior mean and variance of the latent for the rows of ``design``.

        Parameters
        ----------
        design : ndarray of shape (n_samples, n_basis + 1) or (n_samples, n_basis + c + 1)
            Basis values with a last column of ones (the intercept, ``index == -1``); with ``c``
            known covariates, their columns before it in reverse order (``index == -2 - j``).

        Returns
        -------
        mean, var : ndarray of shape (n_samples,)
        """
        XA = design[:, np.asarray(self.index, dtype=int)]  # (n, d)
        mean = XA @ np.asarray(self.mean, dtype=np.float64)
        var = np.einsum("ij,jk,ik->i", XA, np.asarray(self.cov, dtype=np.float64), XA)
        return mean, var
