"""Single-cell markers: ardselect beside scanpy's rank_genes_groups + logistic regression and L1-logistic.

Data sets (``--datasets``, comma-separated):

* ``pbmc``: PBMC 68k reduced (``../shared/data/pbmc68k_reduced``), ``raw.X`` (log-normalised values
  of 765 genes), label ``bulk_labels`` (10 cell types);
* ``cbmc``: CITE-seq cord blood (``../shared/data/citeseq_cbmc``), raw counts normalised as scanpy
  users do (``sc.pp.normalize_total(target_sum=1e4)``, then ``sc.pp.log1p``; both act on each cell
  alone, so nothing passes between training and test cells), label ``cell_type``. The 171
  ``Unknown`` cells are left out: the data set's README says that label is not a cell type.
  Twelve labels remain (``Mouse``, spiked-in mouse cells, is kept as a label);
* ``planted``: a sparse single-cell problem with known markers, ``make_data`` of
  ``benchmarks/scale.py`` (log1p counts, 1,200 cells x 1,000 genes, 6 cell types, 5 marker genes
  each, 5% of the entries non-zero, seed 0). Its table also says which share of the planted
  markers each method's per-class genes recover (``marker recall``) and which share of those genes
  are the class's markers (``marker precision``).

Each data set is split into ``--partitions`` seeded stratified partitions (two thirds train); on
each, every method is fitted on the training part only and scored on the test part:

* ``ardselect``: ``ARDClassifier()`` (its defaults: one-vs-rest over all classes, the model size
  by inner cross-validation) and ``ardselect (loo)``: ``ARDClassifier(criterion="loo")``, each on
  the genes standardised with the training mean and sd (constant genes dropped);
* ``t-test top-k + L2`` and ``Wilcoxon top-k + L2``: ``sc.tl.rank_genes_groups`` (``method="t-test"``
  or ``"wilcoxon"``, each class against the rest) on the training cells' log values, the top k genes
  of each class, and on the union of those panels a multinomial L2 logistic regression on
  standardised genes with C chosen by 5-fold CV log-loss over ``np.logspace(-2, 2, 9)``
  (``LogisticRegressionCV``). k is matched to ardselect's (``k=ard``: the median number of genes per
  class of the default ardselect fit on the same partition) and also 5, 10 and 20;
* ``L1-logistic``: one-vs-rest L1 logistic regression (liblinear), C by 5-fold CV log-loss over
  ``np.logspace(-2, 2, 9)`` (``ardselect.model_selection.baselines``).

Scores on the test part: macro-F1, multi-class log-loss, ECE (10 equal-width bins of the top-class
probability over [0, 1]), the median number of genes per class (ardselect and L1: non-zero weights
of each one-vs-rest problem; top-k: k) and the fit time in seconds (ranking + regression for the
top-k methods), wall seconds, all in the same process, one BLAS thread, every method on all
cores (ardselect's ``n_jobs`` default; ``n_jobs=-1`` for the cross-validations of the
baselines). Paired differences against the default
ardselect fit are means over partitions with their standard errors.

Usage:
    python benchmarks/single_cell.py [--datasets pbmc,cbmc,planted] [--partitions 5] [--seed 0]
                                     [--quick] [--out FILE.tsv] [--figure FILE.png]

``--quick``: 2 partitions of PBMC and the planted data only.
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
#: Fixed numbers of marker genes per class for the top-k methods, beside k matched to ardselect.
K_GRID = (5, 10, 20)
REFERENCE = "ardselect"
#: Planted problem: cells, genes, cell types, markers per type, density, seed.
PLANTED = {"n": 1200, "p": 1000, "k": 6, "n_markers": 5, "density": 0.05, "seed": 0}


def load(name):
    """``(X, y, genes, markers)``: log-scale expression (dense, float64), labels, gene names.

    ``markers`` maps each class to its planted marker genes (planted data only, else None).
    """
    import anndata as ad

    if name == "pbmc":
        adata = ad.read_h5ad(DATA / "pbmc68k_reduced" / "pbmc68k_reduced.h5ad")
        X = adata.raw.X
        X = X.toarray() if sp.issparse(X) else np.asarray(X)
        return (X.astype(np.float64), adata.obs["bulk_labels"].astype(str).to_numpy(),
                adata.raw.var_names.to_numpy(), None)
    if name == "cbmc":
        import scanpy as sc

        adata = ad.read_h5ad(DATA / "citeseq_cbmc" / "citeseq_cbmc.h5ad")
        adata = adata[adata.obs["cell_type"].astype(str) != "Unknown"].copy()
        adata.X = sp.csr_matrix(adata.X, dtype=np.float64)
        sc.pp.normalize_total(adata, target_sum=1e4)
        sc.pp.log1p(adata)
        return (_dense(adata.X), adata.obs["cell_type"].astype(str).to_numpy(),
                adata.var_names.to_numpy(), None)
    if name == "planted":
        X, y, planted = make_data(PLANTED["n"], PLANTED["p"], PLANTED["k"], PLANTED["n_markers"],
                                  PLANTED["density"], PLANTED["seed"])
        genes = np.array([f"g{j}" for j in range(X.shape[1])], dtype=object)
        markers = {f"type{c}": set(genes[planted[c]]) for c in range(planted.shape[0])}
        return _dense(X), np.array([f"type{c}" for c in y], dtype=object), genes, markers
    msg = f"unknown data set {name!r}; choose from {', '.join(DATASETS)}"
    raise ValueError(msg)


def _dense(X):
    return X.toarray() if sp.issparse(X) else np.asarray(X)


def scores(proba, classes, y_test, panels, seconds, markers=None):
    """The row of one method on one partition; ``panels``: class -> the genes it uses for it."""
    from sklearn.metrics import f1_score, log_loss

    from ardselect.model_selection import expected_calibration_error

    pred = classes[np.argmax(proba, axis=1)]
    row = {
        "macro_f1": float(f1_score(y_test, pred, labels=classes, average="macro",
                                   zero_division=0)),
        "log_loss": float(log_loss(y_test, np.clip(proba, 1e-15, 1.0), labels=classes)),
        "ece": expected_calibration_error(proba.max(axis=1), pred == y_test, n_bins=10),
        "genes_per_class": float(np.median([len(panels[c]) for c in classes])),
        "seconds": float(seconds),
    }
    if markers is not None:
        found = sum(len(panels[c] & markers[c]) for c in classes)
        row["marker_recall"] = found / sum(len(markers[c]) for c in classes)
        row["marker_precision"] = found / max(1, sum(len(panels[c]) for c in classes))
    return row


def _ard(criterion, Ztr, ytr, Zte, genes, seed):
    from ardselect import ARDClassifier

    params = {"constant_features": "ignore", "random_state": seed}
    if criterion != "cv":
        params["criterion"] = criterion
    t0 = time.perf_counter()
    est = ARDClassifier(**params).fit(Ztr, ytr)
    seconds = time.perf_counter() - t0
    coef = np.atleast_2d(est.coef_)  # (n_classes, n_genes): one row per one-vs-rest problem
    panels = {str(c): set(genes[coef[i] != 0]) for i, c in enumerate(est.classes_)}
    return est.predict_proba(Zte), panels, seconds


def _l1(Ztr, ytr, Zte, genes, seed):
    from ardselect.model_selection import baselines

    model = baselines(random_state=seed)["L1-logistic"]
    model.set_params(n_jobs=-1)  # every core, as ardselect's fit uses by default
    t0 = time.perf_counter()
    model.fit(Ztr, ytr)
    seconds = time.perf_counter() - t0
    ovr = model.best_estimator_
    panels = {str(c): set(genes[np.ravel(e.coef_) != 0])
              for c, e in zip(ovr.classes_, ovr.estimators_, strict=True)}
    return model.predict_proba(Zte), panels, seconds


def _scanpy_ranking(Xtr, ytr, genes, method):
    """Each class's genes in scanpy's order (class against the rest), and the seconds taken."""
    import anndata as ad
    import scanpy as sc

    adata = ad.AnnData(X=Xtr.copy(), obs=pd.DataFrame({"label": pd.Categorical(ytr)},
                                                       index=[f"c{i}" for i in range(len(ytr))]),
                       var=pd.DataFrame(index=[str(g) for g in genes]))
    t0 = time.perf_counter()
    sc.tl.rank_genes_groups(adata, "label", method=method, use_raw=False, n_genes=adata.n_vars)
    seconds = time.perf_counter() - t0
    names = adata.uns["rank_genes_groups"]["names"]
    return {g: np.asarray(names[g]).astype(str) for g in names.dtype.names}, seconds


def _topk_l2(order, k, genes, Ztr, ytr, Zte, seed):
    """L2 logistic regression on the union of each class's top ``k`` genes; C by 5-fold CV."""
    from sklearn.linear_model import LogisticRegressionCV
    from sklearn.model_selection import StratifiedKFold

    column = {str(g): j for j, g in enumerate(genes)}
    panel = sorted({column[g] for names in order.values() for g in names[:k]})
    cv = StratifiedKFold(5, shuffle=True, random_state=seed)
    model = LogisticRegressionCV(Cs=np.logspace(-2, 2, 9), cv=cv, scoring="neg_log_loss",
                                 max_iter=2000, n_jobs=-1)
    t0 = time.perf_counter()
    model.fit(Ztr[:, panel], ytr)
    seconds = time.perf_counter() - t0
    panels = {c: set(names[:k]) for c, names in order.items()}
    return model.predict_proba(Zte[:, panel]), panels, seconds


def warm_up():
    """Compile numba code and start joblib's worker processes once, outside the timed fits.

    The numba code is ardselect's and that of scanpy's tests; the worker processes are shared by
    the baselines' cross-validations and ardselect's large fits.
    """
    from ardselect.engine._parallel import PROCESS_MIN_WORK, run_tasks
    from ardselect.engine._problem import ep_tol_for

    run_tasks(ep_tol_for, [("auto", 10)] * 4, n_jobs=-1, work=PROCESS_MIN_WORK)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 8))
    y = np.repeat(["a", "b", "c"], 20)
    X[y == "b", 0] += 2.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _ard("loo", X, y, X, np.arange(8).astype(str), 0)
        for method in ("t-test", "wilcoxon"):
            _scanpy_ranking(np.abs(X), y, np.arange(8).astype(str), method)


def run_dataset(name, n_partitions, seed, log=print):
    """Per-partition rows of every method on data set ``name``."""
    from ardselect.model_selection import partitions
    from ardselect.preprocessing import Preprocessor

    X, y, genes, markers = load(name)
    classes = np.unique(y)
    rows = []
    parts = partitions(y, n_splits=n_partitions, train_size=2 / 3, random_state=seed)
    for split, (train, test) in enumerate(parts):
        Xtr, Xte, ytr, yte = X[train], X[test], y[train], y[test]
        pre = Preprocessor(log="none").fit(Xtr, feature_names=genes)
        Ztr, Zte = pre.transform(Xtr), pre.transform(Xte)
        kept = np.asarray(genes, dtype=object)[pre.keep_]

        def add(method, k, proba, panels, seconds, split=split, train=train, test=test,
                yte=yte):
            result = scores(proba, classes, yte, panels, seconds, markers)
            rows.append({"dataset": name, "split": split, "method": method,
                         "k": "" if k is None else str(k), "n_train": len(train),
                         "n_test": len(test), **result})
            log(f"  {name} partition {split}: {method}{'' if k is None else f' k={k}'}: "
                f"macro-F1 {result['macro_f1']:.3f}, log-loss {result['log_loss']:.3f}, "
                f"{result['genes_per_class']:g} genes/class, {seconds:.1f} s", flush=True)

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # convergence notes of the searches: not actionable
            proba, panels, sec = _ard("cv", Ztr, ytr, Zte, kept, seed)
            add(REFERENCE, None, proba, panels, sec)
            k_ard = max(1, int(np.median([len(panels[c]) for c in classes])))
            add(f"{REFERENCE} (loo)", None, *_ard("loo", Ztr, ytr, Zte, kept, seed))
            for method, label in (("t-test", "t-test"), ("wilcoxon", "Wilcoxon")):
                order, rank_sec = _scanpy_ranking(Xtr[:, pre.keep_], ytr, kept, method)
                for tag, k in (("ard", k_ard), *((k, k) for k in K_GRID)):
                    proba, panels, sec = _topk_l2(order, k, kept, Ztr, ytr, Zte, seed)
                    add(f"{label} top-k + L2", tag, proba, panels, rank_sec + sec)
            add("L1-logistic", None, *_l1(Ztr, ytr, Zte, kept, seed))
    return pd.DataFrame(rows)


def _label(row):
    return row["method"] if row["k"] == "" else f"{row['method']} (k={row['k']})"


def summary(results):
    """Per data set and method: means over partitions and paired differences to ardselect."""
    results = results.copy()
    results["k"] = results["k"].astype(str)
    results["label"] = results.apply(_label, axis=1)
    out = []
    for name, block in results.groupby("dataset", sort=False):
        ref = block[block["method"] == REFERENCE].set_index("split")
        for label, sub in block.groupby("label", sort=False):
            sub = sub.set_index("split")
            d_f1 = sub["macro_f1"] - ref["macro_f1"]
            d_ll = sub["log_loss"] - ref["log_loss"]
            n = len(sub)

            def se(v, n=n):
                return float(v.std(ddof=1) / np.sqrt(n)) if n > 1 else float("nan")

            row = {"dataset": name, "method": label, "partitions": n,
                        "n_train": int(sub["n_train"].iloc[0]),
                        "n_test": int(sub["n_test"].iloc[0]),
                        "macro_f1": sub["macro_f1"].mean(), "macro_f1_se": se(sub["macro_f1"]),
                        "log_loss": sub["log_loss"].mean(), "log_loss_se": se(sub["log_loss"]),
                        "ece": sub["ece"].mean(), "genes_per_class": sub["genes_per_class"].median(),
                        "seconds": sub["seconds"].mean(),
                        "d_macro_f1": d_f1.mean(), "d_macro_f1_se": se(d_f1),
                        "d_log_loss": d_ll.mean(), "d_log_loss_se": se(d_ll)}
            if "marker_recall" in sub and sub["marker_recall"].notna().all():
                row["marker_recall"] = sub["marker_recall"].mean()
                row["marker_precision"] = sub["marker_precision"].mean()
            out.append(row)
    return pd.DataFrame(out)


def markdown(summ):
    """The summary as one markdown table per data set."""
    lines = []
    for name, block in summ.groupby("dataset", sort=False):
        first = block.iloc[0]
        planted = "marker_recall" in block and block["marker_recall"].notna().all()
        extra = " marker recall | marker precision |" if planted else ""
        lines += [f"\n### {name}: {int(first['partitions'])} partitions, {first['n_train']} train / "
                  f"{first['n_test']} test cells\n",
                  "| method | macro-F1 | log-loss | ECE | genes/class | fit s "
                  f"| d macro-F1 vs ardselect | d log-loss vs ardselect |{extra}",
                  "| --- " * (10 if planted else 8) + "|"]
        for _, r in block.iterrows():
            ref = r["method"] == REFERENCE
            d1 = "" if ref else f"{r['d_macro_f1']:+.3f} +- {r['d_macro_f1_se']:.3f}"
            d2 = "" if ref else f"{r['d_log_loss']:+.3f} +- {r['d_log_loss_se']:.3f}"
            name_cell = f"**{r['method']}**" if ref else r["method"]
            lines.append(f"| {name_cell} | {r['macro_f1']:.3f} +- {r['macro_f1_se']:.3f} | "
                         f"{r['log_loss']:.3f} +- {r['log_loss_se']:.3f} | {r['ece']:.3f} | "
                         f"{r['genes_per_class']:g} | {r['seconds']:.1f} | {d1} | {d2} |"
                         + (f" {r['marker_recall']:.2f} | {r['marker_precision']:.2f} |"
                            if planted else ""))
    return "\n".join(lines)


def figure(summ, path):
    """Macro-F1 and log-loss against genes per class, one column per data set."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib import ticker

    names = list(dict.fromkeys(summ["dataset"]))
    fig, axes = plt.subplots(2, len(names), figsize=(4.6 * len(names), 7.5), squeeze=False)
    families = {"ardselect": ("C0", "o"), "ardselect (loo)": ("C0", "s"),
                "t-test top-k + L2": ("C1", "^"), "Wilcoxon top-k + L2": ("C2", "v"),
                "L1-logistic": ("C3", "D")}
    for j, name in enumerate(names):
        block = summ[summ["dataset"] == name]
        for family, (color, marker) in families.items():
            rows = block[[m == family or m.startswith(f"{family} (k=") for m in block["method"]]]
            rows = rows.sort_values("genes_per_class")
            for i, metric in enumerate(("macro_f1", "log_loss")):
                ax = axes[i, j]
                ax.errorbar(rows["genes_per_class"], rows[metric], yerr=rows[f"{metric}_se"],
                            color=color, marker=marker, linestyle="-" if len(rows) > 1 else "none",
                            capsize=2, label=family)
        for i, metric in enumerate(("macro-F1", "log-loss")):
            ax = axes[i, j]
            ax.set_xscale("log")
            ax.xaxis.set_major_formatter(ticker.ScalarFormatter())
            ax.xaxis.set_minor_formatter(ticker.NullFormatter())
            ax.set_xlabel("genes per class (median)")
            ax.set_ylabel(f"held-out {metric}")
            ax.set_title(f"{name}: {metric}")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", default=",".join(DATASETS),
                    help=f"comma-separated, from {', '.join(DATASETS)}")
    ap.add_argument("--partitions", type=int, default=5, help="seeded stratified partitions")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true", help="2 partitions of pbmc and planted")
    ap.add_argument("--out", type=Path, default=None, help="TSV of every partition's scores")
    ap.add_argument("--figure", type=Path, default=None, help="PNG of the scores against genes")
    args = ap.parse_args(argv)
    names = [n.strip() for n in args.datasets.split(",") if n.strip()]
    n_partitions = args.partitions
    if args.quick:
        names, n_partitions = ["pbmc", "planted"], 2
    unknown = sorted(set(names) - set(DATASETS))
    if unknown:
        ap.error(f"unknown data sets {unknown}; choose from {', '.join(DATASETS)}")
    if n_partitions < 2:
        ap.error("--partitions must be 2 or more (standard errors over partitions)")
    t0 = time.perf_counter()
    warm_up()
    frames = []
    for name in names:
        print(f"{name}: {n_partitions} partitions", file=sys.stderr, flush=True)
        frames.append(run_dataset(name, n_partitions, args.seed,
                                  log=lambda *a, **k: print(*a, file=sys.stderr, **k)))
    results = pd.concat(frames, ignore_index=True)
    summ = summary(results)
    print(markdown(summ))
    print(f"\nwall: {time.perf_counter() - t0:.0f} s", flush=True)
    if args.out is not None:
        results.to_csv(args.out, sep="\t", index=False)
    if args.figure is not None:
        figure(summ, args.figure)


if __name__ == "__main__":
    main()
