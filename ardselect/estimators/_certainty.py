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
import pandas as pd
from scipy.special import log_ndtr, logsumexp

from ..engine._sequential import score_candidates
from ..numerics._ep import LatentPosterior

__all__ = ["certainty_table", "class_contrast", "inclusion_certainty", "leave_one_out_sq",
           "marginal_log_bf"]

#: Gauss-Legendre nodes over log g. The integrand is smooth in log g; its features sit near
#: g ~ 1/s and g ~ s / q^2, which for the designs we see lie between 1e-9 and 1e3 times g_max.
_N_NODES = 160
_LOG_SPAN = 12.0 * np.log(10.0)  # integrate g over [g_max * 1e-12, g_max] on the log scale
#: Genes per block of :func:`inclusion_certainty` (its tables are genes x nodes).
_GENE_BLOCK = 2048


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
    s = np.asarray(s, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    if s.shape[0] > _GENE_BLOCK:  # genes are independent: a block at a time bounds the (m, K) tables
        parts = [inclusion_certainty(s[i:i + _GENE_BLOCK], q[i:i + _GENE_BLOCK], g_max,
                                     prior_inclusion) for i in range(0, s.shape[0], _GENE_BLOCK)]
        return tuple(np.concatenate(a) for a in zip(*parts, strict=True))
    s, q = s[:, None], q[:, None]
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


def class_statistics(design, in_class):
    """Welch's t, difference of class means and overall sd of every column, in one set of passes.

    The t statistic and the difference compare the rows ``in_class`` with the others; the standard
    deviation is over all rows (divisor ``n``). ``design`` is ``(n, m)``, dense, sparse or lazy (three passes
    over its chunks); ``in_class`` a boolean ``(n,)``. The t statistic is positive where the
    column's mean is higher in the class, NaN where both groups are constant or a group has fewer
    than two rows; the difference is NaN where a group is empty.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1.0, 5.0], [2.0, 5.0], [3.0, 5.0], [4.0, 5.0]])
    >>> t, diff, sd = class_statistics(X, np.array([False, False, True, True]))
    >>> np.round(t, 3), diff, np.round(sd, 3)
    (array([2.828,   nan]), array([2., 0.]), array([1.118, 0.   ]))
    """
    from ..engine._sequential import _col_sq_norms_weighted

    c = np.asarray(in_class, dtype=np.float64)
    n1, n0 = float(c.sum()), float((1.0 - c).sum())
    m = design.shape[1]
    sums = np.asarray(design.T @ np.column_stack([c, 1.0 - c]))  # (m, 2)
    sq1 = _col_sq_norms_weighted(design, c)
    sq0 = _col_sq_norms_weighted(design, 1.0 - c)
    n = n1 + n0
    mean = (sums[:, 0] + sums[:, 1]) / n
    sd = np.sqrt(np.maximum((sq1 + sq0) / n - mean * mean, 0.0))
    if n1 < 1 or n0 < 1:
        return np.full(m, np.nan), np.full(m, np.nan), sd
    m1, m0 = sums[:, 0] / n1, sums[:, 1] / n0
    if n1 < 2 or n0 < 2:
        return np.full(m, np.nan), m1 - m0, sd
    v1 = np.maximum(sq1 - n1 * m1 * m1, 0.0) / (n1 - 1.0)
    v0 = np.maximum(sq0 - n0 * m0 * m0, 0.0) / (n0 - 1.0)
    se = np.sqrt(v1 / n1 + v0 / n0)
    # Below this, spread and difference are the rounding of sums of squares (about sqrt(eps)
    # of the values): the column is constant, its t undefined and its difference 0.
    noise = 1e-7 * (np.abs(m1) + np.abs(m0))
    diff = np.where(np.abs(m1 - m0) <= noise, 0.0, m1 - m0)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(se > noise, diff / se, np.nan)
    return t, diff, sd


def class_contrast(design, in_class):
    """Welch's t statistic of every column: the rows ``in_class`` against the others.

    Positive where the column's mean is higher in the class; NaN where both groups are constant
    (the statistic is undefined) or a group has fewer than two rows (:func:`class_statistics`).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1.0, 5.0], [2.0, 5.0], [3.0, 5.0], [4.0, 5.0]])
    >>> np.round(class_contrast(X, np.array([False, False, True, True])), 3)
    array([2.828,   nan])
    """
    return class_statistics(design, in_class)[0]


def certainty_table(fits, coef, coef_sd, alpha, *, alpha_min, intercept_alpha):
    """The body of ``ARDClassifier.ranked_features``: every feature ranked, per binary problem.

    ``fits`` are the estimator's :class:`~ardselect.estimators._binary_fit.BinaryFit` (each at its chosen
    step); ``coef``, ``coef_sd`` and ``alpha`` its fitted attributes of the same names. The
    columns are documented on ``ranked_features``.
    """
    frames = []
    n_basis = coef.shape[1]
    for i, fit in enumerate(fits):
        # Potential of the features outside the model: q^2/s on the chosen model's targets.
        st = fit.ep
        tau = st.tau
        t = np.where(tau > 0, st.nu / np.where(tau > 0, tau, 1.0), 0.0)
        design = fit.problem.design  # rebuilt once per problem (see EPProbitProblem.release)
        S, Q = score_candidates(design, st.post, tau, t)
        with np.errstate(divide="ignore", invalid="ignore"):
            potential = np.where(S > 0, Q * Q / S, 0.0)[:n_basis]
        alpha_all = np.full(S.shape, np.inf)
        alpha_all[fit.active] = fit.alpha_scaled
        s_loo, q_loo = leave_one_out_sq(S, Q, alpha_all)
        s_loo, q_loo = s_loo[:n_basis], q_loo[:n_basis]
        selected = np.isfinite(alpha[i])
        # The evidence-optimal prior variance given the others (Tipping & Faul), unfloored.
        with np.errstate(divide="ignore", invalid="ignore"):
            relevance = np.where(selected & (s_loo > 0),
                                 np.maximum(q_loo * q_loo - s_loo, 0.0) / s_loo**2, 0.0)
        log_bf, _, _ = inclusion_certainty(s_loo, q_loo, 1.0 / alpha_min)
        usable = fit.problem.allowed[:n_basis]
        log_bf = np.where(usable, log_bf, np.nan)
        with np.errstate(divide="ignore", invalid="ignore"):
            z_out = q_loo / np.sqrt(s_loo)
            z_in = coef[i] / coef_sd[i]
        z = np.where(usable, np.where(selected, z_in, z_out), np.nan)
        marginal = marginal_log_bf(fit, design, alpha_min=alpha_min,
                                   intercept_alpha=intercept_alpha)
        log_bf_marginal = np.where(usable, marginal[:n_basis], np.nan)
        # (in_class is the problem's positive class; a 2-class fit's is classes_[1])
        t_stat, diff, sd = class_statistics(fit.problem.basis, fit.signs > 0)
        t_stat = t_stat[:n_basis]
        t_stat = np.where(usable, t_stat, np.nan)
        frequency = (np.full(n_basis, np.nan) if fit.frequency is None
                     else fit.frequency[:n_basis])
        potential = np.where(usable, potential, -np.inf)
        # basis = input / scale: the input's sd and class difference are scale times the basis'.
        std_weight = coef[i] * (fit.scale * sd)[:n_basis] + 0.0
        # (+ 0.0: a zero weight times a negative difference is -0.0, written "-0")
        contribution = coef[i] * (fit.scale * diff)[:n_basis] + 0.0
        key = np.where(selected, contribution, potential)
        # Selected first, then by key descending, then by |weight / sd|.
        tie = np.where(selected, -np.abs(np.nan_to_num(z)), 0.0)
        order = np.lexsort((tie, -key, ~selected))
        entered = np.full(n_basis, -1)
        for s in reversed(fit.steps):
            cols = s.active[s.active < n_basis]  # the genes (the basis functions)
            entered[cols] = s.step
        frames.append(pd.DataFrame({
            "class": fit.positive_class,
            "rank": np.arange(1, n_basis + 1),
            "feature": fit.names[:n_basis][order].astype(str),
            "selected": selected[order],
            "contribution": contribution[order],
            "std_weight": std_weight[order],
            "relevance": relevance[order],
            "weight": coef[i, order],
            "weight_sd": coef_sd[i, order],
            "alpha": alpha[i, order],
            "entered_step": pd.array(np.where(entered[order] >= 0, entered[order], -1),
                                     dtype="Int64"),
            "log_bf_conditional": log_bf[order],
            "z": z[order],
            "log_bf_marginal": log_bf_marginal[order],
            "cv_frequency": frequency[order],
            "t_stat": t_stat[order],
        }))
    out = pd.concat(frames, ignore_index=True)
    out.loc[out["entered_step"] < 0, "entered_step"] = pd.NA
    return out


def marginal_log_bf(fit, design, *, alpha_min, intercept_alpha):
    """Each column alone (beside the intercept) against the intercept alone: a log BF.

    With known covariates, each column beside the intercept and the covariates against those.

    On the EP sites of the intercept-only model (the intercept at its fixed precision, or with
    ``intercept_alpha="ard"`` at the widest prior the path allows), by the closed form of
    :func:`ardselect.estimators._certainty.inclusion_certainty`. Without the intercept, genes high in
    the larger class would score for the class imbalance itself.
    """
    if fit.intercept_col >= 0 or fit.covariate_cols.size:
        # The held columns: the intercept, then the covariates at their fixed precisions.
        a0 = alpha_min if intercept_alpha == "ard" else intercept_alpha
        held = [fit.intercept_col] if fit.intercept_col >= 0 else []
        held_alpha = [float(a0)] * len(held)
        held += [int(c) for c in fit.covariate_cols]
        held_alpha += [float(fit.fixed[int(c)]) for c in fit.covariate_cols]
        st0 = fit.problem.fit_sites(np.array(held), np.array(held_alpha), None, tol=1e-9)
        b0 = st0.tau
        t0 = np.where(b0 > 0, st0.nu / np.where(b0 > 0, b0, 1.0), 0.0)
        post0 = st0.post
    else:
        b0, t0 = fit.problem.initial_virtual()
        post0 = LatentPosterior(np.zeros((b0.shape[0], 0)), np.zeros(0), b0, b0 * t0)
    S0, Q0 = score_candidates(design, post0, b0, t0)
    return inclusion_certainty(S0, Q0, 1.0 / alpha_min)[0]
