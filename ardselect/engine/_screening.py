"""Safe screening of the candidates of a sequential ARD step: score exactly only what can win.

Every step of the Faul–Tipping path takes the best of all actions, and the candidate scores
``S_j = phi_j^T C^-1 phi_j`` and ``Q_j = phi_j^T C^-1 t`` cost ``O(n d m)`` for all ``m`` features
(``C = B^-1 + Phi_A A^-1 Phi_A^T`` is the covariance of the virtual targets; write ``M = C^-1``). Most
features are nowhere near being added, so this module keeps, for every feature, a *lower bound* on
``S_j`` that stays valid from one step to the next, computes ``Q_j`` exactly for all features (one
matrix-vector product, ``O(n m)``), and scores exactly only the active features and the inactive
ones whose upper bound on ``r_j = Q_j^2 / S_j`` could give an addition gain above the best action
found otherwise. The path is the same as with exhaustive scoring: a skipped feature provably has a
smaller gain than the chosen action (or than ``tol``). Nothing is approximated.

How the bound follows the state from step k to step k+1
--------------------------------------------------------
1. The action changes one prior variance: ``C' = C_k + delta phi_i phi_i^T`` (``delta = 1/alpha_new
   - 1/alpha_old``). Sherman–Morrison: ``M' = M_k - gamma v v^T`` with ``v = M_k phi_i`` and
   ``gamma = delta / (1 + delta S_i)``, so ``S'_j = S_j - gamma a_j^2`` exactly, ``a = Phi^T v``.
2. The refit moves the site precisions: ``C_{k+1} = C' + D``, ``D = diag(1/b_{k+1} - 1/b_k)``.
   With ``D_+`` its positive part and ``lambda = lambda_max(D_+^1/2 M' D_+^1/2)``,
   ``C_{k+1} <= C' + D_+ <= (1 + lambda) C'`` (Loewner order), hence
   ``M_{k+1} >= M' / (1 + lambda)`` and ``S^{k+1}_j >= S'_j / (1 + lambda)`` for every ``j``.
   ``lambda`` comes from the ``|I| x |I|`` block of ``M'`` on the samples whose site precision fell
   (an eigenvalue problem of that size); when that block would be large, the cruder valid bound
   ``lambda <= min(max_i D_i b_k,i, sum_i D_i M'_ii)`` is used (``C' >= B_k^-1``).

Exact values replace the bounds wherever a feature is scored, and everything is rescored when the
bounds stop excluding most features. Small safety margins absorb rounding (documented inline).
"""

from __future__ import annotations

import numpy as np
from scipy.linalg.blas import dgemv as _dgemv
from scipy.linalg.lapack import dsyevd as _dsyevd

from ..numerics._linalg import chol_solve, tri_solve
from ._design import as_design

__all__ = ["CandidateScreen", "add_gain_threshold"]

_min = np.minimum.reduce

#: Largest block of samples whose site precisions fell for which ``lambda`` is computed exactly.
PENCIL_MAX = 200
#: Rescore every feature when more than this fraction of them would need exact scores anyway.
RESCORE_FRACTION = 0.25
#: Relative safety margin on the bounds (rounding in the rank-one updates, the eigenvalue solver and
#: the exact scores themselves is below 1e-12 relative; the margin only costs a few extra rescores).
MARGIN = 1e-9


def add_gain_threshold(gain: float) -> float:
    """The ``r > 1`` with ``0.5 (r - 1 - log r) = gain`` (the addition gain as a function of ``r``).

    The addition gain is increasing in ``r = Q^2 / S`` for ``r > 1``, so a feature with ``r`` below
    this value cannot bring ``gain``. Newton's method from above (the function is convex), a few steps.
    """
    if not gain > 0.0:
        return 1.0
    # Start above the root (double r - 1 until g(r) >= gain); g is convex and increasing for r > 1,
    # so Newton's method from above decreases monotonically to the root without overshooting.
    r = 1.0 + 2.0 * np.sqrt(gain)
    while 0.5 * (r - 1.0 - np.log(r)) < gain:
        r = 1.0 + 2.0 * (r - 1.0)
    for _ in range(60):
        g = 0.5 * (r - 1.0 - np.log(r)) - gain
        r_new = r - g / (0.5 * (1.0 - 1.0 / r))
        if not r_new < r:
            break
        r = r_new
    return float(r)


def _project_m(post, b, X):
    """``M X`` for ``(n, k)`` ``X``, with ``M = C^-1`` of the virtual regression in ``post``."""
    if post.route == "empty":
        return b[:, None] * X
    if post.route == "weight":
        # M = B - B Pt Bw^-1 Pt^T B
        BX = b[:, None] * X
        return BX - (b[:, None] * post.Pt) @ chol_solve(post.L, post.Pt.T @ BX)
    # sample route: M = T^1/2 Bs^-1 T^1/2 (post.s = sqrt(b))
    return post.s[:, None] * chol_solve(post.L, post.s[:, None] * X)


def _m_block(post, b, idx):
    """``M[idx][:, idx]``: the block of ``M = C^-1`` on the samples ``idx``."""
    if post.route == "empty":
        return np.diag(b[idx])
    if post.route == "weight":
        E = tri_solve(post.L, post.Pt[idx].T * b[idx])  # (d, |I|) = L^-1 Pt_I^T B_I
        return np.diag(b[idx]) - E.T @ E
    E = tri_solve(post.L, np.eye(post.L.shape[0])[:, idx] * post.s[idx])  # (n, |I|)
    return E.T @ E


class CandidateScreen:
    """Exact ``S, Q`` for the candidates that can win a step; safe lower bounds on ``S`` elsewhere.

    ``full_fn(post, b, t, factors)`` scores the whole design exhaustively (``score_candidates``
    with the path's caches); column subsets are scored with ``score_fn`` (``score_candidates``),
    and ``factors_fn`` (``score_factors``) prepares what both need once per state.
    """

    def __init__(self, Phi, full_fn, score_fn, factors_fn):
        self.Phi = Phi
        self.full_fn = full_fn
        self.score_fn = score_fn
        self.factors_fn = factors_fn
        self.m = Phi.shape[1]
        # A column-major copy of a dense design: its columns are contiguous, so the two products
        # per step are plain dgemv calls and gathering candidate columns is cheap.
        self._PhiF = as_design(Phi).column_major()  # None unless dense
        self._Q = None
        self.S_lb = None  # (m,) lower bounds on S for the state last scored, or None
        self._post = None  # state (posterior, b) the bounds refer to
        self._b = None
        self._pending = None  # (v, gamma) of the accepted action since that state
        self.n_full = 0  # full rescoring passes (for the record)
        self.n_exact = 0  # features scored exactly outside full passes

    # ------------------------------------------------------------------ the state moves
    def _advance(self, post, b, t, u):
        """Bring the bounds to the new state; returns exact ``Q = Phi^T u`` for all features."""
        a = None
        if (as_design(self.Phi).lazy and self.S_lb is not None
                and self._pending is not None and self._pending[1] != 0.0):
            # A lazy design: both products of this step in one pass over the chunks.
            Qa = self.Phi.tmatmul(np.column_stack([u, self._pending[0]]))
            Q, a = Qa[:, 0].copy(), Qa[:, 1].copy()
        else:
            Q = self._matvec_t(u)
        if self.S_lb is None or self._pending is None:
            self.S_lb = None
            return Q
        v, gamma = self._pending
        lam = self._site_bound(b, v, gamma)
        if not np.isfinite(lam):
            self.S_lb = None
            return Q
        S = self.S_lb
        if gamma != 0.0:
            # Step 1 (exact, Sherman-Morrison): S' = S - gamma a^2, a = Phi^T v.
            if a is None:
                a = self._matvec_t(v)
            a *= a
            a *= gamma
            # Rounding in a and gamma: an absolute margin of MARGIN times the largest terms.
            eps = MARGIN * (float(np.max(np.abs(S))) + abs(float(np.max(a))) + abs(float(np.min(a))))
            S -= a
            S -= eps
        # Step 2: the site precisions moved: S_new >= S' / (1 + lambda).
        S /= 1.0 + lam
        return Q

    def _cols(self, idx):
        return _cols(self.Phi if self._PhiF is None else self._PhiF, idx)

    def _matvec_t(self, x):
        """``Phi^T x`` for an ``(n,)`` vector."""
        if self._PhiF is not None:
            return _dgemv(1.0, self._PhiF, x, trans=1)
        return as_design(self.Phi).tvec(x)

    def _site_bound(self, b_new, v, gamma):
        """``lambda`` of step 2 (see the module docstring), with a safety margin."""
        b_old = self._b
        if _min(b_new) > 0.0 and _min(b_old) > 0.0:
            D = 1.0 / b_new - 1.0 / b_old  # (n,)
        else:
            with np.errstate(divide="ignore", invalid="ignore"):
                D = 1.0 / b_new - 1.0 / b_old  # inf - inf (a site at 0 before and after) is NaN
        idx = np.flatnonzero(D > 0)  # NaN compares False
        if idx.size == 0:
            return 0.0
        Di = D[idx]
        if not np.all(np.isfinite(Di)):
            return np.inf  # a site precision fell to 0: no multiplicative bound
        # Crude bound from C' >= B_old^-1: lambda <= max_i D_i b_old_i.
        crude = float(np.max(Di * b_old[idx]))
        if idx.size > PENCIL_MAX:
            lam = min(crude, float(np.sum(_m_block_diag(self._post, b_old, idx, v, gamma) * Di)))
        else:
            r = np.sqrt(Di)
            Mb = _m_block(self._post, b_old, idx)
            if gamma != 0.0:
                Mb -= gamma * np.outer(v[idx], v[idx])
            Mb *= r[:, None]
            Mb *= r[None, :]
            w, _, info = _dsyevd(Mb, compute_v=0, lower=1)
            ok = info == 0 and np.isfinite(w[-1])
            lam = min(crude, float(w[-1])) if ok else crude
        # Margin: the eigenvalue (and the block it comes from) are accurate to rounding.
        return max(lam, 0.0) * (1.0 + MARGIN) + MARGIN

    # ------------------------------------------------------------------ one step
    def best(self, post, b, t, alpha, add_ok, rules, tol, penalty=0.0):
        """The best action of this step: ``(j, action, gain, new_alpha, S_j)``.

        ``rules(idx, S, Q)`` -> ``(action, gain, new_alpha)`` applies the rules of
        ``candidate_actions`` (with the path's exclusions) to the features ``idx``. ``add_ok`` marks
        the features that may be added. The result is the exhaustive argmax (ties to the lowest
        index): every feature left out provably has a smaller gain than the one returned, or than
        ``tol`` when nothing beats ``tol``. ``penalty`` (a float or one per feature) is what
        ``rules`` subtracts from an addition's gain (``candidate_actions``), so the bound on raw
        gains is raised by its smallest value over the candidates.
        """
        if post is self._post:
            Q = self._Q  # same state (an addition was undone): the bounds still hold there
            factors = self._factors
        else:
            factors = self.factors_fn(post, b, t)
            Q = self._advance(post, b, t, factors[2])
            self._post, self._b, self._Q, self._factors = post, b, Q, factors
        self._pending = None
        inactive = ~np.isfinite(alpha)
        active = np.flatnonzero(~inactive)
        if self.S_lb is not None:
            # Exact scores for the active features (cheap: d columns).
            S_A, Q_A = self.score_fn(self._cols(active), post, b, t, factors=factors)
            act_A, gain_A, na_A = rules(active, S_A, Q_A)
            self.S_lb[active] = S_A
            jA = int(np.argmax(gain_A)) if active.size else -1
            g_best = float(gain_A[jA]) if active.size else -np.inf
            # Threshold on r = Q^2 / S, shrunk a little for rounding in Q and in the threshold.
            pen = np.asarray(penalty, dtype=np.float64)
            c_min = float(pen.min()) if pen.ndim else float(pen)
            r_thr = add_gain_threshold(max(g_best, tol) + c_min)
            r_thr = 1.0 + (r_thr - 1.0) * (1.0 - 1e-6)
            # r_ub >= r_thr  <=>  Q^2 >= r_thr S_lb (also true where the bound is <= 0).
            maybe = Q * Q
            maybe -= r_thr * self.S_lb
            J = np.flatnonzero((maybe >= 0.0) & add_ok & inactive)
            if J.size <= RESCORE_FRACTION * self.m:
                self.n_exact += J.size
                best = (active[jA], act_A[jA], g_best, na_A[jA], S_A[jA]) if active.size else None
                if J.size:
                    # A lazy design scores J in one pass instead of gathering its columns.
                    cols_J = (self.Phi.select(J) if as_design(self.Phi).lazy
                              else self._cols(J))
                    S_J, Q_J = self.score_fn(cols_J, post, b, t, factors=factors)
                    self.S_lb[J] = S_J
                    # Every feature of J is outside the model and may be added: only the
                    # addition rule applies (``candidate_actions``), evaluated for the best alone.
                    with np.errstate(divide="ignore", invalid="ignore"):
                        r = Q_J * Q_J / S_J
                        gain_J = np.where((Q_J * Q_J - S_J > 0) & np.isfinite(r),
                                          0.5 * (r - 1.0 - np.log(r))
                                          - (pen[J] if pen.ndim else pen), -np.inf)
                    k = int(np.argmax(gain_J))
                    g = float(gain_J[k])
                    if best is None or g > g_best or (g == g_best and J[k] < best[0]):
                        act_k, gain_k, na_k = rules(J[k:k + 1], S_J[k:k + 1], Q_J[k:k + 1])
                        best = (J[k], act_k[0], float(gain_k[0]), na_k[0], S_J[k])
                if best is None:  # no feature at all (cannot happen on a path): nothing to do
                    return 0, 0, -np.inf, np.inf, 0.0
                return int(best[0]), int(best[1]), best[2], float(best[3]), float(best[4])
        # Full rescore: the exhaustive scores, which also reset the bounds.
        S, Q = self.full_fn(post, b, t, factors)
        self.n_full += 1
        self.S_lb = S.copy()
        self._Q = Q
        idx = np.arange(self.m)
        act, gain, na = rules(idx, S, Q)
        j = int(np.argmax(gain))
        return j, int(act[j]), float(gain[j]), float(na[j]), float(S[j])

    def accept(self, j, S_j, delta):
        """Record the accepted action on feature ``j``: prior variance changed by ``delta``."""
        if self.S_lb is None:
            self._pending = None
            return
        den = 1.0 + delta * S_j
        if delta == 0.0 or not den > 0.0:
            # No change of C (or an invalid one, impossible for a valid state: then rescore).
            self._pending = (None, 0.0) if delta == 0.0 else None
            return
        phi = self._cols(np.array([j]))
        v = _project_m(self._post, self._b, phi)[:, 0]
        self._pending = (v, delta / den)


def _m_block_diag(post, b, idx, v, gamma):
    """Diagonal of the block ``M'[idx][:, idx]`` (for the trace bound on large blocks)."""
    if post.route == "empty":
        dM = b[idx]
    elif post.route == "weight":
        E = tri_solve(post.L, post.Pt[idx].T * b[idx])
        dM = b[idx] - np.einsum("ij,ij->j", E, E)
    else:
        n = post.L.shape[0]
        dM = np.empty(idx.size)
        for lo in range(0, idx.size, 512):
            sl = idx[lo:lo + 512]
            E = tri_solve(post.L, np.eye(n)[:, sl] * post.s[sl])
            dM[lo:lo + 512] = np.einsum("ij,ij->j", E, E)
    if gamma != 0.0:
        dM = dM - gamma * v[idx] ** 2
    return np.maximum(dM, 0.0)


def _cols(Phi, idx):
    """Dense ``(n, len(idx))`` columns of the design."""
    return as_design(Phi).columns(idx)
