"""``ardselect fit``: rank the genes of one dataset and write the results folder."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer

from ardselect.choices import AUTO_SKETCH, SKETCH_FLOOR, resolve_multiclass

from ._options import (
    ARD_ONLY,
    DEFAULT_CRITERION,
    DEFAULT_CV_RULE,
    DEFAULT_LOG,
    DEFAULT_MULTICLASS,
    CapOpt,
    CovariatesOpt,
    CriterionOpt,
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
    PanelOpt,
    PositiveOpt,
    PseudobulkOpt,
    PseudocountOpt,
    QuietOpt,
    StandardizeOpt,
    UseRawOpt,
    check_positive,
    check_source,
    class_counts,
    covariate_names,
    data_shape,
    display_classes,
    input_errors,
    read_input,
    refuse_given,
    seed_value,
)
from ._options import (
    given as option_given,
)
from ._report import command_line, write_fit_report
from ._util import (
    Transaction,
    UsageError,
    check_apart,
    check_output,
    handle_errors,
    path_progress,
    stdout_console,
    summary_table,
    warn_line,
)

FIT_OUTPUTS = ("genes.tsv", "genes.gmt", "path.tsv", "path.png", "inclusion.png", "certainty.png",
               "model.json", "report.html")
#: Written with ``--criterion cv`` only.
FRONTIER_OUTPUTS = ("frontier.tsv", "frontier.png")
#: Written with ``--model spike-slab`` (besides ``genes.rnk`` or ``rnk/``).
SPIKESLAB_OUTPUTS = ("genes.tsv", "credible_sets.tsv", "genes.gmt", "model.json")
#: Everything ``fit`` may write in its folder (``rnk/`` with more than two classes): an existing
#: folder holding anything else is not replaced.
#: Above this many samples with ``--max-samples all``, ``fit`` says how long the exact fit can
#: take and how to fit a sketch instead.
LARGE_FIT = 20_000
#: Written with ``--groups`` (or ``--pseudobulk``) only.
GROUP_OUTPUTS = ("groups.tsv",)
#: Written with ``--covariates`` only.
COVARIATE_OUTPUTS = ("covariates.tsv",)
FIT_FOLDER = (*FIT_OUTPUTS, *FRONTIER_OUTPUTS, *GROUP_OUTPUTS, *COVARIATE_OUTPUTS,
              "credible_sets.tsv", "genes.rnk", "rnk", "rnk/*.rnk")

def fit(
    ctx: typer.Context,
    data: DataArg,
    label_key: LabelKeyOpt = "label",
    model: Annotated[
        Model,
        typer.Option(
            "--model",
            "-m",
            help="'ard' (the default): the ARD probit path and one chosen gene set. 'spike-slab': "
            "a spike-and-slab probit fitted by EP that averages over gene sets; genes.tsv gives "
            "each gene's pip, the posterior probability that the gene is in the model (given the "
            "model and its prior of 1 to 20 expected genes; not a p-value), selected = pip > "
            "0.5, and credible_set: the id of the gene's credible set (correlated genes the data "
            "cannot tell apart whose PIPs add up to >= 0.95; empty if none), also listed in "
            "credible_sets.tsv; model.json holds the model for 'ardselect predict'. It writes no "
            "path, frontier or plots, and takes none "
            "of the options of the ARD path (--criterion, --max-genes, --panel, --cv-rule, "
            "--inclusion-penalty, --max-steps, --multiclass, --seed, --lazy, --max-samples).",
            case_sensitive=False,
        ),
    ] = Model.ard,
    criterion: CriterionOpt = DEFAULT_CRITERION,
    max_genes: MaxGenesOpt = None,
    panel: PanelOpt = None,
    cv_rule: CvRuleOpt = DEFAULT_CV_RULE,
    positive: PositiveOpt = None,
    layer: LayerOpt = None,
    use_raw: UseRawOpt = False,
    genes_in_rows: GenesInRowsOpt = False,
    labels: LabelsOpt = None,
    gene_columns: GeneColumnsOpt = None,
    drop: DropOpt = None,
    symbol_key: Annotated[
        str | None,
        typer.Option(
            "--symbol-key",
            help="var column (h5ad) with gene symbols or descriptions for genes.tsv (default: "
            "the first of symbol, gene_symbol(s), gene_name(s), feature_name, description). "
            "The GMT and RNK files name genes by it only where it holds symbols (one word per "
            "gene), not free-text descriptions.",
            show_default=False,
        ),
    ] = None,
    gene_symbols: Annotated[
        Path | None,
        typer.Option(
            "--gene-symbols",
            help="A CSV/TSV table of gene identifier and symbol (two columns, header optional): "
            "the symbols for genes.tsv's description and the GMT and RNK files, for data that "
            "carry none (a samples-in-rows CSV). Genes it does not list keep their identifiers.",
            show_default=False,
        ),
    ] = None,
    log: LogOpt = DEFAULT_LOG,
    pseudocount: PseudocountOpt = None,
    floor: FloorOpt = None,
    cap: CapOpt = None,
    standardize: StandardizeOpt = True,
    max_steps: MaxStepsOpt = None,
    seed: Annotated[
        int,
        typer.Option("--seed", help="Seed of the inner cross-validation's folds (--criterion cv), "
                     "any integer (same seed, same output)."),
    ] = 0,
    inclusion_penalty: Annotated[
        str,
        typer.Option("--inclusion-penalty", help="Prior log odds against a gene, in nats: "
                     "a number >= 0 (0, the default: the paper's type-II maximum likelihood) "
                     "or 'bic' (log(samples)/2). With --criterion cv the number of genes is "
                     "chosen on held-out data; the penalty only shapes the path."),
    ] = "0",
    multiclass: MulticlassOpt = DEFAULT_MULTICLASS,
    groups: Annotated[
        str | None,
        typer.Option(
            "--groups",
            help="obs column (e.g. donor or patient): the inner cross-validation (--criterion "
            "cv) holds out whole groups, so the number of genes is chosen for new donors, not "
            "for new cells of known ones; each group's held-out error goes to groups.tsv.",
            show_default=False,
        ),
    ] = None,
    covariates: CovariatesOpt = None,
    pseudobulk: PseudobulkOpt = None,
    n_jobs: Annotated[
        int,
        typer.Option("--n-jobs", "-j", help="Parallel workers for the classes and the "
                     "cross-validation's folds (-1: all cores); the results do not depend on it."),
    ] = -1,
    certainty: Annotated[
        bool,
        typer.Option("--certainty/--no-certainty", help="Give every selected gene its inclusion "
                     "probability and credible set (the pip, credible_set, set_probability and "
                     "alternatives columns, inclusion.png): a spike-and-slab fit on the selected "
                     "genes and the genes most correlated with them."),
    ] = True,
    lazy: Annotated[
        bool,
        typer.Option("--lazy", help="h5ad/zarr only: leave X on disk, read in chunks of 10,000 "
                     "rows (needs dask: the dask extra). The preprocessing and fold changes take one "
                     "pass over it each; the fit gathers the --max-samples sketch, or without it fits "
                     "every row exactly by a few passes over the store per path step."),
    ] = False,
    max_samples: Annotated[
        str,
        typer.Option("--max-samples", metavar="N|auto|all",
                     help="Fit on a stratified sketch of at most N samples (the same fraction of "
                     f"every class, evenly spaced; N >= 2). 'auto': above {AUTO_SKETCH:,} samples "
                     f"a sketch of {AUTO_SKETCH:,} with at least {SKETCH_FLOOR} of every class; "
                     "'all': every sample, exactly (hours for tens of thousands)."),
    ] = "auto",
    out: Annotated[
        Path,
        typer.Option(
            "--out",
            "-o",
            help="Output folder (written atomically): genes.tsv, genes.gmt (CLASS_up / CLASS_down "
            "sets), genes.rnk (pre-ranked list; rnk/CLASS.rnk per class), frontier.tsv and "
            "frontier.png (held-out log-loss and error against the number of genes; --criterion "
            "cv), path.tsv, path.png, inclusion.png, certainty.png, model.json, report.html (one "
            "self-contained page: summary, signature table, figures, the command). With --model "
            "spike-slab: genes.tsv, credible_sets.tsv, genes.gmt, genes.rnk (or rnk/) and "
            "model.json.",
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
    figures: FiguresOpt = True,
    quiet: QuietOpt = False,
    show: Annotated[
        int,
        typer.Option("--show", help="Genes listed in the summary (per class); 0: no gene table."),
    ] = 10,
):
    """Fit ARD (or --model spike-slab) on DATA and write the ranked genes, gene sets, path and a portable model."""
    with handle_errors():
        import ardselect

        spikeslab = model.value == "spike-slab"
        if spikeslab:
            _refuse_ard_options(ctx)
        if show < 0:
            msg = f"--show must be 0 or more, got {show}"
            raise UsageError(msg)
        penalty = _inclusion_penalty(inclusion_penalty)
        if n_jobs == 0 or n_jobs < -1:
            msg = f"--n-jobs must be a number of workers (1 or more) or -1 (all cores), got {n_jobs}"
            raise UsageError(msg)
        if panel is not None and panel < 1:
            msg = f"--panel must be a number of genes (1 or more), got {panel}"
            raise UsageError(msg)
        if panel is not None and criterion.value != "cv":
            msg = (f"--panel is chosen on the inner cross-validation's frontier (--criterion cv), "
                   f"not with --criterion {criterion.value}; --max-genes caps each class instead")
            raise UsageError(msg)
        if groups is not None:
            _groups_need_cv(criterion.value)
        held = covariate_names(covariates)
        if pseudobulk is not None:
            if groups is not None:
                msg = ("--pseudobulk holds out whole donors already; leave --groups out (the "
                       "donor-level samples are grouped by the --pseudobulk column)")
                raise UsageError(msg)
            if lazy or option_given(ctx, "max_samples"):
                msg = "--pseudobulk fits the donor-level samples; leave --lazy and --max-samples out"
                raise UsageError(msg)
        max_samples = parse_max_samples(max_samples)
        if write_h5ad is not None and write_h5ad.suffix != ".h5ad":
            msg = f"--write-h5ad needs a .h5ad file name, got {write_h5ad.name}"
            raise UsageError(msg)
        if figures and not spikeslab:
            ardselect.pl.require_matplotlib()  # before the fit, not after it
        inputs = (data, labels)
        check_output(out, overwrite=overwrite, kind="output folder", folder=True, inputs=inputs,
                     ours=FIT_FOLDER)
        if write_h5ad is not None:
            check_apart(out, write_h5ad, folder_option="--out", file_option="--write-h5ad")
            check_output(write_h5ad, overwrite=overwrite, kind="file", inputs=inputs)
        check_source(data, layer, use_raw, lazy=lazy)
        if gene_symbols is not None and symbol_key is not None:
            msg = "give --gene-symbols or --symbol-key, not both"
            raise UsageError(msg)
        given = read_input(data, genes_in_rows=genes_in_rows, label_key=label_key, labels=labels,
                           layer=layer, use_raw=use_raw, gene_columns=gene_columns, drop=drop,
                           groups=groups, covariates=held, symbol_key=symbol_key, lazy=lazy)
        adata = given.adata
        if gene_symbols is not None:
            _attach_symbols(adata, gene_symbols)
            symbol_key = "symbol"
        check_positive(given.labels, positive)
        if pseudobulk is not None:
            with input_errors(data):
                adata = ardselect.pseudobulk(adata, label_key, pseudobulk, layer=layer,
                                             use_raw=use_raw or None)
            layer, use_raw, groups = None, False, pseudobulk
            if criterion.value == "cv" and adata.obs[pseudobulk].nunique() < 2:
                msg = f"--pseudobulk {pseudobulk}: a single donor; at least 2 are needed"
                raise ardselect.exceptions.DataError(msg)
        cv = criterion.value == "cv" and not spikeslab
        with input_errors(data):
            expression = ardselect.ExpressionData.from_anndata(
                adata, label_key, layer=layer, use_raw=use_raw, groups=groups if cv else None,
                symbol_key=symbol_key, covariates=held)
        expression.notice_scaled_x()
        preprocessor = ardselect.preprocessing.Preprocessor(
            log=log.value, pseudocount=pseudocount, floor=floor, cap=cap, standardize=standardize)
        estimator = ardselect.SpikeSlabClassifier() if spikeslab else ardselect.ARDClassifier(
            criterion=criterion.value, random_state=seed_value(seed), n_jobs=n_jobs,
            certainty=certainty, inclusion_penalty=penalty, max_samples=max_samples,
            max_genes=max_genes, panel=panel, cv_rule=cv_rule.value, multiclass=multiclass.value,
            **({} if max_steps is None else {"max_steps": int(max_steps)}))
        written = FitOutputs(data=data, label_key=label_key, out=out, write_h5ad=write_h5ad,
                             overwrite=overwrite, symbol_key_given=symbol_key is not None,
                             command=command_line(ctx), figures=figures)
        if spikeslab:
            _fit_spikeslab(expression, preprocessor, positive, adata, written, quiet=quiet,
                           show=show)
            return
        n_paths = _n_paths(estimator, expression, positive)
        if max_samples is None and adata.n_obs > LARGE_FIT:
            warn_line(
                f"{adata.n_obs:,} samples and --max-samples all: the exact fit runs EP on every "
                f"sample along {n_paths} paths and can take hours; --max-samples auto fits a "
                f"stratified sketch of {AUTO_SKETCH:,} instead")
        with path_progress(n_paths, quiet=quiet):
            sig = ardselect.fit_signature(expression, preprocessor=preprocessor,
                                          estimator=estimator, positive=positive)
        written.ard(sig, adata)
        if not quiet:
            _fit_summary(sig, adata, written, show)


def _fit_spikeslab(expression, preprocessor, positive, adata, written, *, quiet, show):
    """``fit --model spike-slab``: rank genes by PIP and write SPIKESLAB_OUTPUTS and the .rnk files."""
    import ardselect

    if not quiet:
        stdout_console().print(f"fitting the spike-and-slab model on "
                               f"{data_shape(adata, use_raw=expression.use_raw)} ...")
    sig = ardselect.fit_signature(expression, preprocessor=preprocessor,
                                  estimator=ardselect.SpikeSlabClassifier(), positive=positive)
    written.spikeslab(sig, adata)
    if not quiet:
        _spikeslab_summary(sig, adata, written, show)


def parse_max_samples(value: str):
    """``--max-samples`` as the estimator takes it: an int >= 2, ``"auto"`` or None (``all``)."""
    text = str(value).strip().lower()
    if text in ("auto", "all"):
        return None if text == "all" else "auto"
    try:
        n = int(text)
    except ValueError:
        n = None
    if n is None or n < 2:
        msg = f"--max-samples must be an integer >= 2, 'auto' or 'all', got {value!r}"
        raise UsageError(msg)
    return n


def _n_paths(estimator, expression, positive) -> int:
    """Paths the fit runs, for the progress display.

    One per problem, and with the inner cross-validation one more per fold and repeat (at most
    cv x cv_repeats: fewer folds when a class is small).
    """
    import pandas as pd

    n_classes = pd.Series(expression.labels).dropna().astype(str).nunique()
    n_problems = n_classes if (n_classes > 2 and positive is None) else 1
    if resolve_multiclass(estimator.multiclass, estimator.panel) == "shared":
        n_problems = 1  # one path for all classes
    n_folds = estimator.cv * estimator.cv_repeats if estimator.criterion == "cv" else 0
    return n_problems * (1 + n_folds)


@dataclass(frozen=True)
class FitOutputs:
    """Where ``fit`` writes, and how: the folder, the .h5ad file and what names the genes."""

    data: Path
    label_key: str
    out: Path
    write_h5ad: Path | None
    overwrite: bool
    symbol_key_given: bool
    command: str
    figures: bool = True

    def title(self, sig) -> str:
        """The figures' title: the data, the comparison and the criterion."""
        if len(sig.problems) > 1:
            est = sig.estimator
            shared = (", shared genes" if resolve_multiclass(est.multiclass, est.panel) == "shared"
                      else "")
            return (f"{self.data.name}: {self.label_key}, each class vs rest{shared} "
                    f"({sig.criterion})")
        return f"{self.data.name}: {sig.classes[1]} vs {sig.classes[0]} ({sig.criterion})"

    def _gene_lists(self, sig, tmp: Path) -> None:
        """genes.tsv, genes.gmt and the .rnk files."""
        import ardselect

        multi = len(sig.problems) > 1
        ardselect.io.write_tsv(sig.ranked if multi else sig.ranked.drop(columns="class"),
                               tmp / "genes.tsv")
        ardselect.io.write_gmt(sig.enrichment_sets(symbol_key_given=self.symbol_key_given),
                               tmp / "genes.gmt")
        for name, group in _rnk_files(sig.problems):
            ardselect.io.write_rnk(
                sig.ranked_list(group, symbol_key_given=self.symbol_key_given), tmp / name)

    def _h5ad(self, sig, adata, tx) -> None:
        if self.write_h5ad is not None:
            sig.to_anndata(adata, symbol_key_given=self.symbol_key_given)
            adata.write_h5ad(tx.file(self.write_h5ad))

    def ard(self, sig, adata) -> None:
        """Every output of the ARD fit, written atomically."""
        import ardselect

        pl = ardselect.pl
        multi = len(sig.problems) > 1
        title = self.title(sig)
        with Transaction() as tx:
            tmp = tx.directory(self.out, replace=self.overwrite)
            self._gene_lists(sig, tmp)
            if len(sig.frontier):
                ardselect.io.write_tsv(sig.frontier if multi
                                       else sig.frontier.drop(columns="class"),
                                       tmp / "frontier.tsv")
                if self.figures:
                    pl.save_png(pl.frontier(sig.frontier, title=title), tmp / "frontier.png")
            if sig.groups_key is not None:
                ardselect.io.write_tsv(sig.cv_groups.rename(columns={"group": sig.groups_key}),
                                       tmp / "groups.tsv")
            if sig.covariate_names:
                weights = sig.covariates
                ardselect.io.write_tsv(weights if multi else weights.drop(columns="class"),
                                       tmp / "covariates.tsv")
            ardselect.io.write_tsv(sig.path, tmp / "path.tsv")
            if self.figures:
                pl.save_png(pl.path(sig.path, title=title), tmp / "path.png")
                pl.save_png(pl.inclusion(sig.ranked, title=title), tmp / "inclusion.png")
                pl.save_png(pl.certainty(sig.ranked, title=title), tmp / "certainty.png")
            sig.model.save(tmp / "model.json")
            write_fit_report(tmp, sig, adata, data=self.data, label_key=self.label_key,
                             command=self.command)
            self._h5ad(sig, adata, tx)
            tx.commit()

    def spikeslab(self, sig, adata) -> None:
        """Every output of the spike-and-slab fit (SPIKESLAB_OUTPUTS, .rnk), written atomically."""
        import ardselect

        multi = len(sig.problems) > 1
        sets = sig.credible_sets
        with Transaction() as tx:
            tmp = tx.directory(self.out, replace=self.overwrite)
            self._gene_lists(sig, tmp)
            ardselect.io.write_tsv(sets if multi else sets.drop(columns="class"),
                                   tmp / "credible_sets.tsv")
            sig.model.save(tmp / "model.json")
            self._h5ad(sig, adata, tx)
            tx.commit()


def _groups_need_cv(criterion: str) -> None:
    """A usage error (exit 2) for --groups with a criterion other than cv, in the library's words."""
    from ardselect.choices import groups_need_cv

    try:
        groups_need_cv(criterion)
    except ValueError as exc:
        msg = f"--groups: {exc}"
        raise UsageError(msg) from None


def _refuse_ard_options(ctx):
    """A usage error (exit 2) for the first option of the ARD path given with --model spike-slab."""
    refuse_given(ctx, ARD_ONLY, "--model spike-slab")


def _attach_symbols(adata, path: Path) -> None:
    """``var["symbol"]`` from a two-column table of gene identifier and symbol (``--gene-symbols``)."""
    import pandas as pd

    from ._util import check_input

    check_input(path)
    sep = "\t" if path.name.lower().removesuffix(".gz").endswith((".tsv", ".txt")) else ","
    table = pd.read_csv(path, sep=sep, header=None, dtype=str, keep_default_na=False)
    if table.shape[1] < 2:
        msg = f"--gene-symbols {path.name}: needs two columns (gene identifier, symbol)"
        raise UsageError(msg)
    ids, symbols = table.iloc[:, 0].str.strip(), table.iloc[:, 1].str.strip()
    known = ids.isin(adata.var_names.astype(str))
    if not known.any():
        shown = ", ".join(ids.head(3))
        msg = (f"--gene-symbols {path.name}: none of its identifiers ({shown}, ...) is a gene "
               f"of the data (such as {', '.join(map(str, adata.var_names[:3]))})")
        raise UsageError(msg)
    mapping = dict(zip(ids[known], symbols[known], strict=True))
    adata.var["symbol"] = [mapping.get(str(g), "") for g in adata.var_names]


def _spikeslab_summary(sig, adata, written: FitOutputs, show):
    import pandas as pd

    console = stdout_console()
    classes = sig.classes
    threshold = float(sig.estimator.threshold)
    ranked = sig.ranked
    sets = sig.credible_sets
    console.print(
        f"[bold]{written.data.name}[/]: {data_shape(adata, use_raw=sig.use_raw)}; "
        f"{written.label_key}: {class_counts(adata.obs[written.label_key])}"
    )
    console.print(f"preprocessing: {sig.preprocessing.describe()}")
    shown = False
    for cls in display_classes(ranked["class"]):
        block = ranked[ranked["class"] == cls]
        n_sel = int(block["selected"].sum())
        n_sets = int(sets.loc[sets["class"] == cls, "set"].nunique())
        what = f"{cls} vs rest" if len(classes) > 2 else f"{classes[1]} vs {classes[0]}"
        console.print(f"{what}: {n_sel} gene(s) with PIP > {threshold:g}, {n_sets} credible "
                      f"set(s); expected number of genes in the model {block['pip'].sum():.1f}")
        rows = block.head(show)
        if rows.empty:
            continue
        table = summary_table(console)
        cut = {"overflow": "ellipsis", "max_width": 40} if console.is_terminal else {}
        for col, kw in (("rank", {"justify": "right"}), ("gene", {}), ("description", cut),
                        ("direction", {}), ("pip", {"justify": "right"}),
                        ("set", {"justify": "right"}), ("weight", {"justify": "right"}),
                        ("weight_sd", {"justify": "right"})):
            table.add_column(col, **kw)
        for row in rows.itertuples():
            cset = "" if pd.isna(row.credible_set) else str(row.credible_set)
            direction = row.direction + (" *" if row.note else "")
            table.add_row(str(row.rank), row.gene, row.description, direction, f"{row.pip:.3f}",
                          cset, f"{row.weight:+.3f}", f"{row.weight_sd:.3f}")
        console.print(table)
        shown = True
    if shown:
        console.print(
            "pip: posterior probability that the gene is in the model, averaged over every other "
            "gene being in or out (genes that stand in for each other share it); set: the "
            "gene's credible set (credible_sets.tsv); direction: mean higher (up) or lower "
            "(down) in the class than in the rest; *: the weight has the other sign; weight: "
            "posterior mean and sd"
        )
    rnk = [name for name, _ in _rnk_files(sig.problems)]
    if len(rnk) > 1:
        rnk = [f"rnk/ ({len(rnk)} .rnk files)"]
    out, write_h5ad = written.out, written.write_h5ad
    files = ", ".join(f"{out}/{name}" for name in (*SPIKESLAB_OUTPUTS, *rnk))
    console.print(f"wrote {files}" + (f", {write_h5ad}" if write_h5ad else ""))


def _how_chosen(frontier, cls, criterion, step):
    """How a class's model was chosen, for the summary: the frontier's numbers, or the step."""
    if criterion != "cv" or not len(frontier):
        return f"by {criterion} (path step {step})"
    block = frontier[frontier["class"].astype(str) == str(cls)]
    row = block[block["chosen"].astype(bool)].iloc[0]
    one_se = int(block.loc[block["one_se"].astype(bool), "n_genes"].iloc[0])
    if int(row["n_genes"]) == 0:
        return ("selected: no gene set beat the class frequencies on held-out data (held-out "
                f"log-loss {row['cv_log_loss']:.3f}); the model predicts the class frequency")
    return (f"selected by cross-validation: held-out log-loss {row['cv_log_loss']:.3f} +- "
            f"{row['cv_log_loss_se']:.3f}, error {100 * row['cv_error']:.1f}% (smallest within "
            f"one s.e.: {one_se} genes; frontier.png)")


def _inclusion_penalty(value: str):
    """``--inclusion-penalty``: ``"bic"`` or a finite number >= 0."""
    if value == "bic":
        return value
    try:
        number = float(value)
    except ValueError:
        number = float("nan")
    if not (number >= 0 and number < float("inf")):
        msg = f"--inclusion-penalty must be 'bic' or a number >= 0, got {value!r}"
        raise UsageError(msg)
    return number


def _rnk_files(problems):
    """``(file name, class)`` of the pre-ranked lists: ``genes.rnk``, or ``rnk/CLASS.rnk`` per class.

    Class names become file names with anything but letters, digits, ``.``, ``-`` and ``_``
    replaced by ``_`` (a number is appended if two classes then collide).
    """
    import re

    problems = [str(p) for p in problems]
    if len(problems) == 1:
        return [("genes.rnk", problems[0])]
    out, used = [], set()
    for p in problems:
        stem = re.sub(r"[^A-Za-z0-9._-]", "_", p).strip(".") or "class"
        name, k = stem, 1
        while name.lower() in used:
            k += 1
            name = f"{stem}_{k}"
        used.add(name.lower())
        out.append((f"rnk/{name}.rnk", p))
    return out


def _summary_header(console, sig, adata, written: FitOutputs):
    """The summary's lines on the data, the preprocessing, the covariates and the rows fitted."""
    console.print(
        f"[bold]{written.data.name}[/]: {data_shape(adata, use_raw=sig.use_raw)}; "
        f"{written.label_key}: {class_counts(adata.obs[written.label_key])}"
    )
    console.print(f"preprocessing: {sig.preprocessing.describe()}")
    pseudo = adata.uns.get("pseudobulk")
    if pseudo is not None:
        console.print(f"pseudobulk: {int(pseudo['n_samples'])} {pseudo['donor']}-and-label "
                      f"samples from {int(pseudo['n_cells'])} cells (counts from "
                      f"{pseudo['input']}, then {pseudo['normalisation']})")
    if sig.covariate_names:
        console.print(f"covariates held in every model: {', '.join(sig.covariate_names)} "
                      "(weights: covariates.tsv)")
    n_fit = sig.n_fit_samples
    if n_fit < adata.n_obs:
        console.print(f"fitted on a stratified sketch of {n_fit} of {adata.n_obs} samples "
                      "(--max-samples)")
    elif sig.n_store_passes:
        console.print(f"fitted exactly on all {n_fit} samples of the store, by "
                      f"{sig.n_store_passes} passes over its chunks")


def _fit_summary(sig, adata, written: FitOutputs, show):
    import pandas as pd

    console = stdout_console()
    classes, ranked, criterion = sig.classes, sig.ranked, sig.criterion
    groups, covariates = sig.groups_key, sig.covariate_names
    _summary_header(console, sig, adata, written)
    shown = False
    frontier = sig.frontier
    for cls in display_classes(ranked["class"]):
        block = ranked[ranked["class"] == cls]
        n_sel = int(block["selected"].sum())
        step = sig.chosen_step[cls]
        what = f"{cls} vs rest" if len(classes) > 2 else f"{classes[1]} vs {classes[0]}"
        console.print(f"{what}: {n_sel} gene(s) {_how_chosen(frontier, cls, criterion, step)}")
        rows = block[block["selected"]].head(show)
        if rows.empty:  # --show 0, or no gene selected: no empty table
            continue
        table = summary_table(console)
        # (descriptions are cut to 40 characters on a terminal only)
        cut = {"overflow": "ellipsis", "max_width": 40} if console.is_terminal else {}
        for col, kw in (
            ("rank", {"justify": "right"}),
            ("gene", {}),
            ("description", cut),
            ("direction", {}),
            ("contribution", {"justify": "right"}),
            ("weight", {"justify": "right"}),
            ("pip", {"justify": "right"}),
            ("set (P)", {"justify": "right"}),
            ("in folds", {"justify": "right"}),
        ):
            table.add_column(col, **kw)
        for row in rows.itertuples():
            folds = "-" if pd.isna(row.cv_frequency) else f"{100 * row.cv_frequency:.0f}%"
            direction = row.direction + (" *" if row.note else "")
            pip = "-" if pd.isna(row.pip) else f"{row.pip:.2f}"
            cset = ("-" if pd.isna(row.credible_set)
                    else f"{int(row.credible_set)} ({row.set_probability:.2f})")
            table.add_row(str(row.rank), row.gene, row.description, direction,
                          f"{row.contribution:+.3f}", f"{row.weight:+.3f}", pip, cset, folds)
        console.print(table)
        shown = True
    if shown:
        console.print(
            "direction: mean higher (up) or lower (down) in the class than in the rest; *: the "
            "model's weight has the other sign (genes.tsv, note). contribution: the gene's part of "
            "the model's separation of the class from the rest (ranks the genes); weight: "
            "posterior mean; pip: probability that the gene belongs in the model; set (P): its "
            "credible set of interchangeable genes and the probability that the model holds one "
            "of them (alternatives: genes.tsv); in folds: share of the cross-validation's models "
            "holding the gene"
        )
    rnk = [name for name, _ in _rnk_files(sig.problems)]
    if len(rnk) > 1:
        rnk = [f"rnk/ ({len(rnk)} .rnk files)"]
    front = FRONTIER_OUTPUTS if len(frontier) else ()
    if groups is not None:
        table = sig.cv_groups
        worst = table.sort_values(["cv_error", "cv_log_loss"], ascending=False).iloc[0]
        n_held = int(table["n_samples"].sum())
        error = float((table["cv_error"] * table["n_samples"]).sum()) / n_held
        loss = float((table["cv_log_loss"] * table["n_samples"]).sum()) / n_held
        console.print(
            f"chosen for new {groups} groups: whole {groups} groups held out ({len(table)} "
            f"groups), held-out error {100 * error:.1f}%, log-loss {loss:.3f}; worst "
            f"{worst['group']}: {100 * worst['cv_error']:.1f}% (groups.tsv)")
        front = (*front, *GROUP_OUTPUTS)
    if covariates:
        front = (*front, *COVARIATE_OUTPUTS)
    out, write_h5ad = written.out, written.write_h5ad
    names = (*FIT_OUTPUTS[:2], *rnk, *front, *FIT_OUTPUTS[2:])
    if not written.figures:
        names = [name for name in names if not name.endswith(".png")]
    files = ", ".join(f"{out}/{name}" for name in names)
    console.print(f"wrote {files}" + (f", {write_h5ad}" if write_h5ad else ""))
