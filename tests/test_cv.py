"""criterion="cv": screened models, inner cross-validation and temperatures, against direct references."""

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.special import log_ndtr
from sklearn.feature_selection import f_classif
from sklearn.model_selection import RepeatedStratifiedKFold, StratifiedKFold
from sklearn.utils import check_random_state

from ardselect import ARDClassifier, ep_probit
from ardselect._cv import S_MIN, T_MIN, fit_calibration, fit_combine_temperature, fit_temperature
from ardselect._probit import ovr_log_proba
from ardselect._screen import INTERCEPT_ALPHA


def _standardized(rng, n=40, p=60, signal=(0, 1, 2)):
    X = rng.normal(size=(n, p))
    y = (X[:, list(signal)].sum(axis=1) + 0.8 * rng.normal(size=n) > 0).astype(int)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    return X, y


# ---------------------------------------------------------------------------- temperatures
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


def test_combine_temperature_matches_a_grid_search(seed):
    rng = np.random.default_rng(seed)
    n, k = 60, 4
    y_idx = rng.integers(0, k, size=n)
    z = rng.normal(size=(n, k)) - 1.0
    z[np.arange(n), y_idx] += 1.5  # informative, with noise
    temps = rng.uniform(0.3, 1.0, size=k)
    temp, ll = fit_combine_temperature(z, temps, y_idx)
    grid = np.linspace(T_MIN, 1.0, 4001)
    losses = [-np.mean(ovr_log_proba(z * temps, g)[np.arange(n), y_idx]) for g in grid]
    assert temp == pytest.approx(grid[int(np.argmin(losses))], abs=1e-3)
    assert ll == pytest.approx(min(losses), abs=1e-8)


# ---------------------------------------------------------------------------- screened models
def test_screened_models_are_shared_precision_ep_on_the_f_ranking():
    """A screened step is ep_probit on the k genes of largest F statistic, alpha shared."""
    rng = np.random.default_rng(3)
    X, y = _standardized(rng)
    clf = ARDClassifier(screen_sizes=(1, 3, 10)).fit(X, y)
    f_order = np.argsort(-f_classif(X, y)[0], kind="stable")
    path = clf.path_
    screened = path[path["action"] == "screen"]
    assert screened["n_basis"].tolist() == [1, 3, 10]
    # The screened models are recorded after the ARD steps, then the ML candidate.
    assert path["action"].iloc[-4:].tolist() == ["screen"] * 3 + ["ml"]
    assert "screen" not in set(path["action"].iloc[:-4])
    for step, k in zip(screened["step"], [1, 3, 10], strict=True):
        model = clf.at_step(np.array([step]))
        assert set(np.flatnonzero(model.get_support())) == set(f_order[:k])
        genes = np.sort(f_order[:k])
        ref = ep_probit(np.column_stack([X[:, genes], np.ones(len(y))]), y,
                        np.r_[np.full(k, clf.screen_alpha), INTERCEPT_ALPHA], tol=1e-10)
        np.testing.assert_allclose(model.coef_[0, genes], ref.mean[:-1], rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(model.intercept_[0], ref.mean[-1], rtol=1e-6, atol=1e-8)
        row = path[path["step"] == step].iloc[0]
        assert row["log_evidence"] == pytest.approx(ref.log_evidence, abs=1e-4)


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


@pytest.mark.parametrize("seed", range(6))
def test_fit_calibration_is_the_best_point_of_a_fine_grid(seed):
    """The joint (T, s) fit against brute force: the log-loss on a 300 x 101 grid of the box."""
    rng = np.random.default_rng(seed)
    n = 60
    t = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    m = t * rng.normal(1.0 + seed / 2, 1.5, size=n)  # from often wrong to nearly separable
    v = rng.gamma(1.0, 2.0 + seed, size=n)
    temp, scale, ll = fit_calibration(m, v, t)
    assert T_MIN <= temp <= 1.0
    assert S_MIN <= scale <= 1.0
    Tg, Sg = np.meshgrid(np.linspace(T_MIN, 1.0, 300), np.linspace(S_MIN, 1.0, 101))
    z = Tg[..., None] * (t * m) / np.sqrt(1.0 + Sg[..., None] * v)
    grid = -np.mean(log_ndtr(z), axis=-1)
    assert ll == pytest.approx(-np.mean(log_ndtr(temp * t * m / np.sqrt(1.0 + scale * v))),
                               rel=1e-12)
    assert ll <= grid.min() + 1e-9
    assert ll >= grid.min() - 2e-3  # a finer optimum, but not a different one


def test_fit_calibration_keeps_the_bayesian_predictive_when_nothing_asks_otherwise():
    t = np.array([1.0, -1.0, 1.0, -1.0])
    # No latent variance: s changes nothing, and ties go to s = 1.
    assert fit_calibration(np.array([1.0, -0.5, -0.2, 0.3]), np.zeros(4), t)[1] == 1.0
    # Confident and wrong half the time: the held-out answers ask for softening, not sharpening.
    temp, scale, _ = fit_calibration(np.array([3.0, 3.0, -3.0, -3.0]), np.full(4, 0.5), t)
    assert temp < 0.5
    assert scale == 1.0


def test_cv_log_loss_of_a_screened_model_equals_actual_refits():
    """The held-out latents of 'screen k' are those of ep_probit refitted on each fold by hand.

    As in a refit of the estimator on the fold, the genes are ranked by F and scaled to unit root
    mean square on the fold's training part (the shared prior precision is on that scale).
    """
    rng = np.random.default_rng(5)
    X, y = _standardized(rng, n=45, p=40)
    clf = ARDClassifier(screen_sizes=(2, 5), cv=3, cv_repeats=2, random_state=7).fit(X, y)
    t = np.tile(np.where(y == 1, 1.0, -1.0), clf.cv_repeats)  # every repeat's predictions
    for k in (2, 5):
        m, v = np.zeros(t.size), np.zeros(t.size)
        for tr, pooled in _folds(clf, y):
            te = pooled % len(y)
            genes = np.sort(np.argsort(-f_classif(X[tr], y[tr])[0], kind="stable")[:k])
            rms = np.sqrt(np.mean(X[tr][:, genes] ** 2, axis=0))  # the prior's scale
            A = np.column_stack([X[:, genes] / rms, np.ones(len(y))])
            res = ep_probit(A[tr], y[tr], np.r_[np.full(k, clf.screen_alpha), INTERCEPT_ALPHA],
                            tol=1e-10)
            m[pooled], v[pooled] = res.predict_latent(A[te])
        z = m / np.sqrt(1.0 + v)
        row = clf.cv_results_.set_index("candidate").loc[f"screen {k}"]
        assert row["cv_log_loss_raw"] == pytest.approx(-np.mean(log_ndtr(t * z)), abs=2e-4)
        assert row["cv_log_loss"] == pytest.approx(fit_temperature(z, t)[1], abs=2e-4)
        temp, scale, final = fit_calibration(m, v, t)
        assert row["temperature"] == pytest.approx(temp, abs=2e-3)
        assert row["variance_scale"] == pytest.approx(scale, abs=2e-3)
        assert row["cv_log_loss_final"] == pytest.approx(final, abs=2e-4)


def test_cv_log_loss_of_the_ard_model_equals_actual_refits():
    """The 'ard' candidate is the LOO-chosen model of an ARD path refitted on each fold."""
    rng = np.random.default_rng(8)
    X, y = _standardized(rng, n=36, p=25)
    clf = ARDClassifier(screen_sizes=(2,), cv=3, cv_repeats=2, random_state=1).fit(X, y)
    t = np.tile(np.where(y == 1, 1.0, -1.0), 2)
    z = np.zeros(t.size)
    for tr, pooled in _folds(clf, y):
        fold = ARDClassifier(criterion="loo").fit(X[tr], y[tr])
        m, v = fold._latent(X[pooled % len(y)])
        z[pooled] = m[:, 0] / np.sqrt(1.0 + v[:, 0])
    row = clf.cv_results_.set_index("candidate").loc["ard"]
    assert row["cv_log_loss_raw"] == pytest.approx(-np.mean(log_ndtr(t * z)), abs=1e-3)


def test_the_chosen_candidate_has_the_lowest_calibrated_cv_log_loss(seed):
    rng = np.random.default_rng(seed)
    X, y = _standardized(rng, n=40, p=30)
    clf = ARDClassifier(cv=3).fit(X, y)
    r = clf.cv_results_
    assert r["chosen"].sum() == 1
    best = r.loc[r["cv_log_loss"].idxmin()]
    assert bool(best["chosen"])
    assert clf.chosen_step_[0] == best["step"]
    assert clf.temperature_[0] == pytest.approx(best["temperature"])
    assert clf.variance_scale_[0] == pytest.approx(best["variance_scale"])
    assert (r["cv_log_loss"] <= r["cv_log_loss_raw"] + 1e-12).all()
    # The joint calibration includes the temperature alone (s = 1), so it is never worse.
    assert (r["cv_log_loss_final"] <= r["cv_log_loss"] + 1e-12).all()
    assert r["temperature"].between(T_MIN, 1.0).all()
    assert r["variance_scale"].between(S_MIN, 1.0).all()


def test_predictions_apply_the_temperature_and_the_variance_scale():
    rng = np.random.default_rng(2)
    X, y = _standardized(rng, n=40, p=30)
    clf = ARDClassifier(cv=3).fit(X, y)
    assert clf.variance_scale_[0] < 1.0  # so that the test sees it
    m, v = clf._latent(X)
    z = clf.temperature_[0] * m[:, 0] / np.sqrt(1.0 + clf.variance_scale_[0] * v[:, 0])
    np.testing.assert_allclose(clf.predict_proba(X)[:, 1], np.exp(log_ndtr(z)), rtol=1e-12)
    np.testing.assert_allclose(clf.decision_function(X), z, rtol=1e-12)
    # Another candidate keeps its own fitted temperature; a step the CV did not score has none.
    r = clf.cv_results_
    other = r[~r["chosen"]].iloc[0]
    at = clf.at_step(np.array([other["step"]]))
    assert at.temperature_[0] == other["temperature"]
    assert at.variance_scale_[0] == other["variance_scale"]
    unscored = clf.at_step(np.array([next(s for s in clf.path_["step"]
                                          if s not in set(r["step"]))]))
    assert unscored.temperature_[0] == 1.0
    assert unscored.variance_scale_[0] == 1.0


@pytest.mark.parametrize("s_min", [0.0, 0.25, 0.8])
def test_fit_calibration_bound_is_a_parameter(s_min):
    """With another lower bound on s: still the best point of a fine grid of the box."""
    rng = np.random.default_rng(11)
    t = np.where(rng.random(60) < 0.5, 1.0, -1.0)
    m = t * rng.normal(2.0, 1.0, size=60)  # right nearly always, with much latent variance
    v = rng.gamma(1.0, 6.0, size=60)
    temp, scale, ll = fit_calibration(m, v, t, s_min)
    assert s_min <= scale <= 1.0
    Tg, Sg = np.meshgrid(np.linspace(T_MIN, 1.0, 300), np.linspace(s_min, 1.0, 101))
    grid = -np.mean(log_ndtr(Tg[..., None] * (t * m) / np.sqrt(1.0 + Sg[..., None] * v)), axis=-1)
    assert grid.min() - 2e-3 <= ll <= grid.min() + 1e-9
    # The data ask for as much sharpening as allowed below the default bound.
    assert scale == pytest.approx(s_min, abs=0.02) if s_min < S_MIN else scale >= s_min
    # s_min = 1: the temperature alone.
    temp1, scale1, ll1 = fit_calibration(m, v, t, 1.0)
    assert scale1 == 1.0
    assert (temp1, ll1) == fit_temperature(m / np.sqrt(1.0 + v), t)


def test_variance_scale_min_bounds_the_fitted_scale():
    rng = np.random.default_rng(2)
    X, y = _standardized(rng, n=40, p=30)
    default = ARDClassifier(cv=3).fit(X, y)
    assert default.variance_scale_[0] < 1.0  # the folds ask for sharpening here
    full = ARDClassifier(cv=3, variance_scale_min=1.0).fit(X, y)
    assert (full.cv_results_["variance_scale"] == 1.0).all()
    assert full.variance_scale_[0] == 1.0
    # The choice is made on the temperature alone either way: the same model and genes.
    assert full.chosen_step_[0] == default.chosen_step_[0]
    np.testing.assert_array_equal(full.predict(X), default.predict(X))
    m, v = full._latent(X)
    z = full.temperature_[0] * m[:, 0] / np.sqrt(1.0 + v[:, 0])
    np.testing.assert_allclose(full.predict_proba(X)[:, 1], np.exp(log_ndtr(z)), rtol=1e-12)
    low = ARDClassifier(cv=3, variance_scale_min=0.1).fit(X, y)
    assert low.cv_results_["variance_scale"].between(0.1, 1.0).all()
    assert low.variance_scale_[0] <= default.variance_scale_[0]
    for bad in (-0.1, 1.5):
        with pytest.raises(ValueError, match="variance_scale_min"):
            ARDClassifier(variance_scale_min=bad).fit(X, y)


def test_same_seed_same_model_and_the_seed_moves_the_folds():
    rng = np.random.default_rng(4)
    X, y = _standardized(rng, n=40, p=30)
    a = ARDClassifier(cv=3, random_state=11).fit(X, y)
    b = ARDClassifier(cv=3, random_state=11).fit(X, y)
    c = ARDClassifier(cv=3, random_state=12).fit(X, y)
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
    assert a.cv_results_.equals(b.cv_results_)
    assert not np.allclose(a.cv_results_["cv_log_loss_raw"], c.cv_results_["cv_log_loss_raw"])


def test_multiclass_combination_temperature():
    rng = np.random.default_rng(6)
    X = rng.normal(size=(60, 20))
    y = np.digitize(X[:, 0] + 0.5 * rng.normal(size=60), [-0.5, 0.5])
    clf = ARDClassifier(cv=3).fit(X, y)
    assert T_MIN <= clf.combine_temperature_ <= 1.0
    assert clf.cv_results_.groupby("class")["chosen"].sum().tolist() == [1, 1, 1]
    m, v = clf._latent(X)
    z = clf.temperature_ * m / np.sqrt(1.0 + clf.variance_scale_ * v)
    expected = np.exp(ovr_log_proba(z, clf.combine_temperature_))
    np.testing.assert_allclose(clf.predict_proba(X), expected, rtol=1e-12)
    np.testing.assert_allclose(clf.predict_proba(X).sum(axis=1), 1.0)
    # Leaving the chosen models drops the combination temperature (it was fitted for them).
    assert clf.at_step(clf.choose_step("loo")).combine_temperature_ == 1.0 or np.array_equal(
        clf.choose_step("loo"), clf.chosen_step_)


def test_path_criteria_ignore_the_screened_models_and_match_criterion_loo():
    rng = np.random.default_rng(9)
    X, y = _standardized(rng, n=40, p=30)
    cv = ARDClassifier(cv=3).fit(X, y)
    loo = ARDClassifier(criterion="loo").fit(X, y)
    assert "screen" not in set(loo.path_["action"])
    ard_steps = cv.path_[~cv.path_["action"].isin(["screen", "ml"])].drop(columns="ep_sweeps")
    assert ard_steps.reset_index(drop=True).equals(loo.path_.drop(columns="ep_sweeps"))
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
        clf = ARDClassifier(cv=5).fit(X, y)
    assert clf.cv_results_["chosen"].sum() == 1


@pytest.mark.parametrize("sizes", [(), (0, 2), (1.5,), "abc"])
def test_bad_screen_sizes(sizes):
    rng = np.random.default_rng(0)
    X, y = _standardized(rng, n=20, p=5)
    with pytest.raises(ValueError, match="screen_sizes"):
        ARDClassifier(screen_sizes=sizes).fit(X, y)


# ---------------------------------------------------------------------------- the ML candidate
_ML = {"criterion": "loo", "inclusion_penalty": 0.0, "alpha_min": 1.0}


def test_the_ml_candidate_is_the_loo_model_of_the_penalty_free_capped_path():
    """On the full training set, 'ard-ml' is the LOO model of the penalty-free, floor-1 path.

    That is the model criterion='loo' picks on a path with no inclusion penalty and the precision
    floor 1, refitted as its own estimator.
    """
    rng = np.random.default_rng(4)
    X, y = _standardized(rng, n=50, p=80, signal=range(8))
    clf = ARDClassifier(cv=3).fit(X, y)
    row = clf.cv_results_.set_index("candidate").loc["ard-ml"]
    assert clf.path_.set_index("step").loc[row["step"], "action"] == "ml"
    ref = ARDClassifier(**_ML).fit(X, y)
    ml = clf.at_step(np.array([row["step"]]))
    np.testing.assert_array_equal(ml.get_support(), ref.get_support())
    np.testing.assert_allclose(ml.coef_, ref.coef_, rtol=1e-6, atol=1e-9)
    assert row["n_genes"] == ref.get_support().sum()


def test_cv_log_loss_of_the_ml_candidate_equals_actual_refits():
    rng = np.random.default_rng(6)
    X, y = _standardized(rng, n=45, p=60, signal=range(6))
    clf = ARDClassifier(screen_sizes=(2,), cv=3, cv_repeats=2, random_state=2).fit(X, y)
    t = np.tile(np.where(y == 1, 1.0, -1.0), 2)
    z = np.zeros(t.size)
    genes = []
    for tr, pooled in _folds(clf, y):
        fold = ARDClassifier(**_ML).fit(X[tr], y[tr])
        m, v = fold._latent(X[pooled % len(y)])
        z[pooled] = m[:, 0] / np.sqrt(1.0 + v[:, 0])
        genes.append(fold.get_support().sum())
    row = clf.cv_results_.set_index("candidate").loc["ard-ml"]
    assert row["cv_log_loss_raw"] == pytest.approx(-np.mean(log_ndtr(t * z)), abs=1e-3)
    assert row["cv_n_genes"] == pytest.approx(np.mean(genes))


def test_without_the_ml_candidate_the_other_candidates_are_unchanged():
    rng = np.random.default_rng(9)
    X, y = _standardized(rng, n=40, p=50)
    on = ARDClassifier(cv=3).fit(X, y)
    off = ARDClassifier(cv=3, ml_candidate=False).fit(X, y)
    assert "ard-ml" not in set(off.cv_results_["candidate"])
    assert "ml" not in set(off.path_["action"])
    cols = ["candidate", "step", "n_genes", "cv_n_genes", "cv_log_loss_raw", "cv_log_loss",
            "temperature"]
    rest = on.cv_results_[on.cv_results_["candidate"] != "ard-ml"][cols].reset_index(drop=True)
    pd.testing.assert_frame_equal(rest, off.cv_results_[cols].reset_index(drop=True))
    # Other criteria do not run the second path.
    assert "ml" not in set(ARDClassifier(criterion="loo").fit(X, y).path_["action"])


@pytest.mark.parametrize("patience", [1, 3, 10])
def test_loo_stall_never_changes_the_loo_choice_it_could_see(seed, patience):
    """_LooStall never ends a path before the LOO choice it would make.

    It ends a path at its first zero-LOO step (the LOO choice of the whole path) or ``patience``
    steps after its last new minimum (the LOO choice of the steps so far).
    """
    from ardselect._classifier import _LooStall
    from ardselect._criteria import choose_step

    rng = np.random.default_rng(seed)
    n = 20
    loo = rng.integers(0, 8, size=60) / (2 * n) + rng.normal(scale=1e-14, size=60)  # float noise
    stop = _LooStall(patience)
    end = next((k for k, v in enumerate(loo) if stop({"loo_error": v})), None)
    pick = lambda v: choose_step(np.zeros(v.size), v, np.zeros(v.size), "loo")  # noqa: E731
    if end is None:  # never stopped: no zero, and a new minimum at least every `patience` steps
        assert np.round(loo, 12).min() > 0
        return
    seen = loo[: end + 1]
    first_min = pick(seen)
    if np.round(loo[end], 12) <= 0:
        assert first_min == end  # the first zero: no later step can be chosen
        assert pick(loo) == end  # the whole path's choice
    else:
        assert end - first_min == patience  # stopped exactly `patience` steps after the minimum
        assert np.all(np.round(seen[first_min + 1:], 12) >= np.round(seen[first_min], 12))


def test_the_ml_path_ends_within_patience_steps_of_its_best_loo_model(monkeypatch):
    """The ML candidate's path ends at most `patience` steps after its first smallest LOO error.

    On dense, non-separable data a penalty-free path would keep adding weakly relevant genes.
    """
    from ardselect import _sequential
    from ardselect._classifier import ML_ALPHA_MIN

    ml_paths = []
    run = _sequential.SequentialPath.run

    def recording(self):
        out = run(self)
        if self.alpha_min == ML_ALPHA_MIN:
            ml_paths.append(np.array([s.stats["loo_error"] for s in self.steps]))
        return out

    monkeypatch.setattr(_sequential.SequentialPath, "run", recording)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 150))
    w = np.zeros(150)
    w[:15] = rng.normal(size=15)
    y = (X @ w + rng.normal(size=400) > 0).astype(int)
    ARDClassifier(cv=2, patience=10).fit(X, y)
    assert len(ml_paths) == 3  # the full data and two folds
    for loo in ml_paths:
        v = np.round(loo, 12)
        first_min = int(np.argmin(v))
        assert v.min() > 0  # not separable: only the stall can end it early
        assert len(v) - 1 <= first_min + 10
    # Without the stall (patience=0) the same paths run on, past their best LOO model by far.
    ml_paths.clear()
    ARDClassifier(cv=2, patience=0).fit(X, y)
    assert max(len(v) - 1 - int(np.argmin(np.round(v, 12))) for v in ml_paths) > 10
