"""The small-study rule ``cv_rule="min+paper"`` against the default ``cv_rule="min"``, paired.

On every shared expression set (``benchmarks/accuracy.py``'s data, preprocessing and seeded
partitions: two thirds train, one third test) both are fitted on each training part and scored on
its test part; the paired differences (``min+paper`` minus ``min``) of test error and log-loss are
averaged over partitions with their standard errors, beside the genes of each and the ratio of
their CPU fit times (``time.process_time``, one thread each). ``rule`` counts the binary problems
where the paper-settings LOO model won the inner cross-validation. Sets with 500 training samples
or more are fitted with the default only (the rule does not apply there, and both are the same
fit).

``--synthetic N`` runs instead the paper's synthetic problem (``benchmarks/synthetic.py``: 30
training and 5000 test points, 200 features, 10 relevant) for ``N`` repetitions.

Usage: python benchmarks/small_n.py [--datasets golub_leukemia,...] [--splits 20] [--jobs 2]
                                    [--synthetic 50]
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np
import pandas as pd
from joblib import Parallel, delayed


def _pair(Xtr, ytr, Xte, yte, classes):
    from ardselect import ARDClassifier
    from ardselect.estimators._cv import SMALL_N

    out = {}
    rules = {"min": {}} if Xtr.shape[0] >= SMALL_N else {"min": {}, "min+paper": {}}
    for rule in rules:
        clf = ARDClassifier(cv_rule=rule, constant_features="ignore", n_jobs=1)
        t0 = time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            clf.fit(Xtr, ytr)
        seconds = time.process_time() - t0
        proba = clf.predict_proba(Xte)
        idx = np.searchsorted(classes, yte)
        out[rule] = {"error": float(np.mean(classes[np.argmax(proba, axis=1)] != yte)),
                     "log_loss": float(-np.mean(np.log(np.clip(proba[np.arange(yte.size), idx],
                                                               1e-15, 1.0)))),
                     "genes": int(clf.get_support().sum()), "seconds": seconds,
                     "loo_won": (int((clf.cv_choice_["rule"] == "loo").sum())
                                 if hasattr(clf, "cv_choice_") else 0),
                     "problems": len(clf.coef_)}
    return out


def _split(name, train, test):
    from accuracy import DATASETS, LOWDIM, load

    from ardselect.preprocessing import Preprocessor

    X, y, _ = load(name)
    pre = Preprocessor(**{**DATASETS, **LOWDIM}[name]).fit(X[train])
    classes = np.unique(y[train])
    return _pair(pre.transform(X[train]), y[train], pre.transform(X[test]), y[test], classes)


def _synthetic(seed):
    from synthetic import draw

    rng = np.random.default_rng(seed)
    X, y, Xt, yt, _ = draw(rng)
    while np.unique(y).size < 2:
        X, y, Xt, yt, _ = draw(rng)
    return _pair(X, y, Xt, yt, np.array([0, 1]))


def summary(rows):
    """One row of paired differences (``min+paper`` minus ``min``) from the per-split results."""
    n = len(rows)
    se = lambda v: float(np.std(v, ddof=1) / np.sqrt(n))  # noqa: E731
    a = pd.DataFrame([r["min"] for r in rows])
    if "min+paper" not in rows[0]:
        return {"n": n, "error_min": a.error.mean(), "genes_min": a.genes.mean(),
                "seconds_min": a.seconds.mean()}
    b = pd.DataFrame([r["min+paper"] for r in rows])
    de, dl = b.error - a.error, b.log_loss - a.log_loss
    return {"n": n, "error_min": a.error.mean(), "error_paper": b.error.mean(),
            "d_error": de.mean(), "d_error_se": se(de), "d_log_loss": dl.mean(),
            "d_log_loss_se": se(dl), "genes_min": a.genes.mean(), "genes_paper": b.genes.mean(),
            "time_ratio": b.seconds.sum() / a.seconds.sum(),
            "loo_won": f"{int(b.loo_won.sum())}/{int(b.problems.sum())}"}


def main(argv=None):
    from accuracy import DATASETS, load

    from ardselect.model_selection import partitions

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", default=",".join(DATASETS))
    ap.add_argument("--splits", type=int, default=20)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--synthetic", type=int, default=0, help="repetitions of the synthetic problem")
    args = ap.parse_args(argv)
    pool = Parallel(n_jobs=args.jobs)
    if args.synthetic:
        seeds = np.random.SeedSequence(args.seed).generate_state(args.synthetic)
        rows = pool(delayed(_synthetic)(int(s)) for s in seeds)
        print(pd.DataFrame([{"data": "synthetic", **summary(rows)}]).to_string(index=False))
        return
    out = []
    for name in args.datasets.split(","):
        _, y, _ = load(name)
        parts = partitions(y, n_splits=args.splits, train_size=2 / 3, random_state=args.seed)
        rows = pool(delayed(_split)(name, tr, te) for tr, te in parts)
        out.append({"data": name, **summary(rows)})
        print(pd.DataFrame([out[-1]]).to_string(index=False), flush=True)
    print(pd.DataFrame(out).to_string(index=False, float_format=lambda v: f"{v:.4f}"))


if __name__ == "__main__":
    main()
