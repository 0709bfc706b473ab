"""Are the fits of this checkout the same as a saved reference? Predictions, probabilities, genes.

For a change meant to leave every fit as it was (a restructuring of the code), this runs the
default ``ARDClassifier`` on 3 seeded partitions of every shared expression set (the loaders and
preprocessing of ``benchmarks/accuracy.py``, two thirds train) and the command line on the bundled
leukaemia data and on a multi-class table, and either saves everything (``--save DIR``) or compares
it with what was saved (``--compare DIR``):

* per set: the predicted class of every held-out sample, every class probability (bitwise, else
  the largest absolute difference, which must stay below 1e-12) and the genes each partition's
  model selected;
* the CLI: every file ``ardselect fit`` and ``ardselect evaluate`` write, byte for byte (the fit
  times in ``splits.tsv`` and ``summary.tsv`` and the PNG figures aside: their pixels can move
  with matplotlib's text layout, not with the fit), and ``ardselect predict``'s output.

The script uses only the public API and the command line, so a copy of it runs on an older commit
to make the reference there::

    git worktree add /tmp/ref 793eaca && cp benchmarks/same_fits.py /tmp/ref/benchmarks/
    (cd /tmp/ref && python benchmarks/same_fits.py --save /tmp/ref-fits)
    python benchmarks/same_fits.py --compare /tmp/ref-fits

Exit status 1 when anything differs.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import accuracy  # noqa: E402  (the shared loaders, beside this script)

#: Largest absolute difference of a probability that still counts as the same fit.
TOLERANCE = 1e-12
N_SPLITS = 3


def fit_sets(names, jobs):
    """``{set: (predictions, selected genes)}`` of the default ARD-EP model on every set."""
    from ardselect import ARDClassifier
    from ardselect.model_selection import evaluate
    from ardselect.preprocessing import Preprocessor

    out = {}
    for name in names:
        X, y, ids = accuracy.load(name)
        pre = Preprocessor(**accuracy.DATASETS[name])
        method = {"ARD-EP": ARDClassifier(constant_features="ignore", random_state=0)}
        _, pred, sel = evaluate(X, y, method, preprocessor=pre, n_splits=N_SPLITS,
                                train_size=2 / 3, sample_ids=ids, random_state=0, n_jobs=jobs,
                                return_selection=True)
        genes = pd.DataFrame({"split": sel.index.get_level_values("split"),
                              "genes": [" ".join(map(str, np.flatnonzero(row)))
                                        for row in sel.to_numpy(dtype=bool)]})
        out[name] = (pred.drop(columns="method"), genes)
        print(f"{name}: fitted {N_SPLITS} partitions", file=sys.stderr, flush=True)
    return out


def run_cli(folder: Path):
    """The command line's outputs, written under ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    exe = [sys.executable, "-m", "ardselect_cli"]

    def cli(*args):
        subprocess.run([*exe, *map(str, args)], check=True, stdout=subprocess.DEVNULL)

    h5ad = folder / "leukaemia.h5ad"
    cli("example", "leukaemia", h5ad, "--overwrite")
    cli("fit", h5ad, "--label-key", "label", "--positive", "AML", "--floor", 100, "--cap", 16000,
        "--log", "log10", "--out", folder / "fit_leukaemia", "--overwrite", "-q")
    cli("fit", h5ad, "--label-key", "label", "--criterion", "loo", "--out",
        folder / "fit_leukaemia_loo", "--overwrite", "-q", "--write-h5ad",
        folder / "fit_leukaemia_loo.h5ad")
    khan = pd.read_csv(accuracy.DATA / "khan_srbct" / "khan_srbct.csv.gz")
    khan.iloc[:, :402].to_csv(folder / "khan.csv", index=False)  # 400 genes, 4 classes
    cli("fit", folder / "khan.csv", "--label-key", "label", "--out", folder / "fit_khan",
        "--overwrite", "-q")
    cli("fit", folder / "khan.csv", "--label-key", "label", "--multiclass", "shared", "--out",
        folder / "fit_khan_shared", "--overwrite", "-q")
    cli("predict", folder / "fit_khan" / "model.json", folder / "khan.csv", "-o",
        folder / "predict_khan.tsv", "--overwrite")
    cli("evaluate", h5ad, "--label-key", "label", "--splits", 2, "--floor", 100, "--cap", 16000,
        "-j", 1, "-o", folder / "evaluate_leukaemia", "--overwrite", "-q")


def save(folder: Path, names, jobs):
    folder.mkdir(parents=True, exist_ok=True)
    for name, (pred, genes) in fit_sets(names, jobs).items():
        pred.to_csv(folder / f"{name}_predictions.tsv.gz", sep="\t", index=False,
                    float_format="%.17g")
        genes.to_csv(folder / f"{name}_genes.tsv", sep="\t", index=False)
    run_cli(folder / "cli")
    print(f"saved to {folder}")


def _compare_sets(folder: Path, names, jobs) -> bool:
    same = True
    for name, (pred, genes) in fit_sets(names, jobs).items():
        # (round_trip: pandas' default parser can be 1 ulp off the 17 digits written)
        ref = pd.read_csv(folder / f"{name}_predictions.tsv.gz", sep="\t", dtype={"sample": str,
                          "label": str, "predicted": str}, keep_default_na=False,
                          float_precision="round_trip")
        ref_genes = pd.read_csv(folder / f"{name}_genes.tsv", sep="\t", keep_default_na=False,
                                dtype={"genes": str})
        prob = [c for c in ref.columns if c.startswith("prob_")]
        rows_ok = (list(ref.columns) == list(pred.columns) and len(ref) == len(pred)
                   and (ref[["split", "sample", "label", "predicted"]].astype(str).to_numpy()
                        == pred[["split", "sample", "label", "predicted"]].astype(str)
                        .to_numpy()).all())
        a, b = ref[prob].to_numpy(float), pred[prob].to_numpy(float) if rows_ok else None
        bitwise = rows_ok and np.array_equal(a, b)
        diff = float(np.max(np.abs(a - b))) if rows_ok else np.inf
        genes_ok = ref_genes["genes"].tolist() == genes["genes"].astype(str).tolist()
        ok = rows_ok and diff <= TOLERANCE and genes_ok
        same &= ok
        n_genes = sum(len(g.split()) for g in genes["genes"])
        print(f"{name}: {len(pred)} held-out predictions {'identical' if rows_ok else 'DIFFER'}; "
              f"probabilities {'bitwise identical' if bitwise else f'max |d| {diff:.2e}'}; "
              f"selected genes ({n_genes} over {N_SPLITS} partitions) "
              f"{'identical' if genes_ok else 'DIFFER'}")
    return same


def _compare_cli(ref: Path, got: Path) -> bool:
    same = True
    files = sorted(p.relative_to(ref) for p in ref.rglob("*") if p.is_file())
    mine = sorted(p.relative_to(got) for p in got.rglob("*") if p.is_file())
    if files != mine:
        print(f"cli: different files: {sorted(set(files) ^ set(mine))}")
        same = False
    n_same = n_skipped = 0
    for rel in files:
        a, b = ref / rel, got / rel
        if not b.exists():
            continue
        if rel.suffix in (".png", ".h5ad", ".html"):
            # figures: pixels; h5ad: HDF5 layout (its tables are the TSVs'); report.html: the
            # figures embedded and the command with its (temporary) paths
            n_skipped += 1
            continue
        if rel.name in ("splits.tsv", "summary.tsv"):  # fit times: fit_seconds(_mean, _se)
            x, y = pd.read_csv(a, sep="\t"), pd.read_csv(b, sep="\t")
            x = x.drop(columns=[c for c in x.columns if c.startswith("fit_seconds")])
            y = y.drop(columns=[c for c in y.columns if c.startswith("fit_seconds")])
            ok = x.equals(y)
        else:
            ok = a.read_bytes() == b.read_bytes()
        n_same += ok
        if not ok:
            print(f"cli: {rel} differs")
            same = False
    print(f"cli: {n_same} of {len(files) - n_skipped} output files byte-identical "
          f"({n_skipped} figures, reports and h5ad files not compared)")
    return same


def compare(folder: Path, names, jobs) -> bool:
    same = _compare_sets(folder, names, jobs)
    with tempfile.TemporaryDirectory() as tmp:
        run_cli(Path(tmp))
        same &= _compare_cli(folder / "cli", Path(tmp))
    print("same fits" if same else "FITS DIFFER")
    return same


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = ap.add_mutually_exclusive_group(required=True)
    group.add_argument("--save", type=Path, metavar="DIR", help="write the reference here")
    group.add_argument("--compare", type=Path, metavar="DIR", help="compare with this reference")
    ap.add_argument("--datasets", default=",".join(accuracy.DATASETS),
                    help="comma-separated shared expression sets (default: all; 'none': the CLI only)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args(argv)
    names = [n.strip() for n in args.datasets.split(",") if n.strip() not in ("", "none")]
    if args.save:
        save(args.save, names, args.jobs)
        return 0
    return 0 if compare(args.compare, names, args.jobs) else 1


if __name__ == "__main__":
    sys.exit(main())
