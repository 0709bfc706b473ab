"""The code of :mod:`ardselect.get`, which re-exports its public names and documents them."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from ..dataio._portable import PortableModel
from ..exceptions import ArdselectError
from ._kinds import stored_kind

__all__ = ["chosen_steps", "covariates_df", "credible_sets_df", "cv_groups_df", "frontier_df", "gene_sets", "model",
           "path_df", "ranked_genes_df", "ranked_list"]


def _stored(adata, key: str) -> dict:
    if key not in adata.uns or "ranked" not in adata.uns[key]:
        avail = [k for k, v in adata.uns.items() if isinstance(v, dict) and "ranked" in v]
        hint = f"; stored keys: {', '.join(avail)}" if avail else "; run ardselect.rank_genes first"
        msg = f"no ardselect results under uns[{key!r}]{hint}"
        raise KeyError(msg)
    return adata.uns[key]


def _str_objects(values: np.ndarray) -> np.ndarray:
    """``values.astype(str).astype(object)``, without its fixed-width copy when they are strings.

    A column of a few long strings (the notes) repeated over every gene and class would otherwise
    take its longest string's width in every row.
    """
    if values.dtype.kind == "O" and all(type(v) is str and not v.endswith("\x00")
                                        for v in values.ravel()):
        return values.copy()
    return values.astype(str).astype(object)


def _uns_to_table(stored: dict) -> pd.DataFrame:
    columns = [str(c) for c in np.asarray(stored["columns"]).tolist()]
    data = {}
    for col in columns:
        values = np.asarray(stored[col])
        if col in ("entered_step", "credible_set"):
            data[col] = pd.array(np.where(values < 0, -1, values), dtype="Int64")
            data[col][values < 0] = pd.NA
        elif values.dtype.kind in "OSU":
            data[col] = _str_objects(values)
        else:
            data[col] = values
    return pd.DataFrame(data, columns=columns)


def ranked_genes_df(
    adata, key: str = "ardselect", *, group: str | None = None, selected_only: bool = False
) -> pd.DataFrame:
    """The ranked gene table stored by :func:`ardselect.rank_genes`, one row per gene (per class).

    Parameters
    ----------
    adata : anndata.AnnData
    key : str, default="ardselect"
        The ``key_added`` used when ranking.
    group : str, optional
        Only this class's list (multi-class one-vs-rest results; for binary results the positive
        class).
    selected_only : bool, default=False
        Only genes in the chosen model.

    Returns
    -------
    pandas.DataFrame
        Columns ``class`` (the positive class of the binary problem), ``rank`` (1 = best),
        ``gene``, ``description`` (symbol or description when known, else empty), ``selected``,
        ``pip`` (probability that the gene belongs in the model; NaN outside the neighbourhood of
        the selection), ``credible_set`` (its set of interchangeable genes, ``<NA>`` if none),
        ``set_probability`` (that the model holds at least one gene of the set),
        ``alternatives`` (the set's other genes, best first, with their PIPs),
        ``contribution`` (the weight times the gene's class-mean difference: its part of the
        model's separation of the class from the rest; ranks the selected genes),
        ``std_weight`` (the weight times the gene's sd), ``relevance`` (the prior variance the
        evidence would give the gene beside the model's other genes, 0 outside the model),
        ``weight`` and ``weight_sd`` (posterior mean and sd of the weight of the standardised
        gene in the model; 0 outside it), ``alpha`` (the precision the model uses, ``inf`` outside it),
        ``entered_step`` (first path step with the gene in the model, ``<NA>`` if never),
        ``log_bf_conditional`` (log Bayes factor of the gene in against out, given the other
        selected genes), ``z`` (signed z of the weight), ``log_bf_marginal`` (the gene alone
        against the intercept alone),
        ``cv_frequency`` (share of the inner cross-validation's fold models of the chosen size
        that hold the gene), ``t_stat`` (Welch's t of the gene in the class against the rest),
        ``log2_fc`` (scanpy's log2 fold change of the same contrast, NaN unless the data are on
        a non-negative log scale), ``direction`` (``up`` or ``down``: the sign of ``t_stat``) and
        ``note`` (for a selected gene whose weight has the other sign than ``direction``); see
        :meth:`ardselect.ARDClassifier.ranked_features`. Rows by class, then rank.
    """
    stored = _stored(adata, key)
    df = _uns_to_table(stored["ranked"]).rename(columns=stored_kind(stored).gene_table_renames)
    if group is not None:
        groups = list(dict.fromkeys(df["class"]))
        if str(group) not in groups:
            msg = f"group {group!r} not in the results; groups: {', '.join(groups)}"
            raise KeyError(msg)
        df = df[df["class"] == str(group)]
    if selected_only:
        df = df[df["selected"]]
    return df.reset_index(drop=True)


def credible_sets_df(adata, key: str = "ardselect") -> pd.DataFrame:
    """The credible sets stored by :func:`ardselect.rank_genes`.

    One row per gene of a set: ``class``, ``set`` (1, 2, ... per class: the ``credible_set`` of
    :func:`ranked_genes_df`), ``gene``, ``description``, ``pip``, then, for the default ARD model,
    ``set_probability`` (the probability that the model holds at least one of the set's genes;
    :attr:`ardselect.ARDClassifier.credible_sets_`), or with ``model="spike-slab"``, ``set_pip``
    (the sum of the set's PIPs, at least the coverage, 0.95 by default;
    :attr:`ardselect.SpikeSlabClassifier.credible_sets_`), and ``size`` and ``purity`` (the
    smallest absolute correlation between two of its genes). A set gathers genes the data cannot
    tell apart: the model is likely to hold one of them, though not which. Empty for a fit with
    ``certainty=False``.
    """
    stored = _stored(adata, key)
    if "credible_sets" not in stored:
        msg = (f"uns[{key!r}] holds no credible sets (written by an older ardselect); rank the "
               "data again")
        raise ArdselectError(msg)
    return _uns_to_table(stored["credible_sets"])


def path_df(adata, key: str = "ardselect") -> pd.DataFrame:
    """The ARD path stored by :func:`ardselect.rank_genes`.

    Columns ``class``, ``step``, ``action`` (``init``, ``add``, ``delete``, ``reestimate``;
    ``prune`` for the deletions of the pruning tail of ``criterion="cv"``), ``gene`` (the gene
    the step acted on, empty if none or several), ``n_features`` (genes in the model),
    ``log_evidence``, ``loo_error``, ``loo_prob_error``, ``chosen`` (the step the criterion
    chose).
    """
    stored = _stored(adata, key)
    if not stored_kind(stored).has_path:
        msg = f"uns[{key!r}] holds spike-and-slab results, which have no path"
        raise ArdselectError(msg)
    return _uns_to_table(stored["path"])


def frontier_df(adata, key: str = "ardselect") -> pd.DataFrame:
    """The accuracy-size frontier stored by :func:`ardselect.rank_genes` (``criterion="cv"``).

    One row per class and model size: ``class``, ``n_genes``, ``step`` (its path step),
    ``cv_log_loss`` and ``cv_log_loss_se`` (held-out log-loss of the inner cross-validation, after
    calibration, and its standard error), ``cv_error`` and ``cv_error_se``, the size's
    calibration (``temperature``, ``variance_scale``, ``offset``), ``cv_log_loss_final``,
    ``chosen`` and ``one_se`` (the smallest size within one standard error of the best). Empty
    for the paper's criteria. Draw it with :func:`ardselect.pl.frontier`.
    """
    stored = _stored(adata, key)
    if "frontier" not in stored:
        return pd.DataFrame()
    return _uns_to_table(stored["frontier"])


def cv_groups_df(adata, key: str = "ardselect") -> pd.DataFrame:
    """Each group's held-out error and log-loss (:func:`ardselect.rank_genes` with ``groups``).

    One row per group (donor, patient, batch): ``group``, ``n_samples``, ``cv_error`` and
    ``cv_log_loss``, the chosen model's inner cross-validation predictions of the group's samples
    while the whole group was held out. Empty when the fit had no groups.
    """
    stored = _stored(adata, key)
    if "cv_groups" not in stored:
        return pd.DataFrame(columns=["group", "n_samples", "cv_error", "cv_log_loss"])
    return _uns_to_table(stored["cv_groups"])


def covariates_df(adata, key: str = "ardselect") -> pd.DataFrame:
    """The weights of the known covariates (:func:`ardselect.rank_genes` with ``covariates``).

    One row per binary problem and encoded column: ``class``, ``covariate`` (the ``obs``
    column), ``column`` (``name``, or ``name[level]`` for a level of a categorical one),
    ``level``, ``reference`` (the level the intercept stands for), ``mean`` and ``sd`` (the
    weight's posterior, in latent units per sd of a numeric covariate or for the level against
    the reference). Empty when the fit held no covariates.
    """
    stored = _stored(adata, key)
    if "covariates" not in stored:
        return pd.DataFrame(columns=["class", "covariate", "column", "level", "reference",
                                     "mean", "sd"])
    return _uns_to_table(stored["covariates"])


#: var columns that hold gene symbols (``description`` and friends hold free text, not symbols).
_SYMBOL_COLUMNS = ("symbol", "symbols", "gene_symbol", "gene_symbols", "gene_name", "gene_names",
                   "feature_name")


#: Longest text taken for a gene symbol; longer values, or values with spaces, are descriptions.
_SYMBOL_MAX = 40


def _symbol_like(values) -> np.ndarray:
    """Which values can name a gene in a GMT or RNK file: one word of at most 40 characters."""
    text = pd.Series(values).fillna("").astype(str).str.strip()
    return ((text != "") & ~text.str.contains(r"\s", regex=True)
            & (text.str.len() <= _SYMBOL_MAX)).to_numpy()


def _stored_naming(stored: dict, table: pd.DataFrame | None = None) -> tuple[bool, str]:
    """:func:`_naming` of the results stored in ``uns``."""
    pre = stored.get("preprocessing", {})
    params = stored.get("params", {})
    key = str(pre.get("symbol_key", "None"))
    chosen = str(params.get("symbol_key", "None")) != "None"
    return _naming(None if key == "None" else key, table, chosen=chosen)


def _naming(key: str | None, table: pd.DataFrame | None = None, *,
            chosen: bool) -> tuple[bool, str]:
    """Whether the ranked table's ``description`` holds gene symbols, and a sentence saying so.

    ``key`` is the symbol column, ``chosen`` whether the caller named it (``symbol_key``). A
    column so chosen counts as symbols only if most of its values are single words
    (``--symbol-key description`` holds free text: the identifiers are kept).
    """
    if key is not None and (chosen or key in _SYMBOL_COLUMNS):
        if table is not None and chosen and key not in _SYMBOL_COLUMNS:
            given = table["description"].fillna("").astype(str).str.strip() != ""
            if given.any() and _symbol_like(table["description"])[given.to_numpy()].mean() < 0.5:
                return False, (f"gene identifiers (var_names; var[{key!r}] holds descriptions, "
                               "not symbols)")
        return True, f"gene symbols from var[{key!r}]"
    return False, "gene identifiers (var_names; the data carry no gene symbol column)"


def _labels(table: pd.DataFrame, *, use_symbols: bool) -> np.ndarray:
    """Symbols where known (a gene without one, or with free text, keeps its identifier)."""
    genes = table["gene"].astype(str).to_numpy()
    if not use_symbols:
        return genes
    sym = table["description"].fillna("").astype(str).str.strip().to_numpy()
    return np.where(_symbol_like(sym), sym, genes)


def _problems(stored: dict) -> list[tuple[str, str]]:
    """``(class, what it is compared with)`` for every binary problem, in stored order."""
    return _problem_pairs([str(c) for c in np.asarray(stored["classes"]).tolist()],
                          [str(p) for p in np.asarray(stored["problems"]).tolist()])


def _problem_pairs(classes, problems) -> list[tuple[str, str]]:
    """``(class, what it is compared with)`` for every binary problem, in order."""
    classes, problems = [str(c) for c in classes], [str(p) for p in problems]
    if len(problems) == 1 and len(classes) == 2:
        other = classes[0] if problems[0] == classes[1] else classes[1]
        return [(problems[0], other)]
    return [(p, "rest") for p in problems]


def gene_sets(adata, key: str = "ardselect") -> dict[str, tuple[str, list[str]]]:
    """Selected genes as gene sets for enrichment tools (:func:`ardselect.io.write_gmt`).

    Each binary problem gives up to two sets, in rank order: ``"{class}_up"``, the selected genes
    whose mean is higher in the class than in the rest in the data the model was fitted on
    (``direction``: the sign of Welch's t), and ``"{class}_down"``, those whose mean is lower. The
    direction is the data's, not the sign of the model's weight, which is conditional on the
    other genes and can differ (``note`` in :func:`ranked_genes_df`). Multi-class results give
    one pair per class (against the rest); two classes give one pair, for the positive class.
    Genes are named by their symbols when the data carry a symbol column (``symbol``,
    ``gene_symbol(s)``, ``gene_name(s)``, ``feature_name``, or the ``symbol_key`` given to
    :func:`ardselect.rank_genes`), each symbol once; otherwise by their identifiers. The set's
    description says which, and how the set was made. Empty sets are left out; enrichment tools
    ignore small sets (GSEA's default minimum is 15 genes), see the user guide.
    """
    stored = _stored(adata, key)
    params = stored.get("params", {})
    use_symbols, naming = _stored_naming(stored, ranked_genes_df(adata, key))
    return _enrichment_sets(
        ranked_genes_df(adata, key, selected_only=True), _problems(stored),
        label_key=params.get("groupby", "?"), criterion=params.get("criterion", "?"),
        threshold=stored_kind(stored).threshold(stored.get("threshold")),
        use_symbols=use_symbols, naming=naming)


def _enrichment_sets(ranked: pd.DataFrame, pairs, *, label_key, criterion, threshold,
                     use_symbols: bool, naming: str) -> dict[str, tuple[str, list[str]]]:
    """:func:`gene_sets` of the selected rows ``ranked``; ``threshold`` given for spike-and-slab."""
    sets = {}
    for cls, other in pairs:
        block = ranked[ranked["class"] == cls]
        names = _labels(block, use_symbols=use_symbols)
        direction = block["direction"].astype(str).to_numpy()
        for way in ("up", "down"):
            genes = list(dict.fromkeys(names[direction == way].tolist()))
            if not genes:
                continue
            how = "higher" if way == "up" else "lower"
            if threshold is not None:
                desc = (f"ardselect spike-and-slab: {len(genes)} genes with PIP > "
                        f"{threshold:g} and mean {how} in {label_key}={cls} "
                        f"than in {other}; {naming}")
            else:
                desc = (f"ardselect ARD-EP: {len(genes)} selected genes with mean {how} in "
                        f"{label_key}={cls} than in {other} (criterion {criterion}); {naming}")
            sets[f"{cls}_{way}"] = (desc, genes)
    return sets


def ranked_list(adata, key: str = "ardselect", *, group: str | None = None) -> pd.DataFrame:
    """Every gene with a signed score, for pre-ranked enrichment (GSEA ``.rnk``; ``io.write_rnk``).

    The score is Welch's t of the gene in the class against the rest (``t_stat`` of
    :func:`ranked_genes_df`), so its sign is the gene's ``direction``, as in :func:`gene_sets`:
    positive, higher in the class. The selected genes lead the list at either end: their
    ``|score|`` is raised by the largest ``|t|`` among the genes left out, so every selected gene
    ranks above every other gene of its direction (and, between themselves, by ``|t|``). Genes
    named by symbol when the data carry symbols (see :func:`gene_sets`), one row per symbol (the
    gene with the largest ``|score|``, as pre-ranked tools collapse probes); constant genes,
    which carry no information, are left out. Rows by decreasing score.

    Parameters
    ----------
    adata : anndata.AnnData
    key : str, default="ardselect"
    group : str, optional
        The class (multi-class results); by default the only binary problem's positive class.

    Returns
    -------
    pandas.DataFrame
        Columns ``gene`` and ``score``.
    """
    stored = _stored(adata, key)
    problems = [cls for cls, _ in _problems(stored)]
    if group is None:
        if len(problems) > 1:
            msg = f"give the group: one of {', '.join(problems)}"
            raise KeyError(msg)
        group = problems[0]
    table = ranked_genes_df(adata, key, group=group)
    use_symbols, _ = _stored_naming(stored, table)
    return _ranked_list(table, use_symbols=use_symbols)


def _ranked_list(table: pd.DataFrame, *, use_symbols: bool) -> pd.DataFrame:
    """:func:`ranked_list` of one class's rows of the ranked table."""
    t = table["t_stat"].to_numpy(float)
    sel = table["selected"].to_numpy(bool)
    lift = float(np.nanmax(np.abs(t[~sel]), initial=0.0)) if (~sel).any() else 0.0
    score = np.where(sel, np.sign(t) * (np.abs(t) + lift), t)
    out = pd.DataFrame({"gene": _labels(table, use_symbols=use_symbols), "score": score})
    out = out[np.isfinite(out["score"])]
    out = out.iloc[np.argsort(-out["score"].abs().to_numpy(), kind="stable")]
    out = out.drop_duplicates("gene", keep="first")
    out = out.iloc[np.argsort(-out["score"].to_numpy(), kind="stable")]
    return out.reset_index(drop=True)


def chosen_steps(adata, key: str = "ardselect") -> dict:
    """The path step chosen for each binary problem, as a dict class -> step.

    Stored as an array aligned with ``uns[key]["problems"]``, so class names of any form (``/``,
    ``.``, unicode, empty) survive ``write_h5ad``.
    """
    stored = _stored(adata, key)
    if not stored_kind(stored).has_path:
        msg = f"uns[{key!r}] holds spike-and-slab results, which have no path steps"
        raise ArdselectError(msg)
    problems = [str(p) for p in np.asarray(stored["problems"]).tolist()]
    steps = np.asarray(stored["chosen_step"]).astype(int).tolist()
    if len(steps) != len(problems):
        msg = f"uns[{key!r}] has {len(steps)} chosen steps for {len(problems)} problems"
        raise ArdselectError(msg)
    return dict(zip(problems, steps, strict=True))


def model(adata, key: str = "ardselect") -> PortableModel:
    """The portable model stored by :func:`ardselect.rank_genes`, ready to ``predict_proba``.

    ARD or spike-and-slab (``model="spike-slab"``; its :attr:`~ardselect.model.PortableModel.kind`
    says which).
    """
    stored = _stored(adata, key)
    if "model_json" not in stored:
        msg = f"uns[{key!r}] holds no model"
        raise ArdselectError(msg)
    return PortableModel(json.loads(str(stored["model_json"])))
