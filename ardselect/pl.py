"""Figures: the ARD path, the accuracy-size frontier, the selected genes' weights, and calibration.

Every function draws on a :class:`matplotlib.figure.Figure` (a new one unless ``fig`` is given) and
returns it; :func:`save_png` writes a figure as a byte-reproducible PNG. matplotlib is an optional
dependency (the ``plot`` extra, or ``pip install matplotlib``); it is imported when a figure is drawn, so the rest
of ardselect works without it.
"""

from .signature._plots import *  # noqa: F403  (the names of its __all__)
from .signature._plots import __all__  # noqa: F401
