"""The package as a user installs it: a wheel built from the source, in a fresh virtual environment.

Slow (CI runs it): the wheel's dependencies come from the package index. The commands run outside
the source tree, so they can only import what the wheel installed.
"""

from __future__ import annotations

import subprocess
import sys
import venv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _run(*args, cwd, timeout=900):
    done = subprocess.run([str(a) for a in args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, check=False)
    assert done.returncode == 0, (args, done.stdout[-2000:], done.stderr[-3000:])
    return done


@pytest.mark.slow
def test_the_wheel_installs_and_runs_in_a_fresh_environment(tmp_path):
    wheels = tmp_path / "wheels"
    _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", wheels, REPO,
         cwd=tmp_path)
    (wheel,) = wheels.glob("ardselect-*.whl")
    env = tmp_path / "env"
    venv.create(env, with_pip=True)
    python, cli = env / "bin" / "python", env / "bin" / "ardselect"
    _run(python, "-m", "pip", "install", "--quiet", f"{wheel}[plot]", cwd=tmp_path, timeout=1800)
    work = tmp_path / "work"
    work.mkdir()
    where = _run(python, "-c", "import ardselect, ardselect_cli; print(ardselect.__file__); "
                 "print(ardselect_cli.__file__)", cwd=work).stdout.split()
    assert all(path.startswith(str(env)) for path in where), where
    assert "Usage: ardselect" in _run(cli, "--help", cwd=work).stdout
    version = _run(python, "-c", "import ardselect; print(ardselect.__version__)", cwd=work)
    assert version.stdout.strip() in _run(cli, "--version", cwd=work).stdout
    # The bundled data set is in the wheel; a small fit, a prediction.
    _run(cli, "example", "leukaemia", "golub.h5ad", cwd=work)
    _run(cli, "fit", "golub.h5ad", "--positive", "AML", "--floor", "100", "--cap", "16000",
         "--log", "log10", "--criterion", "loo", "--max-steps", "40", "--out", "res", "-q",
         cwd=work)
    for name in ("genes.tsv", "model.json", "report.html", "path.png"):
        assert (work / "res" / name).is_file(), name
    predicted = _run(cli, "predict", "res/model.json", "golub.h5ad", cwd=work).stdout.splitlines()
    assert predicted[0].startswith("sample\tlabel\tpredicted")
    assert len(predicted) == 73
