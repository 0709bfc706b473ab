"""ardselect.model: the portable model, its JSON round trip and its prediction rule."""

from __future__ import annotations

import json
import warnings

import anndata as ad
import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm

from ardselect.exceptions import DataError, DataScaleError, FileFormatError, ModelError
from ardselect.model import DataScaleWarning, PortableModel, load_model
from ardselect.preprocessing import Preprocessor
from conftest import scaled_and_log_cells

# ------------------------------------------------------------------------------ portable model


def _toy_model(n_classes=2):
    pre = Preprocessor(log="none", standardize=True).fit(
        np.array([[0.0, 1, 5], [2, 3, 1], [4, 1, 0]]), feature_names=["a", "b", "c"]
    )

    class Post:
        def __init__(self, index, mean, cov):
            self.index, self.mean, self.cov = np.array(index), np.array(mean), np.array(cov)

    class Est:
        pass

    est = Est()
    posts = [Post([0, -1], [1.5, -0.2], [[0.3, 0.05], [0.05, 0.2]])]
    if n_classes == 3:
        posts += [Post([2], [-1.0], [[0.1]]), Post([0, 2, -1], [0.4, 0.7, 0.1], np.eye(3) * 0.2)]
    est.posteriors_ = posts
    classes = ["n", "p"] if n_classes == 2 else ["x", "y", "z"]
    return PortableModel.from_estimator(est, pre, ["a", "b", "c"], classes), pre, posts


def test_portable_model_binary(tmp_path):
    from scipy.special import ndtr

    model, pre, posts = _toy_model()
    assert model.features == ["a"]  # only the genes in the model are required
    path = tmp_path / "m.json"
    model.save(path)
    back = load_model(path)
    data = pd.DataFrame({"c": [9.0, 1.0], "a": [1.0, 3.0], "zz": [0.0, 0.0]})
    proba = back.predict_proba(data)
    z = pre.transform(data.assign(b=0.0)[["a", "b", "c"]].to_numpy())[:, 0]
    cov = posts[0].cov
    h = 1.5 * z - 0.2
    v = cov[0, 0] * z**2 + 2 * cov[0, 1] * z + cov[1, 1]
    np.testing.assert_allclose(proba["p"], ndtr(h / np.sqrt(1 + v)), rtol=1e-14)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert list(back.predict(data)) == [["n", "p"][int(p > 0.5)] for p in proba["p"]]


def test_portable_model_labels_its_probabilities():
    # Issue 12: get.model(...).predict_proba returned a bare array without class labels.
    model, _, _ = _toy_model(3)
    frame = pd.DataFrame({"a": [0.0, 4.0], "c": [5.0, 0.0]}, index=["s1", "s2"])
    proba = model.predict_proba(frame)
    assert list(proba.columns) == [str(c) for c in model.classes]
    assert list(proba.index) == ["s1", "s2"]
    adata = ad.AnnData(frame.to_numpy(), obs=pd.DataFrame(index=["s1", "s2"]),
                       var=pd.DataFrame(index=["a", "c"]))
    pd.testing.assert_frame_equal(model.predict_proba(adata), proba)
    log = model.predict_log_proba(adata)
    np.testing.assert_allclose(np.exp(log.to_numpy()), proba.to_numpy(), rtol=1e-14)
    assert list(log.columns) == list(proba.columns)
    # An array with feature names keeps scikit-learn's bare array, columns in classes order.
    bare = model.predict_proba(frame.to_numpy(), feature_names=["a", "c"])
    assert isinstance(bare, np.ndarray)
    np.testing.assert_array_equal(bare, proba.to_numpy())
    assert list(model.predict(adata)) == list(proba.idxmax(axis=1))


def test_portable_model_multiclass_missing_genes():
    model, _, _ = _toy_model(3)
    assert model.features == ["a", "c"]
    proba = model.predict_proba(pd.DataFrame({"a": [0.0, 4.0], "c": [5.0, 0.0]}))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    with pytest.raises(ModelError, match="the data lack 1 of the model's 2 genes: c"):
        model.predict_proba(pd.DataFrame({"a": [0.0]}))
    adata = ad.AnnData(np.zeros((1, 2)), var=pd.DataFrame(index=["a", "a2"]))
    with pytest.raises(ModelError, match="lack 1 .*: c"):
        model.predict_proba(adata)


def test_load_model_errors(tmp_path):
    path = tmp_path / "m.json"
    path.write_text("{not json")
    with pytest.raises(FileFormatError, match="not a JSON model file"):
        load_model(path)
    path.write_text('{"format": "other"}')
    with pytest.raises(ModelError, match="not an ardselect model"):
        load_model(path)
    path.write_text('{"format": "ardselect-model", "format_version": 99}')
    with pytest.raises(ModelError, match="format version 99 is not supported"):
        load_model(path)


def test_portable_model_predicts_with_the_estimators_rule():
    """Probabilities come from ardselect.numerics._probit.probit_log_proba on each problem's latent moments."""
    from ardselect.numerics._probit import probit_log_proba

    model, pre, posts = _toy_model(3)
    data = pd.DataFrame({"a": [0.0, 4.0, 1.0], "c": [5.0, 0.0, 2.0]})
    Z = pre.transform(data.assign(b=1.0)[["a", "b", "c"]].to_numpy())[:, [0, 2]]
    design = np.hstack([Z, np.ones((3, 1))])  # genes a, c, then the intercept
    mean = np.column_stack([design[:, p.index] @ p.mean for p in model.posteriors])
    var = np.column_stack([np.einsum("ij,jk,ik->i", design[:, p.index], p.cov, design[:, p.index])
                           for p in model.posteriors])
    np.testing.assert_allclose(model.predict_log_proba(data), probit_log_proba(mean, var),
                               rtol=1e-13)


def test_corrupted_model_is_refused():
    model, _, _ = _toy_model()
    data = json.loads(model.to_json())
    data["problems"][0]["cov"] = [[0.3, 0.05], [0.05, -0.2]]  # not a covariance
    with pytest.raises(ModelError, match="not symmetric positive semi-definite"):
        PortableModel(data)
    data["problems"][0]["cov"] = [[0.3]]
    with pytest.raises(ModelError, match="problem 0 is malformed"):
        PortableModel(data)
    data["problems"][0]["index"] = [5, -1]
    data["problems"][0]["cov"] = [[0.3, 0.0], [0.0, 0.2]]
    with pytest.raises(ModelError, match="outside its 1 features"):
        PortableModel(data)


def _edited(edit, n_classes=2):
    """The toy model's JSON text after ``edit(data)`` (a hand edit of model.json)."""
    model, _, _ = _toy_model(n_classes)
    data = json.loads(model.to_json())
    edit(data)
    return json.dumps(data)


def _set(path, value):
    def edit(data):
        *parents, last = path
        for key in parents:
            data = data[key]
        if value is _DELETE:
            del data[last]
        else:
            data[last] = value

    return edit


_DELETE = object()


@pytest.mark.parametrize(("edit", "pattern"), [
    (_set(["problems", 0, "mean", 0], float("nan")),
     r"field problems\[0\]\.mean\[0\] must be a finite number, got NaN"),
    (_set(["preprocessing", "scale", 0], 0),
     r"field preprocessing\.scale\[0\] must be a positive number, got 0"),
    (_set(["preprocessing", "center"], _DELETE),
     r"field preprocessing\.center must be a list of 1 finite numbers \(one per gene\), got null"),
    (_set(["preprocessing", "center"], []),
     r"field preprocessing\.center must be a list of 1 .*, got 0 entries"),
    (_set(["preprocessing", "log"], "log7"),
     r"field preprocessing\.log must be one of none, log2, log10, ln, got \"log7\""),
    (_set(["preprocessing", "floor"], "abc"),
     r"field preprocessing\.floor must be a finite number, got \"abc\""),
    (_set(["preprocessing", "pseudocount"], None),
     r"field preprocessing\.pseudocount must be a number >= 0, got null"),
    (_set(["preprocessing", "standardize"], "yes"), r"field preprocessing\.standardize"),
    (_set(["classes"], ["n"]), r"field classes must be a list of at least two class names"),
    (_set(["classes"], ["n", "n"]), r"field classes must be a list of distinct class names"),
    (_set(["problems"], []), r"field problems must be a list of 1 problem\(s\) .*, got 0"),
    (_set(["problems", 0, "cov", 0, 0], 1e308),
     r"field problems\[0\]\.cov\[0\]\[0\] must be a finite number, got 1e\+308"),
    (_set(["problems", 0, "cov", 1], [0.05]), r"problem 0 is malformed: 2 indices but "
                                              r"problems\[0\]\.cov is not a 2 x 2 matrix"),
    (_set(["problems", 0, "index"], [0, True]), r"problems\[0\]\.index must be a list of "
                                                r"integers"),
    (_set(["problems", 0, "index"], [0, 0]), r"problems\[0\]\.index must be a list of distinct"),
    (_set(["problems", 0, "positive"], "n"), r"field problems\[0\]\.positive must be the class "
                                             r"\"p\", got \"n\""),
    (_set(["problems", 0, "temperature"], value=True), r"temperatures must be numbers in \(0, 1\]; "
                                                 r"problems\[0\]\.temperature is true"),
    (_set(["features"], ["a", 3]), r"field features must be a list of gene names"),
    (_set(["features"], []), r"problem 0 indexes genes outside its 0 features"),
    (_set(["input"], {"layer": 5}), r"field input\.layer must be a layer name or null, got 5"),
    (_set(["input"], {"use_raw": "no"}), r"field input\.use_raw must be true or false"),
    (_set(["n_features_trained"], 0), r"n_features_trained must be at least the 1 genes"),
    (_set(["format_version"], value=True), r"format version True is not supported"),
])
def test_edited_model_file_is_refused_naming_the_field(tmp_path, edit, pattern):
    # A corrupted or hand-edited model.json once predicted garbage (NaN weights, a zero scale:
    # every sample the first class) or failed with an internal error.
    path = tmp_path / "model.json"
    path.write_text(_edited(edit))
    with pytest.raises(ModelError, match=r"^model\.json: model .*" + pattern) as info:
        load_model(path)
    assert "\n" not in str(info.value)
    assert str(info.value).endswith("the model file is corrupted or was edited")


def test_model_from_a_newer_ardselect_is_refused(tmp_path):
    path = tmp_path / "model.json"
    path.write_text(_edited(_set(["format_version"], 6)))
    with pytest.raises(ModelError, match=r"format version 6 is not supported by ardselect .* "
                                         r"it was written by a newer ardselect: upgrade"):
        load_model(path)


@pytest.mark.parametrize(("text", "pattern"), [
    ("[" * 100_000 + "]" * 100_000, "not a JSON model file: its values are nested too deeply"),
    ('{"format": 1' + "0" * 5000 + "}", "not a JSON model file: Exceeds the limit"),
    (b"\xff\xfe{}", "not a JSON model file"),
])
def test_unreadable_model_file_is_refused(tmp_path, text, pattern):
    path = tmp_path / "model.json"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    with pytest.raises(FileFormatError, match=pattern):
        load_model(path)


def test_unedited_models_of_every_shape_pass_the_schema():
    for n_classes in (2, 3):
        model, _, _ = _toy_model(n_classes)
        PortableModel(json.loads(model.to_json()))


def test_nan_in_new_data_is_refused_naming_gene_and_sample():
    model, _, _ = _toy_model()
    frame = pd.DataFrame({"a": [1.0, np.nan, np.inf]}, index=["s1", "s2", "s3"])
    with pytest.raises(DataError, match=r"the data contain 2 NaN and infinite value\(s\), the "
                                        r"first for gene 'a' in sample 's2'"):
        model.predict_proba(frame)
    with pytest.raises(DataError, match=r"the first for gene 'a' in sample 'row 1'"):
        model.predict_proba(frame.to_numpy(), feature_names=["a"])


def test_predictions_that_overflow_are_refused_naming_the_sample():
    model, _, _ = _toy_model()
    frame = pd.DataFrame({"a": [1.0, 1e300]}, index=["s1", "s2"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataScaleWarning)  # (it says so too; not the point here)
        with pytest.raises(ModelError, match=r"no finite probability for 1 sample\(s\), first "
                                             r"sample 's2'"):
            model.predict_proba(frame)


def test_portable_model_carries_the_temperatures():
    """A model fitted with criterion="cv" predicts through its temperatures, as the estimator does."""
    from ardselect import ARDClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(45, 12))
    y = np.digitize(X[:, 0] - X[:, 1] + rng.normal(size=45), [-0.7, 0.7])
    pre = Preprocessor(log="none").fit(X)
    est = ARDClassifier(cv=3).fit(pre.transform(X), y)
    # Temperatures that differ from 1 and between problems, so the test sees each one.
    est.temperature_ = np.array([0.4, 0.7, 1.0])
    est.variance_scale_ = np.array([0.5, 1.0, 0.8])
    est.combine_temperature_ = 0.6
    names = [f"g{i}" for i in range(12)]
    model = PortableModel.from_estimator(est, pre, names, list(est.classes_))
    again = PortableModel(json.loads(model.to_json()))
    frame = pd.DataFrame(X, columns=names)
    np.testing.assert_allclose(again.predict_proba(frame).to_numpy(),
                               est.predict_proba(pre.transform(X)), rtol=1e-10)
    assert [p["temperature"] for p in again.data["problems"]] == [0.4, 0.7, 1.0]
    assert [p["variance_scale"] for p in again.data["problems"]] == [0.5, 1.0, 0.8]
    assert again.data["combine_temperature"] == 0.6


@pytest.mark.parametrize("bad", [0.0, -1.0, 1.5, "hot", None])
@pytest.mark.parametrize(("key", "what"), [("temperature", "temperatures"),
                                           ("variance_scale", "variance scales")])
def test_corrupted_calibration_is_refused(bad, key, what):
    model, _, _ = _toy_model()
    data = json.loads(model.to_json())
    data["problems"][0][key] = bad
    with pytest.raises(ModelError, match=f"{what} must be numbers in"):
        PortableModel(data)


def test_models_without_temperatures_predict_at_one():
    """Older model.json files read with temperature and variance scale 1.

    Version 1 had no variance scale; files written before the temperatures had no temperatures.
    """
    model, _, _ = _toy_model()
    assert model.data["format_version"] == 3
    data = json.loads(model.to_json())
    del data["problems"][0]["temperature"], data["combine_temperature"]
    del data["problems"][0]["variance_scale"]
    data["format_version"] = 1
    old = PortableModel(data)
    frame = pd.DataFrame({"a": [0.0, 4.0], "b": [1.0, 1.0], "c": [5.0, 0.0]})
    np.testing.assert_allclose(old.predict_proba(frame).to_numpy(),
                               model.predict_proba(frame).to_numpy())


# ------------------------------------------------------------------------------ scale check


def _counts_model(*, sparse=False):
    import scipy.sparse as sp

    from ardselect import ARDClassifier

    rng = np.random.default_rng(3)
    y = np.repeat(["A", "B"], 30)
    lam = np.tile(rng.gamma(2.0, 50.0, size=40), (60, 1))
    lam[y == "B", :4] *= 3.0
    X = rng.poisson(lam).astype(float)
    names = [f"g{i}" for i in range(40)]
    fit_X = sp.csr_matrix(X) if sparse else X
    pre = Preprocessor(log="log2", pseudocount=1.0).fit(fit_X)
    est = ARDClassifier().fit(pre.transform(fit_X), y)
    model = PortableModel.from_estimator(est, pre, names, list(est.classes_))
    return model, pd.DataFrame(X, columns=names), y


def test_data_on_another_scale_are_warned_about():
    import warnings

    from ardselect.model import DataScaleWarning

    model, counts, y = _counts_model()
    # Data like the training data, one class alone, or a single sample: no warning.
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataScaleWarning)
        assert (model.predict(counts) == y).mean() > 0.9
        model.predict(counts[y == "B"])
        model.predict(counts.iloc[:1])
    # Log values given to a model that logs its input itself: logged twice. All samples come out
    # as one class; the warning says why.
    logged = np.log2(counts + 1.0)
    with pytest.warns(DataScaleWarning, match=r"another kind of values .*\(log2\(x \+ 1\.0\)\) "
                      r"\d+% of the values of its \d+ gene\(s\) fitted on whole numbers"):
        pred = model.predict(logged)
    assert len(set(pred)) == 1
    with pytest.warns(DataScaleWarning, match="training standard deviations"):
        model.predict_proba(counts * 1000.0)
    # Sparse training data are only scaled, not centred: the model keeps their training means,
    # so the same check holds.
    sparse_model, _, _ = _counts_model(sparse=True)
    assert not np.any(np.asarray(sparse_model.preprocessing["center"]))
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataScaleWarning)
        sparse_model.predict(counts)
        sparse_model.predict(counts[y == "B"])
    with pytest.warns(DataScaleWarning, match="training standard deviations"):
        sparse_model.predict(logged)
    # A model written before the training statistics were kept: its centred genes only.
    def without_means(m):
        data = json.loads(m.to_json())
        for key in ("mean", "sd", "min", "max", "whole"):
            del data["preprocessing"][key]
        return PortableModel(data)

    with pytest.warns(DataScaleWarning):
        without_means(model).predict(logged)
    old_sparse = without_means(sparse_model)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataScaleWarning)
        old_sparse.predict(logged)


@pytest.fixture(scope="module")
def golub_parts():
    """The bundled Golub data: raw intensities (whole numbers), training and test samples.

    Floored at 100 and capped at 16,000 as in the paper.
    """
    from ardselect.datasets import leukaemia

    adata = leukaemia()
    X = pd.DataFrame(np.clip(np.asarray(adata.X, dtype=np.float64), 100.0, 16000.0),
                     index=adata.obs_names, columns=adata.var_names)
    train = (adata.obs["split"] == "train").to_numpy()
    y = adata.obs["label"].astype(str).to_numpy()
    return X[train], y[train], X[~train], y[~train]


def _golub_model(X, y, log):
    from ardselect import ARDClassifier

    pre = Preprocessor(log=log).fit(X)
    est = ARDClassifier(criterion="loo").fit(pre.transform(X), y)
    return PortableModel.from_estimator(est, pre, list(X.columns), list(est.classes_))


def _z_scored(frame):
    return (frame - frame.mean()) / frame.std(ddof=0).replace(0.0, 1.0)


def _quiet(model, frame):
    """Predict ``frame`` and fail on a DataScaleWarning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataScaleWarning)
        return model.predict(frame)


def test_the_scale_check_warns_on_each_planted_mismatch_and_not_on_held_out_data(golub_parts):
    Xtr, ytr, Xte, yte = golub_parts
    log2_tr, log2_te = np.log2(Xtr), np.log2(Xte)
    raw_model = _golub_model(Xtr, ytr, "log2")  # fitted on raw intensities, logs them itself
    log_model = _golub_model(log2_tr, ytr, "none")  # fitted on log2 values
    # Intensities that are not whole numbers (MAS5 signal, say): the whole-number rule is silent.
    frac_model = _golub_model(Xtr * 1.01, ytr, "log2")
    # Data of the training scale: the held-out samples, one class of them, one sample alone.
    for model, test in ((raw_model, Xte), (log_model, log2_te), (frac_model, Xte * 1.01)):
        _quiet(model, test)
        _quiet(model, test[yte == "AML"])
        _quiet(model, test.iloc[:1])
    planted = {
        "raw vs log2": (raw_model, log2_te, "fitted on whole numbers"),
        "raw (fractions) vs log2": (frac_model, np.log2(Xte * 1.01), "outside the training range"),
        "log2 vs log10": (log_model, np.log10(Xte), "training standard deviations"),
        "log vs z-scored": (log_model, _z_scored(log2_te), "training standard deviations"),
    }
    for case, (model, test, pattern) in planted.items():
        # (z-scores against log values: their signs contradict the training data's; refused
        # unless allowed, then warned about)
        with pytest.warns(DataScaleWarning, match=pattern):
            model.predict(test, allow_scale_mismatch=True)
        with pytest.warns(DataScaleWarning, match=pattern):  # one sample is enough
            model.predict(test.iloc[:1], allow_scale_mismatch=True)
        assert case
    with pytest.raises(DataScaleError, match=r"\d+% of their values here are negative"):
        log_model.predict(_z_scored(log2_te))
    # Counts given as log1p counts to a model fitted on counts.
    model, counts, y = _counts_model()
    _quiet(model, counts)
    with pytest.warns(DataScaleWarning, match="fitted on whole numbers"):
        model.predict(np.log1p(counts))


@pytest.fixture(scope="module")
def cell_models():
    """Models fitted on the scaled and on the log-normalised cells, and the cells."""
    from ardselect import ARDClassifier

    log, scaled, y = scaled_and_log_cells()
    models = []
    for frame in (scaled, log):
        pre = Preprocessor(log="none").fit(frame)
        est = ARDClassifier(criterion="loo").fit(pre.transform(frame), y)
        models.append(PortableModel.from_estimator(est, pre, list(frame.columns),
                                                   list(est.classes_)))
    return (*models, log, scaled, y)


def test_scaled_and_unscaled_values_are_refused_each_for_the_other(cell_models):
    on_scaled, on_log, log, scaled, y = cell_models
    # The layout of the fit: no warning, right answers (new cells of the same kind too).
    new_log, new_scaled, new_y = scaled_and_log_cells(seed=1)
    for model, frame, labels in ((on_scaled, scaled, y), (on_log, log, y),
                                 (on_log, new_log, new_y)):
        assert (_quiet(model, frame) == labels).mean() > 0.9
    _quiet(on_scaled, scaled[y == "B"])  # one class alone
    # scanpy's pp.scale output against log-normalised values: refused, naming the layouts.
    with pytest.raises(DataScaleError, match=r"genes held centred values in training \(negative "
                       r"values, means near 0: scaled data such as scanpy's pp\.scale output\) "
                       r"but hold no negative value here .*allow_scale_mismatch=True"):
        on_scaled.predict(log)
    with pytest.raises(DataScaleError, match=r"held no negative value in training .* \d+% of "
                       r"their values here are negative \(scaled or centred data\)"):
        on_log.predict_proba(new_scaled)
    with pytest.raises(DataScaleError):
        on_scaled.predict_log_proba(log.iloc[:10])  # ten cells are enough
    # Allowed: predicted, and still said.
    with pytest.warns(DataScaleWarning, match="hold no negative value here"):
        on_scaled.predict_proba(log, allow_scale_mismatch=True)


def test_the_sign_rule_needs_enough_values(cell_models):
    from ardselect.dataio._scale_check import sign_finding

    on_scaled, _, log, _, _ = cell_models
    Z = log[on_scaled.features].to_numpy()
    assert "no negative value" in sign_finding(Z, on_scaled.preprocessing)
    assert sign_finding(Z[:2], on_scaled.preprocessing) == ""  # two cells say too little
    pre = dict(on_scaled.preprocessing)
    del pre["min"]  # a model written before the training range was kept
    assert sign_finding(Z, pre) == ""


def test_calibration_offset_is_read_checked_and_applied():
    model, _, _ = _toy_model()
    frame = pd.DataFrame({"a": [0.0, 4.0], "b": [1.0, 1.0], "c": [5.0, 0.0]})
    data = json.loads(model.to_json())
    data["problems"][0]["offset"] = 0.7
    shifted = PortableModel(data)
    base = model.predict_proba(frame).to_numpy()[:, 1]
    got = shifted.predict_proba(frame).to_numpy()[:, 1]
    # The offset is added to the calibrated latent: Phi(a + z) against Phi(z).
    np.testing.assert_allclose(norm.ppf(got) - norm.ppf(base), 0.7, rtol=1e-9)
    data["problems"][0]["offset"] = "abc"
    with pytest.raises(ModelError, match=r"problems\[0\]\.offset must be a finite number"):
        PortableModel(data)


def test_an_intercept_only_model_predicts_the_class_frequencies():
    from ardselect import ARDClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 5))  # no gene carries the labels
    y = np.repeat(["a", "b"], [20, 10])
    pre = Preprocessor(log="none").fit(X)
    est = ARDClassifier(random_state=0).fit(pre.transform(X), y)
    model = PortableModel.from_estimator(est, pre, [f"g{j}" for j in range(5)],
                                         list(est.classes_))
    assert model.features == []
    proba = model.predict_proba(pd.DataFrame(X[:4], columns=[f"g{j}" for j in range(5)]))
    np.testing.assert_allclose(proba.to_numpy(), est.predict_proba(pre.transform(X[:4])))
    assert (proba["a"] > 0.5).all()


def test_a_model_refusing_values_its_log_cannot_take_names_no_option_of_fit():
    model, counts, _ = _counts_model()
    z_scored = (counts - counts.mean()) / counts.std()
    with pytest.raises(DataError, match=r"cannot take log2 of \d+ value\(s\) <= -1 .*the model "
                       r"takes log2\(x \+ 1\) of its input.*same kind of values") as err:
        model.predict(z_scored)
    assert "floor" not in str(err.value)
    assert "--log" not in str(err.value)
