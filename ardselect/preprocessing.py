"""Per-gene preprocessing fitted on training data and replayed on new data: :class:`Preprocessor`.

The steps (floor / cap, log, constant-gene removal, standardisation) are an ordinary scikit-learn
transformer, so they go inside a :class:`~sklearn.pipeline.Pipeline` or
:func:`ardselect.model_selection.evaluate`; :meth:`Preprocessor.to_dict` and
:meth:`Preprocessor.apply_dict` carry the fitted parameters into a portable model
(:mod:`ardselect.model`).
"""

from .dataio._preprocessing import *  # noqa: F403  (the names of its __all__)
from .dataio._preprocessing import __all__  # noqa: F401
