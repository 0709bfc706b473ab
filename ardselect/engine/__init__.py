"""The path engine: the design matrix, the sequential ARD path and what it runs on.

The design matrix as one type (dense, sparse, lazy) and its input checks, the rows a fit reads, the
bases, the sequential add / delete / re-estimate path and its joint (group ARD) form, safe
screening, the EP probit problem and where independent pieces run. It imports the numerics and
``ardselect.exceptions``, never the estimators or a layer above them.
"""
