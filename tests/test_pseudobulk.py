"""Pseudobulk: each donor's and label's counts summed, normalised, fitted with donors held out."""

from __future__ import annotations

import anndata as ad
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

import ardselect
from ardselect.exceptions import DataError, LabelError


def cells(rng, n_donors=6, per=12, p=10):
    """Cells of two types from ``n_donors`` donors; integer counts, a donor-level sex."""
    donor = np.repeat([f"d{i}" for i in range(n_donors)], per)
    cell_type = np.where(rng.random(donor.size) < 0.5, "T", "B")
    counts = rng.poisson(3.0, size=(donor.size, p)).astype(np.float64)
    counts[cell_type == "T", 0] += rng.poisson(6.0, size=int((cell_type == "T").sum()))
    obs = pd.DataFrame({"cell_type": cell_type, "donor": donor,
                        "sex": np.repeat(np.where(np.arange(n_donors) % 2, "M", "F"), per),
                        "pct_mito": rng.uniform(0, 10, donor.size),
                        "barcode": [f"bc{i}" for i in range(donor.size)]},
                       index=[f"c{i}" for i in range(donor.size)])
    return ad.AnnData(counts, obs=obs, var=pd.DataFrame(index=[f"g{j}" for j in range(p)]))


def test_sums_and_normalisation_match_a_hand_computed_aggregate(rng):
    adata = cells(rng)
    bulk = ardselect.pseudobulk(adata, "cell_type", "donor")
    X, obs = adata.X, adata.obs
    for name, row in bulk.obs.iterrows():
        mask = ((obs["donor"] == row["donor"]) & (obs["cell_type"] == row["cell_type"])).to_numpy()
        hand = X[mask].sum(axis=0)
        assert name == f"{row['donor']}|{row['cell_type']}"
        assert np.array_equal(bulk[name].layers["counts"].ravel(), hand)
        assert np.allclose(bulk[name].X.ravel(), np.log1p(hand / hand.sum() * 1e6))
        assert row["n_cells"] == mask.sum()
        assert np.isclose(row["pct_mito"], obs.loc[mask, "pct_mito"].mean())
        assert row["sex"] == obs.loc[mask, "sex"].iloc[0]
    assert "barcode" not in bulk.obs.columns  # differs within a pair
    assert bulk.n_obs == obs.groupby(["donor", "cell_type"]).ngroups
    assert bulk.uns["pseudobulk"]["n_cells"] == adata.n_obs


def test_the_counts_are_found_in_raw_a_layer_or_x(rng):
    adata = cells(rng)
    counts = adata.X.copy()
    ref = ardselect.pseudobulk(adata, "cell_type", "donor").layers["counts"]
    logged = adata.copy()
    logged.X = np.log1p(counts)
    with pytest.raises(DataError, match="X hold\\(s\\) no counts"):
        ardselect.pseudobulk(logged, "cell_type", "donor")
    logged.layers["counts"] = sp.csr_matrix(counts)
    bulk = ardselect.pseudobulk(logged, "cell_type", "donor")
    assert bulk.uns["pseudobulk"]["input"] == "layer 'counts'"
    assert np.array_equal(bulk.layers["counts"], ref)
    raw = adata.copy()
    raw.raw = raw
    raw.X = np.log1p(counts)
    bulk = ardselect.pseudobulk(raw, "cell_type", "donor")
    assert bulk.uns["pseudobulk"]["input"] == "raw.X"
    assert np.array_equal(bulk.layers["counts"], ref)
    with pytest.raises(DataError, match="layer 'x' not found"):
        ardselect.pseudobulk(adata, "cell_type", "donor", layer="x")
    with pytest.raises(LabelError, match="donor key 'patient' is not an obs column"):
        ardselect.pseudobulk(adata, "cell_type", "patient")


def test_per_donor_only_without_labels(rng):
    adata = cells(rng)
    bulk = ardselect.pseudobulk(adata, None, "donor")
    assert list(bulk.obs_names) == [f"d{i}" for i in range(6)]
    assert np.array_equal(bulk.layers["counts"][0], adata.X[:12].sum(axis=0))


def test_grouped_folds_never_split_a_donor(rng):
    from ardselect.estimators._cv import make_folds
    from ardselect.model_selection import partitions

    bulk = ardselect.pseudobulk(cells(rng, n_donors=10), "cell_type", "donor")
    donors = bulk.obs["donor"].to_numpy()
    y = (bulk.obs["cell_type"] == "T").to_numpy().astype(int)
    for train, test, _ in make_folds(y, 5, 2, 0, groups=donors):
        assert not set(donors[train]) & set(donors[test])
    for train, test in partitions(y, n_splits=5, groups=donors):
        assert not set(donors[train]) & set(donors[test])


def test_a_pseudobulk_fit_chooses_for_new_donors(rng):
    bulk = ardselect.pseudobulk(cells(rng, n_donors=10, per=20), "cell_type", "donor")
    ardselect.rank_genes(bulk, "cell_type", groups="donor")
    table = ardselect.get.cv_groups_df(bulk)
    assert sorted(table["group"]) == sorted(set(bulk.obs["donor"]))
    assert ardselect.get.model(bulk).data["pseudobulk"]["donor"] == "donor"
    top = ardselect.get.ranked_genes_df(bulk).iloc[0]
    assert top["gene"] == "g0"
