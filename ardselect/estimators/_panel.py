"""The panel choice: one model size per class whose genes together fit a budget of distinct genes.

``ARDClassifier(panel=N)`` chooses on the inner cross-validation's frontier
(:mod:`ardselect.estimators._cv`): the sizes of the one-vs-rest problems whose summed held-out
log-loss is lowest while the union of their genes holds at most ``N`` genes.
"""

from __future__ import annotations

from ..exceptions import ParameterError

__all__ = ["check_panel", "choose_panel"]


def choose_panel(losses, genes, panel, upto=None):
    """One size per problem whose genes together number at most ``panel``: the panel choice.

    ``losses[i][j]`` is problem ``i``'s held-out log-loss at its ``j``-th size (smallest size
    first) and ``genes[i][j]`` the set of genes of that size's model on the full path; ``upto[i]``
    (default: the last) is the largest index problem ``i`` may take, the size it would choose
    without the panel. The choice minimises the summed log-loss of the problems subject to the
    union of their genes holding at most ``panel`` genes:

    * if the unconstrained choices (``upto``) fit, they are the answer;
    * otherwise two greedy searches run. *Growing*: every problem starts at its smallest size,
      and one problem at a time moves to another of its sizes (up to ``upto``) that lowers its
      log-loss and keeps the union within the budget, always the move of the largest drop of
      log-loss per gene it adds to the union (moves that add none first), until none is left.
      *Shrinking*: from the unconstrained choices, one problem at a time moves to a smaller
      size, always the move of the smallest rise of log-loss per gene it frees, until the union
      fits. Each result is then improved by moving two problems at once (one may shrink to free
      genes for the other) while that lowers the sum, and the better of the two is kept.

    This is a heuristic, not an exhaustive search: on random small frontiers
    (``tests/test_panel.py``) it finds the exhaustive optimum in most cases and comes close in
    the others. Returns the list of chosen indices; raises ValueError when the smallest sizes
    already need more than ``panel`` genes.

    Examples
    --------
    >>> losses = [[0.5, 0.2, 0.1], [0.6, 0.3, 0.25]]
    >>> genes = [[set(), {"a"}, {"a", "b"}], [set(), {"c"}, {"c", "d"}]]
    >>> choose_panel(losses, genes, 2)
    [1, 1]
    >>> choose_panel(losses, genes, 3)
    [2, 1]
    """
    n = len(losses)
    upto = [len(g) - 1 for g in genes] if upto is None else [int(u) for u in upto]
    gene_sets = [[frozenset(s) for s in g] for g in genes]

    def union(pick):
        return frozenset().union(*(gene_sets[i][j] for i, j in enumerate(pick)))

    if len(union(upto)) <= panel:
        return list(upto)
    pick = [0] * n
    if len(union(pick)) > panel:
        msg = (f"panel={panel} is smaller than the smallest models of the frontier, which need "
               f"{len(union(pick))} distinct genes together; give a larger panel")
        raise ValueError(msg)
    grown = _exchange(losses, gene_sets, panel, upto, _grow(losses, gene_sets, panel, upto, pick))
    shrunk = _exchange(losses, gene_sets, panel, upto, _shrink(losses, gene_sets, panel, upto))
    return min((grown, shrunk), key=lambda p: sum(losses[i][j] for i, j in enumerate(p)))


def _shrink(losses, gene_sets, panel, upto):
    """From the unconstrained choices, shrink one problem at a time until the union fits.

    Always the move of the smallest rise of log-loss per gene it frees from the union.
    """
    n = len(losses)
    pick = list(upto)

    def union(p):
        return frozenset().union(*(gene_sets[i][j] for i, j in enumerate(p)))

    while len(union(pick)) > panel:
        current = len(union(pick))
        best = None  # (key, i, j)
        for i in range(n):
            for j in range(pick[i]):
                trial = pick[:i] + [j] + pick[i + 1:]
                freed = current - len(union(trial))
                rise = losses[i][j] - losses[i][pick[i]]
                # A gene another problem also holds is freed only when both shrink: such moves
                # (by the rise per gene the problem drops) come after those that free genes.
                own = len(gene_sets[i][pick[i]]) - len(gene_sets[i][j])
                key = (0, rise / freed) if freed > 0 else (1, rise / max(own, 1))
                if best is None or key < best[0]:
                    best = (key, i, j)
        pick[best[1]] = best[2]  # every move lowers a size, and the smallest sizes fit
    return pick


def _grow(losses, gene_sets, panel, upto, pick):
    """From ``pick``, grow one problem at a time (the best log-loss drop per added gene)."""
    n = len(losses)
    pick = list(pick)

    def union(p):
        return frozenset().union(*(gene_sets[i][j] for i, j in enumerate(p)))

    while True:
        current = union(pick)
        best = None  # (key, i, j)
        for i in range(n):
            others = frozenset().union(*(gene_sets[o][pick[o]] for o in range(n) if o != i))
            for j in range(upto[i] + 1):
                drop = losses[i][pick[i]] - losses[i][j]
                if j == pick[i] or not drop > 1e-12:
                    continue
                size = len(others | gene_sets[i][j])
                if size > panel:
                    continue
                added = size - len(current)
                key = (1, drop) if added <= 0 else (0, drop / added)
                if best is None or key > best[0]:
                    best = (key, i, j)
        if best is None:
            return pick
        pick[best[1]] = best[2]


def _exchange(losses, gene_sets, panel, upto, pick):
    """Improve a panel choice by moving two problems at once (one may shrink to free genes).

    Each round takes the pair of moves that lowers the summed log-loss most while keeping the
    union within ``panel``, until none does.
    """
    n = len(losses)
    pick = list(pick)
    while True:
        total = sum(losses[i][j] for i, j in enumerate(pick))
        best = None  # (gain, i, a, k, b)
        for i in range(n):
            for k in range(i + 1, n):
                rest = frozenset().union(*(gene_sets[o][pick[o]] for o in range(n)
                                           if o not in (i, k)))
                for a in range(upto[i] + 1):
                    with_a = rest | gene_sets[i][a]
                    if len(with_a) > panel:
                        continue
                    for b in range(upto[k] + 1):
                        gain = (losses[i][pick[i]] + losses[k][pick[k]]
                                - losses[i][a] - losses[k][b])
                        if gain > 1e-12 * (1.0 + total) and (best is None or gain > best[0]) \
                                and len(with_a | gene_sets[k][b]) <= panel:
                            best = (gain, i, a, k, b)
        if best is None:
            return pick
        _, i, a, k, b = best
        pick[i], pick[k] = a, b


def check_panel(panel, criterion):
    """Refuse a panel budget with the paper's criteria (its choice trades held-out log-loss)."""
    if panel is not None and criterion != "cv":
        msg = (f"panel is chosen on the inner cross-validation's frontier (criterion='cv'); got "
               f"criterion={criterion!r}. The paper's criteria take a budget per class: "
               "max_genes")
        raise ParameterError(msg)
