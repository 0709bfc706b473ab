"""Time ARD fits on a 36 x 7129 leukaemia partition, beside L1-logistic regression.

The ARD fit is the whole thing a user runs. The default (``criterion="cv"``): the path from the
starting model to convergence with the three criteria's records, the screened models, and the inner
5-fold cross-validation (one fold path each, ending at its first step without LOO errors). Also
timed: ``criterion="loo"`` (the path alone, the paper's predictive ARD) and the paper's settings. Baselines on the same matrix: one L1-logistic fit
at a fixed C (liblinear) and the same with C chosen by 5-fold CV over 9 values (what a user would
run to get a comparable, tuned signature), and, when it is installed (``pip install
ardselect[bench]``), the C++ SparseBayes relevance-vector classifier of ``fastrvm`` on the linear kernel
(Laplace, Tipping-Faul; note that it selects training samples, not genes). Each timing is the median
of ``--repeats`` runs of process CPU time on one BLAS thread (wall time on a shared machine measures
the other jobs too). The engine's own counts are printed beside: path steps, EP sweeps, full
candidate rescorings and the features scored exactly per step (``ardselect._screening``).

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
        t0 = time.process_time()
        fn()
        times.append(time.process_time() - t0)
    return float(np.median(times))


def engine_counts(X, y, **params):
    """Path steps, EP sweeps, full rescorings and exact scores per step of one fit."""
    import ardselect._sequential as seq
    from ardselect import ARDClassifier

    screens = []
    run = seq.SequentialPath.run

    def counted(self):
        out = run(self)
        screens.append(getattr(self, "screen", None))  # unset when a fold path stops at once
        return out

    seq.SequentialPath.run = counted
    try:
        clf = ARDClassifier(**params).fit(X, y)
    finally:
        seq.SequentialPath.run = run
    steps = int((~clf.path_["action"].isin(["screen", "ml"])).sum())  # the path's own steps
    scr = screens[0]
    exact = scr.n_exact / max(1, steps - 1) if scr is not None else X.shape[1]
    return steps, int(clf.path_["ep_sweeps"].sum()), (scr.n_full if scr else steps), exact


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
    rows = []
    for label, params in (("default (criterion='cv')", {}),
                          ("default without the ML candidate (ml_candidate=False)",
                           {"ml_candidate": False}),
                          ("criterion='loo' (the path alone)", {"criterion": "loo"}),
                          ("alpha_min=1e-2, 100-gene start, criterion='loo' (the paper's)",
                           {"alpha_min": 1e-2, "max_init": 100, "criterion": "loo",
                            "inclusion_penalty": 0.0, "intercept_alpha": "ard"})):
        steps, sweeps, full, exact = engine_counts(Xtr, ytr, **params)
        t = median_time(lambda p=params: ARDClassifier(**p).fit(Xtr, ytr), args.repeats)
        rows.append((f"ARD-EP {label}: full path {steps} steps, {sweeps} EP sweeps, {full} full "
                     f"rescorings, {exact:.0f} of {Xtr.shape[1]} genes scored exactly per step", t))
    t_ard = rows[0][1]
    rows.append(("L1-logistic, one C (liblinear)", median_time(
        lambda: LogisticRegression(l1_ratio=1.0, solver="liblinear", C=1.0).fit(Xtr, ytr),
        args.repeats)))
    cv = StratifiedKFold(5, shuffle=True, random_state=0)
    rows.append(("L1-logistic, C by 5-fold CV over 9 values", median_time(
        lambda: GridSearchCV(LogisticRegression(l1_ratio=1.0, solver="liblinear"),
                             {"C": np.logspace(-2, 2, 9)}, cv=cv).fit(Xtr, ytr),
        max(1, args.repeats // 2))))
    try:
        import fastrvm
    except ImportError:
        fastrvm = None
    if fastrvm is not None:
        rows.append(("fastrvm RVC, linear kernel (C++ SparseBayes, Laplace; selects samples)",
                     median_time(lambda: fastrvm.RVC(kernel="linear", fit_intercept=True)
                                 .fit(Xtr, ytr), args.repeats)))
    print(f"Leukaemia partition {args.split}: {Xraw.shape[0]} x {Xraw.shape[1]} probes "
          f"({Xtr.shape[1]} vary within the training half); CPU seconds, median of {args.repeats}")
    print("| fit | seconds | ratio to ARD-EP default |")
    print("| --- | --- | --- |")
    for label, t in rows:
        print(f"| {label} | {t:.3f} | {t / t_ard:.2f} |")


if __name__ == "__main__":
    main()
