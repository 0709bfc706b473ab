"""How sure the chosen model is of each gene: log Bayes factor, inclusion and sign probability.

At the chosen model, EP's sites define a Gaussian *virtual regression* (``_sequential``). Holding every
other gene at its chosen precision, the marginal likelihood as a function of gene j's prior variance
``g = 1 / alpha_j`` is known in closed form (Faul & Tipping 2002), in terms of the leave-j-out quantities
``s_j`` and ``q_j`` the engine already computes::

    log p(t | g) - log p(t | gene j out) = 0.5 * (q_j^2 g / (1 + g s_j) - log(1 + g s_j)).

The type-II maximum of this over g is the engine's add / delete gain; it is never negative (g = 0 is
allowed), so it cannot say that a gene is *not* needed. A proper Bayes factor averages over a proper
prior on g instead. We take g uniform on ``[0, 1 / alpha_min]``, the range the path itself allows, which
gives the Occam factor back: a gene whose data term ``q^2`` is not clearly above ``s`` gets a Bayes factor
below one. Given inclusion, the weight's posterior at fixed g is ``N(g q / (1 + g s), g / (1 + g s))``;
averaging over g's posterior gives the probability that the weight is positive.

These are conditional on the other genes as chosen, not a sum over all models: a gene that is
interchangeable with a selected one (a correlated probe) gets a low Bayes factor here because the
selected one already explains the data.
"""

from __future__ import annotations

import numpy as np
from scipy.special import log_ndtr, logsumexp

__all__ = ["class_contrast", "inclusion_certainty", "leave_one_out_sq"]

#: Gauss-Legendre nodes over log g. The integrand is smooth in log g; its features sit near
#: g ~ 1/s and g ~ s / q^2, which for the designs we see lie between 1e-9 and 1e3 times g_max.
_N_NODES = 160
_LOG_SPAN = 12.0 * np.log(10.0)  # integrate g over [g_max * 1e-12, g_max] on the log scale


def leave_one_out_sq(S, Q, alpha):
    """``s_j, q_j``: ``S_j, Q_j`` with feature j itself taken out of the model (Tipping & Faul)."""
    S = np.asarray(S, dtype=np.float64)
    Q = np.asarray(Q, dtype=np.float64)
    alpha = np.asarray(alpha, dtype=np.float64)
    active = np.isfinite(alpha)
    with np.errstate(divide="ignore", invalid="ignore"):
        denom = np.where(active, alpha - S, 1.0)
        s = np.where(active, alpha * S / denom, S)
        q = np.where(active, alpha * Q / denom, Q)
    return s, q


def inclusion_certainty(s, q, g_max, prior_inclusion=0.5):
    """Log Bayes factor of including each candidate, its inclusion probability and sign probability.

    Parameters
    ----------
    s, q : ndarray of shape (m,)
        Leave-one-out quantities (:func:`leave_one_out_sq`), ``s > 0``.
    g_max : float
        Upper end of the uniform prior on the weight's prior variance (``1 / alpha_min``).
    prior_inclusion : float, default=0.5
        Prior probability that a gene belongs in the model (even prior odds by default).

    Returns
    -------
    log_bf : ndarray of shape (m,)
        ``log p(data | j in) - log p(data | j out)``, the others held as chosen.
    pip : ndarray of shape (m,)
        Posterior inclusion probability ``1 / (1 + exp(-(log_bf + log prior odds)))``.
    p_positive : ndarray of shape (m,)
        Probability that the weight is positive, given that the gene is in the model.
    """
    s = np.asarray(s, dtype=np.float64)[:, None]
    q = np.asarray(q, dtype=np.float64)[:, None]
    x, w = np.polynomial.legendre.leggauss(_N_NODES)
    u = np.log(g_max) - 0.5 * _LOG_SPAN * (1.0 - x)  # log g, (K,)
    g = np.exp(u)[None, :]  # (1, K)
    # Uniform prior density 1/g_max, dg = g du, du = (span / 2) dx.
    log_w = np.log(w) + np.log(0.5 * _LOG_SPAN) + u - np.log(g_max)  # (K,)
    gs = g * s  # (m, K)
    ell = 0.5 * (q * q * g / (1.0 + gs) - np.log1p(gs))  # (m, K) log likelihood ratio at g
    # The sliver [0, g_max * 1e-12] of the prior, where ell = 0 to within 1e-12 * g_max * s.
    log_sliver = np.log(np.exp(-_LOG_SPAN))
    terms = ell + log_w[None, :]
    log_bf = np.logaddexp(logsumexp(terms, axis=1), log_sliver)  # (m,)
    post_w = np.exp(terms - log_bf[:, None])  # posterior weights of the nodes given inclusion
    z = (g * q / (1.0 + gs)) / np.sqrt(g / (1.0 + gs))  # posterior mean / sd at each g
    p_positive = np.sum(post_w * np.exp(log_ndtr(z)), axis=1) + 0.5 * np.exp(log_sliver - log_bf)
    log_odds = log_bf + np.log(prior_inclusion) - np.log1p(-prior_inclusion)
    pip = np.exp(-np.logaddexp(0.0, -log_odds))
    return log_bf, pip, np.clip(p_positive, 0.0, 1.0)


def column_sd(design):
    """Standard deviation of every column over the rows (divisor ``n``).

    ``design`` is ``(n, m)``, dense, sparse or a :class:`ardselect._lazy.LazyDesign` (two passes
    over its chunks).

    Examples
    --------
    >>> import numpy as np
    >>> column_sd(np.array([[1.0, 5.0], [3.0, 5.0]]))
    array([1., 0.])
    """
    from ._sequential import _col_sq_norms_weighted

    n = design.shape[0]
    ones = np.ones(n)
    mean = np.asarray(design.T @ ones).ravel() / n
    sq = _col_sq_norms_weighted(design, ones) / n
    return np.sqrt(np.maximum(sq - mean * mean, 0.0))


def class_mean_difference(design, in_class):
    """Mean of every column over the rows ``in_class`` minus its mean over the others.

    ``design`` is ``(n, m)``, dense, sparse or a :class:`ardselect._lazy.LazyDesign` (one pass);
    NaN when either group is empty.

    Examples
    --------
    >>> import numpy as np
    >>> class_mean_difference(np.array([[1.0, 5.0], [3.0, 5.0], [6.0, 5.0]]),
    ...                       np.array([False, False, True]))
    array([4., 0.])
    """
    c = np.asarray(in_class, dtype=np.float64)
    n1, n0 = float(c.sum()), float((1.0 - c).sum())
    if n1 < 1 or n0 < 1:
        return np.full(design.shape[1], np.nan)
    sums = np.asarray(design.T @ np.column_stack([c, 1.0 - c]))
    return sums[:, 0] / n1 - sums[:, 1] / n0


def class_contrast(design, in_class):
    """Welch's t statistic of every column: the rows ``in_class`` against the others.

    ``design`` is ``(n, m)``, dense, sparse or a :class:`ardselect._lazy.LazyDesign` (two passes
    over its chunks); ``in_class`` a boolean ``(n,)``. Positive where the column's mean is higher
    in the class. NaN where both groups are constant (the statistic is undefined) or a group has
    fewer than two rows.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1.0, 5.0], [2.0, 5.0], [3.0, 5.0], [4.0, 5.0]])
    >>> np.round(class_contrast(X, np.array([False, False, True, True])), 3)
    array([2.828,   nan])
    """
    from ._sequential import _col_sq_norms_weighted

    c = np.asarray(in_class, dtype=np.float64)
    n1, n0 = float(c.sum()), float((1.0 - c).sum())
    if n1 < 2 or n0 < 2:
        return np.full(design.shape[1], np.nan)
    sums = np.asarray(design.T @ np.column_stack([c, 1.0 - c]))  # (m, 2)
    sq1 = _col_sq_norms_weighted(design, c)
    sq0 = _col_sq_norms_weighted(design, 1.0 - c)
    m1, m0 = sums[:, 0] / n1, sums[:, 1] / n0
    v1 = np.maximum(sq1 - n1 * m1 * m1, 0.0) / (n1 - 1.0)
    v0 = np.maximum(sq0 - n0 * m0 * m0, 0.0) / (n0 - 1.0)
    se = np.sqrt(v1 / n1 + v0 / n0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(se > 0, (m1 - m0) / se, np.nan)
