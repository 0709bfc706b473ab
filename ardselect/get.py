"""Read results stored by :func:`ardselect.rank_genes` back out of an AnnData object.

Examples
--------
>>> import numpy as np, anndata as ad, pandas as pd
>>> import ardselect
>>> rng = np.random.default_rng(1)
>>> X = rng.normal(size=(30, 8))
>>> X[:15, 5] += 3.0
>>> obs = pd.DataFrame({"y": ["a"] * 15 + ["b"] * 15}, index=[f"s{i}" for i in range(30)])
>>> adata = ad.AnnData(X, obs=obs)
>>> ardselect.rank_genes(adata, "y")
>>> ardselect.get.ranked_genes_df(adata, selected_only=True)["gene"].tolist()[:1]
['5']
"""

from .signature._get import *  # noqa: F403  (the names of its __all__)
from .signature._get import __all__  # noqa: F401
