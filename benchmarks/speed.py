"""Time one full ARD path on a 36 x 7129 leukaemia partition, beside L1-logistic regression.

The ARD fit is the whole thing a user runs: the path from the starting model to convergence, with
the three criteria's records and the chosen model. Baselines on the same matrix: one L1-logistic fit
at a fixed C (liblinear) and the same with C chosen by 5-fold CV over 9 values (what a user would
run to get a comparable, tuned signature). Each timing is the median of ``--repeats`` runs.

Usage: python benchmarks/speed.py [--repeats 5] [--split 0]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from leukaemia import load, partitions, preprocess  # noqa: E402


def median_time(fn, repeats):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def main(argv=None):
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GridSearchCV, StratifiedKFold

    from ardselect import ARDClassifier

    warnings.simplefilter("ignore", ConvergenceWarning)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--split", type=int, default=0)
    args = ap.parse_args(argv)
    X, y = load()
    tr = partitions(args.split + 1)[args.split]
    te = np.setdiff1d(np.arange(72), tr)
    Xtr, _ = preprocess(X[tr], X[te])
    Xraw = X[tr]  # 36 x 7129 as loaded, for the "no preprocessing" shape check
    ytr = y[tr]
    clf = ARDClassifier().fit(Xtr, ytr)
    t_ard = median_time(lambda: ARDClassifier().fit(Xtr, ytr), args.repeats)
    t_l1 = median_time(lambda: LogisticRegression(l1_ratio=1.0, solver="liblinear", C=1.0)
                       .fit(Xtr, ytr), args.repeats)
    cv = StratifiedKFold(5, shuffle=True, random_state=0)
    t_l1cv = median_time(lambda: GridSearchCV(LogisticRegression(l1_ratio=1.0, solver="liblinear"),
                                              {"C": np.logspace(-2, 2, 9)}, cv=cv).fit(Xtr, ytr),
                         max(1, args.repeats // 2))
    print(f"Leukaemia partition {args.split}: {Xraw.shape[0]} x {Xraw.shape[1]} probes "
          f"({Xtr.shape[1]} vary within the training half), {len(clf.path_)} path steps")
    print("| fit | seconds (median) | ratio to ARD-EP |")
    print("| --- | --- | --- |")
    print(f"| ARD-EP full path (3 criteria) | {t_ard:.3f} | 1.00 |")
    print(f"| L1-logistic, one C | {t_l1:.3f} | {t_l1 / t_ard:.2f} |")
    print(f"| L1-logistic, C by 5-fold CV over 9 values | {t_l1cv:.3f} | {t_l1cv / t_ard:.2f} |")


if __name__ == "__main__":
    main()
