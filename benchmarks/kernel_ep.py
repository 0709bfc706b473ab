"""Sparse EP kernel classifier (relevance vectors) of Qi et al. (2004), Table 1 and Fig. 6.

``ARDClassifier(kernel="rbf")`` centres a Gaussian basis function ``exp(-||x - x_i||^2 / (2 sigma^2))``
on every training point (plus a bias) and the ARD path selects the relevance vectors; the three criteria
are read off one path per partition. Beside it, on the same partitions: an RBF SVM with the same kernel
and C chosen by 10-fold CV on the training part (as in the paper), and, when available, the Laplace RVM
(``RVMClassifier``, the paper's Seq-ARD-Laplace).

* breast cancer (Zwitter & Soklic; the 277 complete cases, in Raetsch's standardised encoding): 50
  random partitions into 100 training and 177 test points, sigma = 5 (the paper's width).
  Paper: SVM 28.05 +- 0.44 % (64.7 SVs), Seq-ARD-Laplace 27.90 +- 0.34 (3.1), evidence 27.81 +- 0.35
  (3.84), predictive_Prob 27.91 +- 0.37 (8.40), predictive 27.81 +- 0.38 (9.60).
* diabetes (Pima, UCI 768 rows): the paper uses Raetsch's 100 fixed 468/300 partitions, which could not be
  obtained; we draw seeded random stratified 468/300 partitions instead and standardise the inputs on each
  training part. The paper gives no width for this set; we use sigma = sqrt(d) = 2.83 (gamma = 1/(2 d)),
  set once, not tuned on test data. Paper: evidence 23.91 +- 0.21 %, predictive 23.96 +- 0.20 %.

Usage: python benchmarks/kernel_ep.py [--data breast|diabetes|both] [--splits N] [--jobs 2]
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
import pandas as pd
from joblib import Parallel, delayed

#: The precision floor and path tolerance of our reproductions of Qi et al. (2004), which the
#: estimator's defaults (10 and 0.01, chosen for held-out accuracy) differ from.
PAPER_ALPHA_MIN = 1e-2
PAPER_TOL = 1e-5


SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def breast_cancer():
    df = pd.read_csv(SHARED / "raetsch_benchmarks" / "breast_cancer.csv.gz")
    one = df[df.realisation == 1]  # every realisation re-partitions the same 277 rows
    X = one.filter(like="x").to_numpy(float)
    y = (one["label"].to_numpy() > 0).astype(int)
    return X, y


def diabetes():
    df = pd.read_csv(SHARED / "pima_diabetes" / "pima_uci.csv.gz")
    X = df.drop(columns=["uci_row", "label"]).to_numpy(float)
    y = (df["label"] == "pos").to_numpy().astype(int)
    return X, y


SETS = {
    "breast": (breast_cancer, 100, 5.0, 50, "Breast cancer, 100 train / 177 test"),
    "diabetes": (diabetes, 468, None, 100, "Diabetes (Pima), 468 train / 300 test"),
}


def one_split(X, y, train, sigma, with_laplace, init="auto", max_init=100):
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.model_selection import GridSearchCV, StratifiedKFold
    from sklearn.svm import SVC

    from ardselect import ARDClassifier

    warnings.simplefilter("ignore", ConvergenceWarning)
    test = np.setdiff1d(np.arange(len(y)), train)
    mu, sd = X[train].mean(0), X[train].std(0)
    sd[sd == 0] = 1
    Xtr, Xte = (X[train] - mu) / sd, (X[test] - mu) / sd
    ytr, yte = y[train], y[test]
    sigma = np.sqrt(X.shape[1]) if sigma is None else sigma
    gamma = 1.0 / (2 * sigma**2)
    out = {}
    t0 = time.perf_counter()
    clf = ARDClassifier(criterion="loo", kernel="rbf", gamma=gamma, init=init, max_init=max_init,
                        alpha_min=PAPER_ALPHA_MIN, inclusion_penalty=0.0, intercept_alpha="ard",
                        tol=PAPER_TOL).fit(Xtr, ytr)
    out["ep_seconds"] = time.perf_counter() - t0
    for crit in ("loo", "loo-prob", "evidence"):
        m = clf.at_step(clf.choose_step(crit))
        out[f"{crit}_error"] = float(np.mean(m.predict(Xte) != yte))
        out[f"{crit}_size"] = int(np.isfinite(m.alpha_[0]).sum())
    svm = GridSearchCV(SVC(kernel="rbf", gamma=gamma), {"C": np.logspace(-2, 3, 11)},
                       cv=StratifiedKFold(10, shuffle=True, random_state=0)).fit(Xtr, ytr)
    out["svm_error"] = float(np.mean(svm.predict(Xte) != yte))
    out["svm_size"] = int(svm.best_estimator_.support_.size)
    if with_laplace:
        from ardselect import RVMClassifier

        lap = RVMClassifier(kernel="rbf", gamma=gamma).fit(Xtr, ytr)
        out["laplace_error"] = float(np.mean(lap.predict(Xte) != yte))
        out["laplace_size"] = int(np.isfinite(np.asarray(lap.alpha_)).sum())
    return out


def has_laplace():
    try:
        from ardselect import RVMClassifier  # noqa: F401
    except (ImportError, AttributeError):
        return False
    return True


def run(name, n_splits, jobs, seed, init="auto", max_init=100, *, baselines=True):
    from sklearn.model_selection import StratifiedShuffleSplit

    load, n_train, sigma, _, title = SETS[name]
    X, y = load()
    sss = StratifiedShuffleSplit(n_splits=n_splits, train_size=n_train, random_state=seed)
    splits = [np.sort(tr) for tr, _ in sss.split(X, y)]
    lap = has_laplace() and baselines
    t0 = time.perf_counter()
    rows = Parallel(n_jobs=jobs)(delayed(one_split)(X, y, tr, sigma, lap, init, max_init)
                                 for tr in splits)
    wall = time.perf_counter() - t0
    df = pd.DataFrame(rows)
    n = len(df)
    se = lambda v: v.std(ddof=1) / np.sqrt(n)  # noqa: E731
    print(f"{title}: {n} random partitions (seed {seed}), RBF sigma = "
          f"{sigma if sigma is not None else np.sqrt(X.shape[1]):.2f}; ARD start: init={init!r}"
          + (f", max_init={max_init}" if init != "single" and init != "auto" else ""))
    print("| method | test error (%) | relevance / support vectors |")
    print("| --- | --- | --- |")
    names = [("svm", "SVM (C by 10-fold CV)"), ("laplace", "RVMClassifier (Seq-ARD-Laplace)"),
             ("evidence", "ARD-EP, evidence"), ("loo-prob", "ARD-EP, LOO probability"),
             ("loo", "ARD-EP, LOO (predictive)")]
    for key, label in names:
        if f"{key}_error" not in df:
            continue
        e = 100 * df[f"{key}_error"]
        print(f"| {label} | {e.mean():.2f} +- {se(e):.2f} | {df[f'{key}_size'].mean():.2f} |")
    print(f"ARD-EP fit {df.ep_seconds.mean():.2f} s per partition; {wall:.0f} s wall on {jobs} "
          "worker(s)\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", choices=["breast", "diabetes", "both"], default="both")
    ap.add_argument("--splits", type=int, default=None, help="default: the paper's (50 / 100)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--init", default="auto",
                    help="ARD starting model: auto (= single for kernels), single, relevant")
    ap.add_argument("--max-init", type=int, default=100)
    args = ap.parse_args(argv)
    for name in (["breast", "diabetes"] if args.data == "both" else [args.data]):
        run(name, args.splits or SETS[name][3], args.jobs, args.seed, args.init, args.max_init)


if __name__ == "__main__":
    main()
