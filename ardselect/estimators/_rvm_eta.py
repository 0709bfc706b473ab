"""eta-RVR: the ARD RBF kernel with one input scale per feature, and its marginal likelihood.

The scales ``eta`` are learnt jointly with the precisions and the noise by :class:`~ardselect.RVMRegressor`
(``kernel="ard_rbf"``): a Gaussian-process start (``eta_init="gp"``), then alternating rounds of
the sequential path and a quasi-Newton step on the log marginal likelihood over ``log eta``.
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics.pairwise import rbf_kernel

from ..engine._design import dense
from ..numerics._ep import LatentPosterior
from ._rvm_likelihoods import _gaussian_log_ml

#: eta-RVR with ``eta_init="gp"``: largest number of points the Gaussian process is fitted to.
ETA_GP_MAX_SAMPLES = 1000


# --------------------------------------------------------------------------------------------------
# eta-RVR: the RBF kernel with one input scale per dimension
# --------------------------------------------------------------------------------------------------
class _ARDRBFBasis:
    """``phi_m(x) = exp(-sum_k eta_k (x_k - x_mk)^2)``, one function per training point."""

    kind = "ard-rbf"

    def __init__(self, eta):
        self.eta = np.asarray(eta, dtype=np.float64)

    def fit(self, X):
        self.centres_ = X
        self.n_functions_ = X.shape[0]
        return self

    def transform(self, X):
        r = np.sqrt(self.eta)
        return rbf_kernel(dense(X) * r, dense(self.centres_) * r, gamma=1.0)

    def function_names(self, sample_names):
        return np.asarray([f"rv:{s}" for s in sample_names], dtype=object)



def _gp_input_scales(X, t, gamma):
    """Input scales ``eta_k = 1 / (2 l_k^2)`` of an ARD Gaussian process fitted to ``(X, t)``.

    The dense model (every input point a function, no sparsity) has a smoother marginal likelihood
    in the scales than the sparse RVM's, whose local maxima depend on where the scales start;
    eta-RVR with ``eta_init="gp"`` starts from these. The GP is scikit-learn's, with a
    constant times an ARD RBF kernel plus white noise, its length scales starting at the uniform
    ``gamma`` (no random restarts: deterministic). On more than ``ETA_GP_MAX_SAMPLES`` points it
    is fitted to that many, drawn with a fixed seed.
    """
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel

    if X.shape[0] > ETA_GP_MAX_SAMPLES:
        idx = np.random.default_rng(0).choice(X.shape[0], ETA_GP_MAX_SAMPLES, replace=False)
        X, t = X[np.sort(idx)], t[np.sort(idx)]
    l0 = 1.0 / np.sqrt(2.0 * gamma)
    kernel = (ConstantKernel(1.0, (1e-3, 1e3))
              * RBF(np.full(X.shape[1], l0), (l0 * np.exp(-4.5), l0 * np.exp(9.0)))
              + WhiteKernel(0.1, (1e-8, 10.0)))
    gp = GaussianProcessRegressor(kernel, normalize_y=True, n_restarts_optimizer=0)
    with warnings.catch_warnings():
        # length scales at a bound are expected (irrelevant inputs); the RVM stage takes over
        warnings.simplefilter("ignore", ConvergenceWarning)
        gp.fit(X, t)
    scales = np.atleast_1d(gp.kernel_.k1.k2.length_scale).astype(np.float64)
    return 1.0 / (2.0 * scales**2)


def log_marginal_eta(log_eta, X, centres, alpha, noise, t, intercept_alpha=None):
    """Log marginal likelihood of RVM regression as a function of log input scales, and gradient.

    The basis is the ARD-RBF kernel on ``centres`` (plus a column of ones with precision
    ``intercept_alpha`` when given), with the precisions ``alpha`` of the *unscaled* kernel columns
    and the noise variance held fixed. With ``mu, Sigma`` the weight posterior, ``dL/dPhi = beta [(t
    - Phi mu) mu^T - Phi Sigma]`` (Tipping 2001, appendix), and ``dPhi_nm / d log eta_k = -eta_k
    (x_nk - c_mk)^2 Phi_nm``.

    Parameters
    ----------
    log_eta : ndarray of shape (n_features,)
    X : ndarray of shape (n_samples, n_features)
        Training inputs.
    centres : ndarray of shape (d, n_features)
        Centres of the active kernel functions.
    alpha : ndarray of shape (d,)
    noise : float
        Noise variance.
    t : ndarray of shape (n_samples,)
    intercept_alpha : float or None
        Precision of the bias weight, or None for no bias.

    Returns
    -------
    value : float
    grad : ndarray of shape (n_features,)
    """
    eta = np.exp(log_eta)
    r = np.sqrt(eta)
    K = rbf_kernel(X * r, centres * r, gamma=1.0)  # (n, d)
    P, a = K, np.asarray(alpha, dtype=np.float64)
    if intercept_alpha is not None:
        P = np.hstack([K, np.ones((X.shape[0], 1))])
        a = np.append(a, intercept_alpha)
    value, g_eta, _, _ = _log_ml_eta_full(X, centres, K, eta, P, a, noise, t)
    return value, g_eta


def _log_ml_eta_full(X, centres, K, eta, P, a, noise, t):
    """Value and gradients in ``log eta``, ``log alpha`` (every column of ``P``), ``log sigma^2``.

    ``dL/dlog alpha_i = (gamma_i - alpha_i mu_i^2) / 2`` with ``gamma_i = 1 - alpha_i Sigma_ii``,
    and ``dL/dlog sigma^2 = (beta |t - Phi mu|^2 - N + sum gamma) / 2`` (Tipping 2001, sec. 2.2).
    """
    n = X.shape[0]
    beta = 1.0 / noise
    b = np.full(n, beta)
    post = LatentPosterior(P, a, b, b * t)
    value = _gaussian_log_ml(post, b, t)
    Sigma = post.cov()  # (d, d)
    resid = t - post.f_mean  # (n,)
    G = beta * (np.outer(resid, post.mean) - P @ Sigma)  # (n, d) = dL/dPhi
    GK = G[:, : K.shape[1]] * K  # (n, d_kernel)
    # sum_nm GK_nm (x_nk - c_mk)^2, expanded so that no (n, d, features) array is formed
    sq = (X * X).T @ GK.sum(axis=1) - 2.0 * np.einsum("nk,nk->k", X, GK @ centres) + (
        (centres * centres).T @ GK.sum(axis=0))
    gam = 1.0 - a * np.diag(Sigma)  # (d,)
    g_alpha = 0.5 * (gam - a * post.mean**2)
    g_noise = 0.5 * (beta * float(resid @ resid) - n + float(gam.sum()))
    return float(value), -eta * sq, g_alpha, g_noise


def _log_ml_joint(theta, X, centres, t, has_bias):
    """``(L, dL/dtheta)`` for ``theta = [log eta (D), log alpha (d, bias last), log sigma^2]``."""
    D = X.shape[1]
    eta = np.exp(theta[:D])
    a = np.exp(theta[D:-1])
    noise = float(np.exp(theta[-1]))
    r = np.sqrt(eta)
    K = rbf_kernel(X * r, centres * r, gamma=1.0)  # (n, d_kernel)
    P = np.hstack([K, np.ones((X.shape[0], 1))]) if has_bias else K
    value, g_eta, g_alpha, g_noise = _log_ml_eta_full(X, centres, K, eta, P, a, noise, t)
    return value, np.concatenate([g_eta, g_alpha, [g_noise]])
