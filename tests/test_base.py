"""What every path estimator shares (ardselect/estimators/_base.py, _basis.py): the design and its checks."""

import re

import numpy as np
import pytest

from ardselect import ARDClassifier, RVMClassifier
from ardselect.engine._basis import unit_rms
from ardselect.exceptions import DataError


@pytest.fixture
def problem(rng):
    X = rng.normal(size=(40, 6))
    y = (X[:, 0] + 0.3 * rng.normal(size=40) > 0).astype(int)
    return X, y


@pytest.mark.parametrize("factor", [1e-200, 1e200])
@pytest.mark.parametrize("estimator", [ARDClassifier(criterion="loo"), ARDClassifier(),
                                       RVMClassifier(kernel="features")])
def test_features_of_absurd_scale_are_refused(problem, estimator, factor):
    # X * 1e-200 and X * 1e200 failed with "attempt to get argmax of an empty sequence" (or an
    # IndexError): squares of such values under- or overflow, and a weight's precision in input
    # units scales with the square of its feature.
    X, y = problem
    order = re.escape(f"{factor:.0e}")
    with pytest.raises(DataError, match=rf"6 feature\(s\) have values of order {order} \(e\.g\. "
                                        r"'x0'\), outside 1e-150 to 1e\+150.*rescale X"):
        estimator.fit(X * factor, y)


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_every_feature_constant_is_refused(problem, fit_intercept):
    # It failed with "attempt to get argmax of an empty sequence".
    X, y = problem
    C = np.ones_like(X) * np.arange(1.0, 7.0)
    with pytest.raises(DataError, match=r"nothing can enter the model: every feature is constant; "
                                        r"give features that vary"):
        ARDClassifier(fit_intercept=fit_intercept, criterion="loo",
                      constant_features="ignore").fit(C, y)


def test_unit_rms_measures_tiny_and_huge_columns():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3))
    _, scale, nonzero = unit_rms(X)
    for factor in (1e-200, 1e200):
        _, scaled, ok = unit_rms(X * factor)
        assert ok.all()
        np.testing.assert_allclose(scaled, scale * factor, rtol=1e-12)
    # ordinary columns keep the plain formula's bits
    np.testing.assert_array_equal(scale, np.sqrt(np.mean(X * X, axis=0)))
    assert nonzero.all()
