"""The code of :mod:`ardselect.model`, which re-exports its public names and documents them."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from .._version import __version__
from ..engine._design import as_design
from ..engine._validation import check_finite_named, check_unique_names
from ..estimators._posterior import Posterior
from ..exceptions import DataError, FileFormatError, ModelError
from ..numerics._probit import probit_log_proba
from ._covariates import CovariateEncoder
from ._io import ExpressionData, Input, atomic_write, require_file
from ._model_schema import (
    _CORRUPTED,
    _brief,
    _is_number,
    _jsonable,
    _number,
    _numbers,
    _refuse,
)
from ._preprocessing import Preprocessor
from ._scale_check import (  # noqa: F401  (the scale check, public here as before)
    DataScaleWarning,
    check_scale,
    sample_scale_findings,
    scale_findings,
    sign_finding,
)
from ._spikeslab_model import (
    SPIKESLAB,
    SpikeSlabPredictive,
    check_spikeslab_data,
    spikeslab_model_data,
)

__all__ = ["MODEL_FORMAT", "MODEL_FORMAT_VERSION", "CovariateEncoder", "DataScaleWarning",
           "PortableModel", "Posterior", "check_model_data", "load_model"]

MODEL_FORMAT = "ardselect-model"
#: Version 2 added each problem's ``variance_scale``. A reader of version 1 would ignore it and
#: predict other probabilities, so the version moved; version-1 files read with scale 1.
MODEL_FORMAT_VERSION = 3
#: The version of a model that holds known covariates (``covariates``, and indices below -1 in
#: its problems): a reader of version 3 could not predict with it. Models without covariates
#: keep :data:`MODEL_FORMAT_VERSION`.
COVARIATES_FORMAT_VERSION = 4
#: The version of a spike-and-slab model (``"model": "spike-slab"``: a mixture over hyperprior
#: nodes, no ``Posterior`` per problem): a reader of version 4 could not predict with it. ARD
#: models keep the versions above.
SPIKESLAB_FORMAT_VERSION = 5
_READABLE_VERSIONS = (1, 2, 3, 4, 5)
#: The kinds of model a file may hold (its ``model`` field; absent: ``"ard"``).
MODEL_KINDS = ("ard", SPIKESLAB)


def _unit_interval(values, what: str, fields: Sequence[str]) -> np.ndarray:
    """``values`` as floats in ``(0, 1]``, or a :class:`ModelError` naming ``what`` and the field."""
    for value, field in zip(values, fields, strict=True):
        if not (_is_number(value) and 0 < value <= 1):
            msg = (f"model {what} must be numbers in (0, 1]; {field} is {_brief(value)}; "
                   f"{_CORRUPTED}")
            raise ModelError(msg)
    return np.asarray(values, dtype=np.float64)


# ---------------------------------------------------------------------------------------------
# The schema of a model file: every field a prediction reads is checked when the model is built
# ---------------------------------------------------------------------------------------------

_LOGS = ("none", "log2", "log10", "ln")


def _optional(data: Mapping, key: str, kind: type, what: str):
    """``data[key]``: absent, null, or of type ``kind`` (never ``true`` / ``false``)."""
    value = data.get(key)
    if value is not None and (isinstance(value, bool) or not isinstance(value, kind)):
        _refuse(key, what, value)
    return value


def _check_preprocessing(pre, n_features: int) -> None:
    if not isinstance(pre, Mapping):
        _refuse("preprocessing", "an object", pre)
    for key in ("floor", "cap"):
        if pre.get(key) is not None:
            _number(pre[key], f"preprocessing.{key}")
    if pre.get("floor") is not None and pre.get("cap") is not None and pre["floor"] >= pre["cap"]:
        _refuse("preprocessing.floor", "below preprocessing.cap", pre["floor"])
    if pre.get("log") not in _LOGS:
        _refuse("preprocessing.log", f"one of {', '.join(_LOGS)}", pre.get("log"))
    if "log_requested" in pre and pre["log_requested"] not in ("auto", *_LOGS):
        _refuse("preprocessing.log_requested", f"one of auto, {', '.join(_LOGS)}",
                pre["log_requested"])
    _number(pre.get("pseudocount"), "preprocessing.pseudocount", low=0)
    if "standardize" in pre and not isinstance(pre["standardize"], bool):
        _refuse("preprocessing.standardize", "true or false", pre["standardize"])
    _numbers(pre.get("center"), "preprocessing.center", n_features, "finite numbers (one per gene)")
    scale = _numbers(pre.get("scale"), "preprocessing.scale", n_features,
                     "positive numbers (one per gene)")
    if np.any(scale <= 0):
        k = int(np.flatnonzero(scale <= 0)[0])
        _refuse(f"preprocessing.scale[{k}]", "a positive number", pre["scale"][k])
    if "mean" in pre:
        _numbers(pre["mean"], "preprocessing.mean", n_features, "finite numbers (one per gene)")


def _check_problem(k: int, prob, n_features: int, positive, n_covariates: int = 0) -> None:
    """Problem ``k``'s fields: an index into the genes, a mean and a covariance that match it.

    Index ``-1`` is the intercept and ``-2 - j`` encoded covariate ``j``.
    """
    field = f"problems[{k}]"
    if not isinstance(prob, Mapping):
        _refuse(field, "an object", prob)
    index = prob.get("index")
    if not isinstance(index, list) or not all(
            isinstance(i, int) and not isinstance(i, bool) for i in index):
        msg = (f"model problem {k} is malformed: {field}.index must be a list of integers, got "
               f"{_brief(index)}; {_CORRUPTED}")
        raise ModelError(msg)
    if any(i < -1 - n_covariates or i >= n_features for i in index):
        msg = (f"model problem {k} indexes genes outside its {n_features} features "
               f"({field}.index); {_CORRUPTED}")
        raise ModelError(msg)
    if len(set(index)) != len(index):
        _refuse(f"{field}.index", "a list of distinct integers", index)
    d = len(index)
    mean, cov = prob.get("mean"), prob.get("cov")
    if not isinstance(mean, list) or len(mean) != d:
        msg = (f"model problem {k} is malformed: {d} indices but {field}.mean holds "
               f"{len(mean) if isinstance(mean, list) else _brief(mean)}; {_CORRUPTED}")
        raise ModelError(msg)
    _numbers(mean, f"{field}.mean", d)
    if not isinstance(cov, list) or len(cov) != d or not all(
            isinstance(row, list) and len(row) == d for row in cov):
        msg = (f"model problem {k} is malformed: {d} indices but {field}.cov is not a {d} x {d} "
               f"matrix; {_CORRUPTED}")
        raise ModelError(msg)
    for r, row in enumerate(cov):
        _numbers(row, f"{field}.cov[{r}]", d)
    if "positive" in prob and prob["positive"] != positive:
        _refuse(f"{field}.positive", f"the class {_brief(positive)}", prob["positive"])
    if "offset" in prob:
        _number(prob["offset"], f"{field}.offset")


def check_model_data(data: Mapping) -> None:
    """Check a model's fields against the schema of the model file; one :class:`ModelError` if not.

    Every field a prediction reads is checked for its type, size and range (finite numbers,
    positive scales, a known log, one problem per class, covariances as square as their index),
    so a corrupted or edited file is refused naming its first bad field instead of predicting
    garbage; a spike-and-slab model's fields likewise (:func:`check_spikeslab_data`). Unknown
    fields are ignored. A ``format_version`` newer than this ardselect reads is
    refused, not read.
    """
    if data.get("format") != MODEL_FORMAT:
        msg = "not an ardselect model (missing or wrong 'format' field)"
        raise ModelError(msg)
    version = data.get("format_version")
    if version not in _READABLE_VERSIONS or isinstance(version, bool):
        newer = _is_number(version) and version > max(_READABLE_VERSIONS)
        msg = (
            f"model format version {version!r} is not supported by ardselect {__version__} "
            f"(which reads versions {', '.join(map(str, _READABLE_VERSIONS))})"
            + ("; it was written by a newer ardselect: upgrade ardselect to read it" if newer
               else f"; {_CORRUPTED}")
        )
        raise ModelError(msg)
    kind = data.get("model", "ard")
    if kind not in MODEL_KINDS:
        _refuse("model", f"one of {', '.join(MODEL_KINDS)}", kind)
    if kind == SPIKESLAB and version < SPIKESLAB_FORMAT_VERSION:
        _refuse("format_version", f"{SPIKESLAB_FORMAT_VERSION} for a spike-and-slab model",
                version)
    features = data.get("features")
    if not isinstance(features, list) or not all(isinstance(f, str) and f for f in features):
        _refuse("features", "a list of gene names", features)
    if len(set(features)) != len(features):
        dup = next(f for f in features if features.count(f) > 1)
        _refuse("features", f"a list of distinct gene names (twice: {dup!r})", shown=False)
    classes = data.get("classes")
    if not isinstance(classes, list) or len(classes) < 2 or not all(
            isinstance(c, (str, bool)) or _is_number(c) for c in classes):
        _refuse("classes", "a list of at least two class names", classes)
    if len({str(c) for c in classes}) != len(classes):
        _refuse("classes", "a list of distinct class names", classes)
    problems = data.get("problems")
    n_problems = 1 if len(classes) == 2 else len(classes)
    if not isinstance(problems, list) or len(problems) != n_problems:
        what = f"a list of {n_problems} problem(s) (one per class beyond the first of two)"
        got = f"{len(problems)} problem(s)" if isinstance(problems, list) else _brief(problems)
        msg = f"model field problems must be {what}, got {got}; {_CORRUPTED}"
        raise ModelError(msg)
    positives = [classes[1]] if len(classes) == 2 else classes
    n_covariates = 0
    if kind == SPIKESLAB:
        check_spikeslab_data(data, len(features), positives)
    elif data.get("covariates") is not None:
        if version < COVARIATES_FORMAT_VERSION:
            _refuse("format_version", f"{COVARIATES_FORMAT_VERSION} for a model with covariates",
                    version)
        n_covariates = len(CovariateEncoder.from_dict(data["covariates"]).column_names_)
    for k, (prob, positive) in enumerate(zip(problems, positives, strict=True)):
        if kind != SPIKESLAB:
            _check_problem(k, prob, len(features), positive, n_covariates)
    _check_preprocessing(data.get("preprocessing"), len(features))
    space = data.get("input")
    if space is not None:
        if not isinstance(space, Mapping):
            _refuse("input", "an object", space)
        layer = space.get("layer")
        if layer is not None and not (isinstance(layer, str) and layer):
            _refuse("input.layer", "a layer name or null", layer)
        if not isinstance(space.get("use_raw", False), bool):
            _refuse("input.use_raw", "true or false", space.get("use_raw"))
    _optional(data, "label_key", str, "a column name or null")
    trained = _optional(data, "n_features_trained", int, "an integer")
    if trained is not None and trained < len(features):
        _refuse("n_features_trained", f"at least the {len(features)} genes of the model", trained)


def _versions() -> dict:
    import platform

    import scipy
    import sklearn

    return {
        "ardselect": __version__,
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "scikit-learn": sklearn.__version__,
        "python": platform.python_version(),
    }


class PortableModel:
    """A fitted ARD probit model as plain data: applies to new data without pickles.

    Built by :func:`ardselect.rank_genes` (stored as JSON in ``adata.uns[key]["model_json"]``) and
    by ``ardselect fit`` (``model.json``); read back with :func:`load_model`.

    For each binary problem (one for two classes; one per class, one-vs-rest, otherwise) the model
    keeps the Gaussian posterior ``N(mean, cov)`` of the weights of the genes in the model (and the
    intercept, index ``-1``). The probability of the problem's positive class for a sample ``x``
    (after replaying the stored preprocessing) is ``Phi(h / sqrt(1 + v))`` with ``h = mean . x_A``
    and ``v = x_A' cov x_A``: the probit predictive probability with the weight uncertainty
    integrated out, calibrated by the problem's ``offset``, ``temperature`` and
    ``variance_scale`` (``Phi(a + T h / sqrt(1 + s v))``; fitted by ``criterion="cv"``, else 0, 1
    and 1). Multi-class
    probabilities combine the one-vs-rest answers as ARDClassifier does, with its
    ``combine_temperature``. A model fitted with known covariates (:attr:`covariates`) records
    their encoding and adds their weights to ``h`` and ``v``; it reads them from the new
    samples by name.

    A spike-and-slab model (:attr:`kind` ``"spike-slab"``, from
    :class:`ardselect.SpikeSlabClassifier`) keeps instead, per binary problem, the hyperprior's
    nodes with their posterior weights and each node's Gaussian posterior over every gene, and
    predicts ``sum_g w_g Phi(m_g / sqrt(1 + v_g))`` as the estimator does
    (:mod:`ardselect.dataio._spikeslab_model`); its covariance over every gene is built from the training
    rows, so the file holds the standardised training values when genes outnumber samples.
    ``kind`` says which model a file holds: ``"ard"`` or ``"spike-slab"``.
    """

    def __init__(self, data: Mapping):
        if not isinstance(data, Mapping):
            msg = f"not an ardselect model (a mapping of fields expected, got {type(data).__name__})"
            raise ModelError(msg)
        self.data = dict(data)
        check_model_data(self.data)
        self.features = list(self.data["features"])
        self.classes = list(self.data["classes"])
        self.problems = list(self.data["problems"])
        self.preprocessing = dict(self.data["preprocessing"])
        self.kind = str(self.data.get("model", "ard"))
        if self.kind == SPIKESLAB:
            self._spikeslab = SpikeSlabPredictive(self.data)
            self._posteriors, self._covariates = [], None
            return
        self._spikeslab = None
        self._posteriors = [self._posterior(k, prob) for k, prob in enumerate(self.problems)]
        record = self.data.get("covariates")
        self._covariates = None if record is None else CovariateEncoder.from_dict(record)
        n = len(self.problems)
        temps = self._per_problem("temperature")
        temps.append(self.data.get("combine_temperature", 1.0))
        temps = _unit_interval(temps, "temperatures",
                               [*(f"problems[{k}].temperature" for k in range(n)),
                                "combine_temperature"])
        self._temperature = temps[:-1]
        self._combine_temperature = float(temps[-1])
        self._variance_scale = _unit_interval(self._per_problem("variance_scale"),
                                              "variance scales",
                                              [f"problems[{k}].variance_scale" for k in range(n)])
        # Checked by check_model_data: a finite number per problem (0 where a file predates it).
        self._offset = np.asarray(self._per_problem("offset", 0.0), dtype=np.float64)

    def _per_problem(self, key, default=1.0):
        """Each problem's calibration value ``key`` (``default`` where a file predates it)."""
        return [prob.get(key, default) if isinstance(prob, Mapping) else default
                for prob in self.problems]

    def _posterior(self, k: int, prob) -> Posterior:
        """Problem ``k`` as a :class:`Posterior`, refusing covariances no fit can produce.

        Its fields' types and shapes were checked by :func:`check_model_data`.
        """
        index = np.asarray(prob["index"], dtype=int)
        mean = np.asarray(prob["mean"], dtype=np.float64)
        d = index.size
        cov = np.asarray(prob["cov"], dtype=np.float64).reshape(d, d)
        if d:
            # A fitted covariance is symmetric positive semi-definite up to rounding; anything
            # else would give negative predictive variances, so it is refused, not clipped.
            eig = np.linalg.eigvalsh(0.5 * (cov + cov.T))
            tol = 1e-9 * max(1.0, float(np.abs(eig).max()))
            if not (np.allclose(cov, cov.T, rtol=1e-9, atol=tol) and eig[0] >= -tol):
                msg = (f"model problem {k} has a covariance (problems[{k}].cov) that is not "
                       f"symmetric positive semi-definite; {_CORRUPTED}")
                raise ModelError(msg)
        return Posterior(index, mean, cov, prob.get("positive"))

    @classmethod
    def from_estimator(
        cls,
        estimator,
        preprocessor: Preprocessor,
        feature_names: Sequence[str],
        classes: Sequence,
        *,
        extra: Mapping | None = None,
    ) -> PortableModel:
        """Build from a fitted ``ARDClassifier`` and the :class:`Preprocessor` that fed it.

        ``feature_names`` name the estimator's input columns (the preprocessor's kept genes) and
        ``classes`` the original class labels, in the order of ``estimator.classes_``. A fitted
        :class:`~ardselect.SpikeSlabClassifier` gives a spike-and-slab model (:attr:`kind`).
        """
        if hasattr(estimator, "_mixtures"):  # a SpikeSlabClassifier
            return cls._from_spikeslab(estimator, preprocessor, feature_names, classes,
                                       extra=extra)
        posteriors = list(estimator.posteriors_)
        temperature = np.asarray(getattr(estimator, "temperature_", np.ones(len(posteriors))))
        scale = np.asarray(getattr(estimator, "variance_scale_", np.ones(len(posteriors))))
        offset = np.asarray(getattr(estimator, "calibration_offset_", np.zeros(len(posteriors))))
        classes = list(classes)
        positives = [classes[1]] if len(classes) == 2 else classes
        if len(posteriors) != len(positives):
            msg = f"{len(posteriors)} posteriors for {len(classes)} classes"
            raise ModelError(msg)
        used = sorted({int(i) for post in posteriors for i in np.asarray(post.index) if i >= 0})
        position = {j: k for k, j in enumerate(used)}
        problems = []
        for positive, post, temp, s, a in zip(positives, posteriors, temperature, scale, offset,
                                              strict=True):
            index = np.asarray(post.index, dtype=int)
            problems.append(
                {
                    "positive": _jsonable(positive),
                    "index": [position[int(i)] if i >= 0 else int(i) for i in index],
                    "mean": np.asarray(post.mean, dtype=np.float64).tolist(),
                    "cov": np.asarray(post.cov, dtype=np.float64).tolist(),
                    "temperature": float(temp),
                    "variance_scale": float(s),
                    "offset": float(a),
                }
            )
        data = {
            "format": MODEL_FORMAT,
            "format_version": MODEL_FORMAT_VERSION,
            "classes": _jsonable(classes),
            "features": [str(feature_names[j]) for j in used],
            "preprocessing": preprocessor.to_dict(used),
            "problems": problems,
            "combine_temperature": float(getattr(estimator, "combine_temperature_", 1.0)),
            "n_features_trained": int(preprocessor.n_features_in_),
            "versions": _versions(),
        }
        if extra:
            data.update(_jsonable(dict(extra)))
        if data.get("covariates") is not None:
            data["format_version"] = COVARIATES_FORMAT_VERSION
        return cls(data)

    @classmethod
    def _from_spikeslab(cls, estimator, preprocessor, feature_names, classes, *, extra=None):
        """A spike-and-slab model: every usable gene is in it (no weight is exactly zero)."""
        classes = list(classes)
        positives = [classes[1]] if len(classes) == 2 else classes
        used = estimator._usable
        fields = spikeslab_model_data(estimator)
        if len(fields["problems"]) != len(positives):
            msg = f"{len(fields['problems'])} problems for {len(classes)} classes"
            raise ModelError(msg)
        for prob, positive in zip(fields["problems"], positives, strict=True):
            prob["positive"] = _jsonable(positive)
        data = {
            "format": MODEL_FORMAT,
            "format_version": SPIKESLAB_FORMAT_VERSION,
            "model": SPIKESLAB,
            "classes": _jsonable(classes),
            "features": [str(feature_names[j]) for j in used],
            "preprocessing": preprocessor.to_dict(used),
            **fields,
            "n_features_trained": int(preprocessor.n_features_in_),
            "versions": _versions(),
        }
        if extra:
            data.update(_jsonable(dict(extra)))
        return cls(data)

    def to_json(self) -> str:
        """The model as JSON text (floats written with full round-trip precision).

        An ARD model is indented one space per level; a spike-and-slab model, whose posteriors
        span every gene, is written without line breaks.
        """
        indent = None if self.kind == SPIKESLAB else 1
        return json.dumps(_jsonable(self.data), indent=indent, sort_keys=True,
                          allow_nan=False) + "\n"

    def save(self, path) -> None:
        """Write the model as JSON, atomically."""
        with atomic_write(path) as fh:
            fh.write(self.to_json())

    @property
    def input(self) -> Input:
        """Which matrix of an AnnData the model's genes were read from (``X`` if not recorded)."""
        return Input.from_dict(self.data.get("input"))

    def _input_matrix(self, adata):
        """``(gene names, matrix)`` of ``adata`` in the model's input matrix, or a clear refusal.

        Read through :class:`~ardselect.io.ExpressionData`, under the rules every fit reads by.
        """
        space = self.input
        try:
            data = ExpressionData.from_anndata(adata, None, layer=space.layer,
                                               use_raw=space.use_raw)
        except DataError as exc:
            rule = getattr(exc, "rule", None)
            if rule == "no_raw":
                msg = ("the model was fitted on raw.X (use_raw) but the data have no raw; give "
                       "the same kind of values the model was fitted on")
            elif rule == "layer":
                msg = (f"the model was fitted on {space}, which the data lack "
                       f"(layers: {', '.join(adata.layers.keys()) or 'none'})")
            elif rule == "no_x":
                msg = "the data have no expression matrix X to apply the model to"
            else:
                raise
            raise ModelError(msg) from None
        return data.var_names, data.X

    def _columns(self, data, feature_names=None) -> np.ndarray:
        """The model's genes from ``data`` (AnnData, DataFrame, or array + names), as a dense array.

        A dask ``X`` (``ardselect.io.read_lazy``) is read for the model's genes only.
        """
        X = data
        if hasattr(data, "var_names") and hasattr(data, "X"):
            names, X = self._input_matrix(data)
        elif isinstance(data, pd.DataFrame):
            names = data.columns
            X = data.to_numpy()
        else:
            names = feature_names
            if names is None:
                msg = "give feature_names with an array (genes are matched by name)"
                raise ModelError(msg)
        names = pd.Index([str(n) for n in names])
        check_unique_names(names, "gene")
        pos = names.get_indexer(self.features)
        missing = [f for f, p in zip(self.features, pos, strict=True) if p < 0]
        if missing:
            shown = ", ".join(missing[:10]) + (", ..." if len(missing) > 10 else "")
            msg = (
                f"the data lack {len(missing)} of the model's {len(self.features)} genes: {shown}"
            )
            raise ModelError(msg)
        return as_design(X).columns(pos)  # of a lazily read store: one pass over its chunks

    @property
    def covariates(self) -> list[str]:
        """The names of the covariates the model holds (sample annotations), empty if none."""
        return [] if self._covariates is None else list(self._covariates.names)

    def _covariate_design(self, data, covariates, n: int) -> np.ndarray:
        """The encoded covariates of the samples, reversed (``Posterior`` index ``-2 - j``).

        Read from ``covariates`` (a DataFrame of the named columns, one row per sample), or from
        ``data.obs`` for AnnData; ``(n, 0)`` for a model without covariates.
        """
        if self._covariates is None:
            return np.zeros((n, 0))
        frame = covariates
        if frame is None and hasattr(data, "obs") and hasattr(data, "X"):
            frame = data.obs
        if frame is None:
            msg = (f"the model holds the covariates {', '.join(self.covariates)}; give them "
                   "with covariates= (a DataFrame with those columns, one row per sample) or "
                   "as obs columns of an AnnData")
            raise ModelError(msg)
        frame = pd.DataFrame(frame)
        if len(frame) != n:
            msg = f"covariates hold {len(frame)} rows for {n} samples; give one per sample"
            raise ModelError(msg)
        return self._covariates.transform(frame, error=ModelError)[:, ::-1]

    @property
    def posteriors(self) -> list[Posterior]:
        """One :class:`Posterior` per binary problem, indexed into the model's ``features``.

        An ARD model's only: a spike-and-slab model predicts with a mixture over its hyperprior's
        nodes, not one Gaussian posterior per problem.
        """
        if self.kind == SPIKESLAB:
            msg = ("a spike-and-slab model has no single posterior per problem (it predicts with "
                   "a mixture over its hyperprior's nodes); see model.data['problems']")
            raise ModelError(msg)
        return list(self._posteriors)

    def _log_proba_array(self, data, feature_names=None, covariates=None, *,
                         allow_scale_mismatch=False) -> np.ndarray:
        X = self._columns(data, feature_names)
        check_finite_named(X, _sample_names(data), self.features)
        C = self._covariate_design(data, covariates, X.shape[0])
        Z = Preprocessor.apply_dict(self.preprocessing, X)
        check_scale(X, Z * np.asarray(self.preprocessing["scale"], dtype=np.float64)
                    + np.asarray(self.preprocessing["center"], dtype=np.float64),
                    self.preprocessing, allow_mismatch=allow_scale_mismatch)
        if self._spikeslab is not None:
            log_proba = self._spikeslab.log_proba(Z)  # what SpikeSlabClassifier runs
            # (log_Phi stays finite in log space: only a NaN marks values it cannot take)
            self._refuse_rows(np.isnan(log_proba).any(axis=1), data)
            return log_proba
        # column -1 is the intercept, -2 - j the encoded covariate j
        design = np.hstack([Z, C, np.ones((Z.shape[0], 1))])
        moments = [post.latent(design) for post in self.posteriors]
        mean = np.column_stack([m for m, _ in moments])  # (n, k)
        var = np.column_stack([v for _, v in moments])  # (n, k)
        # what ARDClassifier.predict_log_proba runs
        log_proba = probit_log_proba(mean, var, self._temperature, self._combine_temperature,
                                     self._variance_scale, self._offset)
        bad = ~(np.isfinite(mean).all(axis=1) & np.isfinite(var).all(axis=1)
                & ~np.isnan(log_proba).any(axis=1))
        self._refuse_rows(bad, data)
        return log_proba

    @staticmethod
    def _refuse_rows(bad: np.ndarray, data) -> None:
        """A :class:`ModelError` naming the samples (``bad``) given no finite probability."""
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            msg = (f"the model gives no finite probability for {int(bad.sum())} sample(s), first "
                   f"{_sample_name(data, i)}: their values, after the model's preprocessing, are "
                   "too large for it; check that the data are the kind of values the model was "
                   "fitted on")
            raise ModelError(msg)

    def _labelled(self, values: np.ndarray, data):
        """A DataFrame (sample index, one column per class) for AnnData or DataFrame input."""
        if hasattr(data, "obs_names") and hasattr(data, "X"):
            index = pd.Index(data.obs_names, name=None)
        elif isinstance(data, pd.DataFrame):
            index = data.index
        else:
            return values
        columns = pd.Index([str(c) for c in self.classes], name="class")
        return pd.DataFrame(values, index=index, columns=columns)

    def predict_log_proba(self, data, feature_names=None, *, covariates=None,
                          allow_scale_mismatch: bool = False):
        """Log class probabilities; labelled like :meth:`predict_proba`."""
        return self._labelled(self._log_proba_array(data, feature_names, covariates,
                                                    allow_scale_mismatch=allow_scale_mismatch),
                              data)

    def predict_proba(self, data, feature_names=None, *, covariates=None,
                      allow_scale_mismatch: bool = False):
        """Class probabilities, one column per class in ``classes`` order.

        Parameters
        ----------
        data : anndata.AnnData, pandas.DataFrame or array-like of shape (n_samples, n_genes)
            AnnData is read from the model's input matrix (:attr:`input`); genes are matched by
            name (an array needs ``feature_names``).
        feature_names : sequence of str, optional
            Gene names of the columns of an array.
        covariates : pandas.DataFrame, optional
            For a model fitted with known covariates (:attr:`covariates`): the named columns,
            one row per sample, encoded as in the fit (recorded in the model). AnnData input
            reads them from ``obs`` by default. A missing column or a level the fit did not see
            is refused.
        allow_scale_mismatch : bool, default=False
            Predict data whose signs contradict the training data's (scaled values against
            unscaled ones), with a :class:`DataScaleWarning` instead of the error.

        Returns
        -------
        pandas.DataFrame or ndarray of shape (n_samples, n_classes)
            For AnnData or a DataFrame, a DataFrame indexed by the sample names (``obs_names`` or
            the DataFrame's index) with one column per class, named by the class; for an array, a
            bare array with columns in ``classes`` order, as scikit-learn estimators return.

        Raises
        ------
        DataScaleError
            The data are plainly another kind of values than the training data: most of the
            model's genes were centred in training (scaled data, such as scanpy's ``pp.scale``
            output) and the new values of them hold no negative value, or most held no negative
            value and over a quarter of the new values are negative.

        Warns
        -----
        DataScaleWarning
            The data look like another kind of values than the training data (far from the
            training means or range, or fractions where the training values were whole numbers).
        """
        log_proba = self._log_proba_array(data, feature_names, covariates,
                                          allow_scale_mismatch=allow_scale_mismatch)
        return self._labelled(np.exp(log_proba), data)

    def predict(self, data, feature_names=None, *, covariates=None,
                allow_scale_mismatch: bool = False) -> np.ndarray:
        """Most probable class per sample, as an array of class labels."""
        proba = np.exp(self._log_proba_array(data, feature_names, covariates,
                                             allow_scale_mismatch=allow_scale_mismatch))
        return np.asarray(self.classes, dtype=object)[np.argmax(proba, axis=1)]


class _RowNumbers:
    """``"row i"`` for row ``i``: the sample names of a bare array."""

    def __getitem__(self, i):
        return f"row {i}"


def _sample_names(data):
    """The sample names of ``data``: ``obs_names`` (AnnData), the index (DataFrame), row numbers."""
    if hasattr(data, "obs_names") and hasattr(data, "X"):
        return data.obs_names
    if isinstance(data, pd.DataFrame):
        return data.index
    return _RowNumbers()


def _sample_name(data, i: int) -> str:
    """Sample ``i`` of ``data`` by name, for a message."""
    return f"sample {str(_sample_names(data)[i])!r}"


def load_model(path) -> PortableModel:
    """Read a ``model.json`` written by ``ardselect fit`` or :meth:`PortableModel.save`."""
    path = require_file(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except RecursionError:
        msg = f"{path.name} is not a JSON model file: its values are nested too deeply"
        raise FileFormatError(msg) from None
    except (UnicodeDecodeError, ValueError) as exc:  # JSONDecodeError, an integer too long
        msg = f"{path.name} is not a JSON model file: {exc}"
        raise FileFormatError(msg) from None
    if not isinstance(data, dict):
        msg = f"{path.name} is not an ardselect model (JSON object expected)"
        raise FileFormatError(msg)
    try:
        return PortableModel(data)
    except ModelError as exc:
        msg = f"{path.name}: {exc}"
        raise ModelError(msg) from None
