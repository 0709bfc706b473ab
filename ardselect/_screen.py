"""Screened shared-precision models: the k individually strongest genes, one prior precision for all.

The ARD path chooses genes *jointly*: each addition or deletion is judged given the genes already in
the model. On small, hard data sets this fits noise: the evidence keeps finding sets of a few genes
that separate the training samples, with large weights. The opposite inductive bias is the one of
marker lists: rank the genes one at a time, keep the ``k`` strongest and shrink their weights
together. Neither is right for every data set (README, "Accuracy"), so with ``criterion="cv"`` the
screened models compete with the ARD path's model in an inner cross-validation.

The screened model of size ``k`` is the probit model with the ``k`` genes of largest individual
evidence gain on the initial virtual regression (the ranking that orders the path's starting pool;
for standardised genes it is the order of the two-class F statistic), each with prior
``w_j ~ N(0, 1 / alpha)`` for one fixed ``alpha`` (``screen_alpha``), plus the intercept with its own
weak prior. It is fitted by the same EP as every path step and recorded as a path step with action
``"screen"``, after the ARD steps, so ``at_step``, ``path_`` and the portable model treat it like any
other step.
"""

from __future__ import annotations

import numpy as np

from ._sequential import Step, score_candidates

__all__ = ["SCREEN", "screen_order", "screen_steps"]

#: ``Step.action`` of a screened model.
SCREEN = "screen"

#: Prior precision of the intercept in a screened model (sd 10 latent units): weak, but proper.
INTERCEPT_ALPHA = 1e-2


def screen_order(problem, allowed, intercept_col):
    """Basis columns ranked by their evidence gain alone, best first (stable: ties keep input order).

    The gain of adding column ``j`` to the empty model is ``0.5 (r - 1 - log r)`` with
    ``r = Q_j^2 / S_j`` on the initial virtual regression; it increases with ``r`` for ``r > 1``,
    and columns with ``r <= 1`` are ranked after, by ``r`` as well. The intercept and columns that
    may not enter are left out.
    """
    from ._ep import LatentPosterior

    design = problem.design
    b, t = problem.initial_virtual()
    empty = LatentPosterior(np.zeros((design.shape[0], 0)), np.zeros(0), b, b * t)
    S, Q = score_candidates(design, empty, b, t)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(S > 0, Q * Q / np.where(S > 0, S, 1.0), -np.inf)
    ok = allowed.copy()
    if intercept_col >= 0:
        ok[intercept_col] = False
    r = np.where(ok, r, -np.inf)
    order = np.argsort(-r, kind="stable")
    return order[: int(ok.sum())]


def screen_steps(problem, order, sizes, alpha, intercept_col, first_step):
    """One recorded :class:`~ardselect._sequential.Step` per size ``k`` in ``sizes``.

    Each model holds ``order[:k]`` (and the intercept, if ``intercept_col >= 0``) with precision
    ``alpha`` (the intercept :data:`INTERCEPT_ALPHA`); EP is warm-started from the previous,
    nested model's sites. A size larger than ``len(order)`` gives the model of all ``len(order)``
    genes (so the steps stay aligned with ``sizes``, as the folds of the inner cross-validation
    need). Steps are numbered from ``first_step``.
    """
    steps = []
    state = None
    for k in sizes:
        k = max(1, min(int(k), order.size))
        genes = np.sort(order[:k])
        active = np.append(genes, intercept_col) if intercept_col >= 0 else genes
        a = np.full(active.size, float(alpha))
        if intercept_col >= 0:
            a[-1] = INTERCEPT_ALPHA
        _, _, _, stats, state = problem.refresh(active, a, state)
        steps.append(Step(first_step + len(steps), SCREEN, int(order[k - 1]), active, a, stats,
                          state))
    return steps
