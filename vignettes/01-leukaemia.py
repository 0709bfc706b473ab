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
# # Leukaemia: from a raw expression file to a gene list, a path plot and held-out accuracy
#
# **The biological question.** Acute lymphoblastic leukaemia (ALL) and acute myeloid leukaemia
# (AML) look alike under the microscope but need different treatment. Golub et al. (1999,
# *Science* 286:531) measured 7129 probes on Affymetrix Hu6800 arrays in bone-marrow and blood
# samples of 72 patients (47 ALL, 25 AML) and asked whether a handful of genes can tell the two
# apart. This is the leukaemia experiment of Qi, Minka, Picard and Ghahramani (2004), the paper
# ardselect implements: an ARD probit classifier fitted by Expectation Propagation (EP) switches
# genes on and off along a path, and the model is chosen by the EP leave-one-out (LOO) error
# rather than the evidence, which overfits less when genes vastly outnumber samples.
#
# **The data** ship inside ardselect (`ardselect example leukaemia` writes them; see
# `ardselect.datasets.leukaemia`), so this vignette needs no download.
#
# Run it with `python vignettes/01-leukaemia.py`; `ARDSELECT_QUICK=1` runs a quick version (fewer
# random partitions), as CI does. Figures go to `$ARDSELECT_VIGNETTE_OUT` (default
# `./vignette_output`).

# %%
import os
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

import ardselect

QUICK = os.environ.get("ARDSELECT_QUICK", "") not in ("", "0")
OUT = Path(os.environ.get("ARDSELECT_VIGNETTE_OUT", "vignette_output"))
OUT.mkdir(parents=True, exist_ok=True)
pd.set_option("display.width", 120)
pd.set_option("display.max_colwidth", 45)

# %% [markdown]
# ## 1. The raw file
#
# Microarray data classically travel as a Broad GCT expression file (genes in rows) with a CLS
# label file. We write the bundled data in that form, as `ardselect example leukaemia golub.gct`
# does, and read them back the way `ardselect fit golub.gct --labels golub.cls` would
# ([`ardselect.io.read_data`](../ardselect/io.py)).

# %%
raw_dir = Path(tempfile.mkdtemp(prefix="ardselect-leukaemia-"))
bundled = ardselect.datasets.leukaemia()
ardselect.io.write_gct(bundled, raw_dir / "golub.gct", description_key="description")
ardselect.io.write_cls(bundled.obs["label"].astype(str), raw_dir / "golub.cls")
print((raw_dir / "golub.gct").read_text()[:160])

adata = ardselect.io.read_data(raw_dir / "golub.gct", labels=raw_dir / "golub.cls")
adata.obs["split"] = bundled.obs["split"].to_numpy()  # the authors' 38/34 partition
print(adata)
print(adata.obs["label"].value_counts().to_dict())

# %% [markdown]
# ## 2. Preprocessing
#
# The values are MAS 4 "average difference" intensities: background-subtracted, so some are
# negative, and the scanner saturates near 16000. The usual treatment (Dudoit, Fridlyand & Speed
# 2002) floors at 100, caps at 16000 and takes log10; ardselect then drops genes that became
# constant (floored everywhere) and standardises each gene. On the command line this is
# `--floor 100 --cap 16000 --log log10`; with a positive floor no pseudocount is added, so the
# transform is exactly log10 of the floored, capped value.

# %%
X = np.asarray(adata.X)
print(f"raw values: min {X.min():.0f}, max {X.max():.0f}, {np.mean(X < 100):.0%} below 100")
pre = ardselect.preprocessing.Preprocessor(log="log10", floor=100, cap=16000).fit(X)
print(pre.describe())

# %% [markdown]
# ## 3. Genes that separate AML from ALL
#
# We train on the authors' 38 training samples only, so that the 34 others stay untouched for
# testing. `ardselect.rank_genes` writes its results into the AnnData object, scanpy style
# ([`ardselect.rank_genes`](../ardselect/signature/_anndata.py)); AML is the positive class, so genes
# more expressed in AML get positive weights.

# %%
train = adata[adata.obs["split"] == "train"].copy()
test = adata[adata.obs["split"] == "test"].copy()
ardselect.rank_genes(
    train, "label", positive="AML",
    preprocessor=ardselect.preprocessing.Preprocessor(floor=100, cap=16000, log="log10"),
    # the paper's model and path
    estimator=ardselect.ARDClassifier(criterion="loo", inclusion_penalty=0.0,
                                      intercept_alpha="ard"),
)
genes = ardselect.get.ranked_genes_df(train, selected_only=True)
print(f"{len(genes)} genes selected out of {train.n_vars}")
print(genes[["rank", "gene", "description", "weight", "weight_sd"]].head(15).to_string(index=False))

# %% [markdown]
# **Biology, briefly.** A good list should contain myeloid genes on the AML side (positive
# weights) and lymphoid genes on the ALL side. CD33 (probe `M23197_at`), a myeloid surface
# antigen and the target of the AML drug gemtuzumab ozogamicin, is a sanity check; Golub et al.
# also singled out zyxin (`X95735_at`) among their most informative genes. The posterior sd beside
# each weight says how well the data pin it down: a weight whose sd is as large as its mean is a
# weak vote (weights are per standardised gene, so they are comparable across genes).

# %%
ranked = ardselect.get.ranked_genes_df(train)
for probe, name in [("M23197_at", "CD33"), ("X95735_at", "zyxin")]:
    row = ranked[ranked["gene"] == probe].iloc[0]
    print(f"{name} ({probe}): rank {row['rank']}, selected {bool(row['selected'])}, "
          f"weight {row['weight']:+.2f} +- {row['weight_sd']:.2f}")

# %% [markdown]
# ## 4. The path
#
# Along the path ardselect records the EP evidence, the EP LOO error, the LOO error probability
# and the number of genes; the LOO criterion takes a step with the fewest LOO errors (the paper's
# Figure 2 for this data). The criteria can pick very different models on the same path: the
# printout below says which step, and how many genes, each would choose. With 38 training samples
# the LOO error is a count in steps of 1/38, so many steps tie: among them the LOO criterion takes
# the smallest LOO error probability, then the fewest genes.

# %%
path = ardselect.get.path_df(train)
print(path[path["chosen"]].to_string(index=False))
# The step each criterion would pick on this path ("loo" is the fit's own choice; the other two
# take the first step on ties, as ardselect does).
picks = {
    "loo": path.index[path["chosen"]][0],
    "loo-prob": path["loo_prob_error"].idxmin(),
    "evidence": path["log_evidence"].idxmax(),
}
for criterion, i in picks.items():
    print(f"{criterion:9s} -> step {path.loc[i, 'step']:3d}, {path.loc[i, 'n_features']:3d} genes, "
          f"LOO error {path.loc[i, 'loo_error']:.3f}")
ardselect.pl.save_png(ardselect.pl.path(path, title="Golub leukaemia: AML vs ALL"),
                      OUT / "leukaemia_path.png")
print("path plot:", OUT / "leukaemia_path.png")

# %% [markdown]
# ## 5. Held-out accuracy
#
# The fitted model travels as plain data (the same content as `model.json` from `ardselect fit`):
# the genes it needs, their preprocessing, and the Gaussian posterior of the weights. Applying it
# to the 34 untouched test samples integrates over that posterior.

# %%
model = ardselect.get.model(train)
proba = model.predict_proba(test)  # a DataFrame: one row per sample, one column per class
pred = proba.idxmax(axis=1)
errors = int(np.sum(pred != test.obs["label"].astype(str)))
print(f"{errors} errors on {test.n_obs} held-out samples using {len(model.features)} genes")
print(pd.DataFrame({"label": test.obs["label"].astype(str), "p(AML)": proba["AML"].round(3)}).head())

# %% [markdown]
# ## 6. Repeated random partitions
#
# One split is a noisy yardstick. Qi et al. pool the 72 samples and draw 100 random 36/36
# partitions; for each, one path is fitted on the training half and the model each criterion picks
# on that path is tested on the other half. `ardselect evaluate golub.h5ad --splits 100 --floor
# 100 --cap 16000 --log log10` does this in parallel; here is the same loop in
# Python (2 partitions in quick mode, 20 otherwise).

# %%
from sklearn.model_selection import StratifiedShuffleSplit

n_splits = 2 if QUICK else 20
y = adata.obs["label"].astype(str).to_numpy()
rows = []
splitter = StratifiedShuffleSplit(n_splits=n_splits, train_size=0.5, random_state=0)
for k, (tr, te) in enumerate(splitter.split(X, y)):
    prep = ardselect.preprocessing.Preprocessor(log="log10", floor=100, cap=16000).fit(X[tr])
    est = ardselect.ARDClassifier(criterion="loo", inclusion_penalty=0.0, intercept_alpha="ard").fit(
        prep.transform(X[tr]), y[tr])
    Zte = prep.transform(X[te])
    for criterion in ("loo", "loo-prob", "evidence"):  # the three read off the path ("cv" refits)
        m = est.at_step(est.choose_step(criterion))
        rows.append({"split": k, "criterion": criterion,
                     "errors": int(np.sum(m.predict(Zte) != y[te])),
                     "genes": int(m.get_support().sum())})
res = pd.DataFrame(rows)
summary = res.groupby("criterion", sort=False).agg(
    errors=("errors", "mean"), errors_se=("errors", lambda v: v.std(ddof=1) / np.sqrt(len(v))),
    genes=("genes", "mean"))
print(summary.round(2))

# %% [markdown]
# With 100 partitions the paper reports 2.80 test errors for the LOO choice against 3.86 for the
# evidence on these data; a few partitions only show the order of magnitude.
#
# **Command-line version of this vignette**
#
# ```bash
# ardselect example leukaemia golub.h5ad
# ardselect fit golub.h5ad --floor 100 --cap 16000 --log log10 --positive AML --out golub_results
# ardselect evaluate golub.h5ad --floor 100 --cap 16000 --log log10 --splits 100
# ```
