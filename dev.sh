#!/usr/bin/env bash
# The project's two entry points; each sets itself up (virtual environment + install) first.
#   ./dev.sh demo   fit the bundled Golub leukaemia data and write results/leukaemia/
#   ./dev.sh test   lint (ruff check), then run the test suite in 2 processes (with CI=true, also
#                   the slow tests: reproductions, vignettes, the documentation build, the wheel
#                   in a fresh environment and report.html in a headless Chromium)
#   ./dev.sh lint   ruff check only (extra arguments go to ruff, e.g. --fix)
set -euo pipefail
cd "$(dirname "$0")"
VENV="${ARDSELECT_VENV:-.venv}"
PY="${PYTHON:-python3}"

setup() {
  if [ ! -x "$VENV/bin/python" ]; then
    "$PY" -m venv "$VENV"
  fi
  # CI also builds the documentation (tests/test_docs.py, a slow test): it needs the docs extra.
  local extras="test"
  if [ "${CI:-}" = "true" ]; then extras="test,docs"; fi
  # The install is editable, so only a change of pyproject.toml or of the extras needs another:
  # the stamp records what the last complete install was for (it is written after it).
  local stamp="$VENV/.ardselect-installed" want
  want="$extras $("$VENV/bin/python" -c 'import hashlib; print(hashlib.sha256(open("pyproject.toml", "rb").read()).hexdigest())')"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    return
  fi
  "$VENV/bin/python" -m pip install --quiet --upgrade pip
  "$VENV/bin/python" -m pip install --quiet -e ".[$extras]"
  echo "$want" > "$stamp"
}

# Small dense algebra runs thousands of times along a path: one BLAS thread is fastest and avoids
# oversubscription when tests or benchmarks run in parallel.
export OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}" OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
export MKL_NUM_THREADS="${MKL_NUM_THREADS:-1}"

cmd="${1:-}"
shift || true
case "$cmd" in
  demo)
    setup
    mkdir -p results
    "$VENV/bin/ardselect" example leukaemia results/golub_leukemia.h5ad --overwrite
    "$VENV/bin/ardselect" fit results/golub_leukemia.h5ad --label-key label --positive AML \
      --floor 100 --cap 16000 --log log10 --out results/leukaemia --overwrite "$@"
    ;;
  lint)
    setup
    "$VENV/bin/ruff" check --no-cache "$@" .
    ;;
  test)
    setup
    # The style guide's rule set (pyproject.toml [tool.ruff.lint]); a lint error fails the run
    # before the tests start. No cache: a stale local cache once hid an import-order error that a
    # fresh clone then found (and the whole check takes well under a second).
    "$VENV/bin/ruff" check --no-cache --quiet .
    # Two test processes (pytest-xdist): the machine this project is built on has 2 cores. The
    # default suite takes 2 min 17 s to 3 min 22 s on 2 cores there (longer on
    # a shared machine); CI's slow tests add more. ARDSELECT_TEST_WORKERS=0 runs in one process.
    extra=(-n "${ARDSELECT_TEST_WORKERS:-2}")
    if [ "${CI:-}" = "true" ]; then extra+=(--runslow); fi
    "$VENV/bin/python" -m pytest "${extra[@]}" "$@"
    ;;
  *)
    echo "usage: ./dev.sh demo|test|lint [extra arguments]" >&2
    exit 2
    ;;
esac
