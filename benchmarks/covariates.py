"""Known covariates held fixed: is a gene that only follows the batch kept out of the signature.

Simulated samples (seeded): two batches, the class confounded with the batch (``--confounding``,
the share of samples whose class equals their batch), ``--genes`` standard normal genes of which 5
mark the class (a shift of 1.2 sd, up or down) and 3 follow the batch only (a shift of 2 sd). The
batch genes carry class information only through the confounding: a selector that does not know
the batch picks them as markers. Each replicate fits on ``--samples`` samples and scores 1000
held-out samples drawn the same way (the batch known for each).

Methods, each on the same genes standardised on the training part:

* ``ARD``: the default ``ARDClassifier``, genes only;
* ``ARD + batch``: the same with the batch held in every model (``fit(X, y, covariates=batch)``;
  ``ardselect fit --covariates batch``);
* ``L1``: scikit-learn's L1-logistic regression (C over 10^-2..10^2 by 5-fold CV log-loss), genes
  only;
* ``L1 + batch (scaled)``: scikit-learn penalises every column alike, so the batch column is
  scaled up (x 1000) to make its penalty negligible, as glmnet's ``penalty.factor = 0`` would
  leave it unpenalised;
* ``L1 + batch (regressed)``: the batch regressed out of every gene first (on the training
  part; the same coefficients applied to the test sets), then the scaled batch column added.

Printed per method (mean +- s.e. over the replicates): how often any batch gene is selected,
markers recovered (of 5), genes selected, and the held-out error.

Usage:
    python benchmarks/covariates.py [--replicates 10] [--samples 150] [--genes 500]
                                    [--confounding 0.8]
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

N_MARKERS, N_BATCH = 5, 3
MARKER_SHIFT, BATCH_SHIFT = 1.2, 2.0
N_TEST = 1000
#: Scale of the batch column given to L1-logistic: its penalty becomes negligible.
UNPENALISED = 1000.0


def simulate(rng, n, n_genes, confounding):
    """``(X, y, batch)``: genes 0-4 mark the class, genes 5-7 follow the batch only."""
    batch = rng.integers(0, 2, n)
    y = np.where(rng.random(n) < confounding, batch, 1 - batch)
    X = rng.normal(size=(n, n_genes))
    signs = np.array([1.0, -1.0, 1.0, -1.0, 1.0])
    X[:, :N_MARKERS] += MARKER_SHIFT * signs * y[:, None]
    X[:, N_MARKERS:N_MARKERS + N_BATCH] += BATCH_SHIFT * batch[:, None]
    return X, y, batch.astype(np.float64)


def l1_model(random_state):
    from sklearn.linear_model import LogisticRegressionCV

    return LogisticRegressionCV(Cs=np.logspace(-2, 2, 9), cv=5, penalty="l1",
                                solver="liblinear", scoring="neg_log_loss",
                                random_state=random_state)


def one_replicate(seed, n, n_genes, confounding):
    from ardselect import ARDClassifier

    rng = np.random.default_rng(seed)
    X, y, b = simulate(rng, n, n_genes, confounding)
    tests = {"same": simulate(rng, N_TEST, n_genes, confounding)}
    mean, sd = X.mean(axis=0), X.std(axis=0)

    def z(M):
        return (M - mean) / sd

    rows = []

    def record(method, genes, errors, seconds):
        genes = np.asarray(genes)
        rows.append({"seed": seed, "method": method,
                     "batch_gene": bool(np.any((genes >= N_MARKERS)
                                               & (genes < N_MARKERS + N_BATCH))),
                     "markers": int(np.sum(genes < N_MARKERS)), "genes": genes.size,
                     "error": errors["same"],
                     "seconds": seconds})

    for name, held in (("ARD", False), ("ARD + batch", True)):
        t0 = time.perf_counter()
        kw = {"covariates": b} if held else {}
        clf = ARDClassifier().fit(z(X), y, **kw)
        errors = {k: float(np.mean(clf.predict(z(Xt), **({"covariates": bt} if held else {}))
                                   != yt)) for k, (Xt, yt, bt) in tests.items()}
        record(name, np.flatnonzero(clf.get_support()), errors, time.perf_counter() - t0)

    # L1-logistic: genes only, the batch scaled up, and the batch regressed out first.
    bc = b - b.mean()
    coef = (z(X).T @ bc) / (bc @ bc)  # (p,) each gene's regression on the centred batch

    def residual(M, bt):
        return z(M) - np.outer(bt - b.mean(), coef)

    variants = {
        "L1": (lambda M, bt: z(M), False),
        "L1 + batch (scaled)": (lambda M, bt: z(M), True),
        "L1 + batch (regressed)": (residual, True),
    }
    for name, (design, with_batch) in variants.items():
        t0 = time.perf_counter()

        def full(M, bt, design=design, with_batch=with_batch):
            D = design(M, bt)
            return np.column_stack([D, UNPENALISED * (bt - b.mean())]) if with_batch else D

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = l1_model(seed).fit(full(X, b), y)
        errors = {k: float(np.mean(model.predict(full(Xt, bt)) != yt))
                  for k, (Xt, yt, bt) in tests.items()}
        genes = np.flatnonzero(model.coef_[0][:n_genes] != 0)
        record(name, genes, errors, time.perf_counter() - t0)
    return rows


def summary(frame):
    def pm(col, scale=1.0, fmt="{:.1f}"):
        g = frame.groupby("method", sort=False)[col]
        m, s = g.mean() * scale, g.std(ddof=1) / np.sqrt(g.count()) * scale
        return [f"{fmt.format(a)} ± {fmt.format(c)}" for a, c in zip(m, s, strict=True)]

    methods = list(dict.fromkeys(frame["method"]))
    return pd.DataFrame({
        "method": methods,
        "batch gene selected": [f"{int(v)}/{int(c)}" for v, c in zip(
            frame.groupby("method", sort=False)["batch_gene"].sum(),
            frame.groupby("method", sort=False)["batch_gene"].count(), strict=True)],
        "markers (of 5)": pm("markers"),
        "genes": pm("genes"),
        "held-out error %": pm("error", 100.0),
    })


def markdown(table):
    """A DataFrame as a Markdown table (no extra dependency)."""
    lines = ["| " + " | ".join(table.columns) + " |",
             "|" + "|".join(" --- " for _ in table.columns) + "|"]
    lines += ["| " + " | ".join(map(str, row)) + " |" for row in table.itertuples(index=False)]
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=10)
    parser.add_argument("--samples", type=int, default=150)
    parser.add_argument("--genes", type=int, default=500)
    parser.add_argument("--confounding", type=float, default=0.8)
    args = parser.parse_args()
    rows = []
    for seed in range(args.replicates):
        rows += one_replicate(seed, args.samples, args.genes, args.confounding)
    frame = pd.DataFrame(rows)
    print(f"{args.replicates} replicates, {args.samples} training samples x {args.genes} genes, "
          f"class = batch in {100 * args.confounding:.0f}% of samples; {N_TEST} held-out "
          "samples per test set")
    print(markdown(summary(frame)))
    seconds = frame.groupby("method", sort=False)["seconds"].mean()
    print("mean fit seconds: " + ", ".join(f"{m} {s:.1f}" for m, s in seconds.items()))


if __name__ == "__main__":
    main()
