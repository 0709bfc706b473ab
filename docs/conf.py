"""Sphinx configuration of the ardselect documentation.

Built with ``sphinx-build -W -b html docs docs/_build/html`` (warnings are errors; the test
``tests/test_docs.py`` runs it). Two kinds of page are generated at build time into
``docs/_generated/`` (not kept in git): the CLI reference, from the typer app's own ``--help``,
and one page per vignette, from its Jupytext percent cells, executed in the vignette's quick mode
with each cell's printed output and figures under it (``ARDSELECT_DOCS_NO_RUN=1`` shows the code
alone, for a fast draft build).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

import ardselect  # noqa: E402

project = "ardselect"
author = "The ardselect developers"
copyright = "The ardselect developers"  # noqa: A001
version = release = ardselect.__version__

extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.napoleon",
              "sphinx.ext.mathjax", "sphinx.ext.viewcode"]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
# _generated/cli.md is included by cli.md, not a page of its own.
exclude_patterns = ["_build", "_generated/cli.md"]
myst_enable_extensions = ["dollarmath", "colon_fence", "deflist"]
myst_heading_anchors = 3
html_theme = "alabaster"
html_theme_options = {"description": "Short, calibrated gene signatures", "fixed_sidebar": True,
                      "page_width": "1100px", "sidebar_width": "230px"}
html_static_path: list[str] = []
html_title = f"ardselect {release}"

autodoc_member_order = "bysource"
autodoc_default_options = {"members": True, "show-inheritance": False}
autodoc_typehints = "none"
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False
# Docstrings name their types in words ("float >= 0", "{'cv', 'loo'}"): not cross-references.
napoleon_preprocess_types = False


_SHAPE = re.compile(r"shape \(([^()`]*)\)")


def _shapes_as_code(app, what, name, obj, options, lines):
    """``shape (n_features_in_,)`` as code: a trailing underscore is a link in reStructuredText."""
    lines[:] = [_SHAPE.sub(r"shape ``(\1)``", line) for line in lines]


def _skip_metadata_requests(app, what, name, obj, skip, options):
    """scikit-learn's generated ``set_*_request`` methods are not ardselect's API."""
    if name.startswith("set_") and name.endswith("_request"):
        return True
    return None


def setup(app):
    """Connect the docstring hooks."""
    app.connect("autodoc-process-docstring", _shapes_as_code)
    app.connect("autodoc-skip-member", _skip_metadata_requests)


# ------------------------------------------------------------------ generated pages

GENERATED = HERE / "_generated"


def _cli_page() -> str:
    """The CLI reference: ``ardselect --help`` and each command's ``--help``."""
    from ardselect_cli import main as cli
    from typer.testing import CliRunner

    runner = CliRunner()
    parts = ["# CLI reference\n",
             "Generated from the command's own help (`ardselect --help`, "
             "`ardselect COMMAND --help`).\n"]

    def help_of(*args: str) -> str:
        result = runner.invoke(cli.app, [*args, "--help"], env={"COLUMNS": "100"})
        if result.exit_code != 0:
            msg = f"ardselect {' '.join(args)} --help failed: {result.output}"
            raise RuntimeError(msg)
        return result.output.rstrip()

    parts.append(f"## ardselect\n\n```text\n{help_of()}\n```\n")
    parts += [f"(cli-{name})=\n## ardselect {name}\n\n```text\n{help_of(name)}\n```\n"
              for name in ("fit", "predict", "evaluate", "example")]
    return "\n".join(parts)


def _run_cells(path: Path, cells: list[str], out_dir: Path) -> list[tuple[str, list[Path]]]:
    """Run a vignette's code cells in order, in one namespace: each cell's output and new figures.

    Quick mode (``ARDSELECT_QUICK=1``), figures written to ``out_dir``, the working directory a
    scratch folder (the vignettes write their inputs there). A cell that raises stops the build;
    one that exits (a vignette whose data is missing) ends the run there.
    """
    import contextlib
    import io
    import os
    import tempfile

    import matplotlib

    matplotlib.use("Agg")
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in out_dir.glob("*"):
        old.unlink()
    env = {"ARDSELECT_QUICK": "1", "ARDSELECT_VIGNETTE_OUT": str(out_dir)}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    namespace = {"__name__": "__main__", "__file__": str(path)}
    results = []
    cwd = Path.cwd()
    try:
        with tempfile.TemporaryDirectory() as scratch:
            os.chdir(scratch)
            for code in cells:
                before = set(out_dir.iterdir())
                buffer = io.StringIO()
                stopped = False
                with contextlib.redirect_stdout(buffer):
                    try:
                        exec(compile(code, str(path), "exec"), namespace)  # noqa: S102
                    except SystemExit:  # the vignette stops itself (its data is not here)
                        stopped = True
                new = sorted(f for f in set(out_dir.iterdir()) - before if f.suffix == ".png")
                # (the figures' folder is named as a reader running the script would see it)
                printed = buffer.getvalue().replace(str(out_dir), "vignette_output")
                results.append((printed, new))
                if stopped:
                    break
    finally:
        os.chdir(cwd)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return results


def _vignette_page(path: Path) -> str:
    """A Jupytext percent script as a Markdown page: markdown cells as text, code cells as code.

    Unless ``ARDSELECT_DOCS_NO_RUN`` is set, the code cells are run (:func:`_run_cells`) and
    each is followed by what it printed and the figures it wrote.
    """
    import os

    text = path.read_text(encoding="utf-8")
    text = re.sub(r"\A# ---\n.*?\n# ---\n", "", text, flags=re.S)  # the Jupytext header
    # Links to the package's source files work in a clone, not on the site: keep their text.
    text = re.sub(r"\[([^\]]+)\]\((?!https?:)[^)]+\.py\)", r"\1", text)
    cells = re.split(r"^# %%(.*)$", text, flags=re.M)
    pairs = list(zip(cells[1::2], cells[2::2], strict=True))
    code = [body for marker, body in pairs if "[markdown]" not in marker and body.strip()]
    run = not os.environ.get("ARDSELECT_DOCS_NO_RUN")
    figures = GENERATED / "tutorials" / f"{path.stem}_files"
    outputs = iter(_run_cells(path, code, figures) if run else [])
    out = [f"<!-- generated from vignettes/{path.name} -->\n"]
    for marker, body in pairs:
        if "[markdown]" in marker:
            lines = [ln[2:] if ln.startswith("# ") else ln.lstrip("#") for ln in body.splitlines()]
            out.append("\n".join(lines).strip() + "\n")
        elif body.strip():
            out.append(f"```python\n{body.strip()}\n```\n")
            printed, pngs = next(outputs, ("", []))
            if printed.strip():
                out.append(f"```text\n{printed.rstrip()}\n```\n")
            out.extend(f"![{png.stem}]({figures.name}/{png.name})\n" for png in pngs)
    note = ("The outputs above are those of the quick version (`ARDSELECT_QUICK=1`: fewer "
            "partitions and smaller fits), run when these pages were built. " if run else "")
    out.append(f"{note}Run it with `python vignettes/{path.name}` from a clone.\n")
    return "\n".join(out)


def _write_if_changed(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")


_write_if_changed(GENERATED / "cli.md", _cli_page())
for _vignette in sorted((ROOT / "vignettes").glob("[0-9][0-9]-*.py")):
    _write_if_changed(GENERATED / "tutorials" / f"{_vignette.stem}.md", _vignette_page(_vignette))
