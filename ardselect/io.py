"""Reading expression data and writing results: every file ardselect reads or writes, and nothing else.

Inputs (:func:`read_data`): ``.h5ad`` (dense or sparse ``X``, or a layer), CSV/TSV tables (samples x
genes with a label column, or genes x samples), and the Broad GCT expression format with a CLS label
file. Every reader returns an :class:`anndata.AnnData` with samples as observations, so one code path
(:func:`ardselect.rank_genes`) serves them all.

Writers produce tables (TSV: the ranked gene list, the path, evaluation results), gene sets (GMT)
and GCT/CLS inputs, each written to a temporary file and renamed into place (:func:`atomic_write`),
with fixed number formats so that the same input gives the same bytes. Preprocessing lives in
:mod:`ardselect.preprocessing`, portable models in :mod:`ardselect.model`, figures in
:mod:`ardselect.pl`.
"""

from .dataio._io import *  # noqa: F403  (the names of its __all__)
from .dataio._io import __all__  # noqa: F401
