"""The numerics: the probit link, Cholesky factors, EP for the probit model, criteria, MCMC.

The lowest layer: the probit link in log space, Cholesky factors and their jitter, the compiled
(numba) loops, Expectation Propagation for the probit model, the path's model-choice criteria and
the MCMC diagnostics. Its modules import one another, ``ardselect.exceptions`` and third-party
libraries, never a module of a layer above (engine, estimators, dataio, signature).
"""
