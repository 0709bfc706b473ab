"""Errors raised by ardselect, and its warnings.

Every error the library raises on purpose derives from :class:`ArdselectError` and from the builtin
exception a Python user would expect (``ValueError`` for bad values, ``FileNotFoundError`` for a missing
file, ...), so ``except ValueError`` keeps working for code that does not know about ardselect.
Messages are one line: they name the bad value and, where there is a short list, the valid ones.
The warnings (:class:`ConstantFeatureWarning`, :class:`DataScaleWarning`, :class:`ScaledXWarning`)
are subclasses of ``UserWarning``, filtered by class as usual.
"""

from __future__ import annotations

__all__ = [
    "ArdselectError",
    "DataError",
    "DataScaleError",
    "LabelError",
    "FileFormatError",
    "MissingFileError",
    "ModelError",
    "ParameterError",
    "ConstantFeatureWarning",
    "DataScaleWarning",
    "ScaledXWarning",
]


class ArdselectError(Exception):
    """Base class of every error ardselect raises on purpose."""


class DataError(ArdselectError, ValueError):
    """The expression matrix is unusable: NaN or infinite values, empty, constant features, ..."""


class DataScaleError(DataError):
    """New data are plainly another kind of values than a model's training data.

    Scaled values given to a model fitted on unscaled ones, or the reverse: its predictions
    would be wrong.
    """


class LabelError(ArdselectError, ValueError):
    """The labels are unusable: wrong length, a single class, a missing column, ..."""


class FileFormatError(ArdselectError, ValueError):
    """A file is not what its name or the caller says it is, or is corrupted."""


class MissingFileError(ArdselectError, FileNotFoundError):
    """A file that must exist does not."""


class ModelError(ArdselectError, ValueError):
    """A saved model cannot be applied: unknown version, missing genes, ..."""


class ParameterError(ArdselectError, ValueError, TypeError):
    """A constructor parameter is outside its valid values, of a wrong type or out of range.

    The message names the parameter, what it must be and what it got ("The 'tol' parameter of
    ARDClassifier must be a float in the range [0.0, inf). Got -1 instead."). A ``ValueError`` and
    a ``TypeError``, as scikit-learn's own parameter errors are.
    """


class ConstantFeatureWarning(UserWarning):
    """Constant features were left out of the model (``constant_features="warn"``)."""


class DataScaleWarning(UserWarning):
    """New data look like another kind of values than those the model was fitted on."""


class ScaledXWarning(UserWarning):
    """``X`` holds scaled values while ``adata.raw`` holds unscaled ones of its genes."""
