"""The README is a storefront: short, and its examples run as written."""

import re
import shlex
from pathlib import Path

from ardselect_cli import main as cli
from typer.testing import CliRunner

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
MAX_LINES = 300


def blocks(language):
    return re.findall(rf"```{language}\n(.*?)```", README.read_text(), flags=re.S)


def section(title):
    text = README.read_text()
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end > 0 else None]


def test_readme_is_at_most_300_lines():
    n = len(README.read_text().splitlines())
    assert n <= MAX_LINES, f"README.md has {n} lines; move the detail to docs/ (at most {MAX_LINES})"


def test_readme_python_example_runs():
    assert blocks("python"), "README lost its Python example"
    for block in blocks("python"):
        exec(compile(block, str(README), "exec"), {"__name__": "__readme__"})


def test_readme_cli_example_runs(tmp_path, monkeypatch):
    (block,) = re.findall(r"```bash\n(.*?)```", section("Command line"), flags=re.S)
    commands = [shlex.split(c) for c in block.replace("\\\n", " ").strip().splitlines()]
    assert [c[:2] for c in commands] == [["ardselect", "example"], ["ardselect", "fit"]]
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    for command in commands:
        result = runner.invoke(cli.app, [*command[1:], "--quiet"], catch_exceptions=False)
        assert result.exit_code == 0, result.stderr
    for name in ("report.html", "genes.tsv", "genes.gmt", "frontier.png", "model.json"):
        assert (tmp_path / "golub_results" / name).is_file(), name


def test_readme_quick_start_commands_exist():
    quick = section("Quick start")
    assert "./dev.sh demo" in quick
    assert "./dev.sh test" in quick
    dev = (ROOT / "dev.sh").read_text()
    assert "  demo)" in dev
    assert "  test)" in dev
    assert ".venv/bin/ardselect" in quick
    assert "source .venv/bin/activate" in quick
    assert ".venv/bin/python vignettes/" in quick.replace("\n", " ")


def test_readme_keeps_the_benchmark_table_and_its_links():
    text = README.read_text()
    start, end = text.index("<!-- BENCHMARK-TABLE -->"), text.index("<!-- /BENCHMARK-TABLE -->")
    assert ("| data set | ardselect error % / genes / log-loss | L1-logistic | elastic net | "
            "top-k t-test + L2 |") in text[start:end]
    for link in re.findall(r"\]\(((?:docs/)?[^)#:]+\.(?:md|cff))\)", text):
        assert (ROOT / link).is_file(), link


def test_vignette_output_is_ignored_by_git():
    # Running a vignette from the clone must not leave vignette_output/ untracked.
    ignored = (ROOT / ".gitignore").read_text().splitlines()
    assert "vignette_output/" in ignored
    writers = [p for p in (ROOT / "vignettes").glob("[0-9][0-9]-*.py")
               if "ARDSELECT_VIGNETTE_OUT" in p.read_text()]
    assert writers
    for p in writers:
        assert 'os.environ.get("ARDSELECT_VIGNETTE_OUT", "vignette_output")' in p.read_text()


def test_readme_installs_from_a_clone_not_from_an_index():
    install = section("Install")
    assert "pip install '.[plot]'" in install
    assert "pip install 'ardselect[plot]'" not in README.read_text()


def test_the_scikit_learn_range_is_the_one_pyproject_requires():
    # One range everywhere: pyproject's pin, said as ">= LOW and < HIGH".
    pin = re.search(r'"scikit-learn>=([\d.]+),<([\d.]+)"', (ROOT / "pyproject.toml").read_text())
    said = f"scikit-learn >= {pin.group(1)} and < {pin.group(2)}"
    for page in (README, ROOT / "docs" / "getting-started.md"):
        text = " ".join(page.read_text().split())
        assert said in text, page.name
        assert len(re.findall(r"scikit-learn [(>=]", text)) == 1, page.name
