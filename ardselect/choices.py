"""The values each setting takes, its default first: read by the library and the command line.

Each tuple lists a setting's values with its default first. The estimators and the preprocessor
build their parameter checks and defaults from these tuples, and the command line its choices and
defaults, so that a value is added or a default changed in one place; :func:`groups_need_cv` is
the one check of the criterion that groups need. The module imports nothing, so that
``ardselect --help`` stays instant.
"""

__all__ = ["AUTO_SKETCH", "CRITERIA", "CV_RULES", "EXAMPLES", "LOG_CHOICES", "MULTICLASS",
           "SKETCH_FLOOR", "groups_need_cv", "resolve_multiclass"]

#: ``ARDClassifier(criterion=...)``: the model-choice criteria, the default first.
CRITERIA = ("cv", "loo", "loo-prob", "evidence")
#: ``ARDClassifier(cv_rule=...)``: how the inner cross-validation picks the size.
CV_RULES = ("min", "1se", "min+paper")
#: ``ARDClassifier(multiclass=...)``: one-vs-rest paths or one shared path; ``auto`` picks
#: (:func:`resolve_multiclass`).
MULTICLASS = ("auto", "ovr", "shared")
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


def resolve_multiclass(multiclass, panel=None):
    """What ``ARDClassifier(multiclass=...)`` fits: ``"ovr"`` or ``"shared"``.

    ``"auto"`` is ``"shared"`` with a ``panel`` budget and ``"ovr"`` without one. A panel counts
    the distinct genes of all classes together, and the shared path chooses them together: on
    PBMC's 11 clusters and CBMC's 12 cell types its panels predict better than one-vs-rest
    panels of the same size at every budget measured (user guide, "A panel of N genes"). Without
    a budget each class keeps the genes that predict it best.
    """
    if multiclass == "auto":
        return "shared" if panel is not None else "ovr"
    return multiclass


def groups_need_cv(criterion, model=None):
    """Groups are held out whole by the inner cross-validation only: a ValueError for another choice.

    ``criterion`` is the estimator's choice of the model size (``ARDClassifier(criterion=...)``);
    ``model`` names a model that has none (``"spike-slab"``, ``criterion`` None), which takes no
    groups either. ``ARDClassifier.fit(groups=...)``, :func:`~ardselect.fit_signature` and
    ``ardselect fit --groups`` ask it.

    Examples
    --------
    >>> groups_need_cv("cv")
    >>> groups_need_cv("loo")
    Traceback (most recent call last):
    ...
    ValueError: groups are used by the inner cross-validation of criterion='cv' only; got criterion='loo'
    """
    if criterion != "cv":
        what = f"criterion={criterion!r}" if model is None else f"model={model!r}"
        msg = f"groups are used by the inner cross-validation of criterion='cv' only; got {what}"
        raise ValueError(msg)
