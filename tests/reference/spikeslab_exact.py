"""Exact posterior of the spike-and-slab probit model by enumerating every model (small p only).

For a model ``gamma`` (a subset of the genes) the weights are ``N(0, v_s I)``, the intercept
``N(0, v_b)``, and with ``h = Z_gamma w + b`` the likelihood is ``prod_i Phi(t_i h_i)``. Writing
``Phi(t_i h_i) = P(t_i (h_i + e_i) >= 0)`` with ``e ~ N(0, I)`` gives the marginal likelihood as a
Gaussian orthant probability::

    p(t | gamma) = P(x >= 0),   x ~ N(0, C),   C = D (I + v_s Z_g Z_g^T + v_b 1 1^T) D,  D = diag(t)

which is computed by numerical integration (Genz's algorithm, ``scipy.stats.multivariate_normal.cdf``,
relative error about 1e-4). The predictive probability of a new point adds it as an ``n+1``-th
coordinate with ``t = +1``: ``p(t*=1 | t, gamma) = P_{n+1} / P_n``. Posterior model probabilities are
``p(gamma) p(t | gamma)`` normalised, with ``p(gamma) = p0^|gamma| (1 - p0)^(p - |gamma|)``, or with a
discrete hyperprior on ``p0`` its average ``sum_g pi_g p0_g^|gamma| (1 - p0_g)^(p - |gamma|)``.

Nothing here is shared with ``ardselect``; cost is ``2^p`` orthant probabilities of dimension
``n`` (and ``n + 1`` per test point), so keep ``p <= 12`` and ``n`` about a dozen.
"""

from itertools import combinations

import numpy as np
from scipy.stats import multivariate_normal


def _orthant(C, seed):
    n = C.shape[0]
    return multivariate_normal.cdf(np.zeros(n), mean=np.zeros(n), cov=C, maxpts=20000,
                                   abseps=1e-300, releps=1e-4, rng=seed)


def exact_spike_slab(Z, t, p0, v_s, v_b, Z_test=None, seed=0):
    """PIPs, predictive ``P(t* = +1)`` at ``Z_test`` and ``log p(t)`` by enumeration.

    Parameters
    ----------
    Z : ndarray (n, p)
        Design (used as given: no centring or scaling).
    t : ndarray (n,)
        Labels in {-1, +1}.
    p0 : float or dict
        Prior inclusion probability, or a discrete hyperprior ``{p0_g: pi_g}``.
    v_s, v_b : float
        Slab variance, intercept prior variance (0: no intercept).
    Z_test : ndarray (m, p), optional
    """
    n, p = Z.shape
    hyper = p0 if isinstance(p0, dict) else {p0: 1.0}
    nodes = np.array(list(hyper))
    log_pi = np.log(np.array(list(hyper.values())) / sum(hyper.values()))
    D = np.diag(t)
    m = 0 if Z_test is None else Z_test.shape[0]
    log_w, incl, pred = [], [], []
    for k in range(p + 1):
        for gamma in combinations(range(p), k):
            g = list(gamma)
            G = np.vstack([Z, Z_test]) if m else Z
            S = np.eye(n + m) + v_s * G[:, g] @ G[:, g].T + v_b
            C = D @ S[:n, :n] @ D
            pn = _orthant(C, seed)
            log_prior = np.logaddexp.reduce(log_pi + k * np.log(nodes) + (p - k) * np.log1p(-nodes))
            log_w.append(log_prior + np.log(pn))
            z = np.zeros(p, dtype=bool)
            z[g] = True
            incl.append(z)
            probs = []
            for j in range(m):
                idx = [*range(n), n + j]
                Dj = np.diag(np.append(t, 1.0))
                Cj = Dj @ S[np.ix_(idx, idx)] @ Dj
                probs.append(_orthant(Cj, seed) / pn)
            pred.append(probs)
    log_w = np.array(log_w)
    top = log_w.max()
    w = np.exp(log_w - top)
    log_evidence = top + np.log(w.sum())
    w /= w.sum()
    pip = w @ np.array(incl, dtype=float)
    predictive = w @ np.array(pred) if m else None
    return {"pip": pip, "predictive": predictive, "log_evidence": float(log_evidence),
            "model_probabilities": w}
