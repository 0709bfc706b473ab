# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Cell-type marker genes from single-cell data: pbmc68k_reduced
#
# **The biological question.** Peripheral blood mononuclear cells (PBMCs) are a mix of T cells, B
# cells, NK cells, monocytes and dendritic cells. Which few genes tell one type from all the
# others? A short, non-redundant marker panel is what flow panels, deconvolution signatures and
# annotation of new data sets need. ARD answers a slightly different question from a per-gene
# test: it keeps the genes that *jointly* predict the type, so two genes carrying the same signal
# are rarely both kept, and genes that are *absent* from the type (negative weights) can be
# markers too.
#
# **The data.** `pbmc68k_reduced` is a 700-cell, 765-gene subsample of the 10x Genomics "Fresh 68k
# PBMCs" data (Zheng et al. 2017, *Nature Communications* 8:14049) that ships with scanpy, with
# bulk-sorted cell-type labels in `obs["bulk_labels"]`. It is not bundled with ardselect: this
# vignette reads it from `../shared/data/pbmc68k_reduced/pbmc68k_reduced.h5ad` beside the
# repository, from `$ARDSELECT_PBMC`, or from the path given as first argument, and stops with a
# message if none exists (with scanpy installed, `scanpy.datasets.pbmc68k_reduced()` gives the
# same object).
#
# Run with `python vignettes/02-pbmc-markers.py [PATH]`; `ARDSELECT_QUICK=1` keeps only three
# well-separated cell types (B cells, CD14+ monocytes, NK cells; 255 cells), as CI does.

# %%
import os
import sys
import warnings
from pathlib import Path

import anndata as ad
import numpy as np
import pandas as pd

import ardselect

QUICK = os.environ.get("ARDSELECT_QUICK", "") not in ("", "0")
pd.set_option("display.width", 120)


def find_pbmc():
    candidates = [a for a in sys.argv[1:2] if a.endswith(".h5ad")]
    candidates.append(os.environ.get("ARDSELECT_PBMC", ""))
    here = Path(globals().get("__file__", Path.cwd() / "vignettes" / "x.py")).resolve()
    candidates.append(here.parents[1].parent / "shared/data/pbmc68k_reduced/pbmc68k_reduced.h5ad")
    for c in candidates:
        if c and Path(c).is_file():
            return Path(c)
    return None


path = find_pbmc()
if path is None:
    print("pbmc68k_reduced.h5ad not found (give its path as argument or in $ARDSELECT_PBMC); "
          "skipping this vignette.")
    sys.exit(0)

with warnings.catch_warnings():
    warnings.simplefilter("ignore", FutureWarning)  # old uns layout of this file; harmless
    adata = ad.read_h5ad(path)
print(adata)
print(adata.obs["bulk_labels"].value_counts().to_string())
if QUICK:
    adata = adata[adata.obs["bulk_labels"].isin(["CD19+ B", "CD14+ Monocyte", "CD56+ NK"])].copy()
    adata.obs["bulk_labels"] = adata.obs["bulk_labels"].astype(str)

# %% [markdown]
# ## 1. Which matrix?
#
# `X` holds z-scored values and `raw` the log-normalised expression (about two thirds zeros).
# Marker weights are easiest to read on log-normalised data, so we use `use_raw=True`
# (`--use-raw` on the command line). ardselect sees values that are already logged and chooses no
# log transform itself; the sparse matrix is scaled per gene but not centred, which keeps it
# sparse (centring would only shift the intercept).

# %% [markdown]
# ## 2. B cells against everything else
#
# `positive="CD19+ B"` fits one binary problem, B cells vs all other cells
# ([`ardselect.rank_genes`](../ardselect/signature/_anndata.py)); the command-line equivalent is
# `ardselect fit pbmc68k_reduced.h5ad -g bulk_labels --positive "CD19+ B" --use-raw`.

# %%
ardselect.rank_genes(adata, "bulk_labels", positive="CD19+ B", use_raw=True, key_added="bcell")
print(adata.uns["bcell"]["preprocessing"]["description"])
b = ardselect.get.ranked_genes_df(adata, "bcell", selected_only=True)
print(f"{len(b)} genes selected")
print(b[["rank", "gene", "weight", "weight_sd"]].head(12).to_string(index=False))

# %% [markdown]
# **Reading the list.** Positive weights mark genes higher in B cells: CD79A (Ig-alpha, part of the
# B-cell receptor) is the textbook example. Negative weights mark genes that B cells lack but
# many other cells express, such as TYROBP (DAP12, an adaptor of NK and myeloid receptors): they
# are genuine "not a B cell" evidence. The file also stores scanpy's own `rank_genes_groups`
# result (logistic regression, same labels), so we can compare the two lists.

# %%
known_b = {"CD79A", "CD79B", "MS4A1", "CD19", "CD22", "BANK1", "SPIB", "TCL1A", "CD74", "HLA-DRA"}
present = sorted(known_b & set(adata.var_names))
sel = set(b["gene"])
print("known B-cell genes among the 765:", present)
print("of those, selected by ARD:", sorted(sel & set(present)))
if "rank_genes_groups" in adata.uns:
    scanpy_top = [str(g) for g in adata.uns["rank_genes_groups"]["names"]["CD19+ B"][:20]]
    ard_top = b.loc[b["weight"] > 0, "gene"].head(20).tolist()
    print("scanpy logreg top 20:", scanpy_top)
    print("ARD positive-weight genes:", ard_top)
    print("shared:", sorted(set(scanpy_top) & set(ard_top)))

# %% [markdown]
# ## 3. A marker panel for every cell type, tested on held-out cells
#
# Without `positive`, each cell type is fitted against the rest (one ARD path per type) and the
# ranked list gains a class column. We fit on a random half of the cells, stratified by type, and
# predict the type of the other half with the portable model (the one-vs-rest probabilities,
# normalised). Quick mode keeps three well-separated types.

# %%
from sklearn.model_selection import train_test_split

cells = adata
cells.obs["cell_type"] = cells.obs["bulk_labels"].astype(str)
train_idx, test_idx = train_test_split(
    np.arange(cells.n_obs), train_size=0.5, stratify=cells.obs["cell_type"], random_state=0
)
train, test = cells[train_idx].copy(), cells[test_idx].copy()
ardselect.rank_genes(train, "cell_type", use_raw=True, key_added="markers")
markers = ardselect.get.ranked_genes_df(train, "markers", selected_only=True)
panel = markers[markers["weight"] > 0].groupby("class", sort=False).head(5)
print(panel.groupby("class", sort=False)["gene"].apply(", ".join).to_string())

# %%
model = ardselect.get.model(train, "markers")
# The model remembers that it was fitted on `raw.X` and reads the test cells' raw values itself.
pred = model.predict(test)
truth = test.obs["cell_type"].to_numpy()
print(f"held-out accuracy: {np.mean(pred == truth):.3f} on {test.n_obs} cells")
print(pd.crosstab(pd.Series(truth, name="true"), pd.Series(pred, name="predicted")).to_string())

# %% [markdown]
# Monocytes, B cells and NK cells are transcriptionally distinct, and the quick run separates
# them almost perfectly. In the full ten-type run, read the confusion table for the T-cell
# subsets and for the two myeloid types (CD14+ monocytes and dendritic cells): the labels come
# from bulk sorting on surface proteins, and such neighbouring populations differ little in
# mRNA, so expect most errors there. For NK cells, look for cytotoxic granule genes (GNLY, GZMB,
# PRF1, NKG7) among the positive weights: that is what a sensible marker panel contains.
#
# **Command-line version**
#
# ```bash
# ardselect fit pbmc68k_reduced.h5ad -g bulk_labels --use-raw --out pbmc_markers
# # pbmc_markers/genes.tsv: class, rank, gene, ...; pbmc_markers/genes.gmt: one set per type
# ```
