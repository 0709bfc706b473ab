"""The ``ardselect`` command: fit, predict, evaluate, example.

A thin Typer layer over the public library API (``ardselect.rank_genes``, ``ardselect.get``,
``ardselect.io``, ``ardselect.ARDClassifier``). Heavy imports happen inside the commands so that
``ardselect --help`` stays instant. Results go to files (or stdout for ``predict -o -``); the
summary table goes to stdout; progress, warnings and errors go to stderr.
"""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from ardselect import CRITERIA, __version__

from ._util import (
    Transaction,
    UsageError,
    check_input,
    check_output,
    handle_errors,
    info_line,
    path_progress,
)

# The library's tuples live in modules that import pandas and scikit-learn; copies keep
# `ardselect --help` instant, and tests/test_cli.py checks they equal ardselect.io.LOG_CHOICES and
# ardselect.datasets.EXAMPLES.
LOG_CHOICES = ("auto", "none", "log2", "log10", "ln")
EXAMPLES = ("leukaemia",)

Criterion = Enum("Criterion", {c.replace("-", "_"): c for c in CRITERIA}, type=str)
LogChoice = Enum("LogChoice", {c: c for c in LOG_CHOICES}, type=str)
Example = Enum("Example", {c: c for c in EXAMPLES}, type=str)

app = typer.Typer(
    name="ardselect",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)

FIT_OUTPUTS = ("genes.tsv", "genes.gmt", "path.tsv", "path.png", "weights.png", "model.json")


def _version(value: bool):
    if value:
        typer.echo(f"ardselect {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Show the version and exit."
        ),
    ] = False,
):
    """Select the few genes that predict a phenotype: ARD probit classification by EP.

    ardselect fits a sparse Bayesian (ARD) probit classifier by Expectation Propagation along an
    add/delete path and keeps the model chosen by the EP leave-one-out error (predictive ARD, Qi
    et al. 2004), the LOO error probability or the evidence. Input: .h5ad, CSV/TSV or GCT(+CLS).

    Exit codes: 0 success, 1 data/file/model error, 2 usage error, 130 interrupted.
    """


# ---------------------------------------------------------------------------------------------
# Shared options
# ---------------------------------------------------------------------------------------------

DataArg = Annotated[
    Path,
    typer.Argument(
        help="Expression data: .h5ad, .csv/.tsv/.txt (optionally .gz), or .gct (with --labels "
        "FILE.cls).",
        show_default=False,
        metavar="DATA",
    ),
]
LabelKeyOpt = Annotated[
    str,
    typer.Option(
        "--label-key",
        "-g",
        help="Column with the class labels: an obs column (h5ad), a column of a samples-in-rows "
        "table, the row id of a label row with --genes-in-rows, or the obs name given to --labels.",
    ),
]
PositiveOpt = Annotated[
    str | None,
    typer.Option(
        "--positive",
        help="The positive class (its genes get positive weights). Two classes: default the "
        "second in sorted order. More classes: fit this class against all others (one list) "
        "instead of every class against the rest.",
        show_default=False,
    ),
]
LayerOpt = Annotated[
    str | None,
    typer.Option("--layer", help="h5ad only: use this layer instead of X.", show_default=False),
]
UseRawOpt = Annotated[
    bool, typer.Option("--use-raw", help="h5ad only: use adata.raw.X instead of X.")
]
GenesInRowsOpt = Annotated[
    bool,
    typer.Option(
        "--genes-in-rows",
        help="CSV/TSV only: one row per gene and one column per sample (labels then come from "
        "a label row or --labels).",
    ),
]
LabelsOpt = Annotated[
    Path | None,
    typer.Option(
        "--labels",
        help="Separate label file: a CLS file (sample order) or a CSV/TSV with sample id and "
        "label columns. Required for GCT input.",
        show_default=False,
    ),
]
LogOpt = Annotated[
    LogChoice,
    typer.Option(
        "--log",
        help="Log transform log_b(x + pseudocount). 'auto': log2 when the (floored, capped) data "
        "look like counts or raw intensities (no negatives, and max > 100 or integer values), "
        "none when they look log-scaled or standardised; the choice is reported.",
        case_sensitive=False,
    ),
]
PseudocountOpt = Annotated[
    float | None,
    typer.Option(
        "--pseudocount",
        help="Added before the log. Default: 0 with a positive --floor (log10 of floored "
        "intensities, the Golub convention), else 1 (log2(x + 1) for counts).",
        show_default=False,
    ),
]
FloorOpt = Annotated[
    float | None,
    typer.Option(
        "--floor",
        help="Raise values below this (before the log). Affymetrix MAS 4 data such as Golub's: "
        "100.",
        show_default=False,
    ),
]
CapOpt = Annotated[
    float | None,
    typer.Option(
        "--cap",
        help="Lower values above this (before the log). Golub convention: 16000.",
        show_default=False,
    ),
]
StandardizeOpt = Annotated[
    bool,
    typer.Option(
        "--standardize/--no-standardize",
        help="Centre and scale each gene to unit variance (sparse data: scale only). Constant "
        "genes are always dropped and counted.",
    ),
]
MaxStepsOpt = Annotated[
    int | None,
    typer.Option(
        "--max-steps",
        help="Largest number of add/delete/re-estimate steps per path (default: the "
        "estimator's).",
        show_default=False,
    ),
]
SeedOpt = Annotated[
    int, typer.Option("--seed", help="Seed of the random partitions (same seed, same output).")
]
OverwriteOpt = Annotated[
    bool, typer.Option("--overwrite", help="Replace existing outputs (only once complete).")
]
QuietOpt = Annotated[
    bool, typer.Option("--quiet", "-q", help="No summary and no progress display.")
]


def _read(data, *, genes_in_rows, label_key, labels, layer=None):
    import ardselect

    check_input(data)
    if labels is not None:
        check_input(labels)
    return ardselect.io.read_data(
        data, genes_in_rows=genes_in_rows, label_key=label_key, labels=labels, layer=layer
    )


def _check_source_options(data: Path, layer, use_raw: bool) -> None:
    """``--layer`` and ``--use-raw`` only make sense for .h5ad input, and exclude each other."""
    import ardselect

    if (layer is not None or use_raw) and ardselect.io.detect_format(data) != "h5ad":
        msg = "--layer and --use-raw apply to .h5ad input only"
        raise UsageError(msg)
    if layer is not None and use_raw:
        msg = "give --layer or --use-raw, not both"
        raise UsageError(msg)


def _check_label_key(adata, label_key: str, data: Path):
    if label_key not in adata.obs.columns:
        avail = ", ".join(map(str, adata.obs.columns)) or "none"
        hint = "" if len(adata.obs.columns) else " (give labels with --labels FILE)"
        msg = f"label key {label_key!r} not found in {data.name}; available: {avail}{hint}"
        raise UsageError(msg)


def _class_counts(labels) -> str:
    import pandas as pd

    counts = pd.Series(labels).astype(str).value_counts(sort=False).sort_index()
    return " / ".join(f"{k} {v}" for k, v in counts.items())


# ---------------------------------------------------------------------------------------------
# fit
# ---------------------------------------------------------------------------------------------


@app.command()
def fit(
    data: DataArg,
    label_key: LabelKeyOpt = "label",
    criterion: Annotated[
        Criterion,
        typer.Option(
            "--criterion",
            "-c",
            help="Model choice on the path: 'loo' (EP leave-one-out error, predictive ARD), "
            "'loo-prob' (LOO error probability), 'evidence' (EP evidence).",
            case_sensitive=False,
        ),
    ] = Criterion.loo,
    positive: PositiveOpt = None,
    layer: LayerOpt = None,
    use_raw: UseRawOpt = False,
    genes_in_rows: GenesInRowsOpt = False,
    labels: LabelsOpt = None,
    symbol_key: Annotated[
        str | None,
        typer.Option(
            "--symbol-key",
            help="var column (h5ad) with gene symbols or descriptions for genes.tsv (default: "
            "the first of symbol, gene_symbol(s), gene_name(s), feature_name, description).",
            show_default=False,
        ),
    ] = None,
    log: LogOpt = LogChoice.auto,
    pseudocount: PseudocountOpt = None,
    floor: FloorOpt = None,
    cap: CapOpt = None,
    standardize: StandardizeOpt = True,
    max_steps: MaxStepsOpt = None,
    out: Annotated[
        Path,
        typer.Option(
            "--out",
            "-o",
            help="Output folder (written atomically): genes.tsv, genes.gmt, path.tsv, path.png, "
            "weights.png, model.json.",
        ),
    ] = Path("results"),
    write_h5ad: Annotated[
        Path | None,
        typer.Option(
            "--write-h5ad",
            help="Also write the input as .h5ad with results in var (ardselect_rank, "
            "ardselect_selected, ardselect_weight) and uns['ardselect'].",
            show_default=False,
        ),
    ] = None,
    overwrite: OverwriteOpt = False,
    quiet: QuietOpt = False,
    show: Annotated[
        int, typer.Option("--show", help="Genes listed in the summary (per class).")
    ] = 10,
):
    """Fit ARD on DATA and write the ranked genes, gene sets, path and a portable model."""
    with handle_errors():
        import ardselect

        if write_h5ad is not None and write_h5ad.suffix != ".h5ad":
            msg = f"--write-h5ad needs a .h5ad file name, got {write_h5ad.name}"
            raise UsageError(msg)
        check_output(out, overwrite=overwrite, kind="output folder")
        if out.exists() and not out.is_dir():
            msg = f"output {out} exists and is not a folder"
            raise UsageError(msg)
        if write_h5ad is not None:
            check_output(write_h5ad, overwrite=overwrite, kind="file")
        _check_source_options(data, layer, use_raw)
        adata = _read(data, genes_in_rows=genes_in_rows, label_key=label_key, labels=labels)
        _check_label_key(adata, label_key, data)
        y = adata.obs[label_key]
        n_classes = y.dropna().astype(str).nunique()
        n_problems = n_classes if (n_classes > 2 and positive is None) else 1
        with path_progress(n_problems, quiet=quiet):
            ardselect.rank_genes(
                adata,
                label_key,
                positive=positive,
                layer=layer,
                use_raw=use_raw,
                criterion=criterion.value,
                log=log.value,
                pseudocount=pseudocount,
                floor=floor,
                cap=cap,
                standardize=standardize,
                symbol_key=symbol_key,
                max_steps=max_steps,
            )
        ranked = ardselect.get.ranked_genes_df(adata)
        multi = ranked["class"].nunique() > 1
        table = ranked if multi else ranked.drop(columns="class")
        path_table = ardselect.get.path_df(adata)
        stored = adata.uns["ardselect"]
        classes = [str(c) for c in stored["classes"]]
        if multi:
            title = f"{data.name}: {label_key}, each class vs rest ({criterion.value})"
        else:
            title = f"{data.name}: {classes[1]} vs {classes[0]} ({criterion.value})"
        with Transaction() as tx:
            tmp = tx.directory(out)
            ardselect.io.write_ranked_tsv(table, tmp / "genes.tsv")
            ardselect.io.write_gmt(ardselect.get.gene_sets(adata), tmp / "genes.gmt")
            ardselect.io.write_path_tsv(path_table, tmp / "path.tsv")
            ardselect.io.write_path_png(path_table, tmp / "path.png", title=title)
            ardselect.io.write_weights_png(ranked, tmp / "weights.png", title=title)
            ardselect.get.model(adata).save(tmp / "model.json")
            if write_h5ad is not None:
                adata.write_h5ad(tx.file(write_h5ad))
            tx.commit()
        if not quiet:
            _fit_summary(adata, data, label_key, criterion.value, out, write_h5ad, show)


def _fit_summary(adata, data, label_key, criterion, out, write_h5ad, show):
    from rich.console import Console
    from rich.table import Table

    import ardselect

    console = Console(file=sys.stdout, highlight=False, soft_wrap=True)
    stored = adata.uns["ardselect"]
    classes = [str(c) for c in stored["classes"]]
    pre = stored["preprocessing"]
    ranked = ardselect.get.ranked_genes_df(adata)
    console.print(
        f"[bold]{data.name}[/]: {adata.n_obs} samples x {adata.n_vars} genes; "
        f"{label_key}: {_class_counts(adata.obs[label_key])}"
    )
    console.print(f"preprocessing: {pre['description']}")
    for cls in dict.fromkeys(ranked["class"]):
        block = ranked[ranked["class"] == cls]
        n_sel = int(block["selected"].sum())
        step = ardselect.get.chosen_steps(adata)[cls]
        what = f"{cls} vs rest" if len(classes) > 2 else f"{classes[1]} vs {classes[0]}"
        console.print(f"{what}: {n_sel} gene(s) selected by {criterion} (path step {step})")
        table = Table()
        for col, kw in (
            ("rank", {"justify": "right"}),
            ("gene", {}),
            ("description", {"overflow": "ellipsis", "max_width": 40}),
            ("weight", {"justify": "right"}),
            ("sd", {"justify": "right"}),
        ):
            table.add_column(col, **kw)
        for row in block[block["selected"]].head(show).itertuples():
            table.add_row(
                str(row.rank), row.gene, row.description, f"{row.mean:+.3f}", f"{row.sd:.3f}"
            )
        console.print(table)
    written = ", ".join(f"{out}/{name}" for name in FIT_OUTPUTS)
    console.print(f"wrote {written}" + (f", {write_h5ad}" if write_h5ad else ""))


# ---------------------------------------------------------------------------------------------
# predict
# ---------------------------------------------------------------------------------------------


@app.command()
def predict(
    model: Annotated[
        Path,
        typer.Argument(
            help="model.json written by 'ardselect fit'.", show_default=False, metavar="MODEL"
        ),
    ],
    data: DataArg,
    out: Annotated[
        Path,
        typer.Option(
            "--out", "-o", help="Predictions TSV ('-' for stdout); written atomically."
        ),
    ] = Path("-"),
    label_key: Annotated[
        str | None,
        typer.Option(
            "--label-key",
            "-g",
            help="Column with true labels, to report errors (default: the model's label key, if "
            "present).",
            show_default=False,
        ),
    ] = None,
    layer: LayerOpt = None,
    genes_in_rows: GenesInRowsOpt = False,
    labels: LabelsOpt = None,
    overwrite: OverwriteOpt = False,
    quiet: QuietOpt = False,
):
    """Apply a saved model to DATA: predicted class and class probabilities per sample.

    Genes are matched by name; data lacking any of the model's genes are refused with the list.
    The model's preprocessing (floor, cap, log, per-gene centring and scaling) is replayed exactly.
    """
    with handle_errors():
        import numpy as np
        import pandas as pd

        import ardselect

        to_stdout = str(out) == "-"
        if not to_stdout:
            check_output(out, overwrite=overwrite, kind="file")
        check_input(model)
        portable = ardselect.io.load_model(model)
        space = portable.input_space
        if layer is not None and (space["use_raw"] or space["layer"] not in (None, layer)):
            fitted_on = "raw.X" if space["use_raw"] else f"layer {space['layer']!r}"
            msg = (f"the model was fitted on {fitted_on} and applies it itself; --layer {layer} "
                   "would score other values")
            raise UsageError(msg)
        adata = _read(
            data, genes_in_rows=genes_in_rows, label_key=label_key or "label", labels=labels,
            layer=layer,
        )
        if label_key is not None:
            _check_label_key(adata, label_key, data)
        else:
            stored_key = portable.data.get("label_key")
            label_key = stored_key if stored_key in adata.obs.columns else None
        proba = portable.predict_proba(adata)
        classes = [str(c) for c in portable.classes]
        pred = np.asarray(classes, dtype=object)[np.argmax(proba, axis=1)]
        table = pd.DataFrame({"sample": adata.obs_names.astype(str)})
        if label_key is not None:
            table["label"] = adata.obs[label_key].astype(str).to_numpy()
        table["predicted"] = pred
        for k, cls in enumerate(classes):
            table[f"prob_{cls}"] = proba[:, k]
        # 12 significant digits: probabilities to better than 1e-12, still readable.
        text = table.to_csv(sep="\t", index=False, lineterminator="\n", float_format="%.12g")
        if to_stdout:
            sys.stdout.write(text)
        else:
            with Transaction() as tx:
                tmp = tx.file(out)
                tmp.write_text(text, encoding="utf-8")
                tx.commit()
        if label_key is not None:
            wrong = int((table["label"] != table["predicted"]).sum())
            info_line(
                f"{wrong} of {len(table)} samples misclassified ({label_key})", quiet=quiet
            )
        if not to_stdout:
            info_line(f"wrote {out}: {len(table)} samples", quiet=quiet)


# ---------------------------------------------------------------------------------------------
# evaluate
# ---------------------------------------------------------------------------------------------


@app.command()
def evaluate(
    data: DataArg,
    label_key: LabelKeyOpt = "label",
    positive: PositiveOpt = None,
    layer: LayerOpt = None,
    use_raw: UseRawOpt = False,
    genes_in_rows: GenesInRowsOpt = False,
    labels: LabelsOpt = None,
    log: LogOpt = LogChoice.auto,
    pseudocount: PseudocountOpt = None,
    floor: FloorOpt = None,
    cap: CapOpt = None,
    standardize: StandardizeOpt = True,
    max_steps: MaxStepsOpt = None,
    splits: Annotated[
        int, typer.Option("--splits", help="Number of random train/test partitions (paper: 100).")
    ] = 20,
    train_size: Annotated[
        float,
        typer.Option(
            "--train-size",
            help="Training part: a fraction (< 1) or a number of samples (>= 1). Partitions are "
            "stratified by class.",
        ),
    ] = 0.5,
    seed: SeedOpt = 0,
    baselines: Annotated[
        bool,
        typer.Option(
            "--baselines",
            help="Also score, on the same partitions: L1-logistic, elastic-net logistic, a linear SVM "
            "and top-k t-test genes + L2-logistic, each tuned by inner 5-fold CV on the training part.",
        ),
    ] = False,
    groups: Annotated[
        str | None,
        typer.Option(
            "--groups",
            help="obs column (e.g. donor or patient) whose groups are held out whole: no group is "
            "in both the training and the test part of a partition.",
            show_default=False,
        ),
    ] = None,
    n_jobs: Annotated[
        int, typer.Option("--n-jobs", "-j", help="Parallel workers (-1: all cores).")
    ] = -1,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            "-o",
            help="Folder for splits.tsv (per partition and method), summary.tsv, predictions.tsv "
            "(held-out sample ids, true and predicted labels, a probability per class) and "
            "calibration.tsv / calibration.png (reliability diagram).",
            show_default=False,
        ),
    ] = None,
    overwrite: OverwriteOpt = False,
    quiet: QuietOpt = False,
):
    """Held-out errors, genes, log-loss and calibration over repeated random train/test partitions.

    Each partition is preprocessed on its training part only and fitted once; the model each
    criterion picks on the same path is tested on the held-out part ("ARD-EP (loo)", "(loo-prob)",
    "(evidence)"), beside the baselines with --baselines. Reports mean +- standard error over
    partitions.
    """
    with handle_errors():
        import numpy as np
        import pandas as pd

        import ardselect
        from ardselect.model_selection import evaluate as run_evaluation
        from ardselect.model_selection import summarize

        from ._util import task_progress

        if splits < 1:
            msg = f"--splits must be at least 1, got {splits}"
            raise UsageError(msg)
        if train_size <= 0:
            msg = f"--train-size must be positive, got {train_size:g}"
            raise UsageError(msg)
        if out is not None:
            check_output(out, overwrite=overwrite, kind="output folder")
        _check_source_options(data, layer, use_raw)
        adata = _read(data, genes_in_rows=genes_in_rows, label_key=label_key, labels=labels,
                      layer=layer)
        _check_label_key(adata, label_key, data)
        group_values = None
        if groups is not None:
            _check_label_key(adata, groups, data)
            group_values = adata.obs[groups].astype(str).to_numpy()
        if use_raw:
            if adata.raw is None:
                msg = f"--use-raw: {data.name} has no raw data"
                raise ardselect.DataError(msg)
            X = adata.raw.X
            gene_names = adata.raw.var_names
        else:
            X, gene_names = adata.X, adata.var_names
        ardselect.io.check_unique_names(gene_names, "gene")
        y = pd.Series(adata.obs[label_key].to_numpy(), dtype=object)
        if y.isna().any():
            msg = f"{int(y.isna().sum())} sample(s) have no label; drop them first"
            raise ardselect.LabelError(msg)
        y = y.astype(str).to_numpy()
        classes = np.unique(y)
        if positive is not None:
            if str(positive) not in set(classes):
                msg = f"positive class {positive!r} is not a label; labels: {', '.join(classes)}"
                raise ardselect.LabelError(msg)
            if classes.size > 2:
                y = np.where(y == str(positive), str(positive), "rest").astype(object)
        if train_size >= 1 and not train_size < y.size:
            msg = f"--train-size {train_size:g} must be below the number of samples ({y.size})"
            raise ardselect.DataError(msg)
        params = {"constant_features": "ignore"}
        if max_steps is not None:
            params["max_steps"] = int(max_steps)
        methods = {"ARD-EP": ardselect.ARDClassifier(criterion="loo", **params)}
        if baselines:
            methods.update(ardselect.model_selection.baselines(random_state=seed))
        pre = ardselect.io.Preprocessor(log=log.value, pseudocount=pseudocount, floor=floor,
                                        cap=cap, standardize=standardize)
        progress = task_progress(splits, "partitions", quiet=quiet)
        kwargs = {
            "criteria": {"ARD-EP": ["loo-prob", "evidence"]},
            "preprocessor": pre,
            "n_splits": splits,
            "train_size": int(train_size) if train_size >= 1 else float(train_size),
            "groups": group_values,
            "sample_ids": adata.obs_names.to_numpy(),
            "random_state": seed,
            "n_jobs": n_jobs,
        }
        if progress is None:
            results, predictions = run_evaluation(X, y, methods, **kwargs)
        else:
            with progress:
                task = progress.add_task("partitions", total=splits)
                results, predictions = run_evaluation(
                    X, y, methods, progress=lambda done: progress.update(task, completed=done),
                    **kwargs)
        rename = {"ARD-EP": "ARD-EP (loo)"}
        results["method"] = results["method"].replace(rename)
        predictions["method"] = predictions["method"].replace(rename)
        summary = summarize(results, predictions)
        if out is not None:
            prob = predictions.filter(like="prob_").to_numpy(dtype=float)
            calib = ardselect.io.calibration_table(pd.DataFrame({
                "criterion": predictions["method"],
                "confidence": prob.max(axis=1),
                "correct": (predictions["predicted"] == predictions["label"]).to_numpy(),
                "n_classes": prob.shape[1],
            }))
            with Transaction() as tx:
                tmp = tx.directory(out)
                ardselect.io.write_path_tsv(results, tmp / "splits.tsv")
                ardselect.io.write_path_tsv(summary, tmp / "summary.tsv")
                ardselect.io.write_path_tsv(predictions, tmp / "predictions.tsv")
                ardselect.io.write_path_tsv(calib.rename(columns={"criterion": "method"}),
                                            tmp / "calibration.tsv")
                ardselect.io.write_calibration_png(
                    calib, tmp / "calibration.png",
                    title=f"{data.name}: held-out calibration, {splits} partitions",
                )
                tx.commit()
        if not quiet:
            _evaluate_summary(summary, results, data, label_key, out)


def _evaluate_summary(summary, results, data, label_key, out):
    from rich.console import Console
    from rich.table import Table

    console = Console(file=sys.stdout, highlight=False, soft_wrap=True)
    n_test = int(results["n_test"].iloc[0])
    n_train = int(results["n_train"].iloc[0])
    console.print(
        f"{data.name} ({label_key}): {int(summary['n_splits'].iloc[0])} random "
        f"{n_train}/{n_test} train/test partitions (stratified)"
    )
    table = Table()
    for col in ("method", "error rate %", "genes", "log-loss", "ECE"):
        table.add_column(col, justify="left" if col == "method" else "right")
    for row in summary.itertuples():
        table.add_row(
            row.method,
            f"{100 * row.error_rate_mean:.1f} ± {100 * row.error_rate_se:.1f}",
            f"{row.genes_mean:.1f} ± {row.genes_se:.1f}",
            f"{row.log_loss_mean:.3f} ± {row.log_loss_se:.3f}",
            f"{row.ece_pooled:.3f}",
        )
    console.print(table)
    console.print(f"log-loss of the training class frequencies: "
                  f"{float(results['log_loss_prior'].mean()):.3f}; ECE pooled over partitions")
    if out is not None:
        console.print(
            f"wrote {out}/splits.tsv, {out}/summary.tsv, {out}/predictions.tsv, "
            f"{out}/calibration.tsv, {out}/calibration.png"
        )


# ---------------------------------------------------------------------------------------------
# example
# ---------------------------------------------------------------------------------------------


@app.command()
def example(
    name: Annotated[Example, typer.Argument(help="Dataset name.", show_default=False, metavar="NAME")],
    path: Annotated[
        Path | None,
        typer.Argument(
            help="Where to write it: .h5ad (default golub_leukaemia.h5ad), .csv/.tsv (samples in "
            "rows with label and split columns) or .gct (with a .cls label file beside it).",
            show_default=False,
            metavar="PATH",
        ),
    ] = None,
    overwrite: OverwriteOpt = False,
    quiet: QuietOpt = False,
):
    """Write a bundled real dataset: 'leukaemia' is Golub et al. (1999), ALL vs AML, 72 x 7129."""
    with handle_errors():
        import ardselect

        if path is None:
            path = Path("golub_leukaemia.h5ad")
        fmt = ardselect.io.detect_format(path)
        check_output(path, overwrite=overwrite, kind="file")
        adata = ardselect.datasets.load_example(name.value)
        written = [path]
        with Transaction() as tx:
            if fmt == "h5ad":
                adata.write_h5ad(tx.file(path))
            elif fmt in ("csv", "tsv"):
                import pandas as pd

                table = pd.DataFrame(
                    adata.X.astype("int64"), index=adata.obs_names, columns=adata.var_names
                )
                table.insert(0, "split", adata.obs["split"].astype(str).to_numpy())
                table.insert(0, "label", adata.obs["label"].astype(str).to_numpy())
                table.index.name = "sample_id"
                sep = "," if fmt == "csv" else "\t"
                tmp = tx.file(path)
                compression = "gzip" if path.name.endswith(".gz") else None
                table.to_csv(tmp, sep=sep, lineterminator="\n", compression=compression)
            else:
                cls_path = path.with_name(path.name.removesuffix(".gz").removesuffix(".gct")
                                          + ".cls")
                check_output(cls_path, overwrite=overwrite, kind="file")
                ardselect.io.write_gct(adata, tx.file(path), description_key="description")
                ardselect.io.write_cls(adata.obs["label"].astype(str), tx.file(cls_path))
                written.append(cls_path)
            tx.commit()
        info_line(
            f"wrote {', '.join(map(str, written))}: {adata.n_obs} samples x {adata.n_vars} genes "
            f"(labels in '{'label' if fmt != 'gct' else written[-1].name}'); raw intensities: "
            "use --floor 100 --cap 16000 --log log10",
            quiet=quiet,
        )


if __name__ == "__main__":  # pragma: no cover
    app()
