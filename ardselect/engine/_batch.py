"""Several path actions on one Gaussian site approximation (Tipping & Faul 2003, appendix).

For fixed site precisions ``b`` and targets ``t`` the model is a Gaussian regression, and the
fast marginal-likelihood algorithm of Tipping & Faul moves through it by exact rank-one updates:
after one action on feature ``j`` the scores ``S``, ``Q`` of every candidate and the posterior
of the active weights follow in ``O(n m + d m)`` (one product ``Phi^T (B phi_j)`` for an
addition, none for a re-estimate or a deletion), against the ``O(sweeps n d^2 + n d m)`` of an
action followed by an EP refresh. :class:`FixedSites` holds that state; the path
(:class:`ardselect.engine._sequential.SequentialPath` with ``batch``) takes several actions on it
and refreshes EP once for all of them, keeping the batch only when the refreshed objective rose.

State, with ``A`` the active columns (``d``) and ``Phi`` the design (``n x m``):
``Sigma = (diag(alpha_A) + Phi_A^T B Phi_A)^-1``, ``mu = Sigma Phi_A^T B t``, ``E = Phi_A^T B Phi``
(``d x m``), ``S_j = phi_j^T B phi_j - E_j^T Sigma E_j`` and ``Q_j = phi_j^T B t - E_j^T mu``.
Updates (``Sigma_i`` the column of the acted-on feature, ``e = E^T Sigma_i``):

* re-estimate ``alpha_i -> a``: ``kappa = 1 / (Sigma_ii + 1 / (a - alpha_i))``,
  ``Sigma -= kappa Sigma_i Sigma_i^T``, ``mu -= kappa mu_i Sigma_i``, ``S += kappa e^2``,
  ``Q += kappa mu_i e``;
* delete ``i``: the same with ``kappa = 1 / Sigma_ii`` (``a = inf``), then row ``i`` dropped;
* add ``j`` at ``a``: ``s = 1 / (a + S_j)``, ``mu_j = s Q_j``, ``c = Sigma E_j``,
  ``r = Phi^T B phi_j``, ``e = r - E^T c``; ``Sigma`` grows by the block
  ``[[Sigma + s c c^T, -s c], [-s c^T, s]]``, ``mu`` by ``[mu - mu_j c, mu_j]``,
  ``S -= s e^2``, ``Q -= mu_j e``, and ``E`` by the row ``r``.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import cho_factor, cho_solve

from ._design import as_design

__all__ = ["FixedSites"]

ADD, DELETE, REESTIMATE = 1, 2, 3


class FixedSites:
    """The Gaussian regression of fixed sites ``(b, t)`` and its candidate scores.

    ``columns(idx)`` returns the dense columns ``idx`` of ``Phi`` (``(n, k)``). ``sq`` is
    ``sum_i b_i Phi_ij^2`` for every column when the caller has it.
    """

    def __init__(self, Phi, columns, active, alpha_active, b, t, sq=None):
        self.D = as_design(Phi)
        self.columns = columns
        self.b = b
        self.active = [int(j) for j in active]
        P = columns(np.asarray(active, dtype=np.intp))  # (n, d)
        BP = b[:, None] * P
        H = P.T @ BP
        H[np.diag_indices_from(H)] += alpha_active
        c = cho_factor(H, lower=True, check_finite=False)
        self.Sigma = cho_solve(c, np.eye(H.shape[0]), check_finite=False)
        R = np.empty((P.shape[0], P.shape[1] + 1))
        R[:, :-1] = BP
        R[:, -1] = b * t
        GQ, sq = self.D.scores_products(R, b, sq)  # (d + 1, m), (m,)
        self.E = np.ascontiguousarray(GQ[:-1])
        self.mu = self.Sigma @ GQ[-1, self.active] if self.active else np.zeros(0)
        self.S = sq - np.einsum("ij,ij->j", self.E, self.Sigma @ self.E)
        self.Q = GQ[-1] - self.mu @ self.E

    def apply(self, j, action, alpha_old, alpha_new):
        """Take ``action`` on feature ``j`` (its precision ``alpha_old`` -> ``alpha_new``)."""
        if action == ADD:
            self._add(j, alpha_new)
            return
        i = self.active.index(j)
        col = self.Sigma[:, i].copy()
        # A deletion is the re-estimate to an infinite precision.
        delta_inv = 0.0 if action == DELETE else 1.0 / (alpha_new - alpha_old)
        kappa = 1.0 / (col[i] + delta_inv)
        e = col @ self.E
        mu_i = self.mu[i]
        self.S += kappa * e * e
        self.Q += (kappa * mu_i) * e
        self.Sigma -= kappa * np.outer(col, col)
        self.mu -= (kappa * mu_i) * col
        if action == DELETE:
            keep = np.arange(len(self.active)) != i
            self.Sigma = self.Sigma[np.ix_(keep, keep)]
            self.mu = self.mu[keep]
            self.E = self.E[keep]
            del self.active[i]

    def _add(self, j, a):
        s = 1.0 / (a + self.S[j])
        mu_j = s * self.Q[j]
        c = self.Sigma @ self.E[:, j]
        phi = self.columns(np.array([j]))[:, 0]
        r = self.D.tvec(self.b * phi)  # (m,)
        e = r - c @ self.E
        self.S -= s * e * e
        self.Q -= mu_j * e
        d = len(self.active)
        Sigma = np.empty((d + 1, d + 1))
        Sigma[:d, :d] = self.Sigma + s * np.outer(c, c)
        Sigma[:d, d] = Sigma[d, :d] = -s * c
        Sigma[d, d] = s
        self.Sigma = Sigma
        self.mu = np.append(self.mu - mu_j * c, mu_j)
        self.E = np.vstack([self.E, r[None, :]])
        self.active.append(int(j))
