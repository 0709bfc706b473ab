"""The AnnData / single-cell front end: rank_genes, what it stores, pseudobulk.

``rank_genes`` (AnnData in, AnnData out) and the tables and keys it stores, and pseudobulk. Its
public modules keep their files at the top of the package (``ardselect.get``, ``ardselect.pl``,
``ardselect.model_selection``). It may import every layer below it; only the command line
(``ardselect_cli``) sits above it.
"""
