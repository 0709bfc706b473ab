"""The two models of a signature, ARD and spike-and-slab: what differs between them, in one table.

:func:`kind_of` gives the :class:`Kind` of an estimator, :func:`stored_kind` that of a record
:func:`ardselect.rank_genes` stored, and :data:`KINDS` each kind by name (``Signature.kind``,
``fit --model``). :func:`~ardselect.fit_signature`, its tables, the AnnData record and
:mod:`ardselect.get` ask the kind what differs (columns, refusals, the fit's arguments, the
selection threshold, whether there is a path) rather than testing for spike-and-slab.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..choices import groups_need_cv

__all__ = ["KINDS", "MODELS", "Kind", "kind_of", "stored_kind"]

#: The leading columns of every ranked table.
_LEADING_COLUMNS = (
    "class",
    "rank",
    "gene",
    "description",
    "selected",
    "pip",
    "credible_set",
)
#: The ranked table of the default (ARD) signature.
_RANKED_COLUMNS = (
    *_LEADING_COLUMNS,
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
#: The ranked table of :class:`~ardselect.SpikeSlabClassifier`.
_SPIKESLAB_COLUMNS = (
    *_LEADING_COLUMNS,
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
#: Per-gene certainty columns of the ARD ranked table, also written to ``var`` (and ``varm``).
_CERTAINTY = ("pip", "set_probability", "log_bf_conditional", "log_bf_marginal", "cv_frequency",
              "t_stat")
#: The spike-and-slab table's per-gene certainty columns, written to ``var`` (and ``varm``).
_SPIKESLAB_CERTAINTY = ("pip", "set_pip", "log_bf", "p_sign", "t_stat")
#: Columns of older records' gene tables (``uns[key]["ranked"]``) under their current names, read
#: through by ``get.ranked_genes_df``: the weight's posterior was ``mean`` / ``sd``.
GENE_TABLE_RENAMES = {"mean": "weight", "sd": "weight_sd"}
#: The same for the default (ARD) model's table: its conditional Bayes factor was ``log_bf``
#: (the spike-and-slab table's ``log_bf`` is its own, and keeps the name).
ARD_GENE_TABLE_RENAMES = {**GENE_TABLE_RENAMES, "log_bf": "log_bf_conditional"}


@dataclass(frozen=True)
class Kind:
    """One model of a signature: its tables' columns and what it fits.

    ``has_path``: the model is an ARD path, with a criterion choosing its step (and a path,
    frontier and chosen steps to report), fitted with the data's groups and covariates. The
    spike-and-slab model has none of these; it reports posterior inclusion probabilities over
    the genes and a hyperprior, and selects the genes above its ``threshold``.
    """

    name: str
    ranked_columns: tuple
    credible_columns: tuple
    certainty_columns: tuple
    gene_table_renames: Mapping
    has_path: bool

    def criterion(self, est) -> str | None:
        """The estimator's criterion (None for a model without a path)."""
        return est.criterion if self.has_path else None

    def check_data(self, est, *, groups, covariates) -> None:
        """Refuse groups without ``criterion="cv"`` and covariates without a path (ValueError)."""
        if groups is not None:
            groups_need_cv(self.criterion(est), None if self.has_path else self.name)
        if covariates and not self.has_path:
            msg = (f"covariates are held by the ARD model only; leave them out with "
                   f"model={self.name!r}")
            raise ValueError(msg)

    def fit(self, est, Z, codes, *, groups, covariates):
        """Fit ``est`` on ``(Z, codes)``, with the groups and covariates a path model takes."""
        if self.has_path:
            return est.fit(Z, codes, groups=groups, covariates=covariates)
        return est.fit(Z, codes)

    def threshold(self, value) -> float | None:
        """The PIP above which a gene is selected (``value``), or None for a path model."""
        return None if self.has_path else float(value)


ARD = Kind("ard", _RANKED_COLUMNS, _ARD_CREDIBLE_COLUMNS, _CERTAINTY, ARD_GENE_TABLE_RENAMES,
           has_path=True)
SPIKESLAB = Kind("spike-slab", _SPIKESLAB_COLUMNS, _CREDIBLE_COLUMNS, _SPIKESLAB_CERTAINTY,
                 GENE_TABLE_RENAMES, has_path=False)
#: Each kind by name, the default first.
KINDS = {k.name: k for k in (ARD, SPIKESLAB)}
#: The models :func:`ardselect.rank_genes` fits (``fit --model``).
MODELS = tuple(KINDS)


def kind_of(est) -> Kind:
    """The kind of an estimator: spike-and-slab for a ``SpikeSlabClassifier``, else ARD."""
    from ..estimators._spikeslab import SpikeSlabClassifier

    return SPIKESLAB if isinstance(est, SpikeSlabClassifier) else ARD


def stored_kind(stored: Mapping) -> Kind:
    """The kind of a record :func:`ardselect.rank_genes` stored (``uns[key]``)."""
    return KINDS.get(str(stored.get("model", "ard")), ARD)
