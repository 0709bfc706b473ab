"""ardselect.get: reading stored results back."""

from __future__ import annotations

import anndata as ad
import pytest

import ardselect


@pytest.fixture(scope="module")
def ranked_adata(adata_factory):
    adata = adata_factory(n_samples=30, n_genes=10, seed=1)
    ardselect.rank_genes(adata, "label", key_added="res")
    return adata


def test_ranked_genes_df_filters(ranked_adata):
    full = ardselect.get.ranked_genes_df(ranked_adata, "res")
    sel = ardselect.get.ranked_genes_df(ranked_adata, "res", selected_only=True)
    assert len(full) == 10
    assert sel["selected"].all()
    assert len(sel) == int(ranked_adata.var["res_selected"].sum())
    assert sel["rank"].tolist() == list(range(1, len(sel) + 1))  # selected genes rank first
    same = ardselect.get.ranked_genes_df(ranked_adata, "res", group="ctrl")
    assert len(same) == 10
    with pytest.raises(KeyError, match="group 'nope' not in the results; groups: ctrl"):
        ardselect.get.ranked_genes_df(ranked_adata, "res", group="nope")


def test_missing_key(ranked_adata):
    with pytest.raises(KeyError, match=r"no ardselect results under uns\['ardselect'\]; stored keys: res"):
        ardselect.get.ranked_genes_df(ranked_adata)
    with pytest.raises(KeyError, match="run ardselect.rank_genes first"):
        ardselect.get.path_df(ad.AnnData(ranked_adata.X))


def test_gene_sets_and_model(ranked_adata):
    sets = ardselect.get.gene_sets(ranked_adata, "res")
    assert list(sets) == ["ctrl_vs_case"]
    desc, genes = sets["ctrl_vs_case"]
    assert "criterion loo" in desc
    assert f"{len(genes)} genes" in desc
    assert genes == ardselect.get.ranked_genes_df(ranked_adata, "res", selected_only=True)[
        "gene"
    ].tolist()
    model = ardselect.get.model(ranked_adata, "res")
    assert model.classes == ["case", "ctrl"]
    assert set(model.features) == set(genes)
    pred = model.predict(ranked_adata)
    assert (pred == ranked_adata.obs["label"].to_numpy()).mean() > 0.9
