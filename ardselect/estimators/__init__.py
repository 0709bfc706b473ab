"""The estimators: the family and path bases, ARDClassifier, the RVM family, spike-and-slab.

The family base and the path base, ``ARDClassifier`` with its inner cross-validation, binary fits
and per-gene certainty, the RVMs, the variational and Gibbs estimators and spike-and-slab, each
beside its own engine, and the parameter constraint tables. It imports the engine and the numerics,
never data in / out (``dataio``) or the front end (``signature``).
"""
