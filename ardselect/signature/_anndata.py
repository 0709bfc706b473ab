"""AnnData front end: rank genes for a phenotype in ``obs`` and store the results in the object.

:func:`rank_genes` reads the data through :class:`~ardselect.ExpressionData`, fits them with
:func:`~ardselect.fit_signature` and writes the :class:`~ardselect.Signature` into the AnnData,
scanpy style.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence

from ..dataio._expression import ExpressionData
from ..preprocessing import Preprocessor
from ._anndata_results import check_key, write_signature
from ._signature import MODELS, fit_signature, settings_record

__all__ = ["rank_genes"]


class _Unset:
    """The default of a deprecated keyword: tells "not given" from any value given."""

    def __repr__(self) -> str:
        return "<deprecated>"


_UNSET = _Unset()
#: The deprecated keywords of :func:`rank_genes` that are ``Preprocessor`` parameters, with
#: their defaults.
_PREPROCESSOR_KEYWORDS = {"log": "auto", "pseudocount": None, "floor": None, "cap": None,
                          "standardize": True}
#: ... and those that choose and set the estimator.
_ESTIMATOR_KEYWORDS = {"criterion": "cv", "max_steps": None, "estimator_params": None,
                       "model": "ard"}


def _settings(preprocessor, estimator, old: dict, key_added):
    """The ``Preprocessor`` and estimator of :func:`rank_genes`, from the deprecated keywords if given.

    A keyword given explicitly warns (``FutureWarning``) and says what to pass instead; giving
    one beside the object it replaces is an error. Checked before any work.
    """
    given = {k: v for k, v in old.items() if v is not _UNSET}
    pre_old = {k: given[k] for k in _PREPROCESSOR_KEYWORDS if k in given}
    est_old = {k: given[k] for k in _ESTIMATOR_KEYWORDS if k in given}
    if pre_old and preprocessor is not None:
        msg = (f"give preprocessor= or the deprecated {', '.join(pre_old)}, not both (set them "
               "on the Preprocessor)")
        raise ValueError(msg)
    if est_old and estimator is not None:
        msg = (f"give estimator= or the deprecated {', '.join(est_old)}, not both (set them on "
               "the estimator)")
        raise ValueError(msg)
    if est_old:
        est_old = {**_ESTIMATOR_KEYWORDS, **est_old}
        _check_rank_options(est_old["estimator_params"], est_old["max_steps"], est_old["model"],
                            est_old["criterion"])
    check_key(key_added)
    if pre_old:
        shown = ", ".join(f"{k}={v!r}" for k, v in pre_old.items())
        warnings.warn(
            f"rank_genes: {', '.join(pre_old)} {'is' if len(pre_old) == 1 else 'are'} deprecated "
            "and will be removed in a future release; pass "
            f"preprocessor=ardselect.preprocessing.Preprocessor({shown}) instead",
            FutureWarning, stacklevel=3)
        preprocessor = Preprocessor(**{**_PREPROCESSOR_KEYWORDS, **pre_old})
    if est_old:
        names = [k for k in _ESTIMATOR_KEYWORDS if old[k] is not _UNSET]
        warnings.warn(
            f"rank_genes: {', '.join(names)} {'is' if len(names) == 1 else 'are'} deprecated "
            f"and will be removed in a future release; pass {_estimator_hint(old)} instead",
            FutureWarning, stacklevel=3)
        estimator = _old_estimator(**est_old)
    return preprocessor, estimator


def _estimator_hint(est_old: dict) -> str:
    """What to pass instead of the deprecated estimator keywords, for the warning."""
    given = {k: v for k, v in est_old.items() if v is not _UNSET}
    params = dict(given.get("estimator_params") or {})
    if given.get("model") == "spike-slab":
        shown = ", ".join(f"{k}={v!r}" for k, v in params.items())
        return f"estimator=ardselect.SpikeSlabClassifier({shown})"
    for key in ("max_steps", "criterion"):
        if given.get(key) is not None:
            params = {key: given[key], **params}
    shown = ", ".join(f"{k}={v!r}" for k, v in params.items())
    return f"estimator=ardselect.ARDClassifier({shown})"


def _old_estimator(criterion, max_steps, estimator_params, model):
    """The estimator the deprecated keywords describe."""
    from ..estimators._classifier import ARDClassifier
    from ..estimators._spikeslab import SpikeSlabClassifier

    params = dict(estimator_params or {})
    if model == "spike-slab":
        return SpikeSlabClassifier(**params)
    if max_steps is not None:
        params["max_steps"] = int(max_steps)
    return ARDClassifier(criterion=criterion, **params)


def _check_rank_options(estimator_params, max_steps, model="ard", criterion="cv"):
    """One clear error for deprecated keywords that would otherwise fail deep inside."""
    import inspect

    from ..estimators._classifier import ARDClassifier
    from ..estimators._spikeslab import SpikeSlabClassifier

    if not isinstance(model, str) or model not in MODELS:
        msg = f"model must be one of {', '.join(map(repr, MODELS))}; got {model!r}"
        raise ValueError(msg)
    cls = SpikeSlabClassifier if model == "spike-slab" else ARDClassifier
    if estimator_params is not None and not isinstance(estimator_params, Mapping):
        msg = (f"estimator_params must be a dict of {cls.__name__} parameters, not "
               f"{type(estimator_params).__name__}")
        raise TypeError(msg)
    given = set(estimator_params or {})
    valid = set(inspect.signature(cls).parameters)
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


def rank_genes(
    adata,
    groupby: str,
    *,
    positive: str | None = None,
    layer: str | None = None,
    use_raw: bool = False,
    preprocessor: Preprocessor | None = None,
    estimator=None,
    symbol_key: str | None = None,
    groups: str | None = None,
    key_added: str = "ardselect",
    copy: bool = False,
    covariates: Sequence[str] | None = None,
    criterion: str = _UNSET,
    log: str = _UNSET,
    pseudocount: float | None = _UNSET,
    floor: float | None = _UNSET,
    cap: float | None = _UNSET,
    standardize: bool = _UNSET,
    max_steps: int | None = _UNSET,
    estimator_params: Mapping | None = _UNSET,
    model: str = _UNSET,
):
    """Select and rank the genes that predict ``adata.obs[groupby]`` with an ARD probit classifier.

    The expression matrix (``X``, a layer, or ``raw``) is read as
    :class:`~ardselect.io.ExpressionData`, and :func:`~ardselect.fit_signature` preprocesses it
    (floor/cap, log, constant genes dropped, per-gene standardisation; see
    :class:`ardselect.preprocessing.Preprocessor`) and fits an :class:`~ardselect.ARDClassifier`,
    which runs its add/delete path and keeps the model its ``criterion`` chooses; the
    :class:`~ardselect.Signature` is written into ``adata``. Two classes give one ranked list;
    more give one list per class (that class vs the rest), as marker genes. Samples are
    observations, genes variables.

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
    preprocessor : ardselect.preprocessing.Preprocessor, optional
        The preprocessing (floor/cap, log, constant genes dropped, standardisation); by default
        ``Preprocessor()``: ``log="auto"`` takes ``log2`` when the bulk of the genes look like
        counts or raw intensities and nothing otherwise. Cloned, never fitted in place.
    estimator : ARDClassifier or SpikeSlabClassifier, optional
        The model with its settings; by default ``ARDClassifier()``, whose ``criterion="cv"``
        chooses the model size of lowest held-out log-loss along the path by inner
        cross-validation (seeded by its ``random_state``, 0 by default). A
        :class:`~ardselect.SpikeSlabClassifier` gives every gene a posterior inclusion
        probability (PIP), the probability under the model that it belongs in it, averaged over
        every other gene being in or out; ``selected`` is PIP above its ``threshold`` (0.5); see
        the record it writes below. Cloned, never fitted in place.
    symbol_key : str, optional
        ``var`` column of gene symbols or descriptions for the ranked table; by default the first
        of ``symbol``, ``gene_symbol(s)``, ``gene_name(s)``, ``feature_name``, ``description``.
    groups : str, optional
        An ``obs`` column of groups (donor, patient, batch): the inner cross-validation of
        ``ARDClassifier(criterion="cv")`` holds out whole groups, so the number of genes is chosen for new
        donors, not for new cells of the donors it has seen. Each group's held-out error and
        log-loss are stored (:func:`ardselect.get.cv_groups_df`).
    key_added : str, default="ardselect"
        Prefix of the ``var`` columns and key in ``uns``.
    copy : bool, default=False
        Work on and return a copy instead of writing into ``adata``.
    covariates : sequence of str, optional
        ``obs`` columns of known covariates (batch, donor sex, age, percent mitochondrial
        reads) held in every model of the path: numeric columns standardised, categorical ones
        (strings, booleans, categories) one-hot with the first level in sorted order dropped.
        They are never pruned, never counted or listed as genes; their weights are stored apart
        (:func:`ardselect.get.covariates_df`), and the portable model records the encoding, so
        that its predictions read the same columns from new data by name. ARD model only. See
        the user guide, "Known covariates and donor-level signatures".
    criterion, log, pseudocount, floor, cap, standardize, max_steps, estimator_params, model
        Deprecated spellings of the settings, each a ``FutureWarning`` when given: pass
        ``preprocessor=Preprocessor(log=..., pseudocount=..., floor=..., cap=...,
        standardize=...)`` and ``estimator=ARDClassifier(criterion=..., max_steps=...,
        **estimator_params)`` (``model="spike-slab"``:
        ``estimator=SpikeSlabClassifier(**estimator_params)``) instead. Giving one beside the
        object it replaces is an error.

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
          (the guide's "How sure is each gene"; with ``ARDClassifier(certainty=False)``, NaN
          and 0);
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
        * ``uns[key]``: ``params`` (every argument, every setting of the preprocessing and the
          estimator, the estimator's beside ``criterion`` and ``max_steps`` in
          ``estimator_params``, and the ardselect version), ``classes``
          (str array), ``problems`` (str array: the class of each binary problem), ``positive`` (str),
          ``chosen_step`` (int array aligned with ``problems``; :func:`ardselect.get.chosen_steps`
          gives a dict), ``n_fit_samples`` (the samples the model was fitted on: every one, or
          the stratified sketch of the estimator's ``max_samples``), ``credible_sets``
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

        With a :class:`~ardselect.SpikeSlabClassifier` the record differs: the ranked table
        (:func:`ardselect.get.ranked_genes_df`) has columns ``class``, ``rank`` (by decreasing
        PIP), ``gene``, ``description``, ``selected``, ``pip``, ``credible_set`` (the id, 1, 2, ...
        per class, of the gene's credible set; ``<NA>`` if none), ``set_pip`` (that set's sum of
        PIPs), ``log_bf`` (posterior minus prior log odds of inclusion), ``weight``, ``weight_sd``,
        ``z``, ``p_sign``, ``t_stat``, ``log2_fc``, ``direction`` and ``note``; ``var`` gets ``rank``,
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
    TypeError
        ``preprocessor`` or ``estimator`` of another type.
    ValueError
        A deprecated keyword beside the object it replaces, or (deprecated spellings)
        ``estimator_params`` naming an unknown parameter or ``criterion``, or ``max_steps`` given
        twice; ``key_added`` empty or with a ``/`` (h5ad and zarr would read it back as a nested
        key). These are checked before any work. Groups without ``criterion="cv"``, covariates
        with spike-and-slab.

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
    preprocessor, estimator = _settings(
        preprocessor, estimator,
        {"log": log, "pseudocount": pseudocount, "floor": floor, "cap": cap,
         "standardize": standardize, "criterion": criterion, "max_steps": max_steps,
         "estimator_params": estimator_params, "model": model}, key_added)
    if copy:
        adata = adata.copy()
    data = ExpressionData.from_anndata(adata, groupby, layer=layer, use_raw=use_raw,
                                       groups=groups, symbol_key=symbol_key,
                                       covariates=covariates)
    data.notice_scaled_x()
    sig = fit_signature(data, preprocessor=preprocessor, estimator=estimator, positive=positive)
    write_signature(adata, sig, key_added,
                    settings_record(sig, key_added, positive=positive, symbol_key=symbol_key))
    return adata if copy else None
