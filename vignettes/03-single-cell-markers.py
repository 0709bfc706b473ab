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
# # Single-cell marker genes you can trust, in scanpy's own tools: pbmc68k_reduced
#
# **The question.** Which few genes mark each blood cell type, how sure is the model of each of
# them, and does the marker panel actually tell the types apart in cells it has not seen? The usual
# answers (scanpy's `rank_genes_groups` with a t-test, Wilcoxon or logistic regression) rank every
# gene but say neither which genes are needed together, nor how sure one may be of each, nor how
# well the list classifies. ARD-EP gives a sparse panel per type, a per-gene certainty from the
# same single fit, and its results drop into scanpy's plots unchanged.
#
# **The data.** `pbmc68k_reduced` (700 cells, 765 genes, a subsample of 10x Genomics' 68k PBMCs,
# Zheng et al. 2017, *Nat. Commun.* 8:14049; shipped with scanpy) with bulk-sorted cell types in
# `obs["bulk_labels"]`, read with scanpy's own loader (`sc.datasets.pbmc68k_reduced()`: the file
# ships inside the scanpy package, no download).
# `ARDSELECT_QUICK=1` (what CI runs) keeps three well-separated types and one partition. Figures go
# to `$ARDSELECT_VIGNETTE_OUT` (default `./vignette_output`).

# %%
import os
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

import ardselect

QUICK = os.environ.get("ARDSELECT_QUICK", "") not in ("", "0")
OUT = Path(os.environ.get("ARDSELECT_VIGNETTE_OUT", "vignette_output"))
OUT.mkdir(parents=True, exist_ok=True)
pd.set_option("display.width", 120)
warnings.filterwarnings("ignore", category=FutureWarning)  # scanpy / anndata deprecation notes

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import scanpy as sc  # noqa: E402

adata = sc.datasets.pbmc68k_reduced()
if QUICK:
    adata = adata[adata.obs["bulk_labels"].isin(["CD19+ B", "CD14+ Monocyte", "CD56+ NK"])].copy()
adata.obs["cell_type"] = pd.Categorical(adata.obs["bulk_labels"].astype(str))
adata.uns.pop("rank_genes_groups", None)  # the file's own scanpy result; we make our own below
print(adata.obs["cell_type"].value_counts().to_string())

# %% [markdown]
# ## 1. One marker panel per cell type
#
# Each type is fitted against all other cells (one ARD path per type) on the log-normalised
# expression in `raw` (`use_raw=True`; `X` holds z-scores). The command-line equivalent is
# `ardselect fit pbmc68k_reduced.h5ad -g bulk_labels --use-raw`.

# %%
ardselect.rank_genes(adata, "cell_type", use_raw=True)
ranked = ardselect.get.ranked_genes_df(adata)
sizes = ranked[ranked["selected"]].groupby("class", sort=False).size()
print("genes in each type's model:", sizes.to_dict())

# %% [markdown]
# ## 2. scanpy reads the result as its own
#
# `rank_genes` also writes scanpy's `rank_genes_groups` layout into `uns["ardselect"]`: per type,
# the genes in the model first, by their score (posterior mean of the weight / its sd), then the
# others. So `sc.get.rank_genes_groups_df` and the dotplot work with `key="ardselect"`, no
# conversion. The dotplot shows, for the top three genes of each type's model, the fraction of
# cells expressing the gene (dot size) and the mean expression (colour) in every type.

# %%
df = sc.get.rank_genes_groups_df(adata, None, key="ardselect")
print(df.groupby("group", observed=True).head(3)[["group", "names", "scores",
                                                  "logfoldchanges"]].to_string(index=False))
dot = sc.pl.rank_genes_groups_dotplot(adata, key="ardselect", n_genes=3, dendrogram=False,
                                      return_fig=True, show=False)
dot.savefig(OUT / "markers_dotplot.png", dpi=100)
print("dotplot:", OUT / "markers_dotplot.png")

# %% [markdown]
# ## 3. How sure is the model of each gene?
#
# From the same fit, for every gene: its posterior inclusion probability `pip` and credible set
# (`set_probability`: how probable it is that the model holds one of the set's genes), the log
# Bayes factor of the gene in the type's model against out of it given the other selected genes
# (`log_bf_conditional`), the one-gene `log_bf_marginal` (how much the gene predicts on its own)
# and `cv_frequency`, the share of the inner cross-validation's fold models of the chosen size
# that hold the gene (how reproducible its selection is). Read `log_bf_conditional` as "does the
# model need this gene beside the others": a gene with a large marginal but a small conditional
# Bayes factor carries a signal that other genes in the panel already carry.

# %%
cols = ["class", "gene", "direction", "pip", "set_probability", "weight", "log_bf_conditional",
        "log_bf_marginal", "cv_frequency"]
print(ranked[ranked["selected"]].groupby("class", sort=False).head(4)[cols]
      .to_string(index=False, float_format=lambda v: f"{v:.3g}"))
fig = ardselect.pl.certainty(ranked, top=12, title="pbmc68k_reduced: certainty of each gene")
ardselect.pl.save_png(fig, OUT / "markers_certainty.png")
print("certainty:", OUT / "markers_certainty.png")

# %% [markdown]
# ## 4. The path
#
# Each type's path starts from the genes that are relevant on their own and adds, deletes and
# re-estimates one gene per step; the dots mark the step chosen by the default criterion, the
# number of genes of lowest held-out log-loss in the inner cross-validation. Four of the types
# are drawn, so that the curves stay legible.

# %%
paths = ardselect.get.path_df(adata)
shown = [c for c in ("CD19+ B", "CD14+ Monocyte", "CD56+ NK", "Dendritic") if c in set(paths["class"])]
fig = ardselect.pl.path(paths[paths["class"].isin(shown)],
                        title="pbmc68k_reduced: ARD paths of four types")
ardselect.pl.save_png(fig, OUT / "markers_path.png")
print("path:", OUT / "markers_path.png")

# %% [markdown]
# ## 5. Do the marker lists classify new cells?
#
# A marker list is only as good as its power to tell types apart in cells it has not seen. On
# seeded stratified partitions (two thirds of the cells to train, one third held out) we compare:
#
# * **ARD-EP**: the marker model itself (`ardselect.get.model(train).predict_proba(test)`);
# * **scanpy logreg / wilcoxon + L2**: `sc.tl.rank_genes_groups` on the training cells, the top
#   *k* genes of each type (the largest *k* whose union over the types is no longer than ARD's list
#   of distinct genes on that partition, so both use about as many genes), and a multinomial
#   L2-logistic regression on that union, fitted on the training cells: the marker list used as a
#   classifier.
#
# Everything is fitted on the training part only.

# %%
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.model_selection import StratifiedShuffleSplit  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

expr = adata.raw.to_adata()
expr.obs["cell_type"] = adata.obs["cell_type"]
X = expr.X.toarray() if hasattr(expr.X, "toarray") else np.asarray(expr.X)
y = expr.obs["cell_type"].astype(str).to_numpy()
n_splits = 1 if QUICK else 5
splitter = StratifiedShuffleSplit(n_splits=n_splits, train_size=2 / 3, random_state=0)
rows = []
for split, (tr, te) in enumerate(splitter.split(X, y), 1):
    train, test = expr[tr].copy(), expr[te].copy()
    ardselect.rank_genes(train, "cell_type", key_added="ard")
    model = ardselect.get.model(train, "ard")
    proba = model.predict_proba(test).to_numpy()  # a DataFrame (AnnData in), columns = classes
    classes = np.asarray(model.classes)
    panel = ardselect.get.ranked_genes_df(train, "ard", selected_only=True)
    n_ard = panel["gene"].nunique()
    result = {"ARD-EP": (classes[proba.argmax(axis=1)], proba, classes, n_ard)}
    for method in ("logreg", "wilcoxon"):
        kwargs = {"max_iter": 1000} if method == "logreg" else {}
        sc.tl.rank_genes_groups(train, "cell_type", method=method, key_added=method, **kwargs)
        names = pd.DataFrame(train.uns[method]["names"])
        # The largest k whose union of top-k genes per type is no longer than ARD's gene list.
        k = max([1] + [j for j in range(1, len(names) + 1)
                       if len(set(names.head(j).to_numpy().ravel())) <= n_ard])
        genes = sorted(set(names.head(k).to_numpy().ravel()))
        cols_idx = expr.var_names.get_indexer(genes)
        clf = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))
        clf.fit(X[tr][:, cols_idx], y[tr])
        p = clf.predict_proba(X[te][:, cols_idx])
        result[f"scanpy {method} top {k} + L2"] = (clf.classes_[p.argmax(axis=1)], p,
                                                   clf.classes_, len(genes))
    for name, (pred, p, cl, n_genes) in result.items():
        idx = np.searchsorted(cl, y[te])
        rows.append({"split": split, "method": name.split(" top")[0], "genes": n_genes,
                     "error_rate": float(np.mean(pred != y[te])),
                     "log_loss": float(-np.mean(np.log(np.clip(p[np.arange(te.size), idx],
                                                               1e-15, 1))))})
acc = pd.DataFrame(rows)
table = acc.groupby("method", sort=False).agg(
    genes=("genes", "mean"), error_rate=("error_rate", "mean"), se=("error_rate", "sem"),
    log_loss=("log_loss", "mean"))
print(f"held-out accuracy over {n_splits} partitions of {len(y)} cells:")
print(table.to_string(float_format=lambda v: f"{v:.3f}"))

# %% [markdown]
# **Reading the table.** Error rates are fractions of held-out cells, averaged over partitions
# (`se`: their standard error). On the three well-separated types of the quick run every method is
# near perfect. On all ten types most errors fall between the T-cell subsets and between CD14+
# monocytes and dendritic cells, which bulk sorting separates by surface proteins more than by
# mRNA. There, **ARD's panel does not win**: measured on the 5 partitions (467 training / 233
# held-out cells), ARD-EP erred on 19.2 +- 1.5% of held-out cells with 490 genes (log-loss 0.53), an
# L2-logistic regression on scanpy's `logreg` markers cut to as many genes on 16.2 +- 0.7% (log-loss
# 0.45), and on its `wilcoxon` markers on 17.6 +- 0.7% (log-loss 0.54). ARD's one-vs-rest panels,
# each chosen for one type against the rest, classify less well than a multinomial model fitted on
# a marker list; what ARD adds here is the sparse per-type panel with its certainty, not a better
# classifier. For cells
# from several donors, `ardselect evaluate --groups donor` holds out whole donors and adds EP's
# leave-one-donor-out estimate.
