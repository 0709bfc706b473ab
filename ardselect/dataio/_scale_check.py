"""The scale check: new data, or some samples, look like another kind of values.

A model replays its own preprocessing, so new data must be the same kind of values as its
training data (counts, intensities, log values, scaled values). The portable model keeps, per gene,
the training mean, sd, range and whether the values were whole numbers; :func:`check_scale`
compares new data with them. ``evaluate`` splits one data set, so there the samples are compared
with each other (:func:`sample_scale_findings`).
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp

from ..engine._design import as_design
from ..exceptions import DataScaleError, DataScaleWarning

__all__ = ["DataScaleWarning", "check_scale", "sample_scale_findings", "scale_findings",
           "sign_finding"]

#: The scale check of new data (:class:`DataScaleWarning`), three rules on the model's genes after
#: the model's floor, cap and log, with the training mean, sd, range and whole-number flags kept in
#: the model (``preprocessing``):
#:
#: - whole numbers: the training values of a gene were all whole numbers (counts, integer
#:   intensities) and more than :data:`SCALE_FRACTION_WARN` of the new values are not (log values
#:   or normalised values given to a model fitted on counts);
#: - shift: the median over the genes of the distance of their new mean from the training mean, in
#:   training sd, exceeds :data:`SCALE_SHIFT_WARN` (a batch effect or another mix of classes moves a
#:   gene by one or two sd; one rare class alone on one marker gene by up to about 3);
#: - squeezed: a shift above :data:`SCALE_SQUEEZE_SHIFT` sd with the new values' spread (at least
#:   three samples) below :data:`SCALE_SQUEEZE_WARN` of the training spread (values logged twice);
#: - range: more than :data:`SCALE_FRACTION_WARN` of the new values lie over one training sd
#:   beyond the gene's training range (data logged twice, or not logged, or z-scored).
#:
#: Their false-alarm rate on the held-out parts of the shared microarray sets is in the user guide
#: (docs/guide/inputs.md).
SCALE_SHIFT_WARN = 4.0
SCALE_FRACTION_WARN = 0.5
SCALE_SQUEEZE_SHIFT = 2.0
SCALE_SQUEEZE_WARN = 1 / 3


def scale_findings(X, Z, preprocessing) -> list[str]:
    """What marks new data as another kind of values than the training data (empty: nothing).

    ``X`` holds the new values of the model's genes as given and ``Z`` the same after the model's
    floor, cap and log, both of shape (n_samples, n_genes); ``preprocessing`` is the model's
    record (:meth:`ardselect.preprocessing.Preprocessor.to_dict`).
    """
    X, Z = np.asarray(X, dtype=np.float64), np.asarray(Z, dtype=np.float64)
    if Z.shape[0] == 0 or Z.shape[1] == 0:
        return []
    found = []
    if "whole" in preprocessing:
        whole = np.asarray(preprocessing["whole"], dtype=bool)
        values = X[:, whole]
        values = values[np.isfinite(values)]
        if values.size:
            frac = float(np.mean(values != np.round(values)))
            if frac > SCALE_FRACTION_WARN:
                found.append(f"{100 * frac:.0f}% of the values of its {int(whole.sum())} "
                             "gene(s) fitted on whole numbers (counts or intensities) are not "
                             "whole numbers")
    center = np.asarray(preprocessing["center"], dtype=np.float64)
    scale = np.asarray(preprocessing["scale"], dtype=np.float64)
    if "mean" in preprocessing:
        mean = np.asarray(preprocessing["mean"], dtype=np.float64)
        sd = np.asarray(preprocessing.get("sd", scale), dtype=np.float64)
        checked = sd > 0
    else:  # a model written before the training means were kept: its centred genes only
        mean, sd, checked = center, scale, center != 0.0
    if checked.any():
        z = (Z[:, checked] - mean[checked]) / sd[checked]  # (n, checked genes)
        shift = float(np.median(np.abs(z.mean(axis=0))))
        # the spread of the new values in training sd (data logged twice are squeezed)
        spread = float(np.exp(np.median(np.log(z.std(axis=0) + 1e-300)))) if z.shape[0] >= 3 else 1.0
        if shift > SCALE_SHIFT_WARN or (shift > SCALE_SQUEEZE_SHIFT
                                        and spread < SCALE_SQUEEZE_WARN):
            squeezed = (f" with a median {spread:.2g} of their training spread"
                        if spread < SCALE_SQUEEZE_WARN else "")
            found.append(f"its {int(checked.sum())} gene(s) lie a median {shift:.3g} training "
                         f"standard deviations from their training means{squeezed} (about 0 to "
                         "2 for data like the training data)")
    if "min" in preprocessing and "max" in preprocessing and checked.any():
        lo = np.asarray(preprocessing["min"], dtype=np.float64)[checked]
        hi = np.asarray(preprocessing["max"], dtype=np.float64)[checked]
        width = sd[checked]
        inside = Z[:, checked]
        outside = float(np.mean((inside < lo - width) | (inside > hi + width)))
        if outside > SCALE_FRACTION_WARN:
            found.append(f"{100 * outside:.0f}% of its values lie over one training standard "
                         "deviation outside the training range")
    return found


#: A sample's median over the genes (after the log) is this many sample interquartile ranges
#: from the median sample, or its interquartile range is this many times larger or smaller than the
#: median sample's: it is flagged as another kind of values than the rest of the data.
SAMPLE_SHIFT_WARN = 1.0
SAMPLE_SPREAD_WARN = 3.0
#: Fewer genes than this say too little about a sample's kind of values: no sample check.
SAMPLE_MIN_GENES = 20


def sample_scale_findings(X, Z, sample_names=None) -> str:
    """Samples that look like another kind of values than the rest of the data ("" if none).

    ``X`` is the data as given and ``Z`` the same after floor, cap and log, of shape
    (n_samples, n_genes) (``Z`` may be None for sparse data: the whole-number rule only). A sample
    is flagged when most samples are whole numbers (counts, integer intensities) and its non-zero
    values are mostly fractions, or when its median over the genes lies more than :data:`SAMPLE_SHIFT_WARN` typical
    interquartile ranges from the median sample's, or its interquartile range differs from the
    typical one by more than a factor :data:`SAMPLE_SPREAD_WARN` (a batch logged twice, not
    logged, logged in another base, or z-scored), or its signs contradict the typical sample's
    (:func:`_sample_sign_flags`: unscaled samples beside scaled ones, or the reverse). Returns one
    sentence naming them.
    """
    n = X.shape[0]
    if n < 4 or X.shape[1] < SAMPLE_MIN_GENES:
        return ""
    design = as_design(X)
    # of the non-zero values: counts are mostly 0
    fractions = design.n_fractional(axis=1) / np.maximum(design.n_nonzero(axis=1), 1)
    whole = fractions == 0
    flagged = np.zeros(n, dtype=bool)
    reasons = []
    if whole.mean() >= 0.5:
        fractional = fractions > 0.5
        flagged |= fractional
        if fractional.any():
            reasons.append(f"{int(fractional.sum())} hold mostly fractions where most samples "
                           "hold whole numbers")
    if Z is not None and not as_design(Z).sparse:
        Z = np.asarray(Z, dtype=np.float64)
        q25, med, q75 = np.nanpercentile(Z, [25, 50, 75], axis=1)
        spread = q75 - q25
        typical_med, typical_spread = float(np.median(med)), float(np.median(spread))
        if typical_spread > 0:
            shifted = np.abs(med - typical_med) > SAMPLE_SHIFT_WARN * typical_spread
            ratio = spread / typical_spread
            spread_off = (ratio > SAMPLE_SPREAD_WARN) | (ratio < 1 / SAMPLE_SPREAD_WARN)
            if shifted.any():
                reasons.append(f"{int(shifted.sum())} have a median over the genes over "
                               f"{SAMPLE_SHIFT_WARN:g} interquartile range from the others'")
            if spread_off.any():
                reasons.append(f"{int(spread_off.sum())} have an interquartile range over "
                               f"{SAMPLE_SPREAD_WARN:g} times wider or narrower than the others'")
            flagged |= shifted | spread_off
    sign_off, reason = _sample_sign_flags(X if Z is None else Z)
    if reason:
        reasons.append(reason)
        flagged |= sign_off
    if not flagged.any():
        return ""
    names = (np.arange(n).astype(str) if sample_names is None
             else np.asarray(sample_names).astype(str))
    shown = ", ".join(names[flagged][:5]) + (", ..." if flagged.sum() > 5 else "")
    return (f"{int(flagged.sum())} of the {n} samples ({shown}) look like another kind of values "
            f"than the rest: {'; '.join(reasons)}; check that every sample holds the same kind of "
            "values (raw counts, intensities, normalised, log)")


def _negative_shares(M) -> np.ndarray:
    """Each sample's share of negative values, of shape (n_samples,)."""
    design = as_design(M)
    if design.sparse:
        csr = sp.csr_matrix(M)
        rows = np.repeat(np.arange(csr.shape[0]), np.diff(csr.indptr))  # (nnz,)
        return np.bincount(rows[csr.data < 0], minlength=csr.shape[0]) / csr.shape[1]
    return np.mean(np.asarray(M, dtype=np.float64) < 0, axis=1)


def _sample_sign_flags(M) -> tuple[np.ndarray, str]:
    """Samples whose signs contradict the typical sample's, and the reason ("" if none).

    Where the typical sample's values are over :data:`SIGN_NEGATIVE_SHARE` negative (scaled or
    centred data), a sample with under a tenth of that share holds unscaled values; where the
    typical sample holds (almost) no negative value, a sample over that share negative holds
    scaled or centred ones.
    """
    share = _negative_shares(M)
    typical = float(np.median(share))
    if typical > SIGN_NEGATIVE_SHARE:
        flags = share < typical / 10
        reason = (f"{int(flags.sum())} hold almost no negative value where the typical sample's "
                  f"values are {100 * typical:.0f}% negative (unscaled samples beside scaled "
                  "ones)")
    elif typical < 0.01:
        flags = share > SIGN_NEGATIVE_SHARE
        reason = (f"{int(flags.sum())} hold over {100 * SIGN_NEGATIVE_SHARE:.0f}% negative "
                  "values where most samples hold none (scaled samples beside unscaled ones)")
    else:
        flags = np.zeros(share.shape, dtype=bool)
    return flags, (reason if flags.any() else "")


#: The sign rule (:func:`sign_finding`), on the model's genes after its floor, cap and log. A gene
#: was centred in training when its values there had a negative minimum and a mean within
#: :data:`SIGN_CENTRED_MEAN` training sd of 0 (scaled or centred values: scanpy's ``pp.scale``,
#: z-scores, log ratios); non-negative when its training minimum was 0 or more (counts,
#: intensities, log-normalised values). Most of the model's genes of one kind, new values of the
#: other: over :data:`SIGN_MIN_SAMPLES` samples and :data:`SIGN_MIN_VALUES` values, none negative
#: on the centred genes, or over :data:`SIGN_NEGATIVE_SHARE` of them negative on the
#: non-negative genes.
SIGN_CENTRED_MEAN = 0.5
SIGN_MIN_SAMPLES = 3
SIGN_MIN_VALUES = 20
SIGN_NEGATIVE_SHARE = 0.25


def sign_finding(Z, preprocessing) -> str:
    """Scaled against unscaled values: the signs of new data contradict the training data's.

    ``Z`` holds the new values of the model's genes after the model's floor, cap and log, of
    shape (n_samples, n_genes); ``preprocessing`` is the model's record, with the training
    ``mean``, ``sd`` and ``min`` of each gene (a model without them is not checked). Returns
    the finding, or "" when there is none (see :data:`SIGN_CENTRED_MEAN`).
    """
    if not all(k in preprocessing for k in ("mean", "sd", "min")):
        return ""
    Z = np.asarray(Z, dtype=np.float64)
    mean, sd, lo = (np.asarray(preprocessing[k], dtype=np.float64) for k in ("mean", "sd", "min"))
    checked = sd > 0
    n_checked = int(checked.sum())
    if Z.shape[0] < SIGN_MIN_SAMPLES or n_checked == 0:
        return ""
    centred = checked & (lo < 0) & (np.abs(mean) <= SIGN_CENTRED_MEAN * sd)
    plain = checked & (lo >= 0)
    # negative beyond rounding: Z is undone from the model's standardisation (0 comes back as
    # about -1e-17)
    tol = 1e-9 * np.where(checked, sd, 1.0)
    negative = Z + tol < 0  # (n, genes)
    if 2 * centred.sum() > n_checked and Z[:, centred].size >= SIGN_MIN_VALUES \
            and not negative[:, centred].any():
        return (f"{int(centred.sum())} of its {n_checked} genes held centred values in training "
                "(negative values, means near 0: scaled data such as scanpy's pp.scale output) "
                "but hold no negative value here (unscaled data such as log-normalised values)")
    if 2 * plain.sum() > n_checked and Z[:, plain].size >= SIGN_MIN_VALUES:
        share = float(np.mean(negative[:, plain]))
        if share > SIGN_NEGATIVE_SHARE:
            return (f"{int(plain.sum())} of its {n_checked} genes held no negative value in "
                    "training (unscaled data such as counts or log-normalised values) but "
                    f"{100 * share:.0f}% of their values here are negative (scaled or centred "
                    "data)")
    return ""


def check_scale(X, Z, preprocessing, *, allow_mismatch: bool = False) -> None:
    """Refuse or warn when new data look like another kind of values than the training data.

    ``X`` holds the new values of the model's genes as given and ``Z`` the same after the model's
    floor, cap and log. Scaled values against unscaled ones (:func:`sign_finding`) raise
    :class:`~ardselect.exceptions.DataScaleError`, or with ``allow_mismatch`` warn; the other findings
    (:func:`scale_findings`) warn (:class:`DataScaleWarning`).
    """
    sign = sign_finding(Z, preprocessing)
    found = ([sign] if sign else []) + scale_findings(X, Z, preprocessing)
    if not found:
        return
    log = preprocessing.get("log", "none")
    rule = "no log" if log in (None, "none") else f"{log}(x + {preprocessing.get('pseudocount')})"
    if sign and not allow_mismatch:
        msg = (f"the data are another kind of values than the model was fitted on: after the "
               f"model's preprocessing ({rule}) {sign}; give the values the model was fitted on "
               "(the same X, layer or raw), or pass allow_scale_mismatch=True "
               "(predict --allow-scale-mismatch) to predict anyway")
        raise DataScaleError(msg)
    msg = (f"the data look like another kind of values than the model was fitted on: after the "
           f"model's preprocessing ({rule}) {'; '.join(found)}; check that they are the same kind "
           "of values (raw counts, intensities, normalised, log) as the training data")
    warnings.warn(msg, DataScaleWarning, stacklevel=4)
