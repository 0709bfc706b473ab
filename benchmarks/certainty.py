"""One-fit certainty of each gene against bootstrap selection frequencies, on the shared microarray sets.

The question: is a gene's posterior inclusion probability (``pip``) from *one* ARD-EP fit a fair
stand-in for what people compute by refitting hundreds of times, its selection frequency across
bootstrap resamples? For each two-class shared data set:

1. the data are preprocessed (``accuracy.DATASETS``: floor / cap / log, constant genes dropped,
   standardised) and ``ARDClassifier()`` is fitted once on all samples: ``pip``, ``log_bf``;
2. ``--boots`` stratified bootstrap resamples (samples drawn with replacement within each class,
   seeded) are each preprocessed and fitted the same way; a gene's frequency is the fraction of
   resamples whose chosen model contains it.

Printed per data set: genes selected on all samples; Spearman correlation of ``pip`` and the
frequency over the genes that either ranks (``pip > 0.5`` or selected in some resample), and over
the full fit's selected genes; the same for the one-gene ``log_bf_marginal``; the mean frequency
within bins of ``pip``; and the overlap of the top genes by each. The figure (``--out``, default
``docs/figures/certainty_bootstrap.png``, shown in the README) plots the frequency against ``pip``
(top row) and against ``log_bf_marginal`` (bottom row) per data set.

Usage:
    python benchmarks/certainty.py [--datasets golub_leukemia,...] [--boots 50] [--jobs 2] [--out PNG]
                                   [--save RESULTS.npz | --load RESULTS.npz]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from accuracy import DATASETS, load  # noqa: E402  (the shared loaders and preprocessing rules)

BINARY = ("golub_leukemia", "west_breast_er", "shipp_dlbcl_fl", "borovecki_huntington")
BINS = (0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0 + 1e-12)


def fit_once(X, y, pre_kwargs):
    """Preprocess and fit on (X, y); returns (kept input columns, ranked table)."""
    import warnings

    from ardselect import ARDClassifier
    from ardselect.preprocessing import Preprocessor

    pre = Preprocessor(**pre_kwargs).fit(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # path notes (max_steps) do not change the comparison
        clf = ARDClassifier(criterion="loo", inclusion_penalty=0.0, intercept_alpha="ard", constant_features="ignore").fit(pre.transform(X), y)
    return np.flatnonzero(pre.keep_), clf


def selected_genes(X, y, pre_kwargs, idx):
    cols, clf = fit_once(X[idx], y[idx], pre_kwargs)
    return cols[clf.get_support()]


def bootstrap_indices(y, n_boots, seed):
    """Stratified bootstrap: each resample draws every class's samples with replacement."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n_boots):
        parts = [rng.choice(np.flatnonzero(y == c), size=int(np.sum(y == c)), replace=True)
                 for c in np.unique(y)]
        out.append(np.sort(np.concatenate(parts)))
    return out


def compare(name, n_boots=50, jobs=2, seed=0):
    """Full-fit certainty and bootstrap frequency per gene of one data set."""
    from joblib import Parallel, delayed

    X, y, _ = load(name)
    pre_kwargs = DATASETS[name]
    t0 = time.perf_counter()
    cols, clf = fit_once(X, y, pre_kwargs)
    table = clf.ranked_features()
    gene_col = {f"x{j}": c for j, c in enumerate(cols)}
    pip = np.zeros(X.shape[1])
    log_bf = np.full(X.shape[1], np.nan)
    marginal = np.full(X.shape[1], -np.inf)
    where = np.array([gene_col[f] for f in table["feature"]])
    pip[where] = table["pip"].to_numpy()
    log_bf[where] = table["log_bf"].to_numpy()
    marginal[where] = table["log_bf_marginal"].to_numpy()
    chosen = np.zeros(X.shape[1], dtype=bool)
    chosen[where[table["selected"].to_numpy()]] = True
    boots = Parallel(n_jobs=jobs)(delayed(selected_genes)(X, y, pre_kwargs, idx)
                                  for idx in bootstrap_indices(y, n_boots, seed))
    freq = np.zeros(X.shape[1])
    for sel in boots:
        freq[sel] += 1.0 / n_boots
    return {"name": name, "boots": n_boots, "pip": pip, "log_bf": log_bf, "marginal": marginal, "freq": freq,
            "chosen": chosen,
            "seconds": time.perf_counter() - t0, "n": X.shape[0], "p": X.shape[1]}


def summary(r):
    from scipy.stats import spearmanr

    pip, freq, chosen = r["pip"], r["freq"], r["chosen"]
    either = (pip > 0.5) | (freq > 0)
    lines = [f"{r['name']} ({r['n']} x {r['p']}): {int(chosen.sum())} genes selected on all "
             f"samples; {int((freq > 0).sum())} ever selected in a resample; {r['seconds']:.0f} s"]
    rho_e = spearmanr(pip[either], freq[either]).statistic
    rho_c = spearmanr(pip[chosen], freq[chosen]).statistic if chosen.sum() > 2 else float("nan")
    lines.append(f"  Spearman(pip, frequency): {rho_e:.2f} over {int(either.sum())} genes that "
                 f"either ranks; {rho_c:.2f} over the selected genes")
    m = r["marginal"]
    rho_m = spearmanr(m[either], freq[either]).statistic
    rho_mc = spearmanr(m[chosen], freq[chosen]).statistic if chosen.sum() > 2 else float("nan")
    lines.append(f"  Spearman(log_bf_marginal, frequency): {rho_m:.2f} over the same genes; "
                 f"{rho_mc:.2f} over the selected genes")
    idx = np.digitize(pip, BINS) - 1
    cells = []
    for b in range(len(BINS) - 1):
        m = idx == b
        if m.any():
            cells.append(f"[{BINS[b]:.1f}, {min(BINS[b + 1], 1):.1f}): {freq[m].mean():.2f} "
                         f"({int(m.sum())})")
    lines.append("  mean frequency by pip bin (genes): " + "; ".join(cells))
    k = max(int(chosen.sum()), 1)
    top_pip = set(np.argsort(-pip, kind="stable")[:k])
    top_freq = set(np.argsort(-freq, kind="stable")[:k])
    lines.append(f"  top {k} by pip and by frequency share {len(top_pip & top_freq)} genes; "
                 f"frequency of the selected genes: mean {freq[chosen].mean():.2f}, "
                 f"{int((freq[chosen] >= 0.5).sum())} of {k} at >= 0.5")
    return "\n".join(lines)


def figure(results, path):
    from matplotlib.figure import Figure

    from ardselect.pl import save_png

    n = len(results)
    fig = Figure(figsize=(3.6 * n, 7.2))
    axes = fig.subplots(2, n, squeeze=False)
    rng = np.random.default_rng(0)
    for k, r in enumerate(results):
        pip, freq, chosen, marg = r["pip"], r["freq"], r["chosen"], r["marginal"]
        show = (pip > 0.02) | (freq > 0)
        jitter = rng.uniform(-0.006, 0.006, size=show.sum())
        colors = np.where(chosen[show], "C0", "0.55")
        ax = axes[0, k]
        ax.scatter(pip[show], freq[show] + jitter, s=6, alpha=0.35, c=colors, linewidths=0)
        idx = np.digitize(pip, BINS) - 1
        xs, ys = [], []
        for b in range(len(BINS) - 1):
            m = (idx == b) & show
            if m.any():
                xs.append(pip[m].mean())
                ys.append(freq[m].mean())
        ax.plot(xs, ys, "o-", color="C3", lw=1.5, ms=4, label="mean per pip bin")
        ax.plot([0, 1], [0, 1], color="k", lw=0.8, ls="--", label="frequency = pip")
        ax.set_xlim(-0.02, 1.02)
        ax.set_ylim(-0.03, 1.03)
        ax.set_xlabel("pip (in the chosen model, one fit)")
        ax.set_title(f"{r['name'].split('_')[0].title()} ({r['n']} x {r['p']})", fontsize=9)
        ax.grid(visible=True, alpha=0.3)
        ax = axes[1, k]
        ok = show & np.isfinite(marg)
        ax.scatter(np.clip(marg[ok], -5, None), freq[ok] + rng.uniform(-0.006, 0.006, ok.sum()),
                   s=6, alpha=0.35, c=np.where(chosen[ok], "C0", "0.55"), linewidths=0)
        ax.axvline(0.0, color="k", lw=0.8)
        ax.set_ylim(-0.03, 1.03)
        ax.set_xlabel("log_bf_marginal (gene alone; < -5 at -5)")
        ax.grid(visible=True, alpha=0.3)
    for row in range(2):
        axes[row, 0].set_ylabel(f"bootstrap selection frequency ({results[0]['boots']} resamples)")
    axes[0, 0].legend(fontsize=7, loc="upper left")
    fig.suptitle("One-fit certainty against bootstrap selection frequency "
                 "(blue: selected on all samples)", fontsize=9)
    fig.tight_layout()
    save_png(fig, path)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", default=",".join(BINARY))
    ap.add_argument("--boots", type=int, default=50)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="docs/figures/certainty_bootstrap.png")
    ap.add_argument("--save", help="also keep the per-gene results in this .npz file")
    ap.add_argument("--load", help="redraw the figure from a --save file (no fits)")
    args = ap.parse_args(argv)
    results = []
    if args.load:
        with np.load(args.load, allow_pickle=True) as f:
            results = list(f["results"])
    else:
        for name in args.datasets.split(","):
            r = compare(name, n_boots=args.boots, jobs=args.jobs, seed=args.seed)
            print(summary(r), flush=True)
            results.append(r)
    if args.save:
        np.savez_compressed(args.save, results=np.array(results, dtype=object))
    figure(results, args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
