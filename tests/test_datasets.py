"""The bundled Golub leukaemia data: checksums, content, and reproducible rebuild."""

from __future__ import annotations

import hashlib
from importlib import resources

import numpy as np
import pytest

import ardselect
from ardselect import datasets
from ardselect.dataio import _datasets


def test_bundled_checksums():
    for name, digest in datasets.LEUKAEMIA_SHA256.items():
        data = resources.files("ardselect").joinpath("data", name).read_bytes()
        assert hashlib.sha256(data).hexdigest() == digest, name
    total = sum(
        resources.files("ardselect").joinpath("data", n).read_bytes().__len__()
        for n in datasets.LEUKAEMIA_SHA256
    )
    assert total < 1_200_000  # small enough to ship


def test_leukaemia_content():
    adata = ardselect.datasets.leukaemia(verify=True)
    assert adata.shape == (72, 7129)
    assert adata.obs["label"].value_counts().to_dict() == {"ALL": 47, "AML": 25}
    assert adata.obs["split"].value_counts().to_dict() == {"train": 38, "test": 34}
    assert adata.obs_names[0] == "patient_1"
    assert adata.obs_names[-1] == "patient_72"
    assert adata.var_names[0] == "AFFX-BioB-5_at"
    assert adata.var_names[-1] == "Z78285_f_at"
    assert adata.var_names.is_unique
    assert adata.var.loc["AFFX-BioB-5_at", "description"].startswith("AFFX-BioB-5_at")
    X = np.asarray(adata.X)
    assert X.min() < 0  # raw MAS 4 values, not thresholded
    assert np.array_equal(X, np.round(X))
    assert ardselect.datasets.leukemia is ardselect.datasets.leukaemia


def test_load_example():
    assert datasets.load_example("leukemia").n_obs == 72
    with pytest.raises(ValueError, match="unknown example dataset 'colon'; available: leukaemia"):
        datasets.load_example("colon")


@pytest.mark.slow  # rebuilds the bundled files from the shared source (provenance; ~3 s)
def test_rebuild_matches_shared_source(shared_data, tmp_path):
    source = shared_data / "golub_leukemia"
    digests = _datasets._build_leukaemia(source, tmp_path)
    assert digests == datasets.LEUKAEMIA_SHA256
    import pandas as pd

    table = pd.read_csv(source / "golub_leukemia.csv.gz")
    adata = datasets.leukaemia()
    np.testing.assert_array_equal(np.asarray(adata.X), table.iloc[:, 3:].to_numpy())
    assert list(adata.obs["label"]) == list(table["label"])
