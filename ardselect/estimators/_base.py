"""The bases of the family: :class:`_FamilyEstimator` and :class:`_ARDPathEstimator`.

:class:`_FamilyEstimator` is what every estimator of the family (user guide, "The sparse Bayesian
family") holds in front of its model, once: the checks of ``X`` (``_validate_x``) and of class
labels (``_class_labels``; with :class:`_BinaryClassifierMixin`, the one refusal of more than two
classes), constant features kept out (``_constant_features``), the weight attributes
(``_set_weight_attributes``) and scikit-learn's tags. :class:`~ardselect.VariationalRVMRegressor`,
:class:`~ardselect.VariationalRVMClassifier`, :class:`~ardselect.GibbsRVMClassifier` and
:class:`~ardselect.SpikeSlabClassifier` derive from it directly.

:class:`_ARDPathEstimator` derives from it too: :class:`~ardselect.ARDClassifier`,
:class:`~ardselect.RVMClassifier` and :class:`~ardselect.RVMRegressor` differ only in their
likelihood (an adapter that the engine, :class:`ardselect.engine._sequential.SequentialPath`, drives).
Around that engine the steps are the same, and live here once:

1. design: the basis (input features or a kernel centred on each training point), the intercept
   column (always last: index ``-1`` in :class:`ardselect.model.Posterior`), constant features
   left out, columns scaled to unit root mean square (``_prepare_design``);
2. path: the engine run, with one ``ConvergenceWarning`` when it stops at ``max_steps``
   (``_run_path``);
3. weights: posterior summaries of the chosen model back in the units of the input (and of ``y``
   for regression), the intercept apart from ``coef_`` (``_set_weights``);
4. ``path_``: one row per step and problem (``_path_frame``);
5. prediction: the latent moments of new samples under the chosen models (``_latent``).

The fitted-attribute contract of the whole family is checked by ``tests/test_contract.py``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np
import pandas as pd
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin, is_regressor
from sklearn.exceptions import ConvergenceWarning
from sklearn.feature_selection import SelectorMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from ..engine._basis import KERNELS, LinearBasis, design_matrix, unit_rms
from ..engine._design import by_rows, dense
from ..engine._lazy import is_dask
from ..engine._sequential import SequentialPath
from ..engine._validation import (
    check_binary_labels,
    check_design,
    check_real,
    constant_columns,
    require_y,
)
from ..exceptions import ConstantFeatureWarning, DataError, LabelError
from ._constraints import Interval, Options

__all__ = ["INTERCEPT", "ConstantFeatureWarning", "basis_constraints"]

#: Name of the intercept column in ``path_["feature"]``.
INTERCEPT = "(intercept)"


#: Root mean squares of a basis column the path accepts. A weight's precision in input units is
#: its precision at unit scale times the square of the column's scale (and its variance divided by
#: it): outside this range one of them overflows or vanishes in float64.
SCALE_RANGE = (1e-150, 1e150)


def basis_constraints(kernels=KERNELS) -> dict:
    """Parameter constraints of the basis arguments every estimator of the family takes."""
    return {
        "kernel": [Options(set(kernels)), callable],
        "gamma": [Interval(Real, 0, None, closed="neither"), Options({"scale", "auto"})],
        "degree": [Interval(Integral, 1, None, closed="left")],
        "coef0": [Interval(Real, None, None, closed="neither")],
        "fit_intercept": ["boolean"],
    }


def warn_path_stopped(estimator_name, what, max_steps, *, stacklevel):
    """The one warning of a path (``what``: "path", "shared path", ...) cut at ``max_steps``.

    ``stacklevel`` counts from the caller, as :func:`warnings.warn`'s does.
    """
    warnings.warn(
        f"The {estimator_name} {what} stopped at max_steps={max_steps} before converging; "
        "raise max_steps (the chosen model is still valid).",
        ConvergenceWarning, stacklevel=stacklevel + 1,
    )


def label(value) -> str:
    """A class label for messages: numpy scalars shown as plain Python values."""
    return repr(value.item() if isinstance(value, np.generic) else value)


class _FamilyEstimator(BaseEstimator):
    """What every estimator of the family holds in front of its model (see the module docstring).

    Subclasses set ``_constraints`` (checked by :func:`~ardselect.estimators._constraints.check_params` at the
    start of ``fit``) and call, in ``fit``: :meth:`_validate_x` (``reset=True``), then for a
    classifier :meth:`_class_labels`, and at the end :meth:`_set_weight_attributes`; prediction
    calls :meth:`_validate_x` with ``reset=False``.
    """

    #: Whether :meth:`_validate_x` makes sparse input dense (models that read every feature at
    #: every step).
    _dense_x = False
    #: Whether the classifier refuses more than two classes (:class:`_BinaryClassifierMixin`).
    _binary_only = False

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    # ------------------------------------------------------------------ input
    def _validate_x(self, X, *, reset):
        """``X`` as float64 (CSC if sparse, dense with ``_dense_x``), with the family's errors.

        A dask array is gathered first. Complex values, a shape other than 2-D, empty input, NaN
        or infinite values and, with ``reset=False``, other features than the fit's raise
        :class:`~ardselect.exceptions.DataError`. ``reset=True`` sets ``n_features_in_`` (and
        ``feature_names_in_`` for string column names).
        """
        if is_dask(X):
            X = X.compute()
        check_real(X)  # one line, where scikit-learn's message prints the matrix
        try:
            X = validate_data(self, X, accept_sparse=["csc", "csr"], dtype=np.float64,
                              ensure_all_finite=False, reset=reset)
        except ValueError as exc:
            raise DataError(str(exc)) from None
        X = check_design(X, estimator_name=type(self).__name__)
        return dense(X) if self._dense_x else X

    def _class_labels(self, y, n_samples):
        """Check and encode class labels; set ``classes_``. Returns ``(classes, y_index)``.

        ``classes`` is sorted (``classes_[1]`` is the positive class of a binary problem) and
        ``y_index`` indexes it. A missing ``y``, labels that are not classes, a count other than
        ``n_samples``, a single class and (``_binary_only``) more than two classes raise
        :class:`~ardselect.exceptions.LabelError`.
        """
        require_y(self, y)
        if is_dask(y):
            y = y.compute()
        classes, y_index = check_binary_labels(y, n_samples, stacklevel=4)  # fit -> here -> check
        if self._binary_only and classes.size > 2:
            shown = ", ".join(label(c) for c in classes[:5]) + (", ..." if classes.size > 5 else "")
            msg = (f"Only binary classification is supported. {type(self).__name__} is a binary "
                   f"classifier; y has {classes.size} classes ({shown}). Fit one classifier per "
                   "class (e.g. sklearn.multiclass.OneVsRestClassifier), or use ARDClassifier or "
                   "SpikeSlabClassifier, which fit one per class themselves.")
            raise LabelError(msg)
        self.classes_ = classes
        return classes, y_index

    def _feature_names(self):
        """The input's feature names (``x0``, ``x1``, ... without string column names)."""
        if hasattr(self, "feature_names_in_"):
            return np.asarray(self.feature_names_in_, dtype=object)
        return np.array([f"x{i}" for i in range(self.n_features_in_)], dtype=object)

    def _constant_features(self, const, policy, *, stacklevel):
        """Constant features (mask ``const``) are left out: silently, with a warning or refused.

        ``policy`` is the estimator's ``constant_features`` (``"ignore"``, ``"warn"``: a
        :class:`ConstantFeatureWarning`, ``"raise"``: a :class:`~ardselect.exceptions.DataError`);
        ``stacklevel`` counts from the caller, as :func:`warnings.warn`'s does.
        """
        if not const.any() or policy == "ignore":
            return
        shown = ", ".join(repr(str(n)) for n in self._feature_names()[const][:5])
        if policy == "raise":
            msg = (f"X has {int(const.sum())} constant feature(s) (e.g. {shown}); drop them or "
                   "pass constant_features='warn' or 'ignore'.")
            raise DataError(msg)
        warnings.warn(f"{int(const.sum())} of {const.size} features are constant (e.g. {shown}) "
                      "and are left out of the model.", ConstantFeatureWarning,
                      stacklevel=stacklevel + 1)

    # ------------------------------------------------------------------ weights
    def _set_weight_attributes(self, coef, coef_sd, alpha, intercept=None):
        """Set ``coef_``, ``coef_sd_``, ``alpha_`` and the intercept's three: the family's contract.

        ``coef``, ``coef_sd`` and ``alpha`` are ``(n_problems, n_basis)`` (never the intercept);
        ``intercept`` is the intercept's posterior mean, sd and precision, each
        ``(n_problems,)``, or None without an intercept (0, 0 and ``inf``: a weight fixed at 0).
        A classifier keeps one row per binary problem and ``(n_problems,)`` intercepts; a
        regressor (one problem) gets ``(n_basis,)`` arrays and float intercepts.
        """
        k = len(coef)
        if intercept is None:
            intercept = (np.zeros(k), np.zeros(k), np.full(k, np.inf))
        if is_regressor(self):
            self.coef_, self.coef_sd_, self.alpha_ = coef[0], coef_sd[0], alpha[0]
            self.intercept_, self.intercept_sd_, self.intercept_alpha_ = (
                float(v[0]) for v in intercept)
        else:
            self.coef_, self.coef_sd_, self.alpha_ = coef, coef_sd, alpha
            self.intercept_, self.intercept_sd_, self.intercept_alpha_ = (
                np.array(v, dtype=np.float64) for v in intercept)


class _BinaryClassifierMixin(ClassifierMixin):
    """A classifier of two classes only: ``_class_labels`` refuses more, and the tags say so."""

    _binary_only = True

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags


@dataclass
class _Chosen:
    """The model kept for one problem: its active columns, their scales and the posterior.

    ``post`` is a :class:`ardselect.numerics._ep.LatentPosterior` over the unit-RMS columns ``active``.
    """

    active: np.ndarray
    scale: np.ndarray
    post: object


class _ARDPathEstimator(SelectorMixin, _FamilyEstimator):
    """Design -> path -> weights -> ``path_`` for the estimators on the sequential ARD engine.

    Subclasses set ``_constraints`` (extending :data:`_path_constraints`), build the
    likelihood adapter, and call, in ``fit``: :meth:`_validate_x`, :meth:`_prepare_design`,
    :meth:`_run_path` per problem, :meth:`_set_weights` and :meth:`_path_frame`. They keep one
    :class:`_Chosen` per problem in ``self._chosen`` for :meth:`_latent`.
    """

    #: Constraints of the path parameters; each estimator adds its own and its ``init`` choices.
    _path_constraints: dict = {
        **basis_constraints(),
        "max_init": [Interval(Integral, 1, None, closed="left"), None],
        "max_steps": [Interval(Integral, 0, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "alpha_min": [Interval(Real, 0, None, closed="left")],
        "patience": [Interval(Integral, 0, None, closed="left")],
    }

    # ------------------------------------------------------------------ 1. design
    def _basis_matrix(self, X):
        return design_matrix(self.basis_, X, fit_intercept=self.fit_intercept)

    def _prepare_design(self, X, basis, *, constant_features="ignore"):
        """Fit ``basis`` and return the training design at unit RMS, its scales and what may enter.

        Sets ``basis_`` and the private layout: ``_is_features`` (the basis is the input
        features), ``_n_basis`` (basis functions, the intercept excluded), ``_icol`` (column of
        the intercept, the last one, or -1 without it) and ``_basis_names``. With the feature
        basis, constant features are kept out of the model: silently, with a
        :class:`ConstantFeatureWarning` (``"warn"``) or not at all (``"raise"``, a
        :class:`~ardselect.exceptions.DataError`).

        Returns
        -------
        Phi_s : {ndarray, sparse matrix} of shape (n_samples, n_basis + fit_intercept)
        scale : ndarray of shape (n_basis + fit_intercept,)
            Root mean square of each column (``Phi_s = Phi / scale``).
        allowed : ndarray of bool of the same shape
        """
        self.basis_ = basis.fit(X)
        is_features = isinstance(basis, LinearBasis)
        n_basis = X.shape[1] if is_features else X.shape[0]
        allowed = np.ones(n_basis + int(self.fit_intercept), dtype=bool)
        if is_features:
            names = self._feature_names()
            const = constant_columns(X)
            self._constant_features(const, constant_features, stacklevel=3)
            allowed[:n_basis] = ~const
        else:
            names = basis.function_names(np.arange(X.shape[0]))
        Phi_s, scale, nonzero = unit_rms(self._basis_matrix(X))
        allowed &= nonzero
        far = nonzero & ((scale < SCALE_RANGE[0]) | (scale > SCALE_RANGE[1]))
        if far.any():
            j = int(np.flatnonzero(far)[0])
            name = (list(names) + [INTERCEPT])[j]
            what = "feature" if is_features else "basis function"
            msg = (f"{int(far.sum())} {what}(s) have values of order {scale[j]:.0e} (e.g. "
                   f"{str(name)!r}), outside {SCALE_RANGE[0]:.0e} to {SCALE_RANGE[1]:.0e}, where "
                   "the precisions and variances of the weights (which scale with the square of a "
                   "feature) stay finite; rescale X (e.g. standardise each feature)")
            raise DataError(msg)
        if not allowed[:n_basis].any():
            # (the path would have no function to start from, the intercept aside)
            why = "every feature is constant" if is_features else "every basis function is zero"
            msg = f"nothing can enter the model: {why}; give features that vary between samples"
            raise DataError(msg)
        self._is_features = is_features
        self._n_basis = n_basis
        self._icol = n_basis if self.fit_intercept else -1
        self._basis_names = np.concatenate([names, [INTERCEPT]]) if self.fit_intercept else names
        return Phi_s, scale, allowed

    # ------------------------------------------------------------------ 2. path
    def _run_path(self, problem, *, init, max_init, tol=None, problem_label=None):
        """Run the engine on ``problem``; warn once if it stopped at ``max_steps``."""
        path = SequentialPath(problem, init=init, max_steps=self.max_steps,
                              tol=self.tol if tol is None else tol, max_init=max_init,
                              alpha_min=self.alpha_min, patience=self.patience,
                              progress_label=None if problem_label is None else str(problem_label),
                              ).run()
        if not path.converged:
            which = "" if problem_label is None else f" for class {label(problem_label)}"
            warn_path_stopped(type(self).__name__, f"path{which}", self.max_steps, stacklevel=3)
        return path

    # ------------------------------------------------------------------ 3. weights
    def _input_units(self, active, mean, var, alpha_s, scale, factor=1.0):
        """Posterior summaries of one problem's model in the units of the input (and of ``y``).

        ``mean``, ``var`` and ``alpha_s`` are over the unit-RMS columns ``active``; ``factor``
        is the scale of the targets (regression). Returns ``coef``, ``sd``, ``alpha`` of shape
        ``(n_basis,)`` (0, 0, ``inf`` outside the model) and the intercept's three scalars
        (0, 0, ``inf`` when it is out of the model or not fitted).
        """
        c = scale[active]
        feat = active < self._n_basis  # the basis functions (not the intercept or covariates)
        icpt = active == self._icol
        coef = np.zeros(self._n_basis)
        sd = np.zeros(self._n_basis)
        alpha = np.full(self._n_basis, np.inf)
        cols = active[feat]
        coef[cols] = factor * mean[feat] / c[feat]
        sd[cols] = factor * np.sqrt(var[feat] / c[feat] ** 2)
        alpha[cols] = alpha_s[feat] * c[feat] ** 2 / factor**2
        intercept = (0.0, 0.0, np.inf)
        if icpt.any():
            ci = c[icpt][0]
            intercept = (float(factor * mean[icpt][0] / ci),
                         float(factor * np.sqrt(var[icpt][0] / ci**2)),
                         float(alpha_s[icpt][0] * ci**2 / factor**2))
        return coef, sd, alpha, intercept

    def _set_weights(self, rows, chosen_steps):
        """Set the weight attributes from one :meth:`_input_units` result per problem.

        Classifiers get ``(n_problems, n_basis)`` arrays and ``(n_problems,)`` intercepts and
        chosen steps; a regressor (one problem) gets ``(n_basis,)`` arrays and scalars. Also
        sets ``support_`` (the features in any problem's model; all of them for a kernel basis)
        and, for a kernel basis, ``relevance_vectors_``.
        """
        coef = np.array([r[0] for r in rows])
        sd = np.array([r[1] for r in rows])
        alpha = np.array([r[2] for r in rows])
        icpt = np.array([r[3] for r in rows], dtype=np.float64).reshape(len(rows), 3)
        self._set_weight_attributes(coef, sd, alpha, icpt.T)
        steps = np.asarray(chosen_steps, dtype=np.intp)
        self.chosen_step_ = int(steps[0]) if is_regressor(self) else steps
        in_model = np.isfinite(alpha).any(axis=0)
        if hasattr(self, "relevance_vectors_"):
            del self.relevance_vectors_  # a refit with the feature basis must not keep it
        if self._is_features:
            self.support_ = in_model
        else:
            self.support_ = np.ones(self.n_features_in_, dtype=bool)
            self.relevance_vectors_ = np.flatnonzero(in_model)

    # ------------------------------------------------------------------ 4. path_
    def _path_frame(self, steps, extra=None, *, problem_label=None, round_=None):
        """One row per path step: the family's columns, then the model's own (``extra``).

        ``class`` (classifiers: the positive class of the binary problem), ``step``, ``action``,
        ``feature`` (the basis function acted on, empty if none), ``n_basis`` (functions in the
        model, the intercept excluded), ``log_evidence``, then ``extra`` (name -> function of a
        step). ``round_`` adds a first column ``round`` (eta-RVR).
        """
        rows = []
        for s in steps:
            row = {} if problem_label is None else {"class": problem_label}
            row.update({
                "step": s.step,
                "action": s.action,
                "feature": "" if s.feature < 0 else str(self._basis_names[s.feature]),
                "n_basis": int(np.sum(s.active < self._n_basis)),
                "log_evidence": s.stats["log_evidence"],
            })
            for name, fn in (extra or {}).items():
                row[name] = fn(s)
            rows.append(row)
        frame = pd.DataFrame(rows)
        if round_ is not None:
            frame.insert(0, "round", round_)
        return frame

    # ------------------------------------------------------------------ 5. prediction
    def _latent(self, X, covariates=None):
        """Posterior mean and variance of each problem's latent at ``X``: two ``(n, k)`` arrays.

        ``covariates`` are the known covariates of the samples, as the fit had them (columns
        appended after the basis and the intercept).
        """
        check_is_fitted(self)
        if is_dask(X):
            X = self._gather_model_genes(X)
        X = self._validate_x(X, reset=False)
        Phi = self._basis_matrix(X)
        Phi = self._with_covariates(Phi, covariates)
        means, variances = [], []
        for ch in self._chosen:
            A = dense(Phi[:, ch.active])
            m, v = ch.post.latent(A / ch.scale[ch.active])
            means.append(m)
            variances.append(v)
        return np.array(means).T, np.array(variances).T

    def _with_covariates(self, Phi, covariates):
        """The design ``Phi`` with the covariate columns appended: as is without covariates."""
        return Phi

    def _gather_model_genes(self, X):
        """A dask array in row chunks as a CSR matrix holding only the genes the models read.

        With the gene basis only the chosen models' genes are gathered from the chunks (one pass;
        the other columns stay zero, and no model reads them); a kernel basis needs every gene, so
        the array is gathered whole.
        """
        if X.ndim != 2 or X.shape[1] != self.n_features_in_:
            msg = (f"X has {X.shape[1] if X.ndim == 2 else X.shape} features, but "
                   f"{type(self).__name__} is expecting {self.n_features_in_} features as input.")
            raise DataError(msg)
        if not self._is_features:
            return by_rows(X.compute())
        cols = np.unique(np.concatenate([ch.active for ch in self._chosen]))
        cols = cols[cols < self.n_features_in_].astype(np.intp)  # not the intercept
        G = sp.csr_matrix(X[:, cols].compute()) if cols.size else sp.csr_matrix((X.shape[0], 0))
        return sp.csr_matrix((G.data, cols[G.indices], G.indptr), shape=X.shape)

    def _get_support_mask(self):
        check_is_fitted(self)
        return self.support_
