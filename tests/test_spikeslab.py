"""SpikeSlabClassifier: against exact enumeration, a Gibbs sampler, EP with a Gaussian prior; its contract.

References (``tests/reference``): ``spikeslab_exact`` sums over every model (orthant probabilities by
numerical integration), ``spikeslab_gibbs`` samples the same model. Tolerances are stated beside
each check with what was observed; each reference check also shows that a wrong prior inclusion
probability fails it, so the check can fail.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from scipy.stats import norm
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.estimator_checks import parametrize_with_checks

from ardselect import ConstantFeatureWarning, SpikeSlabClassifier, ep_probit
from ardselect.estimators._spikeslab import credible_sets
from ardselect.exceptions import DataError
from tests.reference.spikeslab_exact import exact_spike_slab
from tests.reference.spikeslab_gibbs import gibbs_spike_slab
from tests.test_spikeslab_ep import labels, standardised


# ------------------------------------------------------------------------------------------------
# A Gaussian prior as the special case p0 = 1
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("n", "p"), [(30, 5), (20, 60)])
def test_inclusion_one_is_ep_with_a_gaussian_prior(seed, n, p):
    """p0 = 1: every gene site is the exact N(0, v_s) prior, i.e. ep_probit at alpha = 1 / v_s."""
    rng = np.random.default_rng(seed)
    Z, Zt = standardised(rng, n, p, 5)
    t = labels(rng, Z, np.r_[1.0, 0.0, -1.0, np.zeros(p - 3)])
    v_s, a_b = 0.7, 0.5
    clf = SpikeSlabClassifier(prior_inclusion=1.0, slab_variance=v_s, intercept_alpha=a_b,
                              tol=1e-10).fit(Z, t)
    ref = ep_probit(np.column_stack([Z, np.ones(n)]), t, np.r_[np.full(p, 1 / v_s), a_b],
                    tol=1e-12, max_iter=2000)
    np.testing.assert_allclose(clf.coef_[0], ref.mean[:p], rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(clf.coef_sd_[0], np.sqrt(np.diag(ref.cov))[:p], rtol=1e-7)
    np.testing.assert_allclose(clf.log_evidence_[0], ref.log_evidence, rtol=1e-9)
    np.testing.assert_allclose(clf.predict_proba(Zt)[:, 1],
                               ref.predict_proba(np.column_stack([Zt, np.ones(len(Zt))])),
                               rtol=1e-7)
    assert np.all(clf.pip_ == 1.0)


# ------------------------------------------------------------------------------------------------
# Exact enumeration of every model
# ------------------------------------------------------------------------------------------------
def _against_exact(seed, n, p, m):
    rng = np.random.default_rng(seed)
    Z, Zt = standardised(rng, n, p, m)
    t = labels(rng, Z, np.r_[1.0, 0.0, -0.8, np.zeros(p - 3)])
    est = SpikeSlabClassifier(slab_variance=1.0, intercept_alpha=1.0, tol=1e-8).fit(Z, t)
    # The default hyperprior: E in (1, 2, 5, 10, 20), p0 = min(E / p, 0.5), equally likely.
    nodes = {}
    for e in (1, 2, 5, 10, 20):
        nodes[min(e / p, 0.5)] = nodes.get(min(e / p, 0.5), 0.0) + 0.2
    exact = exact_spike_slab(Z, t, nodes, 1.0, 1.0, Zt)
    wrong = SpikeSlabClassifier(prior_inclusion=0.8, slab_variance=1.0, intercept_alpha=1.0,
                                tol=1e-8).fit(Z, t)
    return est, wrong, exact, Zt


def _check_exact(est, wrong, exact, Zt):
    d_pip = np.abs(est.pip_[0] - exact["pip"])
    d_pred = np.abs(est.predict_proba(Zt)[:, 1] - exact["predictive"])
    # Observed over seeds 0-5 (n = 10, p = 5): mean |d pip| 0.003-0.011, max 0.025; predictive max
    # 0.022; log evidence within 0.09. A wrong p0 (0.8) is off by 0.1-0.3 on average.
    assert d_pip.mean() <= 0.03, d_pip
    assert d_pip.max() <= 0.06, d_pip
    assert d_pred.max() <= 0.05, d_pred
    assert abs(est.log_evidence_[0] - exact["log_evidence"]) <= 0.25
    assert np.abs(wrong.pip_[0] - exact["pip"]).mean() > 0.03


def test_pips_and_predictions_match_exact_enumeration(seed):
    # 16 models of 4 genes, 8 samples, 2 test points: each model's likelihood is an orthant
    # probability of dimension 8 (9 with a test point).
    _check_exact(*_against_exact(seed, 8, 4, 2))


@pytest.mark.slow
@pytest.mark.parametrize("seed_", [0, 1, 2])
def test_pips_and_predictions_match_exact_enumeration_ten_genes(seed_):
    # 1024 models of 10 genes, 12 samples.
    _check_exact(*_against_exact(seed_, 12, 10, 2))


# ------------------------------------------------------------------------------------------------
# Gibbs sampler of the same model
# ------------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_pips_match_a_gibbs_sampler():
    rng = np.random.default_rng(0)
    n, p = 60, 200
    Z = rng.normal(size=(n, p))
    Z = (Z - Z.mean(axis=0)) / Z.std(axis=0)
    w = np.zeros(p)
    w[[0, 5, 9, 14]] = [1.5, -1.0, 0.7, 0.5]
    t = np.where(Z @ w + rng.normal(size=n) > 0, 1.0, -1.0)
    p0, v_s, v_b = 0.02, 1.0, 1.0
    chains = [gibbs_spike_slab(Z, t, p0, v_s, v_b, n_sweeps=4000, n_burnin=500, seed=s)
              for s in range(4)]
    gibbs = np.mean([c["pip"] for c in chains], axis=0)
    est = SpikeSlabClassifier(prior_inclusion=p0, slab_variance=v_s, intercept_alpha=1 / v_b,
                              tol=1e-8).fit(Z, t)
    d = np.abs(est.pip_[0] - gibbs)
    assert d.mean() <= 0.05  # the criterion
    informative = (gibbs >= 0.1) | (est.pip_[0] >= 0.1)
    assert d[informative].mean() <= 0.1, (gibbs[informative], est.pip_[0][informative])
    wrong = SpikeSlabClassifier(prior_inclusion=0.2, slab_variance=v_s,
                                intercept_alpha=1 / v_b).fit(Z, t)
    assert np.abs(wrong.pip_[0] - gibbs).mean() > 0.05


# ------------------------------------------------------------------------------------------------
# Estimator properties
# ------------------------------------------------------------------------------------------------
def _two_gene_data(seed, n=60, p=40):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    y = np.where(X[:, 3] - X[:, 7] + 0.5 * rng.normal(size=n) > 0, "case", "ctrl")
    return X, y


def test_finds_the_planted_genes_and_predicts(seed):
    X, y = _two_gene_data(seed)
    clf = SpikeSlabClassifier().fit(X, y)
    assert np.flatnonzero(clf.get_support()).tolist() == [3, 7]
    assert clf.pip_.shape == (1, 40)
    assert np.all((clf.pip_ >= 0) & (clf.pip_ <= 1))
    proba = clf.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_array_equal(clf.predict(X), clf.classes_[(proba[:, 1] > 0.5).astype(int)])
    np.testing.assert_allclose(norm.cdf(clf.decision_function(X)), proba[:, 1], rtol=1e-9)
    assert np.mean(clf.predict(X) == y) > 0.85
    table = clf.ranked_features()
    assert table["feature"].iloc[:2].tolist() == ["x7", "x3"] or \
        table["feature"].iloc[:2].tolist() == ["x3", "x7"]
    assert table["pip"].is_monotonic_decreasing
    assert table["log_bf"].is_monotonic_decreasing
    assert np.all(table["p_sign"].iloc[:2] > 0.99)
    assert np.all((table["p_sign"] >= 0.5) & (table["p_sign"] <= 1))
    fixed = SpikeSlabClassifier(prior_inclusion=0.1).fit(X, y).ranked_features()
    logit = lambda q: np.log(q) - np.log1p(-q)  # noqa: E731
    np.testing.assert_allclose(fixed["log_bf"], logit(fixed["pip"]) - logit(0.1), rtol=1e-10)
    assert set(clf.hyper_results_["expected_genes"]) == {1, 2, 5, 10, 20}
    np.testing.assert_allclose(clf.hyper_results_["weight"].sum(), 1.0)
    assert clf.n_iter_ >= 1


def test_coef_and_intercept_give_the_latent_mean(seed):
    X, y = _two_gene_data(seed)
    X = 3.0 * X + 5.0  # the input's units and offset
    clf = SpikeSlabClassifier().fit(X, y)
    m, _ = clf._latent(X)
    np.testing.assert_allclose(X @ clf.coef_[0] + clf.intercept_[0], m[:, 0], rtol=1e-8,
                               atol=1e-8)


def test_label_swap_flips_the_weights_and_keeps_the_pips(seed):
    X, y = _two_gene_data(seed)
    a = SpikeSlabClassifier().fit(X, y)
    b = SpikeSlabClassifier().fit(X, np.where(y == "case", "z_case", "a_ctrl"))
    np.testing.assert_allclose(a.coef_, -b.coef_, atol=1e-6)
    np.testing.assert_allclose(a.pip_, b.pip_, atol=1e-6)
    np.testing.assert_allclose(a.intercept_, -b.intercept_, atol=1e-6)


def test_dense_sparse_float32_and_permuted_genes_agree(seed):
    X, y = _two_gene_data(seed)
    X[np.abs(X) < 0.5] = 0.0
    dense = SpikeSlabClassifier().fit(X, y)
    sparse = SpikeSlabClassifier().fit(sp.csr_matrix(X), y)
    np.testing.assert_array_equal(dense.pip_, sparse.pip_)
    np.testing.assert_array_equal(dense.predict_proba(X), sparse.predict_proba(sp.csc_matrix(X)))
    f32 = SpikeSlabClassifier().fit(X.astype(np.float32), y)
    np.testing.assert_allclose(dense.pip_, f32.pip_, atol=1e-5)
    np.testing.assert_allclose(dense.coef_, f32.coef_, rtol=1e-4, atol=1e-6)
    perm = np.random.default_rng(seed).permutation(X.shape[1])
    permuted = SpikeSlabClassifier().fit(X[:, perm], y)
    np.testing.assert_allclose(permuted.pip_, dense.pip_[:, perm], atol=1e-8)


def test_multiclass_is_one_versus_rest(seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(90, 12))
    y = np.array(["u", "v", "w"])[np.argmax(X[:, :3] + 0.3 * rng.normal(size=(90, 3)), axis=1)]
    clf = SpikeSlabClassifier().fit(X, y)
    assert clf.coef_.shape == clf.pip_.shape == (3, 12)
    assert clf.intercept_.shape == clf.prior_inclusion_.shape == (3,)
    # Class k's own gene k is in its problem's model.
    assert np.all(np.diag(clf.pip_[:, :3]) > 0.9)
    proba = clf.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert np.mean(clf.predict(X) == y) > 0.7
    assert list(clf.ranked_features()["class"].unique()) == ["u", "v", "w"]


def test_credible_set_of_interchangeable_genes(seed):
    """Two near-copies of the relevant gene share its inclusion; together they make a set."""
    rng = np.random.default_rng(seed)
    n, p = 80, 30
    X = rng.normal(size=(n, p))
    X[:, 1] = X[:, 0] + 0.05 * rng.normal(size=n)
    y = (2.0 * X[:, 0] + 0.5 * rng.normal(size=n) > 0).astype(int)
    clf = SpikeSlabClassifier().fit(X, y)
    assert clf.pip_[0, 0] < 0.95
    assert clf.pip_[0, 1] < 0.95
    sets = clf.credible_sets_
    assert set(sets.loc[sets["set"] == 1, "feature"]) == {"x0", "x1"}
    assert sets["set_pip"].iloc[0] >= 0.95
    assert sets["purity"].iloc[0] > 0.99
    table = clf.ranked_features().set_index("feature")
    assert table.loc["x0", "credible_set"] == 1
    assert pd.isna(table.loc["x5", "credible_set"])
    # Not a set when the genes must correlate more than they do.
    assert SpikeSlabClassifier(min_correlation=0.9999).fit(X, y).credible_sets_.empty


def test_credible_sets_need_correlated_genes():
    rng = np.random.default_rng(0)
    Z = rng.normal(size=(100, 3))
    Z = (Z - Z.mean(axis=0)) / Z.std(axis=0)
    # Independent genes whose PIPs add up past 0.95 are no set: each can be told from the others.
    assert credible_sets(np.array([0.6, 0.5, 0.2]), Z, prior_inclusion=0.05) == []
    assert len(credible_sets(np.array([0.6, 0.5, 0.2]), Z, prior_inclusion=0.05,
                             min_correlation=0.0)) == 1


def test_feature_names_constant_genes_and_no_intercept(seed):
    X, y = _two_gene_data(seed)
    X[:, 5] = 2.0
    frame = pd.DataFrame(X, columns=[f"g{j}" for j in range(X.shape[1])])
    with pytest.warns(ConstantFeatureWarning, match="1 of 40 features are constant"):
        clf = SpikeSlabClassifier().fit(frame, y)
    assert clf.feature_names_in_[5] == "g5"
    assert clf.pip_[0, 5] == 0
    assert np.isinf(clf.alpha_[0, 5])
    assert list(clf.get_feature_names_out()) == ["g3", "g7"]
    with pytest.raises(DataError, match="constant feature"):
        SpikeSlabClassifier(constant_features="raise").fit(X, y)
    no_b = SpikeSlabClassifier(fit_intercept=False, constant_features="ignore").fit(X, y)
    assert no_b.intercept_[0] == 0
    assert np.isinf(no_b.intercept_alpha_[0])


def test_nonconvergence_warns_and_sets_n_iter():
    X, y = _two_gene_data(0)
    with pytest.warns(ConvergenceWarning, match="EP did not converge in 2 sweeps"):
        clf = SpikeSlabClassifier(max_iter=2).fit(X, y)
    assert clf.n_iter_ == 10  # five nodes, two sweeps each
    assert not clf.hyper_results_["converged"].any()
    assert np.all(np.isfinite(clf.predict_proba(X)))


def test_bad_values_are_refused():
    X, y = _two_gene_data(0)
    with pytest.raises(ValueError, match="'prior_inclusion' parameter of SpikeSlabClassifier"):
        SpikeSlabClassifier(prior_inclusion=0.0).fit(X, y)
    with pytest.raises(ValueError, match="prior_genes must be a non-empty tuple of positive"):
        SpikeSlabClassifier(prior_genes=(1, -2)).fit(X, y)
    X[0, 0] = np.nan
    with pytest.raises(DataError, match="NaN"):
        SpikeSlabClassifier().fit(X, y)


def test_dask_input_is_gathered(seed):
    da = pytest.importorskip("dask.array")
    X, y = _two_gene_data(seed)
    lazy = da.from_array(X, chunks=(20, 40))
    a = SpikeSlabClassifier().fit(X, y)
    b = SpikeSlabClassifier().fit(lazy, y)
    np.testing.assert_array_equal(a.pip_, b.pip_)
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(lazy))


# A check's data may leave no gene above the PIP threshold; transform then warns that nothing was
# selected, which is the right answer there and not what the check tests.
@pytest.mark.filterwarnings("ignore:No features were selected:UserWarning")
@parametrize_with_checks([SpikeSlabClassifier()])
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        check(estimator)


def test_a_sparse_prior_is_reached_by_continuation():
    """A very sparse prior (p0 = 1 / p) on genes of low rank (5 factors) converges.

    The estimator reaches it by continuation from a denser prior's fit (a cold start at such a prior
    is where EP is most likely to cycle).
    """
    rng = np.random.default_rng(9)
    n, p = 60, 1000
    X = rng.normal(size=(n, 5)) @ rng.normal(size=(5, p)) + 0.7 * rng.normal(size=(n, p))
    Z = (X - X.mean(axis=0)) / X.std(axis=0)
    t = np.where(2.0 * Z[:, 0] - 2.0 * Z[:, 1] + rng.normal(size=n) > 0, 1.0, -1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        clf = SpikeSlabClassifier(prior_inclusion=1 / p).fit(X, t)
    assert clf.hyper_results_["converged"].all()
    assert np.isfinite(clf.log_evidence_[0])
    assert np.mean(clf.predict(X) == t) > 0.8
