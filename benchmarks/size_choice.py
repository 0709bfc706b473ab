"""Single-cell settings: the five-fold choice, one validation split, and EP's tolerance.

On the same random train/test partitions (a quarter of the cells held out, stratified) of the
shared single-cell data (PBMC 68k reduced, ``.raw``, ``bulk_labels``) and of planted single-cell
data (``scale.make_data``: 2,000 cells x 2,000 genes, six types, five markers each), fits

- ``default``: ``ARDClassifier()`` (five folds; ``ep_tol="auto"``, 1e-3 from 500 samples);
- ``holdout``: ``ARDClassifier(cv="holdout")``, the size chosen on one validation split;
- ``EP-LOO``: the ``default`` fit's model at each class's size (of the path and its pruning
  tail) of lowest EP leave-one-out log-loss, uncalibrated: a choice that costs no path beyond
  the final one;
- with ``--reference``, ``ep_tol 1e-5``: ``ARDClassifier(ep_tol=1e-5)``, the tight tolerance of
  small sets on every size;

scores the held-out cells and prints per method the multi-class log-loss, error, macro-F1, genes
per class (median over classes) and fit seconds (same process, two threads), with the paired
difference of log-loss and error against ``default`` (mean +- standard error over partitions).

Usage: python benchmarks/size_choice.py [--sets pbmc,planted] [--partitions 5] [--reference]
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
from sklearn.metrics import f1_score
from sklearn.model_selection import StratifiedShuffleSplit

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def load(name):
    """``(X, y)`` of a set: dense float log-expression and string labels."""
    if name == "pbmc":
        import anndata as ad

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            a = ad.read_h5ad(SHARED / "pbmc68k_reduced" / "pbmc68k_reduced.h5ad")
        X = a.raw.X
        X = X.toarray() if hasattr(X, "toarray") else np.asarray(X)
        return np.asarray(X, dtype=np.float64), a.obs["bulk_labels"].astype(str).to_numpy()
    if name == "planted":
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from scale import make_data

        X, y, _ = make_data(2000, 2000, 6, 5, 0.05, seed=3)
        return X.toarray(), np.array([f"type{k}" for k in y])
    msg = f"unknown set {name!r}; choose pbmc or planted"
    raise SystemExit(msg)


def methods(reference):
    from ardselect import ARDClassifier

    out = {"default": lambda: ARDClassifier(n_jobs=2),
           "holdout": lambda: ARDClassifier(cv="holdout", n_jobs=2)}
    if reference:
        out["ep_tol 1e-5"] = lambda: ARDClassifier(ep_tol=1e-5, n_jobs=2)
    return out


def loo_choice(clf):
    """The default fit's model at each class's size of lowest EP leave-one-out log-loss.

    The sizes are those of the path and its pruning tail (the frontier's); the model predicts
    with its plain posterior (no calibration: the inner cross-validation is not used).
    """
    import copy

    from ardselect.engine._problem import size_steps

    clf = copy.copy(clf)
    clf._fits = [copy.copy(f) for f in clf._fits]
    steps = []
    for fit in clf._fits:
        sizes = size_steps(fit.steps, clf._icol)
        k = min(sizes, key=lambda s: fit.steps[sizes[s]].stats["loo_log_loss"])
        steps.append(sizes[k])
        fit.step_calibration = {}
    return clf.at_step(np.array(steps))


def score(clf, X, y, sec):
    proba = clf.predict_proba(X)
    pred = clf.classes_[np.argmax(proba, axis=1)]
    idx = np.searchsorted(clf.classes_, y)
    loss = -np.log(np.clip(proba[np.arange(y.size), idx], 1e-15, 1.0))
    genes = np.count_nonzero(clf.coef_, axis=1)
    return {"loss": loss, "wrong": pred != y, "sec": sec, "genes": float(np.median(genes)),
            "f1": f1_score(y, pred, average="macro")}


def run(name, n_partitions, reference):
    X, y = load(name)
    split = StratifiedShuffleSplit(n_splits=n_partitions, test_size=0.25, random_state=0)
    rows = {}
    for p, (tr, te) in enumerate(split.split(X, y)):
        for m, make in methods(reference).items():
            t0 = time.perf_counter()
            clf = make().fit(X[tr], y[tr])
            got = {m: score(clf, X[te], y[te], time.perf_counter() - t0)}
            if m == "default":
                got["EP-LOO"] = score(loo_choice(clf), X[te], y[te], float("nan"))
            for k, r in got.items():
                rows.setdefault(k, []).append(r)
                print(f"  {name} partition {p}: {k:11s} log-loss {r['loss'].mean():.3f} "
                      f"error {r['wrong'].mean():.3f} genes {r['genes']:.0f} {r['sec']:.1f} s",
                      flush=True)
    return rows


def paired(a, b):
    d = np.array(a) - np.array(b)
    return d.mean(), d.std(ddof=1) / np.sqrt(d.size) if d.size > 1 else float("nan")


def table(name, rows):
    print(f"\n### {name}\n")
    print("| method | log-loss | error % | macro-F1 | genes/class | seconds | "
          "log-loss - default | error - default (points) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    ref = rows["default"]
    for m, rs in rows.items():
        ll = [r["loss"].mean() for r in rs]
        er = [100 * r["wrong"].mean() for r in rs]
        dl = paired(ll, [r["loss"].mean() for r in ref])
        de = paired(er, [100 * r["wrong"].mean() for r in ref])
        print(f"| {m} | {np.mean(ll):.3f} | {np.mean(er):.1f} | "
              f"{np.mean([r['f1'] for r in rs]):.3f} | "
              f"{np.mean([r['genes'] for r in rs]):.1f} | {np.mean([r['sec'] for r in rs]):.1f} | "
              f"{dl[0]:+.3f} +- {dl[1]:.3f} | {de[0]:+.1f} +- {de[1]:.1f} |")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default="pbmc,planted")
    ap.add_argument("--partitions", type=int, default=5)
    ap.add_argument("--reference", action="store_true")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    results = {s: run(s, args.partitions, args.reference) for s in args.sets.split(",")}
    for s, rows in results.items():
        table(s, rows)


if __name__ == "__main__":
    main()
