"""Time ARD fits on a 36 x 7129 leukaemia partition, beside L1-logistic regression.

The ARD fit is the whole thing a user runs. The default (``criterion="cv"``): the path from the
starting model to convergence with the three criteria's records, its pruning tail down to one gene,
and the inner 5-fold cross-validation (the same path and tail refitted on each fold). Also timed:
``criterion="loo"`` (the path alone, the paper's predictive ARD) and the paper's settings.
Baselines on the same matrix: one L1-logistic fit
at a fixed C (liblinear) and the same with C chosen by 5-fold CV over 9 values (what a user would
run to get a comparable, tuned signature), and, when it is installed (``pip install
ardselect[bench]``), the C++ SparseBayes relevance-vector classifier of ``fastrvm`` on the linear kernel
(Laplace, Tipping-Faul; note that it selects training samples, not genes). Each timing is the median
of ``--repeats`` runs of process CPU time on one BLAS thread (wall time on a shared machine measures
the other jobs too). The engine's own counts are printed beside: path steps, EP sweeps, full
candidate rescorings and the features scored exactly per step (``ardselect.engine._screening``).

The default fit is also timed with the EP sweeps in the numpy/BLAS loop instead of the compiled one
(``ardselect.numerics._ep.KERNEL_MAX_WORK = -1``), what the compiled loop saves. ``--ep-kernel``
prints instead, for EP runs of growing size, the compiled loop's time beside the BLAS loop's on the
same problem: the measurement behind ``KERNEL_MAX_WORK``, the work (``m^2 n``) up to which a design
goes to the compiled loop.

Usage: python benchmarks/speed.py [--repeats 5] [--split 0] [--ep-kernel]
"""

from __future__ import annotations

import argparse
import contextlib
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


def _warm_up():
    """A tiny problem whose fit compiles the EP loop (or loads it from numba's cache)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 5))
    return X, (X[:, 0] > 0).astype(int)


def median_time(fn, repeats):
    times = []
    for _ in range(repeats):
        t0 = time.process_time()
        fn()
        times.append(time.process_time() - t0)
    return float(np.median(times))


def engine_counts(X, y, **params):
    """Path steps, EP sweeps, full rescorings and exact scores per step of one fit."""
    import ardselect.engine._sequential as seq
    from ardselect import ARDClassifier

    screens = []
    run = seq.SequentialPath.run

    def counted(self):
        out = run(self)
        screens.append(getattr(self, "screen", None))
        return out

    seq.SequentialPath.run = counted
    try:
        clf = ARDClassifier(**params).fit(X, y)
    finally:
        seq.SequentialPath.run = run
    steps = int(clf._fits[0].n_path)  # the path's own steps (its pruning tail follows them)
    scr = screens[0]
    exact = scr.n_exact / max(1, steps - 1) if scr is not None else X.shape[1]
    return steps, int(clf.path_["ep_sweeps"].sum()), (scr.n_full if scr else steps), exact


@contextlib.contextmanager
def ep_kernel_limit(limit):
    """EP runs of work up to ``limit`` in the compiled loop (-1: none; the engine before it)."""
    import ardselect.numerics._ep as ep

    saved, ep.KERNEL_MAX_WORK = ep.KERNEL_MAX_WORK, limit
    try:
        yield
    finally:
        ep.KERNEL_MAX_WORK = saved


def numpy_ep_loop(fn):
    """``fn()`` with every EP run in the numpy/BLAS loop instead of the compiled one."""

    def run():
        with ep_kernel_limit(-1):
            return fn()

    return run


def ep_kernel_table(repeats):
    """Compiled against BLAS loop, per EP run to convergence, on random probit designs."""
    import ardselect.numerics._ep as ep

    rng = np.random.default_rng(0)
    print("EP to convergence (ep_tol 1e-5), milliseconds, best of", repeats)
    print("| samples n | weights d | work m^2 n | sweeps | compiled | BLAS loop | BLAS / compiled |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for n, d in [(36, 10), (36, 36), (36, 200), (46, 400), (58, 400), (100, 20), (100, 31),
                 (100, 60), (200, 22), (466, 14), (466, 40), (466, 100)]:
        X = rng.normal(size=(n, d))
        w = rng.normal(size=d) * (rng.random(d) < 0.3)
        P = np.sign(X @ w + 0.5 * rng.normal(size=n) + 1e-9)[:, None] * X
        alpha = np.ones(d)
        times = {}
        for limit in (10**15, -1):
            best = np.inf
            with ep_kernel_limit(limit):
                for _ in range(repeats):
                    t0 = time.perf_counter()
                    st = ep.run_ep(P, alpha, tol=1e-5)
                    best = min(best, time.perf_counter() - t0)
            times[limit] = best
        m = min(n, d)
        print(f"| {n} | {d} | {m * m * n:,} | {st.n_iter} | {1e3 * times[10**15]:.2f} | "
              f"{1e3 * times[-1]:.2f} | {times[-1] / times[10**15]:.2f} |")


def main(argv=None):
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GridSearchCV, StratifiedKFold

    from ardselect import ARDClassifier

    warnings.simplefilter("ignore", ConvergenceWarning)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--split", type=int, default=0)
    ap.add_argument("--ep-kernel", action="store_true",
                    help="time the compiled EP loop against the BLAS loop by problem size")
    args = ap.parse_args(argv)
    if args.ep_kernel:
        ARDClassifier().fit(*_warm_up())  # compile (or load) the loop before timing
        ep_kernel_table(args.repeats)
        return
    X, y = load()
    tr = partitions(args.split + 1)[args.split]
    te = np.setdiff1d(np.arange(72), tr)
    Xtr, _ = preprocess(X[tr], X[te])
    Xraw = X[tr]  # 36 x 7129 as loaded, for the "no preprocessing" shape check
    ytr = y[tr]
    rows = []
    for label, params in (("default (criterion='cv')", {}),
                          ("criterion='loo' (the path alone)", {"criterion": "loo"}),
                          ("alpha_min=1e-2, 100-gene start, criterion='loo' (the paper's)",
                           {"alpha_min": 1e-2, "max_init": 100, "criterion": "loo",
                            "inclusion_penalty": 0.0, "intercept_alpha": "ard"})):
        steps, sweeps, full, exact = engine_counts(Xtr, ytr, **params)
        t = median_time(lambda p=params: ARDClassifier(**p).fit(Xtr, ytr), args.repeats)
        rows.append((f"ARD-EP {label}: full path {steps} steps, {sweeps} EP sweeps, {full} full "
                     f"rescorings, {exact:.0f} of {Xtr.shape[1]} genes scored exactly per step", t))
    t_ard = rows[0][1]
    rows.insert(1, ("ARD-EP default without the certainty columns (certainty=False)",
                    median_time(lambda: ARDClassifier(certainty=False).fit(Xtr, ytr),
                                args.repeats)))
    rows.insert(1, ("ARD-EP default with the EP sweeps in numpy/BLAS instead of the compiled "
                    "loop", median_time(numpy_ep_loop(lambda: ARDClassifier().fit(Xtr, ytr)),
                                         args.repeats)))
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
