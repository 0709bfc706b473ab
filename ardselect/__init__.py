"""ardselect: sparse Bayesian gene selection with honest uncertainty.

The core is :class:`ARDClassifier`, a linear-basis ARD probit classifier fitted by Expectation
Propagation along a sequential add / delete / re-estimate path; the number of genes is chosen by
inner cross-validation along the path (or by the paper's criteria: the EP leave-one-out error, the
leave-one-out error probability or the EP evidence). Around it: the RVM family
(type-II ML regression, Laplace classification, variational and Gibbs-sampled variants) and kernel
bases that pick relevance vectors, MCMC diagnostics, and :class:`SpikeSlabClassifier` (spike-and-slab
priors by EP: per-gene posterior inclusion probabilities and credible sets). The front door holds the
estimators, :func:`rank_genes`, :func:`fit_signature` with its :class:`Signature` and
:class:`ExpressionData`, :func:`pseudobulk` and :class:`ArdselectError`; the rest is in the modules:
:mod:`~ardselect.get` (results stored in AnnData), :mod:`~ardselect.io` (readers and writers),
:mod:`~ardselect.preprocessing`, :mod:`~ardselect.model` (portable models), :mod:`~ardselect.pl`
(figures; needs matplotlib), :mod:`~ardselect.model_selection`, :mod:`~ardselect.datasets`,
:mod:`~ardselect.diagnostics` (EP for one probit model, MCMC diagnostics),
:mod:`~ardselect.exceptions` (every error and warning) and :mod:`~ardselect.choices` (the values
each setting takes).

Public names are imported lazily so that ``import ardselect`` stays fast.
"""

from __future__ import annotations

import importlib

from ._version import __version__

_LAZY = {
    "ARDClassifier": ".estimators._classifier",
    "SpikeSlabClassifier": ".estimators._spikeslab",
    "RVMRegressor": ".estimators._rvm",
    "RVMClassifier": ".estimators._rvm",
    "VariationalRVMRegressor": ".estimators._variational",
    "VariationalRVMClassifier": ".estimators._variational",
    "GibbsRVMClassifier": ".estimators._gibbs",
    "ExpressionData": ".dataio._expression",
    "fit_signature": ".signature._signature",
    "Signature": ".signature._signature",
    "rank_genes": ".signature._anndata",
    "pseudobulk": ".signature._pseudobulk",
    "ArdselectError": ".exceptions",
    "get": ".get",
    "io": ".io",
    "pl": ".pl",
    "model": ".model",
    "preprocessing": ".preprocessing",
    "model_selection": ".model_selection",
    "datasets": ".datasets",
    "diagnostics": ".diagnostics",
    "exceptions": ".exceptions",
    "choices": ".choices",
}

_MODULES = ("get", "io", "pl", "model", "preprocessing", "model_selection", "datasets",
            "diagnostics", "exceptions", "choices")

#: Names documented in their modules (:mod:`~ardselect.diagnostics`, :mod:`~ardselect.exceptions`)
#: that code written against the top level finds here too; not in ``__all__``.
_ALSO = {
    "ep_probit": ".diagnostics",
    "split_rhat": ".diagnostics",
    "effective_sample_size": ".diagnostics",
    "ConstantFeatureWarning": ".exceptions",
    "DataScaleWarning": ".exceptions",
    "ScaledXWarning": ".exceptions",
    "ParameterError": ".exceptions",
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str):
    if name in _LAZY or name in _ALSO:
        module = importlib.import_module({**_LAZY, **_ALSO}[name], __name__)
        value = module if name in _MODULES else getattr(module, name)
        globals()[name] = value
        return value
    msg = f"module 'ardselect' has no attribute {name!r}"
    raise AttributeError(msg)


def __dir__():
    return sorted(set(globals()) | set(__all__))
