"""rank_genes results in scanpy's rank_genes_groups layout, read by scanpy's own functions.

scanpy is a test-only dependency (the ``test`` extra); the library never imports it.
"""

from __future__ import annotations

import warnings

import anndata as ad
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

import ardselect

sc = pytest.importorskip("scanpy")

# scanpy and its plotting stack warn about their own deprecations (numba, matplotlib, pandas);
# none of these concern ardselect's record, which is what the tests check.
pytestmark = [
    pytest.mark.filterwarnings("ignore::FutureWarning"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::UserWarning"),
    pytest.mark.filterwarnings("ignore::RuntimeWarning:scanpy"),
]


def _cells(n_per=25, n_genes=30, n_groups=3, seed=0, *, sparse=True):
    """Log-normalised counts (scanpy's log1p convention): gene k is up in group k, gene 10 + k down."""
    rng = np.random.default_rng(seed)
    groups = np.repeat([f"type{k}" for k in range(n_groups)], n_per)
    rate = np.full((groups.size, n_genes), 2.0)
    for k in range(n_groups):
        rate[groups == f"type{k}", k] = 12.0
        rate[groups == f"type{k}", 10 + k] = 0.2
    counts = rng.poisson(rate).astype(np.float64)
    X = np.log1p(counts)
    obs = pd.DataFrame({"cell_type": pd.Categorical(groups)},
                       index=[f"c{i}" for i in range(groups.size)])
    var = pd.DataFrame(index=[f"G{j}" for j in range(n_genes)])
    return ad.AnnData(sp.csr_matrix(X) if sparse else X, obs=obs, var=var)


@pytest.fixture(scope="module")
def multi():
    adata = _cells()
    ardselect.rank_genes(adata, "cell_type", key_added="ard")
    return adata


def test_layout_and_scores_follow_the_ranked_table(multi):
    rec = multi.uns["ard"]
    groups = ["type0", "type1", "type2"]
    for field in ("names", "scores", "pvals", "pvals_adj", "logfoldchanges"):
        assert list(rec[field].dtype.names) == groups
        assert rec[field].shape == (multi.n_vars,)
    params = rec["params"]
    assert params["groupby"] == "cell_type"
    assert params["reference"] == "rest"
    assert params["method"] == "ardselect"
    assert params["use_raw"] is False
    for g in groups:
        table = ardselect.get.ranked_genes_df(multi, "ard", group=g).set_index("gene")
        names = list(rec["names"][g])
        assert sorted(names) == sorted(multi.var_names)
        sel = table.loc[names, "selected"].to_numpy()
        k = int(sel.sum())
        assert sel[:k].all()  # genes in the model first,
        assert not sel[k:].any()  # the others after them,
        assert names[k:] == table.index[~table["selected"]].tolist()  # in ardselect's rank order
        z = (table["weight"] / table["weight_sd"]).loc[names[:k]].to_numpy()
        np.testing.assert_allclose(rec["scores"][g][:k], z)
        assert np.all(np.diff(rec["scores"][g][:k]) <= 0)
        assert np.all(rec["scores"][g][k:] == 0)
        assert np.isnan(rec["pvals"][g]).all()  # no test was run: no p-values
        assert names[0] == f"G{g[-1]}"  # the planted up gene tops its class


def test_fold_changes_match_scanpy_own(multi):
    ref = multi.copy()
    sc.tl.rank_genes_groups(ref, "cell_type", method="t-test", key_added="ref")
    for g in ("type0", "type1", "type2"):
        ours = sc.get.rank_genes_groups_df(multi, g, key="ard").set_index("names")
        theirs = sc.get.rank_genes_groups_df(ref, g, key="ref").set_index("names")
        np.testing.assert_allclose(ours["logfoldchanges"],
                                   theirs.loc[ours.index, "logfoldchanges"], rtol=1e-5, atol=1e-5)


def test_scanpy_get_and_plots_run_unchanged(multi, tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    df = sc.get.rank_genes_groups_df(multi, None, key="ard")
    assert list(df.columns[:3]) == ["group", "names", "scores"]
    assert len(df) == 3 * multi.n_vars
    top = sc.get.rank_genes_groups_df(multi, "type1", key="ard")
    assert top["names"].iloc[0] == "G1"
    assert sc.get.rank_genes_groups_df(multi, "type1", key="ard", pval_cutoff=0.05).empty
    axes = sc.pl.rank_genes_groups(multi, key="ard", n_genes=5, show=False)
    assert [ax.get_title() for ax in axes] == [f"type{k} vs. rest" for k in range(3)]
    for plot in (sc.pl.rank_genes_groups_dotplot, sc.pl.rank_genes_groups_matrixplot,
                 sc.pl.rank_genes_groups_heatmap, sc.pl.rank_genes_groups_stacked_violin,
                 sc.pl.rank_genes_groups_tracksplot):
        plot(multi, key="ard", n_genes=3, show=False, dendrogram=False)
        plt.close("all")
    dot = sc.pl.rank_genes_groups_dotplot(multi, key="ard", n_genes=2, dendrogram=False,
                                          return_fig=True)
    assert dot.var_names[0] == "G0"
    sc.pl.rank_genes_groups_violin(multi, key="ard", n_genes=3, show=False)
    plt.close("all")
    multi.write_h5ad(tmp_path / "m.h5ad")
    back = ad.read_h5ad(tmp_path / "m.h5ad")
    pd.testing.assert_frame_equal(sc.get.rank_genes_groups_df(back, None, key="ard"), df)


def test_binary_gives_both_classes_with_opposite_scores():
    adata = _cells(n_groups=2, seed=1, sparse=False)
    ardselect.rank_genes(adata, "cell_type", positive="type1")
    rec = adata.uns["ardselect"]
    assert list(rec["names"].dtype.names) == ["type0", "type1"]
    k = int(adata.var["ardselect_selected"].sum())
    # One model: the negative class's list is the positive one's, weights negated and re-sorted.
    np.testing.assert_allclose(np.sort(rec["scores"]["type0"][:k]),
                               np.sort(-rec["scores"]["type1"][:k]))
    assert rec["names"]["type1"][0] == "G1"
    assert rec["names"]["type0"][0] in ("G0", "G11")
    top = sc.get.rank_genes_groups_df(adata, "type0", key="ardselect")["names"].iloc[0]
    assert top == rec["names"]["type0"][0]


def test_one_class_against_the_rest_lists_that_class_only():
    adata = _cells(n_groups=3, seed=2)
    ardselect.rank_genes(adata, "cell_type", positive="type2")
    rec = adata.uns["ardselect"]
    assert list(rec["names"].dtype.names) == ["type2"]
    assert sc.get.rank_genes_groups_df(adata, "type2", key="ardselect")["names"].iloc[0] == "G2"


def test_fold_changes_are_nan_where_a_ratio_of_means_means_nothing():
    adata = _cells(seed=3, sparse=False)
    adata.X = (adata.X - adata.X.mean(axis=0)) / adata.X.std(axis=0)  # z-scores: negative values
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ardselect.ConstantFeatureWarning)
        ardselect.rank_genes(adata, "cell_type")
    assert np.isnan(adata.uns["ardselect"]["logfoldchanges"]["type0"]).all()
    assert sc.get.rank_genes_groups_df(adata, "type0", key="ardselect")["names"].iloc[0] == "G0"


def test_class_names_of_any_form_survive_write_h5ad(tmp_path):
    names = ["CD4+/CD25 T Reg", "a.b", "\u00e9t\u00e9 \u2014 \u03b1"]
    adata = _cells(n_groups=3, seed=4)
    adata.obs["cell_type"] = pd.Categorical(
        np.asarray(adata.obs["cell_type"]).astype(str), categories=["type0", "type1", "type2"]
    ).rename_categories(names)
    ardselect.rank_genes(adata, "cell_type")
    adata.write_h5ad(tmp_path / "n.h5ad")
    back = ad.read_h5ad(tmp_path / "n.h5ad")
    assert sorted(back.uns["ardselect"]["names"].dtype.names) == sorted(names)
    df = sc.get.rank_genes_groups_df(back, names[0], key="ardselect")
    assert df["names"].iloc[0] == "G0"
