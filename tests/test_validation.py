"""The checks of y shared by every estimator (``ardselect.engine._validation``)."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import DataConversionWarning

from ardselect import (
    ARDClassifier,
    RVMClassifier,
    RVMRegressor,
    VariationalRVMClassifier,
    VariationalRVMRegressor,
)
from ardselect.engine._validation import check_binary_labels, check_regression_target
from ardselect.exceptions import DataError, LabelError

REGRESSORS = [RVMRegressor, VariationalRVMRegressor]
CLASSIFIERS = [ARDClassifier, RVMClassifier, VariationalRVMClassifier]


def _data(n=20):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 3))
    return X, X[:, 0] + 0.1 * rng.normal(size=n)


@pytest.mark.parametrize(("y", "match"), [
    (None, r"requires y to be passed, but the target y is None"),
    (np.zeros((20, 2)), r"y must be one-dimensional, got an array of shape \(20, 2\)"),
    (np.zeros(19), r"y has 19 values but X has 20 samples; they must match one to one"),
    (np.array(["a"] * 20), r"y must be numeric for regression; got values of dtype <U1\. For "
                           r"class labels use a classifier"),
    (np.r_[np.nan, np.inf, np.zeros(18)], r"y contains 2 NaN or infinite value\(s\)"),
])
@pytest.mark.parametrize("Est", REGRESSORS)
def test_every_regressor_checks_y_alike(Est, y, match):
    X, _ = _data()
    with pytest.raises(DataError, match=match):
        Est().fit(X, y)
    with pytest.raises(DataError, match=match):
        check_regression_target(Est(), y, 20)


@pytest.mark.parametrize("Est", REGRESSORS)
def test_a_column_vector_target_is_ravelled_with_a_warning(Est):
    X, y = _data()
    with pytest.warns(DataConversionWarning, match="column-vector y") as record:
        Est().fit(X, y[:, None])
    assert record[0].filename == __file__  # the warning points at the caller of fit
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        t = check_regression_target(Est(), y.astype(np.float32).tolist(), 20)
    assert t.dtype == np.float64
    np.testing.assert_array_equal(t, y.astype(np.float32))


@pytest.mark.parametrize("Est", CLASSIFIERS)
def test_classifiers_share_the_shape_checks(Est):
    X, y = _data()
    labels = (y > 0).astype(int)
    with pytest.raises(LabelError, match=r"y must be one-dimensional, got an array of shape"):
        Est().fit(X, np.zeros((20, 2)))
    with pytest.raises(LabelError, match=r"y has 19 labels but X has 20 samples; they must match"):
        Est().fit(X, labels[:-1])
    with pytest.warns(DataConversionWarning, match="column-vector y") as record:
        Est().fit(X, labels[:, None])
    assert record[0].filename == __file__


def test_label_checks_name_the_labels():
    with pytest.raises(LabelError, match="continuous values"):
        check_binary_labels(np.linspace(0, 1, 4), 4)
    with pytest.raises(LabelError, match="one class only"):
        check_binary_labels(np.ones(4), 4)
    classes, idx = check_binary_labels(np.array(["b", "a", "b", "a"]), 4)
    assert classes.tolist() == ["a", "b"]
    assert idx.tolist() == [1, 0, 1, 0]
