"""The values each setting takes, its default first: read by the library and the command line.

Each tuple lists a setting's values with its default first. The estimators and the preprocessor
build their parameter checks and defaults from these tuples, and the command line its choices and
defaults, so that a value is added or a default changed in one place. The module imports nothing,
so that ``ardselect --help`` stays instant.
"""

__all__ = ["AUTO_SKETCH", "CRITERIA", "CV_RULES", "EXAMPLES", "LOG_CHOICES", "MULTICLASS",
           "SKETCH_FLOOR"]

#: ``ARDClassifier(criterion=...)``: the model-choice criteria, the default first.
CRITERIA = ("cv", "loo", "loo-prob", "evidence")
#: ``ARDClassifier(cv_rule=...)``: how the inner cross-validation picks the size.
CV_RULES = ("min", "1se", "min+paper")
#: ``ARDClassifier(multiclass=...)``: one-vs-rest paths or one shared path.
MULTICLASS = ("ovr", "shared")
#: ``Preprocessor(log=...)``: ``auto`` picks ``log2`` or ``none`` from the data.
LOG_CHOICES = ("auto", "none", "log2", "log10", "ln")
#: ``ardselect.datasets.example``: the bundled data sets.
EXAMPLES = ("leukaemia",)
#: ``ARDClassifier(max_samples="auto")``: a training set of more samples than this is fitted on a
#: stratified sketch of this many. Exact EP costs ``O(n d^2)`` per sweep along every path, so the
#: exact fit of tens of thousands of cells takes hours, while a few hundred cells per class
#: already pin down a cell type's markers.
AUTO_SKETCH = 2_000
#: ``max_samples="auto"``: the sketch keeps at least this many samples of every class (all of a
#: smaller class), so that a rare type keeps cells enough for its own path and folds.
SKETCH_FLOOR = 50
