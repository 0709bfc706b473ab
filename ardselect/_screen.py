"""Screened shared-precision models: the k individually strongest genes, one prior precision for all.

The ARD path chooses genes *jointly*: each addition or deletion is judged given the genes already in
the model. On small, hard data sets this fits noise: the evidence keeps finding sets of a few genes
that separate the training samples, with large weights. The opposite inductive bias is the one of
marker lists: rank the genes one at a time, keep the ``k`` strongest and shrink their weights
together. Neither is right for every data set (README, "Accuracy"), so with ``criterion="cv"`` the
screened models compete with the ARD path's model in an inner cross-validation.

The screened model of size ``k`` is the probit model with the ``k`` genes of largest two-class F
statistic (for standardised genes also the order of their evidence gains on the initial virtual
regression, which ranks the path's starting pool), each with prior
``w_j ~ N(0, 1 / alpha)`` for one fixed ``alpha`` (``screen_alpha``), plus the intercept with its own
weak prior. It is fitted by the same EP as every path step and recorded as a path step with action
``"screen"``, after the ARD steps, so ``at_step``, ``path_`` and the portable model treat it like any
other step.
"""

from __future__ import annotations

import numpy as np

from ._lazy import LazyDesign
from ._sequential import Step

__all__ = ["SCREEN", "screen_order", "screen_steps"]

#: ``Step.action`` of a screened model.
SCREEN = "screen"

#: Prior precision of the intercept in a screened model (sd 10 latent units): weak, but proper.
INTERCEPT_ALPHA = 1e-2


def screen_order(design, signs, allowed, intercept_col):
    """Basis columns ranked by their two-class F statistic, best first (ties keep input order).

    ``design`` is the signed design ``diag(signs) Phi`` (dense or sparse), ``signs`` the ``(n,)``
    labels in {-1, +1}. The score of column ``j`` is the squared correlation of ``Phi_j`` with the
    labels, ``r_j = (sum_i t_i (phi_ij - mean_j))^2 / sum_i (phi_ij - mean_j)^2``, which orders the
    columns as the F statistic of a two-sample test does (for centred columns it is also the order
    of their evidence gains on the path's initial virtual regression, which ranks the path's
    starting pool). The intercept, constant columns and columns that may not enter are left out.
    """
    t = np.asarray(signs, dtype=np.float64)
    n = t.shape[0]
    if isinstance(design, LazyDesign):  # all three in one pass over the chunks
        G, sq = design.scores_pass(np.column_stack([np.ones(n), t]), np.ones(n))
        tD, mean = G[:, 0], G[:, 1] / n
    else:
        tD = np.asarray(design.sum(axis=0)).ravel()  # sum_i t_i phi_ij (t_i^2 = 1)
        mean = np.asarray(design.T @ t).ravel() / n  # (1/n) sum_i phi_ij
        sq = (np.asarray(design.multiply(design).sum(axis=0)).ravel()
              if hasattr(design, "multiply") and not isinstance(design, np.ndarray)
              else np.einsum("ij,ij->j", design, design))
    num = (tD - mean * t.sum()) ** 2
    den = sq - n * mean**2
    ok = allowed.copy()
    if intercept_col >= 0:
        ok[intercept_col] = False
    scale = np.maximum(sq, 1e-300)
    ok &= den > 1e-12 * scale  # constant columns carry no ranking
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(ok, num / np.where(ok, den, 1.0), -np.inf)
    order = np.argsort(-r, kind="stable")
    return order[: int(ok.sum())]


def screen_steps(problem, order, sizes, alpha, intercept_col, first_step,
                 intercept_alpha=INTERCEPT_ALPHA):
    """One recorded :class:`~ardselect._sequential.Step` per size ``k`` in ``sizes``.

    Each model holds ``order[:k]`` (and the intercept, if ``intercept_col >= 0``) with precision
    ``alpha`` (the intercept ``intercept_alpha``); EP is warm-started from the previous,
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
            a[-1] = intercept_alpha
        _, _, _, stats, state = problem.refresh(active, a, state)
        steps.append(Step(first_step + len(steps), SCREEN, int(order[k - 1]), active, a, stats,
                          state))
    return steps
