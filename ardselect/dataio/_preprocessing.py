"""The code of :mod:`ardselect.preprocessing`, which re-exports its public names and documents them."""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from numbers import Real

import numpy as np
import pandas as pd
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin

from ..choices import LOG_CHOICES
from ..engine._design import as_design, by_rows, dense
from ..engine._lazy import combine_moments, moments
from ..engine._validation import check_design, check_sparse_values, nonfinite_message
from ..estimators._constraints import Interval, Options, ParameterError, check_params
from ..exceptions import DataError

__all__ = ["LOG_CHOICES", "Preprocessor", "auto_log"]



#: ``log="auto"`` decides on the bulk of the genes, so that a minority of odd columns (a numeric
#: covariate, a label code) cannot flip the decision for every real gene. The data look
#: log-scaled or centred when more than this fraction of genes has negative values ...
AUTO_NEGATIVE_GENES = 0.5
#: ... and like counts or raw intensities when, of the genes without negative values, at least
#: this fraction reaches above :data:`AUTO_LARGE_VALUE` (log-scaled expression stays below about
#: 25: log2 of 3e7) ...
AUTO_LARGE_GENES = 0.1
AUTO_LARGE_VALUE = 50.0
#: ... or at least this fraction is integer-valued (counts).
AUTO_INTEGER_GENES = 0.5
#: A gene whose sd is at most this fraction of its mean (after the log) is constant up to the
#: rounding of its values, and dropped as constant.
ROUNDING_NOISE = 1e-12

#: Stored entries per gene block when a sparse matrix is fitted gene block by gene block
#: (:meth:`Preprocessor._fit_gene_blocks`): a 32nd of the matrix, at most this many. A block's
#: working copies take about 50 bytes an entry, a tenth of the matrix (8 bytes an entry as
#: float32 values with int32 indices) for the block of a 32nd.
_BLOCK_ENTRIES = 1 << 22


def _by_gene_blocks(X, floor, cap) -> bool:
    """Whether ``fit`` takes ``X`` gene block by gene block: a CSR matrix that clipping keeps sparse.

    Canonical CSR only (sorted column indices, no duplicates), so that every block holds each
    gene's values in the order the whole-matrix route (CSR to CSC) gives them.
    """
    if not (as_design(X).format == "csr" and X.ndim == 2 and 0 not in X.shape):
        return False
    if (floor is not None and floor > 0) or (cap is not None and cap < 0):
        return False  # implicit zeros change: the whole-matrix route densifies
    return bool(X.has_canonical_format)


def _gene_blocks(X) -> list[tuple[int, int]]:
    """Consecutive gene ranges ``(start, stop)`` of a CSR ``X`` holding about a block of entries each."""
    n_genes = X.shape[1]
    budget = max(min(_BLOCK_ENTRIES, X.nnz // 32), 1)
    counts = np.zeros(n_genes, dtype=np.int64)
    for start in range(0, X.nnz, budget):  # per-gene counts without an index array of X's size
        counts += np.bincount(X.indices[start:start + budget], minlength=n_genes)
    ends = np.searchsorted(np.cumsum(counts), np.arange(budget, X.nnz, budget), side="right")
    edges = np.unique(np.concatenate([[0], np.maximum(ends, 1), [n_genes]]))
    return list(zip(edges[:-1].tolist(), edges[1:].tolist(), strict=True))


def _csc_block(X, start, stop):
    """Genes ``start:stop`` of a CSR ``X`` as :func:`check_design` gives a matrix: float64, CSC."""
    B = X[:, start:stop].tocsc().astype(np.float64, copy=False)
    B.sort_indices()
    return B


def _gene_stats(X) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-gene minimum, maximum and whether every value is an integer; shape (n_genes,) each."""
    design = as_design(X)
    return *design.column_range(), design.n_fractional() == 0


def auto_log(X) -> tuple[str, str]:
    """The ``log="auto"`` decision for ``X`` (samples x genes): ``("log2" or "none", reason)``.

    Decided on the bulk of the genes, not on the extreme values of the matrix: no log when more
    than half the genes have negative values (log-scaled or centred data); else ``log2`` when at
    least 10% of the genes without negative values reach above 50 (raw intensities, TPM) or at
    least half of them are integer-valued (counts); else no log. The reason says which rule
    decided, with its numbers.

    Examples
    --------
    >>> import numpy as np
    >>> counts = np.arange(40.0).reshape(8, 5)
    >>> auto_log(counts)[0]
    'log2'
    >>> code = np.array([[-1.0], [1.0]] * 4)  # one odd column does not flip the decision
    >>> auto_log(np.hstack([counts, code]))
    ('log2', '5 of 6 genes are integer-valued: counts')
    """
    return _auto_decision(*_gene_stats(X))


def _auto_decision(lo, hi, integer) -> tuple[str, str]:
    """:func:`auto_log` from the per-gene minimum, maximum and integer flags."""
    n = lo.size
    negative = lo < 0
    if negative.sum() > AUTO_NEGATIVE_GENES * n:
        return "none", (f"{int(negative.sum())} of {n} genes have negative values: data look "
                        "log-scaled or centred")
    bulk = ~negative
    n_bulk = int(bulk.sum())
    large = int((hi[bulk] > AUTO_LARGE_VALUE).sum())
    if large >= AUTO_LARGE_GENES * n_bulk:
        return "log2", f"{large} of {n} genes reach above {AUTO_LARGE_VALUE:g}: counts or intensities"
    varying = bulk & (hi > 1)
    n_int = int((integer & varying).sum())
    if n_int >= AUTO_INTEGER_GENES * max(int(varying.sum()), 1) and n_int > 0:
        return "log2", f"{n_int} of {n} genes are integer-valued: counts"
    return "none", (f"{n - large} of {n} genes stay below {AUTO_LARGE_VALUE:g} and are not "
                    "counts: data look log-scaled")


class Preprocessor(TransformerMixin, BaseEstimator):
    """Per-gene preprocessing applied before ARD: floor/cap, log, constant-gene removal, standardisation.

    The steps run in this order on a samples x genes matrix:

    1. values below ``floor`` are set to ``floor`` and values above ``cap`` to ``cap`` (the Golub
       convention is floor 100, cap 16000 for Affymetrix MAS 4 intensities);
    2. a log transform, ``log_b(x + pseudocount)``;
    3. genes that are constant on the training data are dropped (their number is in ``n_dropped_``);
    4. with ``standardize``, each gene is centred and scaled to unit standard deviation
       (``ddof=0``) with the training mean and sd. Sparse input is scaled but not centred, which
       keeps it sparse; with an intercept in the model centring only moves the intercept.

    Parameters
    ----------
    log : {"auto", "none", "log2", "log10", "ln"}, default="auto"
        ``"auto"`` chooses ``"log2"`` when the bulk of the (floored, capped) training genes look
        like counts or raw intensities, and ``"none"`` when they look log-scaled or centred (see
        :func:`auto_log`: a minority of odd columns does not flip the choice). The choice made is in
        ``log_``, and why in ``log_reason_``. Genes with values the chosen log cannot take raise
        :class:`DataError` naming them.
    pseudocount : float, optional
        Added before taking logs. The default is 0 when a positive ``floor`` is set (the floor
        already keeps the logs finite: the Golub convention is ``log10`` of floored values) and
        1 otherwise (``log2(x + 1)`` for counts). Values with ``x + pseudocount <= 0`` raise
        :class:`DataError` (use ``floor``).
    floor, cap : float, optional
        Lower and upper bounds applied first.
    standardize : bool, default=True
        Centre and scale each gene.

    Attributes
    ----------
    log_ : str
        The transform actually applied (never ``"auto"``).
    log_reason_ : str
        Why: the rule of :func:`auto_log` that decided, with its numbers, or ``"requested"``.
    pseudocount_ : float
        The pseudocount actually used.
    keep_ : ndarray of bool, shape (n_features_in_,)
        Genes kept (not constant).
    n_dropped_ : int
        Number of constant genes dropped.
    center_, scale_ : ndarray of shape (n_kept,)
        Subtracted and divided per kept gene (0 and 1 without standardisation).
    mean_, sd_ : ndarray of shape (n_kept,)
        Training mean and standard deviation of each kept gene after the log (``center_`` and
        ``scale_`` when standardised; sparse data are only scaled).
    min_, max_ : ndarray of shape (n_kept,)
        Training range of each kept gene after the log.
    whole_ : ndarray of bool, shape (n_kept,)
        Whether every training value of the gene (after floor and cap) is a whole number (counts,
        integer intensities). These five tell new data of another kind
        (:class:`ardselect.exceptions.DataScaleWarning`).
    n_features_in_ : int
    feature_names_in_ : ndarray of str, shape (n_features_in_,)
        Set when fitted on a DataFrame or given ``feature_names``.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[10.0, 5, 200], [30, 5, 900], [70, 5, 4000]])
    >>> pre = Preprocessor().fit(X)
    >>> pre.log_, pre.n_dropped_
    ('log2', 1)
    >>> pre.transform(X).shape
    (3, 2)
    """

    def __init__(
        self,
        *,
        log: str = LOG_CHOICES[0],
        pseudocount: float | None = None,
        floor: float | None = None,
        cap: float | None = None,
        standardize: bool = True,
    ):
        self.log = log
        self.pseudocount = pseudocount
        self.floor = floor
        self.cap = cap
        self.standardize = standardize

    #: The parameter contract, checked by ``check_params`` at the start of ``fit``.
    _constraints: dict = {
        "log": [Options(set(LOG_CHOICES))],
        "pseudocount": [Interval(Real, 0, None, closed="left"), None],
        "floor": [Interval(Real, None, None, closed="neither"), None],
        "cap": [Interval(Real, None, None, closed="neither"), None],
        "standardize": ["boolean"],
    }

    # The steps ----------------------------------------------------------------------------
    def _check_params(self):
        check_params(self)
        if self.floor is not None and self.cap is not None and self.floor >= self.cap:
            msg = f"floor ({self.floor}) must be below cap ({self.cap})"
            raise ParameterError(msg)

    @staticmethod
    def _clip(X, floor, cap):
        return as_design(X).clip(floor, cap)  # sparse stays sparse while zero stays zero

    @staticmethod
    def _log(X, log, pseudocount, *, model=False):
        if log == "none":
            return X
        base = {"log2": 2.0, "log10": 10.0, "ln": math.e}[log]
        design = as_design(X)
        lo = design.minimum()
        if lo + pseudocount <= 0:
            n_bad = int(np.sum(design.stored() + pseudocount <= 0))
            if model:  # predicting: the model's own log, which only other values can break
                advice = (f"the model takes {log}(x + {pseudocount:g}) of its input, so it was "
                          "fitted on values above that (counts or intensities); these look like "
                          "another kind (log values, z-scores): give the same kind of values as "
                          "the training data")
            else:
                advice = ("set a floor (e.g. 100 for raw intensities: floor=100, or --floor 100) "
                          "or no log (log='none', or --log none)")
            msg = (f"cannot take {log} of {n_bad} value(s) <= {-pseudocount:g} (minimum {lo:g}); "
                   f"{advice}")
            raise DataError(msg)
        return design.log(base, pseudocount)  # sparse stays sparse with pseudocount 1

    def _steps(self, X, log):
        X = self._clip(X, self.floor, self.cap)
        return self._log(X, log, self.pseudocount_)

    # sklearn API ----------------------------------------------------------------------------
    def fit(self, X, y=None, *, feature_names=None):
        """Fit on training data ``X`` of shape (n_samples, n_features); returns ``self``."""
        self._check_params()
        if isinstance(X, pd.DataFrame):
            feature_names = X.columns
        if as_design(X).lazy:
            return self._fit_lazy(X, feature_names)
        if _by_gene_blocks(X, self.floor, self.cap):
            X = check_sparse_values(X, estimator_name="Preprocessor")
            self._set_names(X.shape[1], feature_names)
            if self._fit_gene_blocks(X):
                return self
        X = check_design(X, estimator_name="Preprocessor")
        self._set_names(X.shape[1], feature_names)
        clipped = self._clip(X, self.floor, self.cap)
        if self.log == "auto":
            self.log_, self.log_reason_ = auto_log(clipped)
        else:
            self.log_, self.log_reason_ = self.log, "requested"
        lo, hi, whole = _gene_stats(clipped)
        self._check_log_domain(lo)
        Z = as_design(self._log(clipped, self.log_, self.pseudocount_))
        return self._set_scaling(~Z.constant_columns(), Z.sparse,
                                 lambda keep: as_design(Z.X[:, keep]).mean_var(), (lo, hi, whole))

    def _fit_gene_blocks(self, X) -> bool:
        """``fit`` of a CSR matrix gene block by gene block, without a copy of the whole matrix.

        Each block of genes is taken as :func:`check_design` would give it (float64, CSC) and goes
        through the steps of ``fit``, so every per-gene statistic is the one of the whole-matrix
        route, bit for bit: a first pass gives the minima, maxima and integer flags (the log
        decision), a second the constant genes and the moments after the log. Returns False,
        having set nothing but the names, when the chosen log would make the matrix dense
        (a pseudocount other than 1); ``fit`` then takes the whole-matrix route.
        """
        blocks = _gene_blocks(X)
        lo, hi, integer = (np.concatenate(a) for a in zip(
            *(_gene_stats(self._clip(_csc_block(X, start, stop), self.floor, self.cap))
              for start, stop in blocks),
            strict=True))
        if self.log == "auto":
            self.log_, self.log_reason_ = _auto_decision(lo, hi, integer)
        else:
            self.log_, self.log_reason_ = self.log, "requested"
        self._check_log_domain(lo)
        if self.log_ != "none" and self.pseudocount_ != 1.0:
            return False
        keep, mean, var = [], [], []
        for start, stop in blocks:
            Z = self._log(self._clip(_csc_block(X, start, stop), self.floor, self.cap), self.log_,
                          self.pseudocount_)
            keep.append(~as_design(Z).constant_columns())
            m, v = as_design(Z[:, keep[-1]]).mean_var()
            mean.append(m)
            var.append(v)
        keep = np.concatenate(keep)
        self._set_scaling(keep, sparse=True,
                          mean_var=lambda kept: (np.concatenate(mean), np.concatenate(var)),
                          ranges=(lo, hi, integer))
        return True

    def _set_scaling(self, keep, sparse, mean_var, ranges):
        """``keep_``, ``n_dropped_``, ``sparse_``, ``center_``, ``scale_`` (the end of ``fit``).

        ``mean_var(keep)`` gives the mean and variance (``ddof=0``) of the kept genes;
        ``ranges`` is each gene's training minimum, maximum (before the log) and whole-number flag.
        """
        keep = np.asarray(keep, dtype=bool).copy()
        mean = var = np.zeros(0)
        if keep.any():
            mean, var = (np.asarray(v, dtype=np.float64) for v in mean_var(keep))
            # A gene whose values differ only in their last digits (0.1 + 0.2 against 0.3) is
            # constant: standardising it would blow its rounding noise up to unit variance.
            noise = np.sqrt(var) <= ROUNDING_NOISE * np.abs(mean)
            if noise.any():
                keep[np.flatnonzero(keep)[noise]] = False
                mean, var = mean[~noise], var[~noise]
        self.keep_ = keep
        self.n_dropped_ = int((~self.keep_).sum())
        if not self.keep_.any():
            msg = (f"all {self.keep_.size} genes are constant across the samples; nothing to "
                   "classify")
            raise DataError(msg)
        self.sparse_ = bool(sparse)
        n_kept = int(self.keep_.sum())
        self.mean_ = mean
        self.sd_ = np.sqrt(var)
        lo, hi, whole = (np.asarray(r)[self.keep_] for r in ranges)
        self.min_ = np.asarray(_log_of(lo, self.log_, self.pseudocount_), dtype=np.float64)
        self.max_ = np.asarray(_log_of(hi, self.log_, self.pseudocount_), dtype=np.float64)
        self.whole_ = np.asarray(whole, dtype=bool)
        if self.standardize:
            self.center_ = np.zeros(n_kept) if sparse else self.mean_
            # A gene that is not exactly constant can still have a sd that rounds to 0; keep
            # its scale at 1 rather than divide by ~0.
            self.scale_ = np.where(self.sd_ > 0, self.sd_, 1.0)
        else:
            self.center_ = np.zeros(n_kept)
            self.scale_ = np.ones(n_kept)
        return self

    def _set_names(self, n_features, feature_names):
        """``n_features_in_``, ``feature_names_in_`` and ``pseudocount_``."""
        self.n_features_in_ = n_features
        if feature_names is not None:
            names = np.asarray([str(n) for n in feature_names], dtype=object)
            if names.shape[0] != n_features:
                msg = f"{names.shape[0]} feature names for {n_features} columns"
                raise DataError(msg)
            self.feature_names_in_ = names
        if self.pseudocount is None:
            self.pseudocount_ = 0.0 if (self.floor is not None and self.floor > 0) else 1.0
        else:
            self.pseudocount_ = float(self.pseudocount)

    def _fit_lazy(self, X, feature_names):
        """``fit`` on a dask array in row chunks: every statistic from one pass over the chunks.

        Each chunk yields per-gene minima, maxima, counts of non-integer and non-finite values and
        the moments of the chunk with and without the log; they merge pairwise
        (:func:`ardselect.engine._lazy.reduce_rows`). The result equals the in-memory fit up to the
        rounding of the merged moments.
        """
        if X.shape[0] == 0 or X.shape[1] == 0:
            msg = f"Found array with shape {X.shape}: Preprocessor needs samples and genes."
            raise DataError(msg)
        self._set_names(X.shape[1], feature_names)
        want_log = self.log != "none"
        stats = as_design(X).reduce_rows(
            functools.partial(_chunk_stats, self.floor, self.cap, self.pseudocount_, want_log),
            _combine_chunk_stats,
        )
        if stats["bad"]:
            raise DataError(nonfinite_message(stats["bad"], stats["bad_kinds"], stats["bad_col"]))
        raw = stats["raw"]
        if self.log == "auto":
            self.log_, self.log_reason_ = _auto_decision(raw["min"], raw["max"],
                                                         stats["n_frac"] == 0)
        else:
            self.log_, self.log_reason_ = self.log, "requested"
        self._check_log_domain(raw["min"])
        if self.log_ == "none":
            z, sparse = raw, stats["sparse_raw"]
        else:
            c = math.log({"log2": 2.0, "log10": 10.0, "ln": math.e}[self.log_])
            ln = stats["ln"]
            z = {"mean": ln["mean"] / c, "m2": ln["m2"] / c**2, "min": ln["min"] / c,
                 "max": ln["max"] / c, "n": ln["n"]}
            sparse = stats["sparse_ln"]
        return self._set_scaling(z["min"] != z["max"], sparse,
                                 lambda keep: (z["mean"][keep], z["m2"][keep] / z["n"]),
                                 (raw["min"], raw["max"], stats["n_frac"] == 0))

    def _check_log_domain(self, lo) -> None:
        """Refuse a log of values <= -pseudocount (``lo``: per-gene minima), naming the genes."""
        if self.log_ == "none":
            return
        bad = np.flatnonzero(lo + self.pseudocount_ <= 0)
        if not bad.size:
            return
        names = getattr(self, "feature_names_in_", None)
        shown = [repr(str(names[j])) if names is not None else f"column {j}" for j in bad[:5]]
        more = ", ..." if bad.size > 5 else ""
        why = (f" (auto: {self.log_reason_})" if self.log == "auto" else "")
        msg = (f"cannot take {self.log_}{why}: {bad.size} gene(s) have values <= "
               f"{-self.pseudocount_:g} ({', '.join(shown)}{more}; minimum {float(lo.min()):g}); "
               "leave those genes out (--drop in the CLI), set a floor (e.g. 100 for raw "
               "intensities: floor=100, or --floor 100) or no log (log='none', or --log none)")
        raise DataError(msg)

    def transform(self, X):
        """Apply the fitted steps; returns an array (or sparse matrix) of shape (n_samples, n_kept)."""
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self, "keep_")
        if as_design(X).lazy:
            return self._transform_lazy(X)
        given = X
        X = check_design(X, estimator_name="Preprocessor")
        if X.shape[1] != self.n_features_in_:
            msg = f"X has {X.shape[1]} genes but the preprocessor was fitted on {self.n_features_in_}"
            raise DataError(msg)
        if self._in_place(X, given):
            return self._transform_in_place(X)
        Z = self._steps(X, self.log_)[:, self.keep_]
        return self._standardize(Z, self.center_, self.scale_)

    def _in_place(self, X, given) -> bool:
        """Whether ``transform`` may work on the values of the checked sparse ``X`` in place.

        ``X`` must be a copy (``check_design`` converted ``given``) and every step must keep it
        sparse: a clip that leaves zeros at zero, a ``log1p``-type log, no centring.
        """
        if not as_design(X).sparse or np.any(self.center_ != 0):
            return False
        if (self.floor is not None and self.floor > 0) or (self.cap is not None and self.cap < 0):
            return False
        if self.log_ != "none" and self.pseudocount_ != 1.0:
            return False
        given_data = getattr(given, "data", None)
        return not (isinstance(given_data, np.ndarray) and np.shares_memory(X.data, given_data))

    def _transform_in_place(self, X):
        """``transform``'s steps on the values of a CSC ``X`` that is ours, each as ``transform`` does it.

        The same operations on the same stored values as :meth:`_clip`, :meth:`_log` and
        :meth:`_standardize`, hence the same result, bit for bit, with one copy (the kept genes).
        """
        v = X.data
        if self.floor is not None or self.cap is not None:
            np.clip(v, self.floor, self.cap, out=v)
        if self.log_ != "none":
            if v.size and float(v.min()) + self.pseudocount_ <= 0:
                self._log(X, self.log_, self.pseudocount_)  # raises its DataError
            base = {"log2": 2.0, "log10": 10.0, "ln": math.e}[self.log_]
            np.log1p(v, out=v)
            v /= math.log(base)
        Z = X[:, self.keep_]
        del X, v
        Z.data *= np.repeat(1.0 / self.scale_, np.diff(Z.indptr))
        return Z

    def _transform_lazy(self, X):
        """``transform`` of a dask array: the same steps chunk by chunk, lazily (CSR chunks stay CSR)."""
        if X.shape[1] != self.n_features_in_:
            msg = f"X has {X.shape[1]} genes but the preprocessor was fitted on {self.n_features_in_}"
            raise DataError(msg)
        if len(X.chunks[1]) > 1:
            X = X.rechunk({1: -1})
        meta = sp.csr_matrix((0, 0)) if self.sparse_ else np.empty((0, 0))
        return X.map_blocks(self._transform_chunk, dtype=np.float64,
                            chunks=(X.chunks[0], (int(self.keep_.sum()),)), meta=meta)

    def _transform_chunk(self, block):
        return by_rows(self.transform(block))

    @staticmethod
    def _standardize(Z, center, scale):
        return as_design(Z).standardized(center, scale)  # sparse stays sparse without centring

    def get_feature_names_out(self, input_features=None):
        """Names of the kept genes."""
        names = input_features
        if names is None:
            names = getattr(
                self, "feature_names_in_", np.array([f"x{i}" for i in range(self.n_features_in_)])
            )
        return np.asarray(names, dtype=object)[self.keep_]

    # Serialisation ----------------------------------------------------------------------------
    def to_dict(self, features: Sequence[int] | None = None) -> dict:
        """JSON-ready parameters; with ``features`` (indices into the kept genes), only theirs."""
        cols = np.arange(self.center_.shape[0]) if features is None else np.asarray(features, int)
        return {
            "floor": self.floor,
            "cap": self.cap,
            "log": self.log_,
            "log_requested": self.log,
            "pseudocount": float(self.pseudocount_),
            "standardize": bool(self.standardize),
            "center": self.center_[cols].tolist(),
            "scale": self.scale_[cols].tolist(),
            # The training mean, sd and range after the log and whether the values were whole
            # numbers: not used to predict, only to tell new data of another kind
            # (model.DataScaleWarning).
            **{key: getattr(self, f"{key}_")[cols].tolist()
               for key in ("mean", "sd", "min", "max", "whole")
               if getattr(self, f"{key}_", None) is not None},
        }

    @staticmethod
    def apply_dict(params: Mapping, X):
        """Apply stored parameters (:meth:`to_dict`) to ``X`` whose columns are the stored genes."""
        if len(getattr(X, "shape", ())) == 2 and X.shape[1] == 0:  # an intercept-only model
            return np.zeros((X.shape[0], 0))
        X = dense(check_design(X, estimator_name="model"))
        Z = Preprocessor._clip(X, params["floor"], params["cap"])
        Z = Preprocessor._log(Z, params["log"], float(params["pseudocount"]), model=True)
        center = np.asarray(params["center"], dtype=np.float64)
        scale = np.asarray(params["scale"], dtype=np.float64)
        return (np.asarray(Z, dtype=np.float64) - center) / scale

    def describe(self) -> str:
        """One line saying what was done, for logs and the CLI."""
        parts = []
        if self.floor is not None:
            parts.append(f"floor {self.floor:g}")
        if self.cap is not None:
            parts.append(f"cap {self.cap:g}")
        auto = f" (auto: {self.log_reason_})" if self.log == "auto" else ""
        if self.log_ != "none":
            pc = "" if self.pseudocount_ == 0 else f" + {self.pseudocount_:g}"
            parts.append(f"{self.log_}(x{pc}){auto}")
        else:
            parts.append(f"no log{auto}")
        parts.append(f"dropped {self.n_dropped_} constant gene(s)")
        if self.standardize:
            parts.append("scaled per gene" if self.sparse_ else "standardised per gene")
        return ", ".join(parts)


def _log_of(values, log, pseudocount):
    """The log transform of per-gene statistics such as minima (a monotone map keeps them)."""
    if log == "none":
        return values
    base = {"log2": 2.0, "log10": 10.0, "ln": math.e}[log]
    return np.log(np.asarray(values, dtype=np.float64) + pseudocount) / math.log(base)


def _chunk_stats(floor, cap, pseudocount, want_log, block, start):
    """What :meth:`Preprocessor._fit_lazy` needs from one row chunk (``start`` is unused)."""
    del start
    found = as_design(block).nonfinite()
    if found is not None:  # the fit refuses the matrix; the moments below need only stay warning-free
        block = as_design(block).zero_nonfinite()
    clipped = as_design(Preprocessor._clip(block, floor, cap))
    out = {"bad": 0 if found is None else found.n,
           "bad_kinds": (False, False) if found is None else found.kinds,
           "bad_col": -1 if found is None else found.min_col,
           "n_frac": clipped.n_fractional(), "raw": moments(clipped.X),
           "sparse_raw": clipped.sparse, "ln": None, "sparse_ln": False}
    if want_log:
        with np.errstate(divide="ignore", invalid="ignore"):
            ln = as_design(clipped.log(math.e, pseudocount))  # natural: the fit divides later
        out["ln"], out["sparse_ln"] = moments(ln.X), ln.sparse
    return out


def _combine_chunk_stats(a, b):
    cols = [c for c in (a["bad_col"], b["bad_col"]) if c >= 0]
    return {
        "bad": a["bad"] + b["bad"],
        "bad_kinds": tuple(u or v for u, v in zip(a["bad_kinds"], b["bad_kinds"], strict=True)),
        "bad_col": min(cols) if cols else -1,
        "n_frac": a["n_frac"] + b["n_frac"],
        "raw": combine_moments(a["raw"], b["raw"]),
        "sparse_raw": a["sparse_raw"],
        "ln": None if a["ln"] is None else combine_moments(a["ln"], b["ln"]),
        "sparse_ln": a["sparse_ln"],
    }
