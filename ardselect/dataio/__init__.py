"""Data in and out: the input door, readers, file rules, covariates, the model file's schema.

Which matrix of an AnnData is read and under which genes, the readers and the file rules, known
covariates, the model file's schema. The public modules of this layer keep their files at the top of
the package (``ardselect.io``, ``ardselect.model``, ``ardselect.preprocessing``,
``ardselect.datasets``). It imports the estimators, the engine and the numerics, never the front end
(``signature``). The bundled data files are in ``ardselect/data/``, which holds no code.
"""
