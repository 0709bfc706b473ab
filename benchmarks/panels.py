"""Panels of N distinct genes: ardselect (one-vs-rest and shared) beside top-k union panels + L2.

A targeted panel measures a fixed number of distinct genes, whichever classes need them. This
benchmark compares methods at an equal number of distinct genes N (the union over the classes),
for N in ``--budgets`` (default 20, 50, 100, 150; on a partition, a budget above the union of the
largest models of the one-vs-rest frontiers is skipped: no method of ardselect could use it).

Data sets (``--datasets``, comma-separated):

* ``pbmc``: PBMC 68k reduced (``../shared/data/pbmc68k_reduced``), ``raw.X`` (log-normalised values
  of 765 genes), label ``louvain`` (11 clusters);
* ``cbmc``: CITE-seq cord blood (``../shared/data/citeseq_cbmc``), raw counts normalised per cell
  (``normalize_total(target_sum=1e4)``, ``log1p``), the ``Unknown`` cells left out, then a stratified
  subsample of ``--cbmc-cells`` cells (default 1,500, seed 0): the default fit on all 8,446 cells
  takes far too long for a benchmark run;
* ``planted``: ``make_data`` of ``benchmarks/scale.py`` (log1p counts, 1,200 cells x 1,000 genes, 6
  cell types with 5 marker genes each, 5% non-zero, seed 0).

Each data set is split into ``--partitions`` seeded stratified partitions, a quarter of the cells
held out (``ardselect.model_selection.partitions``). On each partition, genes are standardised with
the training mean and sd (constant genes dropped) and every method is fitted on the training part:

* ``ardselect ovr``: ``ARDClassifier(certainty=False)`` fitted once (one-vs-rest, the sizes by
  inner cross-validation), then for each N the models a fit with ``multiclass="ovr", panel=N``
  chooses on that frontier, without refitting (``ARDClassifier._at_panel``: the frontier holds
  the default grid of sizes, the calibration of each size is its offset and temperature, the
  combination temperature 1);
* ``ardselect shared``: ``ARDClassifier(multiclass="shared", certainty=False)``, the shared size
  of least pooled held-out multi-class log-loss with at most N genes, chosen the same way (what
  ``panel=N`` does by default);
* ``t-test top-k + L2`` and ``Wilcoxon top-k + L2``: each class against the rest on the training
  cells' log values (Welch's t, ``scipy.stats.ttest_ind``; the Mann-Whitney U,
  ``scipy.stats.mannwhitneyu``), genes ranked by the statistic, largest first (genes higher in the
  class). The panel is the union of every class's top k genes for the smallest k whose union holds
  at least N genes, trimmed to exactly N: the genes of rank k are taken class by class, in class
  order, until the union holds N. On the panel, a multinomial L2 logistic regression on the
  standardised genes, C by 5-fold CV log-loss over ``np.logspace(-2, 2, 9)``
  (``LogisticRegressionCV``).

``certainty=False`` skips the inclusion probabilities, which do not change the predictions.
Scores on the held-out part: macro-F1 and multi-class log-loss; ``genes`` is the number of distinct
genes the method's model uses (ardselect may use fewer than N: the panel is a budget). The table
gives means over partitions and, for each method of ardselect, the paired difference against the
better baseline at that N (the one of lower mean log-loss), mean +- standard error over
partitions.

Usage:
    OPENBLAS_NUM_THREADS=1 python benchmarks/panels.py [--datasets pbmc,cbmc,planted]
        [--partitions 3] [--budgets 20,50,100,150] [--cbmc-cells 1500] [--seed 0]
        [--out FILE.tsv] [--figure FILE.png]

Times are CPU seconds of this process (``time.process_time``), one BLAS thread, ``n_jobs=1``.
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
import pandas as pd
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scale import make_data  # noqa: E402  (the planted problem of the scale benchmark)

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
DATASETS = ("pbmc", "cbmc", "planted")
BUDGETS = (20, 50, 100, 150)
BASELINES = ("t-test top-k + L2", "Wilcoxon top-k + L2")
ARD = ("ardselect ovr", "ardselect shared")
PLANTED = {"n": 1200, "p": 1000, "k": 6, "n_markers": 5, "density": 0.05, "seed": 0}


def _dense(X):
    return X.toarray() if sp.issparse(X) else np.asarray(X)


def load(name, cbmc_cells=1500):
    """``(X, y)``: log-scale expression (dense, float64) and labels."""
    import anndata as ad

    if name == "pbmc":
        adata = ad.read_h5ad(DATA / "pbmc68k_reduced" / "pbmc68k_reduced.h5ad")
        return _dense(adata.raw.X).astype(np.float64), adata.obs["louvain"].astype(str).to_numpy()
    if name == "cbmc":
        from sklearn.model_selection import train_test_split

        adata = ad.read_h5ad(DATA / "citeseq_cbmc" / "citeseq_cbmc.h5ad")
        adata = adata[adata.obs["cell_type"].astype(str) != "Unknown"]
        y = adata.obs["cell_type"].astype(str).to_numpy()
        keep, _ = train_test_split(np.arange(y.size), train_size=cbmc_cells, stratify=y,
                                   random_state=0)
        X = sp.csr_matrix(adata.X[np.sort(keep)], dtype=np.float64)
        X = sp.diags(1e4 / np.maximum(np.asarray(X.sum(axis=1)).ravel(), 1e-12)) @ X
        X = X.tocsr()
        X.data = np.log1p(X.data)
        return _dense(X), y[np.sort(keep)]
    if name == "planted":
        X, y, _ = make_data(PLANTED["n"], PLANTED["p"], PLANTED["k"], PLANTED["n_markers"],
                            PLANTED["density"], PLANTED["seed"])
        return _dense(X), np.array([f"type{c}" for c in y], dtype=object)
    msg = f"unknown data set {name!r}; choose from {', '.join(DATASETS)}"
    raise ValueError(msg)


def rankings(X, y, classes):
    """Each class's gene indices, best first, by Welch's t and by the Mann-Whitney U (vs rest)."""
    from scipy.stats import mannwhitneyu, ttest_ind

    out = {"t-test": {}, "Wilcoxon": {}}
    for c in classes:
        inside = y == c
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # constant genes in a class: NaN statistics
            t = ttest_ind(X[inside], X[~inside], equal_var=False, axis=0).statistic
            u = mannwhitneyu(X[inside], X[~inside], axis=0).statistic
        out["t-test"][c] = np.argsort(-np.nan_to_num(t, nan=-np.inf), kind="stable")
        out["Wilcoxon"][c] = np.argsort(-np.nan_to_num(u, nan=-np.inf), kind="stable")
    return out


def union_panel(order, n):
    """The union of every class's top k genes, k the smallest giving >= n, trimmed to exactly n."""
    panel, k = [], 0
    seen = set()
    depth = max(len(v) for v in order.values())
    while len(panel) < n and k < depth:
        for c in order:  # rank k of every class, in class order
            g = int(order[c][k])
            if g not in seen and len(panel) < n:
                seen.add(g)
                panel.append(g)
        k += 1
    return np.array(sorted(panel)), k


def l2_on(panel, Ztr, ytr, Zte, seed):
    from sklearn.linear_model import LogisticRegressionCV
    from sklearn.model_selection import StratifiedKFold

    cv = StratifiedKFold(5, shuffle=True, random_state=seed)
    model = LogisticRegressionCV(Cs=np.logspace(-2, 2, 9), cv=cv, scoring="neg_log_loss",
                                 max_iter=2000, n_jobs=1)
    model.fit(Ztr[:, panel], ytr)
    return model.predict_proba(Zte[:, panel])


def scores(proba, classes, y_test):
    from sklearn.metrics import f1_score, log_loss

    pred = classes[np.argmax(proba, axis=1)]
    return {"macro_f1": float(f1_score(y_test, pred, labels=classes, average="macro",
                                       zero_division=0)),
            "log_loss": float(log_loss(y_test, np.clip(proba, 1e-15, 1.0), labels=classes))}


def distinct_genes(est):
    return int(np.sum(np.any(np.atleast_2d(est.coef_) != 0, axis=0)))


def largest_union(est):
    """Distinct genes of the union of each class's largest model on the frontier."""
    r = est.cv_results_
    genes = set()
    for fit in est._fits:
        step = int(r.loc[r["class"] == fit.positive_class].sort_values("n_genes")["step"].iloc[-1])
        act = fit.steps[step].active
        genes |= set(act[act != fit.intercept_col].tolist())
    return len(genes)


def run_dataset(name, n_partitions, budgets, seed, cbmc_cells, only=None, log=print):
    from ardselect import ARDClassifier
    from ardselect.model_selection import partitions
    from ardselect.preprocessing import Preprocessor

    X, y = load(name, cbmc_cells)
    classes = np.unique(y)
    rows = []
    parts = partitions(y, n_splits=n_partitions, train_size=0.75, random_state=seed)
    log(f"{name}: {X.shape[0]} cells x {X.shape[1]} genes, {classes.size} classes", flush=True)
    for split, (train, test) in enumerate(parts):
        if only is not None and split != only:
            continue
        Xtr, Xte, ytr, yte = X[train], X[test], y[train], y[test]
        pre = Preprocessor(log="none").fit(Xtr)
        Ztr, Zte = pre.transform(Xtr), pre.transform(Xte)
        fits, seconds = {}, {}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for method, multiclass in zip(ARD, ("ovr", "shared"), strict=True):
                t0 = time.process_time()
                fits[method] = ARDClassifier(multiclass=multiclass, certainty=False, n_jobs=1,
                                             constant_features="ignore",
                                             random_state=seed).fit(Ztr, ytr)
                seconds[method] = time.process_time() - t0
                log(f"  {name} partition {split}: {method} fitted in {seconds[method]:.0f} CPU s, "
                    f"{distinct_genes(fits[method])} distinct genes", flush=True)
        top = largest_union(fits["ardselect ovr"])
        kept = [b for b in budgets if b <= top]
        if len(kept) < len(budgets):
            log(f"  {name} partition {split}: budgets above {top} (the union of the largest "
                f"one-vs-rest models) skipped", flush=True)
        order = rankings(Xtr[:, pre.keep_], ytr, classes)
        for n in kept:
            for method, est in fits.items():
                chosen = est._at_panel(n)
                rows.append({"dataset": name, "split": split, "budget": n, "method": method,
                             "genes": distinct_genes(chosen), "cpu_s": seconds[method],
                             **scores(chosen.predict_proba(Zte), classes, yte)})
            for method in BASELINES:
                panel, k = union_panel(order[method.split()[0]], n)
                t0 = time.process_time()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    proba = l2_on(panel, Ztr, ytr, Zte, seed)
                rows.append({"dataset": name, "split": split, "budget": n, "method": method,
                             "genes": int(panel.size), "cpu_s": time.process_time() - t0,
                             "k": k, **scores(proba, classes, yte)})
            for r in rows[-4:]:
                log(f"  {name} partition {split} N={n}: {r['method']}: macro-F1 "
                    f"{r['macro_f1']:.3f}, log-loss {r['log_loss']:.3f}, {r['genes']} genes",
                    flush=True)
    return pd.DataFrame(rows)


def _se(v):
    return float(np.std(v, ddof=1) / np.sqrt(len(v))) if len(v) > 1 else float("nan")


def summary(results):
    """Per data set, budget and method: means, and paired differences to the better baseline.

    The better baseline is the one of lower mean log-loss at that budget.
    """
    out = []
    for (name, n), block in results.groupby(["dataset", "budget"], sort=False):
        means = block.groupby("method")["log_loss"].mean()
        best = min(BASELINES, key=lambda m: means[m])
        ref = block[block["method"] == best].set_index("split")
        for method, sub in block.groupby("method", sort=False):
            sub = sub.set_index("split")
            d_f1 = (sub["macro_f1"] - ref["macro_f1"]).to_numpy()
            d_ll = (sub["log_loss"] - ref["log_loss"]).to_numpy()
            out.append({"dataset": name, "budget": n, "method": method, "partitions": len(sub),
                        "genes": sub["genes"].mean(), "macro_f1": sub["macro_f1"].mean(),
                        "log_loss": sub["log_loss"].mean(), "best_baseline": best,
                        "d_macro_f1": d_f1.mean(), "d_macro_f1_se": _se(d_f1),
                        "d_log_loss": d_ll.mean(), "d_log_loss_se": _se(d_ll)})
    return pd.DataFrame(out)


def markdown(summ):
    lines = ["| data | N | method | genes | macro-F1 | log-loss | d macro-F1 | d log-loss |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for _, r in summ.iterrows():
        ard = r["method"] in ARD
        d1 = f"{r['d_macro_f1']:+.3f} ± {r['d_macro_f1_se']:.3f}" if ard else ""
        d2 = f"{r['d_log_loss']:+.3f} ± {r['d_log_loss_se']:.3f}" if ard else ""
        label = r["method"] + (" (best)" if r["method"] == r["best_baseline"] else "")
        lines.append(f"| {r['dataset']} | {r['budget']} | {label} | {r['genes']:.0f} | "
                     f"{r['macro_f1']:.3f} | {r['log_loss']:.3f} | {d1} | {d2} |")
    return "\n".join(lines)


def figure(summ, path):
    """Held-out log-loss against distinct genes, one panel per data set, one line per method."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(dict.fromkeys(summ["dataset"]))
    fig, axes = plt.subplots(1, len(names), figsize=(4.4 * len(names), 3.8), squeeze=False)
    style = {"ardselect ovr": ("C0", "o"), "ardselect shared": ("C4", "s"),
             "t-test top-k + L2": ("C1", "^"), "Wilcoxon top-k + L2": ("C2", "v")}
    for ax, name in zip(axes[0], names, strict=True):
        block = summ[summ["dataset"] == name]
        for method, (color, marker) in style.items():
            rows = block[block["method"] == method].sort_values("budget")
            ax.plot(rows["genes"], rows["log_loss"], color=color, marker=marker, label=method)
        ax.set_title(name)
        ax.set_xlabel("distinct genes in the model")
        ax.set_ylabel("held-out log-loss")
        ax.grid(alpha=0.3)
    axes[0, 0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--partitions", type=int, default=3)
    parser.add_argument("--budgets", default=",".join(map(str, BUDGETS)))
    parser.add_argument("--cbmc-cells", type=int, default=1500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--partition", type=int, default=None,
                        help="run only this partition (0-based) of the --partitions drawn, to "
                        "spread them over processes; summarise the TSVs with --from-tsv")
    parser.add_argument("--out", type=Path, default=None, help="per-partition rows (TSV)")
    parser.add_argument("--figure", type=Path, default=None)
    parser.add_argument("--from-tsv", type=Path, default=None,
                        help="summarise earlier per-partition rows (TSVs, comma-separated) "
                        "instead of fitting")
    args = parser.parse_args(argv)
    if args.from_tsv is not None:
        results = pd.concat([pd.read_csv(p, sep="\t") for p in str(args.from_tsv).split(",")],
                            ignore_index=True)
    else:
        budgets = [int(b) for b in args.budgets.split(",")]
        results = pd.concat([run_dataset(d, args.partitions, budgets, args.seed, args.cbmc_cells,
                                         args.partition)
                             for d in args.datasets.split(",")], ignore_index=True)
        if args.out is not None:
            results.to_csv(args.out, sep="\t", index=False)
    summ = summary(results)
    print(markdown(summ))
    if args.figure is not None:
        figure(summ, args.figure)


if __name__ == "__main__":
    main()
