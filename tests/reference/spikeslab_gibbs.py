"""A plain Gibbs sampler of the spike-and-slab probit model, to check the EP posterior against.

Model (the one :class:`ardselect.SpikeSlabClassifier` fits, on a design used as given)::

    t_i = sign(a_i),  a_i = z_i . w + b + e_i,  e_i ~ N(0, 1)      (probit, Albert & Chib 1993)
    gamma_j ~ Bernoulli(p0),  w_j | gamma_j = 1 ~ N(0, v_s),  w_j | gamma_j = 0 = 0
    b ~ N(0, v_b)

One sweep draws every ``a_i`` from its truncated normal, then each pair ``(gamma_j, w_j)`` in turn
with ``w_j`` integrated out of ``gamma_j``'s conditional (a collapsed single-site update), then ``b``.
With ``r`` the residual of the other terms, ``s = z_j . z_j`` and ``c = z_j . r``::

    log odds(gamma_j = 1 | rest) = logit(p0) - log(1 + v_s s) / 2 + c^2 v_s / (2 (1 + v_s s))
    w_j | gamma_j = 1, rest ~ N(v_s c / (1 + v_s s), v_s / (1 + v_s s))

Inclusion probabilities are Rao-Blackwellised: the average over sweeps of the conditional probability
above. Nothing here is shared with ``ardselect``. Single-site updates mix slowly when genes are
strongly correlated: use it on designs with modest correlation.
"""

import numpy as np
from scipy.special import expit
from scipy.stats import truncnorm


def gibbs_spike_slab(Z, t, p0, v_s, v_b, *, n_sweeps=4000, n_burnin=500, seed=0):
    """Posterior inclusion probabilities and weight means of the spike-and-slab probit model.

    Parameters
    ----------
    Z : ndarray (n, p)
    t : ndarray (n,) in {-1, +1}
    p0, v_s, v_b : float
        Prior inclusion probability, slab variance, intercept prior variance (0: no intercept).

    Returns
    -------
    dict with ``pip`` (p,), ``mean`` (p,) and ``intercept`` (float), averages over the kept sweeps,
    and ``models`` (kept sweeps, p): which genes each kept sweep had in the model.
    """
    rng = np.random.default_rng(seed)
    n, p = Z.shape
    s = np.einsum("ij,ij->j", Z, Z)
    logit_p0 = np.log(p0) - np.log1p(-p0)
    w = np.zeros(p)
    b = 0.0
    f = np.zeros(n)  # Z w + b
    pip_sum = np.zeros(p)
    w_sum = np.zeros(p)
    b_sum = 0.0
    kept = 0
    draws = []  # the sampled models (which genes are in), one per kept sweep
    for sweep in range(n_sweeps + n_burnin):
        # a_i | rest: N(f_i, 1) truncated to t_i a_i > 0, drawn as t_i x with x > 0.
        m = t * f
        x = truncnorm.rvs(-m, np.inf, loc=m, scale=1.0, random_state=rng)
        a = t * x
        r = a - f  # residual of everything
        incl = np.empty(p)
        for j in range(p):
            zj = Z[:, j]
            r += zj * w[j]  # the residual without gene j
            c = zj @ r
            den = 1.0 + v_s * s[j]
            log_odds = logit_p0 - 0.5 * np.log(den) + 0.5 * c * c * v_s / den
            incl[j] = expit(log_odds)
            if rng.uniform() < incl[j]:
                w[j] = rng.normal(v_s * c / den, np.sqrt(v_s / den))
            else:
                w[j] = 0.0
            r -= zj * w[j]
        if v_b > 0:
            r += b
            den = 1.0 + n * v_b
            b = rng.normal(v_b * r.sum() / den, np.sqrt(v_b / den))
            r -= b
        f = a - r
        if sweep >= n_burnin:
            draws.append(w != 0.0)
            pip_sum += incl
            w_sum += w
            b_sum += b
            kept += 1
    return {"pip": pip_sum / kept, "mean": w_sum / kept, "intercept": b_sum / kept,
            "models": np.array(draws)}
