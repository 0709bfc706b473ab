"""Known covariates held in every model: the estimator (``fit(..., covariates=...)``)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from ardselect import ARDClassifier, DataError
from ardselect._problem import size_steps


def batch_data(rng, n=90, p=40):
    """Two classes and two batches partly confounded with them.

    Genes 0 and 1 mark the class, gene 2 follows the batch only.
    """
    batch = rng.integers(0, 2, n)
    y = np.where(rng.random(n) < 0.75, batch, 1 - batch)
    X = rng.normal(size=(n, p))
    X[:, 0] += 1.5 * y
    X[:, 1] -= 1.5 * y
    X[:, 2] += 4.0 * batch
    return X, y, batch.astype(float)[:, None]


def fitted(rng, **params):
    X, y, C = batch_data(rng)
    return ARDClassifier(**params).fit(X, y, covariates=C), X, y, C


def test_covariates_are_held_at_every_step_and_never_counted_as_genes(rng):
    clf, X, y, C = fitted(rng)
    fit = clf._fits[0]
    cov_col = X.shape[1] + 1  # after the genes and the intercept
    assert all(cov_col in st.active for st in fit.steps)  # never pruned, to the smallest size
    assert fit.steps[-1].action == "prune"
    # every size counts genes only: the path's pruning tail reaches the intercept-and-covariate
    # model, size 0, and a size's step holds that many gene columns
    sizes = size_steps(fit.steps, np.array([X.shape[1], cov_col]))
    assert 0 in sizes
    for k, i in sizes.items():
        assert np.sum(fit.steps[i].active < X.shape[1]) == k
    assert set(clf.path_["n_basis"]) <= set(range(X.shape[1] + 1))
    assert (clf.cv_results_["n_genes"] == sorted(clf.cv_results_["n_genes"])).all()


def test_covariates_stay_out_of_the_gene_outputs(rng):
    clf, X, y, C = fitted(rng)
    assert clf.coef_.shape == (1, X.shape[1])
    assert clf.n_features_in_ == X.shape[1]
    assert clf.get_support().shape == (X.shape[1],)
    table = clf.ranked_features()
    assert len(table) == X.shape[1]
    assert set(table["feature"]) == {f"x{j}" for j in range(X.shape[1])}
    assert clf.covariate_coef_.shape == (1, 1)
    assert clf.n_covariates_in_ == 1
    assert clf.covariate_coef_sd_[0, 0] > 0
    assert (clf.path_["feature"].str.startswith("(covariate")).sum() == 0


def test_a_gene_that_follows_the_batch_is_not_selected_beside_it(rng):
    X, y, C = batch_data(rng, n=120)
    without = ARDClassifier().fit(X, y)
    held = ARDClassifier().fit(X, y, covariates=C)
    assert without.get_support()[2]  # the batch gene stands in for the batch
    assert not held.get_support()[2]
    assert held.get_support()[[0, 1]].all()
    # the batch's own weight: positive, as class 1 is more frequent in batch 1
    assert held.covariate_coef_[0, 0] > 0


def test_prediction_needs_the_covariates_by_count(rng):
    clf, X, y, C = fitted(rng)
    with pytest.raises(DataError, match="holds 1 covariate column"):
        clf.predict(X)
    with pytest.raises(DataError, match="2 column"):
        clf.predict_proba(X, covariates=np.hstack([C, C]))
    proba = clf.predict_proba(X, covariates=C)
    assert np.array_equal(clf.predict(X, covariates=C),
                          clf.classes_[np.argmax(proba, axis=1)])
    plain = ARDClassifier(criterion="evidence").fit(X, y)
    with pytest.raises(DataError, match="fitted without them"):
        plain.predict(X, covariates=C)


def test_the_covariates_shift_the_latent_by_their_weight(rng):
    clf, X, y, C = fitted(rng, criterion="evidence")
    m0, _ = clf._latent(X, np.zeros_like(C))
    m1, _ = clf._latent(X, np.ones_like(C))
    assert np.allclose(m1 - m0, clf.covariate_coef_[0, 0])


def test_bad_covariates_are_refused(rng):
    X, y, C = batch_data(rng)
    with pytest.raises(DataError, match="constant"):
        ARDClassifier().fit(X, y, covariates=np.ones((X.shape[0], 1)))
    with pytest.raises(DataError, match="one row per sample"):
        ARDClassifier().fit(X, y, covariates=C[:-1])
    bad = C.copy()
    bad[3, 0] = np.nan
    with pytest.raises(DataError, match="missing or infinite"):
        ARDClassifier().fit(X, y, covariates=bad)
    with pytest.raises(DataError, match="must be numbers"):
        ARDClassifier().fit(X, y, covariates=np.array(["a", "b"] * (X.shape[0] // 2)))


@pytest.mark.parametrize("params", [{"intercept_alpha": "ard", "criterion": "evidence"},
                                    {"fit_intercept": False, "criterion": "loo"},
                                    {"multiclass": "shared"}, {"max_genes": 2}])
def test_covariates_with_other_settings(rng, params):
    X, y, C = batch_data(rng)
    if params.get("multiclass") == "shared":
        y = np.where(X[:, 3] > 0.8, 2, y)
        X[:, 3] += 2.0 * (y == 2)
    clf = ARDClassifier(**params).fit(X, y, covariates=C)
    for fit in clf._fits:
        assert fit.n_genes(fit.active) == int(clf.get_support().sum()) or clf.coef_.shape[0] > 1
        assert all(X.shape[1] + int(clf.fit_intercept) in st.active for st in fit.steps)
    assert clf.covariate_coef_.shape == (clf.coef_.shape[0], 1)
    if "max_genes" in params:
        assert clf.get_support().sum() <= 2
    assert np.isfinite(clf.predict_proba(X, covariates=C)).all()


def test_sparse_and_dense_agree_with_covariates(rng):
    X, y, C = batch_data(rng)
    X = np.abs(X) * (rng.random(X.shape) < 0.6)
    dense = ARDClassifier(criterion="evidence").fit(X, y, covariates=C)
    sparse = ARDClassifier(criterion="evidence").fit(sp.csr_matrix(X), y, covariates=C)
    assert np.allclose(dense.coef_, sparse.coef_, atol=1e-8)
    assert np.allclose(dense.predict_proba(X, covariates=C),
                       sparse.predict_proba(sp.csr_matrix(X), covariates=C), atol=1e-8)


def test_grouped_inner_folds_with_covariates(rng):
    X, y, C = batch_data(rng)
    groups = np.arange(X.shape[0]) % 6
    clf = ARDClassifier().fit(X, y, groups=groups, covariates=C)
    assert set(clf.cv_groups_["group"]) == {str(g) for g in range(6)}
