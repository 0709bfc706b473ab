"""Wall time of a default fit on PBMC 68k reduced beside L1-logistic with its cross-validation.

PBMC 68k reduced (``../shared/data/pbmc68k_reduced``), ``raw.X`` (765 genes, log-normalised),
label ``bulk_labels`` (10 cell types); one stratified split holding out a quarter of the cells
(525 training cells), genes standardised with the training mean and sd. In one process, side by
side and at equal cores: ``ARDClassifier()`` (its defaults, certainty columns included) with
``n_jobs=-1`` (every core: worker processes at this size) and with ``n_jobs=1``, and one-vs-rest
L1-logistic regression with C by 5-fold CV over 9 values (``ardselect.model_selection.baselines``,
``n_jobs=-1``). joblib's worker processes are started before the first timed fit (both methods
use them). Prints each fit's wall seconds, its held-out multi-class log-loss and the ratio to
L1-logistic.

Usage: python benchmarks/single_cell_speed.py [--seed 0]
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

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def main(argv=None):
    import anndata as ad
    from sklearn.metrics import log_loss
    from sklearn.model_selection import StratifiedShuffleSplit

    from ardselect import ARDClassifier
    from ardselect.engine._parallel import PROCESS_MIN_WORK, run_tasks
    from ardselect.engine._problem import ep_tol_for
    from ardselect.model_selection import baselines

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0, help="the split's seed")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    a = ad.read_h5ad(SHARED / "pbmc68k_reduced" / "pbmc68k_reduced.h5ad")
    X = a.raw.X
    X = np.asarray(X.toarray() if hasattr(X, "toarray") else X, dtype=np.float64)
    y = a.obs["bulk_labels"].astype(str).to_numpy()
    split = StratifiedShuffleSplit(1, test_size=0.25, random_state=args.seed)
    train, test = next(split.split(X, y))
    mean, sd = X[train].mean(0), X[train].std(0)
    sd[sd == 0] = 1.0
    Z = (X - mean) / sd
    run_tasks(ep_tol_for, [("auto", 10)] * 4, n_jobs=-1, work=PROCESS_MIN_WORK)  # the workers
    methods = [
        ("L1-logistic, C by 5-fold CV", lambda: baselines(random_state=0)["L1-logistic"]
         .set_params(n_jobs=-1)),
        ("ardselect default, n_jobs=-1", lambda: ARDClassifier(n_jobs=-1)),
        ("ardselect default, n_jobs=1", lambda: ARDClassifier(n_jobs=1)),
    ]
    base = None
    print(f"{len(train)} training cells x {X.shape[1]} genes, {np.unique(y).size} classes, "
          f"{os.cpu_count()} cores")
    print("| fit | wall seconds | x L1 | held-out log-loss |\n| --- | --- | --- | --- |")
    for name, make in methods:
        model = make()
        t0 = time.perf_counter()
        model.fit(Z[train], y[train])
        seconds = time.perf_counter() - t0
        base = base or seconds
        loss = log_loss(y[test], model.predict_proba(Z[test]), labels=model.classes_)
        print(f"| {name} | {seconds:.1f} | {seconds / base:.1f} | {loss:.3f} |", flush=True)


if __name__ == "__main__":
    main()
