"""Honest held-out evaluation of gene signatures, ARD-EP beside any scikit-learn classifier.

Every method sees the same random partitions. Preprocessing is fitted on each training part only and
applied to its test part; each method is cloned and fitted on the training part; its test
predictions are scored. One tidy row per partition and method comes out, with the held-out
probabilities for calibration plots and AUCs.

Metrics per partition and method: test errors and error rate; the number of genes the fitted model uses
(:func:`n_genes_used`); the log-loss ``-mean log p(true class)`` with probabilities clipped below at
1e-15 for the log only; the Brier score ``mean sum_k (p_k - [y = k])^2``; the expected calibration error
of the top-label confidence (:func:`expected_calibration_error`); the log-loss of predicting the
training class frequencies (what any model must beat); and the fit time.
"""

from .signature._model_selection import *  # noqa: F403  (the names of its __all__)
from .signature._model_selection import __all__  # noqa: F401
