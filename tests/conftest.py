"""Shared fixtures: small synthetic expression data (fast fits) and the location of ../shared/data."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """``../shared/data`` beside the repository; tests using it skip when it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared datasets not found at {SHARED_DATA}")
    return SHARED_DATA


def make_expression(
    n_samples: int = 36, n_genes: int = 24, *, n_classes: int = 2, seed: int = 0, counts: bool = True
) -> pd.DataFrame:
    """Samples x genes table with ``sample``/``label`` first: gene ``G{k}`` marks class k.

    ``counts=True`` gives positive intensity-like values (so ``--log auto`` picks log2).
    """
    rng = np.random.default_rng(seed)
    labels = np.array([f"class{k}" for k in range(n_classes)])[np.arange(n_samples) % n_classes]
    if n_classes == 2:
        labels = np.where(labels == "class0", "ctrl", "case")
    X = rng.normal(size=(n_samples, n_genes))
    for k, name in enumerate(np.unique(labels)):
        X[labels == name, k] += 2.5
    if counts:
        X = np.round(np.exp(X + 5.0), 2)
    df = pd.DataFrame(X, columns=[f"G{j}" for j in range(n_genes)])
    df.insert(0, "label", labels)
    df.insert(0, "sample", [f"s{i:02d}" for i in range(n_samples)])
    return df


def make_adata(df: pd.DataFrame):
    """AnnData from :func:`make_expression` output (labels in ``obs["label"]``)."""
    import anndata as ad

    obs = pd.DataFrame({"label": df["label"].to_numpy()}, index=df["sample"].astype(str).to_numpy())
    genes = [c for c in df.columns if c not in ("sample", "label")]
    var = pd.DataFrame({"symbol": [f"SYM{g[1:]}" for g in genes]}, index=genes)
    return ad.AnnData(df[genes].to_numpy(dtype=np.float64), obs=obs, var=var)


def scaled_and_log_cells(seed=0, n=60, n_genes=40):
    """Cells: log-normalised values (non-negative) and the same scaled (mean 0, sd 1 per gene).

    Returns ``(log, scaled, y)``: ``log`` as scanpy's ``normalize_total`` + ``log1p`` leave it,
    ``scaled`` as its ``pp.scale`` leaves it (each gene mean 0, sd 1); classes A and B, with
    markers of B. Each gene's mean is the same for every ``seed``: new cells of the same genes.
    """
    y = np.repeat(["A", "B"], n // 2)
    lam = np.tile(np.random.default_rng(0).gamma(4.0, 1.0, size=n_genes), (n, 1))
    rng = np.random.default_rng(seed)
    lam[y == "B", :3] += 8.0
    counts = rng.poisson(lam).astype(float)
    log = np.log1p(counts / np.maximum(counts.sum(axis=1, keepdims=True), 1.0) * 1e3)
    names = [f"g{j}" for j in range(n_genes)]
    log = pd.DataFrame(log, columns=names, index=[f"c{i}" for i in range(n)])
    scaled = (log - log.mean()) / log.std(ddof=0).replace(0.0, 1.0)
    return log, scaled, y


@pytest.fixture(scope="session")
def expression():
    """Factory fixture: ``expression(n_samples=..., n_genes=..., n_classes=..., seed=...)``."""
    return make_expression


@pytest.fixture(scope="session")
def adata_factory():
    """Factory fixture: ``adata_factory(**kwargs)`` -> AnnData built from :func:`make_expression`."""

    def build(**kwargs):
        return make_adata(make_expression(**kwargs))

    return build


@pytest.fixture(params=[0])
def seed(request) -> int:
    """The seed of a test's own generator (the slow sweep in test_seeds.py runs 0..99)."""
    return request.param


@pytest.fixture
def rng(seed) -> np.random.Generator:
    """A generator owned by one test."""
    return np.random.default_rng(seed)


def scripted_path_loop(script, start=0.0):
    """A :class:`ardselect.engine._sequential._PathLoop` that takes the actions of ``script`` in turn."""
    from ardselect.engine._sequential import DELETE, NONE, _PathLoop

    class Scripted(_PathLoop):
        tol, patience, max_steps, stop = 1e-4, 0, 100, None

        def __init__(self):
            self.script, self.objectives, self.taken = list(script), [start], []
            self.n_rejected, self.converged = 0, False

        def _n_recorded(self):
            return len(self.objectives)

        def _objective_at(self, k):
            return self.objectives[k]

        def _best_action(self, alpha, add_ok, last_re):
            if not self.script:
                return 0, NONE, -np.inf, np.inf, None
            j, act, _ = self.script[0]
            return j, act, 1.0, np.inf if act == DELETE else 1.0, None

        def _refresh(self, active, alpha_active):
            j, act, objective = self.script.pop(0)
            return (j, act, objective), {}, objective

        def _nothing_left(self, active):
            return False

        def _record(self, action, j, active, alpha_active, refit):
            self.objectives.append(refit[2])
            self.taken.append((action, j))

    return Scripted()


def run_cli(*args):
    """``ardselect ARGS`` in this process (typer's runner), exceptions not caught."""
    from ardselect_cli import main as cli
    from typer.testing import CliRunner

    return CliRunner().invoke(cli.app, [str(a) for a in args], catch_exceptions=False)


def one_error(result, code, pattern):
    """The command failed with ``code`` and one ``error:`` line matching ``pattern``."""
    import re

    assert result.exit_code == code, (result.stdout, result.stderr)
    errors = [ln for ln in result.stderr.splitlines() if ln.startswith("ardselect: error: ")]
    assert len(errors) == 1, result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    assert re.search(pattern, errors[0]), errors[0]
