"""``ardselect evaluate``: held-out accuracy over repeated train/test partitions."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated

import typer

from ._options import (
    DEFAULT_CV_RULE,
    DEFAULT_LOG,
    DEFAULT_MULTICLASS,
    EVALUATE_ARD_ONLY,
    CapOpt,
    CovariatesOpt,
    CvRuleOpt,
    DataArg,
    DropOpt,
    FiguresOpt,
    FloorOpt,
    GeneColumnsOpt,
    GenesInRowsOpt,
    LabelKeyOpt,
    LabelsOpt,
    LayerOpt,
    LogOpt,
    MaxGenesOpt,
    MaxStepsOpt,
    Model,
    MulticlassOpt,
    OverwriteOpt,
    PositiveOpt,
    PseudobulkOpt,
    PseudocountOpt,
    QuietOpt,
    SeedOpt,
    StandardizeOpt,
    UseRawOpt,
    ard_only,
    check_positive,
    check_source,
    covariate_names,
    input_errors,
    read_input,
    refuse_given,
    seed_value,
)
from ._report import command_line, write_evaluate_report
from ._util import (
    Transaction,
    UsageError,
    check_output,
    handle_errors,
    stdout_console,
    summary_table,
)

#: Everything ``evaluate -o`` may write in its folder: an existing folder holding anything else is
#: not replaced.
EVALUATE_FOLDER = ("splits.tsv", "summary.tsv", "predictions.tsv", "selection.tsv",
                   "stability.tsv", "leave_group_out.tsv", "leave_group_out_predictions.tsv",
                   "calibration.tsv", "calibration.png", "report.html")
#: The method name of ``--model spike-slab`` in the tables (ARD's is "ARD-EP").
SPIKESLAB_METHOD = "SpikeSlab-EP"


def evaluate(
    ctx: typer.Context,
    data: DataArg,
    label_key: LabelKeyOpt = "label",
    model: Annotated[
        Model,
        typer.Option(
            "--model",
            "-m",
            help="'ard' (the default): ARD-EP, the ARD probit path with the model size chosen by "
            "inner cross-validation, and the models the paper's criteria pick on it. "
            "'spike-slab': SpikeSlab-EP, the spike-and-slab probit fitted by EP, which averages "
            "over gene sets (its genes: those with pip > 0.5); it takes none of the options of "
            "the ARD path (--max-steps, --max-genes, --cv-rule, --multiclass, --covariates), and "
            "--groups holds groups out of the partitions without EP's leave-one-group-out "
            "estimate.",
            case_sensitive=False,
        ),
    ] = Model.ard,
    positive: PositiveOpt = None,
    layer: LayerOpt = None,
    use_raw: UseRawOpt = False,
    genes_in_rows: GenesInRowsOpt = False,
    labels: LabelsOpt = None,
    gene_columns: GeneColumnsOpt = None,
    drop: DropOpt = None,
    log: LogOpt = DEFAULT_LOG,
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
    l1: Annotated[
        bool,
        typer.Option(
            "--l1/--no-l1",
            help="Also score L1-logistic regression (C by inner 5-fold CV) on the same partitions: "
            "the usual peer, beside which the selection frequencies and stability are reported "
            "(--baselines includes it).",
        ),
    ] = True,
    groups: Annotated[
        str | None,
        typer.Option(
            "--groups",
            help="obs column (e.g. donor or patient) whose groups are held out whole: no group is "
            "in both the training and the test part of a partition. Also reports EP's "
            "leave-one-group-out estimate from one fit of ARD-EP (-o: leave_group_out.tsv).",
            show_default=False,
        ),
    ] = None,
    covariates: CovariatesOpt = None,
    pseudobulk: PseudobulkOpt = None,
    multiclass: MulticlassOpt = DEFAULT_MULTICLASS,
    max_genes: MaxGenesOpt = None,
    cv_rule: CvRuleOpt = DEFAULT_CV_RULE,
    n_jobs: Annotated[
        int, typer.Option("--n-jobs", "-j", help="Parallel workers (-1: all cores).")
    ] = -1,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            "-o",
            help="Folder for splits.tsv (per partition and method), summary.tsv, predictions.tsv "
            "(held-out sample ids, true and predicted labels, a probability per class), "
            "selection.tsv (how often each gene was selected, per method), stability.tsv "
            "(Jaccard stability of the selected sets), calibration.tsv / calibration.png "
            "(reliability diagram) and report.html (one self-contained page of the results).",
            show_default=False,
        ),
    ] = None,
    overwrite: OverwriteOpt = False,
    figures: FiguresOpt = True,
    quiet: QuietOpt = False,
):
    """Held-out errors, genes, log-loss and calibration over repeated random train/test partitions.

    Each partition is preprocessed on its training part only and fitted once with the default
    model choice ("ARD-EP": inner cross-validation); the models the paper's criteria pick on the same
    path are tested too ("ARD-EP (loo)", "(evidence)"), beside the baselines with --baselines.
    With --model spike-slab the spike-and-slab model is fitted instead ("SpikeSlab-EP").
    Reports mean +- standard error over
    partitions.
    """
    with handle_errors():
        import ardselect

        spikeslab = model.value == "spike-slab"
        if spikeslab:
            refuse_given(ctx, ard_only(*EVALUATE_ARD_ONLY), "--model spike-slab")
        seed = seed_value(seed)
        _check_settings(splits, n_jobs, train_size)
        if out is not None and figures:
            ardselect.pl.require_matplotlib()  # calibration.png, before the partitions run
            check_output(out, overwrite=overwrite, kind="output folder", folder=True,
                         inputs=(data, labels), ours=EVALUATE_FOLDER)
        given, held, groups = _evaluate_input(
            data, label_key=label_key, positive=positive, layer=layer, use_raw=use_raw,
            genes_in_rows=genes_in_rows, labels=labels, gene_columns=gene_columns, drop=drop,
            groups=groups, covariates=covariates, pseudobulk=pseudobulk)
        y = _class_labels(given, positive, train_size)
        methods, pre = _evaluate_methods(
            spikeslab=spikeslab, seed=seed, max_steps=max_steps, max_genes=max_genes,
            cv_rule=cv_rule, multiclass=multiclass, baselines=baselines, l1=l1, log=log,
            pseudocount=pseudocount, floor=floor, cap=cap, standardize=standardize)
        run = _run_evaluation(given, y, methods, pre, held=held, spikeslab=spikeslab,
                              splits=splits, train_size=train_size, seed=seed, n_jobs=n_jobs,
                              quiet=quiet)
        if out is not None:
            _write_outputs(run, out, overwrite=overwrite, data=data, splits=splits,
                           label_key=label_key, groups=groups, ctx=ctx, figures=figures)
        if not quiet:
            _evaluate_summary(run["summary"], run["results"], data, label_key, out, groups, held,
                              pseudobulk=pseudobulk is not None, figures=figures)
            if run["logo"] is not None:
                _logo_summary(run["logo"], groups)
            _stability_summary(run["stability"], run["frequency"])


def _check_settings(splits: int, n_jobs: int, train_size: float) -> None:
    """``--splits``, ``--n-jobs`` and ``--train-size`` (usage errors, before any work)."""
    if splits < 1:
        msg = f"--splits must be at least 1, got {splits}"
        raise UsageError(msg)
    if n_jobs == 0 or n_jobs < -1:
        msg = f"--n-jobs must be a number of workers (1 or more) or -1 (all cores), got {n_jobs}"
        raise UsageError(msg)
    if not (0 < train_size < math.inf) or (train_size >= 1 and train_size != int(train_size)):
        msg = ("--train-size must be a fraction in (0, 1) or a whole number of samples, "
               f"got {train_size:g}")
        raise UsageError(msg)


def _evaluate_input(data, *, label_key, positive, layer, use_raw, genes_in_rows, labels,
                    gene_columns, drop, groups, covariates, pseudobulk):
    """The labelled data, read through the input door: ``(data, covariates, groups column)``.

    With ``--pseudobulk`` the donor-level samples, grouped by the donor column.
    """
    import ardselect

    held = covariate_names(covariates)
    if pseudobulk is not None and groups is not None:
        msg = ("--pseudobulk holds out whole donors already; leave --groups out (the "
               "donor-level samples are grouped by the --pseudobulk column)")
        raise UsageError(msg)
    check_source(data, layer, use_raw)
    given = read_input(data, genes_in_rows=genes_in_rows, label_key=label_key, labels=labels,
                       layer=layer, use_raw=use_raw, gene_columns=gene_columns, drop=drop,
                       groups=groups, covariates=held)
    check_positive(given.labels, positive)
    if pseudobulk is not None:
        with input_errors(data):
            bulk = ardselect.pseudobulk(given.adata, label_key, pseudobulk, layer=layer,
                                        use_raw=use_raw or None)
            given = ardselect.io.ExpressionData.from_anndata(bulk, label_key, groups=pseudobulk,
                                                             covariates=held)
        groups = pseudobulk
    ardselect.io.check_unique_names(given.var_names, "gene")
    return given, held, groups


def _class_labels(given, positive, train_size):
    """The labels as strings; with ``--positive`` and more classes, the class against the rest."""
    import numpy as np
    import pandas as pd

    import ardselect

    y = pd.Series(given.labels, dtype=object).astype(str).to_numpy()
    classes = np.unique(y)
    if positive is not None:
        if str(positive) not in set(classes):
            msg = f"positive class {positive!r} is not a label; labels: {', '.join(classes)}"
            raise ardselect.exceptions.LabelError(msg)
        if classes.size > 2:
            y = np.where(y == str(positive), str(positive), "rest").astype(object)
    if train_size >= 1 and not train_size < y.size:
        msg = f"--train-size {train_size:g} must be below the number of samples ({y.size})"
        raise ardselect.exceptions.DataError(msg)
    return y


def _evaluate_methods(*, spikeslab, seed, max_steps, max_genes, cv_rule, multiclass, baselines,
                      l1, log, pseudocount, floor, cap, standardize):
    """The methods scored on every partition, and the preprocessing each partition is fitted with."""
    import ardselect

    params = {"constant_features": "ignore", "max_genes": max_genes,
              "cv_rule": cv_rule.value, "multiclass": multiclass.value}
    if max_steps is not None:
        params["max_steps"] = int(max_steps)
    if spikeslab:
        methods = {SPIKESLAB_METHOD: ardselect.SpikeSlabClassifier(constant_features="ignore")}
    else:
        methods = {"ARD-EP": ardselect.ARDClassifier(random_state=seed, **params)}
    peers = ardselect.model_selection.baselines(random_state=seed)
    if baselines:
        methods.update(peers)
    elif l1:
        methods["L1-logistic"] = peers["L1-logistic"]
    pre = ardselect.preprocessing.Preprocessor(log=log.value, pseudocount=pseudocount, floor=floor,
                                               cap=cap, standardize=standardize)
    return methods, pre


def _run_evaluation(given, y, methods, pre, *, held, spikeslab, splits, train_size, seed, n_jobs,
                    quiet) -> dict:
    """The partitions, their summary, EP's leave-one-group-out estimate and the selections."""
    import numpy as np
    import pandas as pd

    import ardselect
    from ardselect.model_selection import evaluate as run_evaluation
    from ardselect.model_selection import summarize

    from ._util import task_progress

    group_values = (None if given.groups is None
                    else pd.Series(given.groups).astype(str).to_numpy())
    covariate_values = None
    if held:
        # Encoded once on every sample (no label is read): levels and scales are those of
        # the whole data set.
        covariate_values = ardselect.model.CovariateEncoder(held).fit_transform(given.obs)
    X = given.X
    progress = task_progress(splits, "partitions", quiet=quiet)
    kwargs = {
        "criteria": {} if spikeslab else {"ARD-EP": ["loo", "evidence"]},
        "preprocessor": pre,
        "n_splits": splits,
        "train_size": int(train_size) if train_size >= 1 else float(train_size),
        "groups": group_values,
        "sample_ids": given.obs_names.to_numpy(),
        "feature_names": np.asarray(given.var_names).astype(str),
        "return_selection": True,
        "random_state": seed,
        "n_jobs": n_jobs,
        "covariates": covariate_values,
    }
    if progress is None:
        results, predictions, selection = run_evaluation(X, y, methods, **kwargs)
    else:
        with progress:
            task = progress.add_task("partitions", total=splits)
            results, predictions, selection = run_evaluation(
                X, y, methods, progress=lambda done: progress.update(task, completed=done),
                **kwargs)
    logo = logo_pred = None
    if group_values is not None and not spikeslab:
        logo, logo_pred = ardselect.model_selection.ep_leave_group_out(
            methods["ARD-EP"], X, y, group_values, criteria=("loo", "evidence"),
            preprocessor=pre, sample_ids=given.obs_names.to_numpy(),
            covariates=covariate_values)
    return {
        "results": results,
        "predictions": predictions,
        "summary": summarize(results, predictions),
        "logo": logo,
        "logo_pred": logo_pred,
        "frequency": ardselect.model_selection.selection_frequency(selection),
        "stability": ardselect.model_selection.selection_stability(selection),
    }


def _write_outputs(run: dict, out: Path, *, overwrite, data, splits, label_key, groups, ctx,
                   figures=True):
    """Every file of ``evaluate -o``, written atomically into the folder."""
    import pandas as pd

    import ardselect

    predictions = run["predictions"]
    prob = predictions.filter(like="prob_").to_numpy(dtype=float)
    calib = ardselect.model_selection.calibration_table(pd.DataFrame({
        "criterion": predictions["method"],
        "confidence": prob.max(axis=1),
        "correct": (predictions["predicted"] == predictions["label"]).to_numpy(),
    }))
    with Transaction() as tx:
        tmp = tx.directory(out, replace=overwrite)
        ardselect.io.write_tsv(run["results"], tmp / "splits.tsv")
        ardselect.io.write_tsv(run["summary"], tmp / "summary.tsv")
        ardselect.io.write_tsv(predictions, tmp / "predictions.tsv")
        ardselect.io.write_tsv(run["frequency"].reset_index(), tmp / "selection.tsv")
        ardselect.io.write_tsv(run["stability"], tmp / "stability.tsv")
        if run["logo"] is not None:
            ardselect.io.write_tsv(run["logo"], tmp / "leave_group_out.tsv")
            ardselect.io.write_tsv(run["logo_pred"], tmp / "leave_group_out_predictions.tsv")
        ardselect.io.write_tsv(calib.rename(columns={"criterion": "method"}),
                               tmp / "calibration.tsv")
        if figures:
            fig = ardselect.pl.calibration(
                calib, title=f"{data.name}: held-out calibration, {splits} partitions")
            ardselect.pl.save_png(fig, tmp / "calibration.png")
        write_evaluate_report(tmp, run["summary"], run["results"], run["stability"], data=data,
                              label_key=label_key, command=command_line(ctx), groups=groups,
                              logo=run["logo"])
        tx.commit()


def _pm(mean, spread, fmt: str, none: str = "") -> str:
    """``mean ± spread`` in the format ``fmt``; the mean alone when there is no spread (NaN)."""
    if math.isnan(mean):
        return none or "-"
    if math.isnan(spread):
        return fmt.format(mean)
    return f"{fmt.format(mean)} ± {fmt.format(spread)}"


def _logo_summary(logo, groups):
    console = stdout_console()
    n_groups = int(logo["n_groups"].iloc[0])
    console.print(f"EP leave-one-{groups}-out from one fit on all samples ({n_groups} groups; "
                  "genes not re-selected, so optimistic where selection overfits):")
    for row in logo.itertuples():
        console.print(f"  {row.method}: error {100 * row.error_rate:.1f}%, "
                      f"log-loss {row.log_loss:.3f}, {row.genes} genes")


def _stability_summary(stability, frequency, top=8):
    console = stdout_console()
    table = summary_table(console, title="selected genes across partitions")
    for col in ("method", "genes", "Jaccard (mean ± sd over pairs)", "in every partition"):
        table.add_column(col, justify="left" if col == "method" else "right")
    for row in stability.itertuples():
        table.add_row(row.method, f"{row.genes_mean:.1f}",
                      _pm(row.jaccard_mean, row.jaccard_sd, "{:.2f}", none="- (one partition)"),
                      str(row.genes_always))
    console.print(table)
    for method in frequency.columns[:1].tolist() + [m for m in frequency.columns
                                                     if m == "L1-logistic"]:
        col = frequency[method].sort_values(ascending=False, kind="stable").head(top)
        shown = ", ".join(f"{g} {100 * v:.0f}%" for g, v in col.items() if v > 0)
        console.print(f"most often selected by {method}: {shown or 'none'}")


def _evaluate_summary(summary, results, data, label_key, out, groups=None, covariates=None,
                      *, pseudobulk=False, figures=True):
    console = stdout_console()
    def sizes(col):  # one size, or the range when whole groups make them differ
        lo, hi = int(results[col].min()), int(results[col].max())
        return str(lo) if lo == hi else f"{lo}-{hi}"

    how = f"whole {groups} groups held out" if groups else "stratified"
    console.print(
        f"{data.name} ({label_key}): {int(summary['n_splits'].iloc[0])} random "
        f"{sizes('n_train')}/{sizes('n_test')} train/test partitions ({how})"
        + (f" of the pseudobulk samples (one per {groups} and label)" if pseudobulk else "")
    )
    if covariates:
        console.print(f"covariates held in every ARD-EP model: {', '.join(covariates)} (the "
                      "other methods are fitted on the genes alone)")
    table = summary_table(console)
    for col in ("method", "error rate %", "genes", "log-loss", "ECE", "if calibrated",
                "confidence - accuracy"):
        table.add_column(col, justify="left" if col == "method" else "right")
    for row in summary.itertuples():
        table.add_row(
            row.method,
            _pm(100 * row.error_rate_mean, 100 * row.error_rate_se, "{:.1f}"),
            _pm(row.genes_mean, row.genes_se, "{:.1f}"),
            _pm(row.log_loss_mean, row.log_loss_se, "{:.3f}"),
            f"{row.ece:.3f}",
            f"{row.ece_if_calibrated:.3f} (95%: {row.ece_if_calibrated_q95:.3f})",
            f"{row.confidence_gap:+.3f}",
        )
    console.print(table)
    if int(summary["n_splits"].iloc[0]) < 2:
        console.print("one partition: no standard errors (--splits 2 or more for them)")
    console.print(f"log-loss of the training class frequencies: "
                  f"{float(results['log_loss_prior'].mean()):.3f}; ECE pooled over partitions, "
                  "beside what sampling alone gives a calibrated model with the same "
                  "confidences (mean and 95% quantile)")
    if out is not None:
        console.print(
            f"wrote {out}/splits.tsv, {out}/summary.tsv, {out}/predictions.tsv, "
            f"{out}/selection.tsv, {out}/stability.tsv, "
            f"{out}/calibration.tsv, " + (f"{out}/calibration.png, " if figures else "")
            + f"{out}/report.html"
        )
