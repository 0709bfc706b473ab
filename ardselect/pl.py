"""Figures: the ARD path, the accuracy-size frontier, the selected genes' weights, and calibration.

Every function draws on a :class:`matplotlib.figure.Figure` (a new one unless ``fig`` is given) and
returns it; :func:`save_png` writes a figure as a byte-reproducible PNG. matplotlib is an optional
dependency (the ``plot`` extra, or ``pip install matplotlib``); it is imported when a figure is drawn, so the rest
of ardselect works without it.
"""

from .signature._plots import (
    LOO_PROB_FLOOR,
    calibration,
    certainty,
    class_colours,
    class_order,
    frontier,
    inclusion,
    path,
    require_matplotlib,
    save_png,
    weights,
)

__all__ = [
    "LOO_PROB_FLOOR",
    "calibration",
    "certainty",
    "class_colours",
    "class_order",
    "frontier",
    "inclusion",
    "path",
    "require_matplotlib",
    "save_png",
    "weights",
]
