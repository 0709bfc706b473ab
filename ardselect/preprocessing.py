"""Per-gene preprocessing fitted on training data and replayed on new data: :class:`Preprocessor`.

The steps (floor / cap, log, constant-gene removal, standardisation) are an ordinary scikit-learn
transformer, so they go inside a :class:`~sklearn.pipeline.Pipeline` or
:func:`ardselect.model_selection.evaluate`; :meth:`Preprocessor.to_dict` and
:meth:`Preprocessor.apply_dict` carry the fitted parameters into a portable model
(:mod:`ardselect.model`).
"""

from .dataio._preprocessing import (
    LOG_CHOICES,
    Preprocessor,
    auto_log,
)

__all__ = [
    "LOG_CHOICES",
    "Preprocessor",
    "auto_log",
]
