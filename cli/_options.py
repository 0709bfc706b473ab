"""Options and input helpers shared by the commands.

The choices and defaults come from ``ardselect.choices``, which the estimators and the
preprocessor read too (and which imports nothing, so ``ardselect --help`` stays instant).
"""

from __future__ import annotations

from contextlib import contextmanager
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from ardselect.choices import CRITERIA, CV_RULES, EXAMPLES, LOG_CHOICES, MULTICLASS

from ._util import UsageError, check_input

Criterion = Enum("Criterion", {c.replace("-", "_"): c for c in CRITERIA}, type=str)
LogChoice = Enum("LogChoice", {c: c for c in LOG_CHOICES}, type=str)
Example = Enum("Example", {c: c for c in EXAMPLES}, type=str)
Multiclass = Enum("Multiclass", {c: c for c in MULTICLASS}, type=str)
CvRule = Enum("CvRule", {c: c for c in CV_RULES}, type=str)
#: The defaults, as the estimators and the preprocessor have them (each tuple's first value).
DEFAULT_CRITERION = Criterion(CRITERIA[0])
DEFAULT_CV_RULE = CvRule(CV_RULES[0])
DEFAULT_MULTICLASS = Multiclass(MULTICLASS[0])
DEFAULT_LOG = LogChoice(LOG_CHOICES[0])
#: ``fit --model``: a copy of ``ardselect.signature._kinds.MODELS`` (checked in tests/test_cli_spikeslab.py).
MODELS = ("ard", "spike-slab")
Model = Enum("Model", {c.replace("-", "_"): c for c in MODELS}, type=str)

#: ``--multiclass``, as ``fit`` and ``evaluate`` take it.
MulticlassOpt = Annotated[
    Multiclass,
    typer.Option(
        "--multiclass",
        help="More than two classes: 'ovr' chooses each class's genes against the rest; 'shared' "
        "gives each gene one prior precision for all classes, so every class uses the same, "
        "smaller gene set (Khan SRBCT: 57 genes against 85, the same error; Sorlie: 44 against "
        "120, 17.6% error against 15.2%). 'auto' (the default): 'shared' with --panel, else "
        "'ovr'.",
    ),
]

#: ``--criterion``: every criterion, the default first.
CriterionOpt = Annotated[
    Criterion,
    typer.Option(
        "--criterion",
        "-c",
        help="How the model is chosen. 'cv' (the default): the number of genes of lowest "
        "held-out log-loss along the ARD path, by an inner cross-validation that refits the "
        "path on each fold (the accuracy-size frontier), with calibrated probabilities. On the "
        "path alone, as in Qi et al. (2004): 'loo' (smallest EP leave-one-out error, predictive "
        "ARD; among equal errors, the smallest LOO error probability, then the fewest genes), "
        "'loo-prob' (smallest LOO error probability), 'evidence' (largest EP evidence).",
        case_sensitive=False,
    ),
]

#: ``--max-genes``, as ``fit`` and ``evaluate`` take it.
PanelOpt = Annotated[
    int | None,
    typer.Option(
        "--panel",
        help="Panel budget: at most this many distinct genes over all classes together (the "
        "union of the classes' genes; >= 1), the best models of the frontier within it: one "
        "gene list shared by the classes, of the best shared size within the budget (with "
        "--multiclass ovr: each class's own genes, at most those it would choose alone). Needs "
        "--criterion cv. Default: no budget.",
        show_default=False,
    ),
]
MaxGenesOpt = Annotated[
    int | None,
    typer.Option(
        "--max-genes",
        help="Gene budget: the best model with at most this many genes per class (>= 1), chosen "
        "on the same frontier. Default: no budget.",
        show_default=False,
        min=1,
    ),
]

#: ``--cv-rule``, as ``fit`` and ``evaluate`` take it.
CvRuleOpt = Annotated[
    CvRule,
    typer.Option(
        "--cv-rule",
        help="How the inner cross-validation chooses the number of genes (fit's default "
        "--criterion cv; evaluate's ARD-EP): 'min' keeps the size of lowest held-out log-loss "
        "(the default); '1se' the smallest size within one standard error of it (fewer genes; "
        "glmnet's lambda.1se); 'min+paper' below 500 samples that or the LOO model of the "
        "paper's settings, whichever has the lower held-out log-loss by one standard error.",
    ),
]

# ---------------------------------------------------------------------------------------------
# Shared options
# ---------------------------------------------------------------------------------------------

DataArg = Annotated[
    Path,
    typer.Argument(
        help="Expression data: .h5ad, a .zarr AnnData store, .csv/.tsv/.txt (optionally .gz), or "
        ".gct (with --labels FILE.cls).",
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
    typer.Option("--layer", help="h5ad/zarr only: use this layer instead of X.", show_default=False),
]
UseRawOpt = Annotated[
    bool, typer.Option("--use-raw", help="h5ad/zarr only: use adata.raw.X and its genes (which "
                       "may be more than X's, as scanpy keeps them) instead of X.")
]
GenesInRowsOpt = Annotated[
    bool,
    typer.Option(
        "--genes-in-rows",
        help="CSV/TSV only: one row per gene and one column per sample (labels then come from "
        "a label row or --labels).",
    ),
]
GeneColumnsOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--gene-columns",
        help="CSV/TSV only: the gene columns (rows with --genes-in-rows), comma-separated names "
        "or FIRST:LAST ranges (repeatable). Every other numeric column is a sample annotation. "
        "Default: every numeric column, except those named like annotations (age, batch, code, "
        "label_num, ...), which are set aside with a warning.",
        show_default=False,
    ),
]
DropOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--drop",
        help="CSV/TSV only: numeric columns that are not genes (covariates, codes), "
        "comma-separated names or FIRST:LAST ranges (repeatable); kept as sample annotations.",
        show_default=False,
    ),
]
CovariatesOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--covariates",
        help="Known covariates held in every model (obs or table columns; comma-separated, "
        "repeatable), e.g. batch,sex,pct_mito: numeric ones standardised, categorical ones "
        "one-hot with one level dropped. Never pruned, never counted or listed as genes; their "
        "weights go to covariates.tsv, and predict needs the same columns by name.",
        show_default=False,
    ),
]
PseudobulkOpt = Annotated[
    str | None,
    typer.Option(
        "--pseudobulk",
        help="obs column of donors: sum the counts of each donor and label (from raw, --layer or "
        "X, whichever holds counts), normalise them (log1p of counts per million) and fit "
        "one sample per donor and label, donors held out whole by the cross-validation.",
        show_default=False,
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
        help="Log transform log_b(x + pseudocount). 'auto', decided on the bulk of the genes: "
        "none when most genes have negative values; else log2 when at least 10% of the genes "
        "reach above 50 or most are integer-valued (counts, intensities); else none. The choice "
        "and its reason are reported.",
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
    int, typer.Option("--seed", help="Seed of the random partitions, any integer (same seed, "
                      "same output).")
]
OverwriteOpt = Annotated[
    bool, typer.Option("--overwrite", help="Replace existing outputs (only once complete).")
]
QuietOpt = Annotated[
    bool, typer.Option("--quiet", "-q", help="No summary and no progress display.")
]
#: ``--figures/--no-figures``, as ``fit`` and ``evaluate`` take it.
FiguresOpt = Annotated[
    bool,
    typer.Option("--figures/--no-figures", help="Draw the PNG figures and show them in "
                 "report.html (needs matplotlib). --no-figures writes every table, the model and "
                 "the report without them: a few seconds less per run, for batches of fits."),
]


#: Options of the ARD model that ``--model spike-slab`` refuses when given, and why: the settings
#: ``ARDClassifier`` has and ``SpikeSlabClassifier`` lacks (tests/test_cli_spikeslab.py checks
#: it against the estimators), and the command line's own that only an ARD fit uses.
ARD_ONLY = {
    "criterion": ("--criterion", "it averages over gene sets instead of choosing one"),
    "max_genes": ("--max-genes", "it averages over gene sets instead of choosing one"),
    "panel": ("--panel", "it averages over gene sets instead of choosing one"),
    "cv_rule": ("--cv-rule", "it runs no inner cross-validation"),
    "inclusion_penalty": ("--inclusion-penalty", "its prior on the number of genes is built in"),
    "max_steps": ("--max-steps", "it has no path"),
    "multiclass": ("--multiclass", "it fits each class against the rest"),
    "seed": ("--seed", "it makes no random choice"),
    "lazy": ("--lazy", "it holds the whole matrix in memory"),
    "max_samples": ("--max-samples", "it fits every sample"),
    "groups": ("--groups", "it runs no inner cross-validation"),
    "n_jobs": ("--n-jobs", "it runs in one process"),
    "covariates": ("--covariates", "it holds no covariates"),
    "pseudobulk": ("--pseudobulk", "it runs no cross-validation over donors"),
    "certainty": ("--no-certainty", "its inclusion probabilities are its fit"),
}
#: Of those, the ones ``evaluate`` refuses: its ``--seed``, ``--n-jobs`` and ``--groups`` are
#: the partitions' and apply to either model.
EVALUATE_ARD_ONLY = ("max_steps", "max_genes", "cv_rule", "multiclass", "covariates")


def ard_only(*names) -> dict:
    """The entries ``names`` of :data:`ARD_ONLY`."""
    return {name: ARD_ONLY[name] for name in names}


def refuse_given(ctx, options: dict, context: str) -> None:
    """A usage error (exit 2) for the first of ``options`` given on the command line.

    ``options`` maps a parameter name to its option and why it does not apply with ``context``
    (such as ``--model spike-slab``).
    """
    for name, (option, why) in options.items():
        if given(ctx, name):
            msg = f"{option} does not apply to {context} ({why}); leave it out"
            raise UsageError(msg)


def given(ctx, name: str) -> bool:
    """Whether the parameter ``name`` was given on the command line (not left at its default)."""
    # (compared by name: typer may ship its own copy of click's ParameterSource)
    source = ctx.get_parameter_source(name)
    return source is not None and source.name not in ("DEFAULT", "DEFAULT_MAP")


def seed_value(seed: int) -> int:
    """``--seed`` as numpy and scikit-learn take seeds: itself in [0, 2**32), others hashed into it.

    Any integer is a meaningful seed (-1, 2**70); the same integer always gives the same seed.
    """
    if 0 <= seed < 2**32:
        return seed
    import numpy as np

    return int(np.random.SeedSequence([int(seed < 0), abs(seed)]).generate_state(1)[0])


def _column_list(values) -> list[str] | None:
    """``--gene-columns a,b --gene-columns c:d`` -> ``["a", "b", "c:d"]`` (None when not given)."""
    if values is None:
        return None
    out = [item.strip() for value in values for item in str(value).split(",") if item.strip()]
    return out


def _file_options(data, labels, gene_columns, drop):
    """The file checks of ``read_input``: inputs readable, ``--gene-columns`` / ``--drop`` parsed."""
    check_input(data)
    if labels is not None:
        check_input(labels)
    gene_columns, drop = _column_list(gene_columns), _column_list(drop) or []
    if gene_columns is not None and not gene_columns:
        msg = "--gene-columns names no column"
        raise UsageError(msg)
    return gene_columns, drop


def read_input(data, *, genes_in_rows, label_key, labels, layer=None, use_raw=False,
               gene_columns=None, drop=None, groups=None, covariates=None, symbol_key=None,
               lazy=False):
    """The labelled data of ``data``, read through the library's input door.

    ``ardselect.io.ExpressionData.read`` decides every input rule; its refusals are said in the
    command line's terms (:func:`input_errors`).
    """
    import ardselect

    gene_columns, drop = _file_options(data, labels, gene_columns, drop)
    with input_errors(data):
        return ardselect.io.ExpressionData.read(
            data, label_key, labels=labels, layer=layer, use_raw=use_raw,
            genes_in_rows=genes_in_rows, gene_columns=gene_columns, drop=drop, groups=groups,
            symbol_key=symbol_key, covariates=covariates, lazy=lazy)


def read_unlabelled(data, *, genes_in_rows, label_key, labels, layer=None, covariates=None,
                    lazy=False):
    """``data`` as an AnnData for a saved model: read as ``read_input`` reads, no rule on labels.

    The model takes its own genes by name (no gene column is set aside) and its own layer.
    """
    import ardselect

    _file_options(data, labels, None, None)
    with input_errors(data):
        return ardselect.io.ExpressionData.read_anndata(
            data, label_key=label_key, labels=labels, layer=layer, genes_in_rows=genes_in_rows,
            covariates=covariates, check_columns=False, lazy=lazy)


def check_source(data: Path, layer, use_raw: bool = False, *, lazy: bool = False):
    """``--layer`` and ``--use-raw`` against the file, before any work (the library's rule).

    The layer names are read from the store's index alone; a store that cannot be opened is left
    to the reader, which says why.
    """
    import ardselect

    with input_errors(data):
        return ardselect.io.ExpressionData.check_source(data, layer=layer, use_raw=use_raw,
                                                        lazy=lazy)


@contextmanager
def input_errors(data: Path):
    """The input door's refusals in the command line's terms: the one place they are translated.

    The library names the rule a refusal applies (``exc.rule``, ``exc.details``); the options
    and the file are named here. Usage errors (an option naming what the file lacks, options
    that exclude each other) exit with 2; the rest keep the library's exit code 1.
    """
    import ardselect

    try:
        yield
    except (ardselect.ArdselectError, ValueError) as exc:
        rule, details = getattr(exc, "rule", None), getattr(exc, "details", {})
        if rule == "no_raw":
            msg = f"--use-raw: {data.name} has no raw data"
            raise ardselect.exceptions.DataError(msg) from None
        msg = _usage_message(rule, details, data)
        if msg is None:
            raise
        raise UsageError(msg) from None


def _usage_message(rule, details: dict, data: Path) -> str | None:
    """The usage error (exit 2) of an input rule, or None when the library's error stands."""
    if rule == "obs_column":
        key, role = details["key"], details["role"]
        avail = ", ".join(details["available"]) or "none"
        if role == "label key":
            if details.get("transposed"):
                return (f"label key {key!r} not found in {data.name}, and "
                        f"{details['transposed']}: its genes look to be in rows and its samples "
                        "in columns; read it with --genes-in-rows (labels in a row, or --labels "
                        "FILE)")
            hint = "" if details["available"] else " (give labels with --labels FILE)"
            return f"label key {key!r} not found in {data.name}; available: {avail}{hint}"
        if role == "covariate":
            return f"--covariates: {key!r} is not a column of {data.name}; obs columns: {avail}"
        option = {"groups": "--groups", "donor key": "--pseudobulk"}[role]
        return f"{option} {key}: no column {key!r} in {data.name}; available: {avail}"
    if rule == "layer":
        layer, names = details["layer"], ", ".join(details["available"]) or "none"
        return f"--layer {layer}: {data.name} has no layer {layer!r}; its layers: {names}"
    if rule == "label_is_covariate":
        return f"--covariates: the label key {details['key']!r} cannot also be a covariate"
    return {
        "layer_and_raw": "give --layer or --use-raw, not both",
        "anndata_only": "--layer and --use-raw apply to .h5ad and .zarr input only",
        "table_only": "--gene-columns and --drop apply to CSV/TSV tables only",
        "lazy_raw": "--use-raw cannot be read lazily; give the matrix as X or --layer",
    }.get(rule)


def check_positive(labels, positive: str | None) -> None:
    """``--positive`` must be one of the labels (usage error, exit 2, listing them)."""
    if positive is None:
        return
    import pandas as pd

    values = sorted(pd.Series(labels).dropna().astype(str).unique())
    if str(positive) not in values:
        shown = ", ".join(values[:20]) + (", ..." if len(values) > 20 else "")
        msg = f"--positive {positive}: not a label; labels: {shown}"
        raise UsageError(msg)


def data_shape(adata, *, use_raw: bool) -> str:
    """``"N samples x G genes"``, the genes those the fit reads (``raw``'s with ``--use-raw``)."""
    import ardselect

    genes = ardselect.io.expression(adata, use_raw=use_raw).var_names.size
    return f"{adata.n_obs} samples x {genes} genes{' of raw' if use_raw else ''}"


def fitted_on_raw(adata, key: str = "ardselect") -> bool:
    """Whether the ranking stored under ``key`` was fitted on ``raw`` (``use_raw``)."""
    params = adata.uns[key].get("params", {})
    return bool(params.get("use_raw", False)) and adata.raw is not None


def covariate_names(values) -> list[str] | None:
    """``--covariates a,b --covariates c`` -> ``["a", "b", "c"]``; None when not given."""
    names = _column_list(values)
    if not names:
        return None
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        msg = f"--covariates names {dup!r} twice"
        raise UsageError(msg)
    return names


def display_classes(values) -> list:
    """The distinct ``values`` in the order figures and reports show classes.

    :func:`ardselect.pl.class_order`: clusters ``'0'`` .. ``'10'`` as 0, 1, 2, ..., 10.
    """
    import ardselect

    distinct = list(dict.fromkeys(values))
    rank = {c: k for k, c in enumerate(ardselect.pl.class_order(distinct))}
    return sorted(distinct, key=lambda v: rank[str(v)])


def class_counts(labels) -> str:
    import pandas as pd

    counts = pd.Series(labels).astype(str).value_counts(sort=False)
    return " / ".join(f"{k} {counts[k]}" for k in display_classes(counts.index))
