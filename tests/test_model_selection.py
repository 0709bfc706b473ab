"""ardselect.model_selection against hand-computed scores, leakage checks and the accuracy benchmark."""

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin, TransformerMixin
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

from ardselect import ARDClassifier
from ardselect.exceptions import DataError, LabelError
from ardselect.model_selection import (
    FewPartitionsWarning,
    baselines,
    calibration_table,
    evaluate,
    expected_calibration_error,
    n_genes_used,
    paired_difference,
    partitions,
    summarize,
)


class FixedProba(ClassifierMixin, BaseEstimator):
    """Predicts P(class 'b') = sigmoid(x0): scores computable by hand."""

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        return self

    def predict_proba(self, X):
        p = 1 / (1 + np.exp(-np.asarray(X)[:, 0]))
        return np.column_stack([1 - p, p])


class MeanRecorder(TransformerMixin, BaseEstimator):
    """Centres with the training mean and remembers which rows it was fitted on."""

    fitted_rows: list = []  # noqa: RUF012 (a test-only record shared across clones)

    def fit(self, X, y=None):
        self.mean_ = np.asarray(X).mean(axis=0)
        MeanRecorder.fitted_rows.append(np.asarray(X)[:, 1].copy())
        return self

    def transform(self, X):
        return np.asarray(X) - self.mean_ * 0  # leave the values as they are


def test_scores_match_a_hand_computed_split():
    X = np.array([[2.0, 0], [-1, 1], [0.5, 2], [-3, 3], [1, 4], [-0.2, 5], [3, 6], [-2, 7]])
    y = np.array(["b", "a", "a", "a", "b", "b", "b", "a"])
    res, pred = evaluate(X, y, {"fixed": FixedProba()}, n_splits=1, train_size=0.5, random_state=3)
    (_, test), = partitions(y, n_splits=1, train_size=0.5, random_state=3)
    p_b = 1 / (1 + np.exp(-X[test, 0]))
    truth_b = y[test] == "b"
    pred_b = p_b > 0.5
    p_true = np.where(truth_b, p_b, 1 - p_b)
    row = res.iloc[0]
    assert row["errors"] == np.sum(pred_b != truth_b)
    assert row["log_loss"] == pytest.approx(-np.mean(np.log(p_true)))
    assert row["brier"] == pytest.approx(np.mean(2 * (1 - p_true) ** 2))
    conf = np.maximum(p_b, 1 - p_b)
    assert row["ece"] == pytest.approx(expected_calibration_error(conf, pred_b == truth_b))
    assert row["log_loss_prior"] == pytest.approx(-np.log(0.5))
    assert row["genes"] == 2  # no coefficients: uses everything it is given
    assert list(pred["sample"]) == list(test)
    np.testing.assert_allclose(pred["prob_b"], p_b)
    assert list(pred["label"]) == list(y[test])


def test_ece_by_hand():
    # bins: [0.9, 0.9] -> conf 0.9, accuracy 1; [0.6, 0.6] -> conf 0.6, accuracy 0.5
    assert expected_calibration_error([0.9, 0.9, 0.6, 0.6], [1, 1, 1, 0]) == pytest.approx(
        0.5 * 0.1 + 0.5 * 0.1)
    assert expected_calibration_error([1.0, 1.0], [1, 1]) == 0.0


def test_preprocessing_sees_only_the_training_part():
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.normal(size=30), np.arange(30.0)])  # column 1 = row id
    y = np.repeat(["a", "b"], 15)
    MeanRecorder.fitted_rows = []
    evaluate(X, y, {"fixed": FixedProba()}, preprocessor=MeanRecorder(), n_splits=3,
             random_state=1)
    parts = partitions(y, n_splits=3, random_state=1)
    for rows, (train, test) in zip(MeanRecorder.fitted_rows, parts, strict=True):
        assert set(rows.astype(int)) == set(train)
        assert not set(rows.astype(int)) & set(test)


@pytest.fixture
def workers_asked(monkeypatch):
    """The ``n_jobs`` each joblib ``Parallel`` is made with while the test runs (it runs as usual)."""
    import joblib

    asked = []

    class Recording(joblib.Parallel):
        def __init__(self, *args, **kwargs):
            asked.append(kwargs.get("n_jobs"))
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(joblib, "Parallel", Recording)
    return asked


def test_reproducible_and_independent_of_n_jobs(workers_asked):
    rng = np.random.default_rng(2)
    X = rng.normal(size=(50, 120))  # 33 x 120 training parts: the partitions go to processes
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=50) > 0, "u", "v")
    m = {"ARD-EP": ARDClassifier(), "logistic": LogisticRegression()}
    a, pa = evaluate(X, y, m, criteria={"ARD-EP": ["evidence"]}, preprocessor=StandardScaler(),
                     n_splits=4, n_jobs=1)
    b, pb = evaluate(X, y, m, criteria={"ARD-EP": ["evidence"]}, preprocessor=StandardScaler(),
                     n_splits=4, n_jobs=2)
    assert workers_asked[0] == 1
    assert workers_asked[-1] == 2
    cols = [c for c in a.columns if c != "fit_seconds"]
    pd.testing.assert_frame_equal(a[cols], b[cols])
    pd.testing.assert_frame_equal(pa, pb)
    assert list(a["method"].iloc[:3]) == ["ARD-EP", "ARD-EP (evidence)", "logistic"]


def test_the_partitions_of_a_small_table_run_here(workers_asked):
    # A partition's fits take less than starting worker processes: n * min(p, 100)**2 * 10 below
    # PROCESS_MIN_WORK (2,000,000) for a training part of n samples and p genes.
    rng = np.random.default_rng(4)
    y = np.repeat(["a", "b"], 30)
    for n_genes, expected in ((50, 1), (80, 2)):  # 40 x 50**2 x 10 = 1.0e6; 40 x 80**2 x 10 = 2.56e6
        X = rng.normal(size=(60, n_genes))
        workers_asked.clear()
        res, _ = evaluate(X, y, {"fixed": FixedProba()}, n_splits=2, n_jobs=2)
        assert workers_asked == [expected], n_genes
        assert len(res) == 2
    workers_asked.clear()
    evaluate(X, y, {"fixed": FixedProba()}, n_splits=2)  # None: joblib's configuration decides
    assert workers_asked == [None]


def test_multiclass_and_summaries():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(90, 20))
    y = np.array(["x", "y", "z"])[np.argmax(X[:, :3], axis=1)]
    res, pred = evaluate(X, y, {"ARD-EP": ARDClassifier(), "logistic": LogisticRegression()},
                         preprocessor=StandardScaler(), n_splits=3)
    assert {"prob_x", "prob_y", "prob_z"} <= set(pred.columns)
    np.testing.assert_allclose(pred.filter(like="prob_").sum(axis=1), 1.0)
    s = summarize(res, pred)
    assert list(s["method"]) == ["ARD-EP", "logistic"]
    assert (s["error_rate_mean"] < 0.4).all()
    d = paired_difference(res, "logistic").set_index("method")
    manual = (res[res.method == "ARD-EP"].set_index("split")["error_rate"]
              - res[res.method == "logistic"].set_index("split")["error_rate"])
    assert d.loc["ARD-EP", "d_error_rate"] == pytest.approx(manual.mean())
    assert d.loc["logistic", "d_error_rate"] == 0


def test_group_partitions_hold_out_whole_groups():
    y = np.tile(["a", "b"], 30)
    groups = np.repeat(np.arange(12), 5)
    for train, test in partitions(y, n_splits=6, groups=groups, random_state=0):
        assert not set(groups[train]) & set(groups[test])


def test_partitions_are_distinct():
    # Three groups allow six group-wise partitions (a group or two held out); asked for more, or
    # drawn at random, they once repeated, and the standard errors counted the duplicates.
    y = np.tile(["a", "b"], 15)
    groups = np.tile(["G1", "S", "G2M"], 10)
    parts = partitions(y, n_splits=3, train_size=0.5, groups=groups, random_state=0)
    assert len({tuple(sorted(test)) for _, test in parts}) == 3
    with pytest.warns(FewPartitionsWarning, match=r"only 6 distinct group-wise \(3 groups\) "
                                                  r"train/test partitions exist .* not the 10 "
                                                  r"asked for; using those 6"):
        parts = partitions(y, n_splits=10, train_size=0.5, groups=groups, random_state=0)
    assert len({tuple(sorted(test)) for _, test in parts}) == len(parts) == 6
    # Without groups: 4 samples, 2 per class, halves: 4 distinct partitions.
    with pytest.warns(FewPartitionsWarning, match="only 4 distinct stratified"):
        parts = partitions(np.array(["a", "a", "b", "b"]), n_splits=6, train_size=0.5)
    assert len({tuple(sorted(test)) for _, test in parts}) == len(parts) == 4


def test_genes_used_walks_wrappers():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(60, 250))  # more genes than the largest k
    y = (X[:, 0] - X[:, 1] > 0).astype(int)
    for name, est in baselines().items():
        if name == "elastic-net":
            continue  # slow; same coef_ route as L1
        est.fit(X, y)
        g = n_genes_used(est, 250)
        assert 1 <= g <= 250
        if name == "linear SVM":
            assert g == 250
        if name == "top-k t-test + L2":
            assert g == est.best_params_["select__k"]


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"y": ["a"] * 10}, LabelError, "single class"),
        ({"y": ["a", "b", "", "b", "a", "b", "a", "  ", "a", "b"]}, LabelError,
         r"2 sample\(s\) have an empty label \(2, 7\)"),
        ({"y": ["a", "b"] * 4}, DataError, "samples but y has"),
        ({"train_size": 10}, DataError, "train_size"),
        ({"train_size": 0.0}, DataError, "train_size"),
        ({"train_size": 4.5}, DataError, "whole count"),  # was silently 4 samples
        ({"criteria": {"nope": ["loo"]}}, ValueError, "not a method"),
    ],
)
def test_bad_input_is_refused(kwargs, exc, match):
    X = np.zeros((10, 3))
    args = {"y": ["a", "b"] * 5, **kwargs}
    y = args.pop("y")
    with pytest.raises(exc, match=match):
        evaluate(X, y, {"fixed": FixedProba()}, **args)


@pytest.fixture
def accuracy():
    """``benchmarks/accuracy.py`` as a module."""
    bench = str(Path(__file__).resolve().parents[1] / "benchmarks")
    if bench not in sys.path:
        sys.path.insert(0, bench)
    import accuracy as module

    return module


@pytest.mark.slow
def test_accuracy_benchmark_runs_on_golub(shared_data, accuracy):
    methods = accuracy.methods()
    methods = {k: methods[k] for k in ("ARD-EP", "L1-logistic", "linear SVM")}
    res, pred = accuracy.run("golub_leukemia", methods, criteria={"ARD-EP": ["evidence"]},
                             n_splits=6, jobs=2)
    s = summarize(res, pred).set_index("method")
    # Golub is easy: every method is far better than chance, and the ARD-EP default model is
    # sparser than the all-gene SVM and better calibrated than the class frequencies.
    assert (s["error_rate_mean"] < 0.15).all()
    assert s.loc["ARD-EP", "genes_mean"] < s.loc["linear SVM", "genes_mean"]
    assert s.loc["ARD-EP", "log_loss_mean"] < s.loc["ARD-EP", "log_loss_prior_mean"] / 2
    assert "| ARD-EP |" in accuracy.table(res, pred)


@pytest.mark.slow
def test_accuracy_benchmark_runs_the_shared_model_when_named(shared_data, accuracy, tmp_path, capsys):
    accuracy.main(["--datasets", "khan_srbct", "--splits", "2", "--jobs", "2", "--methods",
                   "ARD-EP shared,ARD-EP", "--out", str(tmp_path)])
    assert "| ARD-EP shared |" in capsys.readouterr().out
    res = pd.read_csv(tmp_path / "khan_srbct_splits.tsv", sep="\t").set_index(["method", "split"])
    # One gene set for all classes: on Khan smaller than the per-class union (41 against 67 genes
    # on average over 50 partitions of benchmarks/accuracy.py), and as accurate.
    assert (res.loc["ARD-EP shared", "genes"] <= res.loc["ARD-EP", "genes"]).all()
    assert (res.loc["ARD-EP shared", "error_rate"] < 0.1).all()
    with pytest.raises(SystemExit):
        accuracy.main(["--datasets", "khan_srbct", "--methods", "ARD-EP joint"])


def test_accuracy_benchmark_loads_the_low_dimensional_sets(shared_data, accuracy):
    # The shapes and class counts the data sets' READMEs give (Raetsch: one realisation's rows).
    expected = {"pima_diabetes": ((532, 7), [355, 177]), "ripley_synth": ((1250, 2), [625, 625]),
                "raetsch_breast_cancer": ((277, 9), [196, 81]),
                "raetsch_german": ((1000, 20), [700, 300]),
                "raetsch_image": ((2310, 18), [990, 1320]),
                "raetsch_titanic": ((2201, 3), [1490, 711]),
                "raetsch_waveform": ((5000, 21), [3353, 1647])}
    assert set(accuracy.LOWDIM) == set(expected)
    for name, (shape, counts) in expected.items():
        X, y, ids = accuracy.load(name)
        assert X.shape == shape, name
        assert np.isfinite(X).all(), name
        assert np.unique(y, return_counts=True)[1].tolist() == counts, name
        assert len(set(ids)) == shape[0], name
    # No label column read as a feature: Pima's first columns are its measurements.
    X, _, _ = accuracy.load("pima_diabetes")
    assert X[0].tolist() == [5, 86, 68, 28, 30.2, 0.364, 24]


@pytest.mark.slow
def test_accuracy_benchmark_runs_the_low_dimensional_sets(shared_data, accuracy, tmp_path, capsys):
    accuracy.main(["--datasets", "pima_diabetes", "--splits", "4", "--jobs", "2", "--methods",
                   "ARD-EP,L1-logistic", "--out", str(tmp_path)])
    assert "| ARD-EP |" in capsys.readouterr().out
    res = pd.read_csv(tmp_path / "pima_diabetes_splits.tsv", sep="\t")
    s = res.groupby("method")[["error_rate", "log_loss", "log_loss_prior"]].mean()
    # benchmarks/accuracy.py: level with L1 on Pima (21.9% against 22.0% over 50 partitions).
    assert abs(s.loc["ARD-EP", "error_rate"] - s.loc["L1-logistic", "error_rate"]) < 0.02
    assert s.loc["ARD-EP", "log_loss"] < 0.8 * s.loc["ARD-EP", "log_loss_prior"]
    with pytest.raises(SystemExit):
        accuracy.main(["--datasets", "raetsch_banana"])


def test_calibration_table_counts_and_ece():
    pred = pd.DataFrame({
        "criterion": ["loo"] * 4 + ["evidence"] * 2,
        "n_classes": 2,
        "confidence": [0.55, 0.58, 0.95, 0.97, 0.6, 0.99],
        "correct": [True, False, True, True, True, False],
    })
    t = calibration_table(pred, n_bins=5)
    loo = t[t.criterion == "loo"]
    # five bins on [0, 1], as the ECE's: 0.55 and 0.58 share [0.4, 0.6), 0.95 and 0.97 [0.8, 1]
    assert loo["n"].tolist() == [2, 2]
    assert loo["bin_low"].tolist() == pytest.approx([0.4, 0.8])
    assert loo["accuracy"].tolist() == [0.5, 1.0]
    # ECE = sum_b (n_b / n) |conf_b - acc_b|, computed by hand, and the one ECE definition
    expected = 0.5 * abs(0.565 - 0.5) + 0.5 * abs(0.96 - 1.0)
    assert loo["ece"].iloc[0] == pytest.approx(expected)
    assert loo["ece"].iloc[0] == expected_calibration_error(
        pred["confidence"][:4], pred["correct"][:4], n_bins=5)
    assert t.loc[t.criterion == "evidence", "bin_low"].tolist() == pytest.approx([0.6, 0.8])


def test_selection_frequency_and_jaccard_by_hand():
    from itertools import combinations

    from ardselect.model_selection import selection_frequency, selection_stability
    from ardselect.preprocessing import Preprocessor

    rng = np.random.default_rng(2)
    X = rng.normal(size=(60, 12))
    X[:, 0] = 5.0  # constant: the preprocessor drops it, so its output columns shift by one
    y = np.where(X[:, 3] - X[:, 7] + 0.3 * rng.normal(size=60) > 0, "a", "b")
    names = [f"g{j}" for j in range(12)]
    l1 = LogisticRegression(l1_ratio=1.0, solver="liblinear", C=0.3)
    results, _, sel = evaluate(X, y, {"ARD-EP": ARDClassifier(constant_features="ignore"),
                                      "L1": l1},
                               criteria={"ARD-EP": ["evidence"]},
                               preprocessor=Preprocessor(log="none"), n_splits=4,
                               feature_names=names, return_selection=True, random_state=0)
    assert list(sel.columns) == names
    assert sel.shape == (12, 12)  # 4 partitions x 3 methods
    np.testing.assert_array_equal(sel.sum(axis=1).to_numpy(), results["genes"].to_numpy())
    assert not sel["g0"].any()
    freq = selection_frequency(sel)
    assert list(freq.columns) == ["ARD-EP", "ARD-EP (evidence)", "L1"]
    assert freq.loc["g3", "ARD-EP"] == 1.0
    assert freq.loc["g7", "L1"] == 1.0
    assert set(freq.index[:2]) == {"g3", "g7"}
    stab = selection_stability(sel).set_index("method")
    for method in ("ARD-EP", "ARD-EP (evidence)", "L1"):
        sets = [set(np.flatnonzero(row)) for row in sel.xs(method, level="method").to_numpy()]
        jac = [len(a & b) / len(a | b) for a, b in combinations(sets, 2)]
        assert stab.loc[method, "jaccard_mean"] == pytest.approx(np.mean(jac))
        assert stab.loc[method, "genes_mean"] == pytest.approx(np.mean([len(a) for a in sets]))
        assert stab.loc[method, "genes_always"] == len(set.intersection(*sets))


def test_ep_leave_group_out_scores_the_classifier_estimate():
    from ardselect.model_selection import ep_leave_group_out

    rng = np.random.default_rng(5)
    X = rng.normal(size=(48, 10))
    y = np.where(X[:, 2] + 0.5 * rng.normal(size=48) > 0, "a", "b")
    donor = np.arange(48) // 4
    scores, pred = ep_leave_group_out(ARDClassifier(), X, y, donor, criteria=("evidence",),
                                      preprocessor=StandardScaler())
    assert list(scores["method"]) == ["ARD-EP", "ARD-EP (evidence)"]
    assert (scores["n_groups"] == 12).all()
    Z = StandardScaler().fit_transform(X)
    proba = ARDClassifier().fit(Z, y).leave_group_out_proba(donor)
    first = pred[pred["method"] == "ARD-EP"]
    np.testing.assert_allclose(first[["prob_a", "prob_b"]].to_numpy(), proba)
    wrong = (first["predicted"] != first["label"]).sum()
    assert scores["errors"].iloc[0] == wrong
    assert scores["error_rate"].iloc[0] == pytest.approx(wrong / 48)


def test_calibrated_ece_matches_the_binomial_closed_form():
    # Two bins of constant confidence: the ECE of calibrated draws is
    # sum_b (n_b / n) |c_b - K_b / n_b| with K_b ~ Binomial(n_b, c_b), whose mean is a finite sum.
    from scipy.stats import binom

    from ardselect.model_selection import calibrated_ece

    levels = [(0.65, 30), (0.92, 50)]
    conf = np.concatenate([np.full(n_b, c) for c, n_b in levels])
    n = conf.size
    exact = sum(n_b / n * sum(binom.pmf(k, n_b, c) * abs(c - k / n_b) for k in range(n_b + 1))
                for c, n_b in levels)
    draws = 4000
    mean, q95 = calibrated_ece(conf, n_draws=draws, random_state=3)
    # Monte Carlo standard error of the mean, bounded by the sd of the sum of two bounded terms.
    sd = np.sqrt(sum((n_b / n) ** 2 * c * (1 - c) / n_b for c, n_b in levels))
    assert abs(mean - exact) < 4 * sd / np.sqrt(draws)
    assert q95 > mean
    assert calibrated_ece(conf, n_draws=50, random_state=1) == calibrated_ece(
        conf, n_draws=50, random_state=1)


def test_summary_separates_miscalibration_from_sampling_noise():
    # Labels drawn from the model's own probabilities: ECE within the calibrated range. The same
    # probabilities pushed towards certainty: ECE far above it, and a positive confidence gap.
    rng = np.random.default_rng(0)
    p1 = rng.uniform(0.05, 0.95, 600)
    y = np.where(rng.random(600) < p1, "b", "a")
    sharp = np.clip(0.5 + 1.6 * (p1 - 0.5), 0.001, 0.999)
    rows, preds = [], []
    for method, p in (("calibrated", p1), ("overconfident", sharp)):
        pred = np.where(p > 0.5, "b", "a")
        rows.append({"method": method, **{m: 0.0 for m in
                     ("error_rate", "genes", "log_loss", "brier", "ece", "log_loss_prior",
                      "fit_seconds")}})
        preds.append(pd.DataFrame({"method": method, "label": y, "predicted": pred,
                                   "prob_a": 1 - p, "prob_b": p}))
    s = summarize(pd.DataFrame(rows), pd.concat(preds)).set_index("method")
    cal, over = s.loc["calibrated"], s.loc["overconfident"]
    assert cal["ece"] < cal["ece_if_calibrated_q95"]
    assert over["ece"] > 2 * over["ece_if_calibrated_q95"]
    assert over["confidence_gap"] > 0.05 > abs(cal["confidence_gap"])


def _batch_on_another_scale(X, transform):
    """``X`` with every third sample replaced by ``transform`` of it (a batch of another kind)."""
    out = X.copy()
    out[::3] = transform(X[::3])
    return out


def test_evaluate_warns_about_samples_on_another_scale():
    import warnings

    from ardselect.datasets import leukaemia
    from ardselect.model import DataScaleWarning
    from ardselect.preprocessing import Preprocessor

    adata = leukaemia()
    raw = np.clip(np.asarray(adata.X, dtype=np.float64), 100.0, 16000.0)
    y = adata.obs["label"].astype(str).to_numpy()
    log2 = np.log2(raw)
    rng = np.random.default_rng(0)
    counts = rng.poisson(np.tile(rng.gamma(2.0, 20.0, size=200), (72, 1))).astype(float)

    def z_scored(block):
        return (block - block.mean(axis=0)) / np.where(block.std(axis=0) > 0, block.std(axis=0), 1)

    methods = {"L2": LogisticRegression(max_iter=200)}

    def run(X, log):
        return evaluate(X, y, methods, preprocessor=Preprocessor(log=log), n_splits=1)

    cases = {  # (training kind, the batch's kind): (data, the preprocessor's log)
        "raw vs log2": (_batch_on_another_scale(raw, np.log2), "log2"),
        "log2 vs log10": (_batch_on_another_scale(log2, lambda b: b * np.log10(2.0)), "none"),
        "log vs z-scored": (_batch_on_another_scale(log2, z_scored), "none"),
        "counts vs log1p": (_batch_on_another_scale(counts, np.log1p), "auto"),
    }
    for (X, log) in cases.values():
        with pytest.warns(DataScaleWarning, match=r"24 of the 72 samples \(patient_1, patient_4"):
            evaluate(X, y, methods, preprocessor=Preprocessor(log=log), n_splits=1,
                     sample_ids=adata.obs_names.to_numpy())
    # The same data, every sample of one kind: no warning.
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataScaleWarning)
        for X, log in ((raw, "log2"), (log2, "none"), (counts, "auto")):
            run(X, log)
