"""Cells with donors held out, or one pseudobulk sample per donor and label: which signature.

Simulated counts (seeded): ``--donors`` training donors and half as many new donors, ``--cells``
cells each, two cell types whose share varies between donors (Beta(2, 2) per donor), ``--genes``
genes with a baseline expression drawn per gene (log-normal), a library size per cell
(log-normal), and Poisson counts. 5 genes mark the cell type in every donor (x 1.6 up, or
down), and 40 carry a donor's own shift (log-normal, sd 0.6). Two ways to fit, both with the
inner cross-validation holding out whole donors:

* ``cells``: every cell a sample, counts normalised per cell (log1p of counts per 10,000), fitted
  with ``groups=donor`` (``ardselect fit --groups donor``); scored on the new donors' cells;
* ``pseudobulk``: each donor's cells of one type summed (:func:`ardselect.pseudobulk`, log1p of
  counts per million), fitted with the donors as groups (``ardselect fit --pseudobulk donor``);
  scored on the new donors' pseudobulk samples.

Printed per way (mean +- s.e. over the replicates): samples fitted, genes selected, markers
recovered (of 5), donor genes selected, held-out error on the new donors (per cell, or per
pseudobulk sample) and the fit time.

Usage:
    python benchmarks/pseudobulk.py [--replicates 5] [--donors 12] [--cells 100] [--genes 300]
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np
import pandas as pd
from covariates import markdown  # benchmarks/ is the script's own folder

N_MARKERS, N_DONOR = 5, 40
MARKER_FOLD, DONOR_SD = 1.6, 0.6


def simulate(rng, base, n_donors, cells, first=0):
    """Cells x genes counts of ``n_donors`` donors (named from ``first``) as an AnnData."""
    import anndata as ad

    n_genes = base.size
    share = rng.beta(2.0, 2.0, size=n_donors)
    donors = np.repeat(np.arange(n_donors), cells)
    t_cell = rng.random(donors.size) < share[donors]
    log_mu = np.log(base)[None, :] + np.zeros((donors.size, 1))
    signs = np.array([1.0, -1.0, 1.0, -1.0, 1.0])
    log_mu[:, :N_MARKERS] += np.log(MARKER_FOLD) * signs * t_cell[:, None]
    shift = np.zeros((n_donors, n_genes))
    shift[:, N_MARKERS:N_MARKERS + N_DONOR] = rng.normal(0.0, DONOR_SD, (n_donors, N_DONOR))
    log_mu += shift[donors]
    library = rng.lognormal(0.0, 0.3, size=donors.size)
    counts = rng.poisson(np.exp(log_mu) * library[:, None]).astype(np.float64)
    obs = pd.DataFrame({"cell_type": np.where(t_cell, "T", "B"),
                        "donor": [f"d{first + d}" for d in donors]},
                       index=[f"c{first}_{i}" for i in range(donors.size)])
    adata = ad.AnnData(counts, obs=obs,
                       var=pd.DataFrame(index=[f"g{j}" for j in range(n_genes)]))
    return adata


def per_cell(adata):
    """log1p of counts per 10,000 of each cell, as a copy (the usual single-cell scale)."""
    out = adata.copy()
    out.X = np.log1p(adata.X / adata.X.sum(axis=1, keepdims=True) * 1e4)
    out.uns["log1p"] = {"base": None}
    return out


def scored(fitted, test):
    """``(genes selected, held-out error)`` of a fitted AnnData's model on ``test``."""
    import ardselect

    ranked = ardselect.get.ranked_genes_df(fitted)
    genes = np.array([int(g[1:]) for g in ranked.loc[ranked["selected"], "gene"]])
    pred = ardselect.get.model(fitted).predict(test)
    return genes, float(np.mean(pred != test.obs["cell_type"].to_numpy()))


def one_replicate(seed, n_donors, cells, n_genes):
    import ardselect

    rng = np.random.default_rng(seed)
    base = rng.lognormal(1.0, 1.0, size=n_genes)
    train = simulate(rng, base, n_donors, cells)
    test = simulate(rng, base, max(2, n_donors // 2), cells, first=n_donors)
    rows = []
    ways = {
        "cells (--groups donor)": (per_cell(train), per_cell(test), "donor"),
        "pseudobulk (--pseudobulk donor)": (
            ardselect.pseudobulk(train, "cell_type", "donor"),
            ardselect.pseudobulk(test, "cell_type", "donor"), "donor"),
    }
    for name, (fit_on, score_on, groups) in ways.items():
        t0 = time.perf_counter()
        ardselect.rank_genes(fit_on, "cell_type", groups=groups,
                             preprocessor=ardselect.preprocessing.Preprocessor(log="none"))
        seconds = time.perf_counter() - t0
        genes, error = scored(fit_on, score_on)
        rows.append({"seed": seed, "way": name, "samples": fit_on.n_obs, "genes": genes.size,
                     "markers": int(np.sum(genes < N_MARKERS)),
                     "donor_genes": int(np.sum((genes >= N_MARKERS)
                                               & (genes < N_MARKERS + N_DONOR))),
                     "error": error, "seconds": seconds})
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=5)
    parser.add_argument("--donors", type=int, default=12)
    parser.add_argument("--cells", type=int, default=100)
    parser.add_argument("--genes", type=int, default=300)
    args = parser.parse_args()
    rows = []
    for seed in range(args.replicates):
        rows += one_replicate(seed, args.donors, args.cells, args.genes)
    frame = pd.DataFrame(rows)
    g = frame.groupby("way", sort=False)

    def pm(col, scale=1.0, fmt="{:.1f}"):
        m, s = g[col].mean() * scale, g[col].std(ddof=1) / np.sqrt(g[col].count()) * scale
        return [f"{fmt.format(a)} ± {fmt.format(c)}" for a, c in zip(m, s, strict=True)]

    table = pd.DataFrame({"way": list(dict.fromkeys(frame["way"])), "samples fitted": pm("samples", fmt="{:.0f}"),
                          "genes": pm("genes"), "markers (of 5)": pm("markers"),
                          f"donor genes (of {N_DONOR})": pm("donor_genes"),
                          "held-out error % (new donors)": pm("error", 100.0),
                          "fit seconds": pm("seconds", fmt="{:.0f}")})
    print(f"{args.replicates} replicates, {args.donors} training donors x {args.cells} cells, "
          f"{args.genes} genes; new donors: {max(2, args.donors // 2)}")
    print(markdown(table))


if __name__ == "__main__":
    main()
