"""The front door: :func:`fit_signature` fits labelled expression data and returns a :class:`Signature`.

The fit runs in four named steps: the labels (checked and coded for the estimator), the
preprocessing (fitted on every sample), the fit (of a clone of the estimator, on the rows it
fits), and the tables (ranked genes, credible sets, path, frontier) by gene name and class
label. :func:`ardselect.rank_genes` writes a :class:`Signature` into an AnnData; the command line
writes its files from one.
"""

from __future__ import annotations

import contextlib
import logging
import re
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..dataio._expression import ExpressionData
from ..dataio._portable import PortableModel
from ..dataio._preprocessing import Preprocessor
from ..engine._design import as_design
from ..engine._validation import (
    check_class_labels,
    check_clean_names,
    check_finite_named,
    check_unique_names,
)
from ..estimators._neighbourhood import set_memberships
from ..exceptions import DataError, LabelError
from ._kinds import KINDS, kind_of

__all__ = ["Signature", "fit_signature"]


#: Columns of its hyperprior table (``SpikeSlabClassifier.hyper_results_``).
_HYPER_COLUMNS = ("class", "expected_genes", "prior_inclusion", "log_evidence", "weight",
                  "converged", "n_iter")
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


@dataclass(frozen=True, eq=False)
class Signature:
    """A fitted gene signature: what :func:`fit_signature` returns.

    Tables name genes and classes as the data do. :meth:`to_anndata` writes it into an AnnData
    (what :func:`ardselect.rank_genes` stores); :mod:`ardselect.io` writes its tables
    (``write_tsv``, ``write_gmt`` of :meth:`enrichment_sets`, ``write_rnk`` of
    :meth:`ranked_list`) and ``model.save`` its portable model.

    Attributes
    ----------
    ranked : pandas.DataFrame
        Every gene of every binary problem, by class then rank: the table
        :func:`ardselect.get.ranked_genes_df` reads back after :func:`~ardselect.rank_genes`,
        column for column and dtype for dtype (see it for the columns).
    gene_sets : dict of str to list of str
        Each binary problem's selected genes, in rank order, keyed by its class.
    path : pandas.DataFrame or None
        The ARD path (:func:`ardselect.get.path_df`); None for spike-and-slab.
    frontier : pandas.DataFrame or None
        The accuracy-size frontier of the inner cross-validation (:func:`ardselect.get.frontier_df`;
        no rows for the paper's criteria); None for spike-and-slab.
    credible_sets : pandas.DataFrame
        The credible sets (:func:`ardselect.get.credible_sets_df`).
    model : ardselect.model.PortableModel
        The portable model: preprocessing and weights, ready to ``predict_proba`` new data.
    classes : list of str
        The class labels, in the estimator's class order.
    problems : list of str
        The class of each binary problem: the positive class, or every class against the rest.
    positive : str or None
        The positive class (None when every class is fitted against the rest).
    chosen_step : dict of str to int
        The path step chosen for each problem (empty for spike-and-slab).
    preprocessing : ardselect.preprocessing.Preprocessor
        The fitted preprocessing.
    estimator : ARDClassifier or SpikeSlabClassifier
        The fitted estimator (a clone of the one given).
    kind : {"ard", "spike-slab"}
        Which model was fitted.
    genes : pandas.Index
        The genes fitted (the columns of the data), constant ones included.
    label_key, groups_key, symbol_key, layer, use_raw, covariate_names
        Where the data came from (:class:`~ardselect.ExpressionData`).
    log2_fc : dict of str to ndarray of shape (n_genes,)
        Each class's log2 fold change against the rest, as scanpy computes it.
    dropped : ndarray of str
        The constant genes the preprocessing dropped.
    hyper : pandas.DataFrame or None
        The hyperprior's nodes and weights (spike-and-slab only).
    cv_groups : pandas.DataFrame or None
        Each group's held-out error and log-loss (ARD with groups only).
    covariates : pandas.DataFrame or None
        The covariates' weights (ARD with covariates only).
    n_fit_samples : int
        The samples the estimator was fitted on: every one, or its stratified sketch.
    n_store_passes : int
        Passes over the chunks of a lazily read matrix fitted exactly (0: the fit held its rows).
    """

    ranked: pd.DataFrame
    gene_sets: dict
    path: pd.DataFrame | None
    frontier: pd.DataFrame | None
    credible_sets: pd.DataFrame
    model: PortableModel
    classes: list
    problems: list
    positive: str | None
    chosen_step: dict
    preprocessing: Preprocessor
    estimator: object
    kind: str = "ard"
    genes: pd.Index = field(default_factory=lambda: pd.Index([]))
    label_key: str | None = None
    groups_key: str | None = None
    symbol_key: str | None = None
    layer: str | None = None
    use_raw: bool = False
    covariate_names: tuple = ()
    log2_fc: dict = field(default_factory=dict)
    dropped: np.ndarray = field(default_factory=lambda: np.array([], dtype=object))
    hyper: pd.DataFrame | None = None
    cv_groups: pd.DataFrame | None = None
    covariates: pd.DataFrame | None = None
    n_fit_samples: int = 0
    n_store_passes: int = 0

    @property
    def criterion(self) -> str | None:
        """The model choice of the ARD estimator (None for spike-and-slab)."""
        return getattr(self.estimator, "criterion", None)

    def enrichment_sets(self, *, symbol_key_given: bool = False) -> dict[str, tuple[str, list[str]]]:
        """The selected genes as ``{class}_up`` / ``{class}_down`` gene sets, with descriptions.

        What :func:`ardselect.get.gene_sets` returns for the same fit; write them with
        :func:`ardselect.io.write_gmt`. ``symbol_key_given`` says that the caller named the
        symbol column (``symbol_key``): such a column names the genes only where most of its
        values are single words.
        """
        from ._get import _enrichment_sets, _naming, _problem_pairs

        use_symbols, naming = _naming(self.symbol_key, self.ranked, chosen=symbol_key_given)
        threshold = KINDS[self.kind].threshold(getattr(self.estimator, "threshold", 0.5))
        return _enrichment_sets(
            self.ranked[self.ranked["selected"]], _problem_pairs(self.classes, self.problems),
            label_key=self.label_key, criterion=self.criterion, threshold=threshold,
            use_symbols=use_symbols, naming=naming)

    def ranked_list(self, group: str | None = None, *,
                    symbol_key_given: bool = False) -> pd.DataFrame:
        """Every gene of a class with a signed score, for pre-ranked enrichment (``io.write_rnk``).

        What :func:`ardselect.get.ranked_list` returns for the same fit; ``group`` is the class
        (by default the only problem's), ``symbol_key_given`` as in :meth:`enrichment_sets`.
        """
        from ._get import _naming, _ranked_list

        if group is None:
            if len(self.problems) > 1:
                msg = f"give the group: one of {', '.join(self.problems)}"
                raise KeyError(msg)
            group = self.problems[0]
        if str(group) not in self.problems:
            msg = f"group {group!r} not in the results; groups: {', '.join(self.problems)}"
            raise KeyError(msg)
        table = self.ranked[self.ranked["class"] == str(group)].reset_index(drop=True)
        use_symbols, _ = _naming(self.symbol_key, table, chosen=symbol_key_given)
        return _ranked_list(table, use_symbols=use_symbols)

    def to_anndata(self, adata, key_added: str = "ardselect", *,
                   symbol_key_given: bool = False) -> None:
        """Write the signature into ``adata`` as :func:`ardselect.rank_genes` does.

        ``adata`` holds the samples and genes fitted (with ``use_raw``, its ``raw`` holds the
        genes fitted and every gene of ``var`` must be among them); ``var``, ``varm`` and
        ``uns[key_added]`` get the keys :func:`ardselect.rank_genes` lists, and
        ``uns[key_added]["params"]`` records the settings of the preprocessing and the
        estimator. ``symbol_key_given`` records the symbol column as named by the caller (see
        :meth:`enrichment_sets`).
        """
        from ..dataio._input_rules import check_var_in_raw
        from ._anndata_results import check_key, write_signature

        check_key(key_added)
        if self.use_raw:
            check_var_in_raw(adata.var_names, self.genes)
        params = settings_record(self, key_added, positive=self.positive,
                                 symbol_key=self.symbol_key if symbol_key_given else None)
        write_signature(adata, self, key_added, params)


def settings_record(sig: Signature, key_added: str, *, positive, symbol_key) -> dict:
    """``uns[key]["params"]``: the data's keys, and every setting of the preprocessing and estimator.

    ``positive`` and ``symbol_key`` are recorded as the caller gave them (None: the default).
    """
    from .._version import __version__

    pre = sig.preprocessing.get_params()
    est = dict(sig.estimator.get_params(deep=False))
    kind = KINDS[sig.kind]
    # (a model without a path has no criterion or steps: the record keeps rank_genes' defaults)
    criterion = est.pop("criterion") if kind.has_path else "cv"
    max_steps = est.pop("max_steps") if kind.has_path else None
    params = {
        "groupby": sig.label_key,
        "positive": positive,
        "layer": sig.layer,
        "use_raw": bool(sig.use_raw),
        "criterion": criterion,
        "log": pre["log"],
        "pseudocount": pre["pseudocount"],
        "floor": pre["floor"],
        "cap": pre["cap"],
        "standardize": pre["standardize"],
        "symbol_key": symbol_key,
        "max_steps": max_steps,
        "groups": sig.groups_key,
        "estimator_params": est,
        **({"covariates": list(sig.covariate_names)} if sig.covariate_names else {}),
        "key_added": key_added,
        "version": __version__,
    }
    if not kind.has_path:
        params["model"] = kind.name
    return params


def fit_signature(data: ExpressionData, *, preprocessor: Preprocessor | None = None,
                  estimator=None, positive: str | None = None) -> Signature:
    """Fit a gene signature to labelled expression data.

    The data are preprocessed (floor/cap, log, constant genes dropped, per-gene standardisation),
    then a clone of ``estimator`` is fitted: by default an :class:`~ardselect.ARDClassifier`,
    whose add/delete path keeps the model its ``criterion`` chooses. Two classes give one
    ranked list; more give one list per class (that class against the rest). The groups and
    known covariates of ``data`` go to the estimator's fit.

    Parameters
    ----------
    data : ExpressionData
        The samples, genes and labels (:meth:`ExpressionData.from_anndata`).
    preprocessor : ardselect.preprocessing.Preprocessor, optional
        The preprocessing (unfitted; cloned, never changed); by default ``Preprocessor()``.
    estimator : ARDClassifier or SpikeSlabClassifier, optional
        The estimator with its settings (unfitted; cloned, never changed); by default
        ``ARDClassifier()``. Groups need ``criterion="cv"``; covariates need the ARD model.
    positive : str, optional
        The positive class, whose weights are positive when it is more expressed. With two
        classes the default is the second label in sorted order; with more, giving it fits that
        class against all the others (one list) instead of every class against the rest. It is
        an argument here, not a setting of the estimator or a field of the data, because it
        decides how the labels are coded for whichever estimator is fitted.

    Returns
    -------
    Signature
        The ranked genes, gene sets, path, frontier, credible sets and portable model.

    Raises
    ------
    TypeError
        ``preprocessor`` or ``estimator`` of another type.
    LabelError
        Missing labels, a single class, labels that cannot be classes, an unknown ``positive``.
    DataError
        No samples, NaN or infinite values, duplicated gene names, every gene constant.
    ValueError
        Groups without ``criterion="cv"``, covariates with spike-and-slab.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from ardselect import ExpressionData, fit_signature
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(30, 8))
    >>> X[:15, 2] += 3.0
    >>> data = ExpressionData(X=X, labels=np.repeat(["a", "b"], 15),
    ...                       var_names=pd.Index([f"g{j}" for j in range(8)]),
    ...                       obs_names=pd.Index([f"s{i}" for i in range(30)]), label_key="group")
    >>> sig = fit_signature(data, positive="a")
    >>> sig.problems, sig.gene_sets["a"][0]
    (['a'], 'g2')
    >>> top = sig.ranked.iloc[0]
    >>> top["gene"], bool(top["selected"]), top["direction"]
    ('g2', True, 'up')
    """
    from sklearn.base import clone

    pre, est = _check_settings(preprocessor, estimator)
    kind_of(est).check_data(est, groups=data.groups, covariates=data.covariates)
    labels, genes, descriptions, samples = _checked_data(data)
    classes, codes, positive = _encode_labels(labels, positive)
    pre, est = clone(pre), clone(est)
    encoder = covariate_values = None
    if data.covariates:
        from ..dataio._covariates import CovariateEncoder

        encoder = CovariateEncoder(list(data.covariates))
        covariate_values = encoder.fit_transform(data.obs)
    _preprocess(pre, est, data.X, genes)
    fit = _fit(est, pre, data.X, codes, data.groups, covariate_values, classes)
    return _tables(data, fit, labels=labels, genes=genes, descriptions=descriptions,
                   classes=classes, positive=positive, encoder=encoder,
                   n_samples=len(samples))


def _check_settings(preprocessor, estimator):
    """The preprocessing and the estimator to clone, by default ``Preprocessor()`` and ``ARDClassifier()``."""
    from ..estimators._classifier import ARDClassifier
    from ..estimators._spikeslab import SpikeSlabClassifier

    pre = Preprocessor() if preprocessor is None else preprocessor
    if not isinstance(pre, Preprocessor):
        msg = (f"preprocessor must be an ardselect.preprocessing.Preprocessor, not "
               f"{type(pre).__name__}")
        raise TypeError(msg)
    est = ARDClassifier() if estimator is None else estimator
    if not isinstance(est, (ARDClassifier, SpikeSlabClassifier)):
        msg = (f"estimator must be an ARDClassifier or a SpikeSlabClassifier, not "
               f"{type(est).__name__}")
        raise TypeError(msg)
    return pre, est


# The labels ----------------------------------------------------------------------------------

def _checked_data(data: ExpressionData):
    """``(labels, genes, descriptions, samples)`` of ``data``, checked: labels as strings, names as arrays."""
    X = data.X
    labels = pd.Series(data.labels)
    if labels.shape[0] == 0 or X.shape[0] == 0:
        msg = f"the data hold {X.shape[0]} samples: nothing to rank"
        raise DataError(msg)
    samples = (np.asarray([f"row {i}" for i in range(labels.shape[0])], dtype=object)
               if data.obs_names is None else np.asarray(data.obs_names))
    if labels.isna().any():
        missing = [str(samples[i]) for i in np.flatnonzero(labels.isna().to_numpy())]
        shown = ", ".join(missing[:5]) + (", ..." if len(missing) > 5 else "")
        where = "" if data.label_key is None else f" in {data.label_key!r}"
        msg = (f"{len(missing)} sample(s) have no label{where} ({shown}); give them one or drop "
               "them from the data")
        raise LabelError(msg)
    check_class_labels(labels)
    labels = labels.astype(str).to_numpy()
    genes = np.asarray([str(g) for g in data.var_names], dtype=object)
    if X.shape[1] != genes.shape[0]:
        msg = f"{genes.shape[0]} gene names for {X.shape[1]} columns"
        raise DataError(msg)
    if labels.shape[0] != X.shape[0]:
        msg = f"{labels.shape[0]} labels for {X.shape[0]} samples; they must match one to one"
        raise LabelError(msg)
    check_unique_names(genes, "gene")
    check_clean_names(genes, "gene")
    check_finite_named(X, samples, genes)
    descriptions = data.descriptions
    if descriptions is None:
        descriptions = np.full(genes.shape[0], "", dtype=object)
    descriptions = np.asarray(["" if pd.isna(d) else str(d) for d in descriptions], dtype=object)
    return labels, genes, descriptions, samples


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


# The preprocessing ---------------------------------------------------------------------------

def _preprocess(pre: Preprocessor, est, X, genes) -> None:
    """Fit ``pre`` on every sample; refuse constant genes when the estimator is told to."""
    pre.fit(X, feature_names=genes)
    if getattr(est, "constant_features", None) == "raise" and pre.n_dropped_:
        # (the estimator never sees them: the preprocessing drops constant genes first)
        shown = ", ".join(map(repr, genes[~pre.keep_][:5]))
        msg = (f"{pre.n_dropped_} gene(s) are constant (e.g. {shown}); drop them or pass "
               "constant_features='warn' or 'ignore'")
        raise DataError(msg)


# The fit -------------------------------------------------------------------------------------

@dataclass
class _Fit:
    """What the fit step hands the tables step."""

    est: object
    pre: Preprocessor
    Z: object  # the preprocessed rows fitted, (n_fit, n_kept)
    codes: np.ndarray  # their class codes, (n_fit,)
    rows: np.ndarray | None  # the rows of the stratified sketch fitted; None: every row


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


def _fit(est, pre: Preprocessor, X, codes, groups, covariates, classes) -> _Fit:
    """Fit ``est`` on the preprocessed rows it fits; its warnings name classes by label."""
    # The estimator fits the stratified sketch of max_samples only: take its rows first and
    # transform those (the preprocessing statistics come from every sample).
    X_fit, codes_fit, groups_fit, covariates_fit, fit_rows = _rows_to_fit(est, X, codes, groups,
                                                                          covariates)
    Z = pre.transform(X_fit)
    del X_fit
    code_to_label = {str(i): str(c) for i, c in enumerate(classes)}
    with _relabel_progress(code_to_label), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        kind_of(est).fit(est, Z, codes_fit, groups=groups_fit, covariates=covariates_fit)
    for w in caught:
        # The estimator names classes by their integer codes ("class 9"); name them by their
        # labels. Only "class <code>" is rewritten, so other numbers (max_steps=2000) stay.
        text = re.sub(r"\bclass (\d+)\b",
                      lambda m: f"class {classes[int(m.group(1))]!r}"
                      if int(m.group(1)) < len(classes) else m.group(0),
                      str(w.message))
        warnings.warn_explicit(text, w.category, w.filename, w.lineno)
    return _Fit(est, pre, Z, codes_fit, fit_rows)


def _rows_to_fit(est, X, codes, groups, covariates):
    """The rows the estimator fits: ``(X, codes, groups, covariates, rows)``, ``rows`` None for every row.

    For in-memory samples, the rows the estimator's ``fit`` would keep (its stratified sketch of
    ``max_samples``, drawn by the estimator, its parameters and ``groups`` checked first as its
    ``fit`` checks them); the estimator then fits those rows as given. Otherwise everything,
    sketched (or not) by the estimator itself (a dask array gathers only its sketch).
    """
    from ..estimators._constraints import check_params
    from ..estimators._cv import check_groups

    if getattr(est, "max_samples", None) is None or as_design(X).lazy:
        return X, codes, groups, covariates, None
    check_params(est)
    groups = check_groups(groups, codes, est.criterion)
    X, codes, rows, groups, covariates = est._sketch(X, codes, groups, covariates)
    return X, codes, groups, covariates, rows


# The tables ----------------------------------------------------------------------------------

def _tables(data, fit: _Fit, *, labels, genes, descriptions, classes, positive, encoder,
            n_samples) -> Signature:
    """The fitted estimator's results by gene name and class label, as a :class:`Signature`."""
    from ._anndata_results import _log_fold_changes, _with_directions

    est, pre = fit.est, fit.pre
    kind = kind_of(est)
    kept = np.flatnonzero(pre.keep_)
    names = _Names(genes, descriptions, kept, est, classes, fit.Z.shape[1])
    ranked = _ranked_table(fit, names, has_path=kind.has_path)
    lfc = _log_fold_changes(data.X, labels, pre, log1p_base=data.log1p_base)
    ranked = _with_directions(ranked, lfc, genes, classes, positive)
    ranked = ranked[list(kind.ranked_columns)]
    ranked = ranked.reset_index(drop=True)
    ranked["rank"] = ranked["rank"].astype(np.int64)
    ranked["selected"] = ranked["selected"].astype(bool)
    ranked["credible_set"] = ranked["credible_set"].astype("Int64")
    credible = _credible_table(est.credible_sets_, kind.credible_columns, names)
    problems = list(dict.fromkeys(ranked["class"]))
    gene_sets = {c: ranked.loc[(ranked["class"] == c) & ranked["selected"], "gene"].tolist()
                 for c in problems}
    common = {
        "ranked": ranked, "gene_sets": gene_sets, "credible_sets": credible,
        "classes": names.est_classes, "problems": problems, "positive": positive,
        "preprocessing": pre, "estimator": est, "genes": pd.Index(data.var_names),
        "label_key": data.label_key, "groups_key": data.groups_key,
        "symbol_key": data.symbol_key, "layer": data.layer, "use_raw": bool(data.use_raw),
        "covariate_names": tuple(data.covariates), "log2_fc": lfc,
        "dropped": genes[~pre.keep_],
    }
    extra = {"label_key": data.label_key, "input": data.input.to_dict(), **data.pseudobulk}
    if not kind.has_path:
        hyper = est.hyper_results_.copy()
        hyper["class"] = [names.label_of[c] for c in hyper["class"]]
        hyper = hyper[list(_HYPER_COLUMNS)].reset_index(drop=True)
        model = PortableModel.from_estimator(est, pre, names.kept, names.est_classes,
                                             extra={"positive": positive, **extra})
        return Signature(**common, path=None, frontier=None, chosen_step={}, model=model,
                         kind=kind.name, hyper=hyper, n_fit_samples=n_samples)
    # The alternatives by gene name (the estimator's table names its columns).
    member = set_memberships(credible, "gene")
    ranked["alternatives"] = [member.get((c, str(g)), (0, 0.0, ""))[2]
                              for c, g in zip(ranked["class"], ranked["gene"], strict=True)]
    path, chosen_step = _path_table(est, names)
    frontier = pd.DataFrame(getattr(est, "cv_results_", pd.DataFrame()))
    if len(frontier):
        frontier["class"] = [names.label_of[c] for c in frontier["class"]]
        frontier = frontier[list(_FRONTIER_COLUMNS)].reset_index(drop=True)
    else:
        frontier = pd.DataFrame(columns=list(_FRONTIER_COLUMNS))
    covariate_weights = None
    if encoder is not None:
        from ..dataio._covariates import covariate_table

        covariate_weights = covariate_table(encoder, est.covariate_coef_,
                                            est.covariate_coef_sd_, list(chosen_step))
    extra = {"criterion": est.criterion, "chosen_step": chosen_step, "positive": positive,
             **extra}
    if encoder is not None:
        extra["covariates"] = encoder.to_dict()
    model = PortableModel.from_estimator(est, pre, names.kept, names.est_classes, extra=extra)
    sketch = getattr(est, "sketch_", None)
    n_fit = (len(fit.rows) if fit.rows is not None
             else n_samples if sketch is None else len(sketch))
    return Signature(**common, path=path, frontier=frontier, chosen_step=chosen_step,
                     model=model, cv_groups=pd.DataFrame(getattr(est, "cv_groups_",
                                                                 pd.DataFrame())),
                     covariates=covariate_weights, n_fit_samples=int(n_fit),
                     n_store_passes=int(getattr(est, "_n_passes", 0)))


class _Names:
    """The estimator's names of genes and classes, and the data's names they stand for."""

    def __init__(self, genes, descriptions, kept, est, classes, n_columns):
        self.kept = genes[kept]  # the genes the estimator saw
        self.kept_descriptions = descriptions[kept]
        self.genes, self.descriptions = genes, descriptions
        self.est_classes = [classes[int(c)] for c in est.classes_]
        self.label_of = {c: classes[int(c)] for c in est.classes_}
        self.label_of.update({str(c): classes[int(c)] for c in est.classes_})
        # Estimator column name -> kept gene index.
        est_names = getattr(est, "feature_names_in_", None)
        if est_names is None:
            est_names = [f"x{i}" for i in range(n_columns)]
        self.column = {str(n): i for i, n in enumerate(est_names)}

    def of(self, features) -> np.ndarray:
        """Kept-gene indices of estimator feature names."""
        return np.array([self.column[str(f)] for f in features], dtype=np.intp)


def _ranked_table(fit: _Fit, names: _Names, *, has_path: bool) -> pd.DataFrame:
    """The estimator's ranked table by gene and class, the dropped (constant) genes after each class."""
    from ..estimators._certainty import class_contrast

    est, pre = fit.est, fit.pre
    ranked = est.ranked_features()
    if not has_path:  # (a path model's table has its t_stat)
        # Welch's t of each gene, the problem's class against the rest, as ARD's table has it.
        t_stat = {c: class_contrast(fit.Z, fit.codes == int(c))
                  for c in dict.fromkeys(ranked["class"])}
        ranked["t_stat"] = np.concatenate([
            t_stat[c][names.of(block["feature"])]
            for c, block in ranked.groupby("class", sort=False)])
    ranked["class"] = [names.label_of[c] for c in ranked["class"]]
    cols = names.of(ranked["feature"])
    ranked["gene"] = names.kept[cols]
    ranked["description"] = names.kept_descriptions[cols]
    if has_path:
        if "relevance" not in ranked.columns:
            ranked["relevance"] = np.where(ranked["selected"], 1.0 / ranked["alpha"], 0.0)
        ranked["entered_step"] = ranked["entered_step"].astype("Int64")
    dropped = names.genes[~pre.keep_]
    if dropped.size:
        parts = []
        for cls, block in ranked.groupby("class", sort=False):
            parts.extend([block, _dropped_rows(block, cls, dropped,
                                               names.descriptions[~pre.keep_])])
        ranked = pd.concat(parts, ignore_index=True)
    return ranked


def _credible_table(sets, columns, names: _Names):
    """An estimator's credible-set table by class label and gene name, in ``columns``."""
    credible = sets.copy()
    credible["class"] = [names.label_of[c] for c in credible["class"]]
    idx = names.of(credible["feature"])
    credible["gene"] = names.kept[idx]
    credible["description"] = names.kept_descriptions[idx]
    credible = credible[list(columns)].reset_index(drop=True)
    credible["set"] = credible["set"].astype(np.int64)
    credible["size"] = credible["size"].astype(np.int64)
    return credible


def _path_table(est, names: _Names):
    """The ARD path by gene name and class label, and the step chosen for each problem."""
    path = est.path_.rename(columns={"n_basis": "n_features"})  # genes: the basis is features
    path["class"] = [names.label_of[c] for c in path["class"]]
    path["gene"] = [
        "" if (f is None or f == "" or pd.isna(f)) else
        ("(intercept)" if str(f) not in names.column else str(names.kept[names.column[str(f)]]))
        for f in path["feature"]
    ]
    # chosen_step_ is aligned with the binary problems: the second class, or every class.
    problems = est.classes_[1:] if len(est.classes_) == 2 else est.classes_
    chosen_step = {names.label_of[c]: int(s)
                   for c, s in zip(problems, est.chosen_step_, strict=True)}
    path["chosen"] = [
        int(s) == chosen_step.get(c, -1) for c, s in zip(path["class"], path["step"], strict=True)
    ]
    return path[list(_PATH_COLUMNS)].reset_index(drop=True), chosen_step


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
