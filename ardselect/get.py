"""Read results stored by :func:`ardselect.rank_genes` back out of an AnnData object.

Examples
--------
>>> import numpy as np, anndata as ad, pandas as pd
>>> import ardselect
>>> rng = np.random.default_rng(1)
>>> X = rng.normal(size=(30, 8))
>>> X[:15, 5] += 3.0
>>> obs = pd.DataFrame({"y": ["a"] * 15 + ["b"] * 15}, index=[f"s{i}" for i in range(30)])
>>> adata = ad.AnnData(X, obs=obs)
>>> ardselect.rank_genes(adata, "y")
>>> ardselect.get.ranked_genes_df(adata, selected_only=True)["gene"].tolist()[:1]
['5']
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from .exceptions import ArdselectError
from .model import PortableModel

__all__ = ["chosen_steps", "gene_sets", "model", "path_df", "ranked_genes_df"]


def _stored(adata, key: str) -> dict:
    if key not in adata.uns or "ranked" not in adata.uns[key]:
        avail = [k for k, v in adata.uns.items() if isinstance(v, dict) and "ranked" in v]
        hint = f"; stored keys: {', '.join(avail)}" if avail else "; run ardselect.rank_genes first"
        msg = f"no ardselect results under uns[{key!r}]{hint}"
        raise KeyError(msg)
    return adata.uns[key]


def _uns_to_table(stored: dict) -> pd.DataFrame:
    columns = [str(c) for c in np.asarray(stored["columns"]).tolist()]
    data = {}
    for col in columns:
        values = np.asarray(stored[col])
        if col in ("entered_step",):
            data[col] = pd.array(np.where(values < 0, -1, values), dtype="Int64")
            data[col][values < 0] = pd.NA
        elif values.dtype.kind in "OSU":
            data[col] = values.astype(str).astype(object)
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
        ``relevance`` (inverse ARD precision on the internal unit-RMS scale, 0 outside the model),
        ``mean`` and ``sd`` (posterior of the weight of the standardised gene), ``alpha`` (ARD
        precision, ``inf`` outside the model), ``entered_step`` (first path step with the gene in
        the model, ``<NA>`` if never), ``log_bf``, ``pip`` and ``p_sign`` (how sure the model is
        of the gene: log Bayes factor of the gene in against out, posterior inclusion probability,
        probability that the weight has the sign of ``mean``; see
        :meth:`ardselect.ARDClassifier.ranked_features`); rows by class, then rank.
    """
    df = _uns_to_table(_stored(adata, key)["ranked"])
    if group is not None:
        groups = list(dict.fromkeys(df["class"]))
        if str(group) not in groups:
            msg = f"group {group!r} not in the results; groups: {', '.join(groups)}"
            raise KeyError(msg)
        df = df[df["class"] == str(group)]
    if selected_only:
        df = df[df["selected"]]
    return df.reset_index(drop=True)


def path_df(adata, key: str = "ardselect") -> pd.DataFrame:
    """The ARD path stored by :func:`ardselect.rank_genes`.

    Columns ``class``, ``step``, ``action`` (``init``, ``add``, ``delete``, ``reestimate``),
    ``gene`` (the gene the step acted on, empty if none), ``n_features`` (genes in the model),
    ``log_evidence``, ``loo_error``, ``loo_prob_error``, ``chosen`` (the step the criterion chose).
    """
    return _uns_to_table(_stored(adata, key)["path"])


def gene_sets(adata, key: str = "ardselect") -> dict[str, tuple[str, list[str]]]:
    """Selected genes as named gene sets (for :func:`ardselect.io.write_gmt`), in rank order.

    Binary results give one set, ``"{positive}_vs_{negative}"``; multi-class results one set per
    class, ``"{class}_vs_rest"``. Descriptions say how the set was made.
    """
    stored = _stored(adata, key)
    classes = [str(c) for c in np.asarray(stored["classes"]).tolist()]
    params = stored.get("params", {})
    criterion = params.get("criterion", "?")
    label_key = params.get("groupby", "?")
    ranked = ranked_genes_df(adata, key, selected_only=True)
    sets = {}
    for cls in dict.fromkeys(_uns_to_table(stored["ranked"])["class"]):
        genes = ranked.loc[ranked["class"] == cls, "gene"].tolist()
        if len(classes) == 2:
            other = classes[0] if cls == classes[1] else classes[1]
            name = f"{cls}_vs_{other}"
        else:
            name = f"{cls}_vs_rest"
        desc = f"ardselect ARD-EP genes for {label_key}={cls} (criterion {criterion}, {len(genes)} genes)"
        sets[name] = (desc, genes)
    return sets


def chosen_steps(adata, key: str = "ardselect") -> dict:
    """The path step chosen for each binary problem, as a dict class -> step.

    Stored as an array aligned with ``uns[key]["problems"]``, so class names of any form (``/``,
    ``.``, unicode, empty) survive ``write_h5ad``.
    """
    stored = _stored(adata, key)
    problems = [str(p) for p in np.asarray(stored["problems"]).tolist()]
    steps = np.asarray(stored["chosen_step"]).astype(int).tolist()
    if len(steps) != len(problems):
        msg = f"uns[{key!r}] has {len(steps)} chosen steps for {len(problems)} problems"
        raise ArdselectError(msg)
    return dict(zip(problems, steps, strict=True))


def model(adata, key: str = "ardselect") -> PortableModel:
    """The portable model stored by :func:`ardselect.rank_genes`, ready to ``predict_proba``."""
    stored = _stored(adata, key)
    if "model_json" not in stored:
        msg = f"uns[{key!r}] holds no model"
        raise ArdselectError(msg)
    return PortableModel(json.loads(str(stored["model_json"])))
