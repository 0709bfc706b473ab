"""ardselect.get: reading stored results back."""

from __future__ import annotations

import anndata as ad
import numpy as np
import pandas as pd
import pytest

import ardselect
from ardselect.preprocessing import Preprocessor


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
    # Up and down by the data (Welch's t of ctrl against case), as the descriptions say.
    for name, keep in (("ctrl_up", sel["t_stat"] > 0), ("ctrl_down", sel["t_stat"] < 0)):
        desc, genes = sets[name]
        assert "criterion cv" in desc
        assert f"{len(genes)} selected genes with mean" in desc
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
    # One row per symbol: the probe with the larger |score| speaks for "A" (its t, lifted above
    # every unselected gene's |t| when it is selected).
    lift = table.loc[~table["selected"], "t_stat"].abs().max()
    score = table["t_stat"] + np.sign(table["t_stat"]) * lift * table["selected"]
    expected = score.loc[["G0", "G1"]]
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
    assert not out["t_stat"].duplicated().any()
    # The score's sign is the gene's direction, and the selected genes lead at either end.
    scores = rnk.set_index("gene")["score"]  # named by symbol: the fixture's var["symbol"]
    for row in table.itertuples():
        assert np.sign(scores[row.description]) == (1 if row.direction == "up" else -1)
    sel = table[table["selected"]]
    top = set(rnk["gene"].head(int((sel["direction"] == "up").sum())))
    assert top == set(sel.loc[sel["direction"] == "up", "description"])
    bottom = set(rnk["gene"].tail(int((sel["direction"] == "down").sum())))
    assert bottom == set(sel.loc[sel["direction"] == "down", "description"])
    multi = adata_factory(n_samples=30, n_genes=10, n_classes=3, seed=2)
    ardselect.rank_genes(multi, "label")
    with pytest.raises(KeyError, match="give the group: one of class0, class1, class2"):
        ardselect.get.ranked_list(multi)
    assert ardselect.get.ranked_list(multi, group="class2")["gene"].iloc[0] == "SYM2"


def test_gene_set_directions_agree_with_the_class_means_on_real_data():
    # Golub's leukaemia data: every gene of AML_up has a higher mean in AML than in ALL on the data
    # the model was fitted on (floored, capped, log10), and every gene of AML_down a lower one;
    # the .rnk scores carry the same signs.
    adata = ardselect.datasets.leukaemia()
    ardselect.rank_genes(adata, "label", positive="AML",
                         preprocessor=Preprocessor(floor=100, cap=16000, log="log10"))
    Z = np.log10(np.clip(np.asarray(adata.X, dtype=np.float64), 100, 16000))
    aml = (adata.obs["label"] == "AML").to_numpy()
    diff = pd.Series(Z[aml].mean(axis=0) - Z[~aml].mean(axis=0), index=adata.var_names)
    ranked = ardselect.get.ranked_genes_df(adata, selected_only=True).set_index("gene")
    sets = ardselect.get.gene_sets(adata)
    assert set(sets) <= {"AML_up", "AML_down"}
    assert sum(len(g) for _, g in sets.values()) == len(ranked)
    up = ranked.index[ranked["direction"] == "up"]
    down = ranked.index[ranked["direction"] == "down"]
    assert (diff[up] > 0).all()
    assert (diff[down] < 0).all()
    # (named by probe id: the data's descriptions are free text, not gene symbols)
    scores = ardselect.get.ranked_list(adata).set_index("gene")["score"]
    assert (scores[up] > 0).all()
    assert (scores[down] < 0).all()


def test_ranked_genes_df_names_the_weight_and_reads_older_records(ranked_adata):
    from ardselect.signature._kinds import ARD_GENE_TABLE_RENAMES

    table = ardselect.get.ranked_genes_df(ranked_adata, "res")
    assert {"weight", "weight_sd", "log_bf_conditional"} <= set(table.columns)
    assert not {"mean", "sd", "log_bf", "p_sign"} & set(table.columns)
    # A record written before the renames holds "mean", "sd" and "log_bf": read under the
    # current names.
    old = ranked_adata.copy()
    record = dict(old.uns["res"]["ranked"])
    back = {new: old_name for old_name, new in ARD_GENE_TABLE_RENAMES.items()}
    record["columns"] = np.array([back.get(c, c) for c in record["columns"]], dtype=object)
    for new, old_name in back.items():
        record[old_name] = record.pop(new)
    old.uns["res"]["ranked"] = record
    pd.testing.assert_frame_equal(ardselect.get.ranked_genes_df(old, "res"), table)
