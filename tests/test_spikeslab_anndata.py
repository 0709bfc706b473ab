"""rank_genes(estimator=SpikeSlabClassifier()): the record it writes and what reads it back."""

from __future__ import annotations

import anndata as ad
import numpy as np
import pandas as pd
import pytest

import ardselect
from ardselect import ARDClassifier, SpikeSlabClassifier
from ardselect.exceptions import ArdselectError
from ardselect.preprocessing import Preprocessor
from ardselect.signature._kinds import _SPIKESLAB_COLUMNS


def _copies(seed=0, n=80, p=30):
    """Gene 0 decides the class; gene 1 is a near copy of it (a credible set); gene 7 constant."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    X[:, 1] = X[:, 0] + 0.05 * rng.normal(size=n)
    X[:, 7] = 3.0
    y = np.where(2.0 * X[:, 0] + 0.5 * rng.normal(size=n) > 0, "tumour", "normal")
    obs = pd.DataFrame({"tissue": y}, index=[f"s{i}" for i in range(n)])
    var = pd.DataFrame({"symbol": [f"SYM{j}" for j in range(p)]},
                       index=[f"g{j}" for j in range(p)])
    return ad.AnnData(X, obs=obs, var=var)


@pytest.fixture(scope="module")
def ranked_copies():
    adata = _copies()
    ardselect.rank_genes(adata, "tissue",
                         estimator=SpikeSlabClassifier(constant_features="ignore"))
    return adata


def test_record_columns_and_values(ranked_copies):
    adata = ranked_copies
    table = ardselect.get.ranked_genes_df(adata)
    assert tuple(table.columns) == _SPIKESLAB_COLUMNS
    assert len(table) == adata.n_vars
    # The PIPs are SpikeSlabClassifier's on the preprocessed genes (the constant one dropped: 0).
    Z = Preprocessor(log="none").fit(adata.X).transform(adata.X)
    clf = SpikeSlabClassifier(constant_features="ignore").fit(
        Z, (adata.obs["tissue"] == "tumour").astype(int))
    kept = [g for g in adata.var_names if g != "g7"]
    by_gene = table.set_index("gene")
    np.testing.assert_allclose(by_gene.loc[kept, "pip"].to_numpy(), clf.pip_[0], rtol=1e-10)
    assert by_gene.loc["g7", "pip"] == 0.0
    assert not by_gene.loc["g7", "selected"]
    assert by_gene.loc["g7", "rank"] == adata.n_vars
    # selected is PIP above the threshold; the table is in decreasing PIP.
    np.testing.assert_array_equal(table["selected"], table["pip"] > 0.5)
    assert np.all(np.diff(table["pip"].to_numpy()) <= 0)
    assert by_gene.loc["g0", "direction"] == "up"
    assert by_gene.loc["g0", "description"] == "SYM0"
    # var and the stored record carry the same numbers.
    np.testing.assert_allclose(adata.var.loc[kept, "ardselect_pip"], by_gene.loc[kept, "pip"])
    assert adata.uns["ardselect"]["model"] == "spike-slab"
    assert adata.uns["ardselect"]["params"]["model"] == "spike-slab"
    assert float(adata.uns["ardselect"]["threshold"]) == 0.5


def test_credible_set_in_table_var_and_sets(ranked_copies):
    adata = ranked_copies
    table = ardselect.get.ranked_genes_df(adata).set_index("gene")
    sets = ardselect.get.credible_sets_df(adata)
    assert set(sets.loc[sets["set"] == 1, "gene"]) == {"g0", "g1"}
    assert sets["set_pip"].iloc[0] >= 0.95
    assert list(sets.columns) == ["class", "set", "gene", "description", "pip", "set_pip", "size",
                                  "purity"]
    assert table.loc["g0", "credible_set"] == 1
    assert table.loc["g1", "credible_set"] == 1
    assert pd.isna(table.loc["g5", "credible_set"])
    assert table.loc["g0", "set_pip"] == pytest.approx(sets["set_pip"].iloc[0])
    assert adata.var.loc["g0", "ardselect_credible_set"] == 1
    assert adata.var.loc["g5", "ardselect_credible_set"] == 0  # 0: in no set


def test_h5ad_round_trip(ranked_copies, tmp_path):
    path = tmp_path / "r.h5ad"
    ranked_copies.write_h5ad(path)
    back = ad.read_h5ad(path)
    pd.testing.assert_frame_equal(ardselect.get.ranked_genes_df(back),
                                  ardselect.get.ranked_genes_df(ranked_copies))
    pd.testing.assert_frame_equal(ardselect.get.credible_sets_df(back),
                                  ardselect.get.credible_sets_df(ranked_copies))


def test_portable_model_predicts_as_the_estimator(ranked_copies, tmp_path):
    adata = ranked_copies
    model = ardselect.get.model(adata)
    assert model.kind == "spike-slab"
    assert "g7" not in model.features  # the constant gene is in no model
    Z = Preprocessor(log="none").fit(adata.X).transform(adata.X)
    clf = SpikeSlabClassifier(constant_features="ignore").fit(
        Z, (adata.obs["tissue"] == "tumour").astype(int))
    got = model.predict_proba(adata)
    assert list(got.columns) == ["normal", "tumour"]
    np.testing.assert_allclose(got.to_numpy(), clf.predict_proba(Z), rtol=1e-12, atol=1e-15)
    # the record survives an h5ad round trip
    adata.write_h5ad(tmp_path / "r.h5ad")
    back = ardselect.get.model(ad.read_h5ad(tmp_path / "r.h5ad"))
    np.testing.assert_array_equal(back.predict_proba(adata).to_numpy(), got.to_numpy())


def test_readers_of_ard_only_results_refuse(ranked_copies):
    for reader in (ardselect.get.path_df, ardselect.get.chosen_steps):
        with pytest.raises(ArdselectError, match="spike-and-slab results"):
            reader(ranked_copies)
    sets = ardselect.get.gene_sets(ranked_copies)
    assert set(sets) == {"tumour_up"}
    assert "spike-and-slab" in sets["tumour_up"][0]
    assert "PIP > 0.5" in sets["tumour_up"][0]
    # scanpy's record: the selected genes first.
    assert ranked_copies.uns["ardselect"]["names"]["tumour"][0] in {"g0", "g1"}


def test_ard_credible_sets_and_records_without_them(adata_factory):
    adata = adata_factory(n_samples=30, n_genes=8, seed=3)
    ardselect.rank_genes(adata, "label", estimator=ARDClassifier(criterion="evidence"))
    sets = ardselect.get.credible_sets_df(adata)
    assert list(sets.columns) == ["class", "set", "gene", "description", "pip",
                                  "set_probability", "size", "purity"]
    ranked = ardselect.get.ranked_genes_df(adata)
    assert set(ranked.loc[ranked["selected"], "gene"]) <= set(sets["gene"])
    del adata.uns["ardselect"]["credible_sets"]  # a record of an earlier version
    with pytest.raises(ArdselectError, match="no credible sets"):
        ardselect.get.credible_sets_df(adata)


def test_multiclass_record(adata_factory):
    adata = adata_factory(n_samples=36, n_genes=10, n_classes=3, seed=4)
    ardselect.rank_genes(adata, "label", estimator=SpikeSlabClassifier())
    table = ardselect.get.ranked_genes_df(adata)
    problems = list(adata.uns["ardselect"]["problems"])
    assert len(problems) == 3
    assert list(dict.fromkeys(table["class"])) == problems
    assert adata.varm["ardselect_pip"].shape == (10, 3)
    assert adata.varm["ardselect_credible_set"].shape == (10, 3)
    for k, cls in enumerate(problems):
        block = table[table["class"] == cls].set_index("gene")
        np.testing.assert_allclose(adata.varm["ardselect_pip"][:, k],
                                   block.loc[adata.var_names, "pip"])
