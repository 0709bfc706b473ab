"""Path length, accuracy and time on dense data with many samples: inclusion penalty 0 against "bic".

Dense Gaussian genes, ``--informative`` of them with N(0, 1) weights, probit labels with unit noise;
``ARDClassifier(criterion="loo", max_steps=...)`` with ``inclusion_penalty=0`` (the paper's type-II
maximum likelihood) and ``"bic"`` (log(n)/2 nats per gene), fitted on the same matrix in
one process and tested on 2,000 fresh samples. CPU seconds (one BLAS thread).

Usage: python benchmarks/long_paths.py [--sizes 500x500,2000x500] [--max-steps 600] [--seed 0]
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np


def data(n, p, k, seed, n_test=2000):
    """``(X, y, X_test, y_test)``: the first ``k`` of ``p`` genes informative."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n + n_test, p))
    w = np.zeros(p)
    w[:k] = rng.normal(size=k)
    y = (X @ w + rng.normal(size=n + n_test) > 0).astype(int)
    return X[:n], y[:n], X[n:], y[n:]


def main(argv=None):
    from sklearn.exceptions import ConvergenceWarning

    from ardselect import ARDClassifier

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="500x500,2000x500", help="samples x genes, comma-separated")
    ap.add_argument("--informative", type=int, default=20)
    ap.add_argument("--max-steps", type=int, default=600)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    print("| samples x genes | penalty | steps | genes kept (informative) | test error | "
          "test log-loss | CPU s |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for size in args.sizes.split(","):
        n, p = (int(v) for v in size.lower().split("x"))
        X, y, Xt, yt = data(n, p, args.informative, args.seed)
        for penalty in (0.0, "bic"):
            t0 = time.process_time()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)  # the cap is reported below
                # (precision floor 0.1 and tol 1e-5, the settings this comparison was made with)
                clf = ARDClassifier(criterion="loo", inclusion_penalty=penalty, alpha_min=0.1,
                                    tol=1e-5, max_steps=args.max_steps).fit(X, y)
            seconds = time.process_time() - t0
            path = clf.path_
            kept = np.flatnonzero(clf.get_support())
            p1 = clf.predict_proba(Xt)[:, 1]
            log_loss = -np.mean(np.log(np.where(yt == 1, p1, 1 - p1)))
            capped = " (cap)" if len(path) > args.max_steps else ""
            print(f"| {n} x {p} | {penalty} | {len(path)}{capped} | {kept.size} "
                  f"({np.sum(kept < args.informative)}) | {np.mean(clf.predict(Xt) != yt):.1%} | "
                  f"{log_loss:.3f} | {seconds:.1f} |", flush=True)


if __name__ == "__main__":
    main()
