"""A slow, literal EP for the ARD probit model, written straight from Qi et al. (2004), sec. 3.1.

Sites ``g_i(w) = s_i exp(-(phi_i . w - m_i)^2 / (2 v_i))`` are updated one at a time (sequential EP) with
explicit matrix inverses and ``scipy.stats.norm``; the evidence is eq. 11 in Minka's original form,
``p(D|alpha) = |V|^1/2 (prod alpha)^1/2 exp(B/2) prod_i s_i`` with ``B = m^T V^-1 m - sum_i m_i^2 / v_i``.
Nothing here is shared with ``ardselect.numerics._ep``: it exists to check the fast code. Use only on tiny
problems with moderate margins (no log-space care here).
"""

import numpy as np
from scipy.stats import norm


def literal_ep(P, alpha, n_sweeps=200, tol=1e-12):
    """P: (n, d) signed design t_i phi(x_i); alpha: (d,) finite. Returns dict(mean, cov, log_Z, mc, vc)."""
    n, d = P.shape
    A = np.diag(alpha)
    v = np.full(n, np.inf)  # site variances (inf = site not yet included)
    m = np.zeros(n)
    s = np.ones(n)
    V = np.linalg.inv(A)
    mw = np.zeros(d)
    for _ in range(n_sweeps):
        old = (v.copy(), m.copy())
        for i in range(n):
            phi = P[i]
            # Remove site i: cavity (eqs. 4-5).
            if np.isfinite(v[i]):
                Vphi = V @ phi
                Vc = V + np.outer(Vphi, Vphi) / (v[i] - phi @ Vphi)
                mc_w = mw + (Vc @ phi) * (phi @ mw - m[i]) / v[i]
            else:
                Vc, mc_w = V, mw
            vc = phi @ Vc @ phi
            mc = phi @ mc_w
            # Tilted moments (eqs. 6-7).
            z = mc / np.sqrt(1.0 + vc)
            Zi = norm.cdf(z)
            rho = norm.pdf(z) / Zi / np.sqrt(1.0 + vc)
            mw = mc_w + Vc @ phi * rho
            V = Vc - np.outer(Vc @ phi, Vc @ phi) * rho * (phi @ mw + rho) / (1.0 + vc)
            # New site (eqs. 8-10).
            fvar = phi @ V @ phi
            v[i] = 1.0 / (1.0 / fvar - 1.0 / vc)
            m[i] = mc + (v[i] + vc) * rho
            s[i] = Zi * np.sqrt(1.0 + vc / v[i]) * np.exp(0.5 * (mc - m[i]) ** 2 / (v[i] + vc))
        if np.max(np.abs(old[0] - v)) < tol and np.max(np.abs(old[1] - m)) < tol:
            break
    # Recompute the posterior from the sites (eq. 14).
    V = np.linalg.inv(A + P.T @ np.diag(1.0 / v) @ P)
    mw = V @ P.T @ (m / v)
    B = mw @ np.linalg.inv(V) @ mw - np.sum(m**2 / v)
    log_Z = (0.5 * np.linalg.slogdet(V)[1] + 0.5 * np.sum(np.log(alpha)) + 0.5 * B
             + np.sum(np.log(s)))
    fv = np.einsum("ij,jk,ik->i", P, V, P)
    fm = P @ mw
    vc = 1.0 / (1.0 / fv - 1.0 / v)
    mc = vc * (fm / fv - m / v)
    return {"mean": mw, "cov": V, "log_Z": log_Z, "mc": mc, "vc": vc}
