"""The scale check: scaled values against unscaled ones, in ``predict`` and ``evaluate``.

scanpy's usual layout keeps scaled values (``pp.scale``: each gene mean 0, sd 1) in ``X`` and the
log-normalised ones in ``raw``. A model fitted on one and given the other predicts wrongly, and a
data set mixing the two splits into partitions that mix them; both are said, on the command line
and from Python, and data of one layout are not.
"""

from __future__ import annotations

import warnings

import anndata as ad
import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression

from ardselect import DataScaleWarning
from ardselect.exceptions import DataScaleError
from ardselect.model import load_model
from ardselect.model_selection import evaluate
from ardselect.preprocessing import Preprocessor
from conftest import one_error, run_cli, scaled_and_log_cells

FIT = ("--criterion", "loo", "--no-certainty", "--no-figures", "-q")
EVALUATE = ("--splits", "1", "--no-l1", "--max-steps", "8", "--no-figures", "-q")


def _h5ad(path, X, y, raw=None):
    """An AnnData file of the cells: ``X``, labels in ``obs["label"]``, ``raw`` if given."""
    adata = ad.AnnData(X.to_numpy(), obs=pd.DataFrame({"label": y}, index=X.index),
                       var=pd.DataFrame(index=X.columns))
    if raw is not None:
        adata.raw = ad.AnnData(raw.to_numpy(), obs=adata.obs, var=adata.var)
    adata.write_h5ad(path)
    return path


def _mixed(scaled, log):
    """The scaled cells with every third one log-normalised instead (two layouts in one file)."""
    mixed = scaled.copy()
    mixed.iloc[::3] = log.iloc[::3].to_numpy()
    return mixed


def _warnings(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if ln.startswith("ardselect: warning: ")]


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    """``fit`` on scanpy's layout (scaled X, log-normalised raw), reading X."""
    folder = tmp_path_factory.mktemp("scaled")
    log, scaled, y = scaled_and_log_cells()
    path = _h5ad(folder / "scaled.h5ad", scaled, y, raw=log)
    result = run_cli("fit", path, *FIT, "-o", folder / "r")
    assert result.exit_code == 0, result.stderr
    return folder, log, scaled, y


def test_predict_refuses_log_values_given_to_a_model_of_scaled_values(fitted, tmp_path):
    folder, log, scaled, y = fitted
    model = folder / "r" / "model.json"
    # The layout of the fit: no warning.
    result = run_cli("predict", model, folder / "scaled.h5ad", "-o", tmp_path / "same.tsv")
    assert result.exit_code == 0, result.stderr
    assert _warnings(result.stderr) == []
    same = pd.read_csv(tmp_path / "same.tsv", sep="\t")
    assert (same["predicted"] == same["label"]).mean() > 0.9
    # X replaced by raw's log-normalised values of the same genes: refused, nothing written.
    path = _h5ad(tmp_path / "log.h5ad", log, y)
    result = run_cli("predict", model, path, "-o", tmp_path / "p.tsv")
    one_error(result, 1, r"the data are another kind of values than the model was fitted on: .* "
                         r"scaled data such as scanpy's pp\.scale output\) but hold no negative "
                         r"value here .*--allow-scale-mismatch")
    assert not (tmp_path / "p.tsv").exists()
    # Allowed: predicted, with the warning.
    result = run_cli("predict", model, path, "--allow-scale-mismatch", "-o", tmp_path / "p.tsv")
    assert result.exit_code == 0, result.stderr
    assert len(_warnings(result.stderr)) == 1
    assert "hold no negative value here" in _warnings(result.stderr)[0]
    # From Python: the model of the file, the same rule.
    with pytest.raises(DataScaleError, match="hold no negative value here"):
        load_model(model).predict_proba(ad.read_h5ad(path))


def test_evaluate_names_the_cells_of_the_other_layout(fitted, tmp_path):
    _, log, scaled, y = fitted
    # One layout: no warning, on the command line or from Python.
    for name, frame in (("scaled", scaled), ("log", log)):
        path = _h5ad(tmp_path / f"{name}.h5ad", frame, y)
        result = run_cli("evaluate", path, *EVALUATE, "-o", tmp_path / f"e_{name}")
        assert result.exit_code == 0, result.stderr
        assert _warnings(result.stderr) == [], name
        with warnings.catch_warnings():
            warnings.simplefilter("error", DataScaleWarning)
            _evaluate(frame, y)
    # Every third cell log-normalised among scaled ones, and the reverse: those cells are named.
    for frame, reason in ((_mixed(scaled, log), r"20 hold almost no negative value where the "
                                                r"typical sample's values are \d+% negative"),
                          (_mixed(log, scaled), r"20 hold over 25% negative values where most "
                                                r"samples hold none")):
        path = _h5ad(tmp_path / "mixed.h5ad", frame, y)
        result = run_cli("evaluate", path, *EVALUATE, "-o", tmp_path / "e", "--overwrite")
        assert result.exit_code == 0, result.stderr
        said = [w for w in _warnings(result.stderr) if "another kind of values" in w]
        assert len(said) == 1, result.stderr
        assert pd.Series(said).str.contains(r"20 of the 60 samples \(c0, c3, c6, c9, c12, ").all()
        assert pd.Series(said).str.contains(reason).all(), said
        with pytest.warns(DataScaleWarning, match=reason):
            _evaluate(frame, y)


def _evaluate(frame, y):
    return evaluate(frame.to_numpy(), y, {"L2": LogisticRegression(max_iter=200)},
                    preprocessor=Preprocessor(log="none"), n_splits=1,
                    sample_ids=frame.index.to_numpy())


def test_the_sample_sign_rule_is_silent_on_one_layout():
    from ardselect.dataio._scale_check import sample_scale_findings

    log, scaled, _ = scaled_and_log_cells(n=90, n_genes=60)
    for frame in (log, scaled, log.iloc[:, :30]):
        X = frame.to_numpy()
        assert sample_scale_findings(X, X, frame.index) == ""
    import scipy.sparse as sp

    sparse = sp.csr_matrix(_mixed(log, scaled).to_numpy())  # the sparse route counts alike
    assert "hold over 25% negative values" in sample_scale_findings(sparse, None, log.index)
    assert np.isfinite(sparse.sum())
