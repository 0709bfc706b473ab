"""``report.html`` of ``fit`` and ``evaluate -o``: one self-contained page, checked by parsing it.

The page must open offline from a mail attachment or a copied folder: every figure is a data URI,
there is no external style sheet, script or link, and the tables a reader needs are there.
"""

from __future__ import annotations

import base64
import html
import shutil
import subprocess
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest
from ardselect_cli import main as cli
from typer.testing import CliRunner

runner = CliRunner()


def run(*args):
    return runner.invoke(cli.app, [str(a) for a in args], catch_exceptions=False)


class Page(HTMLParser):
    """Collects what the tests look at: images, tables, headings, links, scripts, styles."""

    def __init__(self):
        super().__init__()
        self.images, self.tables, self.headings, self.urls, self.scripts = [], [], [], [], []
        self.headers = []  # column names of the current table
        self._heading = None
        self._in_th = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "img":
            self.images.append(attrs)
        if tag == "table":
            self.tables.append(attrs)
            self.headers.append([])
        if tag == "th":
            self._in_th = True
            self.headers[-1].append("")
        if tag in ("h1", "h2", "h3"):
            self._heading = ""
        if tag == "script":
            self.scripts.append(attrs)
        for key in ("src", "href", "action", "poster", "data"):
            if key in attrs:
                self.urls.append(attrs[key])

    def handle_endtag(self, tag):
        if tag == "th":
            self._in_th = False
        if tag in ("h1", "h2", "h3") and self._heading is not None:
            self.headings.append(self._heading.strip())
            self._heading = None

    def handle_data(self, data):
        if self._in_th:
            self.headers[-1][-1] += data
        if self._heading is not None:
            self._heading += data


def parse(path):
    text = path.read_text(encoding="utf-8")
    page = Page()
    page.feed(text)
    # Well-formed: every tag closed and every attribute quoted (a strict parser accepts it).
    ET.fromstring(text.split("\n", 1)[1])
    return text, page


def assert_self_contained(text, page, n_images):
    assert len(page.images) == n_images
    for img in page.images:
        src = img["src"]
        assert src.startswith("data:image/png;base64,"), src[:60]
        assert base64.b64decode(src.split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"
        assert img.get("alt")
    # Nothing is fetched: no URL other than data URIs, no external style sheet or script.
    assert all(u.startswith("data:") for u in page.urls), [u[:60] for u in page.urls]
    assert "<link" not in text
    assert all("src" not in s for s in page.scripts)
    assert "@import" not in text
    assert "url(" not in text


@pytest.fixture(scope="module")
def tables(tmp_path_factory, expression):
    d = tmp_path_factory.mktemp("report-data")
    expression(n_samples=40, n_genes=20, seed=3).to_csv(d / "two.csv", index=False)
    expression(n_samples=36, n_genes=15, n_classes=3, seed=4).to_csv(d / "multi.csv", index=False)
    return d


@pytest.mark.parametrize("name", ["two.csv", "multi.csv"])
def test_fit_report_is_one_self_contained_page(tables, tmp_path, name):
    out = tmp_path / "res"
    result = run("fit", tables / name, "--out", out, "--seed", 3, "-q")
    assert result.exit_code == 0, result.stderr
    text, page = parse(out / "report.html")
    assert_self_contained(text, page, n_images=4)  # frontier, path, weights, certainty
    assert [img["alt"].split(" (")[1] for img in page.images] == [
        "frontier.png)", "path.png)", "inclusion.png)", "certainty.png)"]
    for heading in ("Summary", "The signature", "What the columns mean", "Figures",
                    "Reproduce this run"):
        assert heading in page.headings
    # The signature table: sortable, with the certainty columns, each explained beside it.
    assert any(t.get("class") == "sortable" for t in page.tables)
    signature = page.headers[0]
    for column in ("rank", "gene", "pip", "credible_set", "set_probability", "alternatives",
                   "log_bf_conditional", "cv_frequency", "direction"):
        assert column in signature
        assert f"<dt>{column}</dt>" in text
    assert ("class" in signature) == (name == "multi.csv")
    # The preprocessing and the command that reproduces the run.
    assert "<dt>Preprocessing</dt>" in text
    assert "ardselect fit " in text
    assert "--seed 3" in text
    assert "held-out log-loss" in text


def test_evaluate_report_is_one_self_contained_page(tables, tmp_path):
    out = tmp_path / "ev"
    result = run("evaluate", tables / "two.csv", "--splits", 2, "-j", 1, "-o", out, "-q")
    assert result.exit_code == 0, result.stderr
    text, page = parse(out / "report.html")
    assert_self_contained(text, page, n_images=1)  # the reliability diagram
    for heading in ("Summary", "Held-out accuracy", "Selected genes across partitions",
                    "Calibration", "Reproduce this run"):
        assert heading in page.headings
    assert page.headers[0][:4] == ["method", "error rate %", "genes", "log-loss"]
    for method in ("ARD-EP", "L1-logistic"):
        assert f">{method}<" in text
    assert "ardselect evaluate " in text
    assert "--splits 2" in text


def _browser():
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        if path := shutil.which(name):
            return path
    return None


def _need_browser():
    """The Chromium binary; a skip outside CI, a failure in CI (which installs it: .ci/run)."""
    import os

    path = _browser()
    if path is None:
        if os.environ.get("CI") == "true":
            pytest.fail("CI must render report.html in a headless Chromium, and none is installed "
                        "(.ci/run installs the Debian package chromium)")
        pytest.skip("no headless Chromium on this machine")
    return path


#: Put before the report's own script: records every error and console.error of the page.
_HOOKS = """<script>
window.__errors = [];
window.addEventListener("error", function (e) { window.__errors.push(String(e.message)); });
(function () {
  var original = console.error;
  console.error = function () {
    window.__errors.push(Array.prototype.join.call(arguments, " "));
    original.apply(console, arguments);
  };
})();
</script>"""

#: Put after it: once loaded, checks the figures and sorts the signature table by a number column,
#: then writes what it found into the page as JSON (read back from --dump-dom).
_CHECKS = """<script>
window.addEventListener("load", function () {
  var out = {errors: window.__errors};
  var images = Array.prototype.slice.call(document.images);
  out.images = images.length;
  out.loaded = images.filter(function (i) { return i.complete && i.naturalWidth > 0; }).length;
  var table = document.querySelector("table.sortable");
  out.sorted = null;
  if (table) {
    var heads = Array.prototype.slice.call(table.querySelectorAll("thead th"));
    var column = function (c) {
      return Array.prototype.map.call(table.tBodies[0].rows, function (r) {
        var v = r.cells[c].getAttribute("data-v");
        return parseFloat(v === null ? r.cells[c].textContent : v);
      }).filter(function (v) { return !isNaN(v); });
    };
    var distinct = function (c) { return new Set(column(c)).size; };
    var col = 0;  // the number column of most distinct values
    heads.forEach(function (h, c) { if (distinct(c) > distinct(col)) { col = c; } });
    var values = function () { return column(col); };
    var before = values();
    heads[col].click();
    var first = values();
    heads[col].click();
    var second = values();
    var up = function (a) { return a.every(function (v, i) { return i == 0 || a[i - 1] <= v; }); };
    var down = function (a) { return a.every(function (v, i) { return i == 0 || a[i - 1] >= v; }); };
    out.column = heads[col].textContent;
    out.sorted = (up(first) && down(second)) || (down(first) && up(second));
    out.rows = before.length;
    out.changed = JSON.stringify(first) != JSON.stringify(second);
  }
  var pre = document.createElement("pre");
  pre.id = "ardselect-check";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""


def _render(browser, page, tmp_path, n_images):
    """Open ``page`` (a report.html) in headless Chromium: check it, and return its screenshot."""
    import json
    import re

    import matplotlib.image as mpimg
    import numpy as np

    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--disable-dev-shm-usage", "--enable-logging=stderr", "--v=0",
             "--virtual-time-budget=10000"]

    def chromium(*args, profile):
        return subprocess.run([browser, *flags, f"--user-data-dir={tmp_path / profile}", *args],
                              capture_output=True, text=True, timeout=180, check=False)

    # The page as written: a screenshot, and no console message of level error from its script.
    shot = tmp_path / f"{page.parent.name}.png"
    done = chromium("--window-size=1280,2400", f"--screenshot={shot}", page.as_uri(),
                    profile="shot")
    assert done.returncode == 0, done.stderr[-3000:]
    console = [ln for ln in done.stderr.splitlines() if "CONSOLE" in ln and "ERROR" in ln]
    assert console == [], console
    pixels = mpimg.imread(shot)[..., :3]  # floats in [0, 1]
    assert pixels.shape[0] > 1000
    assert pixels.shape[1] > 1000
    ink = np.mean(np.any(pixels < 0.9, axis=-1))  # share of pixels that are not (near) white
    assert ink > 0.02, ink  # text, tables and figures; a blank page has none
    assert np.unique((pixels * 255).astype(np.uint8).reshape(-1, 3), axis=0).shape[0] > 50

    # A copy with the hooks before the page's script and the checks after it.
    text = page.read_text(encoding="utf-8")
    head = text.index("<head>") + len("<head>")
    checked = text[:head] + _HOOKS + text[head:].replace("</body>", _CHECKS + "</body>")
    probe = tmp_path / f"{page.parent.name}-checked.html"
    probe.write_text(checked, encoding="utf-8")
    dom = chromium("--dump-dom", probe.as_uri(), profile="dom")
    assert dom.returncode == 0, dom.stderr[-3000:]
    found = re.search(r'<pre id="ardselect-check">(.*?)</pre>', dom.stdout, re.S)
    assert found, dom.stdout[-2000:]
    result = json.loads(html.unescape(found.group(1)))
    assert result["errors"] == []
    assert result["images"] == n_images
    assert result["loaded"] == n_images, result
    assert result["rows"] >= 2, result
    assert result["sorted"] is True, result  # ascending then descending, or the reverse
    assert result["changed"] is True, result
    return shot


@pytest.mark.slow  # a headless Chromium start and render, 10-20 s
def test_fit_report_renders_in_a_headless_browser(tables, tmp_path):
    browser = _need_browser()
    out = tmp_path / "fit"
    assert run("fit", tables / "two.csv", "--out", out, "-q").exit_code == 0
    _render(browser, out / "report.html", tmp_path, n_images=4)


@pytest.mark.slow  # a headless Chromium start and render, 10-20 s
def test_evaluate_report_renders_in_a_headless_browser(tables, tmp_path):
    browser = _need_browser()
    out = tmp_path / "evaluate"
    result = run("evaluate", tables / "two.csv", "--splits", 2, "-j", 1, "-o", out, "-q")
    assert result.exit_code == 0, result.stderr
    _render(browser, out / "report.html", tmp_path, n_images=1)


def _reproduce(tmp_path, make_inputs, args):
    """Run ``ardselect ARGS`` in one folder, then the report's command in a fresh copy of it.

    Returns the two output folders' files as ``{name: bytes}``.
    """
    import os
    import re
    import sys

    exe = Path(sys.executable).parent / "ardselect"
    env = {**os.environ, "PATH": f"{exe.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    first, second = tmp_path / "first", tmp_path / "second"
    for where in (first, second):
        where.mkdir()
        make_inputs(where)
    done = subprocess.run([str(exe), *args], cwd=first, env=env, capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr
    out = args[args.index("--out" if "--out" in args else "-o") + 1]
    text = (first / out / "report.html").read_text(encoding="utf-8")
    command = html.unescape(re.search(r"<pre>(.*?)</pre>", text, re.S).group(1))
    again = subprocess.run(["bash", "-c", command], cwd=second, env=env, capture_output=True,
                           text=True, check=False)
    assert again.returncode == 0, (command, again.stderr)

    def files(folder):
        return {p.relative_to(folder).as_posix(): p.read_bytes()
                for p in sorted(folder.rglob("*")) if p.is_file()}

    return command, files(first / out), files(second / out)


def _annotated_inputs(expression):
    def make(where):
        df = expression(n_samples=30, n_genes=12, seed=5)
        df.insert(2, "batch code", [i % 3 for i in range(len(df))])  # not a gene: dropped
        df.insert(3, "age", [40 + i for i in range(len(df))])
        df.drop(columns="label").to_csv(where / "my data.csv", index=False)
        df[["sample", "label"]].to_csv(where / "labels.csv", index=False)

    return make


@pytest.mark.slow  # two command-line runs in fresh processes (~20 s)
def test_the_fit_reports_command_reproduces_the_run_byte_for_byte(tmp_path, expression):
    # Every kind of option: a path argument with a space, a path option, repeated list options
    # (one with a space in a name), choices, a negated flag, numbers, a string, and -o FOLDER.
    args = ["fit", "my data.csv", "--labels", "labels.csv", "--positive", "case",
            "--drop", "batch code", "--drop", "age", "--gene-columns", "G0:G11",
            "--log", "log2", "--floor", "1.5", "--pseudocount", "0.5", "--no-standardize",
            "--criterion", "evidence", "--max-steps", "40", "--seed", "7", "--show", "0",
            "--inclusion-penalty", "bic", "--out", "fit out", "-q"]
    command, first, second = _reproduce(tmp_path, _annotated_inputs(expression), args)
    assert "--drop 'batch code' --drop age" in command
    assert set(first) >= {"genes.tsv", "model.json", "report.html", "path.png"}
    assert first.keys() == second.keys()
    for name in first:
        assert first[name] == second[name], name


@pytest.mark.slow  # two command-line runs in fresh processes (~20 s)
def test_the_evaluate_reports_command_reproduces_the_run_byte_for_byte(tmp_path, expression):
    args = ["evaluate", "my data.csv", "--labels", "labels.csv", "--drop", "batch code,age",
            "--log", "log2", "--cap", "5000", "--splits", "2", "--seed", "4", "-j", "1",
            "--max-steps", "30", "-o", "ev", "-q"]
    command, first, second = _reproduce(tmp_path, _annotated_inputs(expression), args)
    assert "--drop 'batch code,age'" in command
    assert "summary.tsv" in first
    assert first.keys() == second.keys()
    for name in first:
        # Byte for byte, but for the wall-clock fit times (fit_seconds*), the one thing a run
        # cannot repeat.
        assert _without_times(first[name]) == _without_times(second[name]), name


def _without_times(content: bytes) -> bytes:
    lines = content.split(b"\n")
    header = lines[0].split(b"\t")
    timed = [i for i, col in enumerate(header) if col.startswith(b"fit_seconds")]
    if not timed:
        return content
    return b"\n".join(b"\t".join(c for i, c in enumerate(line.split(b"\t")) if i not in timed)
                      for line in lines)


def test_certainty_caption_says_what_the_figure_shows():
    # The right-hand labels of certainty.png are the share of fold models and the weight's sign
    # (w>0 / w<0), not a probability of the sign.
    import numpy as np
    import pandas as pd
    from ardselect_cli._report import FIT_FIGURES

    import ardselect

    caption = dict((name, text) for name, _, text in FIT_FIGURES)["certainty.png"]
    assert "probability that its weight" not in caption
    assert "share of the cross-validation's fold models that hold the gene" in caption
    assert "the sign of its weight (w>0 or w<0" in caption
    ranked = pd.DataFrame({"rank": [1, 2, 3], "gene": ["a", "b", "c"],
                           "selected": [True, True, False],
                           "log_bf_conditional": [4.0, 2.0, -1.0],
                           "cv_frequency": [1.0, 0.6, 0.2], "weight": [0.8, -0.5, 0.0],
                           "weight_sd": [0.2, 0.2, np.nan], "z": [4.0, -2.5, 0.7]})
    fig = ardselect.pl.certainty(ranked)
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    ax = fig.axes[0]
    rows = [t for t in ax.texts if t.get_gid() == "row-right"]
    assert [t.get_text().strip() for t in rows] == ["100%  w>0", "60%  w<0", "20%  w>0"]
    assert [t.get_position()[1] for t in rows] == [2, 1, 0]  # beside their genes' bars
    column = [t for t in ax.texts if t.get_gid() is None]
    assert [t.get_text() for t in column] == ["share of CV fold models;  sign of the weight"]
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    # The column's label stands clear of its rows, inside the figure.
    label = column[0].get_window_extent(renderer)
    assert label.x0 > max(t.get_window_extent(renderer).x1 for t in rows)
    assert label.x1 <= fig.bbox.x1
