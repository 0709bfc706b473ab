"""Portable models: a fitted probit classifier as plain data, saved as JSON and applied anywhere.

:class:`PortableModel` keeps, for an ARD fit, per binary problem, the Gaussian posterior of the
weights of the genes in the model (a :class:`Posterior`) and the preprocessing parameters of those
genes. It predicts through the same code as :class:`ardselect.ARDClassifier`: the latent moments of
each problem (:meth:`Posterior.latent`), then :func:`ardselect.numerics._probit.probit_log_proba`, which
also combines one-vs-rest answers. For a spike-and-slab fit (:class:`ardselect.SpikeSlabClassifier`,
``kind == "spike-slab"``) it keeps each problem's mixture over the hyperprior's nodes, each node's
posterior over every gene (:mod:`ardselect.dataio._spikeslab_model`), and predicts through the code of
that estimator. :func:`load_model` reads ``model.json`` back, of either kind.
"""

from .dataio._portable import *  # noqa: F403  (the names of its __all__)
from .dataio._portable import __all__  # noqa: F401
