"""Parameter constraints: each estimator's table of valid values, and the check at ``fit``.

Every estimator (and :class:`~ardselect.preprocessing.Preprocessor`) declares, per constructor
parameter, the list of values it accepts in ``_constraints``: an :class:`Interval`, a set of
:class:`Options`, a type, ``None``, ``callable`` or one of the names :data:`BOOLEAN`,
:data:`RANDOM_STATE` and :data:`ARRAY_LIKE`. :func:`check_params` runs at the start of ``fit`` and
raises one :class:`~ardselect.exceptions.ParameterError` naming the parameter, what it must be and
what it got, in scikit-learn's wording ("The 'tol' parameter of ARDClassifier must be a float in
the range [0.0, inf). Got -1 instead.").

The check and its error are the package's own: nothing here (or in a fit) reads scikit-learn's
private parameter validation. ``tests/test_contract.py`` still runs scikit-learn's
``check_param_validation`` on every estimator, with the tables translated into its vocabulary.
"""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np

from ..exceptions import ParameterError

#: A bool (Python's or numpy's).
BOOLEAN = "boolean"
#: An int seed in [0, 2**32 - 1], a ``numpy.random.RandomState`` or ``None``.
RANDOM_STATE = "random_state"
#: Anything with a length, a shape or an ``__array__``, but not a scalar.
ARRAY_LIKE = "array-like"


class Interval:
    """Numbers of type ``kind`` (``Integral`` or ``Real``) between ``left`` and ``right``.

    ``None`` bounds are infinite; ``closed`` is ``"left"``, ``"right"``, ``"both"`` or
    ``"neither"``. NaN is never inside.
    """

    def __init__(self, kind, left, right, *, closed):
        self.kind, self.left, self.right, self.closed = kind, left, right, closed

    def accepts(self, value) -> bool:
        """Whether ``value`` is of the type and inside the bounds."""
        if not isinstance(value, self.kind):
            return False
        if not isinstance(value, Integral) and math.isnan(value):
            return False
        low = -math.inf if self.left is None else self.left
        high = math.inf if self.right is None else self.right
        low_ok = value >= low if self.closed in ("left", "both") else value > low
        high_ok = value <= high if self.closed in ("right", "both") else value < high
        return bool(low_ok and high_ok)

    def __str__(self):
        integral = self.kind is Integral

        def bound(b, infinite):
            if b is None:
                return infinite
            return b if integral else float(b)

        return (f"{'an int' if integral else 'a float'} in the range "
                f"{'[' if self.closed in ('left', 'both') else '('}{bound(self.left, '-inf')}, "
                f"{bound(self.right, 'inf')}{']' if self.closed in ('right', 'both') else ')'}")


class Options:
    """One of a few strings."""

    def __init__(self, options):
        self.options = set(options)

    def accepts(self, value) -> bool:
        """Whether ``value`` is a string among the options."""
        return isinstance(value, str) and value in self.options

    def __str__(self):
        return f"a str among {{{', '.join(repr(o) for o in sorted(self.options))}}}"


def _accepts(constraint, value) -> bool:
    if isinstance(constraint, (Interval, Options)):
        return constraint.accepts(value)
    if constraint is None:
        return value is None
    if constraint is callable:
        return callable(value)
    if constraint == BOOLEAN:
        return isinstance(value, (bool, np.bool_))
    if constraint == RANDOM_STATE:
        return (value is None or isinstance(value, np.random.RandomState)
                or Interval(Integral, 0, 2**32 - 1, closed="both").accepts(value))
    if constraint == ARRAY_LIKE:
        array_like = (hasattr(value, "__len__") or hasattr(value, "shape")
                      or hasattr(value, "__array__"))
        return array_like and not np.isscalar(value)
    if isinstance(constraint, type):
        return isinstance(value, constraint)
    msg = f"unknown constraint {constraint!r}"
    raise TypeError(msg)


def _describe(constraint) -> str:
    if isinstance(constraint, (Interval, Options)):
        return str(constraint)
    if constraint is None:
        return "None"
    if constraint is callable:
        return "a callable"
    if constraint == BOOLEAN:
        return "an instance of 'bool' or an instance of 'numpy.bool'"
    if constraint == RANDOM_STATE:
        return ("an int in the range [0, 4294967295], an instance of "
                "'numpy.random.mtrand.RandomState' or None")
    if constraint == ARRAY_LIKE:
        return "an array-like"
    name = {Integral: "int", Real: "float"}.get(constraint, constraint.__qualname__)
    return f"an instance of {name!r}"


def check_params(estimator) -> None:
    """Raise :class:`ParameterError` for the first parameter outside ``estimator._constraints``."""
    table = type(estimator)._constraints
    for name, value in estimator.get_params(deep=False).items():
        allowed = table.get(name)
        if allowed is None or any(_accepts(c, value) for c in allowed):
            continue
        said = [_describe(c) for c in allowed]
        must = said[0] if len(said) == 1 else f"{', '.join(said[:-1])} or {said[-1]}"
        msg = (f"The {name!r} parameter of {type(estimator).__name__} must be {must}. "
               f"Got {value!r} instead.")
        raise ParameterError(msg)
