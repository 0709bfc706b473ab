"""Stability of the selected genes over bootstrap resamples, beside L1-logistic and the elastic net.

A signature a biologist can build on comes out (nearly) the same when the samples change a little.
For each shared data set, ``--boots`` stratified bootstrap resamples of all samples (drawn with
replacement within each class, seeded) are each preprocessed (``accuracy.DATASETS``: floor / cap /
log, constant genes dropped, standardised, all on the resample) and fitted by every method; a
method's stability is the mean Jaccard index ``|A & B| / |A | B|`` of its selected gene sets over
all pairs of resamples (the union over classes for multi-class data). Its standard error is the
jackknife's over the resamples.

Usage:
    python benchmarks/stability.py [--datasets golub_leukemia,...] [--boots 20] [--jobs 2]
                                   [--methods ARD-EP,L1-logistic,elastic-net]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from itertools import combinations
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from accuracy import DATASETS, load, methods  # noqa: E402  (the shared loaders and methods)


def selected(method, X, y, pre_kwargs, names):
    """Names of the genes ``method`` selects on (X, y) after the data set's preprocessing."""
    from sklearn.base import clone

    from ardselect.model_selection import genes_used
    from ardselect.preprocessing import Preprocessor

    pre = Preprocessor(**pre_kwargs).fit(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence notes do not change the comparison
        est = clone(method).fit(pre.transform(X), y)
    mask = genes_used(est, int(pre.keep_.sum()))
    return frozenset(names[np.flatnonzero(pre.keep_)][mask].tolist())


def jaccard(sets):
    """Mean pairwise Jaccard index of ``sets`` and its jackknife standard error."""
    B = len(sets)
    J = np.ones((B, B))
    for i, j in combinations(range(B), 2):
        union = len(sets[i] | sets[j])
        J[i, j] = J[j, i] = len(sets[i] & sets[j]) / union if union else 1.0
    off = ~np.eye(B, dtype=bool)
    mean = J[off].mean()
    loo = np.array([J[np.ix_(keep, keep)][~np.eye(B - 1, dtype=bool)].mean()
                    for keep in (np.arange(B) != b for b in range(B))])
    se = np.sqrt((B - 1) / B * np.sum((loo - loo.mean()) ** 2))
    return mean, se


def run(name, chosen, boots, jobs, seed):
    from joblib import Parallel, delayed

    X, y, _ = load(name)
    names = np.array([f"g{j}" for j in range(X.shape[1])], dtype=object)
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(boots):
        idx = np.concatenate([rng.choice(np.flatnonzero(y == c), size=int(np.sum(y == c)))
                              for c in np.unique(y)])
        draws.append(np.sort(idx))
    tasks = [(m, idx) for m in chosen for idx in draws]
    out = Parallel(n_jobs=jobs)(
        delayed(selected)(chosen[m], X[idx], y[idx], DATASETS[name], names) for m, idx in tasks)
    per = {m: [] for m in chosen}
    for (m, _), s in zip(tasks, out, strict=True):
        per[m].append(s)
    return per


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", default=",".join(DATASETS))
    ap.add_argument("--boots", type=int, default=20)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--methods", default="ARD-EP,L1-logistic,elastic-net")
    args = ap.parse_args(argv)
    available = methods(args.seed)
    keep = [m.strip() for m in args.methods.split(",")]
    unknown = sorted(set(keep) - set(available))
    if unknown:
        ap.error(f"unknown methods {unknown}; choose from {sorted(available)}")
    chosen = {m: available[m] for m in keep}
    print(f"| data | {' | '.join(f'{m}: Jaccard, genes' for m in chosen)} |")
    print(f"| --- | {' | '.join('---' for _ in chosen)} |")
    for name in (n.strip() for n in args.datasets.split(",")):
        if name not in DATASETS:
            ap.error(f"unknown data set {name!r}; choose from {', '.join(DATASETS)}")
        t0 = time.perf_counter()
        per = run(name, chosen, args.boots, args.jobs, args.seed)
        cells = []
        for m in chosen:
            mean, se = jaccard(per[m])
            cells.append(f"{mean:.2f} +- {se:.2f}, {np.mean([len(s) for s in per[m]]):.0f}")
        print(f"| {name} | {' | '.join(cells)} |  ({time.perf_counter() - t0:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
