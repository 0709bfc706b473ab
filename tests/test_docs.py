"""The documentation: the site builds with warnings as errors, and the product carries no history.

The build runs in the slow set (CI runs it: ``CI=true ./dev.sh test`` installs the ``docs``
extra and turns the slow tests on).
"""

from __future__ import annotations

import ast
import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import ardselect

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
SOURCES = sorted([*(ROOT / "ardselect").rglob("*.py"), *(ROOT / "cli").rglob("*.py")])

#: Phrases that tell the story of the project's development rather than what the software is.
HISTORY = re.compile(
    r"this round|previous round|until this round|before the change|measured and not kept|"
    r"\bissue \d+|\bissues? #\d+|used to be the default|the previous default|as we did before",
    re.IGNORECASE)


def docstrings(path: Path):
    """``(name, docstring)`` of the module and of every class and function in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            doc = ast.get_docstring(node)
            if doc:
                yield getattr(node, "name", path.name), doc


def test_no_docstring_or_message_refers_to_a_readme_section():
    # The installed package does not ship the README: docstrings link to the user guide instead.
    found = [f"{p.relative_to(ROOT)}:{i}" for p in SOURCES
             for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if "README" in line]
    assert not found, f"README referenced in the package: {found}"


def test_no_development_history_in_the_product():
    texts = {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8")
             for p in [ROOT / "README.md", *DOCS.rglob("*.md")] if "_generated" not in p.parts}
    for path in SOURCES:
        for name, doc in docstrings(path):
            texts[f"{path.relative_to(ROOT)}:{name}"] = doc
    found = {where: m.group(0) for where, text in texts.items() if (m := HISTORY.search(text))}
    assert not found, f"development history in the product: {found}"


def test_classifier_docstring_is_of_scikit_learn_size():
    assert len(inspect.getdoc(ardselect.ARDClassifier).splitlines()) <= 150


def test_every_docs_page_is_in_a_toctree():
    # Sphinx warns about a page outside every toctree only when it builds; this says which.
    pages = {p.relative_to(DOCS).with_suffix("").as_posix() for p in DOCS.rglob("*.md")
             if "_generated" not in p.parts and "_build" not in p.parts}
    assert {"index", "getting-started", "guide/index", "tutorials/index", "api", "cli",
            "benchmarks", "changelog"} <= pages
    text = (DOCS / "benchmarks.md").read_text(encoding="utf-8")
    assert "<!-- ACCURACY-TABLE -->" in text


def test_constants_written_in_the_api_page_are_the_codes():
    # autodoc does not see a constant's comment through a re-export: the API page states them.
    from ardselect.dataio import _portable
    from ardselect.signature import _plots

    text = (DOCS / "api.md").read_text(encoding="utf-8")
    model = text.split(".. py:data:: ardselect.model.MODEL_FORMAT_VERSION", 1)[1].split(".. ", 1)[0]
    assert f"written as version {_portable.COVARIATES_FORMAT_VERSION}" in model
    assert f"as version {_portable.SPIKESLAB_FORMAT_VERSION}," in model
    assert f".. py:data:: ardselect.pl.LOO_PROB_FLOOR\n   :value: {_plots.LOO_PROB_FLOOR!r}" in text


@pytest.mark.slow  # about 15-30 s: autodoc imports the package, the CLI help is rendered
def test_docs_build_with_warnings_as_errors(tmp_path):
    try:
        import myst_parser  # noqa: F401
        import sphinx  # noqa: F401
    except ImportError:
        if os.environ.get("CI") == "true":
            raise
        pytest.skip("the docs extra is not installed: pip install -e '.[docs]'")
    out = tmp_path / "html"
    proc = subprocess.run(
        [sys.executable, "-m", "sphinx", "-E", "-W", "--keep-going", "-q", "-b", "html",
         str(DOCS), str(out), "-d", str(tmp_path / "doctrees")],
        capture_output=True, text=True, timeout=600, check=False, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-5000:]
    # The generated pages are there: the CLI reference and one page per vignette.
    cli = (out / "cli.html").read_text(encoding="utf-8")
    for command in ("ardselect fit", "ardselect predict", "ardselect evaluate", "--max-genes"):
        assert command in cli
    vignettes = sorted(p.stem for p in (ROOT / "vignettes").glob("[0-9][0-9]-*.py"))
    built = sorted(p.stem for p in (out / "_generated" / "tutorials").glob("*.html"))
    assert built == vignettes
    api = (out / "api.html").read_text(encoding="utf-8")
    for name in ("ARDClassifier", "rank_genes", "PortableModel", "evaluate"):
        assert name in api
    # Every page links only to pages that exist.
    for page in out.rglob("*.html"):
        for href in re.findall(r'href="([^"#:]+\.html)', page.read_text(encoding="utf-8")):
            assert (page.parent / href).resolve().is_file(), (page.name, href)
