"""Genomics-scale timing: a sparse single-cell-like matrix (cells x genes), binary labels.

Counts are Poisson with gene-specific rates and 95% zeros; 20 marker genes shift with the label. The
matrix is log1p-transformed and scaled (not centred, to stay sparse) and fitted as scipy CSR.

Usage: python benchmarks/scale.py [--cells 2000] [--genes 20000] [--density 0.05]
"""

from __future__ import annotations

import argparse
import os
import resource
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
import scipy.sparse as sp


def main(argv=None):
    from ardselect import ARDClassifier

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cells", type=int, default=2000)
    ap.add_argument("--genes", type=int, default=20000)
    ap.add_argument("--density", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    n, p = args.cells, args.genes
    y = rng.integers(0, 2, size=n)
    X = sp.random(n, p, density=args.density, format="csr", random_state=rng,
                  data_rvs=lambda k: rng.poisson(3, size=k) + 1.0)
    markers = rng.choice(p, size=20, replace=False)
    boost = sp.csr_matrix((rng.poisson(4, size=(n, 20)) * y[:, None]).astype(float))
    X = X.tolil()
    X[:, markers] = X[:, markers] + boost
    X = X.tocsr()
    X.data = np.log1p(X.data)
    sd = np.sqrt(np.asarray(X.multiply(X).mean(axis=0)).ravel() - np.asarray(X.mean(axis=0)).ravel() ** 2)
    keep = sd > 0
    X = (X[:, keep] @ sp.diags(1.0 / sd[keep])).tocsr()
    print(f"{n} cells x {X.shape[1]} genes, {X.nnz / (n * X.shape[1]):.1%} non-zero "
          f"({X.data.nbytes / 1e6:.0f} MB of values; dense would be {n * X.shape[1] * 8 / 1e9:.2f} GB)")
    t0 = time.perf_counter()
    clf = ARDClassifier().fit(X, y)
    dt = time.perf_counter() - t0
    found = np.isin(np.flatnonzero(keep)[clf.get_support()], markers).sum()
    ev = clf.at_step(clf.choose_step("evidence"))
    found_ev = np.isin(np.flatnonzero(keep)[ev.get_support()], markers).sum()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3
    print(f"fit {dt:.1f} s, {len(clf.path_)} path steps; LOO model {clf.get_support().sum()} genes "
          f"({found} of 20 markers); evidence model {ev.get_support().sum()} genes ({found_ev} "
          f"markers); peak memory {peak:.0f} MB")


if __name__ == "__main__":
    main()
