"""Donor-honest model choice: the inner cross-validation over cells or over whole donors.

Cells of one donor are not independent replicates: a donor's own expression shifts, read from
some of its cells, predict its other cells' labels whenever the cell types are not equally
frequent in every donor. An inner cross-validation over cells rewards genes that carry such donor
signal; one that holds out whole donors (``fit(X, y, groups=donor)``, ``ardselect fit --groups``)
chooses the model for donors it has not seen.

Simulated cells (seeded): ``--donors`` donors of ``--cells`` cells each, two cell types whose share
varies between donors (Beta(2, 2) per donor), ``--genes`` genes of which 5 mark the cell type in
every donor (a shift of 0.8 sd), 40 carry a donor's own shift (sd 1.5), and 20 mark the cell type
in some donors only (a shift of +-1 in a random half of the donors). Every method is scored on the
same partitions, each holding out a fifth of the donors whole (:func:`evaluate` with ``groups``):

* ``ARD-EP (donors)``: the default model, its inner cross-validation holding out donors;
* ``ARD-EP (cells)``: the same, its inner cross-validation over cells (``inner_groups=False``);
* ``L1-logistic``: scikit-learn's L1 logistic regression with C chosen by an inner CV over cells
  (its grid search takes no groups here, as a user would run it).

Printed: held-out error, genes, log-loss and ECE per method, the paired difference of the donor
choice against the cell choice (mean +- s.e. over the partitions), and how many of the chosen
genes are true markers, donor genes and donor-specific markers.

Usage:
    python benchmarks/donors.py [--replicates 5] [--splits 10] [--donors 10] [--cells 60]
                                [--genes 300] [--jobs 2]
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np
import pandas as pd

N_MARKERS, N_DONOR, N_PARTIAL = 5, 40, 20


def simulate(seed, n_donors, cells, n_genes):
    """``(X, y, donors, kind)``: cells x genes, labels, donor of each cell, each gene's kind."""
    rng = np.random.default_rng(seed)
    n = n_donors * cells
    donors = np.repeat(np.arange(n_donors), cells)
    share = rng.beta(2.0, 2.0, size=n_donors)
    y = (rng.random(n) < share[donors]).astype(int)
    X = rng.normal(size=(n, n_genes))
    X[:, :N_MARKERS] += 0.8 * y[:, None]
    d0, d1 = N_MARKERS, N_MARKERS + N_DONOR
    X[:, d0:d1] += rng.normal(scale=1.5, size=(n_donors, N_DONOR))[donors]
    p0, p1 = d1, d1 + N_PARTIAL
    active = rng.random((n_donors, N_PARTIAL)) < 0.5
    sign = rng.choice([-1.0, 1.0], size=(n_donors, N_PARTIAL))
    X[:, p0:p1] += (active * sign)[donors] * y[:, None]
    kind = np.array(["marker"] * N_MARKERS + ["donor"] * N_DONOR + ["partial"] * N_PARTIAL
                    + ["noise"] * (n_genes - p1))
    return X, np.where(y == 1, "T", "B"), np.array([f"donor{d}" for d in donors]), kind


def main(argv=None):
    from ardselect import ARDClassifier
    from ardselect.model_selection import baselines, evaluate, paired_difference, summarize

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replicates", type=int, default=5, help="simulated data sets")
    ap.add_argument("--splits", type=int, default=10, help="partitions per data set")
    ap.add_argument("--donors", type=int, default=10)
    ap.add_argument("--cells", type=int, default=60, help="cells per donor")
    ap.add_argument("--genes", type=int, default=300)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    results, selections = [], []
    for rep in range(args.replicates):
        X, y, donors, kind = simulate(rep, args.donors, args.cells, args.genes)
        common = {"groups": donors, "n_splits": args.splits, "train_size": 0.8,
                  "random_state": rep, "n_jobs": args.jobs, "return_selection": True}
        for methods, inner in (
                ({"ARD-EP (donors)": ARDClassifier()}, True),
                ({"ARD-EP (cells)": ARDClassifier(),
                  "L1-logistic": baselines(rep)["L1-logistic"]}, False)):
            res, pred, sel = evaluate(X, y, methods, inner_groups=inner, **common)
            res["split"] = res["split"] + 1000 * rep  # paired across methods, distinct per set
            results.append((res, pred.assign(split=pred["split"] + 1000 * rep)))
            for (_, method), row in sel.iterrows():
                chosen = kind[row.to_numpy()]
                selections.append({"method": method, "marker": np.sum(chosen == "marker"),
                                    "donor": np.sum(chosen == "donor"),
                                    "partial": np.sum(chosen == "partial"),
                                    "noise": np.sum(chosen == "noise")})
    res = pd.concat([r for r, _ in results], ignore_index=True)
    pred = pd.concat([p for _, p in results], ignore_index=True)
    s = summarize(res, pred).set_index("method")
    d = paired_difference(res, "ARD-EP (cells)").set_index("method")
    genes = pd.DataFrame(selections).groupby("method").mean()
    print(f"{args.replicates} simulated sets x {args.splits} partitions; {args.donors} donors x "
          f"{args.cells} cells, {args.genes} genes; a fifth of the donors held out whole\n")
    print("| method | error % | genes | markers (of 5) | donor genes | partial markers | noise "
          "| log-loss | ECE | d error % vs cells | d log-loss vs cells |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for m, r in s.iterrows():
        de = dl = ""
        if m in d.index and m != "ARD-EP (cells)":
            de = f"{100 * d.loc[m, 'd_error_rate']:+.1f} +- {100 * d.loc[m, 'd_error_rate_se']:.1f}"
            dl = f"{d.loc[m, 'd_log_loss']:+.3f} +- {d.loc[m, 'd_log_loss_se']:.3f}"
        g = genes.loc[m]
        print(f"| {m} | {100 * r.error_rate_mean:.1f} +- {100 * r.error_rate_se:.1f} | "
              f"{r.genes_mean:.1f} | {g.marker:.1f} | {g.donor:.1f} | {g.partial:.1f} | "
              f"{g.noise:.1f} | {r.log_loss_mean:.3f} | {r.ece:.3f} | {de} | {dl} |")
    print(f"\nwall: {time.perf_counter() - t0:.0f} s on {args.jobs} worker(s)")


if __name__ == "__main__":
    main()
