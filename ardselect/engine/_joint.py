"""Group ARD across the one-vs-rest problems of a multi-class fit: one precision per gene.

With ``multiclass="ovr"`` each class's probit problem (the class against the rest) has its own ARD
path, and the model's genes are the union of K independent signatures. With
``multiclass="shared"`` the K problems share one prior ``w_kj ~ N(0, 1 / alpha_j)`` per gene: a
gene is in the model for every class or for none, and its precision is judged by all classes
together. Each problem keeps its own weights, EP sites and latent; only the prior is shared.

For fixed sites the objective, the sum of the K problems' log marginal likelihoods, still
separates over the genes (``_sequential``'s virtual regression, once per class). As a function of
one gene's prior variance ``g = 1 / alpha_j`` (``g = 0``: the gene is out) the change is

    l_j(g) = 1/2 sum_k [ q_kj^2 g / (1 + g s_kj) - log(1 + g s_kj) ],

with Tipping & Faul's ``s_kj, q_kj`` of class k. For one class its optimum is the familiar
``g = (q^2 - s) / s^2``; for K classes it has no closed form, so each gene's optimum is found
by a search on a grid of ``g`` (global, the sum of K single-peaked terms can have more than one
peak) refined by safeguarded Newton steps. Everything else is the engine's: the best action of
all genes is applied, each class's EP is refreshed, an addition that lowers the refreshed
objective is undone, and the path stops when no action gains more than ``tol``.
"""

from __future__ import annotations

import logging

import numpy as np

from ._design import as_design
from ._sequential import (
    ADD,
    DELETE,
    NONE,
    REESTIMATE,
    Step,
    _PathLoop,
)

__all__ = ["joint_gain", "joint_optimum", "joint_actions", "JointPath"]

logger = logging.getLogger("ardselect.path")

#: Log-spaced grid (fractions of each gene's search range: six decades, four points each) searched
#: before the Newton steps refine the best point.
_GRID = np.logspace(-6, 0, 25)


def joint_gain(g, s, q):
    """``l(g) = 1/2 sum_k [q_k^2 g / (1 + g s_k) - log(1 + g s_k)]``; ``s, q`` are ``(K, m)``.

    ``g`` broadcasts against ``(m,)`` (or ``(G, 1, m)`` against ``(K, m)`` for a grid).
    """
    d = 1.0 + g * s
    return 0.5 * np.sum(q * q * g / d - np.log(d), axis=-2)


def joint_optimum(s, q, g_max=np.inf, newton_steps=30):
    """Each gene's prior variance ``g`` in ``[0, g_max]`` of largest :func:`joint_gain`.

    Returns ``(g, l(g))`` per gene, both ``(m,)``. ``l(0) = 0``: a gene whose best ``l`` is not
    positive is best left out (``g = 0``). ``s`` must be positive.
    """
    s = np.asarray(s, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    m = s.shape[1]
    g, best = np.zeros(m), np.zeros(m)
    lo, hi = np.zeros(m), np.zeros(m)
    # Class k's own term rises up to g_k = (q_k^2 - s_k) / s_k^2 and falls after it (it only
    # falls if q_k^2 <= s_k). So a gene none of whose classes has q^2 > s gains nothing, and
    # every other gene's optimum lies in [0, max_k g_k]: search a log grid there.
    theta = q * q - s
    idx = np.flatnonzero(np.any(theta > 0, axis=0))
    if idx.size:
        sc, qc = s[:, idx], q[:, idx]
        top = np.minimum(np.max(np.where(theta[:, idx] > 0, theta[:, idx] / sc**2, 0.0), axis=0),
                         g_max)
        grid = top[None, :] * _GRID[:, None]  # (G, m'), the last row at the top
        vals = joint_gain(grid[:, None, :], sc[None], qc[None])  # (G, m')
        i = np.argmax(vals, axis=0)
        cols = np.arange(idx.size)
        g[idx], best[idx] = grid[i, cols], vals[i, cols]
        lo[idx] = np.where(i > 0, grid[np.maximum(i - 1, 0), cols], 0.0)
        hi[idx] = grid[np.minimum(i + 1, grid.shape[0] - 1), cols]
    # Refine only the genes with a positive gain somewhere on the grid (the others stay out),
    # each until its derivative vanishes to rounding.
    live = np.flatnonzero(best > 0.0)
    for _ in range(newton_steps):
        if live.size == 0:
            break
        sl, ql, gl, bl = s[:, live], q[:, live], g[live], best[live]
        d = 1.0 + gl * sl
        d1 = 0.5 * np.sum(ql * ql / d**2 - sl / d, axis=0)
        d2 = 0.5 * np.sum(sl * sl / d**2 - 2.0 * ql * ql * sl / d**3, axis=0)
        done = np.abs(d1) * gl <= 1e-12 * (1.0 + bl)
        lo_l = np.where(d1 > 0, gl, lo[live])  # the optimum lies on the rising side of g
        hi_l = np.where(d1 > 0, hi[live], gl)
        # Newton where the gain is locally concave and the step stays inside the bracket,
        # else the bracket's midpoint.
        newton = np.where(d2 < 0, gl - d1 / np.where(d2 < 0, d2, -1.0), np.nan)
        cand = np.where(np.isfinite(newton) & (newton > lo_l) & (newton < hi_l), newton,
                        0.5 * (lo_l + hi_l))
        val = joint_gain(cand, sl, ql)
        better = (val >= bl) & ~done
        done |= np.abs(cand - gl) <= 1e-10 * gl  # a step below rounding: converged
        # A worse point bounds the bracket instead.
        hi_l = np.where(~better & (cand > gl), cand, hi_l)
        lo_l = np.where(~better & (cand < gl), cand, lo_l)
        g[live] = np.where(better, cand, gl)
        best[live] = np.where(better, val, bl)
        lo[live], hi[live] = lo_l, hi_l
        live = live[~done & (hi_l - lo_l > 1e-14 * hi_l)]
    out = best <= 0.0
    return np.where(out, 0.0, g), np.where(out, 0.0, best)


def joint_actions(S, Q, alpha, allowed, alpha_min=0.0, penalty=0.0):
    """Best action of every gene for the summed objective of K problems sharing its precision.

    ``S, Q`` are ``(K, m)`` (one row per problem, as :func:`~ardselect.engine._sequential.score_candidates`
    gives them), ``alpha`` the shared ``(m,)`` precisions (``inf`` outside the model). The rest is as
    :func:`~ardselect.engine._sequential.candidate_actions`, which this equals for ``K = 1``: the gain of an
    addition is ``max_g l(g)`` less the ``penalty``, of a re-estimate ``max_g l(g) - l(1 / alpha)``,
    of a deletion ``penalty - l(1 / alpha)``; an active gene is deleted when that gains more, or
    when its best ``g`` is 0. Returns ``(action, gain, new_alpha)``, each ``(m,)``.
    """
    S = np.atleast_2d(np.asarray(S, dtype=np.float64))
    Q = np.atleast_2d(np.asarray(Q, dtype=np.float64))
    alpha = np.asarray(alpha, dtype=np.float64)
    m = S.shape[1]
    pen = np.broadcast_to(np.asarray(penalty, dtype=np.float64), (m,))
    act = np.isfinite(alpha)
    a = np.where(act, alpha, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        den = np.where(act, a - S, 1.0)
        s = np.where(act, a * S / den, S)
        q = np.where(act, a * Q / den, Q)
    s = np.maximum(s, 1e-300)  # an active gene's S is below its alpha; guard rounding
    g_max = 1.0 / alpha_min if alpha_min > 0 else np.inf
    g, best = joint_optimum(s, q, g_max)
    now = np.where(act, joint_gain(np.where(act, 1.0 / a, 0.0), s, q), 0.0)
    action = np.full(m, NONE)
    gain = np.full(m, -np.inf)
    new_alpha = np.full(m, np.inf)
    add = ~act & allowed & (g > 0)
    action[add], gain[add], new_alpha[add] = ADD, best[add] - pen[add], 1.0 / g[add]
    re_gain = np.where(g > 0, best - now, -np.inf)
    del_gain = pen - now
    re = act & (re_gain >= del_gain)
    de = act & ~re
    action[re], gain[re], new_alpha[re] = REESTIMATE, re_gain[re], 1.0 / g[re]
    action[de], gain[de] = DELETE, del_gain[de]
    return action, gain, new_alpha


class JointPath(_PathLoop):
    """The add / delete / re-estimate path of K probit problems with shared precisions.

    ``problems`` are the classes' likelihood adapters (``_problem.EPProbitProblem``: its
    ``refresh``, and ``scores`` of its signed design; the designs differ only in the row signs).
    It starts as :class:`~ardselect.engine._sequential.SequentialPath` does with ``init="relevant"``
    (the individually relevant genes, at most ``max_init``) and then runs the same loop
    (``_sequential._PathLoop``: undo an addition that lowers the refreshed objective and do not
    offer that gene again; no re-estimate of the same gene twice in a row; stop after
    ``patience`` steps without a rise of ``tol``, at ``max_steps``, or when ``stop(stats)`` says
    so), with every class refreshed at each step. The objective is the sum of the classes' EP log
    evidences less ``penalty`` per gene in the model; the path stops rather than delete its last
    gene.

    After :meth:`run`, ``steps[k]`` is the list of :class:`~ardselect.engine._sequential.Step` of class
    ``k``: the same genes and precisions in every class, the class's own EP sites in ``state``, and
    in ``stats`` the joint records: ``log_evidence`` summed over the classes, ``loo_error`` and
    ``loo_prob_error`` averaged over them (so a path criterion picks the same step in every class),
    ``ep_sweeps`` the largest.
    """

    def __init__(self, problems, allowed, *, alpha_min=0.0, penalty=0.0, fixed=None,
                 max_init=None, max_steps=1000, tol=1e-5, patience=20, stop=None,
                 progress_label=None):
        self.problems = list(problems)
        self.allowed = np.asarray(allowed, dtype=bool)
        self.alpha_min = float(alpha_min)
        m = self.allowed.size
        self.penalty = np.broadcast_to(np.asarray(penalty, dtype=np.float64), (m,)).copy()
        self.fixed = dict(fixed or {})
        self.max_init = max_init
        self.max_steps = int(max_steps)
        self.tol = float(tol)
        self.patience = int(patience)
        self.stop = stop
        self.progress_label = progress_label
        self.steps = [[] for _ in self.problems]
        self.converged = False
        self.n_rejected = 0
        self._best = None  # running maximum of the objective before the patience window

    def _refresh_all(self, active, alpha, states):
        out = [p.refresh(active, alpha, st) for p, st in zip(self.problems, states, strict=True)]
        per = [o[3] for o in out]
        stats = {"log_evidence": float(sum(s["log_evidence"] for s in per)),
                 "loo_error": float(np.mean([s["loo_error"] for s in per])),
                 "loo_prob_error": float(np.mean([s["loo_prob_error"] for s in per])),
                 "ep_sweeps": int(max(s["ep_sweeps"] for s in per))}
        return out, stats

    def _scores(self, out):
        SQ = [p.scores(post, b, t, sq_cache=self._Phi2)
              for p, (b, t, post, _, _) in zip(self.problems, out, strict=True)]
        return np.array([s for s, _ in SQ]), np.array([q for _, q in SQ])

    def _n_recorded(self):
        return len(self.steps[0])

    def _objective_at(self, k):
        """The objective at recorded step ``k``: summed log evidence less the genes' penalty."""
        s = self.steps[0][k]
        return s.stats["log_evidence"] - float(self.penalty[s.active].sum())

    def _best_action(self, alpha, add_ok, last_re):
        S, Q = self._scores(self._out)
        action, gain, new_alpha = joint_actions(S, Q, alpha, self.allowed & add_ok,
                                                self.alpha_min, self.penalty)
        gain[self._fixed_idx] = -np.inf
        if last_re >= 0 and action[last_re] == REESTIMATE:
            gain[last_re] = -np.inf
        j = int(np.argmax(gain))
        return j, int(action[j]), gain[j], new_alpha[j], None

    def _refresh(self, active, alpha_active):
        states = [s[-1].state for s in self.steps]
        out, stats = self._refresh_all(active, alpha_active, states)
        return (out, stats), stats, stats["log_evidence"] - float(self.penalty[active].sum())

    def _nothing_left(self, active):
        return active.size == self._fixed_idx.size

    def _record(self, action, feature, active, alpha, refit):
        out, stats = refit
        self._out = out
        k = len(self.steps[0])
        for steps, o in zip(self.steps, out, strict=True):
            steps.append(Step(k, action, feature, active, alpha.copy(), dict(stats), o[4]))
        logger.debug("path step %d/%d", k, self.max_steps,
                     extra={"step": k, "max_steps": self.max_steps,
                            "class_label": self.progress_label})

    def _active_scores(self, active):
        """``S, Q`` of the model's own columns in every class: two ``(K, d)`` arrays."""
        from ._sequential import score_candidates

        SQ = [score_candidates(p.columns(active), post, b, t)
              for p, (b, t, post, _, _) in zip(self.problems, self._out, strict=True)]
        return np.array([s for s, _ in SQ]), np.array([q for _, q in SQ])

    def _last_step(self):
        return self.steps[0][-1]

    def _n_columns(self):
        return self.allowed.size

    @staticmethod
    def _actions(S, Q, alpha, allowed, alpha_min, penalty):
        return joint_actions(S, Q, alpha, allowed, alpha_min, penalty)

    def run(self):
        # The designs differ only in row signs: their squares are one matrix.
        design = self.problems[0].design
        # (A lazy design computes the weighted squares in its own pass over the chunks.)
        self._Phi2 = as_design(design).squared()  # None for a lazy design
        m = self.allowed.size
        fixed_idx = np.fromiter(self.fixed.keys(), dtype=np.intp, count=len(self.fixed))
        fixed_alpha = np.fromiter(self.fixed.values(), dtype=np.float64, count=len(self.fixed))
        none = [None] * len(self.problems)
        # Score the genes beside the held features (as SequentialPath does), or the empty model.
        out, _ = self._refresh_all(fixed_idx, fixed_alpha, none)
        S, Q = self._scores(out)
        alpha = np.full(m, np.inf)
        action, gain, new_alpha = joint_actions(S, Q, alpha, self.allowed, self.alpha_min,
                                                self.penalty)
        ok = (action == ADD) & (gain > 0.0)
        ok[fixed_idx] = False
        if ok.any():
            order = np.argsort(-np.where(ok, gain, -np.inf), kind="stable")
            k = int(ok.sum()) if self.max_init is None else min(int(ok.sum()), int(self.max_init))
            start = np.sort(order[:max(1, k)])
            alpha[start] = np.maximum(new_alpha[start], self.alpha_min)
        else:
            # Nothing is relevant at its prior odds: start from the best gene so the path exists.
            cand = np.flatnonzero(self.allowed)
            cand = cand[~np.isin(cand, fixed_idx)]
            j = cand[np.argmax(np.sum(Q[:, cand] ** 2 / S[:, cand], axis=0))]
            alpha[j] = np.inf if not np.isfinite(new_alpha[j]) else new_alpha[j]
            if not np.isfinite(alpha[j]):
                alpha[j] = 1.0 / max(float(np.mean(S[:, j])), 1e-12)
            alpha[j] = max(alpha[j], self.alpha_min)
        alpha[fixed_idx] = fixed_alpha
        active = np.flatnonzero(np.isfinite(alpha))
        out, stats = self._refresh_all(active, alpha[active], none)
        self._record("init", -1, active, alpha[active], (out, stats))
        if self.stop is not None and self.stop(stats):
            self.converged = True
            return self
        self._fixed_idx = fixed_idx
        return self._loop(alpha)
