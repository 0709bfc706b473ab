"""Real datasets that ship inside ardselect, so examples and tests run without a download.

Only one is bundled: the Golub et al. (1999) acute leukaemia data (ALL vs AML), 72 bone-marrow and
blood samples measured on Affymetrix Hu6800 arrays (7129 probes). It is the leukaemia experiment of
Qi et al. (2004), the paper ardselect implements.

The files in ``ardselect/data/`` are

* ``golub_expression.npy.xz``: the raw "average difference" values as published, int32, samples x
  probes, as a NumPy ``.npy`` stream compressed with xz (negative values included; nothing is
  thresholded, filtered or logged);
* ``golub_samples.tsv.gz``: ``sample_id``, ``label`` (``ALL``/``AML``), ``split`` (the authors'
  38-sample ``train`` / 34-sample ``test`` partition);
* ``golub_genes.tsv.gz``: ``probe_id``, ``description`` (the Affymetrix gene description).

They are built from the tables of the Broad Institute release by :func:`_build_leukaemia`
(gzip with mtime 0 and xz carry no timestamps, so rebuilding gives the same bytes); their sha256
checksums are in :data:`LEUKAEMIA_SHA256`.
"""

from .dataio._datasets import *  # noqa: F403  (the names of its __all__)
from .dataio._datasets import __all__  # noqa: F401
