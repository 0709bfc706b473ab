"""The ARD signature's credible sets and PIPs: their calibration on planted data, their cost.

Planted data with correlated blocks: ``n`` samples, ``p`` independent standard normal genes
(``--genes``), of which ``n_relevant`` (``--relevant``, 4 by default) carry the signal (weights of
size 1 to 2, random signs, probit labels); each relevant gene has 0 to 5 near copies
(``rho g + sqrt(1 - rho^2) e``, ``rho`` uniform in 0.8-0.99) placed among the other genes. The default ``ARDClassifier`` is fitted on each replicate, and its
``credible_sets_`` and ``pip_`` are scored:

* coverage: the share of sets with probability >= 0.95 that hold a planted gene;
* set calibration: the expected calibration error (ECE, 10 equal-width bins) of the set
  probabilities against "the set holds a planted gene";
* gene calibration: the ECE of the PIPs of genes without near copies (neither a relevant gene
  with copies nor a copy) against "the gene is planted", over every gene that has a PIP; beside
  it, the ECE a calibrated model would get on as many genes (outcomes drawn from the PIPs
  themselves: the floor that a finite sample puts under the ECE), and the bias, the mean PIP
  minus the share of planted genes.

Then the cost: the default fit of the bundled Golub data (``ardselect.datasets.leukaemia``, the
preprocessing of ``./dev.sh demo``), with and without ``certainty``: CPU seconds of this process
(one BLAS thread), the best of ``--repeats`` runs of each, alternated, after a warm-up fit; the
ratio must stay <= 1.5. ``--partitions K`` times instead ``K`` seeded stratified partitions of the
Golub samples into 36 training samples (the preprocessing fitted on them): on each, the best of
``--partition-repeats`` fits without and with certainty, alternated, and their ratio; the median
of the ratios must stay <= 1.5. Beside each ratio, the certainty's own CPU seconds split into the spike-and-slab fits at
the hyperprior's nodes and the fits without a credible set's genes.

    python benchmarks/certainty.py                 # 3 seeds x 10 replicates, then Golub timing
    python benchmarks/certainty.py --replicates 5  # quicker
    python benchmarks/certainty.py --repeats 0     # calibration only
    python benchmarks/certainty.py --seeds 1 --replicates 8 --repeats 0 --n 200 --relevant 50 --genes 500
                                                   # a long signature: 50 planted genes of 500
    python benchmarks/certainty.py --replicates 0 --repeats 0 --partitions 20   # cost only

Standard errors (±) are bootstrap standard deviations, the replicates of a block resampled.
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

#: Bins of the expected calibration error.
N_BINS = 10
#: Bootstrap resamples of the replicates for the standard errors.
BOOTSTRAP = 500


def planted(seed, *, n=100, p=300, n_relevant=4, max_copies=5):
    """``X, y, relevant, copies``: the planted data of one replicate (module docstring).

    ``relevant`` holds the planted genes' columns; ``copies`` maps each to its copies' columns.
    """
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    cols = rng.permutation(p)
    relevant = np.sort(cols[:n_relevant])
    free = list(cols[n_relevant:])
    copies = {}
    for g in relevant:
        k = int(rng.integers(0, max_copies + 1))
        copies[int(g)] = [int(free.pop()) for _ in range(k)]
        for c in copies[int(g)]:
            rho = rng.uniform(0.8, 0.99)
            X[:, c] = rho * X[:, g] + np.sqrt(1.0 - rho * rho) * rng.normal(size=n)
    w = rng.uniform(1.0, 2.0, size=n_relevant) * rng.choice([-1.0, 1.0], size=n_relevant)
    y = (X[:, relevant] @ w + rng.normal(size=n) > 0).astype(int)
    return X, y, relevant, copies


def score(seed, *, n=100, p=300, n_relevant=4):
    """Set rows ``(probability, holds a planted gene)``, gene rows ``(pip, planted)``, genes kept."""
    from ardselect import ARDClassifier

    X, y, relevant, copies = planted(seed, n=n, p=p, n_relevant=n_relevant)
    clf = ARDClassifier(random_state=seed).fit(X, y)
    sets = clf.credible_sets_
    set_rows = []
    for _, grp in sets.groupby("set"):
        cols = [int(f[1:]) for f in grp["feature"]]
        set_rows.append((float(grp["set_probability"].iloc[0]), bool(np.isin(cols, relevant).any())))
    near = {g for g, c in copies.items() if c} | {c for cs in copies.values() for c in cs}
    pip = clf.pip_[0]
    gene_rows = [(float(pip[j]), j in set(relevant.tolist())) for j in np.flatnonzero(np.isfinite(pip))
                 if j not in near]
    return set_rows, gene_rows, int(np.sum(clf.support_))


def replicates(seeds, *, n=100, p=300, n_relevant=4):
    """Set and gene rows of each seed: a list of ``(set rows, gene rows, genes kept)``."""
    return [score(int(s), n=n, p=p, n_relevant=n_relevant) for s in seeds]


def pool(reps):
    """The set and gene rows of replicates ``reps`` pooled."""
    return [r for a, _, _ in reps for r in a], [r for _, b, _ in reps for r in b]


def ece(rows):
    """Expected calibration error of ``(probability, outcome)`` rows, 10 equal-width bins."""
    if not rows:
        return float("nan")
    prob = np.array([r[0] for r in rows])
    hit = np.array([r[1] for r in rows], dtype=float)
    bins = np.minimum((prob * N_BINS).astype(int), N_BINS - 1)
    total = 0.0
    for b in range(N_BINS):
        m = bins == b
        if m.any():
            total += m.sum() * abs(prob[m].mean() - hit[m].mean())
    return total / prob.size


def summary(reps):
    """``(coverage, set ECE, gene ECE, number of 95% sets)`` of the pooled rows of ``reps``."""
    sets, genes = pool(reps)
    credible = [hit for prob, hit in sets if prob >= 0.95]
    cov = float(np.mean(credible)) if credible else float("nan")
    return cov, ece(sets), ece(genes), len(credible)


def bootstrap_se(reps, *, n_boot=BOOTSTRAP, seed=0):
    """Bootstrap standard errors of coverage, set ECE and gene ECE, replicates resampled."""
    rng = np.random.default_rng(seed)
    draws = np.array([summary([reps[i] for i in rng.integers(0, len(reps), len(reps))])[:3]
                      for _ in range(n_boot)])
    return np.nanstd(draws, axis=0, ddof=1)


def calibrated_ece(rows, *, n_sim=200, seed=0):
    """The mean ECE of ``rows``' probabilities with outcomes drawn from them.

    That is the ECE of a calibrated model on as many rows: the floor a finite sample puts under it.
    """
    rng = np.random.default_rng(seed)
    prob = np.array([r[0] for r in rows])
    return float(np.mean([ece(list(zip(prob, rng.random(prob.size) < prob, strict=True)))
                          for _ in range(n_sim)]))


def bias(rows):
    """Mean probability minus observed frequency (positive: too sure)."""
    return float(np.mean([r[0] for r in rows]) - np.mean([r[1] for r in rows]))


def reliability(rows):
    """Rows ``(bin, count, mean probability, observed frequency)`` of the non-empty bins."""
    prob = np.array([r[0] for r in rows])
    hit = np.array([r[1] for r in rows], dtype=float)
    bins = np.minimum((prob * N_BINS).astype(int), N_BINS - 1)
    return [(b, int((bins == b).sum()), prob[bins == b].mean(), hit[bins == b].mean())
            for b in range(N_BINS) if (bins == b).any()]


def golub_timing(repeats):
    """Best-of-``repeats`` seconds of the default Golub fit without and with certainty."""
    from ardselect import ARDClassifier, datasets
    from ardselect.preprocessing import Preprocessor

    ad = datasets.leukaemia()
    X = Preprocessor(floor=100, cap=16000, log="log10").fit_transform(ad.X)
    y = (ad.obs["label"] == "AML").to_numpy().astype(int)
    ARDClassifier(constant_features="ignore").fit(X, y)  # warm-up: the compiled loops
    out = {False: np.inf, True: np.inf}
    for _ in range(repeats):
        for on in (False, True):  # alternated, so that other jobs' load falls on both
            t0 = time.process_time()
            ARDClassifier(constant_features="ignore", certainty=on).fit(X, y)
            out[on] = min(out[on], time.process_time() - t0)
    return out


def golub_scaled():
    """The bundled Golub data as counts (72 x 7129) and its labels (AML = 1)."""
    from ardselect import datasets

    ad = datasets.leukaemia()
    return np.asarray(ad.X, dtype=np.float64), (ad.obs["label"] == "AML").to_numpy().astype(int)


class _CostSplit:
    """CPU seconds spent in the certainty, in its node fits and in its fits without a set's genes."""

    def __init__(self):
        import ardselect.estimators._neighbourhood as nb

        self.nb = nb
        self.seconds = {"certainty": 0.0, "nodes": 0.0, "ep": 0.0}
        self.saved = (nb.certainty_problem, nb.solve_certainty, nb._fit_nodes,
                      nb.run_spikeslab_ep)

    def _timed(self, key, fn):
        def run(*args, **kwargs):
            t0 = time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds[key] += time.process_time() - t0
        return run

    def __enter__(self):
        import ardselect.estimators._classifier as cl

        problem, solve, fit_nodes, run_ep = self.saved
        self.cl = cl
        cl.certainty_problem = self._timed("certainty", problem)
        cl.solve_certainty = self._timed("certainty", solve)
        self.nb._fit_nodes = self._timed("nodes", fit_nodes)
        self.nb.run_spikeslab_ep = self._timed("ep", run_ep)
        return self

    def __exit__(self, *exc):
        (self.cl.certainty_problem, self.cl.solve_certainty, self.nb._fit_nodes,
         self.nb.run_spikeslab_ep) = self.saved


def partition_timing(n_partitions, *, repeats=1, n_train=36, seed=0):
    """Per partition: CPU seconds without and with certainty, and the certainty's own split."""
    from sklearn.model_selection import StratifiedShuffleSplit

    from ardselect import ARDClassifier
    from ardselect.preprocessing import Preprocessor

    X, y = golub_scaled()
    split = StratifiedShuffleSplit(n_partitions, train_size=n_train, random_state=seed)
    rows = []
    for k, (train, _) in enumerate(split.split(X, y)):
        Xtr = Preprocessor(floor=100, cap=16000, log="log10").fit_transform(X[train])
        ytr = y[train]
        if k == 0:
            ARDClassifier().fit(Xtr, ytr)  # warm-up: the compiled loops
        off = on = np.inf
        for _ in range(repeats):
            t0 = time.process_time()
            ARDClassifier(certainty=False).fit(Xtr, ytr)
            off = min(off, time.process_time() - t0)
            with _CostSplit() as cost:
                t0 = time.process_time()
                ARDClassifier().fit(Xtr, ytr)
                on = min(on, time.process_time() - t0)
        sec = cost.seconds  # of the last fit with certainty
        nodes = sec["nodes"]
        rows.append((k, off, on, sec["certainty"], nodes, sec["ep"] - nodes))
    return rows


def print_partitions(rows):
    print(f"Golub, {len(rows)} stratified partitions of 36 training samples (CPU seconds, one BLAS "
          "thread, best of the repeats); certainty (of the last fit) = its spike-and-slab fits at "
          "the nodes + the fits without a set's genes + the rest")
    print("| partition | without certainty | with | ratio | certainty | nodes | without-set fits |")
    print("|---|---|---|---|---|---|---|")
    for k, off, on, cert, nodes, wo in rows:
        print(f"| {k} | {off:.3f} | {on:.3f} | {on / off:.2f} | {cert:.3f} | {nodes:.3f} "
              f"| {wo:.3f} |")
    ratio = np.array([r[2] / r[1] for r in rows])
    med = np.median(np.array(rows)[:, 1:], axis=0)
    print(f"median ratio {np.median(ratio):.2f} (range {ratio.min():.2f}-{ratio.max():.2f}); "
          f"medians: {med[0]:.3f} s without, {med[1]:.3f} s with, certainty {med[2]:.3f} s "
          f"(nodes {med[3]:.3f} s, without-set fits {med[4]:.3f} s)")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3, help="independent seed blocks")
    ap.add_argument("--replicates", type=int, default=10, help="replicates per seed block")
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--p", "--genes", dest="p", type=int, default=300, help="genes")
    ap.add_argument("--relevant", type=int, default=4, help="planted genes")
    ap.add_argument("--repeats", type=int, default=5, help="timed Golub fits of each kind (0: no timing)")
    ap.add_argument("--partitions", type=int, default=0,
                    help="time this many stratified 36-sample Golub partitions (0: none)")
    ap.add_argument("--partition-repeats", type=int, default=3,
                    help="timed fits of each kind per partition (the best counts)")
    args = ap.parse_args(argv)
    if args.partitions:
        print_partitions(partition_timing(args.partitions, repeats=args.partition_repeats))
    if args.replicates:
        calibration(args)
    if args.repeats == 0:
        return
    times = golub_timing(args.repeats)
    print(f"Golub default fit: {times[False]:.2f} CPU s without certainty, {times[True]:.2f} CPU s "
          f"with it: ratio {times[True] / times[False]:.2f}")


def calibration(args):
    """The planted-data tables (module docstring)."""
    t0 = time.perf_counter()
    print(f"planted data: n={args.n}, p={args.p}, {args.relevant} relevant genes with 0-5 near copies "
          f"(r 0.8-0.99); {args.replicates} replicates per seed block; bootstrap s.e. over "
          f"replicates")
    print("| seed block | sets >= 0.95 | coverage | set ECE | gene ECE (no near copy) "
          "| gene ECE if calibrated | gene PIP bias |")
    print("|---|---|---|---|---|---|---|")
    every = []
    for b in range(args.seeds):
        seeds = range(1000 * b, 1000 * b + args.replicates)
        reps = replicates(seeds, n=args.n, p=args.p, n_relevant=args.relevant)
        every += reps
        cov, e_set, e_gene, k = summary(reps)
        se = bootstrap_se(reps, seed=b)
        genes = pool(reps)[1]
        print(f"| {b} | {k} | {cov:.3f} ± {se[0]:.3f} | {e_set:.3f} ± {se[1]:.3f} "
              f"| {e_gene:.3f} ± {se[2]:.3f} | {calibrated_ece(genes, seed=b):.3f} "
              f"| {bias(genes):+.3f} |")
    cov, e_set, e_gene, k = summary(every)
    se = bootstrap_se(every, seed=args.seeds)
    sets, genes = pool(every)
    print(f"| all | {k} | {cov:.3f} ± {se[0]:.3f} | {e_set:.3f} ± {se[1]:.3f} "
          f"| {e_gene:.3f} ± {se[2]:.3f} | {calibrated_ece(genes, seed=args.seeds):.3f} "
          f"| {bias(genes):+.3f} |")
    for what, rows in (("set probability", sets), ("gene PIP (no near copy)", genes)):
        print(f"\nreliability of the {what}, all blocks:")
        print("| bin | count | mean probability | observed frequency |")
        print("|---|---|---|---|")
        for b, c, p, f in reliability(rows):
            print(f"| {b / N_BINS:.1f}-{(b + 1) / N_BINS:.1f} | {c} | {p:.3f} | {f:.3f} |")
    print(f"(planted data: {time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
