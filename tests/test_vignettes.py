"""The vignettes run end to end in quick mode (ARDSELECT_QUICK=1), as plain Python scripts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

VIGNETTES = Path(__file__).resolve().parents[1] / "vignettes"
EXPECTED = {
    "01-leukaemia.py": ["genes selected out of 7129", "errors on 34 held-out samples"],
    "02-pbmc-markers.py": ["held-out accuracy"],
    "03-single-cell-markers.py": ["held-out accuracy over", "scanpy wilcoxon", "dotplot:"],
}


def test_no_vignette_missing_or_untested():
    found = {p.name for p in VIGNETTES.glob("[0-9][0-9]-*.py")}
    assert found == set(EXPECTED), f"vignettes on disk {sorted(found)} vs tested {sorted(EXPECTED)}"


@pytest.mark.slow  # 10-30 s each in a subprocess; the style guide runs vignettes in the slow set
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_vignette_runs_quick(name, tmp_path, request):
    env = dict(os.environ, ARDSELECT_QUICK="1", ARDSELECT_VIGNETTE_OUT=str(tmp_path / "out"),
               MPLBACKEND="Agg")
    if name.startswith("02-"):  # pbmc68k_reduced is not bundled: 02 skips without shared/ (03
        # reads it with scanpy's loader)
        shared = request.getfixturevalue("shared_data")
        env["ARDSELECT_PBMC"] = str(shared / "pbmc68k_reduced" / "pbmc68k_reduced.h5ad")
    proc = subprocess.run([sys.executable, str(VIGNETTES / name)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for text in EXPECTED[name]:
        assert text in proc.stdout, proc.stdout[-3000:]
    assert "Traceback" not in proc.stderr
    if name.startswith("01-"):
        assert (tmp_path / "out" / "leukaemia_path.png").stat().st_size > 10_000
    if name.startswith("03-"):
        for fig in ("markers_dotplot.png", "markers_certainty.png", "markers_path.png"):
            assert (tmp_path / "out" / fig).stat().st_size > 10_000
