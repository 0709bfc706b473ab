"""``ep_probit``: EP for the probit model at fixed ARD precisions, with its input checks.

The public face of :func:`ardselect.numerics._ep.run_ep` (Qi et al. 2004, sec. 3.1): labels coded
-1 / +1, the design and the precisions checked, the leave-one-out estimates of eqs. 12-13.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from numbers import Integral, Real

import numpy as np

from ..engine._design import dense
from ..engine._validation import check_binary_labels, check_design
from ..exceptions import DataError
from ..numerics._ep import LatentPosterior, loo_error, loo_prob_error, run_ep
from ..numerics._probit import log_Phi

__all__ = ["EPResult", "ep_probit", "signed_labels"]


def signed_labels(y, n_samples):
    """Encode labels as -1/+1 (the second of the sorted classes is +1); returns ``(classes, t)``."""
    classes, idx = check_binary_labels(y, n_samples)
    if classes.size != 2:
        msg = f"ep_probit needs two classes; y has {classes.size}: {list(classes)!r}."
        raise DataError(msg)
    return classes, np.where(idx == 1, 1.0, -1.0)


@dataclass
class EPResult:
    """Result of :func:`ep_probit`.

    Attributes
    ----------
    active : ndarray of int, shape (d,)
        Columns of X in the model (finite alpha), in increasing order.
    mean : ndarray of shape (d,)
        Posterior mean of the active weights.
    cov : ndarray of shape (d, d)
        Posterior covariance of the active weights (computed on first access).
    log_evidence : float
        EP approximation of ``log p(y | X, alpha)``.
    cavity_mean, cavity_var : ndarray of shape (n_samples,)
        Leave-one-out (cavity) moments of the signed latent ``y_i x_i . w``.
    loo_error : float
        Eq. 12, the fraction of samples misclassified by their cavity mean.
    loo_prob_error : float
        Eq. 13 with pre-scale ``loo_prob_scale``.
    site_precision, site_nu : ndarray of shape (n_samples,)
        Converged site parameters ``tau = 1/v_i`` and ``nu = m_i/v_i``.
    n_sweeps : int
        Parallel EP sweeps run.
    converged : bool
        Whether the sites converged within ``tol``.
    classes : ndarray of shape (2,)
        The two classes; the second is the positive one (``y = +1``).
    """

    active: np.ndarray
    mean: np.ndarray
    log_evidence: float
    cavity_mean: np.ndarray
    cavity_var: np.ndarray
    loo_error: float
    loo_prob_error: float
    site_precision: np.ndarray
    site_nu: np.ndarray
    n_sweeps: int
    converged: bool
    classes: np.ndarray
    _post: LatentPosterior = field(repr=False, default=None)

    @property
    def cov(self) -> np.ndarray:
        return self._post.cov()

    def predict_latent(self, X):
        """Mean and variance of ``x . w`` for new rows (all columns of the original X)."""
        X = check_design(X, estimator_name="ep_probit")
        Xa = dense(X[:, self.active])
        return self._post.latent(Xa)

    def predict_proba(self, X):
        """``P(y = classes[1] | x)``, integrating over the Gaussian posterior: ``Phi(m / sqrt(1 + v))``."""
        m, v = self.predict_latent(X)
        return np.exp(log_Phi(m / np.sqrt(1.0 + v)))


def ep_probit(X, y, alpha, *, loo_prob_scale=50.0, damping=1.0, tol=1e-8, max_iter=500,
              route=None) -> EPResult:
    """Fit the probit model with ARD prior ``w_j ~ N(0, 1/alpha_j)`` by Expectation Propagation.

    Parameters
    ----------
    X : {array-like, sparse matrix} of shape (n_samples, n_features)
        Basis matrix. Add a column of ones yourself for a bias. Computations run in float64.
    y : array-like of shape (n_samples,)
        Two classes: {0, 1}, {-1, +1}, booleans or two strings. The second sorted class is ``+1``.
    alpha : array-like of shape (n_features,)
        Prior precisions; ``np.inf`` excludes a feature from the model.
    loo_prob_scale : float, default=50.0
        Pre-scale of ``z_i`` in the LOO error probability (eq. 13; the paper's value, "tuned by
        simulations").
    damping : float, default=1.0
        Largest fraction of the full EP step taken at each parallel sweep; the step shrinks by itself
        when sweeps oscillate.
    tol : float, default=1e-8
        Convergence tolerance on the relative change of the site parameters.
    max_iter : int, default=500
        Maximum number of parallel sweeps.
    route : {None, "weight", "sample"}, default=None
        Where to do the posterior algebra; by default weight space if ``d <= n``, else sample space.

    Returns
    -------
    EPResult

    Examples
    --------
    >>> import numpy as np
    >>> from ardselect import ep_probit
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(40, 3))
    >>> y = (X[:, 0] + 0.3 * rng.normal(size=40) > 0).astype(int)
    >>> res = ep_probit(X, y, alpha=[1.0, 1.0, np.inf])
    >>> res.active.tolist(), res.converged
    ([0, 1], True)
    >>> bool(res.mean[0] > 1.0)
    True
    """
    for name, value in (("loo_prob_scale", loo_prob_scale), ("tol", tol)):
        if not (isinstance(value, Real) and 0 < value < np.inf):
            msg = f"{name} must be a positive number; got {value!r}."
            raise ValueError(msg)
    if not (isinstance(max_iter, Integral) and max_iter >= 1):
        msg = f"max_iter must be an integer >= 1; got {max_iter!r}."
        raise ValueError(msg)
    if route not in (None, "weight", "sample"):
        msg = f"route must be None, 'weight' or 'sample'; got {route!r}."
        raise ValueError(msg)
    X = check_design(X, estimator_name="ep_probit")
    alpha = np.asarray(alpha, dtype=np.float64).ravel()
    if alpha.shape[0] != X.shape[1]:
        msg = f"alpha has {alpha.shape[0]} entries but X has {X.shape[1]} columns."
        raise DataError(msg)
    if np.any(np.isnan(alpha)) or np.any(alpha <= 0):
        msg = "alpha must be positive (np.inf to exclude a feature); got NaN or <= 0."
        raise DataError(msg)
    classes, t = signed_labels(y, X.shape[0])
    active = np.flatnonzero(np.isfinite(alpha))
    Xa = dense(X[:, active])
    P = t[:, None] * Xa
    st = run_ep(P, alpha[active], damping=damping, tol=tol, max_iter=max_iter, route=route)
    if not (np.isfinite(st.log_evidence) and np.isfinite(st.post.mean).all()
            and np.isfinite(st.tau).all() and np.isfinite(st.nu).all()):
        # (no silent NaN: an overflow in the algebra is refused, not returned as converged)
        peak = float(np.max(np.abs(Xa))) if Xa.size else 0.0
        msg = (f"EP gave a non-finite evidence or posterior (the largest |x| in the model's "
               f"columns is {peak:.3g}); rescale X (e.g. standardise each column) or raise alpha")
        raise DataError(msg)
    if not st.converged:
        import warnings

        from sklearn.exceptions import ConvergenceWarning

        warnings.warn(
            f"EP did not converge in {max_iter} sweeps; increase max_iter or lower damping.",
            ConvergenceWarning,
            stacklevel=2,
        )
    return EPResult(
        active=active,
        mean=st.post.mean,
        log_evidence=st.log_evidence,
        cavity_mean=st.cavity_mean,
        cavity_var=st.cavity_var,
        loo_error=loo_error(st.cavity_mean),
        loo_prob_error=loo_prob_error(st.cavity_mean, st.cavity_var, loo_prob_scale),
        site_precision=st.tau,
        site_nu=st.nu,
        n_sweeps=st.n_iter,
        converged=st.converged,
        classes=classes,
        _post=st.post,
    )
