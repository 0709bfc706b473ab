"""The code of :mod:`ardselect.datasets`, which re-exports its public names and documents them."""

from __future__ import annotations

import gzip
import hashlib
import io
import lzma
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

from ..choices import EXAMPLES
from ..exceptions import FileFormatError

__all__ = ["EXAMPLES", "LEUKAEMIA_SHA256", "leukaemia", "leukemia", "load_example"]

#: Names accepted by ``ardselect example NAME`` (and by :func:`load_example`).

#: sha256 of each bundled leukaemia file, checked by the tests (and by ``leukaemia(verify=True)``).
LEUKAEMIA_SHA256 = {
    "golub_expression.npy.xz": "ba7eca77ff05b3b9b4af83a3adf7c91f1f0249b46d40a9338e29b31773931963",
    "golub_samples.tsv.gz": "22dace11c454c9b0a6ea828caa705d1775ce2b68a0ba08a2a5d9bbf174a9e27b",
    "golub_genes.tsv.gz": "f43c926bc01584afc69886241231b8adc9edf176f8d0a35cd5008c69adc5814d",
}


def _data_file(name: str):
    return resources.files("ardselect").joinpath("data", name)


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def leukaemia(*, verify: bool = False):
    """Golub et al. (1999) acute leukaemia data as an AnnData object.

    Parameters
    ----------
    verify : bool, default=False
        Check the sha256 checksum of every bundled file first and raise
        :class:`~ardselect.exceptions.FileFormatError` if one differs.

    Returns
    -------
    adata : anndata.AnnData of shape (72, 7129)
        ``X`` holds the raw average-difference values as float32 (integers as published; negative
        values occur). ``obs_names`` are ``patient_1`` ... ``patient_72`` and ``obs`` has

        * ``label`` (categorical ``ALL``/``AML``; 47 / 25 samples),
        * ``split`` (categorical ``train``/``test``: the original 38 / 34 partition).

        ``var_names`` are the Affymetrix probe ids and ``var["description"]`` the gene descriptions
        (not unique: several probes can measure the same gene). ``uns["dataset"]`` records the
        source and the usual preprocessing.

    Notes
    -----
    The data are usually floored at 100, capped at 16000 and log10-transformed before
    classification (Dudoit, Fridlyand & Speed 2002): ``ardselect fit --floor 100 --cap 16000
    --log log10`` does exactly that. Qi et al. (2004) pool the 72 samples and draw 100 random
    36/36 train/test partitions.

    References
    ----------
    Golub, T. R. et al. (1999). Molecular classification of cancer: class discovery and class
    prediction by gene expression monitoring. *Science* 286, 531-537.

    Examples
    --------
    >>> import ardselect
    >>> adata = ardselect.datasets.leukaemia()
    >>> adata.shape
    (72, 7129)
    >>> adata.obs["label"].value_counts().to_dict()
    {'ALL': 47, 'AML': 25}
    """
    import anndata as ad

    raw = {}
    for name, digest in LEUKAEMIA_SHA256.items():
        raw[name] = _data_file(name).read_bytes()
        if verify and _sha256(raw[name]) != digest:
            msg = (
                f"bundled file {name} is corrupted (sha256 mismatch); reinstall ardselect."
            )
            raise FileFormatError(msg)
    X = np.load(io.BytesIO(lzma.decompress(raw["golub_expression.npy.xz"])), allow_pickle=False)
    samples = pd.read_csv(io.BytesIO(raw["golub_samples.tsv.gz"]), sep="\t", compression="gzip")
    genes = pd.read_csv(io.BytesIO(raw["golub_genes.tsv.gz"]), sep="\t", compression="gzip")
    obs = pd.DataFrame(
        {
            "label": pd.Categorical(samples["label"], categories=["ALL", "AML"]),
            "split": pd.Categorical(samples["split"], categories=["train", "test"]),
        },
        index=pd.Index(samples["sample_id"].astype(str).to_numpy()),
    )
    var = pd.DataFrame(
        {"description": genes["description"].astype(str).to_numpy()},
        index=pd.Index(genes["probe_id"].astype(str).to_numpy()),
    )
    adata = ad.AnnData(X=X.astype(np.float32), obs=obs, var=var)
    adata.uns["dataset"] = {
        "name": "leukaemia",
        "source": "Golub et al. (1999) Science 286:531-537; Broad Institute data_set_ALL_AML files",
        "values": "raw Affymetrix Hu6800 average difference (MAS 4), not thresholded or logged",
        "usual_preprocessing": "floor 100, cap 16000, log10 (Dudoit, Fridlyand & Speed 2002)",
    }
    return adata


#: American spelling of :func:`leukaemia`.
leukemia = leukaemia


def load_example(name: str):
    """Return the bundled example dataset called ``name`` (one of :data:`EXAMPLES`) as AnnData."""
    key = name.lower().replace("leukemia", "leukaemia")
    if key not in EXAMPLES:
        msg = f"unknown example dataset {name!r}; available: {', '.join(EXAMPLES)}."
        raise ValueError(msg)
    return leukaemia()


def _build_leukaemia(source_dir, dest_dir) -> dict[str, str]:
    """Rebuild the bundled leukaemia files from the published tables (maintainers only).

    ``source_dir`` holds ``golub_leukemia.csv.gz`` (``sample_id``, ``label``, ``split``, then one
    column per probe) and ``genes.csv.gz`` (``probe_id``, ``description``). Writes the three files
    of :data:`LEUKAEMIA_SHA256` into ``dest_dir`` and returns their sha256 checksums.
    """
    source_dir, dest_dir = Path(source_dir), Path(dest_dir)
    table = pd.read_csv(source_dir / "golub_leukemia.csv.gz")
    genes = pd.read_csv(source_dir / "genes.csv.gz")
    probes = list(table.columns[3:])
    if probes != list(genes["probe_id"]):
        msg = "probe columns of golub_leukemia.csv.gz do not match genes.csv.gz"
        raise FileFormatError(msg)
    values = table[probes].to_numpy()
    X = values.astype(np.int32)
    if not np.array_equal(X, values):
        msg = "golub values do not fit in int32"
        raise FileFormatError(msg)
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(X), allow_pickle=False)
    files = {
        "golub_expression.npy.xz": lzma.compress(
            buf.getvalue(), format=lzma.FORMAT_XZ, preset=9 | lzma.PRESET_EXTREME
        ),
        "golub_samples.tsv.gz": gzip.compress(
            table[["sample_id", "label", "split"]]
            .to_csv(sep="\t", index=False, lineterminator="\n")
            .encode(),
            compresslevel=9,
            mtime=0,
        ),
        "golub_genes.tsv.gz": gzip.compress(
            genes[["probe_id", "description"]]
            .to_csv(sep="\t", index=False, lineterminator="\n")
            .encode(),
            compresslevel=9,
            mtime=0,
        ),
    }
    dest_dir.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (dest_dir / name).write_bytes(data)
    return {name: _sha256(data) for name, data in files.items()}
