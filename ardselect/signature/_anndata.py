"""AnnData front end: rank genes for a phenotype in ``obs`` and store the results in the object.

:func:`rank_genes` reads the data through :class:`~ardselect.ExpressionData`, fits them with
:func:`~ardselect.fit_signature` and writes the :class:`~ardselect.Signature` into the AnnData,
scanpy style.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..dataio._expression import ExpressionData
from ..dataio._preprocessing import Preprocessor
from ._anndata_results import check_key, write_signature
from ._signature import fit_signature, settings_record

__all__ = ["rank_genes"]


#: Settings that :func:`rank_genes` takes through its objects: a keyword -> what to pass.
_REMOVED = {
    **dict.fromkeys(("log", "pseudocount", "floor", "cap", "standardize"),
                    "preprocessor=ardselect.preprocessing.Preprocessor({}=...)"),
    **dict.fromkeys(("criterion", "max_steps"), "estimator=ardselect.ARDClassifier({}=...)"),
    "estimator_params": "estimator=ardselect.ARDClassifier(**estimator_params)",
    "model": "estimator=ardselect.SpikeSlabClassifier() (or ardselect.ARDClassifier())",
}


def _refuse_unknown(kwargs: dict) -> None:
    """Python's TypeError for an unexpected keyword; for a setting, it names what to pass."""
    for name in kwargs:
        msg = f"rank_genes() got an unexpected keyword argument {name!r}"
        if name in _REMOVED:
            msg += f"; pass {_REMOVED[name].format(name)} instead"
        raise TypeError(msg)


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
    **unknown,
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
    **unknown
        Not accepted: any other keyword raises a ``TypeError``. For a setting of the
        preprocessing or the estimator (``log``, ``floor``, ``criterion``, ``max_steps``,
        ``estimator_params``, ``model``, ...) the message names the object that takes it.

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
        ``preprocessor`` or ``estimator`` of another type; an unknown keyword.
    ValueError
        ``key_added`` empty or with a ``/`` (h5ad and zarr would read it back as a nested key),
        checked before any work. Groups without ``criterion="cv"``, covariates with
        spike-and-slab.

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
    _refuse_unknown(unknown)
    check_key(key_added)
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
