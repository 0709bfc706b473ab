"""ardselect: sparse Bayesian gene selection with honest uncertainty.

The core is :class:`ARDClassifier`, a linear-basis ARD probit classifier fitted by Expectation
Propagation along a sequential add / delete / re-estimate path; the number of genes is chosen by
inner cross-validation along the path (or by the paper's criteria: the EP leave-one-out error, the
leave-one-out error probability or the EP evidence). Around it: the RVM family
(type-II ML regression, Laplace classification, variational and Gibbs-sampled variants) and kernel
bases that pick relevance vectors, MCMC diagnostics, and :class:`SpikeSlabClassifier` (spike-and-slab
priors by EP: per-gene posterior inclusion probabilities and credible sets). Modules: :mod:`~ardselect.get` (results
stored in AnnData), :mod:`~ardselect.io` (readers and writers), :mod:`~ardselect.preprocessing`,
:mod:`~ardselect.model` (portable models), :mod:`~ardselect.pl` (figures; needs matplotlib),
:mod:`~ardselect.model_selection` and :mod:`~ardselect.datasets`.

Public names are imported lazily so that ``import ardselect`` stays fast.
"""

from __future__ import annotations

import importlib

from ._version import __version__

_LAZY = {
    "ep_probit": ".estimators._ep_probit",
    "EPResult": ".estimators._ep_probit",
    "ARDClassifier": ".estimators._classifier",
    "ConstantFeatureWarning": ".estimators._base",
    "DataScaleWarning": ".model",
    "ScaledXWarning": ".dataio._expression",
    "CRITERIA": ".choices",
    "PATH_CRITERIA": ".numerics._criteria",
    "RVMRegressor": ".estimators._rvm",
    "RVMClassifier": ".estimators._rvm",
    "VariationalRVMRegressor": ".estimators._variational",
    "VariationalRVMClassifier": ".estimators._variational",
    "GibbsRVMClassifier": ".estimators._gibbs",
    "SpikeSlabClassifier": ".estimators._spikeslab",
    "split_rhat": ".numerics._mcmc",
    "effective_sample_size": ".numerics._mcmc",
    "rank_genes": ".signature._anndata",
    "fit_signature": ".signature._signature",
    "Signature": ".signature._signature",
    "ExpressionData": ".dataio._expression",
    "pseudobulk": ".signature._pseudobulk",
    "ArdselectError": ".exceptions",
    "DataError": ".exceptions",
    "DataScaleError": ".exceptions",
    "LabelError": ".exceptions",
    "FileFormatError": ".exceptions",
    "MissingFileError": ".exceptions",
    "ModelError": ".exceptions",
    "ParameterError": ".exceptions",
    "get": ".get",
    "io": ".io",
    "pl": ".pl",
    "model": ".model",
    "preprocessing": ".preprocessing",
    "datasets": ".datasets",
    "model_selection": ".model_selection",
}

_MODULES = ("get", "io", "pl", "model", "preprocessing", "datasets", "model_selection")

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str):
    if name in _LAZY:
        module = importlib.import_module(_LAZY[name], __name__)
        value = module if name in _MODULES else getattr(module, name)
        globals()[name] = value
        return value
    msg = f"module 'ardselect' has no attribute {name!r}"
    raise AttributeError(msg)


def __dir__():
    return sorted(set(globals()) | set(__all__))
