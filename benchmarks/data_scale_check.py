"""False alarms of the data-scale checks (``ardselect.DataScaleWarning``, ``DataScaleError``) on data of the right scale.

``predict``: on each shared microarray set, ``--splits`` random 2/3 : 1/3 partitions; a model is
fitted on the training part (the set's usual preprocessing, ``ARDClassifier()`` defaults, or
``--criterion``) and the portable model predicts the held-out part, one class of it, and its first
sample alone. Every warning there is a false alarm: the held-out samples are the same kind of
values as the training ones.

``evaluate``: the check of the samples against each other (``sample_scale_findings``) on each whole
set, and on the two single-cell sets of ``shared/data``; every flagged sample is a false alarm.

Usage: python benchmarks/data_scale_check.py [--splits 20] [--criterion cv] [--data ../shared/data]
"""

from __future__ import annotations

import argparse
import os
import warnings
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
import pandas as pd

from ardselect import ARDClassifier
from ardselect.dataio._scale_check import sample_scale_findings
from ardselect.exceptions import DataScaleError
from ardselect.model import DataScaleWarning, PortableModel
from ardselect.preprocessing import Preprocessor

#: (file, the preprocessing a user would give it)
SETS = {
    "golub": ("golub_leukemia/golub_leukemia.csv.gz", {"floor": 100, "cap": 16000, "log": "log10"}),
    "west": ("west_breast_er/west_breast_er.csv.gz", {}),
    "shipp": ("shipp_dlbcl_fl/shipp_dlbcl_fl.csv.gz", {"floor": 20, "cap": 16000, "log": "log2"}),
    "khan": ("khan_srbct/khan_srbct.csv.gz", {}),
    "borovecki": ("borovecki_huntington/borovecki_huntington.csv.gz", {}),
    "christensen": ("christensen_methylation/christensen_methylation.csv.gz", {}),
    "sorlie": ("sorlie_breast_subtypes/sorlie_breast_subtypes.csv.gz", {}),
}
SINGLE_CELL = ("pbmc68k_reduced/pbmc68k_reduced.h5ad", "citeseq_cbmc/citeseq_cbmc.h5ad")


def read(path: Path):
    table = pd.read_csv(path)
    genes = table.drop(columns=["sample_id", "label"]).select_dtypes("number")
    return genes, table["label"].astype(str).to_numpy(), table["sample_id"].astype(str).to_numpy()


def warns(model, frame) -> bool:
    """Whether predicting ``frame`` warns (DataScaleWarning) or is refused (DataScaleError)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            model.predict_proba(frame)
        except DataScaleError:
            return True
    return any(issubclass(w.category, DataScaleWarning) for w in caught)


def predict_alarms(data: Path, n_splits: int, criterion: str) -> pd.DataFrame:
    rows = []
    for name, (path, kw) in SETS.items():
        genes, y, _ = read(data / path)
        X = genes.to_numpy(float)
        rng = np.random.default_rng(0)
        for split in range(n_splits):
            order = rng.permutation(y.size)
            n_train = round(y.size * 2 / 3)
            train, test = order[:n_train], order[n_train:]
            pre = Preprocessor(**kw).fit(X[train])
            est = ARDClassifier(criterion=criterion, n_jobs=1).fit(pre.transform(X[train]), y[train])
            model = PortableModel.from_estimator(est, pre, list(genes.columns), list(est.classes_))
            held_out = genes.iloc[test]
            parts = {"held-out part": held_out,
                     "one class of it": held_out[y[test] == y[test][0]],
                     "one sample": held_out.iloc[:1]}
            for part, frame in parts.items():
                rows.append({"set": name, "split": split, "part": part,
                             "genes": len(model.features), "warned": warns(model, frame)})
    return pd.DataFrame(rows)


def sample_alarms(data: Path) -> pd.DataFrame:
    rows = []
    for name, (path, kw) in SETS.items():
        genes, _, ids = read(data / path)
        X = genes.to_numpy(float)
        pre = Preprocessor(**kw).fit(X)
        Z = pre._steps(X, pre.log_)  # noqa: SLF001  (floor, cap and log, as evaluate applies them)
        rows.append({"set": name, "samples": X.shape[0],
                     "flagged": _flagged(sample_scale_findings(X, Z, ids))})
    import anndata as ad

    for path in SINGLE_CELL:
        adata = ad.read_h5ad(data / path)
        for what, X in (("X", adata.X), ("raw.X", None if adata.raw is None else adata.raw.X)):
            if X is None:
                continue
            pre = Preprocessor().fit(X)
            Z = pre._steps(X, pre.log_)  # noqa: SLF001
            rows.append({"set": f"{Path(path).stem} {what}", "samples": X.shape[0],
                         "flagged": _flagged(sample_scale_findings(X, Z, adata.obs_names))})
    return pd.DataFrame(rows)


def _flagged(message: str) -> int:
    return int(message.split(" of the ")[0]) if message else 0


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", type=int, default=20)
    parser.add_argument("--criterion", default="cv")
    parser.add_argument("--data", type=Path,
                        default=Path(__file__).resolve().parents[2] / "shared" / "data")
    args = parser.parse_args(argv)
    pred = predict_alarms(args.data, args.splits, args.criterion)
    print(f"predict: warnings on data of the training scale ({args.splits} partitions per set, "
          f"criterion={args.criterion})")
    print(pred.groupby(["set", "part"]).agg(checks=("warned", "size"), warnings=("warned", "sum"),
                                            genes=("genes", "median")).to_string())
    print(pred.groupby("part")["warned"].agg(["size", "sum"]).to_string())
    print("\nevaluate: samples flagged as another kind of values than the rest")
    print(sample_alarms(args.data).to_string(index=False))


if __name__ == "__main__":
    main()
