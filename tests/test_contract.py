"""The family's contracts, walked over every public estimator (user guide, "The sparse Bayesian family").

One parameter contract: keyword-only constructors and a constraint table covering every
parameter, so that every bad value is one :class:`~ardselect.exceptions.ParameterError` naming the
parameter and its valid range. One input contract: every estimator checks ``X`` and class labels
the same way (the family base, ``ardselect.estimators._base._FamilyEstimator``), with the same messages.
One fitted-attribute contract: ``coef_`` never holds the intercept, which sits apart in
``intercept_`` (and is the last column wherever a design or draw array holds it); classifiers
have one row per binary problem, regressors are 1-D; every per-problem attribute
(``intercept_``, ``intercept_sd_``, ``intercept_alpha_``, ``chosen_step_``) has the shape of
``coef_`` without its last axis; precisions are ``alpha_`` (``inf`` out of the model or without an
intercept); the same Gamma prior has the same names; ``get_support`` wherever ``support_`` is.
"""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.base import BaseEstimator, is_classifier, is_regressor
from sklearn.utils import estimator_checks, get_tags
from sklearn.utils._param_validation import Interval as SkInterval
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.estimator_checks import check_param_validation

import ardselect
from ardselect.estimators._base import _FamilyEstimator
from ardselect.estimators._constraints import Interval, Options
from ardselect.exceptions import DataError, LabelError, ParameterError
from ardselect.preprocessing import Preprocessor

ESTIMATORS = sorted(
    (getattr(ardselect, name) for name in ardselect.__all__
     if isinstance(getattr(ardselect, name), type)
     and issubclass(getattr(ardselect, name), BaseEstimator)),
    key=lambda cls: cls.__name__,
)
#: Small, fast settings per estimator (the contract does not depend on them).
FAST = {
    "GibbsRVMClassifier": {"n_draws": 20, "n_burnin": 10, "n_chains": 2, "random_state": 0},
    "ARDClassifier": {"max_steps": 40},
}


def test_every_family_member_is_walked():
    names = {cls.__name__ for cls in ESTIMATORS}
    assert names == {"ARDClassifier", "GibbsRVMClassifier", "RVMClassifier", "RVMRegressor",
                     "SpikeSlabClassifier", "VariationalRVMClassifier", "VariationalRVMRegressor"}


@pytest.mark.parametrize("cls", [*ESTIMATORS, Preprocessor], ids=lambda c: c.__name__)
def test_constructor_is_keyword_only(cls):
    params = list(inspect.signature(cls.__init__).parameters.values())[1:]
    assert params, cls
    positional = [p.name for p in params if p.kind is not p.KEYWORD_ONLY]
    assert positional == [], f"{cls.__name__}: positional parameters {positional}"


def _sklearn_constraints(cls):
    """``cls._constraints`` in scikit-learn's vocabulary (its check generates the bad values)."""
    def translate(c):
        if isinstance(c, Interval):
            return SkInterval(c.kind, c.left, c.right, closed=c.closed)
        if isinstance(c, Options):
            return StrOptions(c.options)
        return c

    return {name: [translate(c) for c in allowed] for name, allowed in cls._constraints.items()}


@pytest.mark.parametrize("cls", [*ESTIMATORS, Preprocessor], ids=lambda c: c.__name__)
def test_every_parameter_is_declared_and_checked(cls, monkeypatch):
    # scikit-learn's own check: the constraint table covers exactly the parameters, and a value
    # of a wrong type or outside its range fails fit with "The 'name' parameter of Est must be
    # <the valid range>. Got <value> instead." The check reads the table as
    # ``_parameter_constraints`` and expects its own (private) error class: it is given our
    # table, and expects ours, the error the command line catches.
    monkeypatch.setattr(cls, "_parameter_constraints", _sklearn_constraints(cls), raising=False)
    monkeypatch.setattr(estimator_checks, "InvalidParameterError", ParameterError)
    check_param_validation(cls.__name__, cls())


def test_the_parameter_error_is_public_and_a_value_and_type_error():
    assert ardselect.ParameterError is ParameterError
    assert issubclass(ParameterError, ValueError)
    assert issubclass(ParameterError, TypeError)
    assert issubclass(ParameterError, ardselect.ArdselectError)
    with pytest.raises(ParameterError, match=r"The 'tol' parameter of RVMRegressor must be a float "
                       r"in the range \(0.0, inf\). Got -1 instead."):
        ardselect.RVMRegressor(tol=-1).fit(np.eye(3), np.arange(3.0))


def test_every_family_member_stands_on_the_family_base():
    for cls in ESTIMATORS:
        assert issubclass(cls, _FamilyEstimator), cls.__name__
        assert "_validate_x" not in vars(cls), f"{cls.__name__} checks X its own way"
        assert "_class_labels" not in vars(cls), cls.__name__


#: Bad inputs and the one message every estimator gives for each (``{name}``: the estimator's).
_BAD_X = {
    "complex": (lambda X: X.astype(complex), r"^Complex data not supported: the data hold complex "
                r"numbers \(dtype complex128\); expression values must be real numbers$"),
    "nan": (lambda X: np.where(np.arange(X.size).reshape(X.shape) == 5, np.nan, X),
            r"^Input X contains 1 NaN value\(s\) \(first in column 1\); impute or drop them"),
    "sparse inf": (lambda X: sp.csr_matrix(np.where(np.arange(X.size).reshape(X.shape) == 6,
                                                    np.inf, X)),
                   r"^Input X contains 1 infinite value\(s\) \(first in column 2\)"),
    "no samples": (lambda X: X[:0], r"^Found array with 0 sample\(s\) \(shape=\(0, 4\)\) while "
                   r"a minimum of 1 is required by {name}\.$"),
    "3-D": (lambda X: X[:, :, None], r"^Found array with dim 3, while dim <= 2 is required by "
            r"{name}\.$"),
    "strings": (lambda X: np.full(X.shape, "a"), r"^could not convert string to float"),
}


@pytest.mark.parametrize("case", list(_BAD_X))
@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_bad_x_gets_one_error_from_every_estimator(cls, case):
    X, y = _data(cls)
    make, pattern = _BAD_X[case]
    with pytest.raises(DataError, match=pattern.format(name=cls.__name__)):
        cls(**FAST.get(cls.__name__, {})).fit(make(X), y)


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_predict_checks_x_against_the_fit(cls):
    X, y = _data(cls)
    est = _fit(cls, X, y)
    with pytest.raises(DataError, match=rf"^X has 3 features, but {cls.__name__} is expecting 4 "
                       "features as input.$"):
        est.predict(X[:, :3])
    with pytest.raises(DataError, match=r"^Complex data not supported: the data hold complex"):
        est.predict(X.astype(complex))
    frame = pd.DataFrame(X, columns=[f"g{i}" for i in range(X.shape[1])])
    est = _fit(cls, frame, y)
    with pytest.raises(DataError, match="The feature names should match those that were passed "
                       "during fit"):
        est.predict(frame.rename(columns={"g0": "other"}))
    with pytest.warns(UserWarning, match="X does not have valid feature names"):
        np.testing.assert_array_equal(est.predict(X), est.predict(frame))


@pytest.mark.parametrize("cls", [c for c in ESTIMATORS if is_classifier(c())],
                         ids=lambda c: c.__name__)
def test_class_labels_are_checked_alike(cls):
    X, _ = _data(cls)
    est = cls(**FAST.get(cls.__name__, {}))
    with pytest.raises(LabelError, match=rf"^{cls.__name__} requires y to be passed, but the "
                       "target y is None.$"):
        est.fit(X, None)
    with pytest.raises(LabelError, match="^y has 29 labels but X has 30 samples"):
        est.fit(X, np.arange(29) % 2)
    with pytest.raises(LabelError, match=r"^y has one class only \('a'\)"):
        est.fit(X, np.full(30, "a"))
    three = np.array(["u", "v", "w"] * 10)
    if not get_tags(est).classifier_tags.multi_class:
        # One wording for every binary-only classifier (scikit-learn's check looks for the first
        # sentence).
        with pytest.raises(LabelError, match=(
                rf"^Only binary classification is supported. {cls.__name__} is a binary "
                r"classifier; y has 3 classes \('u', 'v', 'w'\). Fit one classifier per class "
                r"\(e.g. sklearn.multiclass.OneVsRestClassifier\), or use ARDClassifier or "
                "SpikeSlabClassifier, which fit one per class themselves.$")):
            est.fit(X, three)
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert list(est.fit(X, three).classes_) == ["u", "v", "w"]


def test_same_prior_same_names():
    """A Gamma hyperprior is (shape, rate) under one pair of names, and there are no cryptic names."""
    for cls in ESTIMATORS:
        params = set(cls().get_params())
        assert not {n for n in params if len(n) == 1}, cls.__name__
        assert "n_samples" not in params, cls.__name__  # scikit-learn's name for the data size
        shapes = {n.removesuffix("_shape") for n in params if n.endswith("_shape")}
        rates = {n.removesuffix("_rate") for n in params if n.endswith("_rate")}
        assert shapes == rates, cls.__name__
        assert shapes <= {"alpha", "noise"}, cls.__name__


def _data(cls, *, n=30, p=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    if is_regressor(cls()):
        y = X[:, 0] - 0.5 * X[:, 1] + 0.1 * rng.normal(size=n)
    else:
        y = np.where(X[:, 0] - X[:, 1] + 0.3 * rng.normal(size=n) > 0, "b", "a")
    return X, y


def _fit(cls, X, y, **params):
    est = cls(**{**FAST.get(cls.__name__, {}), **params})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # short chains and capped paths warn; not the point here
        return est.fit(X, y)


def _linear_kernel(cls):
    """A basis whose decision function is linear in the inputs: the features, or a linear kernel.

    Empty for an estimator without a ``kernel`` (it weighs the input features themselves).
    """
    if "kernel" not in cls().get_params():
        return {}
    return {"kernel": "linear" if cls.__name__.startswith("Variational") else "features"}


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_fitted_attribute_shapes(cls):
    X, y = _data(cls)
    est = _fit(cls, X, y)
    n_basis = X.shape[0] if est.coef_.shape[-1] == X.shape[0] else X.shape[1]
    if is_classifier(est):
        assert est.coef_.shape == (1, n_basis)  # one binary problem
        for name in ("intercept_", "intercept_sd_", "intercept_alpha_"):
            value = getattr(est, name)
            assert isinstance(value, np.ndarray), name
            assert value.shape == (1,), name
    else:
        assert est.coef_.shape == (n_basis,)
        for name in ("intercept_", "intercept_sd_", "intercept_alpha_"):
            assert isinstance(getattr(est, name), float), name
    assert est.coef_sd_.shape == est.coef_.shape
    assert est.alpha_.shape == est.coef_.shape  # the one precision name
    assert not hasattr(est, "noise_precision_")
    assert np.all(est.alpha_ > 0)
    if hasattr(est, "chosen_step_"):
        assert np.shape(est.chosen_step_) == est.coef_.shape[:-1]
        steps = np.atleast_1d(est.chosen_step_)
        assert steps.dtype.kind == "i"
        assert np.all(np.isin(steps, est.path_["step"]))
        assert list(est.path_.columns).count("n_basis") == 1
        assert "n_features" not in est.path_.columns
    if hasattr(est, "support_"):
        np.testing.assert_array_equal(est.get_support(), est.support_)
        assert est.support_.shape == (X.shape[1],)


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_coef_never_holds_the_intercept(cls):
    """The latent is ``basis(x) @ coef_ + intercept_``: the intercept is not a column of coef_."""
    X, y = _data(cls, seed=1)
    X = X + 3.0  # an offset the intercept has to absorb
    est = _fit(cls, X, y, **_linear_kernel(cls))
    Phi = np.asarray(est.basis_.transform(X)) if hasattr(est, "basis_") else X
    assert est.coef_.shape[-1] == Phi.shape[1]
    latent = Phi @ np.atleast_2d(est.coef_).T + np.ravel(est.intercept_)  # (n, n_problems)
    if cls.__name__.startswith("Gibbs"):
        # The draws' means (the predictive probability averages over the draws instead).
        np.testing.assert_allclose(est.coef_[0], est.coef_samples_.mean(axis=(0, 1)))
        np.testing.assert_allclose(est.intercept_[0], est.intercept_samples_.mean())
        return
    if is_classifier(est):
        # decision_function is the moderated latent predict_proba is increasing in; the posterior
        # mean of the latent is what coef_ and intercept_ give.
        expected = est._latent(X)[0]
        expected = expected[:, 0] if expected.ndim == 2 else expected
    else:
        expected = est.predict(X)
    np.testing.assert_allclose(latent[:, 0], expected, rtol=1e-8, atol=1e-8)


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_without_intercept(cls):
    X, y = _data(cls, seed=2)
    est = _fit(cls, X, y, fit_intercept=False)
    assert np.all(np.ravel(est.intercept_) == 0)
    assert np.all(np.ravel(est.intercept_sd_) == 0)
    assert np.all(np.isinf(np.ravel(est.intercept_alpha_)))  # a weight fixed at 0: precision inf


def test_multiclass_rows_are_problems():
    X, _ = _data(ardselect.ARDClassifier, n=45, p=6)
    y = np.array(["u", "v", "w"])[np.argmax(X[:, :3], axis=1)]
    est = ardselect.ARDClassifier(max_steps=40).fit(X, y)
    assert est.coef_.shape == (3, 6)
    for name in ("intercept_", "intercept_sd_", "intercept_alpha_", "chosen_step_"):
        assert getattr(est, name).shape == (3,), name
    # Row k is class k against the rest: its path is the one labelled with that class.
    for k, cls in enumerate(est.classes_):
        rows = est.path_[est.path_["class"] == cls]
        assert est.chosen_step_[k] in set(rows["step"])
    np.testing.assert_array_equal(est.choose_step("evidence").shape, (3,))
