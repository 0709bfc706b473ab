"""AnnData front end: rank genes for a phenotype in ``obs`` and store the results in the object.

The core (:func:`_rank_core`) takes arrays and returns plain tables; :func:`rank_genes` reads them
out of and writes them into an AnnData, scanpy style.
"""

from __future__ import annotations

import contextlib
import logging
import re
import warnings
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ._anndata_results import (
    _SCANPY_PARAMS,
    RankResult,
    _log_fold_changes,
    _scanpy_record,
    _with_directions,
    _write_results,
)
from ._design import as_design
from ._expression import ExpressionData
from ._neighbourhood import set_memberships
from ._validation import (
    check_class_labels,
    check_clean_names,
    check_finite_named,
    check_unique_names,
)
from ._version import __version__
from .exceptions import DataError, LabelError
from .model import PortableModel
from .preprocessing import Preprocessor

__all__ = ["rank_genes"]

#: Columns of older records' gene tables (``uns[key]["ranked"]``) under their current names, read
#: through by ``get.ranked_genes_df``: the weight's posterior was ``mean`` / ``sd``.
GENE_TABLE_RENAMES = {"mean": "weight", "sd": "weight_sd"}
#: The same for the default (ARD) model's table: its conditional Bayes factor was ``log_bf``
#: (the spike-and-slab table's ``log_bf`` is its own, and keeps the name).
ARD_GENE_TABLE_RENAMES = {**GENE_TABLE_RENAMES, "log_bf": "log_bf_conditional"}

_RANKED_COLUMNS = (
    "class",
    "rank",
    "gene",
    "description",
    "selected",
    "pip",
    "credible_set",
    "set_probability",
    "alternatives",
    "contribution",
    "std_weight",
    "relevance",
    "weight",
    "weight_sd",
    "alpha",
    "entered_step",
    "log_bf_conditional",
    "z",
    "log_bf_marginal",
    "cv_frequency",
    "t_stat",
    "log2_fc",
    "direction",
    "note",
)
#: The ranked table of ``model="spike-slab"`` (:class:`~ardselect.SpikeSlabClassifier`).
_SPIKESLAB_COLUMNS = (
    "class",
    "rank",
    "gene",
    "description",
    "selected",
    "pip",
    "credible_set",
    "set_pip",
    "log_bf",
    "weight",
    "weight_sd",
    "z",
    "p_sign",
    "t_stat",
    "log2_fc",
    "direction",
    "note",
)
#: Columns of its credible-set table (``SpikeSlabClassifier.credible_sets_`` with gene names).
_CREDIBLE_COLUMNS = ("class", "set", "gene", "description", "pip", "set_pip", "size", "purity")
#: The credible sets of the ARD signature (``ARDClassifier.credible_sets_``).
_ARD_CREDIBLE_COLUMNS = ("class", "set", "gene", "description", "pip", "set_probability", "size",
                         "purity")
#: Columns of its hyperprior table (``SpikeSlabClassifier.hyper_results_``).
_HYPER_COLUMNS = ("class", "expected_genes", "prior_inclusion", "log_evidence", "weight",
                  "converged", "n_iter")
#: The models :func:`rank_genes` fits.
MODELS = ("ard", "spike-slab")
#: Columns of the frontier table (``ARDClassifier.cv_results_`` with the class labels).
_FRONTIER_COLUMNS = ("class", "n_genes", "step", "cv_log_loss", "cv_log_loss_se", "cv_error",
                     "cv_error_se", "temperature", "variance_scale", "offset",
                     "cv_log_loss_final", "chosen", "one_se")
_PATH_COLUMNS = (
    "class",
    "step",
    "action",
    "gene",
    "n_features",
    "log_evidence",
    "loo_error",
    "loo_prob_error",
    "chosen",
)


@contextlib.contextmanager
def _relabel_progress(mapping: Mapping[str, str]):
    """Rewrite ``class_label`` on ``ardselect.path`` progress records to the original class names."""
    log = logging.getLogger("ardselect.path")

    def relabel(record):
        label = getattr(record, "class_label", None)
        if label is not None and str(label) in mapping:
            record.class_label = mapping[str(label)]
        return True

    log.addFilter(relabel)
    try:
        yield
    finally:
        log.removeFilter(relabel)


def _encode_labels(labels: np.ndarray, positive):
    """Integer codes for the estimator and the original labels they stand for.

    Binary: code 1 is the positive class (``positive``, or the second label in sorted order).
    More than two classes with ``positive``: ``positive`` vs the rest (labelled ``"rest"``).
    More than two classes without: codes index the sorted labels (one-vs-rest inside the estimator).
    """
    uniq = np.unique(labels)
    if uniq.size < 2:
        msg = f"the labels have a single class ({uniq[0]!r}); at least two classes are needed"
        raise LabelError(msg)
    if positive is not None:
        positive = str(positive)
        if positive not in set(uniq):
            msg = f"positive class {positive!r} is not a label; labels: {', '.join(uniq)}"
            raise LabelError(msg)
        negative = str(uniq[uniq != positive][0]) if uniq.size == 2 else "rest"
        classes = [negative, positive]
        codes = (labels == positive).astype(np.intp)
        return classes, codes, positive
    if uniq.size == 2:
        classes = [str(uniq[0]), str(uniq[1])]
        return classes, (labels == uniq[1]).astype(np.intp), classes[1]
    codes = np.searchsorted(uniq, labels).astype(np.intp)
    return [str(c) for c in uniq], codes, None


def _credible_table(sets, columns, label_of, column, names, descriptions):
    """An estimator's credible-set table by class label and gene name, in ``columns``.

    ``column`` maps an estimator feature name to its position among the fitted genes, whose
    names and descriptions are ``names`` and ``descriptions``.
    """
    credible = sets.copy()
    credible["class"] = [label_of[c] for c in credible["class"]]
    idx = np.array([column[str(f)] for f in credible["feature"]], dtype=np.intp)
    credible["gene"] = names[idx]
    credible["description"] = descriptions[idx]
    credible = credible[list(columns)].reset_index(drop=True)
    credible["set"] = credible["set"].astype(np.int64)
    credible["size"] = credible["size"].astype(np.int64)
    return credible


def _rank_core(
    X,
    labels,
    gene_names,
    *,
    descriptions=None,
    positive=None,
    criterion: str = "cv",
    log: str = "auto",
    pseudocount: float | None = None,
    floor: float | None = None,
    cap: float | None = None,
    standardize: bool = True,
    max_steps: int | None = None,
    estimator_params: Mapping | None = None,
    model_extra: Mapping | None = None,
    sample_names=None,
    log1p_base: float | None = None,
    groups=None,
    model: str = "ard",
    covariates=None,
    covariate_encoder=None,
) -> RankResult:
    """Preprocess, fit the classifier and tabulate its results (arrays in, tables out).

    ``sample_names`` (one per row of ``X``) name the samples in messages about bad values;
    ``groups`` (one per row, optional) are held out whole by the inner cross-validation;
    ``covariates`` (``(n, c)``, encoded by ``covariate_encoder``, optional) are held in every
    model.
    ``model`` is ``"ard"`` (:class:`~ardselect.ARDClassifier`) or ``"spike-slab"``
    (:class:`~ardselect.SpikeSlabClassifier`).
    """
    from ._certainty import class_contrast
    from ._classifier import ARDClassifier
    from ._spikeslab import SpikeSlabClassifier

    labels = pd.Series(labels)
    if labels.shape[0] == 0 or X.shape[0] == 0:
        msg = f"the data hold {X.shape[0]} samples: nothing to rank"
        raise DataError(msg)
    if sample_names is None:
        sample_names = [f"row {i}" for i in range(labels.shape[0])]
    # (the labels are complete: ExpressionData refuses samples without one)
    check_class_labels(labels)
    labels = labels.astype(str).to_numpy()
    gene_names = np.asarray([str(g) for g in gene_names], dtype=object)
    if X.shape[1] != gene_names.shape[0]:
        msg = f"{gene_names.shape[0]} gene names for {X.shape[1]} columns"
        raise DataError(msg)
    if labels.shape[0] != X.shape[0]:
        msg = f"{labels.shape[0]} labels for {X.shape[0]} samples; they must match one to one"
        raise LabelError(msg)
    check_unique_names(gene_names, "gene")
    check_clean_names(gene_names, "gene")
    check_finite_named(X, sample_names, gene_names)
    if descriptions is None:
        descriptions = np.full(gene_names.shape[0], "", dtype=object)
    descriptions = np.asarray(
        ["" if pd.isna(d) else str(d) for d in descriptions], dtype=object
    )
    classes, codes, positive = _encode_labels(labels, positive)

    pre = Preprocessor(
        log=log, pseudocount=pseudocount, floor=floor, cap=cap, standardize=standardize
    ).fit(X, feature_names=gene_names)
    params = dict(estimator_params or {})
    if params.get("constant_features") == "raise" and pre.n_dropped_:
        # (the estimator never sees them: the preprocessing drops constant genes first)
        shown = ", ".join(map(repr, gene_names[~pre.keep_][:5]))
        msg = (f"{pre.n_dropped_} gene(s) are constant (e.g. {shown}); drop them or pass "
               "constant_features='warn' or 'ignore'")
        raise DataError(msg)
    kept = np.flatnonzero(pre.keep_)
    kept_names = gene_names[kept]

    spikeslab = model == "spike-slab"
    if spikeslab:
        est = SpikeSlabClassifier(**params)
    else:
        if max_steps is not None:
            params["max_steps"] = int(max_steps)
        est = ARDClassifier(criterion=criterion, **params)
    # The estimator fits the stratified sketch of max_samples only: take its rows first and
    # transform those (the preprocessing statistics above come from every sample).
    X_fit, codes_fit, groups_fit, fit_rows = _rows_to_fit(est, X, codes, groups)
    Z = pre.transform(X_fit)
    del X_fit
    code_to_label = {str(i): str(c) for i, c in enumerate(classes)}
    with _relabel_progress(code_to_label), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if spikeslab:
            est.fit(Z, codes_fit)
        else:
            if covariates is not None and fit_rows is not None:
                covariates = np.asarray(covariates)[fit_rows]
            est.fit(Z, codes_fit, groups=groups_fit, covariates=covariates)
    for w in caught:
        # The estimator names classes by their integer codes ("class 9"); name them by their
        # labels. Only "class <code>" is rewritten, so other numbers (max_steps=2000) stay.
        text = re.sub(r"\bclass (\d+)\b",
                      lambda m: f"class {classes[int(m.group(1))]!r}"
                      if int(m.group(1)) < len(classes) else m.group(0),
                      str(w.message))
        warnings.warn_explicit(text, w.category, w.filename, w.lineno)
    est_classes = [classes[int(c)] for c in est.classes_]
    label_of = {c: classes[int(c)] for c in est.classes_}
    label_of.update({str(c): classes[int(c)] for c in est.classes_})

    # Estimator column name -> kept gene index.
    est_names = getattr(est, "feature_names_in_", None)
    if est_names is None:
        est_names = [f"x{i}" for i in range(Z.shape[1])]
    column = {str(n): i for i, n in enumerate(est_names)}

    ranked = est.ranked_features()
    if spikeslab:
        # Welch's t of each gene, the problem's class against the rest, as ARD's table has it.
        t_stat = {c: class_contrast(Z, codes_fit == int(c)) for c in dict.fromkeys(ranked["class"])}
        ranked["t_stat"] = np.concatenate([
            t_stat[c][[column[str(f)] for f in block["feature"]]]
            for c, block in ranked.groupby("class", sort=False)])
    ranked["class"] = [label_of[c] for c in ranked["class"]]
    cols = np.array([column[str(f)] for f in ranked["feature"]])
    ranked["gene"] = kept_names[cols]
    ranked["description"] = descriptions[kept[cols]]
    if not spikeslab and "relevance" not in ranked.columns:
        ranked["relevance"] = np.where(ranked["selected"], 1.0 / ranked["alpha"], 0.0)
    if not spikeslab:
        ranked["entered_step"] = ranked["entered_step"].astype("Int64")
    dropped = gene_names[~pre.keep_]
    if dropped.size:
        extra = [_dropped_rows(block, cls, dropped, descriptions[~pre.keep_])
                 for cls, block in ranked.groupby("class", sort=False)]
        parts = []
        for (_cls, block), add in zip(ranked.groupby("class", sort=False), extra, strict=True):
            parts.extend([block, add])
        ranked = pd.concat(parts, ignore_index=True)
    lfc = _log_fold_changes(X, labels, pre, log1p_base=log1p_base)
    ranked = _with_directions(ranked, lfc, gene_names, classes, positive)
    ranked = ranked[list(_SPIKESLAB_COLUMNS if spikeslab else _RANKED_COLUMNS)]
    ranked = ranked.reset_index(drop=True)
    ranked["rank"] = ranked["rank"].astype(np.int64)
    ranked["selected"] = ranked["selected"].astype(bool)
    if spikeslab:
        ranked["credible_set"] = ranked["credible_set"].astype("Int64")
        credible = _credible_table(est.credible_sets_, _CREDIBLE_COLUMNS, label_of, column,
                                   kept_names, descriptions[kept])
        hyper = est.hyper_results_.copy()
        hyper["class"] = [label_of[c] for c in hyper["class"]]
        hyper = hyper[list(_HYPER_COLUMNS)].reset_index(drop=True)
        model = PortableModel.from_estimator(est, pre, kept_names, est_classes,
                                             extra={"positive": positive, **(model_extra or {})})
        return RankResult(
            classes=est_classes, positive=positive, ranked=ranked,
            path=pd.DataFrame(columns=list(_PATH_COLUMNS)),
            frontier=pd.DataFrame(columns=list(_FRONTIER_COLUMNS)), chosen_step={},
            log2_fc=lfc, preprocessor=pre, estimator=est, model=model, dropped=dropped,
            kind="spike-slab", credible=credible, hyper=hyper)

    ranked["credible_set"] = ranked["credible_set"].astype("Int64")
    credible = _credible_table(est.credible_sets_, _ARD_CREDIBLE_COLUMNS, label_of, column,
                               kept_names, descriptions[kept])
    # The alternatives by gene name (the estimator's table names its columns).
    member = set_memberships(credible, "gene")
    ranked["alternatives"] = [member.get((c, str(g)), (0, 0.0, ""))[2]
                              for c, g in zip(ranked["class"], ranked["gene"], strict=True)]
    path = est.path_.rename(columns={"n_basis": "n_features"})  # genes: the basis is features
    path["class"] = [label_of[c] for c in path["class"]]
    path["gene"] = [
        "" if (f is None or f == "" or pd.isna(f)) else
        ("(intercept)" if str(f) not in column else str(kept_names[column[str(f)]]))
        for f in path["feature"]
    ]
    # chosen_step_ is aligned with the binary problems: the second class, or every class.
    problems = est.classes_[1:] if len(est.classes_) == 2 else est.classes_
    chosen_step = {label_of[c]: int(s) for c, s in zip(problems, est.chosen_step_, strict=True)}
    path["chosen"] = [
        int(s) == chosen_step.get(c, -1) for c, s in zip(path["class"], path["step"], strict=True)
    ]
    path = path[list(_PATH_COLUMNS)].reset_index(drop=True)
    frontier = pd.DataFrame(getattr(est, "cv_results_", pd.DataFrame()))
    if len(frontier):
        frontier["class"] = [label_of[c] for c in frontier["class"]]
        frontier = frontier[list(_FRONTIER_COLUMNS)].reset_index(drop=True)
    else:
        frontier = pd.DataFrame(columns=list(_FRONTIER_COLUMNS))
    cv_groups = pd.DataFrame(getattr(est, "cv_groups_", pd.DataFrame()))
    covariate_weights = None
    if covariate_encoder is not None:
        from ._covariates import covariate_table

        covariate_weights = covariate_table(covariate_encoder, est.covariate_coef_,
                                            est.covariate_coef_sd_, list(chosen_step))

    extra = {
        "criterion": criterion,
        "chosen_step": chosen_step,
        "positive": positive,
    }
    extra.update(model_extra or {})
    if covariate_encoder is not None:
        extra["covariates"] = covariate_encoder.to_dict()
    model = PortableModel.from_estimator(est, pre, kept_names, est_classes, extra=extra)
    return RankResult(
        classes=est_classes,
        positive=positive,
        ranked=ranked,
        path=path,
        frontier=frontier,
        cv_groups=cv_groups,
        covariates=covariate_weights,
        chosen_step=chosen_step,
        log2_fc=lfc,
        preprocessor=pre,
        estimator=est,
        model=model,
        dropped=dropped,
        fit_rows=fit_rows,
        credible=credible,
    )


def _rows_to_fit(est, X, codes, groups):
    """The rows the estimator fits: ``(X, codes, groups, rows)``, ``rows`` None for every row.

    With ``max_samples`` below the number of in-memory samples, the stratified sketch the
    estimator would draw (:func:`ardselect._rows.sketch`, its parameters and ``groups`` checked
    first, as its ``fit`` checks them); the estimator then fits those rows as given. Otherwise
    everything, sketched (or not) by the estimator itself (a dask array gathers only its sketch).
    """
    from ._constraints import check_params
    from ._cv import check_groups
    from ._rows import sketch

    max_samples = getattr(est, "max_samples", None)
    if max_samples is None or as_design(X).lazy:
        return X, codes, groups, None
    check_params(est)
    groups = check_groups(groups, codes, est.criterion)
    X, codes_fit, rows = sketch(X, codes, max_samples)
    if rows is None:
        return X, codes, groups, None
    return X, codes_fit, None if groups is None else groups[rows], rows


#: The values of a gene dropped before the fit (constant): out of the model, no evidence either
#: way; a column not named here is NaN.
_DROPPED_VALUES = {"selected": False, "contribution": 0.0, "std_weight": 0.0, "relevance": 0.0,
                   "pip": 0.0, "weight": 0.0, "weight_sd": 0.0, "alpha": np.inf}
_DROPPED_MISSING_INT = ("entered_step", "credible_set")


def _dropped_rows(block: pd.DataFrame, cls, dropped, descriptions) -> pd.DataFrame:
    """The rows of a ranked table for the genes dropped before the fit (constant ones).

    They follow the ranked genes of class ``cls`` (``block``): out of the model
    (:data:`_DROPPED_VALUES`), the table's other number columns missing, its other columns left
    to the concatenation.
    """
    k = dropped.size
    values = {"class": cls, "rank": np.arange(len(block) + 1, len(block) + 1 + k),
              "gene": dropped, "description": descriptions}
    for col, dtype in block.dtypes.items():
        if col in values:
            continue
        if col in _DROPPED_MISSING_INT:
            values[col] = pd.array([pd.NA] * k, dtype="Int64")
        elif col in _DROPPED_VALUES:
            values[col] = _DROPPED_VALUES[col]
        elif pd.api.types.is_float_dtype(dtype):
            values[col] = np.nan
    return pd.DataFrame(values)


def _check_rank_options(estimator_params, key_added, max_steps, model="ard", criterion="cv"):
    """One clear error for options that would otherwise fail deep inside, or write a wrong key."""
    from ._classifier import ARDClassifier
    from ._spikeslab import SpikeSlabClassifier

    if not isinstance(model, str) or model not in MODELS:
        msg = f"model must be one of {', '.join(map(repr, MODELS))}; got {model!r}"
        raise ValueError(msg)
    cls = SpikeSlabClassifier if model == "spike-slab" else ARDClassifier
    if estimator_params is not None and not isinstance(estimator_params, Mapping):
        msg = (f"estimator_params must be a dict of {cls.__name__} parameters, not "
               f"{type(estimator_params).__name__}")
        raise TypeError(msg)
    given = set(estimator_params or {})
    valid = set(cls().get_params())
    unknown = sorted(given - valid)
    if unknown:
        msg = (f"estimator_params has unknown {cls.__name__} parameter(s) {unknown}; valid: "
               f"{', '.join(sorted(valid))}")
        raise ValueError(msg)
    if model == "spike-slab":
        # The spike-and-slab model has no path: it averages over every model instead of choosing.
        if criterion != "cv":
            msg = (f"criterion={criterion!r} does not apply to model='spike-slab' (it averages "
                   "over models instead of choosing one on a path)")
            raise ValueError(msg)
        if max_steps is not None:
            msg = "max_steps does not apply to model='spike-slab' (it has no path)"
            raise ValueError(msg)
    if "criterion" in given:
        msg = "give criterion as rank_genes' own argument, not in estimator_params"
        raise ValueError(msg)
    if "max_steps" in given and max_steps is not None:
        msg = "give max_steps either as rank_genes' own argument or in estimator_params, not both"
        raise ValueError(msg)
    if not isinstance(key_added, str) or not key_added or "/" in key_added:
        # h5ad and zarr read "a/b" back as a nested group, so the results would be lost.
        msg = f"key_added must be a non-empty string without '/'; got {key_added!r}"
        raise ValueError(msg)


def rank_genes(
    adata,
    groupby: str,
    *,
    positive: str | None = None,
    layer: str | None = None,
    use_raw: bool = False,
    criterion: str = "cv",
    log: str = "auto",
    pseudocount: float | None = None,
    floor: float | None = None,
    cap: float | None = None,
    standardize: bool = True,
    symbol_key: str | None = None,
    max_steps: int | None = None,
    groups: str | None = None,
    estimator_params: Mapping | None = None,
    key_added: str = "ardselect",
    copy: bool = False,
    model: str = "ard",
    covariates: Sequence[str] | None = None,
):
    """Select and rank the genes that predict ``adata.obs[groupby]`` with an ARD probit classifier.

    The expression matrix (``X``, a layer, or ``raw``) is preprocessed (floor/cap, log, constant
    genes dropped, per-gene standardisation; see :class:`ardselect.preprocessing.Preprocessor`), then an
    :class:`~ardselect.ARDClassifier` runs its add/delete path and keeps the model chosen by
    ``criterion``. Two classes give one ranked list; more give one list per class (that class vs
    the rest), as marker genes. Samples are observations, genes variables.

    Parameters
    ----------
    adata : anndata.AnnData of shape (n_obs, n_vars)
        Dense or sparse expression.
    groupby : str
        The ``obs`` column with the class labels (any type; compared as strings).
    positive : str, optional
        The positive class, whose weights are positive when it is more expressed. With two classes
        the default is the second label in sorted order; with more, giving ``positive`` fits that
        class against all the others (one list) instead of every class against the rest.
    layer : str, optional
        Use ``adata.layers[layer]`` instead of ``X``.
    use_raw : bool, default=False
        Use ``adata.raw.X``, as scanpy's ``rank_genes_groups`` does: ``raw``'s genes are fitted,
        which may be more than ``var``'s (every gene of ``var`` must be among them). The tables
        in ``uns`` hold every gene fitted; the ``var`` and ``varm`` columns hold the results of
        ``var``'s genes, looked up by name. See :func:`ardselect.io.expression`.
    criterion : {"cv", "loo", "loo-prob", "evidence"}, default="cv"
        Model choice (see :class:`~ardselect.ARDClassifier`): the model size of lowest held-out
        log-loss along the path, by inner cross-validation (``"cv"``, seeded by
        ``estimator_params``' ``random_state``, 0 by default), or on the path by the paper's
        criteria.
    log : {"auto", "none", "log2", "log10", "ln"}, default="auto"
        Log transform, ``log_b(x + pseudocount)``; ``"auto"`` takes ``log2`` when the bulk of the
        genes look like counts or raw intensities and nothing otherwise
        (:func:`ardselect.preprocessing.auto_log`).
    pseudocount : float, optional
        Added before the log: by default 0 with a positive ``floor``, else 1.
    floor, cap : float, optional
        Bounds applied before the log (Affymetrix MAS 4 convention: 100 and 16000).
    standardize : bool, default=True
        Centre and scale each gene with its mean and sd (sparse data are scaled only).
    symbol_key : str, optional
        ``var`` column of gene symbols or descriptions for the ranked table; by default the first
        of ``symbol``, ``gene_symbol(s)``, ``gene_name(s)``, ``feature_name``, ``description``.
    max_steps : int, optional
        Largest number of path steps (the estimator's default otherwise).
    groups : str, optional
        An ``obs`` column of groups (donor, patient, batch): the inner cross-validation of
        ``criterion="cv"`` holds out whole groups, so the number of genes is chosen for new
        donors, not for new cells of the donors it has seen. Each group's held-out error and
        log-loss are stored (:func:`ardselect.get.cv_groups_df`).
    estimator_params : dict, optional
        Further :class:`~ardselect.ARDClassifier` parameters (``tol``, ``loo_prob_scale``, ...).
    key_added : str, default="ardselect"
        Prefix of the ``var`` columns and key in ``uns``.
    copy : bool, default=False
        Work on and return a copy instead of writing into ``adata``.
    model : {"ard", "spike-slab"}, default="ard"
        ``"spike-slab"`` fits :class:`~ardselect.SpikeSlabClassifier` instead: every gene gets a
        posterior inclusion probability (PIP), the probability under the model that it belongs in
        it, averaged over every other gene being in or out; ``selected`` is PIP above 0.5 (its
        ``threshold``). ``criterion`` and ``max_steps`` do not apply to it (an error if given);
        ``estimator_params`` are :class:`~ardselect.SpikeSlabClassifier` parameters. See the
        record it writes below.
    covariates : sequence of str, optional
        ``obs`` columns of known covariates (batch, donor sex, age, percent mitochondrial
        reads) held in every model of the path: numeric columns standardised, categorical ones
        (strings, booleans, categories) one-hot with the first level in sorted order dropped.
        They are never pruned, never counted or listed as genes; their weights are stored apart
        (:func:`ardselect.get.covariates_df`), and the portable model records the encoding, so
        that its predictions read the same columns from new data by name. ARD model only. See
        the user guide, "Known covariates and donor-level signatures".

    Returns
    -------
    adata : anndata.AnnData or None
        The copy if ``copy=True``, else ``None``. Writes, with ``key = key_added``:

        * ``var[f"{key}_rank"]`` (int64): rank of the gene, 1 = first (multi-class: its
          best rank over the classes);
        * ``var[f"{key}_selected"]`` (bool): in the chosen model (of any class);
        * ``var[f"{key}_weight"]`` (float64): posterior mean weight of the standardised gene, 0
          outside the model (multi-class: in the problem of the class where it ranks best);
        * ``var[f"{key}_weight_sd"]`` (float64): its posterior standard deviation;
        * ``var[f"{key}_pip"]``, ``var[f"{key}_set_probability"]`` (float64) and
          ``var[f"{key}_credible_set"]`` (int64, 0 for a gene in no set): the gene's posterior
          inclusion probability (NaN outside the neighbourhood of the selection), the
          probability that its credible set holds a gene of the model, and the set's number
          (the guide's "How sure is each gene"; with ``certainty=False`` in
          ``estimator_params``, NaN and 0);
        * ``var[f"{key}_log_bf_conditional"]``, ``var[f"{key}_log_bf_marginal"]``,
          ``var[f"{key}_cv_frequency"]``, ``var[f"{key}_t_stat"]`` (float64): the gene's log Bayes
          factor for being in the chosen model given the other selected genes, its one-gene log
          Bayes factor, its share of the inner cross-validation's fold models of the chosen size,
          and Welch's t of the class against the rest (see
          :meth:`ardselect.ARDClassifier.ranked_features`; NaN for constant genes);
        * multi-class only: ``var[f"{key}_class"]`` (str), the class where the gene ranks best,
          and ``varm[f"{key}_rank"]`` (int64), ``varm[f"{key}_weight"]`` (float64),
          ``varm[f"{key}_selected"]`` (bool), ``varm[f"{key}_credible_set"]`` (int64) and the
          six certainty columns above (float64), each (n_vars, n_classes) with columns in
          ``uns[key]["problems"]`` order;
        * ``uns[key]``: ``params`` (every argument and the ardselect version), ``classes``
          (str array), ``problems`` (str array: the class of each binary problem), ``positive`` (str),
          ``chosen_step`` (int array aligned with ``problems``; :func:`ardselect.get.chosen_steps`
          gives a dict), ``n_fit_samples`` (the samples the model was fitted on: every one, or
          the stratified sketch of ``estimator_params["max_samples"]``), ``credible_sets``
          (read it with :func:`ardselect.get.credible_sets_df`), ``ranked`` and
          ``path`` and ``frontier`` (tables as dicts of columns; read them with
          :func:`ardselect.get.ranked_genes_df`, :func:`ardselect.get.path_df` and
          :func:`ardselect.get.frontier_df`), ``cv_groups`` with ``groups`` (read it with
          :func:`ardselect.get.cv_groups_df`), ``covariates`` with ``covariates`` (the
          covariates' weights; :func:`ardselect.get.covariates_df`),
          ``preprocessing`` (what was applied, including ``n_dropped`` constant genes) and
          ``model_json`` (the portable model as JSON text; see :func:`ardselect.get.model`);
        * ``uns[key]`` also holds the layout of ``scanpy.tl.rank_genes_groups``, so that
          ``sc.get.rank_genes_groups_df(adata, None, key=key)``, ``sc.pl.rank_genes_groups`` and
          ``sc.pl.rank_genes_groups_dotplot`` (``key=key``) and friends read it unchanged:
          ``params["reference"] = "rest"``, ``params["method"] = "ardselect"``, and record arrays
          with one field per class: ``names`` (object: genes in the chosen model first, by
          decreasing score, then the genes the model leaves out, in rank order), ``scores``
          (float64: posterior mean / sd of the gene's weight for that class, 0 outside the
          model), ``logfoldchanges`` (float64: log2 fold change computed as scanpy does, NaN when
          the data are not on a non-negative log scale), ``pvals`` and ``pvals_adj`` (NaN: no
          test is run, and none is pretended). Two classes give both classes' lists from the one
          model (the first class's weights negated); ``positive`` with more classes gives that
          class's list only.

        With ``model="spike-slab"`` the record differs: the ranked table
        (:func:`ardselect.get.ranked_genes_df`) has columns ``class``, ``rank`` (by decreasing
        PIP), ``gene``, ``description``, ``selected``, ``pip``, ``credible_set`` (the id, 1, 2, ...
        per class, of the gene's credible set; ``<NA>`` if none), ``set_pip`` (that set's sum of
        PIPs), ``log_bf`` (posterior minus prior log odds of inclusion), ``weight``, ``weight_sd``,
        ``z``,
        ``p_sign``, ``t_stat``, ``log2_fc``, ``direction`` and ``note``; ``var`` gets ``rank``,
        ``selected``, ``weight``, ``weight_sd``, ``pip``, ``set_pip``, ``log_bf``, ``p_sign``,
        ``t_stat`` (float64) and ``credible_set`` (int64, 0 for a gene in no set), each prefixed by
        ``key`` (and in ``varm`` with more than two classes); ``uns[key]`` holds ``model``
        (``"spike-slab"``), ``threshold``, ``coverage``, ``ranked``, ``credible_sets``
        (:func:`ardselect.get.credible_sets_df`), ``hyper`` (the hyperprior's nodes and their
        weights) and ``model_json`` (the portable spike-and-slab model, which holds the
        standardised training values when genes outnumber samples), but no path, frontier or
        chosen step. A credible set gathers
        correlated genes the data cannot tell apart whose PIPs add up to at least ``coverage``
        (0.95): the model probably holds one of them, though not which.

    Raises
    ------
    LabelError
        ``groupby`` is not an ``obs`` column (the message lists them), a single class, missing
        labels, or an unknown ``positive``.
    DataError
        NaN or infinite values, duplicated gene names, every gene constant.
    ValueError
        ``estimator_params`` names an unknown parameter, or ``criterion`` (an argument of its
        own), or ``max_steps`` given twice; ``key_added`` empty or with a ``/`` (h5ad and zarr
        would read it back as a nested key). These are checked before any work.

    Examples
    --------
    >>> import numpy as np, anndata as ad, pandas as pd
    >>> import ardselect
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(30, 8))
    >>> X[:15, 2] += 3.0
    >>> obs = pd.DataFrame({"group": ["a"] * 15 + ["b"] * 15}, index=[f"s{i}" for i in range(30)])
    >>> adata = ad.AnnData(X, obs=obs, var=pd.DataFrame(index=[f"g{j}" for j in range(8)]))
    >>> ardselect.rank_genes(adata, "group", positive="a")
    >>> top = ardselect.get.ranked_genes_df(adata).iloc[0]
    >>> top["gene"], bool(top["selected"])
    ('g2', True)
    >>> bool(adata.var.loc["g2", "ardselect_weight"] > 0)
    True
    """
    import anndata as ad

    if not isinstance(adata, ad.AnnData):
        msg = f"adata must be an AnnData object, not {type(adata).__name__}"
        raise TypeError(msg)
    _check_rank_options(estimator_params, key_added, max_steps, model, criterion)
    if isinstance(covariates, str):
        covariates = [covariates]
    params = {
        "groupby": groupby,
        "positive": positive,
        "layer": layer,
        "use_raw": use_raw,
        "criterion": criterion,
        "log": log,
        "pseudocount": pseudocount,
        "floor": floor,
        "cap": cap,
        "standardize": standardize,
        "symbol_key": symbol_key,
        "max_steps": max_steps,
        "groups": groups,
        "estimator_params": dict(estimator_params or {}),
        **({"covariates": list(covariates)} if covariates else {}),
        "key_added": key_added,
        "version": __version__,
    }
    if model != "ard":
        params["model"] = model
    if copy:
        adata = adata.copy()
    data = ExpressionData.from_anndata(adata, groupby, layer=layer, use_raw=use_raw,
                                       groups=groups, symbol_key=symbol_key,
                                       covariates=covariates)
    if groups is not None and (criterion != "cv" or model == "spike-slab"):
        what = f"model={model!r}" if model == "spike-slab" else f"criterion={criterion!r}"
        msg = f"groups are used by the inner cross-validation of criterion='cv' only; got {what}"
        raise ValueError(msg)
    encoder = covariate_values = None
    if data.covariates:
        if model == "spike-slab":
            msg = "covariates are held by the ARD model only; leave them out with model='spike-slab'"
            raise ValueError(msg)
        from ._covariates import CovariateEncoder

        encoder = CovariateEncoder(list(data.covariates))
        covariate_values = encoder.fit_transform(data.obs)
    data.notice_scaled_x()

    result = _rank_core(
        data.X,
        data.labels,
        data.var_names,
        descriptions=data.descriptions,
        positive=positive,
        criterion=criterion,
        log=log,
        pseudocount=pseudocount,
        floor=floor,
        cap=cap,
        standardize=standardize,
        max_steps=max_steps,
        estimator_params=estimator_params,
        model_extra={"label_key": groupby, "input": data.input_space, **data.pseudobulk},
        sample_names=data.obs_names,
        log1p_base=data.log1p_base,
        groups=data.groups,
        model=model,
        covariates=covariate_values,
        covariate_encoder=encoder,
    )
    _write_results(adata, result, key_added, params, symbol_key=data.symbol_key)
    record = _scanpy_record(result, data.var_names, result.log2_fc)
    if record is not None:
        adata.uns[key_added].update(record)
        adata.uns[key_added]["params"].update(_SCANPY_PARAMS)
    return adata if copy else None
