"""Model choice along the ARD path (Qi et al. 2004, sec. 3.4), and by inner cross-validation.

* ``"cv"``: the candidate (the ``"loo"`` model of the ARD path, or a screened shared-precision model)
  with the lowest calibrated held-out log-loss in an inner cross-validation (``ardselect.estimators._cv``);
  it needs refits, so it is made in ``ARDClassifier.fit``, not from the path records.

* ``"evidence"``: the step with the largest EP evidence (evidence-ARD-EP).
* ``"loo"``: the smallest EP leave-one-out error count (eq. 12, predictive-ARD-EP). The count is
  discrete and often ties along a path, so among the steps of the smallest count the one with the
  smallest LOO error probability (eq. 13) is chosen, then the one with the fewest genes, then the
  first.
* ``"loo-prob"``: the smallest LOO error probability (eq. 13, predictive_Prob-ARD-EP); ties to the first.
"""

from __future__ import annotations

import numpy as np

from ..choices import CRITERIA

__all__ = ["CRITERIA", "PATH_CRITERIA", "check_criterion", "choose_step", "comparable_loo", "group_cavities",
           "joint_latent_cov"]


#: The criteria that read the path records alone (the paper's).
PATH_CRITERIA = ("loo", "loo-prob", "evidence")


def check_criterion(criterion) -> str:
    if criterion not in CRITERIA:
        msg = f"criterion must be one of {CRITERIA}; got {criterion!r}."
        raise ValueError(msg)
    return criterion


def comparable_loo(loo_error):
    """LOO errors rounded for comparison: they are multiples of 1/(2n), so float noise is dropped."""
    return np.round(np.asarray(loo_error, dtype=float), 12)


def choose_step(log_evidence, loo_error, loo_prob_error, criterion: str, n_genes=None) -> int:
    """Index (into the path records) of the step the criterion picks.

    ``"evidence"`` and ``"loo-prob"`` take the first step of the best value. ``"loo"`` takes, among
    the steps of the smallest LOO error count (equal counts compared exactly, see
    :func:`comparable_loo`), the one with the smallest LOO error probability, then the one with the
    fewest genes (``n_genes``, one per step; without it this key is skipped), then the first. A NaN
    record never wins.

    Examples
    --------
    >>> choose_step([-5.0, -3.0, -2.0], [0.1, 0.0, 0.0], [0.2, 0.1, 0.05], "loo")
    2
    >>> choose_step([-5.0, -3.0, -2.0], [0.1, 0.0, 0.0], [0.1, 0.05, 0.05], "loo", [9, 4, 2])
    2
    >>> choose_step([-5.0, -3.0, -2.0], [0.1, 0.0, 0.0], [0.2, 0.1, 0.05], "evidence")
    2
    """
    if criterion not in PATH_CRITERIA:
        msg = f"choose_step reads the path records: criterion must be one of {PATH_CRITERIA}."
        raise ValueError(msg)
    if criterion == "evidence":
        return _first_min(-np.asarray(log_evidence, dtype=float))
    if criterion == "loo-prob":
        return _first_min(np.asarray(loo_prob_error, dtype=float))
    err = _nan_last(comparable_loo(loo_error))
    prob = _nan_last(np.asarray(loo_prob_error, dtype=float))
    size = np.zeros(err.size) if n_genes is None else np.asarray(n_genes, dtype=float)
    if prob.shape != err.shape or size.shape != err.shape:
        msg = (f"one record per step: got {err.size} LOO errors, {prob.size} LOO error "
               f"probabilities and {size.size} model sizes.")
        raise ValueError(msg)
    # lexsort sorts by the last key first and is stable: ties left keep the first step.
    return int(np.lexsort((size, prob, err))[0])


def _nan_last(v):
    return np.where(np.isnan(v), np.inf, v)


def _first_min(v) -> int:
    return int(np.argmin(_nan_last(v)))  # argmin returns the first minimum


def joint_latent_cov(post, Xa):
    """Posterior covariance ``Xa V Xa^T`` of the latents of the rows of ``Xa`` (``(k, d)``).

    ``post`` is a :class:`ardselect.numerics._ep.LatentPosterior` over the ``d`` active weights; the
    algebra follows its route (weight space: ``V = A^-1/2 Bw^-1 A^-1/2``; sample space:
    ``V = A^-1 - A^-1 P^T S Bs^-1 S P A^-1``), never forming ``V`` itself. Returns ``(k, k)``.
    """
    k = Xa.shape[0]
    if post.route == "empty":
        return np.zeros((k, k))
    from ._linalg import tri_solve

    Xt = Xa * post.inv_sqrt_alpha  # (k, d)
    if post.route == "weight":
        W = tri_solve(post.L, Xt.T)  # (d, k)
        return W.T @ W
    W = tri_solve(post.L, post.s[:, None] * (post.Pt @ Xt.T))  # (n, k)
    return Xt @ Xt.T - W.T @ W


def group_cavities(post, P, tau, nu, groups):
    """Leave-group-out cavities: each sample's latent with all of its group's sites removed.

    EP's posterior is the prior times one Gaussian site per sample, ``exp(-tau_i h_i^2 / 2 +
    nu_i h_i)`` in the signed latent ``h_i = P_i . w``. Dividing out the sites of every sample of a
    group G at once leaves the posterior of the weights given the other groups only (EP's
    approximation of it), whose latents at G are jointly Gaussian with ``(|G|, |G|)`` covariance
    ``Sc = (S^-1 - T)^-1`` and mean ``mc = Sc (S^-1 mu - nu_G)``, where ``mu, S`` are the joint
    posterior moments of ``h_G`` and ``T = diag(tau_G)``. Without inverting S (``R = T^1/2``,
    ``M = I - R S R``, positive definite since the cavity is proper)::

        Sc = S + S R M^-1 R S,    mc = y + S R M^-1 R y,    y = mu - S nu_G.

    With singleton groups this is the usual per-sample EP cavity.

    Parameters
    ----------
    post : LatentPosterior
        The converged posterior (sites ``tau, nu``).
    P : ndarray of shape (n, d)
        The signed design of the active weights.
    tau, nu : ndarray of shape (n,)
    groups : array-like of shape (n,)
        A group label per sample.

    Returns
    -------
    mean, var : ndarray of shape (n,)
        Marginals of each sample's joint leave-group-out cavity of the signed latent.
    cov : dict
        Group label -> ``(indices, (|G|, |G|) cavity covariance)``: the joint predictive.
    """
    from ._linalg import chol_solve, safe_cholesky

    groups = np.asarray(groups)
    n = P.shape[0]
    mean = np.empty(n)
    var = np.empty(n)
    joint = {}
    for g in dict.fromkeys(groups.tolist()):
        idx = np.flatnonzero(groups == g)
        S = joint_latent_cov(post, P[idx])  # (k, k)
        mu = post.f_mean[idx]
        r = np.sqrt(np.maximum(tau[idx], 0.0))  # (k,)
        M = np.eye(idx.size) - r[:, None] * S * r[None, :]
        L = safe_cholesky(M)  # jitter only if rounding made the proper cavity look improper
        y = mu - S @ nu[idx]
        SR = S * r[None, :]  # (k, k) = S R
        mc = y + SR @ chol_solve(L, r * y)
        Sc = S + SR @ chol_solve(L, SR.T)
        Sc = 0.5 * (Sc + Sc.T)
        mean[idx] = mc
        var[idx] = np.diag(Sc)
        joint[g] = (idx, Sc)
    return mean, np.maximum(var, 0.0), joint
