"""ardselect.get: reading stored results back."""

from __future__ import annotations

import anndata as ad
import numpy as np
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
    assert list(sets) == ["ctrl_up", "ctrl_down"]
    sel = ardselect.get.ranked_genes_df(ranked_adata, "res", selected_only=True)
    for name, keep in (("ctrl_up", sel["mean"] > 0), ("ctrl_down", sel["mean"] < 0)):
        desc, genes = sets[name]
        assert "criterion cv" in desc
        assert f"{len(genes)} genes" in desc
        # The data carry a symbol column (var["symbol"] = SYM<k>): sets use it and say so.
        assert "gene symbols from var['symbol']" in desc
        assert genes == ["SYM" + g[1:] for g in sel.loc[keep, "gene"]]
    assert len(sets["ctrl_up"][1]) + len(sets["ctrl_down"][1]) == len(sel)
    model = ardselect.get.model(ranked_adata, "res")
    assert model.classes == ["case", "ctrl"]
    assert set(model.features) == set(sel["gene"])
    pred = model.predict(ranked_adata)
    assert (pred == ranked_adata.obs["label"].to_numpy()).mean() > 0.9


def test_symbols_collapse_and_fall_back_to_ids(adata_factory):
    adata = adata_factory(n_samples=30, n_genes=10, seed=1)
    adata.var["symbol"] = ["A", "A", "", "B", "C", "D", "E", "F", "G", "H"]  # G0, G1 share "A"
    ardselect.rank_genes(adata, "label")
    table = ardselect.get.ranked_genes_df(adata).set_index("gene")
    rnk = ardselect.get.ranked_list(adata)
    assert rnk["gene"].is_unique
    assert "G2" in set(rnk["gene"])  # no symbol: keeps its identifier
    assert set(rnk["gene"]) == {"A", "G2", "B", "C", "D", "E", "F", "G", "H"}
    # One row per symbol: the probe with the larger |z| speaks for "A".
    expected = table.loc[["G0", "G1"], "z"]
    assert rnk.set_index("gene").loc["A", "score"] == expected.iloc[expected.abs().argmax()]
    sets = ardselect.get.gene_sets(adata)
    for _, genes in sets.values():
        assert len(genes) == len(set(genes))


def test_ranked_list_is_signed_and_untied(ranked_adata, adata_factory):
    rnk = ardselect.get.ranked_list(ranked_adata, "res")
    table = ardselect.get.ranked_genes_df(ranked_adata, "res")
    assert list(rnk.columns) == ["gene", "score"]
    assert rnk["score"].is_monotonic_decreasing
    assert len(rnk) == len(table)
    out = table[~table["selected"]]
    assert not out["z"].duplicated().any()
    # Selected genes: the score is the posterior z of the weight.
    sel = table[table["selected"]]
    expected = (sel["mean"] / sel["sd"]).to_numpy()
    np.testing.assert_allclose(sel["z"], expected, rtol=1e-12)
    multi = adata_factory(n_samples=30, n_genes=10, n_classes=3, seed=2)
    ardselect.rank_genes(multi, "label")
    with pytest.raises(KeyError, match="give the group: one of class0, class1, class2"):
        ardselect.get.ranked_list(multi)
    assert ardselect.get.ranked_list(multi, group="class2")["gene"].iloc[0] == "SYM2"
