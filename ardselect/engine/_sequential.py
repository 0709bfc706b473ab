"""Sequential add / delete / re-estimate of ARD precisions (Tipping & Faul 2003; Faul & Tipping 2002).

One engine serves every ARD estimator in ardselect. What they share is a *virtual regression*: at any
moment the likelihood is (or is approximated by) Gaussian terms ``N(t_i; phi_i . w, 1/b_i)`` with per-sample
precisions ``b`` and targets ``t``:

* EP probit classification (Qi et al. 2004, sec. 3.3): ``b = tau`` (site precisions), ``t = nu / tau``;
* Laplace (logistic) classification: ``b = sigma (1 - sigma)`` at the mode, ``t`` the IRLS working targets;
* RVM regression: ``b = beta`` (noise precision), ``t = y``.

For fixed ``(b, t)`` the log marginal likelihood as a function of one ``alpha_j`` separates (Faul &
Tipping), which gives the optimum of each ``alpha_j`` and the exact change of the objective for adding,
deleting or re-estimating feature j. The engine scores every candidate at once (no Python loop over
features), applies the single best action, asks the model to refresh ``(b, t)`` (EP, IRLS or noise
re-estimation, warm-started), records the step, and repeats.

Notation (Tipping & Faul) for candidate column ``phi_j`` of the full design and ``C = B^-1 + sum_A
phi_k phi_k^T / alpha_k``: ``S_j = phi_j^T C^-1 phi_j``, ``Q_j = phi_j^T C^-1 t``; for an active j,
``s_j = alpha_j S_j / (alpha_j - S_j)`` and ``q_j = alpha_j Q_j / (alpha_j - S_j)``, else ``s = S, q = Q``;
``theta_j = q_j^2 - s_j``, and the optimal ``alpha_j = s_j^2 / theta_j`` if ``theta_j > 0``, else infinity.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np

from ..numerics._ep import LatentPosterior
from ..numerics._linalg import tri_solve
from ._design import as_design
from ._screening import CandidateScreen

__all__ = [
    "score_candidates",
    "score_factors",
    "candidate_actions",
    "log_marginal_virtual",
    "SequentialPath",
    "ADD",
    "DELETE",
    "REESTIMATE",
    "NONE",
]

logger = logging.getLogger("ardselect.path")

NONE, ADD, DELETE, REESTIMATE = 0, 1, 2, 3

#: Designs with at least this many features are scored with safe screening (``_screening``): only
#: the candidates that can win a step are scored exactly. Same path, less work.
SCREEN_MIN_FEATURES = 256
ACTION_NAMES = {NONE: "none", ADD: "add", DELETE: "delete", REESTIMATE: "reestimate"}


def _inv(a):
    """``1 / a`` with ``1 / inf = 0`` (a prior variance from a precision)."""
    return 0.0 if not np.isfinite(a) else 1.0 / a


def _col_sq_norms_weighted(Phi, b):
    """``sum_i b_i Phi_ij^2`` for every column j (a lazy design: one pass)."""
    return as_design(Phi).weighted_sq(b)


def score_factors(post: LatentPosterior, b, t):
    """What scoring needs from one state, computed once: ``(route, F, u)``.

    ``u = B (t - f_mean)``, so that ``Q_j = phi_j^T C^-1 t = phi_j^T u`` (design note: ``Q_j = p_j^T B
    (m - P mu)``). Sample route: ``C^-1 = F^T F`` with ``F = L^-1 T^1/2`` (``(n, n)``); other routes
    need nothing more (``F`` is None).
    """
    u = b * (t - post.f_mean)  # (n,)
    if post.route == "sample":
        return "sample", tri_solve(post.L, np.diag(post.s)), u
    return post.route, None, u


def score_candidates(Phi, post: LatentPosterior, b, t, *, sq_cache=None, factors=None, signs=None):
    """``S_j`` and ``Q_j`` for every column of ``Phi`` (``(n, m)``, dense or CSC sparse).

    ``post`` is the posterior of the active weights under the virtual regression (sites ``tau = b``,
    ``nu = b t``). Weight-space route (``d <= n``): ``C^-1 = B - B P Sigma P^T B``; sample-space route
    (``d > n``): ``C^-1 = T^1/2 Bs^-1 T^1/2``. Cost ``O(n d m)`` or ``O(n^2 m)``; never densifies a sparse
    ``Phi`` whole in the weight route. ``factors`` (from :func:`score_factors`) may be passed when
    several column sets are scored at the same state. With ``signs`` (``(n,)``, +-1) the columns
    scored are those of the signed design ``diag(signs) Phi`` while ``Phi`` is unsigned: the signs
    go on the small factors instead (exact, a sign flip rounds nothing), so no signed copy is built.
    """
    nu = b * t
    D = as_design(Phi)
    if post.route == "sample":
        M = (score_factors(post, b, t) if factors is None else factors)[1]  # (n, n) = Bs^-1/2 T^1/2
        zt = M @ t  # (n,)
        if signs is not None:
            M = M * signs[None, :]  # M diag(signs) Phi = M (signed design)
        return D.left_scores(M, zt)
    if sq_cache is None:
        BPhi_sq = None  # computed with the products (a lazy design: in the same pass)
    elif isinstance(sq_cache, np.ndarray) and sq_cache.ndim == 1:
        BPhi_sq = sq_cache  # precomputed sum_i b_i Phi_ij^2
    else:
        BPhi_sq = as_design(sq_cache).vecmat(b)  # sq_cache = Phi * Phi, reused across steps
    if post.route == "empty":
        if BPhi_sq is None:
            BPhi_sq = D.weighted_sq(b)
        return BPhi_sq, D.tvec(nu if signs is None else signs * nu)
    # One pass over Phi for both products: rows 0..d-1 are G = Pt^T B Phi, row d is nu^T Phi.
    R = np.empty((Phi.shape[0], post.Pt.shape[1] + 1))
    np.multiply(b[:, None], post.Pt, out=R[:, :-1])
    R[:, -1] = nu
    if signs is not None:
        R *= signs[:, None]  # (diag(signs) Phi)^T R = Phi^T (diag(signs) R)
    GQ, BPhi_sq = D.scores_products(R, b, BPhi_sq)  # (d + 1, m), (m,)
    G = GQ[:-1]
    W = tri_solve(post.L, G)  # (d, m)
    S = BPhi_sq - np.einsum("ij,ij->j", W, W)
    Q = GQ[-1] - post.mean_t @ G
    return S, Q


def candidate_actions(S, Q, alpha, allowed, alpha_min=0.0, penalty=0.0):
    """Best action for every candidate and the change of the log marginal likelihood it brings.

    Parameters
    ----------
    S, Q : ndarray of shape (m,)
    alpha : ndarray of shape (m,)
        Current precisions; ``inf`` for features outside the model.
    allowed : ndarray of bool, shape (m,)
        Features that may enter the model (excluded ones get action NONE).
    alpha_min : float, default=0
        Lower bound on a precision. With separable classes the probit evidence keeps growing as the
        precisions of separating features go to 0, so without a bound the path would re-estimate them
        for ever with ever smaller gains. A re-estimate that would go below the bound goes to it.
    penalty : float or ndarray of shape (m,), default=0
        Prior log odds against a feature (nats): the objective is the log marginal likelihood minus
        ``penalty`` per feature in the model (per-feature values: e.g. 0 for an intercept). Additions gain ``penalty`` less, deletions ``penalty``
        more, and an active feature is deleted when that beats re-estimating it. With 0 (the
        paper's type-II maximum likelihood) the actions and gains are unchanged.

    Returns
    -------
    action : ndarray of int, shape (m,)
    gain : ndarray of shape (m,)
        Change of the objective (``-inf`` where nothing can be done).
    new_alpha : ndarray of shape (m,)

    Notes
    -----
    With ``s = alpha S / (alpha - S)``, ``q = alpha Q / (alpha - S)`` for an active feature (``s = S``,
    ``q = Q`` otherwise) and ``theta = q^2 - s``, the optimal precision is ``s^2 / theta`` (at least
    ``alpha_min``) when ``theta > 0`` and infinite otherwise. Gains: addition ``0.5 (r - 1 - log r)``
    with ``r = Q^2 / S``; re-estimate ``0.5 (Q^2 delta / (1 + S delta) - log(1 + S delta))`` with
    ``delta = 1 / a_new - 1 / alpha``; deletion ``0.5 (Q^2 / (S - alpha) - log(1 - S / alpha))``.
    One compiled pass over the features (:func:`ardselect.numerics._compiled.candidate_actions`).
    """
    from ..numerics._compiled import candidate_actions as compiled  # numba loads at the first fit

    S = np.ascontiguousarray(S, dtype=np.float64)
    pen = np.ascontiguousarray(np.broadcast_to(np.asarray(penalty, dtype=np.float64), S.shape))
    return compiled(S, np.ascontiguousarray(Q, dtype=np.float64),
                    np.ascontiguousarray(alpha, dtype=np.float64),
                    np.ascontiguousarray(allowed, dtype=np.bool_), float(alpha_min), pen,
                    bool(np.any(pen)))


def log_marginal_virtual(Phi_active, alpha_active, b, t) -> float:
    """``log N(t; 0, B^-1 + Phi A^-1 Phi^T)``: the objective the engine maximises, for tests and records."""
    post = LatentPosterior(np.asarray(Phi_active, float), np.asarray(alpha_active, float), b, b * t)
    log_det_C = post.log_det_B - np.sum(np.log(b))
    quad = float(np.sum(b * t * t) - (b * t) @ post.f_mean)
    n = b.shape[0]
    return -0.5 * (n * np.log(2 * np.pi) + log_det_C + quad)


class _PathProblem:
    """Base of the likelihood adapters the engine drives: the active columns of the design.

    Subclasses set ``design`` (``(n, m)``, dense or CSC) and ``allowed`` and provide
    ``initial_virtual`` and ``refresh`` (see :class:`SequentialPath`).
    """

    def columns(self, active):
        """The dense ``(n, d)`` columns ``active`` of the design."""
        return as_design(self.design).block(active)


@dataclass
class Step:
    """One recorded step of the path."""

    step: int
    action: str
    feature: int  # column of the design, -1 for none
    active: np.ndarray  # (d,) columns in the model after the step
    alpha: np.ndarray  # (d,) their precisions
    stats: dict
    state: object = field(repr=False, default=None)  # whatever the model needs to rebuild this fit


class _PathLoop:
    """The add / delete / re-estimate loop and its guards, shared by the paths.

    :class:`SequentialPath` runs it on one problem, ``_joint.JointPath`` on K problems with
    shared precisions.

    From a started model, each step applies the single best action (:meth:`_best_action`),
    refreshes the likelihood approximation (:meth:`_refresh`) and records the step
    (:meth:`_record`). Because the refresh moves the sites, an addition can lower the path's own
    objective (:meth:`_objective_at`: the log evidence less the genes' penalty); such an addition
    is undone, not recorded, and the gene is not offered again on this path. A deletion can lower
    the objective too (it is kept: the path may go on from there), after which re-adding the gene
    raises it; when a deletion of the same gene lowers the objective a second time, the path is
    cycling between the two: that deletion is undone and the loop ends. This rules out add /
    delete cycles. A gene is not re-estimated twice in a row (its optimum can flip between
    two values as the sites move). The loop ends when no action gains more than ``tol``, after
    ``max_steps`` recorded steps, when the objective has not risen by ``tol`` over the last
    ``patience`` steps, or when ``stop(stats)`` accepts a step's records.

    After the loop, :meth:`prune` continues the path down to smaller models (the pruning tail).

    Subclasses set ``tol``, ``patience``, ``max_steps``, ``stop``, ``n_rejected``, ``fixed``,
    ``penalty`` and ``alpha_min``, and implement the hooks named above, :meth:`_n_recorded`,
    :meth:`_accepted`, :meth:`_nothing_left`, and for the tail :meth:`_active_scores`,
    :meth:`_actions`, :meth:`_last_step` and :meth:`_n_columns`.
    """

    _best = None  # running maximum of the objective before the patience window

    def _n_recorded(self):
        raise NotImplementedError

    def _objective_at(self, k):
        """The objective at recorded step ``k``, or None when the model has no evidence."""
        raise NotImplementedError

    def _best_action(self, alpha, add_ok, last_re):
        """``(j, action, gain, new_alpha, extra)`` of the best action for the current sites."""
        raise NotImplementedError

    def _refresh(self, active, alpha_active):
        """Refit the sites for these precisions: ``(refit, stats, objective or None)``."""
        raise NotImplementedError

    def _accepted(self, j, extra, old_alpha, new_alpha):
        """A step on gene ``j`` was taken (its refit not yet current)."""

    def _nothing_left(self, active):
        """True when ``active`` is too empty a model to go on with."""
        return active.size == 0

    def _record(self, action, j, active, alpha_active, refit):
        """Make ``refit`` the current sites and record the step."""
        raise NotImplementedError

    def _stalled(self):
        """True when the objective has not risen by ``tol`` over the last ``patience`` steps.

        Keeps ``self._best``, the running maximum of the objective over the steps older than the
        window, so each call costs O(patience), not O(path length).
        """
        n = self._n_recorded()
        if self.patience <= 0 or n <= self.patience:
            return False
        older = self._objective_at(n - self.patience - 1)
        if older is None:
            return False
        self._best = older if self._best is None else max(self._best, older)
        recent = max(self._objective_at(i) for i in range(n - self.patience, n))
        return recent <= self._best + self.tol

    def _active_scores(self, active):
        """``S, Q`` of the model's own columns ``active`` for the current sites."""
        raise NotImplementedError

    def _actions(self, S, Q, alpha, allowed, alpha_min, penalty):
        """``(action, gain, new_alpha)`` of every column for these scores (``candidate_actions``)."""
        raise NotImplementedError

    def _last_step(self):
        """The last recorded :class:`Step` (of the first problem)."""
        raise NotImplementedError

    def _n_columns(self):
        """The number of columns of the design."""
        raise NotImplementedError

    def prune(self, sizes=None, max_reestimates=None):
        """Continue a finished path down to smaller models: the *pruning tail*.

        The path proper ends where no action gains more than ``tol``; models smaller than that
        are not on it. The tail goes on from there by backward elimination to each size of
        ``sizes`` below the current one (default: every size down to 1 gene): the genes whose
        deletion costs the objective least are deleted (action ``"prune"``, although the
        objective falls), the sites are refreshed, and the remaining precisions are
        re-estimated until no re-estimate gains more than ``tol`` or ``max_reestimates`` steps
        were taken (default: the number of genes in the model). Going down to a size several
        genes smaller deletes them at once, by their individual deletion costs. Held features
        (``fixed``) are never deleted. Only the model's own columns are scored
        (:meth:`_active_scores`), so a tail step costs ``O(n d^2)``, not a pass over the design.
        With K problems sharing the precisions (``S, Q`` of shape ``(K, d)``), a gene's deletion
        cost is the sum of its problems' costs and the re-estimates are those of the summed
        objective (:meth:`_actions`).
        """
        if not self._n_recorded():
            return self
        alpha = np.full(self._n_columns(), np.inf)
        last = self._last_step()
        alpha[last.active] = last.alpha
        fixed_idx = np.fromiter(self.fixed.keys(), dtype=np.intp, count=len(self.fixed))

        def genes(active):
            return int(active.size - np.isin(active, fixed_idx).sum())

        active = np.flatnonzero(np.isfinite(alpha))
        d0 = genes(active)
        # The intercept-only model (0 genes) exists only when a feature is held in every model.
        low = 0 if fixed_idx.size else 1
        targets = range(d0 - 1, low - 1, -1) if sizes is None else sorted(
            {int(k) for k in sizes if low <= int(k) < d0}, reverse=True)
        for target in targets:
            if genes(active) <= target:
                continue
            S, Q = self._active_scores(active)
            a = alpha[active]
            with np.errstate(divide="ignore", invalid="ignore"):
                g_del = 0.5 * (Q * Q / (S - a) - np.log1p(-S / a))
            if g_del.ndim == 2:  # one row per problem: the summed objective's cost
                g_del = np.sum(g_del, axis=0)
            g_del = np.where(np.isfinite(g_del), g_del, -np.inf)
            g_del[np.isin(active, fixed_idx)] = -np.inf
            drop = active[np.argsort(-g_del, kind="stable")[: genes(active) - target]]
            alpha[drop] = np.inf
            active = np.flatnonzero(np.isfinite(alpha))
            self._record("prune", int(drop[0]) if drop.size == 1 else -1, active,
                         alpha[active], self._refresh(active, alpha[active])[0])
            self._reestimate_tail(active, alpha, fixed_idx, cap=genes(active)
                                  if max_reestimates is None else int(max_reestimates))
        return self

    def _reestimate_tail(self, active, alpha, fixed_idx, *, cap):
        """Re-estimate the precisions of ``active`` for the new sites: at most ``cap`` steps.

        No gene is deleted here (the tail's sizes are its own deletions), and none is
        re-estimated twice in a row.
        """
        last_re = -1
        for _ in range(cap):
            S, Q = self._active_scores(active)
            pen = self.penalty if self.penalty.ndim == 0 else self.penalty[active]
            act, gain, na = self._actions(S, Q, alpha[active], np.zeros(active.size, dtype=bool),
                                          self.alpha_min, pen)
            gain[np.isin(active, fixed_idx)] = -np.inf
            gain[(active == last_re) | (act != REESTIMATE)] = -np.inf
            pos = int(np.argmax(gain))
            if not gain[pos] > self.tol:
                break
            j = int(active[pos])
            alpha[j] = na[pos]
            last_re = j
            self._record(ACTION_NAMES[REESTIMATE], j, active, alpha[active],
                         self._refresh(active, alpha[active])[0])

    def _loop(self, alpha):
        """Run the steps from the recorded start with precisions ``alpha`` (changed in place)."""
        m = alpha.shape[0]
        no_add = np.zeros(m, dtype=bool)
        cut_once = np.zeros(m, dtype=bool)  # genes whose deletion lowered the objective
        last_re = -1
        taken = 0
        budget = self.max_steps + m  # each gene can be rejected at most once
        while taken < self.max_steps and budget > 0:
            budget -= 1
            j, act_j, gain_j, new_alpha_j, extra = self._best_action(alpha, ~no_add, last_re)
            if not gain_j > self.tol:
                self.converged = True
                break
            old_alpha = alpha[j]
            alpha[j] = new_alpha_j
            active = np.flatnonzero(np.isfinite(alpha))
            if self._nothing_left(active):
                # Deleting the last gene: an empty model predicts nothing; stop here.
                alpha[j] = old_alpha
                self.converged = True
                break
            refit, stats, now = self._refresh(active, alpha[active])
            if act_j in (ADD, DELETE):
                prev = self._objective_at(self._n_recorded() - 1)
                fell = prev is not None and now < prev - 1e-9 * (1.0 + abs(prev))
                if fell and act_j == ADD:
                    alpha[j] = old_alpha
                    no_add[j] = True
                    self.n_rejected += 1
                    continue
                if fell and cut_once[j]:
                    # Deleting j lowered the objective before, and j came back by an addition
                    # that raised it: the path would repeat the pair. Undo and stop here.
                    alpha[j] = old_alpha
                    self.converged = True
                    break
                cut_once[j] |= fell
            self._accepted(j, extra, old_alpha, alpha[j])
            last_re = j if act_j == REESTIMATE else -1
            taken += 1
            self._record(ACTION_NAMES[act_j], j, active, alpha[active], refit)
            if self._stalled() or (self.stop is not None and self.stop(stats)):
                self.converged = True
                break
        return self


class SequentialPath(_PathLoop):
    """Drive the add / delete / re-estimate loop for a model.

    The model object provides:

    * ``design``: the full ``(n, m)`` basis matrix the candidates come from (signed for classification);
    * ``allowed``: ``(m,)`` bool, features that may enter;
    * ``initial_virtual()`` -> ``(b, t)`` before any feature is in;
    * ``refresh(active, alpha, previous_state)`` -> ``(b, t, post, stats, state)``: refit the likelihood
      approximation for the new precisions, warm-started from ``previous_state``.

    Each action is chosen for the current ``(b, t)``. Because the refresh moves ``(b, t)``, an addition
    can lower the model's own objective (``stats["log_evidence"]``): such an addition is undone and the
    feature is not offered again on this path; a second deletion of one feature that lowers it ends
    the path (:class:`_PathLoop`); this rules out add / delete cycles. A feature is not
    re-estimated twice in a row. As a last guard, the path stops when the objective has not risen by
    more than ``tol`` over the last ``patience`` steps.

    ``init`` is ``"single"`` (the one feature with the largest gain, as Tipping & Faul start), ``"relevant"``
    (every feature whose ``theta_j > 0`` on the initial virtual regression, each at its own optimal
    alpha: the paper's "small fraction of features"), an int k (the k features of largest gain), or an
    ``(m,)`` float array of starting precisions (``inf`` = out of the model; a warm start, e.g. after
    the basis functions changed; entries of features not ``allowed`` are ignored, and finite ones are
    raised to ``alpha_min``). An array with no usable finite entry falls back to ``"single"``.
    """

    def __init__(self, model, *, init="single", max_steps=1000, tol=1e-4, max_init=None,
                 alpha_min=0.0, patience=20, progress_label=None, screening=None, stop=None,
                 penalty=0.0, fixed=None):
        # Features held in the model at a fixed precision, never acted on: {column: alpha}.
        self.fixed = dict(fixed or {})
        # Prior log odds against a feature (candidate_actions): a float, or one per feature.
        self.penalty = np.asarray(penalty, dtype=np.float64)
        self.screening = screening
        self.stop = stop  # optional: stats -> bool, end the path after a step it accepts
        self.alpha_min = float(alpha_min)
        self.patience = int(patience)
        self.model = model
        self.init = init
        self.max_steps = int(max_steps)
        self.tol = float(tol)
        self.max_init = max_init
        self.progress_label = progress_label
        self.steps: list[Step] = []
        self.converged = False
        self.n_rejected = 0
        self._best = None

    def _log(self, k):
        logger.debug(
            "path step %d/%d", k, self.max_steps,
            extra={"step": k, "max_steps": self.max_steps, "class_label": self.progress_label},
        )

    def _objective(self, step):
        """The path's objective at ``step``: log evidence minus the penalty per feature."""
        ev = step.stats.get("log_evidence")
        return None if ev is None else ev - self._cost(step.active)

    def _n_recorded(self):
        return len(self.steps)

    @staticmethod
    def _actions(S, Q, alpha, allowed, alpha_min, penalty):
        return candidate_actions(S, Q, alpha, allowed, alpha_min, penalty)

    def _objective_at(self, k):
        return self._objective(self.steps[k])

    def _cost(self, active):
        """The penalty of the features ``active``: ``sum(penalty[active])``."""
        if self.penalty.ndim == 0:
            return float(self.penalty) * active.size
        return float(self.penalty[active].sum())

    def run(self):
        model = self.model
        Phi = model.design
        m = Phi.shape[1]
        fixed_idx = np.fromiter(self.fixed.keys(), dtype=np.intp, count=len(self.fixed))
        if fixed_idx.size:
            # The starting pool is scored against the model of the held features alone (EP on
            # them), not the empty one: each gene's gain is then what it adds beside them. Scored
            # against the empty model, a gene whose mean is off in an unbalanced sample would
            # look relevant for what the held intercept already explains.
            fixed_alpha = np.fromiter(self.fixed.values(), dtype=np.float64, count=fixed_idx.size)
            b, t, base, _, _ = model.refresh(fixed_idx, fixed_alpha, None)
        else:
            b, t = model.initial_virtual()
            base = LatentPosterior(np.zeros((Phi.shape[0], 0)), np.zeros(0), b, b * t)
        # (A lazy design computes the norms in score_candidates's own pass over the chunks.)
        sq = None if as_design(Phi).lazy else _col_sq_norms_weighted(Phi, b)
        S, Q = score_candidates(Phi, base, b, t, sq_cache=sq)
        alpha = np.full(m, np.inf)
        action, gain, new_alpha = candidate_actions(S, Q, alpha, model.allowed, self.alpha_min,
                                                    self.penalty)
        ok = (action == ADD) & np.isfinite(gain)
        ok[fixed_idx] = False
        if np.any(self.penalty):
            ok &= gain > 0.0  # worth its prior odds
        warm = None
        if isinstance(self.init, np.ndarray):
            a0 = np.asarray(self.init, dtype=np.float64)
            usable = np.isfinite(a0) & (a0 > 0) & model.allowed
            if usable.any():
                warm = np.where(usable, np.maximum(np.where(usable, a0, 1.0), self.alpha_min), np.inf)
        if warm is not None:
            alpha = warm
        elif not ok.any():
            # Nothing is individually relevant: start from the best feature anyway so the path exists.
            cand = np.setdiff1d(np.flatnonzero(model.allowed), fixed_idx)
            j = cand[np.argmax(Q[cand] ** 2 / S[cand])]
            start = np.array([j])
            alpha[j] = max(S[j] ** 2 / max(Q[j] ** 2 - S[j], 1e-12 * S[j]), self.alpha_min)
        else:
            order = np.argsort(-np.where(ok, gain, -np.inf), kind="stable")
            if isinstance(self.init, np.ndarray) or self.init == "single":
                k = 1
            elif self.init == "relevant":
                k = int(ok.sum())
            else:
                k = int(self.init)
            if self.max_init is not None:
                k = min(k, int(self.max_init))
            start = np.sort(order[: max(1, min(k, int(ok.sum())))])
            alpha[start] = new_alpha[start]
        for j, a in self.fixed.items():
            alpha[j] = a
        active = np.flatnonzero(np.isfinite(alpha))
        b, t, post, stats, state = model.refresh(active, alpha[active], None)
        self.steps.append(Step(0, "init", -1, active, alpha[active].copy(), stats, state))
        self._log(0)
        if self.stop is not None and self.stop(stats):
            self.converged = True
            return self
        # Phi * Phi does not change along the path: square once (sample route does not need it;
        # a lazy design computes the weighted squares in the pass of its products instead).
        cache = {}
        square = not as_design(Phi).lazy

        def full_scores(post, b, t, factors=None):
            if square and post.route != "sample" and "Phi2" not in cache:
                cache["Phi2"] = as_design(Phi).squared()
            return score_candidates(Phi, post, b, t, sq_cache=cache.get("Phi2"), factors=factors)

        self._full_scores = full_scores
        screen = None
        if self.screening or (self.screening is None and m >= SCREEN_MIN_FEATURES):
            screen = CandidateScreen(Phi, full_scores, score_candidates, score_factors)
        self.screen = screen
        self._fixed_idx = fixed_idx
        self._current = (b, t, post, state)
        return self._loop(alpha)

    def _best_action(self, alpha, add_ok, last_re):
        add_ok = self.model.allowed & add_ok
        fixed_idx = self._fixed_idx
        b, t, post, _ = self._current

        def rules(idx, S, Q):
            pen = self.penalty if self.penalty.ndim == 0 else self.penalty[idx]
            act, gain, na = candidate_actions(S, Q, alpha[idx], add_ok[idx], self.alpha_min, pen)
            if last_re >= 0:
                gain[(idx == last_re) & (act == REESTIMATE)] = -np.inf
            if fixed_idx.size:
                gain[np.isin(idx, fixed_idx)] = -np.inf
            return act, gain, na

        if self.screen is not None:
            j, act_j, gain_j, new_alpha_j, S_j = self.screen.best(post, b, t, alpha, add_ok, rules,
                                                                  self.tol, self.penalty)
        else:
            S, Q = self._full_scores(post, b, t)
            action, gain, new_alpha = rules(np.arange(alpha.shape[0]), S, Q)
            j = int(np.argmax(gain))
            act_j, gain_j, new_alpha_j, S_j = int(action[j]), gain[j], new_alpha[j], S[j]
        return j, act_j, gain_j, new_alpha_j, S_j

    def _refresh(self, active, alpha_active):
        refit = self.model.refresh(active, alpha_active, self._current[3])
        ev = refit[3].get("log_evidence")
        return refit, refit[3], None if ev is None else ev - self._cost(active)

    def _accepted(self, j, extra, old_alpha, new_alpha):
        if self.screen is not None:
            self.screen.accept(j, extra, _inv(new_alpha) - _inv(old_alpha))

    def _record(self, action, j, active, alpha_active, refit):
        b, t, post, stats, state = refit
        self._current = (b, t, post, state)
        k = len(self.steps)
        self.steps.append(Step(k, action, j, active, alpha_active.copy(), stats, state))
        self._log(k)

    def _active_scores(self, active):
        b, t, post, _ = self._current
        return score_candidates(self.model.columns(active), post, b, t)

    def _last_step(self):
        return self.steps[-1]

    def _n_columns(self):
        return self.model.design.shape[1]
