"""criterion="cv": the frontier along the path, its choice and calibration, against direct references."""

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.special import log_ndtr
from sklearn.model_selection import RepeatedStratifiedKFold, StratifiedKFold
from sklearn.utils import check_random_state

from ardselect import ARDClassifier
from ardselect.estimators._calibration import (
    OFFSET_MAX,
    S_MIN,
    T_MIN,
    fit_calibration,
    fit_combine_temperature,
    fit_platt,
    fit_temperature,
)
from ardselect.estimators._cv import choose_size, make_folds
from ardselect.numerics._probit import moderated_latent, ovr_log_proba


def _standardized(rng, n=40, p=60, signal=(0, 1, 2), noise=0.8):
    X = rng.normal(size=(n, p))
    y = (X[:, list(signal)].sum(axis=1) + noise * rng.normal(size=n) > 0).astype(int)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    return X, y


# ---------------------------------------------------------------------------- calibration
def test_temperature_matches_a_grid_search(seed):
    rng = np.random.default_rng(seed)
    t = np.where(rng.random(50) < 0.5, 1.0, -1.0)
    z = 2.5 * t + rng.normal(scale=2.0, size=50)  # overconfident, often wrong
    temp, ll = fit_temperature(z, t)
    grid = np.linspace(T_MIN, 1.0, 20001)
    losses = [-np.mean(log_ndtr(g * t * z)) for g in grid]
    assert temp == pytest.approx(grid[int(np.argmin(losses))], abs=1e-3)
    assert ll == pytest.approx(min(losses), abs=1e-8)
    assert T_MIN <= temp < 1.0


@pytest.mark.parametrize("scale", [1e-3, 1e3, 1e5])
def test_temperature_is_finite_and_optimal_at_extreme_scales(scale):
    """Tiny and huge held-out latents (a flat model; a confidently wrong one) keep the search finite."""
    rng = np.random.default_rng(9)
    t = np.where(rng.random(40) < 0.5, 1.0, -1.0)
    z = scale * (t + rng.normal(scale=1.5, size=40))
    temp, ll = fit_temperature(z, t)
    grid = np.linspace(T_MIN, 1.0, 20001)
    losses = [-np.mean(log_ndtr(g * t * z)) for g in grid]
    assert np.isfinite(temp)
    assert np.isfinite(ll)
    assert ll <= min(losses) + 1e-9 * max(1.0, min(losses))


def test_temperature_never_sharpens_separable_answers():
    t = np.array([1.0, 1.0, -1.0, -1.0, 1.0])
    z = np.array([0.3, 0.1, -0.2, -0.5, 0.4])  # all right but timid: a larger T would fit better
    temp, ll = fit_temperature(z, t)
    assert temp == 1.0
    assert ll == pytest.approx(-np.mean(log_ndtr(t * z)))


def test_platt_offset_and_temperature_match_a_grid_search(seed):
    rng = np.random.default_rng(seed)
    t = np.where(rng.random(60) < 0.3, 1.0, -1.0)  # unbalanced
    z = 1.5 * t + rng.normal(scale=2.0, size=60)
    a, temp, ll = fit_platt(z, t)
    A, T = np.meshgrid(np.linspace(-3.0, 3.0, 601), np.linspace(T_MIN, 1.0, 397))
    grid = -np.mean(log_ndtr(t * (A[..., None] + T[..., None] * z)), axis=-1)
    assert ll <= grid.min() + 1e-9
    assert ll >= grid.min() - 1e-3  # the grid is fine enough to come this close
    assert T_MIN <= temp <= 1.0
    assert abs(a) <= OFFSET_MAX


def test_an_uninformative_model_is_calibrated_onto_the_class_frequency():
    # Held-out latents that say nothing: T goes to its floor and the offset carries the base
    # rate, so the calibrated probability is the class frequency, not one half.
    rng = np.random.default_rng(3)
    t = np.where(rng.random(400) < 0.25, 1.0, -1.0)
    z = rng.normal(scale=2.0, size=400)
    a, temp, ll = fit_platt(z, t)
    assert temp < 0.05  # flattened (chance correlations in 400 samples keep it off the floor)
    p = np.exp(log_ndtr(a + temp * z))
    assert p.mean() == pytest.approx(np.mean(t > 0), abs=0.01)
    prior = np.mean(t > 0)
    assert ll == pytest.approx(-(prior * np.log(prior) + (1 - prior) * np.log(1 - prior)),
                               abs=5e-3)


def test_combine_temperature_matches_a_grid_search(seed):
    rng = np.random.default_rng(seed)
    n, k = 60, 4
    y_idx = rng.integers(0, k, size=n)
    z = rng.normal(size=(n, k)) - 1.0
    z[np.arange(n), y_idx] += 1.5  # informative, with noise
    temp, ll = fit_combine_temperature(z, y_idx)
    grid = np.linspace(T_MIN, 1.0, 4001)
    losses = [-np.mean(ovr_log_proba(z, g)[np.arange(n), y_idx]) for g in grid]
    assert temp == pytest.approx(grid[int(np.argmin(losses))], abs=1e-3)
    assert ll == pytest.approx(min(losses), abs=1e-8)


def _calibration_grid(m, v, t, s_min):
    """Held-out log-loss on a grid of (s, T), the offset optimised in each cell."""
    best = np.inf
    for s in np.linspace(s_min, 1.0, 21):
        z = moderated_latent(m, v, variance_scale=s)
        for temp in np.linspace(T_MIN, 1.0, 60):
            A = np.linspace(-2.0, 2.0, 201)
            best = min(best, float(np.min(-np.mean(log_ndtr(t * (A[:, None] + temp * z)),
                                                   axis=1))))
    return best


@pytest.mark.parametrize("seed", range(4))
def test_fit_calibration_is_the_best_point_of_a_fine_grid(seed):
    rng = np.random.default_rng(seed)
    t = np.where(rng.random(60) < 0.5, 1.0, -1.0)
    m = t * rng.normal(1.5, 1.5, size=60)
    v = rng.gamma(1.0, 4.0, size=60)
    cal, ll = fit_calibration(m, v, t)
    assert T_MIN <= cal.temperature <= 1.0
    assert S_MIN <= cal.variance_scale <= 1.0
    grid = _calibration_grid(m, v, t, S_MIN)
    assert grid - 3e-3 <= ll <= grid + 1e-9
    z = cal.offset + moderated_latent(m, v, cal.temperature, cal.variance_scale)
    assert ll == pytest.approx(-np.mean(log_ndtr(t * z)), abs=1e-12)


def test_fit_calibration_keeps_the_bayesian_predictive_when_nothing_asks_otherwise():
    t = np.array([1.0, -1.0, 1.0, -1.0])
    # No latent variance: the variance scale changes nothing and stays 1.
    assert fit_calibration(np.array([1.0, -0.5, -0.2, 0.3]), np.zeros(4), t)[0].variance_scale == 1.0


@pytest.mark.parametrize("s_min", [0.0, 0.25, 0.8, 1.0])
def test_fit_calibration_bound_is_a_parameter(s_min):
    rng = np.random.default_rng(11)
    t = np.where(rng.random(60) < 0.5, 1.0, -1.0)
    m = t * rng.normal(2.0, 1.0, size=60)  # right nearly always, with much latent variance
    v = rng.gamma(1.0, 6.0, size=60)
    cal, ll = fit_calibration(m, v, t, s_min)
    assert s_min <= cal.variance_scale <= 1.0
    grid = _calibration_grid(m, v, t, s_min)
    assert grid - 3e-3 <= ll <= grid + 1e-9
    if s_min == 1.0:  # the offset and temperature alone
        assert cal.variance_scale == 1.0
        assert ll == pytest.approx(fit_platt(m / np.sqrt(1.0 + v), t)[2], abs=1e-12)


# ---------------------------------------------------------------------------- the choice
def _records(means, ses):
    return [{"n_genes": k, "cv_log_loss": m, "cv_log_loss_se": s}
            for k, m, s in zip(range(len(means)), means, ses, strict=True)]


def test_choose_size_min_and_one_standard_error():
    recs = _records([0.70, 0.40, 0.30, 0.28, 0.29], [0.0, 0.05, 0.04, 0.03, 0.03])
    losses = {k: np.full(50, r["cv_log_loss"]) + np.linspace(-0.1, 0.1, 50)
              for k, r in enumerate(recs)}
    assert choose_size(recs, losses, "min") == 3
    assert choose_size(recs, losses, "1se") == 2  # 0.30 <= 0.28 + 0.03
    ties = _records([0.5, 0.3, 0.3], [0.0, 0.1, 0.1])
    assert choose_size(ties, {k: np.linspace(0, 1, 9) * 0 + r["cv_log_loss"] + np.arange(9) * 0.01
                              for k, r in enumerate(ties)}, "min") == 1  # the smaller size


def test_a_size_with_genes_must_beat_the_intercept_alone_by_a_paired_standard_error():
    rng = np.random.default_rng(0)
    base = rng.uniform(0.3, 1.0, size=80)
    for gain, keeps in ((0.002, False), (0.2, True)):
        d = -gain + rng.normal(scale=0.05, size=80)
        losses = {0: base, 1: base + d}
        recs = [{"n_genes": 0, "cv_log_loss": base.mean(), "cv_log_loss_se": 0.01},
                {"n_genes": 1, "cv_log_loss": (base + d).mean(), "cv_log_loss_se": 0.01}]
        assert choose_size(recs, losses, "min") == (1 if keeps else 0)
        assert choose_size(recs, losses, "min", null_se=None) == int(recs[1]["cv_log_loss"]
                                                                     < recs[0]["cv_log_loss"])


# ---------------------------------------------------------------------------- the inner CV
def _folds(clf, y):
    """The inner folds, each with the offset of its repeat in the pooled held-out predictions."""
    seed = check_random_state(clf.random_state).randint(np.iinfo(np.int32).max)
    splits = RepeatedStratifiedKFold(n_splits=clf.cv, n_repeats=clf.cv_repeats,
                                     random_state=seed).split(np.zeros(len(y)), y)
    return [(tr, te + f // clf.cv * len(y)) for f, (tr, te) in enumerate(splits)]


def test_one_repeat_is_one_shuffled_stratified_k_fold():
    # Repeat 1 of the inner CV is the plain StratifiedKFold of the seed; later repeats reshuffle.
    y = np.repeat([0, 1, 2], [9, 11, 7])
    seed = check_random_state(3).randint(np.iinfo(np.int32).max)
    plain = list(StratifiedKFold(4, shuffle=True, random_state=seed).split(np.zeros(27), y))
    rep = _folds(ARDClassifier(cv=4, cv_repeats=3, random_state=3), y)
    assert len(rep) == 12
    for (tr, te), (tr2, te2) in zip(plain, rep[:4], strict=True):
        np.testing.assert_array_equal(tr, tr2)
        np.testing.assert_array_equal(te, te2)
    for r in range(3):  # each repeat holds every sample out exactly once
        held = np.sort(np.concatenate([te for _, te in rep[4 * r:4 * r + 4]]))
        np.testing.assert_array_equal(held, np.arange(27) + 27 * r)
    assert not all(np.array_equal(a[1] + 27, b[1]) for a, b in zip(rep[:4], rep[4:8], strict=True))


def _size_step(clf, k, problem=0):
    """The path step of the ``k``-gene model: the step of most evidence among those of k genes."""
    path = clf.path_[clf.path_["class"] == clf._fits[problem].positive_class]
    rows = path[path["n_basis"] == k]
    return int(rows.loc[rows["log_evidence"].idxmax(), "step"])


def test_the_frontier_is_the_held_out_score_of_each_size_refitted_by_hand():
    """Each size's cv_log_loss is that of the k-gene model of a path refitted on every fold.

    The reference refits the estimator itself on each fold's training part (its path and pruning
    tail), takes the step of most evidence among its k-gene steps, predicts the held-out part,
    and calibrates the pooled latents (offset and temperature) as :func:`fit_platt` does.
    """
    rng = np.random.default_rng(8)
    X, y = _standardized(rng, n=45, p=30)
    clf = ARDClassifier(cv=3, cv_repeats=2, random_state=1).fit(X, y)
    t = np.tile(np.where(y == 1, 1.0, -1.0), 2)
    folds = [ARDClassifier(cv=3, random_state=1).fit(X[tr], y[tr]) for tr, _ in _folds(clf, y)]
    front = clf.cv_results_
    assert front["n_genes"].is_monotonic_increasing
    for _, row in front.iterrows():
        k = int(row["n_genes"])
        z = np.zeros(t.size)
        for fold, (_, pooled) in zip(folds, _folds(clf, y), strict=True):
            model = fold.at_step(_size_step(fold, k))
            assert model.get_support().sum() == k
            m, v = model._latent(X[pooled % len(y)])
            z[pooled] = m[:, 0] / np.sqrt(1.0 + v[:, 0])
        a, temp, ll = fit_platt(z, t)
        assert row["cv_log_loss"] == pytest.approx(ll, abs=2e-3)
        assert row["cv_error"] == pytest.approx(np.mean(t * (a + temp * z) <= 0), abs=0.03)
        # And the size's step on the full path is its k-gene step of most evidence.
        assert row["step"] == _size_step(clf, k)


def test_a_holdout_is_the_first_fold_and_its_frontier_is_refitted_by_hand():
    """``cv="holdout"``: one split holding out the first of five stratified folds.

    The frontier is scored on those held-out samples only, each size's loss equal to that of the
    k-gene model of the path refitted by hand on the split's training part.
    """
    rng = np.random.default_rng(4)
    X, y = _standardized(rng, n=50, p=30)
    clf = ARDClassifier(cv="holdout", random_state=2).fit(X, y)
    first = _folds(ARDClassifier(cv=5, random_state=2), y)[0]
    folds = make_folds(y, 5, 1, 2, holdout=True)
    assert len(folds) == 1
    tr, te, off = folds[0]
    np.testing.assert_array_equal(te, first[1])
    np.testing.assert_array_equal(tr, first[0])
    assert off == 0
    assert abs(te.size - 10) <= 1
    assert np.bincount(y[te]).min() >= 4  # stratified: both classes held out
    t = np.where(y[te] == 1, 1.0, -1.0)
    fold = ARDClassifier(cv=3, random_state=2).fit(X[tr], y[tr])
    front = clf.cv_results_
    assert len(front) > 3
    for _, row in front.iterrows():
        k = int(row["n_genes"])
        m, v = fold.at_step(_size_step(fold, k))._latent(X[te])
        z = m[:, 0] / np.sqrt(1.0 + v[:, 0])
        a, temp, ll = fit_platt(z, t)
        assert row["cv_log_loss"] == pytest.approx(ll, abs=2e-3)
        assert row["cv_error_se"] == pytest.approx(
            np.sqrt(row["cv_error"] * (1 - row["cv_error"]) / te.size))


def test_a_holdout_by_group_keeps_every_group_on_one_side():
    rng = np.random.default_rng(5)
    X, y = _standardized(rng, n=60, p=20)
    groups = np.repeat(np.arange(12), 5).astype(str)
    folds = make_folds(y, 5, 2, 0, groups, holdout=True)
    assert len(folds) == 2  # one split per repeat
    for r, (tr, te, off) in enumerate(folds):
        assert off == r * y.size
        assert not set(groups[tr]) & set(groups[te])
        assert 0 < te.size < y.size / 2
    clf = ARDClassifier(cv="holdout", random_state=0).fit(X, y, groups=groups)
    table = clf.cv_groups_
    held = set(groups[folds[0][1]])
    assert set(table["group"]) == held  # only the held-out groups are scored
    assert (table["n_samples"] == 5).all()


def test_the_chosen_size_has_the_lowest_cv_log_loss_and_its_calibration(seed):
    rng = np.random.default_rng(seed)
    X, y = _standardized(rng, n=40, p=30)
    clf = ARDClassifier(cv=3).fit(X, y)
    r = clf.cv_results_
    assert r["chosen"].sum() == 1
    best = r.loc[r["cv_log_loss"].idxmin()]
    chosen = r[r["chosen"]].iloc[0]
    # The lowest, unless no size with genes beats the intercept alone clearly enough.
    assert chosen["n_genes"] in (best["n_genes"], 0)
    assert clf.chosen_step_[0] == chosen["step"]
    assert clf.get_support().sum() == chosen["n_genes"]
    assert clf.temperature_[0] == pytest.approx(chosen["temperature"])
    assert clf.variance_scale_[0] == pytest.approx(chosen["variance_scale"])
    assert clf.calibration_offset_[0] == pytest.approx(chosen["offset"])
    # The full calibration includes (a, T) alone (s = 1), so it is never worse.
    assert (r["cv_log_loss_final"] <= r["cv_log_loss"] + 1e-9).all()
    assert r["temperature"].between(T_MIN, 1.0).all()
    assert r["variance_scale"].between(S_MIN, 1.0).all()
    one_se = r[r["one_se"]].iloc[0]
    assert one_se["cv_log_loss"] <= best["cv_log_loss"] + best["cv_log_loss_se"] + 1e-12
    assert (r.loc[r["n_genes"] < one_se["n_genes"], "cv_log_loss"]
            > best["cv_log_loss"] + best["cv_log_loss_se"]).all()


#: The frontier's held-out scores (the calibration columns depend on which sizes are kept).
_FRONT = ["class", "n_genes", "step", "cv_log_loss", "cv_log_loss_se", "cv_error", "cv_error_se"]


def test_cv_rule_1se_takes_the_smallest_size_within_one_standard_error():
    rng = np.random.default_rng(2)
    X, y = _standardized(rng, n=60, p=40, signal=range(6))
    lo = ARDClassifier(cv=3).fit(X, y)
    se = ARDClassifier(cv=3, cv_rule="1se").fit(X, y)
    pd.testing.assert_frame_equal(lo.cv_results_[_FRONT], se.cv_results_[_FRONT])
    r = se.cv_results_
    assert r.loc[r["chosen"], "n_genes"].iloc[0] == r.loc[r["one_se"], "n_genes"].iloc[0]
    assert se.get_support().sum() <= lo.get_support().sum()


@pytest.mark.parametrize("budget", [3, 10, 13])
def test_max_genes_is_never_exceeded_and_is_the_best_size_under_the_cap(budget):
    rng = np.random.default_rng(5)
    X, y = _standardized(rng, n=60, p=50, signal=range(12), noise=0.3)
    free = ARDClassifier(cv=3).fit(X, y)
    capped = ARDClassifier(cv=3, max_genes=budget).fit(X, y)
    assert capped.get_support().sum() <= budget
    r = capped.cv_results_
    under = r[r["n_genes"] <= budget]
    best = under.loc[under["cv_log_loss"].idxmin(), "n_genes"]
    assert r.loc[r["chosen"], "n_genes"].iloc[0] in (best, 0)
    if budget in set(free.cv_results_["n_genes"]):
        # A budget on the frontier's grid: the same paths and frontier, only the choice is cut.
        pd.testing.assert_frame_equal(free.cv_results_[_FRONT], r[_FRONT])
    else:
        assert budget in set(r["n_genes"])  # the budget itself is a size of the frontier
    for crit in ("loo", "evidence"):  # the paper's criteria respect the budget too
        paper = ARDClassifier(criterion=crit, max_genes=budget).fit(X, y)
        assert paper.get_support().sum() <= budget


def test_pure_noise_gives_the_intercept_alone_and_the_class_frequency():
    rng = np.random.default_rng(7)
    X = rng.normal(size=(60, 200))
    y = (rng.random(60) < 0.3).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # scikit-learn: no feature selected
        clf = ARDClassifier().fit(X, y)
    assert clf.get_support().sum() == 0
    assert clf.cv_results_.loc[clf.cv_results_["chosen"], "n_genes"].iloc[0] == 0
    p = clf.predict_proba(rng.normal(size=(5, 200)))[:, 1]
    np.testing.assert_allclose(p, p[0])
    assert p[0] == pytest.approx(y.mean(), abs=0.03)


def test_predictions_apply_the_calibration():
    rng = np.random.default_rng(2)
    X, y = _standardized(rng, n=40, p=30)
    clf = ARDClassifier(cv=3).fit(X, y)
    m, v = clf._latent(X)
    z = clf.calibration_offset_[0] + clf.temperature_[0] * m[:, 0] / np.sqrt(
        1.0 + clf.variance_scale_[0] * v[:, 0])
    np.testing.assert_allclose(clf.predict_proba(X)[:, 1], np.exp(log_ndtr(z)), rtol=1e-12)
    np.testing.assert_allclose(clf.decision_function(X), z, rtol=1e-12)
    # Another size keeps its own fitted calibration; a step the CV did not score has none.
    r = clf.cv_results_
    other = r[~r["chosen"]].iloc[-1]
    at = clf.at_step(np.array([other["step"]]))
    assert at.temperature_[0] == other["temperature"]
    assert at.calibration_offset_[0] == other["offset"]
    unscored = clf.at_step(np.array([next(s for s in clf.path_["step"]
                                          if s not in set(r["step"]))]))
    assert unscored.temperature_[0] == 1.0
    assert unscored.variance_scale_[0] == 1.0
    assert unscored.calibration_offset_[0] == 0.0


def test_variance_scale_min_bounds_the_fitted_scale():
    rng = np.random.default_rng(2)
    X, y = _standardized(rng, n=40, p=30)
    full = ARDClassifier(cv=3, variance_scale_min=1.0).fit(X, y)
    assert (full.cv_results_["variance_scale"] == 1.0).all()
    default = ARDClassifier(cv=3).fit(X, y)
    # The choice is made on the offset and temperature alone either way: the same model.
    assert full.chosen_step_[0] == default.chosen_step_[0]
    low = ARDClassifier(cv=3, variance_scale_min=0.1).fit(X, y)
    assert low.cv_results_["variance_scale"].between(0.1, 1.0).all()
    for bad in (-0.1, 1.5):
        with pytest.raises(ValueError, match="variance_scale_min"):
            ARDClassifier(variance_scale_min=bad).fit(X, y)


def test_cv_frequency_is_the_share_of_fold_models_of_the_chosen_size_holding_the_gene():
    rng = np.random.default_rng(4)
    X, y = _standardized(rng, n=45, p=30, signal=range(5))
    clf = ARDClassifier(cv=3, random_state=2).fit(X, y)
    k = int(clf.get_support().sum())
    counts = np.zeros(30)
    for tr, _ in _folds(clf, y):
        fold = ARDClassifier(cv=3, random_state=2).fit(X[tr], y[tr])
        counts += fold.at_step(_size_step(fold, k)).get_support()
    table = clf.ranked_features().set_index("feature")
    np.testing.assert_allclose(table.loc[[f"x{j}" for j in range(30)], "cv_frequency"],
                               counts / 3)


def test_same_seed_same_model_and_the_seed_moves_the_folds():
    rng = np.random.default_rng(4)
    X, y = _standardized(rng, n=40, p=30)
    a = ARDClassifier(cv=3, random_state=11).fit(X, y)
    b = ARDClassifier(cv=3, random_state=11).fit(X, y)
    c = ARDClassifier(cv=3, random_state=12).fit(X, y)
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
    assert a.cv_results_.equals(b.cv_results_)
    ra, rc = a.cv_results_["cv_log_loss"], c.cv_results_["cv_log_loss"]
    assert len(ra) != len(rc) or not np.allclose(ra, rc)


def test_multiclass_combination_temperature():
    rng = np.random.default_rng(6)
    X = rng.normal(size=(60, 20))
    y = np.digitize(X[:, 0] + 0.5 * rng.normal(size=60), [-0.5, 0.5])
    clf = ARDClassifier(cv=3).fit(X, y)
    assert T_MIN <= clf.combine_temperature_ <= 1.0
    assert clf.cv_results_.groupby("class")["chosen"].sum().tolist() == [1, 1, 1]
    m, v = clf._latent(X)
    z = clf.calibration_offset_ + clf.temperature_ * m / np.sqrt(1.0 + clf.variance_scale_ * v)
    expected = np.exp(ovr_log_proba(z, clf.combine_temperature_))
    np.testing.assert_allclose(clf.predict_proba(X), expected, rtol=1e-12)
    np.testing.assert_allclose(clf.predict_proba(X).sum(axis=1), 1.0)
    # Leaving the chosen models drops the combination temperature (it was fitted for them).
    other = clf.at_step(clf.choose_step("evidence"))
    assert other.combine_temperature_ == 1.0 or np.array_equal(clf.choose_step("evidence"),
                                                                clf.chosen_step_)


def test_shared_genes_choose_one_size_for_every_class():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(75, 25))
    y = np.repeat([0, 1, 2], 25)
    X[y == 0, 0] += 2.0
    X[y == 1, 1] += 2.0
    X[y == 2, 2] += 2.0
    clf = ARDClassifier(cv=3, multiclass="shared").fit(X, y)
    r = clf.cv_results_
    sizes = r.loc[r["chosen"], "n_genes"].to_numpy()
    assert np.unique(sizes).size == 1
    support = np.isfinite(clf.alpha_)
    assert (support == support[0]).all()  # the same genes in every class
    assert support[0, :3].all()


def test_path_criteria_read_the_path_proper_not_its_pruning_tail():
    rng = np.random.default_rng(9)
    X, y = _standardized(rng, n=40, p=30)
    cv = ARDClassifier(cv=3).fit(X, y)
    loo = ARDClassifier(criterion="loo").fit(X, y)
    assert "prune" not in set(loo.path_["action"])
    proper = cv.path_.iloc[:cv._fits[0].n_path].drop(columns="ep_sweeps")
    pd.testing.assert_frame_equal(proper.reset_index(drop=True),
                                  loo.path_.drop(columns="ep_sweeps"))
    for crit in ("loo", "loo-prob", "evidence"):
        assert cv.choose_step(crit)[0] == loo.choose_step(crit)[0]
    assert loo.temperature_[0] == 1.0
    with pytest.raises(ValueError, match="fit with criterion='cv'"):
        loo.choose_step("cv")


def test_a_class_too_small_for_folds_falls_back_to_loo():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(20, 10))
    y = np.array([0] * 19 + [1])
    X[19, 0] += 5.0
    with pytest.warns(UserWarning, match="criterion='loo' instead"):
        clf = ARDClassifier(cv=3).fit(X, y)
    assert clf.chosen_step_[0] == clf.choose_step("loo")[0]
    assert clf.temperature_[0] == 1.0


def test_folds_shrink_to_the_smallest_class():
    rng = np.random.default_rng(1)
    X, y = _standardized(rng, n=30, p=10)
    y[:] = 0
    y[:3] = 1  # three of one class: at most three folds
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", "No features were selected", UserWarning)
        clf = ARDClassifier(cv=5).fit(X, y)
    assert clf.cv_results_.groupby("class")["chosen"].sum().tolist() == [1]
