"""How sure an ARD signature is of each gene: spike-and-slab EP on the neighbourhood of the selection.

The ARD path chooses one model; its per-gene numbers (weight sd, :mod:`ardselect.estimators._certainty`) are
conditional on the other genes as chosen, and for interchangeable genes they say little. The
spike-and-slab model (:mod:`ardselect.estimators._spikeslab_ep`) answers "how probable is it that this gene
belongs in the model?" with the other genes summed over. Running it on every gene costs a sweep
over the whole matrix per EP iteration; the genes that compete with a selected gene are the ones
correlated with it. So, for each binary problem:

1. the *neighbourhood*: the selected genes, and for each the ``max_neighbours`` unselected genes
   most correlated with it, if their absolute correlation is at least ``min_correlation``;
2. spike-and-slab EP on the neighbourhood's standardised genes, with the prior inclusion
   probability of the *whole* gene set (``p0 = E / p`` for ``p`` usable genes, ``E`` averaged over
   the hyperprior ``PRIOR_GENES`` as in :class:`ardselect.SpikeSlabClassifier`, its nodes scaled
   with the signature's size beyond 20 genes: :func:`signature_prior`): the posterior is that of
   the full model with every gene outside the neighbourhood held out of it;
3. credible sets: each selected gene (by decreasing PIP) joins the first earlier set whose every
   gene it is correlated with (at least ``min_correlation``), or else seeds a set, which takes the
   neighbourhood's other free genes correlated with every member, in decreasing PIP *given that
   the seed is out of the model* (only genes whose posterior odds of inclusion, so given, are at
   least ``CREDIBLE_MIN_BAYES_FACTOR`` times their prior odds), until the probability that the set
   holds at least one gene of the model reaches ``coverage``. (EP's own PIPs of two near copies
   can put nearly all the probability on one of them; with the seed out, the other shows.)

The set's probability is not the sum of its PIPs (near copies of a gene can both be in the
model, and EP's PIPs of such genes add up to more than the probability that one is). It is one
minus the probability that none is in, a ratio of EP evidences::

    P(no gene of S in | t) = sum_g w_g (1 - p0_g)^|S| Z_g(genes of S removed) / Z_g

over the hyperprior's nodes ``g`` (posterior weights ``w_g``, EP evidences ``Z_g``). A single gene's
set probability is its PIP.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.special import logsumexp

from ..engine._design import as_design
from ..engine._sequential import _col_sq_norms_weighted, score_candidates
from ._spikeslab_ep import run_spikeslab_ep

__all__ = ["NeighbourhoodCertainty", "certainty_problem", "fit_certainty", "neighbourhood",
           "neighbourhood_certainty", "solve_certainty"]

#: Hyperprior on the expected number of genes in the model (that of ``SpikeSlabClassifier``), for
#: signatures of at most its largest node's size; see :func:`signature_prior`.
PRIOR_GENES = (1.0, 2.0, 5.0, 10.0, 20.0)
#: Prior variance of an included gene's weight, per sd of the gene (latent units).
SLAB_VARIANCE = 1.0
#: As in :mod:`ardselect.estimators._spikeslab` (which imports the classifiers, so it is not imported here):
#: the largest prior inclusion probability of a node, the expected genes of the prior EP starts
#: from cold, and the Bayes factor a gene needs to join a credible set.
MAX_NODE_P0 = 0.5
CONTINUATION_GENES = 20.0
#: Hyperprior nodes of smaller posterior weight are left out of a set's probability.
NODE_MIN_WEIGHT = 1e-2
#: EP tolerance of the fits without a set's genes (warm-started from the full fit): on the bundled
#: leukaemia data the set probabilities at 1e-2 and 1e-3 differ by less than 0.003.
WITHOUT_TOL = 1e-2
CREDIBLE_MIN_BAYES_FACTOR = 10.0


@dataclass
class NeighbourhoodCertainty:
    """The answer for one binary problem; gene indices are positions in ``genes``."""

    genes: np.ndarray  # (m,) basis columns of the neighbourhood
    pip: np.ndarray  # (m,) posterior inclusion probabilities
    sets: list = field(default_factory=list)  # (members best first, probability, purity)
    prior_inclusion: float = np.nan  # posterior mean of p0
    converged: bool = True


def _dense_columns(basis, idx):
    """The columns ``idx`` of a dense, sparse or lazy design as a dense ``(n, k)`` array."""
    return as_design(basis).columns(np.asarray(idx, dtype=np.intp))


def _standardise(C, center):
    """Columns centred (if ``center``) and scaled to unit variance (divisor n)."""
    C = C - C.mean(axis=0) if center else C
    rms = np.sqrt(np.mean(C * C, axis=0))
    return C / np.where(rms > 0, rms, 1.0)


def neighbourhood(basis, selected, candidates, *, min_correlation, max_neighbours):
    """The selected columns and, for each, its most correlated candidate columns.

    Parameters
    ----------
    basis : {ndarray, sparse matrix, lazy design} of shape (n, m)
    selected : ndarray of int of shape (k,)
    candidates : ndarray of bool of shape (m,)
        Columns that may join (usable genes outside the model).
    min_correlation : float
        Smallest absolute correlation with a selected gene.
    max_neighbours : int
        Most neighbours per selected gene (the most correlated first; ties in column order).

    Returns
    -------
    genes : ndarray of int
        The neighbourhood, in column order.
    """
    selected = np.asarray(selected, dtype=np.intp)
    n = basis.shape[0]
    Zs = _standardise(_dense_columns(basis, selected), center=True)  # (n, k)
    ones = np.ones(n)
    cross = np.asarray(basis.T @ np.column_stack([Zs, ones]))  # (m, k + 1)
    mean = cross[:, -1] / n
    var = np.maximum(_col_sq_norms_weighted(basis, ones) / n - mean * mean, 0.0)
    sd = np.sqrt(var)
    with np.errstate(divide="ignore", invalid="ignore"):
        R = np.where(sd[:, None] > 0, cross[:, :-1] / (n * sd[:, None]), 0.0)  # (m, k)
    R = np.abs(R)
    keep = np.zeros(basis.shape[1], dtype=bool)
    keep[selected] = True
    for j in range(selected.size):
        # Only the candidates correlated enough can be kept: sorting them alone (stably) gives
        # them in the order of the whole column's sort.
        near = np.flatnonzero(candidates & (R[:, j] >= min_correlation))
        keep[near[np.argsort(-R[near, j], kind="stable")[:max_neighbours]]] = True
    return np.flatnonzero(keep)


class _Start:
    """Warm-start sites for ``run_spikeslab_ep`` (the fields it reads)."""

    def __init__(self, tau, nu, lam, eta):
        self.tau, self.nu, self.lam, self.eta = tau, nu, lam, eta


def _fit_nodes(P, icpt, nodes, *, intercept_alpha, tol, max_iter):
    """EP at every node (sparsest last), reached by continuation from a denser prior."""

    def ep(p0, P_, start, tol=tol):
        return run_spikeslab_ep(P_, prior_inclusion=p0, slab_variance=SLAB_VARIANCE,
                                intercept=icpt, intercept_alpha=intercept_alpha, tol=tol,
                                max_iter=max_iter, start=start)

    m = P.shape[1]
    # EP from cold at a very sparse prior can fail to converge, from a denser prior's fit it does
    # not: if the densest node fails from cold, it is reached as in SpikeSlabClassifier, by fits
    # at priors four times sparser each time, each warm-starting the next.
    first = ep(nodes[0], P, None)
    start = first if first.converged else None
    p0 = min(MAX_NODE_P0, CONTINUATION_GENES / max(m, 1))
    while start is None and p0 > nodes[0] * (1 + 1e-12):
        st = ep(p0, P, start)
        start = st if st.converged else start
        p0 /= 4.0
    fits = []
    for p0 in nodes:
        # (a converged cold fit at the densest node is that node's fit)
        st = first if not fits and first.converged else ep(p0, P, start)
        fits.append(st)
        start = st if st.converged else start
    return fits, ep


def signature_prior(n_selected):
    """The hyperprior's expected numbers of genes for a signature of ``n_selected`` genes.

    ``PRIOR_GENES`` up to its largest node (20 genes); a longer signature's nodes are ``PRIOR_GENES``
    scaled by ``n_selected / 20``, so they span ``k / 20`` to ``k`` for ``k`` selected genes. A prior
    that expects at most 20 genes in a model that holds 90 gives each of them a PIP of a few
    percent: the evidence cannot move the prior that far.
    """
    scale = max(1.0, float(n_selected) / PRIOR_GENES[-1])
    return tuple(g * scale for g in PRIOR_GENES)


def _node_prior(prior_genes, n_genes, outside_log_bf):
    """The hyperprior's nodes (prior inclusion probabilities, largest first) and their log weights.

    Each node's weight is multiplied by the genes outside the neighbourhood's prior-weighted
    chance ``prod_j (1 - p0 + p0 BF_j)`` when their log Bayes factors are given.
    """
    genes = np.asarray(prior_genes, dtype=np.float64)
    p0_all = np.minimum(genes / max(n_genes, 1), MAX_NODE_P0)
    nodes, counts = np.unique(p0_all, return_counts=True)
    order = np.argsort(-nodes)
    nodes, log_prior = nodes[order], np.log(counts[order] / genes.size)
    if outside_log_bf is not None and np.size(outside_log_bf):
        lbf = np.asarray(outside_log_bf, dtype=np.float64)
        log_prior = log_prior + np.array([
            np.sum(np.logaddexp(np.log1p(-q), np.log(q) + lbf)) for q in nodes])
    return nodes, log_prior


def _abs_correlations(Z, *, centred):
    """``(m, m)`` absolute correlations of the standardised columns ``Z`` (centred if not)."""
    n, m = Z.shape
    if not m:
        return np.zeros((0, 0))
    if not centred:  # uncentred columns: correlations of the centred ones
        Z = _standardise(Z, center=True)
    return np.abs(Z.T @ Z) / n


def neighbourhood_certainty(Z, t, seeds, *, n_genes, intercept_alpha=0.01, coverage=0.95,
                            min_correlation=0.5, min_bayes_factor=CREDIBLE_MIN_BAYES_FACTOR,
                            outside_log_bf=None, prior_genes=PRIOR_GENES, tol=1e-4,
                            max_iter=200):
    """PIPs and credible sets of the spike-and-slab model restricted to the genes ``Z``.

    Parameters
    ----------
    Z : ndarray of shape (n, m)
        The neighbourhood's genes, standardised (centred with an intercept).
    t : ndarray of shape (n,)
        Labels in {-1, +1}.
    seeds : ndarray of int
        Positions in ``Z`` of the selected genes: each is in a set.
    n_genes : int
        Usable genes of the whole problem (the prior inclusion probability is ``E / n_genes``).
    intercept_alpha : float or None, default=0.01
        Prior precision of the intercept; None for a model without one.
    coverage : float, default=0.95
        Probability a set must reach (it stops growing there).
    min_correlation : float, default=0.5
        Smallest absolute correlation between two genes of a set.
    min_bayes_factor : float, default=10
        A gene joins a set only if its posterior odds of inclusion are at least this many times
        its prior odds.
    outside_log_bf : ndarray of shape (n_genes - m,), optional
        Log Bayes factor of adding each gene outside the neighbourhood (one at a time, given the
        chosen model). Each node's prior weight is multiplied by the genes' prior-weighted chance
        ``prod_j (1 - p0 + p0 BF_j)``: without it the nodes would be weighed as if the genes
        outside were known to be out, or as if they were not there.
    prior_genes : tuple of float, default=PRIOR_GENES
        The hyperprior's expected numbers of genes in the model, equally likely a priori.
    tol, max_iter : float, int
        EP's convergence tolerance and largest number of sweeps.

    Returns
    -------
    NeighbourhoodCertainty
        ``genes`` is ``arange(m)``.
    """
    n, m = Z.shape
    P = t[:, None] * Z
    icpt = t if intercept_alpha is not None else None
    nodes, log_prior = _node_prior(prior_genes, n_genes, outside_log_bf)
    fits, ep = _fit_nodes(P, icpt, nodes, intercept_alpha=intercept_alpha, tol=tol,
                          max_iter=max_iter)
    conv = np.array([f.converged for f in fits])
    use = conv if conv.any() else np.ones_like(conv)
    log_ev = np.array([f.log_evidence for f in fits])
    log_w = np.where(use, log_ev + log_prior, -np.inf)
    log_w -= logsumexp(log_w)
    w = np.exp(log_w)
    pip = sum(wi * f.pip for wi, f in zip(w, fits, strict=True))
    p0_mean = float(w @ nodes)
    R = _abs_correlations(Z, centred=intercept_alpha is not None)

    top = int(np.argmax(np.where(use, w, -1.0)))  # the node of largest posterior weight
    fits_without = {}  # (genes left out, node): the EP fit without them

    def fit_without(members, g):
        key = (frozenset(members), g)
        if key not in fits_without:
            f = fits[g]
            keep = np.ones(m, dtype=bool)
            keep[members] = False
            fits_without[key] = ep(f.prior_inclusion, P[:, keep],
                                   _Start(f.tau, f.nu, f.lam[keep], f.eta[keep]),
                                   tol=max(tol, WITHOUT_TOL))
        return fits_without[key]

    def without(members, *, single=False):
        """``log P(no gene of members in | t)`` and the others' PIPs given that none is in.

        The first by the evidence ratio (module notes); the PIPs average the EP fits without
        ``members`` over the nodes, weighted by their posterior given that none is in (NaN at
        ``members``).
        """
        keep = np.ones(m, dtype=bool)
        keep[members] = False
        terms, pips = [], []
        for g, f in enumerate(fits):
            # Nodes of negligible weight are left out (the others' weights renormalised): the
            # answer moves by at most their weight, NODE_MIN_WEIGHT each.
            if not use[g] or w[g] < NODE_MIN_WEIGHT or (single and g != top):
                continue
            st = fit_without(members, g)
            terms.append(log_w[g] + len(members) * np.log1p(-f.prior_inclusion)
                         + st.log_evidence - f.log_evidence)
            pips.append(st.pip)
        kept = log_w[[top]] if single else log_w[use & (w >= NODE_MIN_WEIGHT)]
        terms = np.array(terms)
        cond = np.full(m, np.nan)
        cond[keep] = np.exp(terms - logsumexp(terms)) @ np.array(pips)
        return float(logsumexp(terms) - logsumexp(kept)), cond

    def prob_any(members, *, single=False):
        return -float(np.expm1(min(without(members, single=single)[0], 0.0)))

    odds = min_bayes_factor * p0_mean / (1.0 - p0_mean)
    min_pip = odds / (1.0 + odds)
    free = np.ones(m, dtype=bool)
    sets = []
    seeds = np.asarray(seeds, dtype=np.intp)
    for s in seeds[np.argsort(-pip[seeds], kind="stable")]:
        if not free[s]:
            continue
        free[s] = False
        # A selected gene that stands in for every gene of an earlier set joins it: the model
        # selected both, and the set is where the data cannot tell them apart.
        home = next((k for k, (mem, _) in enumerate(sets) if R[s, mem].min() >= min_correlation),
                    None)
        if home is not None:
            sets[home] = ([*sets[home][0], int(s)], None)  # its probability: once, at the end
            continue
        members = [int(s)]
        if pip[s] >= coverage:
            sets.append((members, float(pip[s])))
            continue
        # The candidates are the genes that take the gene's place when it is out: EP's PIPs of
        # two near copies can put nearly all the probability on one of them.
        # (A seed the data hardly support changes nothing by leaving: its PIPs stand in.)
        # (Which genes may join, and in which order, is read from the largest node alone; the
        # set's probability is the whole mixture's.)
        cond = (without(members, single=True)[1] if pip[s] >= min_pip
                else np.where(free, pip, np.nan))
        prob = float(pip[s])  # a set of one: the gene's PIP
        ok = free & (R[s] >= min_correlation) & (np.nan_to_num(cond) >= min_pip)
        # The eligible genes, best first, each correlated with every one before it.
        cands = []
        for h in np.argsort(-np.nan_to_num(cond), kind="stable"):
            if ok[h]:
                cands.append(int(h))
                ok &= R[h] >= min_correlation
        if prob < coverage and cands:
            # The shortest prefix of the candidates that reaches the coverage (P grows with
            # the prefix), by bisection on the largest node; all of them if even that does not.
            lo, hi = 0, len(cands)
            if prob_any(members + cands, single=True) >= coverage:
                while hi - lo > 1:
                    mid = (lo + hi) // 2
                    if prob_any(members + cands[:mid], single=True) >= coverage:
                        hi = mid
                    else:
                        lo = mid
            members += cands[:hi]
            prob = None  # the whole mixture's, at the end
            free[cands[:hi]] = False
        sets.append((members, prob))
    out = []
    for members, prob in sets:
        if prob is None:
            prob = prob_any(members)
        members = np.array(members)
        members = members[np.argsort(-pip[members], kind="stable")]
        out.append((members, prob, float(R[np.ix_(members, members)].min())))
    sets = out
    return NeighbourhoodCertainty(genes=np.arange(m), pip=pip, sets=sets,
                                  prior_inclusion=p0_mean, converged=bool(conv.all()))


def certainty_problem(fit, n_basis, *, intercept_alpha, coverage=0.95, min_correlation=0.5,
                      max_neighbours=10):
    """The inputs of :func:`neighbourhood_certainty` for one ARD binary problem at its chosen model.

    ``fit`` is a :class:`~ardselect.estimators._binary_fit.BinaryFit` (its basis, signs, usable
    columns and chosen active set); the genes are its first ``n_basis`` columns. The neighbourhood,
    its standardised columns and the single-gene Bayes factors of the genes outside it are
    computed here (passes over the design); the EP itself is left to :func:`solve_certainty`, so
    the problems of a fit can run side by side. The hyperprior is :func:`signature_prior` of the
    number of selected genes. Returns ``(genes, Z, t, seeds, options)``, or None when the model
    holds no gene; ``genes`` are basis columns.
    """
    active = fit.active[fit.active < n_basis]
    if active.size == 0:
        return None
    basis = fit.problem.basis
    allowed = np.asarray(fit.problem.allowed[:n_basis], dtype=bool)
    candidates = np.zeros(basis.shape[1], dtype=bool)
    candidates[:n_basis] = allowed
    candidates[active] = False
    genes = neighbourhood(basis, active, candidates, min_correlation=min_correlation,
                          max_neighbours=max_neighbours)
    held = fit.intercept_col >= 0
    Z = _standardise(_dense_columns(basis, genes), center=held)
    outside = candidates.copy()
    outside[genes] = False
    options = {"n_genes": int(allowed.sum()),
               "intercept_alpha": intercept_alpha if held else None, "coverage": coverage,
               "min_correlation": min_correlation,
               "outside_log_bf": _single_gene_log_bf(fit, outside),
               "prior_genes": signature_prior(active.size)}
    return genes, Z, np.asarray(fit.signs, dtype=np.float64), np.searchsorted(genes, active), \
        options


def solve_certainty(problem):
    """:func:`neighbourhood_certainty` of a :func:`certainty_problem`; ``genes`` are basis columns."""
    genes, Z, t, seeds, options = problem
    res = neighbourhood_certainty(Z, t, seeds, **options)
    res.genes = genes
    return res


def fit_certainty(fit, n_basis, *, intercept_alpha, **kwargs):
    """:func:`neighbourhood_certainty` of one ARD binary problem at its chosen model.

    :func:`certainty_problem` then :func:`solve_certainty`; None when the model holds no gene.
    """
    problem = certainty_problem(fit, n_basis, intercept_alpha=intercept_alpha, **kwargs)
    return None if problem is None else solve_certainty(problem)


def _single_gene_log_bf(fit, which):
    """Log Bayes factor of adding each column ``which`` to the chosen model, slab prior ``N(0, 1)``.

    The closed form on EP's virtual regression (:mod:`ardselect.estimators._certainty`), at the fixed prior
    variance ``SLAB_VARIANCE`` per unit-RMS column (the standardised genes' scale).
    """
    st = fit.ep
    tau = st.tau
    t = np.where(tau > 0, st.nu / np.where(tau > 0, tau, 1.0), 0.0)
    S, Q = score_candidates(fit.problem.design, st.post, tau, t)
    s, q = S[which], Q[which]  # columns outside the model: S, Q are their own leave-one-out
    v = SLAB_VARIANCE
    return 0.5 * (q * q * v / (1.0 + v * s) - np.log1p(v * s))


def certainty_frames(results, positives, names, n_problems, n_basis):
    """``pip_`` (``(n_problems, n_basis)``, NaN outside the neighbourhoods) and ``credible_sets_``."""
    import pandas as pd

    pip = np.full((n_problems, n_basis), np.nan)
    frames = []
    for i, res in enumerate(results):
        if res is None:
            continue
        pip[i, res.genes] = res.pip
        for s, (members, prob, purity) in enumerate(res.sets, start=1):
            cols = res.genes[members]
            frames.append(pd.DataFrame({
                "class": positives[i], "set": s, "feature": np.asarray(names)[cols].astype(str),
                "pip": res.pip[members], "set_probability": prob, "size": members.size,
                "purity": purity}))
    if frames:
        return pip, pd.concat(frames, ignore_index=True)
    return pip, pd.DataFrame({
        "class": pd.Series(dtype=object), "set": pd.Series(dtype=int),
        "feature": pd.Series(dtype=object), "pip": pd.Series(dtype=float),
        "set_probability": pd.Series(dtype=float), "size": pd.Series(dtype=int),
        "purity": pd.Series(dtype=float)})


def set_memberships(sets, name_col="feature"):
    """``{(class, name): (set, set_probability, alternatives)}`` of every gene of a credible set.

    ``alternatives`` are the set's other genes, best first, as ``"NAME (pip)"`` joined by ``", "``.
    """
    out = {}
    for (cls, s), grp in sets.groupby(["class", "set"], sort=False):
        feats = grp[name_col].astype(str).tolist()
        pips = grp["pip"].tolist()
        prob = float(grp["set_probability"].iloc[0])
        for f in feats:
            alts = ", ".join(f"{g} ({q:.2f})" for g, q in zip(feats, pips, strict=True) if g != f)
            out[(cls, f)] = (int(s), prob, alts)
    return out


def add_certainty_columns(table, pip, sets, names, positives):
    """Insert ``pip``, ``credible_set``, ``set_probability``, ``alternatives`` after ``selected``.

    ``table`` is the ranked table (``class``, ``feature`` per row), ``pip`` and ``sets`` the
    estimator's ``pip_`` and ``credible_sets_``, ``names`` its basis names, ``positives`` the class
    of each row of ``pip``.
    """
    import pandas as pd

    col_of = {f: j for j, f in enumerate(np.asarray(names).astype(str))}
    rows = {p: i for i, p in enumerate(positives)}
    member = set_memberships(sets)
    n = len(table)
    out_pip = np.full(n, np.nan)
    out_set = [None] * n
    out_prob = np.full(n, np.nan)
    out_alt = [""] * n
    for r, (cls, f) in enumerate(zip(table["class"], table["feature"], strict=True)):
        i = rows.get(cls)
        if i is not None:
            out_pip[r] = pip[i, col_of[str(f)]]
        hit = member.get((cls, str(f)))
        if hit is not None:
            out_set[r], out_prob[r], out_alt[r] = hit
    at = list(table.columns).index("selected") + 1
    table = table.copy()
    table.insert(at, "pip", out_pip)
    table.insert(at + 1, "credible_set", pd.array(out_set, dtype="Int64"))
    table.insert(at + 2, "set_probability", out_prob)
    table.insert(at + 3, "alternatives", out_alt)
    return table
