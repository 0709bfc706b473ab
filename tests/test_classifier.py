"""ARDClassifier: contract, properties and recovery."""

import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from scipy.stats import norm
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from ardselect import ARDClassifier
from ardselect.exceptions import DataError, LabelError


def paper_synthetic(seed, n_train=30, n_test=0, d=200, k=10):
    """Qi et al. (2004) sec. 4: 10 of 200 weights from N(-0.5, 1), the rest 0; labels from the sign."""
    rng = np.random.default_rng(seed)
    w = np.zeros(d)
    relevant = rng.choice(d, size=k, replace=False)
    w[relevant] = rng.normal(-0.5, 1.0, size=k)
    X = rng.normal(size=(n_train + n_test, d))
    y = (X @ w > 0).astype(int)
    return X[:n_train], y[:n_train], X[n_train:], y[n_train:], set(relevant.tolist())


def two_gene_data(seed=0, n=60, d=30):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = (X[:, 3] - X[:, 7] + 0.3 * rng.normal(size=n) > 0).astype(int)
    return X, y


@parametrize_with_checks([ARDClassifier(max_steps=30, cv=2)])
def test_sklearn_compatible(estimator, check):
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    with warnings.catch_warnings():
        # max_steps=30 and two folds keep the checks fast (they test the API, not the choice);
        # the path is then cut short on purpose.
        warnings.simplefilter("ignore", ConvergenceWarning)
        # Some checks fit noise: the honest model is then the intercept alone, and scikit-learn's
        # selector base warns that transform keeps no feature.
        warnings.filterwarnings("ignore", "No features were selected", UserWarning)
        check(estimator)


def test_fitted_attributes_and_path():
    X, y = two_gene_data()
    clf = ARDClassifier(criterion="loo").fit(X, y)
    p = clf.path_
    assert list(p.columns[:8]) == ["class", "step", "action", "feature", "n_basis",
                                   "log_evidence", "loo_error", "loo_prob_error"]
    assert p["step"].tolist() == list(range(len(p)))
    assert p["action"].iloc[0] == "init"
    assert set(p["action"].iloc[1:]) <= {"add", "delete", "reestimate"}
    assert clf.coef_.shape == (1, 30)
    assert clf.coef_sd_.shape == (1, 30)
    assert clf.intercept_.shape == (1,)
    sel = clf.get_support()
    assert np.all(np.isfinite(clf.alpha_[0, sel]))
    assert np.all(np.isinf(clf.alpha_[0, ~sel]))
    assert np.all(clf.coef_[0, ~sel] == 0)
    assert np.all(clf.coef_sd_[0, sel] > 0)
    assert sel[3]
    assert sel[7]
    assert np.sign(clf.coef_[0, 3]) == 1
    assert np.sign(clf.coef_[0, 7]) == -1
    # chosen step is the criterion's pick on the recorded path (smallest LOO error; ties: smallest
    # LOO error probability, fewest genes, first step)
    best = min(range(len(p)), key=lambda i: (round(p["loo_error"][i], 12), p["loo_prob_error"][i],
                                             p["n_basis"][i], i))
    assert clf.chosen_step_.tolist() == [best]
    assert clf.transform(X).shape == (60, sel.sum())


@pytest.mark.parametrize("criterion", ["loo", "loo-prob", "evidence"])
def test_criteria_and_at_step_agree(criterion):
    X, y = two_gene_data(1)
    base = ARDClassifier(criterion="loo").fit(X, y)
    direct = ARDClassifier(criterion=criterion).fit(X, y)
    step = base.choose_step(criterion)
    assert step == direct.chosen_step_
    via = base.at_step(step)
    np.testing.assert_allclose(via.coef_, direct.coef_, rtol=1e-10)
    np.testing.assert_allclose(via.predict_proba(X), direct.predict_proba(X), rtol=1e-10)
    assert base.chosen_step_ == base.choose_step("loo")  # at_step leaves the original alone
    if criterion == "evidence":
        assert step == int(np.argmax(base.path_["log_evidence"]))


def test_predict_proba_integrates_over_the_posterior():
    X, y = two_gene_data(2)
    clf = ARDClassifier().fit(X, y)
    post = clf.posteriors_[0]
    # The calibration of criterion="cv": the predictive integrates the latent over N(m, s v), and
    # the temperature then scales its standardised value: Phi(T m / sqrt(1 + s v)).
    T, s = clf.temperature_[0], clf.variance_scale_[0]
    rng = np.random.default_rng(0)
    W = rng.multivariate_normal(post.mean, s * post.cov, size=200_000)
    x = np.append(X[:5], np.ones((5, 1)), axis=1)  # intercept is the last column of the model
    cols = [x[:, i] if i >= 0 else np.ones(5) for i in post.index]
    Xa = np.column_stack(cols)
    mc = norm.cdf(T * norm.ppf(norm.cdf(Xa @ W.T).mean(axis=1)))
    np.testing.assert_allclose(clf.predict_proba(X[:5])[:, 1], mc, atol=5e-3)
    # and differs from the plug-in of the mean when the posterior is wide
    plug = norm.cdf(Xa @ post.mean)
    assert np.max(np.abs(plug - clf.predict_proba(X[:5])[:, 1])) > 1e-3 or np.allclose(plug, mc)


def test_predict_is_argmax_of_proba_and_decision_sign():
    X, y = two_gene_data(3)
    clf = ARDClassifier().fit(X, y)
    P = clf.predict_proba(X)
    np.testing.assert_allclose(P.sum(axis=1), 1)
    assert np.array_equal(clf.predict(X), clf.classes_[(P[:, 1] > 0.5).astype(int)])
    assert np.array_equal(clf.decision_function(X) > 0, P[:, 1] > 0.5)
    np.testing.assert_allclose(np.exp(clf.predict_log_proba(X)), P, rtol=1e-10)


def test_label_swap_flips_coefficients_and_keeps_ranking():
    X, y = two_gene_data(4)
    a = ARDClassifier().fit(X, y)
    b = ARDClassifier().fit(X, 1 - y)
    np.testing.assert_allclose(a.coef_, -b.coef_, rtol=1e-6, atol=1e-9)
    assert a.ranked_features()["feature"].tolist() == b.ranked_features()["feature"].tolist()


def test_permuting_genes_permutes_the_ranking():
    X, y = two_gene_data(5)
    perm = np.random.default_rng(0).permutation(30)
    names = [f"g{i}" for i in range(30)]
    a = ARDClassifier().fit(pd.DataFrame(X, columns=names), y)
    b = ARDClassifier().fit(pd.DataFrame(X[:, perm], columns=[names[i] for i in perm]), y)
    ra = a.ranked_features().set_index("feature")
    rb = b.ranked_features().set_index("feature")
    sel = ra.index[ra["selected"]]
    assert set(sel) == set(rb.index[rb["selected"]])
    np.testing.assert_allclose(ra.loc[sel, "weight"], rb.loc[sel, "weight"], rtol=1e-6)


def test_swapping_the_labels_flips_the_weights_and_keeps_the_ranking():
    X, y = two_gene_data(6)
    a = ARDClassifier().fit(X, y)
    b = ARDClassifier().fit(X, 1 - y)
    np.testing.assert_allclose(b.coef_, -a.coef_, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(b.intercept_, -a.intercept_, rtol=1e-6, atol=1e-9)
    ra, rb = a.ranked_features(), b.ranked_features()
    assert list(ra.loc[ra["selected"], "feature"]) == list(rb.loc[rb["selected"], "feature"])


def test_dense_sparse_and_float32_agree():
    X, y = two_gene_data(7)
    X[np.abs(X) < 0.5] = 0.0
    dense = ARDClassifier().fit(X, y)
    sparse = ARDClassifier().fit(sp.csr_matrix(X), y)
    f32 = ARDClassifier().fit(X.astype(np.float32), y)
    pd.testing.assert_frame_equal(dense.path_, sparse.path_, rtol=1e-8)
    np.testing.assert_allclose(dense.coef_, sparse.coef_, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(dense.predict_proba(X), sparse.predict_proba(sp.csc_matrix(X)),
                               rtol=1e-8)
    assert np.array_equal(dense.get_support(), f32.get_support())
    np.testing.assert_allclose(dense.coef_, f32.coef_, rtol=1e-4, atol=1e-6)


def test_scale_invariance_and_extreme_scales():
    X, y = two_gene_data(8)
    scales = np.logspace(-6, 6, 30)
    a = ARDClassifier().fit(X, y)
    b = ARDClassifier().fit(X * scales, y)
    assert np.array_equal(a.get_support(), b.get_support())
    np.testing.assert_allclose(a.coef_, b.coef_ * scales, rtol=1e-5, atol=1e-8)
    assert np.all(np.isfinite(b.coef_))
    assert np.all(np.isfinite(b.path_["log_evidence"]))


def test_separable_and_duplicated_features_fit_cleanly():
    rng = np.random.default_rng(9)
    X = rng.normal(size=(40, 10))
    y = (X[:, 0] > 0).astype(int)  # perfectly separable by one gene
    X = np.hstack([X, X[:, :1], X[:, :1]])  # and that gene duplicated twice
    clf = ARDClassifier().fit(X, y)
    assert np.all(np.isfinite(clf.path_[["log_evidence", "loo_error", "loo_prob_error"]]))
    assert np.all(np.isfinite(clf.coef_))
    assert clf.get_support()[[0, 10, 11]].any()
    # The intercept is held at a broad prior (not pruned to exactly 0), so the boundary sits a
    # little off x0 = 0 (18 of 40 samples are positive): only samples within 0.05 of it may err.
    wrong = clf.predict(X) != y
    assert np.all(np.abs(X[wrong, 0]) < 0.05)
    assert wrong.mean() <= 0.05


def test_recovers_relevant_features_on_the_papers_setup():
    # The paper's generator (10 relevant of 200 weights from N(-0.5, 1)), with 150 training points so
    # that recovery is well determined. ARD's evidence optimum keeps the relevant genes and a few
    # irrelevant ones with small weights; the ranking (by standardised weight) puts the true genes on top.
    # The paper's type-II maximum likelihood (no inclusion penalty: with "bic", 2.5 nats per gene
    # at 150 samples, the weakest relevant genes stay out and 6 of the 10 are kept).
    X, y, Xt, yt, relevant = paper_synthetic(0, n_train=150, n_test=2000)
    clf = ARDClassifier(criterion="evidence", inclusion_penalty=0.0, intercept_alpha="ard",
                        alpha_min=0.1, tol=1e-5).fit(X, y)
    chosen = set(np.flatnonzero(clf.get_support()).tolist())
    assert len(chosen & relevant) >= 8
    top = clf.ranked_features()["feature"].head(10).str[1:].astype(int)
    assert len(set(top) & relevant) >= 8
    assert (clf.predict(Xt) == yt).mean() > 0.9


def test_multiclass_one_vs_rest():
    rng = np.random.default_rng(10)
    X = rng.normal(size=(90, 20))
    y = np.repeat(["a", "b", "c"], 30)
    for k, c in enumerate("abc"):
        X[y == c, k] += 3.0
    clf = ARDClassifier().fit(X, y)
    assert clf.coef_.shape == (3, 20)
    assert clf.intercept_.shape == (3,)
    assert clf.chosen_step_.shape == (3,)  # one step per class-vs-rest problem
    for k, c in enumerate("abc"):  # each class's size chosen on its own frontier
        front = clf.cv_results_[clf.cv_results_["class"] == c]
        assert clf.chosen_step_[k] == int(front.loc[front["chosen"], "step"].iloc[0])
    P = clf.predict_proba(X)
    np.testing.assert_allclose(P.sum(axis=1), 1)
    assert (clf.predict(X) == y).mean() > 0.9
    for k in range(3):
        assert clf.alpha_[k, k] < np.inf  # each class's marker gene is in its model
    r = clf.ranked_features()
    assert set(r["class"]) == {"a", "b", "c"}
    assert len(r) == 60
    assert set(clf.path_["class"]) == {"a", "b", "c"}


def test_kernel_basis_selects_relevance_vectors():
    rng = np.random.default_rng(11)
    X = rng.normal(size=(80, 2))
    y = (np.sum(X**2, axis=1) > 1.4).astype(int)  # a circle: not linearly separable
    lin = ARDClassifier().fit(X, y)
    rbf = ARDClassifier(kernel="rbf", gamma=0.5).fit(X, y)
    assert rbf.coef_.shape == (1, 80)
    assert 0 < rbf.relevance_vectors_.size < 40
    assert (rbf.predict(X) == y).mean() > (lin.predict(X) == y).mean() + 0.1


def test_ranked_features_table():
    X, y = two_gene_data(12)
    clf = ARDClassifier().fit(X, y)
    r = clf.ranked_features()
    assert list(r.columns) == ["class", "rank", "feature", "selected", "pip", "credible_set",
                               "set_probability", "alternatives", "contribution",
                               "std_weight", "relevance", "weight", "weight_sd", "alpha",
                               "entered_step", "log_bf_conditional", "z",
                               "log_bf_marginal", "cv_frequency", "t_stat"]
    assert r["rank"].tolist() == list(range(1, 31))
    n_sel = int(clf.get_support().sum())
    assert r["selected"].tolist() == [True] * n_sel + [False] * (30 - n_sel)
    assert set(r["feature"].head(2)) == {"x3", "x7"}
    assert r.loc[r["selected"], "entered_step"].notna().all()


def test_contributions_add_up_to_the_separation_and_order_the_selection():
    # Columns on very different scales. The standardised weight is the input-unit weight times
    # the column's sd in the training data; the contributions (weight times class-mean
    # difference) add up to the difference between the mean latent score X @ coef_ of the class
    # and of the rest (both computed here directly), and order the selected genes. Rescaling a
    # column changes neither column nor the order.
    X, y = two_gene_data(12)
    X = X * np.linspace(0.1, 30.0, X.shape[1])
    clf = ARDClassifier().fit(X, y)
    r = clf.ranked_features().set_index("feature")
    expected = clf.coef_[0] * X.std(axis=0)
    names = [f"x{j}" for j in range(X.shape[1])]
    np.testing.assert_allclose(r.loc[names, "std_weight"], expected, rtol=1e-10, atol=1e-14)
    latent = X @ clf.coef_[0]
    separation = latent[y == 1].mean() - latent[y == 0].mean()
    assert r["contribution"].sum() == pytest.approx(separation, rel=1e-10)
    expected = clf.coef_[0] * (X[y == 1].mean(axis=0) - X[y == 0].mean(axis=0))
    np.testing.assert_allclose(r.loc[names, "contribution"], expected, rtol=1e-10, atol=1e-14)
    sel = r[r["selected"]]
    assert np.all(np.diff(sel["contribution"].to_numpy()) <= 0)
    assert (r.loc[~r["selected"], ["std_weight", "contribution"]] == 0).all().all()
    X2 = X.copy()
    X2[:, 3] *= 1000.0
    r2 = ARDClassifier().fit(X2, y).ranked_features().set_index("feature")
    for col in ("std_weight", "contribution"):
        np.testing.assert_allclose(r2.loc[names, col], r.loc[names, col], rtol=1e-6, atol=1e-9)
    assert list(r2.index[r2["selected"]]) == list(sel.index)


def test_works_in_a_pipeline():
    X, y = two_gene_data(13)
    pipe = make_pipeline(StandardScaler(), ARDClassifier()).fit(X, y)
    assert pipe[-1].get_support()[[3, 7]].all()
    Xt, yt = two_gene_data(113, n=2000)
    # The pipeline is the standardisation followed by the estimator, nothing more.
    scaler = StandardScaler().fit(X)
    alone = ARDClassifier().fit(scaler.transform(X), y)
    np.testing.assert_array_equal(pipe.predict_proba(Xt), alone.predict_proba(scaler.transform(Xt)))
    # Held out, from the same generator: the true rule errs on about 7% (the label noise). Mean
    # accuracy over five training draws: a single draw of 60 samples varies by several points
    # with the size the inner cross-validation chooses.
    acc = [(make_pipeline(StandardScaler(), ARDClassifier()).fit(*two_gene_data(s))
            .predict(Xt) == yt).mean() for s in range(13, 18)]
    assert np.mean(acc) > 0.85


@pytest.mark.parametrize(
    ("X", "y", "exc", "match"),
    [
        (np.array([[np.nan, 1.0], [0.0, 2.0], [1.0, 0.0]]), [0, 1, 1], DataError, "NaN"),
        (np.array([[np.inf, 1.0], [0.0, 2.0], [1.0, 0.0]]), [0, 1, 1], DataError, "infinite"),
        (np.array([[1.0, 1.0], [0.0, 2.0], [1.0, 0.0]]), [1, 1, 1], LabelError, "one class"),
        (np.array([[1.0, 1.0], [0.0, 2.0], [1.0, 0.0]]), [0, 1], LabelError, "3 samples"),
        (np.array([[1.0, 1.0], [0.0, 2.0], [1.0, 0.0]]), np.array([1, "1", 1], dtype=object),
         LabelError, "mixes strings and numbers"),
        (np.array([[1.0, 1.0], [0.0, 2.0], [1.0, 0.0], [2.0, 1.0]]), ["a", "", "b", "b"],
         LabelError, r"1 empty label\(s\) \('' or whitespace only\), at position\(s\) 1"),
        (np.array([[1.0, 1.0], [0.0, 2.0], [1.0, 0.0], [2.0, 1.0]]),
         np.array(["a", "a", " ", "b"], dtype=object), LabelError, "empty label"),
        (np.zeros((0, 3)), [], DataError, "0 sample"),
        (np.zeros((3, 0)), [0, 1, 1], DataError, "0 feature"),
    ],
)
def test_bad_input(X, y, exc, match):
    with pytest.raises(exc, match=match):
        ARDClassifier().fit(X, y)


def test_constant_features_are_left_out_with_a_warning():
    from ardselect.estimators._classifier import ConstantFeatureWarning

    X, y = two_gene_data(14)
    X[:, 5] = 2.0
    with pytest.warns(ConstantFeatureWarning, match=r"1 of 30 features are constant \(e.g. 'x5'\)"):
        clf = ARDClassifier().fit(X, y)
    assert not clf.get_support()[5]
    assert clf.ranked_features()["feature"].iloc[-1] == "x5"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        quiet = ARDClassifier(constant_features="ignore").fit(X, y)
    np.testing.assert_array_equal(quiet.coef_, clf.coef_)
    with pytest.raises(DataError, match=r"1 constant feature\(s\) \(e.g. 'x5'\)"):
        ARDClassifier(constant_features="raise").fit(X, y)


def test_pipeline_with_scaler_on_floored_data_fits():
    # Issue 12.6: floored microarray data have constant genes; composition must not break.
    X, y = two_gene_data(15)
    X[:, 10:14] = 100.0
    pipe = make_pipeline(StandardScaler(), ARDClassifier())
    with pytest.warns(UserWarning, match="constant"):
        pipe.fit(X, y)
    assert (pipe.predict(X) == y).mean() > 0.9


@pytest.mark.parametrize(
    ("params", "match"),
    [({"criterion": "aic"}, "'criterion' parameter"), ({"init": "all"}, "'init' parameter"),
     ({"constant_features": "drop"}, "'constant_features' parameter"),
     ({"loo_prob_scale": 0}, "'loo_prob_scale' parameter"),
     ({"tol": -1}, r"'tol' parameter of ARDClassifier must be a float in the range \[0(.0)?, inf\)"),
     ({"alpha_min": -5}, "'alpha_min' parameter"), ({"max_init": 0}, "'max_init' parameter"),
     ({"patience": -3}, "'patience' parameter"), ({"ep_max_iter": 0}, "'ep_max_iter' parameter"),
     ({"damping": 1.5}, "'damping' parameter"), ({"max_steps": -1}, "'max_steps' parameter"),
     ({"gamma": -1.0}, "'gamma' parameter"), ({"kernel": "sigmoid"}, "'kernel' parameter"),
     ({"cv": 1}, "'cv' parameter"), ({"cv_repeats": 0}, "'cv_repeats' parameter"),
     ({"cv_repeats": 1.5}, "'cv_repeats' parameter"),
     ({"cv_rule": "2se"}, "'cv_rule' parameter"),
     ({"max_genes": 0}, "'max_genes' parameter")],
)
def test_bad_parameters(params, match):
    X, y = two_gene_data()
    with pytest.raises(ValueError, match=match):
        ARDClassifier(**params).fit(X, y)


def test_random_state_seeds_only_the_inner_cross_validation():
    # The path makes no random choice: criterion="loo" ignores the seed; "cv" draws its folds.
    X, y = two_gene_data(3)
    a = ARDClassifier(criterion="loo", random_state=0).fit(X, y)
    b = ARDClassifier(criterion="loo", random_state=5).fit(X, y)
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
    with pytest.raises(ValueError, match="random_state"):
        ARDClassifier(random_state="seed").fit(X, y)


def test_auto_starting_model_has_at_most_one_gene_per_sample():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(30, 400))
    y = (X[:, :40].sum(axis=1) > 0).astype(int)  # many individually relevant genes
    # Without an inclusion penalty every individually relevant gene qualifies for the start.
    auto = ARDClassifier(inclusion_penalty=0.0, intercept_alpha="ard").fit(X, y)
    start = auto.path_.loc[auto.path_["step"] == 0, "n_basis"].item()
    assert 10 < start <= 30
    wide = ARDClassifier(max_init=100, inclusion_penalty=0.0, intercept_alpha="ard").fit(X, y)
    assert wide.path_.loc[wide.path_["step"] == 0, "n_basis"].item() > 30


@pytest.mark.parametrize("bad", [0, -3, 2.5, "all"])
def test_max_init_out_of_range_is_refused(bad):
    X, y = two_gene_data(3)
    with pytest.raises(ValueError, match="'max_init' parameter"):
        ARDClassifier(max_init=bad).fit(X, y)


def test_stratified_sketch_keeps_class_fractions():
    from ardselect.estimators._classifier import stratified_sketch

    codes = np.repeat([0, 1, 2], [600, 300, 100])
    rows = stratified_sketch(codes, 100)
    assert np.all(np.diff(rows) > 0)
    assert np.bincount(codes[rows]).tolist() == [60, 30, 10]
    # Deterministic, and a class smaller than its share keeps at least one row.
    assert np.array_equal(rows, stratified_sketch(codes, 100))
    assert np.bincount(codes[stratified_sketch(codes, 5)]).min() >= 1


def test_stratified_sketch_never_exceeds_max_samples():
    # Rounding every class's share up could give 101 rows for max_samples=100 (71/76/93 cells
    # gave 101 before); largest remainders give exactly max_samples, each class within one row of
    # its share, and at least one row per class.
    from ardselect.estimators._classifier import stratified_sketch

    rng = np.random.default_rng(0)
    for _ in range(500):
        k = int(rng.integers(2, 12))
        n = int(rng.integers(k, 3000))
        codes = np.concatenate([np.arange(k), rng.integers(0, k, n - k)])
        m = int(rng.integers(k, n + 1))
        rows = stratified_sketch(codes, m)
        counts = np.bincount(codes[rows], minlength=k)
        assert rows.size == m
        assert np.unique(rows).size == m
        assert counts.min() >= 1
        share = np.bincount(codes, minlength=k) * m / n
        assert np.all((np.abs(counts - share) < 1) | (share < 1))


def test_max_samples_fits_the_sketch_and_predicts_everything():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 40))
    y = np.where(X[:, 0] - X[:, 1] > 0, "a", "b")
    clf = ARDClassifier(max_samples=100).fit(X, y)
    assert clf.sketch_.size == 100
    ref = ARDClassifier().fit(X[clf.sketch_], y[clf.sketch_])
    np.testing.assert_allclose(clf.coef_, ref.coef_)
    assert clf.predict(X).shape == (300,)
    assert ARDClassifier(max_samples=1000).fit(X, y).sketch_ is None


def test_stratified_sketch_floor_keeps_rare_classes_within_the_size():
    from ardselect.estimators._classifier import stratified_sketch

    codes = np.repeat([0, 1, 2, 3], [5000, 2000, 120, 20])
    rows = stratified_sketch(codes, 2000, floor=50)
    counts = np.bincount(codes[rows])
    assert rows.size == 2000
    # The rare classes keep their floor (all 20 of the smallest); the rows they take come back
    # from the over-served large classes, whose shares stay in proportion.
    assert counts[2] == 50
    assert counts[3] == 20
    share = np.array([5000, 2000]) * (2000 - 70) / 7000
    assert np.all(np.abs(counts[:2] - share) < 1)
    # The floors alone above the size: every class keeps them, nothing more.
    many = np.repeat(np.arange(50), 60)
    assert np.bincount(many[stratified_sketch(many, 2000, floor=50)]).tolist() == [50] * 50


def test_auto_sketch_above_its_size_with_a_warning_and_never_below():
    from ardselect.choices import AUTO_SKETCH, SKETCH_FLOOR
    from ardselect.engine._rows import sketch, sketch_size

    rng = np.random.default_rng(4)
    n = AUTO_SKETCH + 400
    X = rng.normal(size=(n, 4))
    y = np.where(np.arange(n) < 30, "rare", np.where(X[:, 0] > 0, "a", "b"))
    with pytest.warns(UserWarning, match=r"2,400 samples: fitting a stratified sketch of 2,000"):
        clf = ARDClassifier(criterion="loo", certainty=False).fit(X, y)
    assert clf.max_samples == "auto"
    assert clf.sketch_.size == AUTO_SKETCH
    assert (clf.sketch_ < 30).sum() == 30  # all of a class below the floor
    assert SKETCH_FLOOR == 50
    ref = ARDClassifier(criterion="loo", certainty=False, max_samples=None).fit(
        X[clf.sketch_], y[clf.sketch_])
    np.testing.assert_array_equal(clf.coef_, ref.coef_)
    # A sketch is not sketched again, and max_samples=None keeps every row without a word.
    _, codes = np.unique(y[clf.sketch_], return_inverse=True)
    assert sketch_size(codes, "auto") == (AUTO_SKETCH, SKETCH_FLOOR)
    assert sketch(X[clf.sketch_], y[clf.sketch_], "auto")[2] is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert sketch(X, y, None)[2] is None
        assert sketch(X[:AUTO_SKETCH], y[:AUTO_SKETCH], "auto")[2] is None


@pytest.mark.parametrize("bad", [1, 2.5, "some", "all"])
def test_max_samples_out_of_range_is_refused(bad):
    X, y = two_gene_data(3)
    with pytest.raises(ValueError, match="'max_samples' parameter"):
        ARDClassifier(max_samples=bad).fit(X, y)


def test_n_jobs_gives_the_same_multiclass_fit():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(60, 30))
    y = np.argmax(X[:, :3], axis=1)
    a = ARDClassifier(n_jobs=1).fit(X, y)
    for n_jobs in (2, -1, None):
        b = ARDClassifier(n_jobs=n_jobs).fit(X, y)
        np.testing.assert_array_equal(a.coef_, b.coef_)
        assert a.path_.equals(b.path_)
    assert ARDClassifier().n_jobs == -1  # every available core by default


def test_n_jobs_zero_is_refused():
    with pytest.raises(ValueError, match="n_jobs"):
        ARDClassifier(n_jobs=0).fit(np.eye(4), [0, 1, 0, 1])


def test_inclusion_penalty_ends_the_long_paths_of_many_samples():
    # Dense data with many more samples than informative genes: under type-II maximum likelihood
    # pure-noise genes keep entering (q^2 > s by chance, p ~ 0.32) and the path runs on; with the
    # "bic" penalty (log(n)/2 nats per gene) it stops after a few dozen steps, keeping the
    # informative genes and few others.
    rng = np.random.default_rng(0)
    n, p = 400, 200
    X = rng.normal(size=(n, p))
    w = np.zeros(p)
    w[:10] = rng.normal(size=10)
    y = (X @ w + rng.normal(size=n) > 0).astype(int)
    from sklearn.exceptions import ConvergenceWarning

    kw = {"criterion": "loo", "alpha_min": 0.1, "tol": 1e-5, "max_steps": 300}
    with pytest.warns(ConvergenceWarning, match="max_steps=300"):  # runs to the cap
        plain = ARDClassifier(inclusion_penalty=0.0, intercept_alpha="ard", **kw).fit(X, y)
    bic = ARDClassifier(inclusion_penalty="bic", **kw).fit(X, y)  # no warning: it converges
    assert bic._path_spec(n).penalty == pytest.approx(0.5 * np.log(n))
    assert len(plain.path_) == 301
    assert len(bic.path_) < 60
    kept = np.flatnonzero(bic.get_support())
    assert set(np.flatnonzero(np.abs(w) > 0.3)) <= set(kept)
    assert kept.size <= 15
    # The path ends at a local optimum of log evidence - penalty * genes: no single action gains
    # (the engine's gains are checked against direct evaluation in test_sequential).
    assert bic._fits[0].converged


@pytest.mark.parametrize(("param", "bad"), [
    ("inclusion_penalty", -1.0), ("inclusion_penalty", "aic"), ("inclusion_penalty", None),
    ("intercept_alpha", 0.0), ("intercept_alpha", -1.0), ("intercept_alpha", np.inf),
    ("intercept_alpha", "flat"), ("intercept_alpha", None),
])
def test_prior_parameters_out_of_range_are_refused(param, bad):
    X, y = two_gene_data(3)
    with pytest.raises(ValueError, match=param):
        ARDClassifier(**{param: bad}).fit(X, y)


def test_intercept_is_held_at_its_fixed_prior():
    # The intercept never moves on the path: in every step's model, at intercept_alpha, and never
    # the feature of a step; with "ard" it is a weight like the genes (the paper's model).
    X, y = two_gene_data(5)
    y = np.where(np.arange(y.size) < 15, 1, y)  # unbalanced classes: a real intercept
    clf = ARDClassifier(criterion="loo", intercept_alpha=0.5).fit(X, y)
    fit = clf._fits[0]
    icol = fit.intercept_col
    for step in fit.steps:
        assert icol in step.active
        assert step.alpha[list(step.active).index(icol)] == 0.5
    assert "(intercept)" not in set(clf.path_["feature"])
    np.testing.assert_array_equal(clf.intercept_alpha_, [0.5])
    assert clf.intercept_[0] != 0


def test_fixed_intercept_keeps_what_ard_prunes():
    # Measured: on the first 36 leukaemia samples the paper's path starts without the intercept
    # (ARD prunes it; it enters at step 34) and its LOO model (2 genes) errs on 11 of the other 36;
    # held at its broad prior, the intercept is in every model and the LOO model (4 genes) errs
    # on 2.
    import ardselect
    from ardselect.preprocessing import Preprocessor

    a = ardselect.datasets.leukaemia()
    X = Preprocessor(floor=100, cap=16000, log="log10").fit(a.X[:36]).transform(a.X)
    y = a.obs["label"].to_numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # The settings of the measurement: precision floor 0.1, the BIC penalty, tol 1e-5.
        kw = {"criterion": "loo", "alpha_min": 0.1, "inclusion_penalty": "bic", "tol": 1e-5}
        paper = ARDClassifier(intercept_alpha="ard", **kw).fit(X[:36], y[:36])
        held = ARDClassifier(**kw).fit(X[:36], y[:36])
    assert np.isinf(paper.at_step(np.array([0])).intercept_alpha_[0])
    assert held.at_step(np.array([0])).intercept_alpha_[0] == 0.01
    assert held.intercept_alpha_[0] == 0.01
    assert (held.predict(X[36:]) != y[36:]).sum() < (paper.predict(X[36:]) != y[36:]).sum()


def test_fitted_problems_keep_no_signed_copy_of_the_design():
    # Memory at scale: after the path each class keeps the shared design and its signs, not a
    # signed copy; what is rebuilt from them is bitwise the signed design.
    X, y = two_gene_data(8)
    X = sp.csr_matrix(np.where(np.abs(X) > 1.0, X, 0.0))
    y = np.arange(y.size) % 3
    clf = ARDClassifier(criterion="loo").fit(X, y)
    before = clf.ranked_features()
    for fit in clf._fits:
        prob = fit.problem
        assert prob._design is None
        signed = (sp.diags(prob._signs) @ prob._basis).tocsc()
        assert (prob.design != signed).nnz == 0
        cols = np.array([0, 3, 7])
        np.testing.assert_array_equal(prob.columns(cols), signed[:, cols].toarray())
        prob._design = signed  # the old way: a signed copy kept per class
    pd.testing.assert_frame_equal(clf.ranked_features(), before)


@pytest.mark.parametrize("sparse", [False, True])
def test_fold_designs_signed_in_place_give_the_same_cross_validation(sparse, monkeypatch):
    import ardselect.engine._problem as problem_module
    import ardselect.estimators._cv as cv_module

    X, y = two_gene_data(11)
    if sparse:
        X = sp.csr_matrix(np.where(np.abs(X) > 0.5, X, 0.0))
    got = ARDClassifier().fit(X, y)
    monkeypatch.setattr(cv_module, "sign_in_place", problem_module.signed)  # the copying version
    ref = ARDClassifier().fit(X, y)
    pd.testing.assert_frame_equal(got.cv_results_, ref.cv_results_, rtol=1e-10)
    np.testing.assert_array_equal(got.chosen_step_, ref.chosen_step_)


def test_starting_pool_ignores_where_a_gene_lies():
    # With the intercept held, the starting pool is scored beside it: a gene's relevance cannot
    # come from its mean, which the intercept explains. Scored against the empty model (as before),
    # noise genes shifted by a constant looked relevant in an unbalanced sample and filled the pool.
    rng = np.random.default_rng(3)
    n, p = 60, 40
    y = (np.arange(n) < 45).astype(int)  # 45 against 15
    X = rng.standard_normal((n, p))
    X[:, :2] += 1.2 * (2 * y[:, None] - 1)  # two relevant genes
    shifted = X.copy()
    shifted[:, 10:30] += 4.0  # twenty noise genes far from zero
    first = [set(np.flatnonzero(ARDClassifier(criterion="loo").fit(Z, y).at_step(0).coef_[0]))
             for Z in (X, shifted)]
    assert first[0] == first[1]
    assert {0, 1} <= first[0]


def test_ep_tol_auto_is_tight_below_500_samples_and_loose_from_there():
    from ardselect.engine._problem import LARGE_SAMPLES, ep_tol_for

    assert ep_tol_for("auto", LARGE_SAMPLES - 1) == 1e-5
    assert ep_tol_for("auto", LARGE_SAMPLES) == 1e-3
    assert ep_tol_for(3e-4, 10_000) == 3e-4
    rng = np.random.default_rng(0)
    for n, tol in ((80, 1e-5), (LARGE_SAMPLES, 1e-3)):
        X = rng.normal(size=(n, 12))
        y = (X[:, 0] + 0.5 * X[:, 1] + rng.normal(size=n) > 0).astype(int)
        auto = ARDClassifier(criterion="loo").fit(X, y)
        given = ARDClassifier(criterion="loo", ep_tol=tol).fit(X, y)
        np.testing.assert_array_equal(auto.coef_, given.coef_)
        assert auto.path_["ep_sweeps"].sum() == given.path_["ep_sweeps"].sum()


def test_loo_choice_on_a_real_path_breaks_ties_by_error_probability_then_size():
    # The paper's settings on the leukaemia training samples: the LOO error is a count of 38, so
    # many steps share the smallest one. The chosen step has the smallest error, the smallest
    # error probability among the steps of that error, and the fewest genes among those.
    import ardselect
    from ardselect.preprocessing import Preprocessor

    a = ardselect.datasets.leukaemia()
    a = a[a.obs["split"] == "train", :2000]
    X = Preprocessor(floor=100, cap=16000, log="log10").fit_transform(a.X)
    y = a.obs["label"].to_numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = ARDClassifier(criterion="loo", inclusion_penalty=0.0, intercept_alpha="ard").fit(X, y)
    p = clf.path_
    err = np.round(p["loo_error"].to_numpy(), 12)
    prob = p["loo_prob_error"].to_numpy()
    tied = np.flatnonzero(err == err.min())
    assert tied.size > 1  # the rule is exercised
    step = int(clf.chosen_step_[0])
    assert err[step] == err.min()
    assert not np.any(prob[tied] < prob[step])
    same = tied[prob[tied] == prob[step]]
    assert p["n_basis"][step] == p["n_basis"][same].min()
    assert step == same[p["n_basis"][same].to_numpy().argmin()]
