"""Held-out accuracy of the default ARD-EP signature beside tuned baselines, on every shared data set.

For each data set: ``--splits`` seeded stratified partitions (two thirds train, one third test); on each,
preprocessing is fitted on the training part only, every method is fitted on it and scored on the test
part (``ardselect.model_selection.evaluate``). Methods: ``ARDClassifier()`` with its defaults (and the
evidence model of the same path), and the baselines of ``ardselect.model_selection.baselines``:
L1-logistic, elastic-net logistic, a linear SVM on all genes and top-k t-test genes + L2-logistic, each
tuned by inner 5-fold CV on the training part.

Preprocessing, one rule per kind of data (read from each data set's README):

* raw Affymetrix MAS4 average differences (Golub, Shipp; negatives present): floor 100, cap 16000, log;
* raw MAS5 signals (Borovecki; all positive, median about 50): floor 10, log;
* data already transformed by their authors (West), log-ratios (Khan, Sorlie), methylation beta values
  (Christensen), log-normalised single-cell counts (pbmc68k_reduced ``raw.X``): no transform;

then genes constant on the training part are dropped and each gene is standardised with the training
mean and sd. The log base does not matter after standardisation.

``--datasets lowdim`` runs the low-dimensional sets instead (:data:`LOWDIM`: Pima, Ripley's
synthetic data and five of Raetsch's benchmarks; far more samples than features), standardised the
same way; their names can also be listed one by one.

Usage:
    python benchmarks/accuracy.py [--datasets golub_leukemia,...|lowdim] [--splits 50] [--jobs 2]
                                  [--methods ARD-EP,L1-logistic,...] [--out DIR]

Prints, per data set, a table of error rate, genes, log-loss, ECE (pooled over partitions) and the
paired difference to L1-logistic (mean +- s.e. over partitions). ``run()`` takes a dict of methods, so
other ARD settings can be compared on the same partitions from Python.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np
import pandas as pd

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"

#: data set -> (preprocessing keyword arguments for ardselect.preprocessing.Preprocessor, label key)
DATASETS = {
    "golub_leukemia": {"floor": 100, "cap": 16000, "log": "log2"},
    "west_breast_er": {"log": "none"},
    "shipp_dlbcl_fl": {"floor": 100, "cap": 16000, "log": "log2"},
    "borovecki_huntington": {"floor": 10, "log": "log2"},
    "khan_srbct": {"log": "none"},
    "christensen_methylation": {"log": "none"},
    "sorlie_breast_subtypes": {"log": "none"},
    "pbmc68k_reduced": {"log": "none"},
}

#: The low-dimensional sets (2 to 21 features, far more samples than features), named with
#: ``--datasets``, or all of them with ``--datasets lowdim``; not run by default. Their features are
#: standardised on the training part only (Raetsch's were standardised by him already; Pima's
#: clinical measurements are on their own scales).
LOWDIM = {
    "pima_diabetes": {"log": "none"},
    "ripley_synth": {"log": "none"},
    **{f"raetsch_{s}": {"log": "none"}
       for s in ("breast_cancer", "german", "image", "titanic", "waveform")},
}


def load(name):
    """``(X, y, sample_ids)`` of a shared data set (:data:`DATASETS` or :data:`LOWDIM`)."""
    if name in LOWDIM:
        return _load_lowdim(name)
    if name == "pbmc68k_reduced":
        import anndata as ad

        adata = ad.read_h5ad(DATA / name / f"{name}.h5ad")
        X = adata.raw.X
        X = X.toarray() if hasattr(X, "toarray") else np.asarray(X)
        return X.astype(np.float64), adata.obs["bulk_labels"].astype(str).to_numpy(), \
            adata.obs_names.to_numpy()
    df = pd.read_csv(DATA / name / f"{name}.csv.gz")
    genes = [c for c in df.columns if c not in ("sample_id", "label", "split")]
    return df[genes].to_numpy(dtype=np.float64), df["label"].astype(str).to_numpy(), \
        df["sample_id"].astype(str).to_numpy()


def _load_lowdim(name):
    """A low-dimensional set as ``(X, y, sample_ids)``; every row once (the sets' READMEs say how).

    * Pima: Ripley's 532 complete cases (``pima_ripley``; the UCI file codes missing values as 0);
    * Ripley's synthetic data: the 250 training and 1,000 test points pooled;
    * Raetsch's benchmarks: the rows of realisation 1 (training and test part), which every
      realisation re-partitions. (His breast cancer set is the Ljubljana data's 277 complete
      cases, coded ordinally; the shared raw Ljubljana file is not run beside it a second time.)
    """
    if name == "pima_diabetes":
        df = pd.read_csv(DATA / name / "pima_ripley.csv.gz")
        X = df.drop(columns=["split", "label"])
    elif name == "ripley_synth":
        df = pd.read_csv(DATA / name / "synth.csv.gz")
        X = df[["xs", "ys"]]
    else:
        df = pd.read_csv(DATA / "raetsch_benchmarks" / f"{name.removeprefix('raetsch_')}.csv.gz")
        df = df[df["realisation"] == 1]
        X = df.filter(regex=r"^x\d+$")
    ids = np.arange(len(df)).astype(str)
    return X.to_numpy(dtype=np.float64), df["label"].astype(str).to_numpy(), ids


def methods(random_state=0):
    """The default ARD-EP model and the baselines, by name."""
    from ardselect import ARDClassifier
    from ardselect.model_selection import baselines

    return {"ARD-EP": ARDClassifier(constant_features="ignore", random_state=random_state),
            **baselines(random_state)}


def extra_methods(random_state=0):
    """Methods run only when named in ``--methods``.

    ``"ARD-EP shared"``: the default ARD-EP fit with ``multiclass="shared"`` (one precision per
    gene for all classes; README, "Shared genes across classes"), several times slower on many
    classes.
    """
    from ardselect import ARDClassifier

    return {"ARD-EP shared": ARDClassifier(constant_features="ignore", random_state=random_state,
                                           multiclass="shared")}


def run(name, methods_dict, *, criteria=None, n_splits=50, jobs=2, seed=0):
    """Evaluate ``methods_dict`` on data set ``name``; returns (results, predictions)."""
    from ardselect.model_selection import evaluate
    from ardselect.preprocessing import Preprocessor

    X, y, ids = load(name)
    pre = Preprocessor(**{**DATASETS, **LOWDIM}[name])
    return evaluate(X, y, methods_dict, criteria=criteria, preprocessor=pre, n_splits=n_splits,
                    train_size=2 / 3, sample_ids=ids, random_state=seed, n_jobs=jobs)


def table(results, predictions, reference="L1-logistic"):
    """Markdown rows: method, error % +- s.e., genes, log-loss, ECE, paired differences."""
    from ardselect.model_selection import paired_difference, summarize

    s = summarize(results, predictions).set_index("method")
    d = (paired_difference(results, reference).set_index("method")
         if reference in set(results["method"]) else None)
    header = ("| method | error % | genes | log-loss | ECE (pooled) | ECE if calibrated (95%) "
              "| confidence - accuracy | d error % vs L1 | d log-loss vs L1 | fit s |")
    lines = [header, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    prior = s["log_loss_prior_mean"].iloc[0]
    for m, r in s.iterrows():
        de = dl = ""
        if d is not None and m != reference:
            de = f"{100 * d.loc[m, 'd_error_rate']:+.1f} +- {100 * d.loc[m, 'd_error_rate_se']:.1f}"
            dl = f"{d.loc[m, 'd_log_loss']:+.3f} +- {d.loc[m, 'd_log_loss_se']:.3f}"
        lines.append(
            f"| {m} | {100 * r.error_rate_mean:.1f} +- {100 * r.error_rate_se:.1f} | "
            f"{r.genes_mean:.1f} | {r.log_loss_mean:.3f} | {r.ece:.3f} | "
            f"{r.ece_if_calibrated:.3f} ({r.ece_if_calibrated_q95:.3f}) | "
            f"{r.confidence_gap:+.3f} | {de} | {dl} | "
            f"{r.fit_seconds_mean:.2f} |")
    lines.append(f"(log-loss of the training class frequencies: {prior:.3f})")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", default=",".join(DATASETS),
                    help="comma-separated data sets (default: the expression sets); 'lowdim': the "
                    "low-dimensional ones")
    ap.add_argument("--splits", type=int, default=50)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--methods", default=None,
                    help="comma-separated method names: a subset of the default methods, or "
                    "'ARD-EP shared' (multiclass='shared'; not run unless named)")
    ap.add_argument("--out", type=Path, default=None, help="folder for per-split TSVs")
    args = ap.parse_args(argv)
    chosen = methods(args.seed)
    if args.methods:
        available = {**chosen, **extra_methods(args.seed)}
        keep = [m.strip() for m in args.methods.split(",")]
        unknown = sorted(set(keep) - set(available))
        if unknown:
            ap.error(f"unknown methods {unknown}; choose from {sorted(available)}")
        chosen = {k: v for k, v in available.items() if k in keep}
    # The paper's criteria on the same fitted path: the LOO model (with the temperature the inner
    # cross-validation fitted for it) and the evidence model.
    criteria = {"ARD-EP": ["loo", "evidence"]} if "ARD-EP" in chosen else None
    names = [n.strip() for n in args.datasets.split(",")]
    names = [m for n in names for m in (LOWDIM if n == "lowdim" else [n])]
    for name in names:
        if name not in DATASETS and name not in LOWDIM:
            ap.error(f"unknown data set {name!r}; choose from {', '.join([*DATASETS, *LOWDIM])} "
                     "or 'lowdim' (all of the low-dimensional ones)")
        t0 = time.perf_counter()
        res, pred = run(name, chosen, criteria=criteria, n_splits=args.splits, jobs=args.jobs,
                        seed=args.seed)
        X_shape = (res["n_train"].iloc[0] + res["n_test"].iloc[0])
        print(f"\n### {name}: {args.splits} partitions of {X_shape} samples "
              f"({res['n_train'].iloc[0]} train / {res['n_test'].iloc[0]} test)\n")
        print(table(res, pred))
        print(f"wall: {time.perf_counter() - t0:.0f} s on {args.jobs} worker(s)", flush=True)
        if args.out:
            args.out.mkdir(parents=True, exist_ok=True)
            res.to_csv(args.out / f"{name}_splits.tsv", sep="\t", index=False)
            pred.to_csv(args.out / f"{name}_predictions.tsv.gz", sep="\t", index=False)


if __name__ == "__main__":
    main()
