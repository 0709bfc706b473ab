"""The spike-and-slab portable model: its file, its predictions and its refusal of edited files."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy.special import log_ndtr, logsumexp

from ardselect import SpikeSlabClassifier
from ardselect.exceptions import ModelError
from ardselect.model import PortableModel, load_model
from ardselect.preprocessing import Preprocessor


def _data(n, p, n_classes, seed=0):
    """Gene 0 (and 3 with three classes) decide the class; gene 1 is a near copy of gene 0."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p)) + 5.0
    X[:, 1] = X[:, 0] + 0.05 * rng.normal(size=n)
    score = 2.0 * (X[:, 0] - 5.0) + 0.5 * rng.normal(size=n)
    if n_classes == 2:
        y = np.where(score > 0, "tumour", "normal")
    else:
        y = np.where(score > 0.5, "a", np.where(X[:, 3] > 5.0, "b", "c"))
    names = [f"g{j}" for j in range(p)]
    return pd.DataFrame(X, columns=names), y


def _fit(n, p, n_classes):
    df, y = _data(n, p, n_classes)
    pre = Preprocessor(log="none").fit(df.to_numpy(), feature_names=df.columns)
    Z = pre.transform(df.to_numpy())
    est = SpikeSlabClassifier().fit(Z, y)
    model = PortableModel.from_estimator(est, pre, list(df.columns[pre.keep_]),
                                         list(est.classes_))
    return model, est, pre, df


# (n, p, classes): genes outnumber samples (sample space, the file holds the training rows) or not
SHAPES = {"sample": (24, 40, 2), "weight": (60, 12, 2), "sample3": (30, 36, 3),
          "weight3": (90, 10, 3)}


@pytest.fixture(scope="module", params=list(SHAPES))
def fitted(request):
    return (request.param, *_fit(*SHAPES[request.param]))


def test_saved_model_predicts_what_the_estimator_predicts(fitted, tmp_path):
    name, model, est, pre, df = fitted
    path = tmp_path / "model.json"
    model.save(path)
    back = load_model(path)
    assert back.kind == "spike-slab"
    assert back.data["format_version"] == 5
    assert back.features == list(df.columns)
    assert back.classes == list(est.classes_)
    # held-out-like rows: shifted, so that no prediction is a training one
    new = df.iloc[::-1] * 1.1 - 0.5
    expected = est.predict_proba(pre.transform(new.to_numpy()))
    got = back.predict_proba(new)
    assert list(got.columns) == [str(c) for c in est.classes_]
    np.testing.assert_allclose(got.to_numpy(), expected, rtol=1e-12, atol=1e-300)
    np.testing.assert_array_equal(back.predict(new), est.predict(pre.transform(new.to_numpy())))
    # the genes by name, in any order, among others
    shuffled = new[new.columns[::-1]].assign(extra=1.0)
    np.testing.assert_allclose(back.predict_proba(shuffled).to_numpy(), expected, rtol=1e-12,
                               atol=1e-300)
    # sample space needs the training rows; weight space does not
    assert ("design" in back.data) == name.startswith("sample")


def test_predictions_follow_the_mixture_of_the_node_posteriors(fitted):
    """An independent route: each node's full covariance over the genes, then the mixture."""
    _, model, est, pre, df = fitted
    X = df.to_numpy()[:7] * 0.9
    Z = (pre.transform(X) - est._center) / est._scale
    Za = np.column_stack([Z, np.ones(len(Z))])
    lp, lm = [], []
    for mix in est._mixtures:
        plus, minus = [], []
        for fit in mix.fits:
            C = fit.post.cov()  # (d, d) posterior covariance of the weights and the intercept
            m = Za @ fit.mean
            v = np.einsum("ij,jk,ik->i", Za, C, Za)
            z = m / np.sqrt(1.0 + v)
            plus.append(np.log(mix.weights[len(plus)]) + log_ndtr(z))
            minus.append(np.log(mix.weights[len(minus)]) + log_ndtr(-z))
        lp.append(logsumexp(plus, axis=0))
        lm.append(logsumexp(minus, axis=0))
    lp, lm = np.array(lp).T, np.array(lm).T
    if lp.shape[1] == 1:
        expected = np.column_stack([np.exp(lm[:, 0]), np.exp(lp[:, 0])])
    else:
        odds = lp - lm
        expected = np.exp(odds - logsumexp(odds, axis=1, keepdims=True))
    got = model.predict_proba(pd.DataFrame(X, columns=df.columns)).to_numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-9)


def test_posteriors_are_an_ard_models_only(fitted):
    model = fitted[1]
    with pytest.raises(ModelError, match="no single posterior per problem"):
        _ = model.posteriors


@pytest.fixture(scope="module")
def sample_model():
    return _fit(*SHAPES["sample"])[0]


def _set(path, value):
    def edit(data):
        node = data
        for key in path[:-1]:
            node = node[key]
        if value is _DELETE:
            del node[path[-1]]
        else:
            node[path[-1]] = value
    return edit


_DELETE = object()
_NODE = ["problems", 0, "nodes", 0]


@pytest.mark.parametrize(("edit", "pattern"), [
    (_set(["model"], "lasso"), r"field model must be one of ard, spike-slab, got \"lasso\""),
    (_set(["format_version"], 4), r"field format_version must be 5 for a spike-and-slab model"),
    (_set(["fit_intercept"], "yes"), r"field fit_intercept must be true or false"),
    (_set(["standardization", "scale", 2], 0.0),
     r"field standardization\.scale\[2\] must be a positive number, got 0\.0"),
    (_set(["standardization"], _DELETE), r"field standardization must be an object, got null"),
    (_set(["design", 3], [1.0, 2.0]), r"field design\[3\] must be a list of 40 finite numbers"),
    (_set(["design"], _DELETE), r"field design must be the training rows"),
    (_set(["covariates"], {"names": ["age"]}), r"field covariates must be absent"),
    (_set(["problems", 0, "signs", 5], 0), r"field problems\[0\]\.signs must be a list of 24 "),
    (_set(["problems", 0, "nodes"], []), r"field problems\[0\]\.nodes must be a non-empty list"),
    (_set(["problems", 0, "positive"], "normal"), r"field problems\[0\]\.positive must be the "
                                                  r"class \"tumour\""),
    (_set([*_NODE, "weight"], 0.0), r"field problems\[0\]\.nodes\[0\]\.weight must be a number "
                                    r"in \(0, 1\]"),
    (_set([*_NODE, "weight"], 1.0), r"field problems\[0\]\.nodes: the node weights must sum to "
                                    r"1, got 1\.[0-9]"),
    (_set([*_NODE, "route"], "both"), r"field problems\[0\]\.nodes\[0\]\.route must be weight "
                                      r"or sample"),
    (_set([*_NODE, "alpha", 3], 0), r"field problems\[0\]\.nodes\[0\]\.alpha\[3\] must be a "
                                    r"positive number, got 0"),
    (_set([*_NODE, "mean_t", 0], float("nan")), r"field problems\[0\]\.nodes\[0\]\.mean_t\[0\] "
                                                r"must be a finite number, got NaN"),
    (_set([*_NODE, "prior_mean"], [0.0]), r"field problems\[0\]\.nodes\[0\]\.prior_mean must be "
                                          r"a list of 41 finite numbers, got 1 entries"),
    (_set([*_NODE, "tau", 0], -1.0), r"field problems\[0\]\.nodes\[0\]\.tau\[0\] must be a "
                                     r"number >= 0, got -1\.0"),
    (_set([*_NODE, "chol", 2], [1.0]), r"field problems\[0\]\.nodes\[0\]\.chol\[2\] must be a "
                                       r"list of 3 finite numbers, got 1 entries"),
    (_set([*_NODE, "chol", 1, 1], -0.5), r"field problems\[0\]\.nodes\[0\]\.chol\[1\]\[1\] must "
                                         r"be a positive number \(a Cholesky factor's diagonal\)"),
    (_set([*_NODE, "chol"], [[1.0]]), r"field problems\[0\]\.nodes\[0\]\.chol must be a lower "
                                      r"triangle of 24 rows, got 1 rows"),
])
def test_edited_spikeslab_model_is_refused_naming_the_field(sample_model, tmp_path, edit,
                                                            pattern):
    data = json.loads(sample_model.to_json())
    edit(data)
    path = tmp_path / "model.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ModelError, match=r"^model\.json: model " + pattern) as info:
        load_model(path)
    assert "\n" not in str(info.value)
    assert str(info.value).endswith("the model file is corrupted or was edited")


def test_unedited_spikeslab_model_passes_the_schema_and_reads_back(sample_model):
    again = PortableModel(json.loads(sample_model.to_json()))
    assert again.to_json() == sample_model.to_json()
