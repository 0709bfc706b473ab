"""Known covariates from sample annotations: encoded once, recorded, replayed by name.

:class:`CovariateEncoder` turns named ``obs`` (or table) columns into the numeric columns that
:meth:`ardselect.ARDClassifier.fit` holds in every model (its ``covariates=``): a numeric column
is standardised (its mean and sd recorded), a categorical one (strings, booleans, categories)
becomes one indicator column per level but the first in sorted order, the reference level
(one-hot with one level dropped: the intercept stands for the reference). The record
(:meth:`CovariateEncoder.to_dict`) goes into the portable model, so that a prediction encodes the
new samples' columns the same way, by name, and refuses a missing column or an unseen level.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ..exceptions import DataError, ModelError

__all__ = ["CovariateEncoder", "covariate_table"]


def _is_numeric(values: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values)


class CovariateEncoder:
    """Encode named sample annotations as numeric covariate columns.

    Parameters
    ----------
    names : sequence of str
        The columns, in order; each is numeric (standardised) or categorical (one indicator per
        level but the first, in sorted order of the levels as strings).

    Attributes
    ----------
    columns_ : list of dict
        Per named column: ``name``, ``kind`` (``"numeric"`` or ``"categorical"``), and ``mean``,
        ``sd`` or ``levels`` (every level, the reference first).
    column_names_ : list of str
        The encoded columns: ``name`` for a numeric one, ``name[level]`` for an indicator.
    """

    def __init__(self, names: Sequence[str]):
        names = [str(n) for n in names]
        if len(set(names)) != len(names):
            dup = next(n for n in names if names.count(n) > 1)
            msg = f"covariate {dup!r} is named twice"
            raise ValueError(msg)
        self.names = names

    def fit(self, frame: pd.DataFrame) -> CovariateEncoder:
        """Record each column's kind and its mean and sd, or its levels."""
        self.columns_ = []
        for name in self.names:
            values = _column(frame, name, DataError)
            if _is_numeric(values):
                x = values.to_numpy(dtype=np.float64)
                _check_finite(x, name, values.index)
                sd = float(np.std(x))
                if not sd > 0:
                    msg = (f"covariate {name!r} takes one value ({x[0]:g}) in every sample: it "
                           "says nothing a model could hold; leave it out")
                    raise DataError(msg)
                self.columns_.append({"name": name, "kind": "numeric",
                                      "mean": float(np.mean(x)), "sd": sd})
            else:
                x = _levels_of(values, name)
                levels = sorted(set(x))
                if len(levels) < 2:
                    msg = (f"covariate {name!r} has a single level ({levels[0]!r}) in every "
                           "sample: it says nothing a model could hold; leave it out")
                    raise DataError(msg)
                self.columns_.append({"name": name, "kind": "categorical", "levels": levels})
        self.column_names_ = _encoded_names(self.columns_)
        return self

    def transform(self, frame: pd.DataFrame, *, error=DataError) -> np.ndarray:
        """The encoded ``(n_samples, len(column_names_))`` float64 array of ``frame``'s rows.

        A missing column, a missing value or a level the fit did not see raise ``error``.
        """
        parts = []
        for col in self.columns_:
            name = col["name"]
            values = _column(frame, name, error)
            if col["kind"] == "numeric":
                if not _is_numeric(values):
                    msg = (f"covariate {name!r} was numeric in the fit, but the data hold "
                           f"{values.dtype} values")
                    raise error(msg)
                x = values.to_numpy(dtype=np.float64)
                _check_finite(x, name, values.index, error)
                parts.append(((x - col["mean"]) / col["sd"])[:, None])
            else:
                x = np.asarray(_levels_of(values, name, error), dtype=object)
                unseen = sorted(set(x) - set(col["levels"]))
                if unseen:
                    shown = ", ".join(map(repr, unseen[:5]))
                    msg = (f"covariate {name!r} has level(s) {shown} that the model was not "
                           f"fitted with (it knows {', '.join(map(repr, col['levels']))}); a "
                           "model cannot predict for an unseen level")
                    raise error(msg)
                parts.append(np.column_stack(
                    [(x == lev).astype(np.float64) for lev in col["levels"][1:]]))
        n = len(frame)
        return np.hstack(parts) if parts else np.zeros((n, 0))

    def fit_transform(self, frame: pd.DataFrame) -> np.ndarray:
        """:meth:`fit`, then :meth:`transform` of the same rows."""
        return self.fit(frame).transform(frame)

    def to_dict(self) -> dict:
        """The record kept in the portable model (``model.json``'s ``covariates``)."""
        return {"columns": [dict(c) for c in self.columns_],
                "encoded": list(self.column_names_)}

    @classmethod
    def from_dict(cls, data: Mapping) -> CovariateEncoder:
        """Rebuild from :meth:`to_dict`; a malformed record raises :class:`ModelError`."""
        bad = "model field covariates is malformed; the model file is corrupted or was edited"
        try:
            columns = [dict(c) for c in data["columns"]]
            enc = cls([c["name"] for c in columns])
            for c in columns:
                if c["kind"] == "numeric":
                    ok = all(isinstance(c[k], (int, float)) and np.isfinite(c[k])
                             for k in ("mean", "sd")) and c["sd"] > 0
                else:
                    ok = (c["kind"] == "categorical" and isinstance(c["levels"], list)
                          and len(c["levels"]) >= 2
                          and all(isinstance(v, str) for v in c["levels"]))
                if not ok:
                    raise ModelError(bad)
            enc.columns_ = columns
            enc.column_names_ = _encoded_names(columns)
            if list(data.get("encoded", enc.column_names_)) != enc.column_names_:
                raise ModelError(bad)
        except (KeyError, TypeError, ValueError, AttributeError):
            raise ModelError(bad) from None
        return enc


def _encoded_names(columns) -> list[str]:
    """The encoded columns' names: ``name`` (numeric), ``name[level]`` (an indicator)."""
    out = []
    for col in columns:
        if col["kind"] == "numeric":
            out.append(col["name"])
        else:
            out.extend(f"{col['name']}[{lev}]" for lev in col["levels"][1:])
    return out


def _column(frame, name: str, error) -> pd.Series:
    if name not in frame.columns:
        avail = ", ".join(map(str, frame.columns)) or "none"
        msg = f"covariate {name!r} is not a column of the sample annotations; available: {avail}"
        raise error(msg)
    return frame[name]


def _check_finite(x: np.ndarray, name: str, index, error=DataError) -> None:
    bad = ~np.isfinite(x)
    if bad.any():
        msg = (f"covariate {name!r} has {int(bad.sum())} missing or infinite value(s) (first: "
               f"sample {str(index[int(np.flatnonzero(bad)[0])])!r}); give every sample one")
        raise error(msg)


def _levels_of(values: pd.Series, name: str, error=DataError) -> list[str]:
    """A categorical column's values as strings; a missing value raises ``error``."""
    missing = values.isna().to_numpy()
    if missing.any():
        msg = (f"covariate {name!r} has {int(missing.sum())} missing value(s) (first: sample "
               f"{str(values.index[int(np.flatnonzero(missing)[0])])!r}); give every sample one")
        raise error(msg)
    return [str(v) for v in values.to_numpy()]


def covariate_table(encoder: CovariateEncoder, coef, coef_sd, problems) -> pd.DataFrame:
    """The covariates' weights: one row per binary problem and encoded column.

    Columns ``class`` (the problem's class), ``covariate`` (the named column), ``column`` (the
    encoded column: ``name`` or ``name[level]``), ``level`` (empty for a numeric covariate),
    ``reference`` (the level the intercept stands for), ``mean`` and ``sd`` (the posterior of the
    weight: per sd of a numeric covariate, or the shift of the level against the reference, in
    latent units).
    """
    rows = []
    for i, cls in enumerate(problems):
        k = 0
        for col in encoder.columns_:
            levels = [""] if col["kind"] == "numeric" else col["levels"][1:]
            reference = "" if col["kind"] == "numeric" else col["levels"][0]
            for lev in levels:
                rows.append({"class": cls, "covariate": col["name"],
                             "column": encoder.column_names_[k], "level": lev,
                             "reference": reference, "mean": float(coef[i, k]),
                             "sd": float(coef_sd[i, k])})
                k += 1
    return pd.DataFrame(rows, columns=["class", "covariate", "column", "level", "reference",
                                       "mean", "sd"])
