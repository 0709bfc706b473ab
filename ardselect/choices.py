"""The values each setting takes, its default first: read by the library and the command line.

Each tuple lists a setting's values with its default first. The estimators and the preprocessor
build their parameter checks and defaults from these tuples, and the command line its choices and
defaults, so that a value is added or a default changed in one place. The module imports nothing,
so that ``ardselect --help`` stays instant.
"""

__all__ = ["CRITERIA", "CV_RULES", "EXAMPLES", "LOG_CHOICES", "MULTICLASS"]

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
