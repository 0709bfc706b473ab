"""Reproduce Qi et al. (2004) sec. 4 on the Golub leukaemia data: 100 random 36/36 partitions.

For each partition: ARDClassifier is fitted once and the models the three criteria pick on its path
are scored on the 36 held-out samples; beside them, on the same partitions and preprocessing,
L1-regularised logistic regression (C chosen by 5-fold inner cross-validation on the training half)
and a linear SVM (C chosen the same way).

Preprocessing (per training half, applied to its test half): floor 100, cap 16000, log10 (the
convention of Dudoit, Fridlyand & Speed 2002), then per-gene standardisation with the training mean and
sd; probes constant in the training half are dropped (no other filter: all 7129 probes are candidates).

Paper (Fig. 3b and text): predictive-ARD-EP 2.80 +- 0.18 test errors (513.82 genes), evidence-ARD-EP
3.86 +- 0.14 (2.78 genes).

Usage: python benchmarks/leukaemia.py [--splits 100] [--jobs 2] [--max-init 100] [--out FILE]
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np
import pandas as pd
from joblib import Parallel, delayed

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "golub_leukemia"

#: The precision floor and path tolerance of our reproductions of Qi et al. (2004), which the
#: estimator's defaults (10 and 0.01, chosen for held-out accuracy) differ from.
PAPER_ALPHA_MIN = 1e-2
PAPER_TOL = 1e-5


def load():
    df = pd.read_csv(DATA / "golub_leukemia.csv.gz")
    X = df.iloc[:, 3:].to_numpy(dtype=np.float64)
    y = (df["label"] == "AML").to_numpy().astype(int)
    return X, y


def preprocess(Xtr, Xte):
    f = lambda A: np.log10(np.clip(A, 100, 16000))  # noqa: E731
    Xtr, Xte = f(Xtr), f(Xte)
    mu, sd = Xtr.mean(0), Xtr.std(0)
    keep = sd > 0
    return (Xtr[:, keep] - mu[keep]) / sd[keep], (Xte[:, keep] - mu[keep]) / sd[keep]


def partitions(n_splits, seed=0, n=72, n_train=36):
    rng = np.random.default_rng(seed)
    return [np.sort(rng.permutation(n)[:n_train]) for _ in range(n_splits)]


def run_split(X, y, train, max_init, *, ard_only=False):
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GridSearchCV, StratifiedKFold
    from sklearn.svm import LinearSVC

    from ardselect import ARDClassifier

    warnings.simplefilter("ignore", ConvergenceWarning)
    test = np.setdiff1d(np.arange(len(y)), train)
    Xtr, Xte = preprocess(X[train], X[test])
    ytr, yte = y[train], y[test]
    out = {}
    t0 = time.perf_counter()
    clf = ARDClassifier(criterion="loo", max_init=max_init, alpha_min=PAPER_ALPHA_MIN,
                        inclusion_penalty=0.0, intercept_alpha="ard", tol=PAPER_TOL).fit(Xtr, ytr)
    out["ard_seconds"] = time.perf_counter() - t0
    out["path_steps"] = len(clf.path_)
    for crit in ("loo", "loo-prob", "evidence"):
        m = clf.at_step(clf.choose_step(crit))
        out[f"{crit}_errors"] = int((m.predict(Xte) != yte).sum())
        out[f"{crit}_genes"] = int(m.get_support().sum())
    if ard_only:
        return out
    cv = StratifiedKFold(5, shuffle=True, random_state=0)
    grid = {"C": np.logspace(-2, 2, 9)}
    t0 = time.perf_counter()
    l1 = GridSearchCV(LogisticRegression(l1_ratio=1.0, solver="liblinear"), grid, cv=cv).fit(Xtr, ytr)
    out["l1_seconds"] = time.perf_counter() - t0
    out["l1_errors"] = int((l1.predict(Xte) != yte).sum())
    out["l1_genes"] = int(np.sum(l1.best_estimator_.coef_ != 0))
    t0 = time.perf_counter()
    svm = GridSearchCV(LinearSVC(), {"C": np.logspace(-4, 1, 6)}, cv=cv).fit(Xtr, ytr)
    out["svm_seconds"] = time.perf_counter() - t0
    out["svm_errors"] = int((svm.predict(Xte) != yte).sum())
    out["svm_genes"] = Xtr.shape[1]
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--splits", type=int, default=100)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--max-init", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=None, help="per-split results as TSV")
    ap.add_argument("--ard-only", action="store_true", help="skip the baselines (to time ARD alone)")
    args = ap.parse_args(argv)
    X, y = load()
    splits = partitions(args.splits, args.seed)
    t0 = time.perf_counter()
    rows = Parallel(n_jobs=args.jobs)(delayed(run_split)(X, y, tr, args.max_init, ard_only=args.ard_only)
                                         for tr in splits)
    wall = time.perf_counter() - t0
    df = pd.DataFrame(rows)
    if args.out:
        df.to_csv(args.out, sep="\t", index=False)
    n = len(df)
    se = lambda v: v.std(ddof=1) / np.sqrt(n)  # noqa: E731
    lines = [
        f"Golub leukaemia, {n} random 36/36 partitions (seed {args.seed}), 7129 probes, "
        f"max_init={args.max_init}",
        "| method | test errors (of 36) | genes | paper errors | paper genes |",
        "| --- | --- | --- | --- | --- |",
    ]
    paper = {"loo": ("2.80 +- 0.18", "513.82"), "evidence": ("3.86 +- 0.14", "2.78")}
    names = {"loo": "ARD-EP, LOO (predictive)", "loo-prob": "ARD-EP, LOO probability",
             "evidence": "ARD-EP, evidence", "l1": "L1-logistic (inner 5-fold CV)",
             "svm": "linear SVM (inner 5-fold CV)"}
    for key in ("loo", "loo-prob", "evidence") + (() if args.ard_only else ("l1", "svm")):
        e = df[f"{key}_errors"]
        g = df[f"{key}_genes"]
        pe, pg = paper.get(key, ("", ""))
        lines.append(f"| {names[key]} | {e.mean():.2f} +- {se(e):.2f} | {g.mean():.1f} | {pe} | {pg} |")
    lines.append("")
    timing = (f"ARD-EP full-path fit: {df.ard_seconds.mean():.3f} s per partition (mean), "
              f"{df.path_steps.mean():.0f} path steps")
    if not args.ard_only:
        timing += (f"; L1-logistic with its CV: {df.l1_seconds.mean():.3f} s; linear SVM with its "
                   f"CV: {df.svm_seconds.mean():.3f} s")
    lines.append(timing)
    lines.append(f"whole reproduction: {wall:.1f} s wall on {args.jobs} worker(s)")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
