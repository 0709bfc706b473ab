"""Expectation Propagation for one probit model, and the diagnostics of MCMC draws.

:func:`ep_probit` fits a probit model with fixed Gaussian priors by EP (the building block of
:class:`~ardselect.ARDClassifier`; its result an :class:`EPResult`). :func:`split_rhat` and
:func:`effective_sample_size` diagnose the draws of any sampler, those of
:class:`~ardselect.GibbsRVMClassifier` among them.
"""

from __future__ import annotations

from .estimators._ep_probit import EPResult, ep_probit
from .numerics._mcmc import effective_sample_size, split_rhat

__all__ = ["EPResult", "effective_sample_size", "ep_probit", "split_rhat"]
