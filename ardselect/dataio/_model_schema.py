"""The schema helpers of a model file: checked numbers and fields, one-line errors, JSON values."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import NoReturn

import numpy as np

from ..exceptions import ModelError

_CORRUPTED = "the model file is corrupted or was edited"
#: Largest magnitude of a number in a model. A fit on standardised genes gives weights, variances
#: and preprocessing values many orders of magnitude below; beyond it, products such as the
#: predictive variance ``x' cov x`` could overflow to infinity.
_MAX_ABS = 1e100


def _brief(value) -> str:
    """A short rendering of a JSON value for a message."""
    text = json.dumps(value, default=str)
    return text if len(text) <= 40 else text[:37] + "..."


def _refuse(field: str, what: str, value=None, *, shown: bool = True) -> NoReturn:
    """Raise the :class:`ModelError` of a field that is not ``what``."""
    got = f", got {_brief(value)}" if shown else ""
    msg = f"model field {field} must be {what}{got}; {_CORRUPTED}"
    raise ModelError(msg)


def _is_number(value) -> bool:
    """A finite JSON number of sensible size (``true`` / ``false`` are not numbers)."""
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and abs(value) <= _MAX_ABS)  # NaN fails the comparison, inf exceeds it


def _number(value, field: str, *, low=None, positive=False):
    if not _is_number(value) or (low is not None and value < low) or (positive and value <= 0):
        what = ("a positive number" if positive else
                f"a number >= {low:g}" if low is not None else "a finite number")
        _refuse(field, what, value)
    return float(value)


def _numbers(value, field: str, n: int, what: str = "finite numbers") -> np.ndarray:
    """A list of ``n`` finite numbers."""
    if not isinstance(value, list) or len(value) != n:
        size = f"{len(value)} entries" if isinstance(value, list) else _brief(value)
        msg = f"model field {field} must be a list of {n} {what}, got {size}; {_CORRUPTED}"
        raise ModelError(msg)
    bad = next((k for k, v in enumerate(value) if not _is_number(v)), None)
    if bad is not None:
        _refuse(f"{field}[{bad}]", "a finite number", value[bad])
    return np.asarray(value, dtype=np.float64)


def _jsonable(value):
    """Plain Python version of ``value`` for JSON (numpy scalars and arrays included)."""
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        if all(type(v) is float and math.isfinite(v) for v in value):
            return list(value)  # plain finite numbers (a model's long vectors): kept as they are
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return [_jsonable(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        return _jsonable(value.item())
    if isinstance(value, float):
        if math.isnan(value):
            return None
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return value
    if isinstance(value, Path):
        return str(value)
    return value
