"""``report.html``: one self-contained page for a run of ``fit`` or ``evaluate -o``.

The page needs no network and no other file: figures are embedded as base64 PNG, the style sheet
and the small table-sorting script are inline. It is also well-formed XML (every tag closed,
every attribute quoted, no ``<`` or ``&`` in the script), so that tests can parse it strictly.
"""

from __future__ import annotations

import base64
import html
import math
import shlex
from pathlib import Path

from ardselect.choices import resolve_multiclass

#: What each column of the signature table means (the columns of ``genes.tsv``, in its order).
FIT_COLUMNS = {
    "class": "The class of the binary problem: that class against the rest (multi-class), or "
             "the positive class.",
    "rank": "1 = first. Selected genes come first, by contribution; the others by the evidence "
            "they would add to the model.",
    "gene": "The gene's identifier in the data (var name or table column).",
    "description": "Its symbol or description, when the data carry one.",
    "pip": "Posterior inclusion probability: the probability, given the data, that the gene "
           "belongs in the model, with the uncertainty about which other genes belong summed "
           "over. Computed for the selected genes and the genes most correlated with them "
           "(empty for the others). Genes that stand in for each other share their probability: "
           "read it together with the gene's credible set.",
    "credible_set": "The number of the gene's credible set: the selected gene and the genes the "
                    "data cannot tell apart from it (every two correlated at least 0.5), taken "
                    "until the model holds one of them with probability 0.95, or the "
                    "correlated candidates run out.",
    "set_probability": "The probability that the model holds at least one gene of the set. "
                       "High, with low PIPs for its genes: one of them matters, the data do not "
                       "say which.",
    "alternatives": "The other genes of the set, best first, with their PIPs: what could stand "
                    "in for this gene.",
    "contribution": "The weight times the gene's mean in the class minus its mean in the rest: "
                    "the gene's part of the gap between the model's mean class score in the "
                    "class and in the rest, which the selected genes' contributions add up to. "
                    "It orders the selected genes; negative for a gene whose weight opposes its "
                    "own class difference (it corrects the others).",
    "std_weight": "The weight times the gene's standard deviation in the training data: how far "
                  "the class score moves per standard deviation of the gene.",
    "relevance": "The prior variance the evidence gives the gene beside the model's other genes "
                 "(1/alpha on the unit-RMS scale, without the precision floor): how strongly the "
                 "data ask for this gene; 0 when the evidence would leave the gene out.",
    "weight": "Posterior mean of the gene's weight in the probit model, per standard deviation "
              "of the gene (after preprocessing); 0 outside the model. Positive: the gene pushes "
              "towards the class. A weight is conditional on the other genes: correlated genes "
              "share signal. Not the gene's mean expression.",
    "weight_sd": "Posterior standard deviation of the weight in the one chosen model, the other "
                 "genes held in it, at the prior precision alpha (often its floor, so the sd mostly "
                 "restates that prior). weight / weight_sd is the z column. It is not how sure the "
                 "model is of the gene: see pip and the credible set.",
    "alpha": "The prior precision the model gives the weight (inf outside the model).",
    "entered_step": "The first step of the path with the gene in the model.",
    "log_bf_conditional": "Log Bayes factor of the model with the gene against the model "
                          "without it, given the other selected genes (a statement about "
                          "redundancy, not relevance: see pip). Above 0: the model needs the gene "
                          "beside the others; below 0: evidence against it. A gene whose signal "
                          "another selected gene already carries gets a value near 0, however "
                          "relevant on its own.",
    "z": "weight / weight_sd in the chosen model (outside it: the z the weight would have if the "
         "gene entered with a flat prior). Like weight_sd, conditional on the other genes: not a "
         "test of the gene.",
    "log_bf_marginal": "Log Bayes factor of the gene alone (beside the intercept) against the "
                       "intercept alone: how much the gene predicts on its own, whatever else "
                       "is in the model. It tracks how reproducibly a gene is selected.",
    "cv_frequency": "Share of the inner cross-validation's fold models of the chosen size that "
                    "hold the gene: how reproducible its selection is when a fifth of the "
                    "samples is left out (empty without the cross-validation).",
    "t_stat": "Welch's t statistic of the gene in the class against the rest (positive: higher "
              "in the class), whatever the model.",
    "log2_fc": "Log2 fold change of the class against the rest, computed as scanpy computes it "
               "(empty unless the data are on a non-negative log scale).",
    "direction": "up or down: the gene's mean is higher or lower in the class than in the rest "
                 "(the sign of t_stat).",
    "note": "Set for a selected gene whose weight has the other sign than its class "
            "difference: the weight is conditional on the other genes.",
}

#: What a report says in place of its figures when the run drew none (``--no-figures``).
NO_FIGURES = "No figures: the run was given <code>--no-figures</code>."
#: The figures of ``fit``, in the order shown, with how to read each.
FIT_FIGURES = (
    ("frontier.png", "How many genes: the frontier",
     "Held-out log-loss (top) and error rate (bottom) of the inner cross-validation against the "
     "number of genes in the model (log scale; 0 is the intercept alone, which predicts the "
     "class frequencies). The band is one standard error. The filled circle is the chosen size, "
     "the open square the smallest size within one standard error of the best."),
    ("path.png", "The ARD path",
     "The EP log evidence, the EP leave-one-out error, the leave-one-out error probability and "
     "the number of genes at every step of the path. After the dotted line the path is "
     "continued by its pruning tail, down to a single gene; the dashed line is the chosen step."),
    ("inclusion.png", "How probable it is that each gene belongs in the model",
     "Each bar is a gene's posterior inclusion probability (PIP), the probability that it belongs "
     "in the model. Genes of one colour form a credible set: genes so alike in the data that any "
     "of them can stand in for the others; P beside a set is the probability that the model holds "
     "at least one of them. A dot marks the genes the model selected. A set with a high P and "
     "genes of low PIP says: one of these genes matters, the data do not say which."),
    ("certainty.png", "How sure the model is of each gene",
     "For the best-ranked genes (selected ones dark): the log Bayes factor of the gene in the "
     "model against out of it, given the other selected genes. Dotted lines mark +-log 3 and "
     "+-log 20. On the right, the share of the cross-validation's fold models that hold the gene, "
     "and the sign of its weight (w>0 or w<0; for a gene outside the model, the sign its weight "
     "would take)."),
)

_STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif;
       color: #1f2328; max-width: 1180px; margin: 0 auto; padding: 1.5em 2em 4em;
       line-height: 1.45; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { font-size: 1.25em; margin-top: 2em; border-bottom: 1px solid #d0d7de; padding-bottom: 0.2em; }
h3 { font-size: 1.05em; margin-top: 1.5em; }
.subtitle { color: #59636e; margin-top: 0; }
dl.summary { display: grid; grid-template-columns: max-content auto; gap: 0.25em 1.2em; }
dl.summary dt { font-weight: 600; color: #424a53; }
dl.summary dd { margin: 0; }
table { border-collapse: collapse; font-size: 0.88em; margin: 0.6em 0; }
th, td { border-bottom: 1px solid #e3e6ea; padding: 0.25em 0.6em; text-align: right;
         vertical-align: top; }
th { background: #f3f5f7; position: sticky; top: 0; white-space: nowrap; }
td.text, th.text { text-align: left; }
table.sortable th { cursor: pointer; }
table.sortable th::after { content: " \\2195"; color: #8c959f; font-size: 0.8em; }
table.sortable th[aria-sort="ascending"]::after { content: " \\25B2"; color: #1f2328; }
table.sortable th[aria-sort="descending"]::after { content: " \\25BC"; color: #1f2328; }
tbody tr:nth-child(even) { background: #fafbfc; }
.scroll { overflow-x: auto; max-height: 36em; overflow-y: auto; }
figure { margin: 1.2em 0 2em; }
figure img { max-width: 100%; height: auto; border: 1px solid #e3e6ea; }
figcaption { color: #424a53; font-size: 0.92em; max-width: 60em; margin-top: 0.4em; }
dl.columns dt { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
                font-weight: 600; margin-top: 0.5em; }
dl.columns dd { margin-left: 1.5em; }
pre { background: #f6f8fa; border: 1px solid #e3e6ea; padding: 0.8em 1em; overflow-x: auto;
      white-space: pre-wrap; word-break: break-all; }
.note { color: #59636e; font-size: 0.92em; }
"""

# Sorts a table.sortable by the clicked column: numbers (data-v, else the text) before text.
# No "<" or "&" in it, so that the page stays well-formed XML.
_SCRIPT = """
(function () {
  function key(cell) {
    var v = cell.getAttribute("data-v");
    if (v === null) { v = cell.textContent; }
    var x = parseFloat(v);
    return isNaN(x) ? v.toLowerCase() : x;
  }
  function compare(a, b) {
    if (typeof a === typeof b) { return a === b ? 0 : (a > b ? 1 : -1); }
    return typeof a === "number" ? -1 : 1;
  }
  document.querySelectorAll("table.sortable").forEach(function (table) {
    var heads = table.querySelectorAll("thead th");
    heads.forEach(function (th, col) {
      th.addEventListener("click", function () {
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        var dir = th.getAttribute("aria-sort") === "ascending" ? -1 : 1;
        heads.forEach(function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", dir === 1 ? "ascending" : "descending");
        rows.sort(function (r, s) { return dir * compare(key(r.cells[col]), key(s.cells[col])); });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  });
})();
"""

_TEXT_COLUMNS = {"class", "gene", "description", "direction", "note", "method"}


def command_line(ctx) -> str:
    """The command of a running ``ardselect`` subcommand, rebuilt from the options given.

    ``ctx`` is the command's ``typer.Context``. Options left at their default are left out;
    paths are shown as they were given.
    """
    if ctx is None:
        return ""
    words = ["ardselect", ctx.info_name or ""]
    for param in ctx.command.params:
        source = ctx.get_parameter_source(param.name)
        if source is None or source.name in ("DEFAULT", "DEFAULT_MAP"):
            continue
        value = ctx.params.get(param.name)
        value = getattr(value, "value", value)  # Enum choices
        if param.param_type_name == "argument":
            words.append(str(value))
            continue
        names = sorted(param.opts, key=len, reverse=True)
        if getattr(param, "is_flag", False):
            if value:
                words.append(names[0])
            elif param.secondary_opts:
                words.append(sorted(param.secondary_opts, key=len, reverse=True)[0])
            continue
        if value is None:
            continue
        # A repeatable option (--drop a --drop b) is given once per value, as typed.
        for item in value if isinstance(value, list | tuple) else [value]:
            words += [names[0], str(getattr(item, "value", item))]
    return " ".join(shlex.quote(w) for w in words)


def _esc(text) -> str:
    return html.escape(str(text), quote=True)


def _number(value) -> tuple[str, str]:
    """``(shown text, sort key)`` of a table value."""
    if value is None:
        return "", ""
    if isinstance(value, bool) or type(value).__name__ in ("bool_", "bool"):
        return ("yes" if value else "no"), ("1" if value else "0")
    try:
        x = float(value)
    except (TypeError, ValueError):
        return str(value), str(value)
    if math.isnan(x):
        return "", ""
    if math.isinf(x):
        return ("inf" if x > 0 else "-inf"), ("1e308" if x > 0 else "-1e308")
    if float(x).is_integer() and abs(x) < 1e15 and not isinstance(value, float):
        return str(int(x)), repr(x)
    return f"{x:.4g}", repr(x)


def _table(frame, columns, *, sortable: bool, titles=None, label: str = "") -> str:
    """An HTML table of ``frame[columns]``; numbers right-aligned with a sort key."""
    import pandas as pd

    cls = ' class="sortable"' if sortable else ""
    aria = f' aria-label="{_esc(label)}"' if label else ""
    out = [f"<div class=\"scroll\"><table{cls}{aria}><thead><tr>"]
    for col in columns:
        title = f' title="{_esc(titles[col])}"' if titles and col in titles else ""
        kind = ' class="text"' if col in _TEXT_COLUMNS else ""
        out.append(f"<th{kind}{title}>{_esc(col)}</th>")
    out.append("</tr></thead><tbody>")
    for row in frame[list(columns)].itertuples(index=False):
        out.append("<tr>")
        for col, value in zip(columns, row, strict=True):
            if col in _TEXT_COLUMNS:
                text = "" if value is None or (isinstance(value, float) and pd.isna(value)) else value
                out.append(f'<td class="text">{_esc(text)}</td>')
            else:
                shown, key = _number(None if pd.isna(value) else value)
                out.append(f'<td data-v="{_esc(key)}">{_esc(shown)}</td>')
        out.append("</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


def _figure(folder: Path, name: str, title: str, caption: str) -> str:
    data = base64.b64encode((folder / name).read_bytes()).decode("ascii")
    return (f'<figure id="{_esc(Path(name).stem)}"><h3>{_esc(title)}</h3>'
            f'<img src="data:image/png;base64,{data}" alt="{_esc(title)} ({_esc(name)})"/>'
            f"<figcaption>{_esc(caption)} <span class=\"note\">({_esc(name)})</span>"
            "</figcaption></figure>")


def _summary(items) -> str:
    rows = "".join(f"<dt>{_esc(k)}</dt><dd>{v}</dd>" for k, v in items)
    return f'<dl class="summary">{rows}</dl>'


def _page(title: str, subtitle: str, body: list[str]) -> str:
    return ("<!DOCTYPE html>\n"
            '<html lang="en"><head><meta charset="utf-8"/>'
            '<meta name="viewport" content="width=device-width, initial-scale=1"/>'
            f"<title>{_esc(title)}</title><style>{_STYLE}</style></head><body>"
            f"<h1>{_esc(title)}</h1><p class=\"subtitle\">{_esc(subtitle)}</p>"
            + "".join(body)
            + f"<script>{_SCRIPT}</script></body></html>\n")


def _command(command: str) -> str:
    import ardselect

    return ("<h2>Reproduce this run</h2>"
            f"<pre>{_esc(command)}</pre>"
            f"<p class=\"note\">Run from the folder it was run in, with ardselect "
            f"{_esc(ardselect.__version__)}: the same input and seed give the same results.</p>")


def _choice(frontier, cls, criterion: str, step: int, n_selected: int) -> str:
    """How one problem's model size was chosen, as HTML."""
    if criterion != "cv" or not len(frontier):
        return (f"{n_selected} gene(s), chosen by the <code>{_esc(criterion)}</code> criterion "
                f"at path step {int(step)}.")
    block = frontier[frontier["class"].astype(str) == str(cls)]
    row = block[block["chosen"].astype(bool)].iloc[0]
    one_se = int(block.loc[block["one_se"].astype(bool), "n_genes"].iloc[0])
    null = block[block["n_genes"] == 0]
    prior = (f" The intercept alone (the class frequencies) scores "
             f"{float(null['cv_log_loss'].iloc[0]):.3f}." if len(null) else "")
    if int(row["n_genes"]) == 0:
        return ("No gene: no model with genes beat the class frequencies on held-out data by one "
                f"paired standard error (held-out log-loss {float(row['cv_log_loss']):.3f}), "
                "so the model is the intercept alone and predicts the class frequencies.")
    return (f"{int(row['n_genes'])} gene(s), the size of lowest held-out log-loss in the inner "
            f"cross-validation: log-loss {float(row['cv_log_loss']):.3f} "
            f"&#177; {float(row['cv_log_loss_se']):.3f}, error "
            f"{100 * float(row['cv_error']):.1f}% &#177; {100 * float(row['cv_error_se']):.1f}%. "
            f"The smallest size within one standard error of it has {one_se} gene(s) "
            f"(<code>--cv-rule 1se</code>).{prior}")


def write_fit_report(folder: Path, sig, adata, *, data: Path, label_key: str,
                     command: str) -> Path:
    """Write ``folder / "report.html"`` for a ``fit`` whose other outputs are in ``folder``.

    ``sig`` is the :class:`ardselect.Signature` of ``adata`` (the data read, for its samples and
    labels); the figures are read from ``folder``; ``command`` is the command line that
    reproduces the run.
    """
    import pandas as pd

    import ardselect

    from ._options import class_counts, data_shape, display_classes

    est = sig.estimator.get_params()
    est["multiclass"] = resolve_multiclass(est.get("multiclass"), est.get("panel"))
    criterion = str(sig.criterion)
    classes, problems, ranked, frontier = sig.classes, sig.problems, sig.ranked, sig.frontier
    steps = sig.chosen_step
    multi = len(problems) > 1
    n_fit = sig.n_fit_samples

    if multi:
        comparison = f"each class against the rest ({len(problems)} problems)"
    else:
        others = [c for c in classes if c != problems[0]]
        comparison = f"{problems[0]} against {' + '.join(others)}"
    settings = [f"criterion {criterion}"]
    for name, shown in (("cv_rule", "cv_rule"), ("max_genes", "max_genes"), ("panel", "panel"),
                        ("multiclass", "multiclass"), ("inclusion_penalty", "inclusion_penalty"),
                        ("max_samples", "max_samples"), ("random_state", "seed")):
        if est.get(name) is not None and str(est[name]) != "None":
            settings.append(f"{shown} {est[name]}")
    fitted = (f"all {n_fit} samples" if n_fit >= adata.n_obs
              else f"a stratified sketch of {n_fit} of {adata.n_obs} samples")
    items = [
        ("Data", _esc(f"{data.name}: {data_shape(adata, use_raw=sig.use_raw)}")),
        ("Labels", _esc(f"{label_key}: {class_counts(adata.obs[label_key])}")),
        ("Comparison", _esc(comparison)),
        ("Preprocessing", _esc(sig.preprocessing.describe())),
        ("Fitted on", _esc(fitted)),
        ("Settings", _esc(", ".join(settings))),
    ]
    held = list(sig.covariate_names)
    if held:
        items.append(("Covariates held", _esc(
            f"{', '.join(held)}: in every model at a fixed weak prior, never pruned, counted or "
            "listed as genes (their weights: covariates.tsv)")))
    pseudo = adata.uns.get("pseudobulk")
    if pseudo is not None:
        items.append(("Pseudobulk", _esc(
            f"one sample per {pseudo['donor']} and label: {int(pseudo['n_samples'])} samples "
            f"from {int(pseudo['n_cells'])} cells, counts summed from {pseudo['input']}, then "
            f"{pseudo['normalisation']}")))
    for cls in display_classes(problems):
        block = ranked[ranked["class"] == cls]
        label = f"Model ({cls} vs rest)" if multi else "Model"
        items.append((label, _choice(frontier, cls, criterion, steps[cls],
                                     int(block["selected"].sum()))))

    columns = [c for c in ranked.columns if c in FIT_COLUMNS and (multi or c != "class")]
    signature = ranked[ranked["selected"].astype(bool)]
    if multi:  # the classes in display order, each best first
        signature = pd.concat([signature[signature["class"] == c]
                               for c in display_classes(signature["class"])] or [signature])
    body = ["<h2>Summary</h2>", _summary(items), "<h2>The signature</h2>"]
    if len(signature):
        body.append(f"<p>The {len(signature)} selected gene(s)"
                    + (" of each class" if multi else "")
                    + ", best first. Click a column to sort by it; hover a column name for its "
                      "meaning. <code>genes.tsv</code> lists every gene.</p>")
        body.append(_table(signature, columns, sortable=True, titles=FIT_COLUMNS,
                           label="selected genes"))
    else:
        body.append("<p>No gene was selected: the model predicts the class frequencies. "
                    "<code>genes.tsv</code> ranks every gene all the same.</p>")
    body.append("<h3>What the columns mean</h3><dl class=\"columns\">")
    body += [f"<dt>{_esc(c)}</dt><dd>{_esc(FIT_COLUMNS[c])}</dd>" for c in columns]
    body.append("</dl><h2>Figures</h2>")
    drawn = [(name, title, caption) for name, title, caption in FIT_FIGURES
             if (folder / name).is_file()]
    body += [_figure(folder, *figure) for figure in drawn]
    if not drawn:
        body.append(f"<p>{NO_FIGURES}</p>")
    body.append(_command(command))
    if multi:
        title = f"ardselect: {label_key}, each class against the rest"
    else:
        title = f"ardselect: {comparison}"
    path = folder / "report.html"
    path.write_text(_page(title, f"{data.name}, ardselect {ardselect.__version__}", body),
                    encoding="utf-8")
    return path


#: Columns of the ``evaluate`` summary shown in its report, with how to read them.
EVALUATE_COLUMNS = {
    "method": "The model: ARD-EP is the default (model size by inner cross-validation); "
              "ARD-EP (loo) and (evidence) are the models the paper's criteria pick on the same "
              "path; SpikeSlab-EP is the spike-and-slab model (--model spike-slab), whose genes "
              "are those with PIP above 0.5; the others are the baselines.",
    "error rate %": "Held-out error rate, mean &#177; standard error over the partitions.",
    "genes": "Genes the fitted model uses, mean &#177; standard error.",
    "log-loss": "Held-out log-loss (lower is better), mean &#177; standard error.",
    "ECE": "Expected calibration error of all held-out predictions pooled over the partitions "
           "(10 equal-width bins of confidence on [0, 1]): the ECE of summary.tsv, "
           "calibration.tsv and calibration.png.",
    "if calibrated": "The ECE sampling alone would give a calibrated model with the same "
                     "confidences (mean, and 95% quantile): an ECE below it is not "
                     "miscalibration.",
    "confidence - accuracy": "Mean confidence minus accuracy: positive is overconfident, "
                             "negative underconfident.",
}


def _pm(mean, se, fmt: str) -> str:
    if mean is None or math.isnan(mean):
        return ""
    if se is None or math.isnan(se):
        return fmt.format(mean)
    return f"{fmt.format(mean)} \u00b1 {fmt.format(se)}"


def write_evaluate_report(folder: Path, summary, results, stability, *, data: Path,
                          label_key: str, command: str, groups: str | None = None,
                          logo=None) -> Path:
    """Write ``folder / "report.html"`` for ``evaluate -o`` (``calibration.png`` read from it)."""
    import pandas as pd

    import ardselect

    def sizes(col):
        lo, hi = int(results[col].min()), int(results[col].max())
        return str(lo) if lo == hi else f"{lo}-{hi}"

    n_splits = int(summary["n_splits"].iloc[0])
    how = f"whole {groups} groups held out" if groups else "stratified by class"
    items = [
        ("Data", _esc(data.name)),
        ("Labels", _esc(label_key)),
        ("Partitions", _esc(f"{n_splits} random train/test partitions of "
                            f"{sizes('n_train')}/{sizes('n_test')} samples ({how}); each "
                            "preprocessed and fitted on its training part only")),
        ("Baseline", _esc("log-loss of the training class frequencies: "
                          f"{float(results['log_loss_prior'].mean()):.3f}")),
    ]
    shown = pd.DataFrame({
        "method": summary["method"],
        "error rate %": [_pm(100 * m, 100 * s, "{:.1f}") for m, s in
                         zip(summary["error_rate_mean"], summary["error_rate_se"], strict=True)],
        "genes": [_pm(m, s, "{:.1f}") for m, s in
                  zip(summary["genes_mean"], summary["genes_se"], strict=True)],
        "log-loss": [_pm(m, s, "{:.3f}") for m, s in
                     zip(summary["log_loss_mean"], summary["log_loss_se"], strict=True)],
        "ECE": [f"{v:.3f}" for v in summary["ece"]],
        "if calibrated": [f"{m:.3f} (95%: {q:.3f})" for m, q in
                          zip(summary["ece_if_calibrated"],
                              summary["ece_if_calibrated_q95"], strict=True)],
        "confidence - accuracy": [f"{v:+.3f}" for v in summary["confidence_gap"]],
    })
    body = ["<h2>Summary</h2>", _summary(items), "<h2>Held-out accuracy</h2>",
            _table_text(shown, list(EVALUATE_COLUMNS), sortable=True, label="held-out accuracy"),
            "<dl class=\"columns\">"]
    body += [f"<dt>{_esc(c)}</dt><dd>{t}</dd>" for c, t in EVALUATE_COLUMNS.items()]
    body.append("</dl>")
    if logo is not None and len(logo):
        table = pd.DataFrame({"method": logo["method"],
                              "error rate %": [f"{100 * v:.1f}" for v in logo["error_rate"]],
                              "log-loss": [f"{v:.3f}" for v in logo["log_loss"]],
                              "genes": [str(v) for v in logo["genes"]]})
        body += [f"<h2>EP leave-one-{_esc(groups)}-out</h2>",
                 "<p>From one fit on all samples, each group's EP sites removed together. The "
                 "genes are not re-selected, so this is optimistic where selection overfits; "
                 "the partitions above refit everything.</p>",
                 _table_text(table, list(table.columns))]
    if stability is not None and len(stability):
        table = pd.DataFrame({
            "method": stability["method"],
            "genes": [f"{v:.1f}" for v in stability["genes_mean"]],
            "Jaccard (mean \u00b1 sd over pairs)": [_pm(m, s, "{:.2f}") for m, s in
                                                    zip(stability["jaccard_mean"],
                                                        stability["jaccard_sd"], strict=True)],
            "in every partition": [str(v) for v in stability["genes_always"]],
        })
        body += ["<h2>Selected genes across partitions</h2>",
                 "<p>Jaccard stability: the mean over pairs of partitions of the overlap of "
                 "their selected gene sets (1: the same genes every time). "
                 "<code>selection.tsv</code> gives each gene's selection frequency.</p>",
                 _table_text(table, list(table.columns))]
    body.append("<h2>Calibration</h2>")
    if (folder / "calibration.png").is_file():
        body.append(_figure(
            folder, "calibration.png", "Reliability diagram",
            "Held-out predictions of every partition pooled and binned by confidence (the "
            "probability of the predicted class): the share that was right against the mean "
            "confidence in each bin. A calibrated model lies on the diagonal."))
    else:
        body.append(f"<p>{NO_FIGURES} <code>calibration.tsv</code> holds the reliability "
                    "diagram's bins.</p>")
    body.append(_command(command))
    path = folder / "report.html"
    path.write_text(_page(f"ardselect evaluate: {data.name}",
                          f"{label_key}, ardselect {ardselect.__version__}", body),
                    encoding="utf-8")
    return path


def _table_text(frame, columns, *, sortable: bool = False, label: str = "") -> str:
    """A table whose cells are preformatted text (first column left-aligned).

    Sortable by a click on a column: a cell sorts by its leading number (``12.5 \u00b1 1.2``).
    """
    cls = ' class="sortable"' if sortable else ""
    aria = f' aria-label="{_esc(label)}"' if label else ""
    out = [f"<div class=\"scroll\"><table{cls}{aria}><thead><tr>"]
    out += [f"<th class=\"text\">{_esc(c)}</th>" if i == 0 else f"<th>{_esc(c)}</th>"
            for i, c in enumerate(columns)]
    out.append("</tr></thead><tbody>")
    for row in frame[columns].itertuples(index=False):
        cells = [f'<td class="text">{_esc(v)}</td>' if i == 0 else f"<td>{_esc(v)}</td>"
                 for i, v in enumerate(row)]
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)
