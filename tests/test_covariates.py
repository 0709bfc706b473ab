"""Known covariates held in every model: the estimator (``fit(..., covariates=...)``)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp

from ardselect import ARDClassifier
from ardselect.engine._problem import size_steps
from ardselect.exceptions import DataError


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


# ---------------------------------------------------------------------------- encoding
def test_one_hot_and_standardised_columns_match_a_hand_built_design():
    import pandas as pd

    from ardselect.dataio._covariates import CovariateEncoder

    obs = pd.DataFrame({"batch": ["b2", "b1", "b3", "b2"], "male": [True, False, True, True],
                        "age": [30.0, 50.0, 40.0, 60.0]})
    enc = CovariateEncoder(["batch", "male", "age"]).fit(obs)
    age = np.array([30.0, 50.0, 40.0, 60.0])
    hand = np.column_stack([
        [1, 0, 0, 1],  # batch[b2] (b1, first in sorted order, is the reference)
        [0, 0, 1, 0],  # batch[b3]
        [1, 0, 1, 1],  # male[True] (False is the reference)
        (age - age.mean()) / age.std(),
    ])
    assert enc.column_names_ == ["batch[b2]", "batch[b3]", "male[True]", "age"]
    assert np.array_equal(enc.transform(obs), hand)
    # replayed by name on new samples, in any column order
    new = pd.DataFrame({"age": [45.0], "male": [False], "batch": ["b3"], "other": [1]})
    again = CovariateEncoder.from_dict(enc.to_dict())
    assert np.allclose(again.transform(new), [[0, 1, 0, (45.0 - age.mean()) / age.std()]])


def test_the_encoder_refuses_what_it_cannot_encode():
    import pandas as pd

    from ardselect.dataio._covariates import CovariateEncoder

    obs = pd.DataFrame({"batch": ["a", "b", "a"], "one": ["x", "x", "x"], "age": [1.0, 2, 3]})
    with pytest.raises(DataError, match="single level"):
        CovariateEncoder(["one"]).fit(obs)
    with pytest.raises(DataError, match="'sex' is not a column .* available: batch, one, age"):
        CovariateEncoder(["sex"]).fit(obs)
    enc = CovariateEncoder(["batch", "age"]).fit(obs)
    with pytest.raises(DataError, match="level\\(s\\) 'c' that the model was not fitted with"):
        enc.transform(obs.assign(batch=["a", "c", "b"]))
    with pytest.raises(DataError, match="missing or infinite"):
        enc.transform(obs.assign(age=[1.0, np.nan, 2.0]))


# ---------------------------------------------------------------------------- rank_genes
@pytest.fixture
def batch_adata(rng):
    import anndata as ad
    import pandas as pd

    X, y, C = batch_data(rng, n=100, p=30)
    obs = pd.DataFrame({"label": np.array(["a", "b"])[y],
                        "batch": np.array(["b1", "b2"])[C[:, 0].astype(int)],
                        "age": rng.normal(50, 10, y.size)},
                       index=[f"c{i}" for i in range(y.size)])
    return ad.AnnData(X, obs=obs, var=pd.DataFrame(index=[f"g{j}" for j in range(X.shape[1])]))


def test_rank_genes_holds_obs_covariates_and_lists_genes_only(batch_adata):
    import ardselect

    ardselect.rank_genes(batch_adata, "label", covariates=["batch", "age"])
    ranked = ardselect.get.ranked_genes_df(batch_adata)
    assert set(ranked["gene"]) == set(batch_adata.var_names)
    assert not ranked.set_index("gene").loc["g2", "selected"]
    weights = ardselect.get.covariates_df(batch_adata)
    assert list(weights["column"]) == ["batch[b2]", "age"]
    assert list(weights["reference"]) == ["b1", ""]
    assert (weights["sd"] > 0).all()
    model = ardselect.get.model(batch_adata)
    assert model.covariates == ["batch", "age"]
    assert model.data["format_version"] == 4
    # the portable model predicts what the estimator does
    from ardselect.dataio._covariates import CovariateEncoder

    C = CovariateEncoder(["batch", "age"]).fit_transform(batch_adata.obs)
    result = ardselect.fit_signature(ardselect.ExpressionData.from_anndata(
        batch_adata, "label", covariates=["batch", "age"]))
    est = result.estimator
    Z = result.preprocessing.transform(batch_adata.X)
    assert np.allclose(result.model.predict_proba(batch_adata.X, batch_adata.var_names,
                                                  covariates=batch_adata.obs),
                       est.predict_proba(Z, covariates=C), rtol=0, atol=1e-12)


def test_the_portable_model_needs_its_covariates_by_name(batch_adata):
    import ardselect
    from ardselect.exceptions import ModelError

    ardselect.rank_genes(batch_adata, "label", covariates="batch")  # one name, as a str
    assert list(batch_adata.uns["ardselect"]["params"]["covariates"]) == ["batch"]
    model = ardselect.get.model(batch_adata)
    frame = batch_adata.to_df()
    with pytest.raises(ModelError, match="holds the covariates batch; give them"):
        model.predict(frame)
    assert np.array_equal(model.predict(frame, covariates=batch_adata.obs[["batch"]]),
                          model.predict(batch_adata))
    lacking = batch_adata.copy()
    lacking.obs = lacking.obs.drop(columns="batch")
    with pytest.raises(ModelError, match="'batch' is not a column"):
        model.predict(lacking)
    data = json.loads(model.to_json())
    data["problems"][0]["index"][-1] = -3  # only one covariate: -2 is the lowest index
    with pytest.raises(ModelError, match="indexes genes outside"):
        ardselect.model.PortableModel(data)
    data = json.loads(model.to_json())
    data["format_version"] = 3
    with pytest.raises(ModelError, match="format_version must be 4 for a model with covariates"):
        ardselect.model.PortableModel(data)


def test_rank_genes_refuses_bad_covariates(batch_adata):
    import ardselect

    with pytest.raises(ardselect.exceptions.LabelError, match="covariate 'sex' is not an obs column"):
        ardselect.rank_genes(batch_adata, "label", covariates=["sex"])
    with pytest.raises(ValueError, match="ARD model only"):
        ardselect.rank_genes(batch_adata, "label", covariates=["batch"],
                             estimator=ardselect.SpikeSlabClassifier())
    with pytest.raises(ValueError, match="cannot also be a covariate"):
        ardselect.rank_genes(batch_adata, "label", covariates=["label"])


def test_evaluate_holds_the_covariates_in_the_methods_that_take_them(rng):
    from sklearn.linear_model import LogisticRegression

    from ardselect.model_selection import ep_leave_group_out, evaluate

    X, y, C = batch_data(rng, n=60, p=15)
    methods = {"ARD": ARDClassifier(criterion="evidence"), "LR": LogisticRegression()}
    results, predictions = evaluate(X, y, methods, covariates=C, n_splits=2)
    assert set(results["method"]) == {"ARD", "LR"}
    assert np.isfinite(predictions.filter(like="prob_").to_numpy()).all()
    scores, _ = ep_leave_group_out(ARDClassifier(criterion="evidence"), X, y,
                                   np.arange(60) % 4, covariates=C)
    assert scores["genes"].iloc[0] <= X.shape[1]
