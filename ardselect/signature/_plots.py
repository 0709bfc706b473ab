"""The code of :mod:`ardselect.pl`, which re-exports its public names and documents them."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from ..dataio._io import atomic_write

__all__ = [
    "LOO_PROB_FLOOR", "calibration", "certainty", "class_colours", "class_order", "frontier",
    "inclusion", "path", "require_matplotlib", "save_png", "weights",
]

#: ``action`` of the pruning tail's deletions in a path table.
PRUNE = "prune"

#: Gene labels of the weights plot: the gene and its description, at most this many characters.
LABEL_WIDTH = 34


def require_matplotlib() -> None:
    """Raise a clear :class:`ImportError` naming the extra to install when matplotlib is missing."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        msg = "ardselect's figures need matplotlib: pip install matplotlib (the plot extra)"
        raise ImportError(msg) from None


def save_png(fig, path) -> None:
    """Save ``fig`` as PNG, atomically.

    100 dpi and no software or date metadata, so the same figure gives the same bytes.
    """
    with atomic_write(path, "wb") as fh:
        fig.savefig(fh, format="png", dpi=100, metadata={"Software": None})


def class_order(classes) -> list[str]:
    """The classes as strings, in the order figures and reports show them: natural order.

    Runs of digits compare as numbers, so clusters ``'0'`` .. ``'10'`` come as 0, 1, 2, ..., 10
    (not 0, 1, 10, 2, the order of ``np.unique``) and ``'c2'`` before ``'c10'``; the rest is
    compared as text. A model's ``classes_`` keep scikit-learn's order: only the display changes.

    Examples
    --------
    >>> class_order(["0", "1", "10", "2"]), class_order(["c10", "B", "c2", "A"])
    (['0', '1', '2', '10'], ['A', 'B', 'c2', 'c10'])
    """
    def key(name: str):
        parts = re.split(r"(\d+)", name)
        return [(0, int(p), "") if p.isdigit() else (1, 0, p) for p in parts if p != ""]

    names = list(dict.fromkeys(str(c) for c in classes))
    return sorted(names, key=key)


def class_colours(n: int) -> list:
    """``n`` distinct colours for classes: matplotlib's ten (``C0`` ..), then tab20, then more.

    Up to 10 classes the default cycle; up to 20 tab20 (its dark shades first); up to 60 tab20,
    tab20b and tab20c; beyond, evenly spaced hues of ``gist_rainbow``.
    """
    if n <= 10:
        return [f"C{i}" for i in range(n)]
    from matplotlib import colormaps

    if n <= 20:
        tab = colormaps["tab20"].colors
        return [tab[i] for i in (*range(0, 20, 2), *range(1, 20, 2))][:n]
    if n <= 60:
        return [c for name in ("tab20", "tab20b", "tab20c") for c in colormaps[name].colors][:n]
    return [colormaps["gist_rainbow"](x) for x in np.linspace(0.0, 1.0, n)]


_PATH_PANELS = (
    ("log_evidence", "log evidence"),
    ("loo_error", "LOO error"),
    ("loo_prob_error", "LOO error probability"),
    ("n_features", "genes in model"),
)
#: The LOO error probability panel is on a log scale (as the paper's Figure 2). On separable data
#: the probability falls to 1e-300 and below, a range that carries no information: a LOO error
#: probability of 1e-6 is already a millionth of an expected error per sample. Values below this
#: floor (exact zeros included) are drawn at it, and its tick reads "<=1e-6".
LOO_PROB_FLOOR = 1e-6


def _log_probability_axis(ax, values):
    """Log y axis from the smallest value (at least the floor) to 1, ticked at powers of ten."""
    from matplotlib.ticker import MaxNLocator

    smallest = float(np.min(values))
    lo = np.log10(max(smallest, LOO_PROB_FLOOR))
    bottom = min(np.floor(lo), -1.0)
    exps = MaxNLocator(nbins=4, steps=[1, 2, 5, 10], integer=True).tick_values(bottom, 0.0)
    exps = exps[(exps >= bottom) & (exps <= 0)]
    floored = smallest < LOO_PROB_FLOOR
    labels = []
    for e in exps:
        text = "1" if e == 0 else f"1e{int(e)}"
        labels.append(f"\u2264{text}" if floored and e == bottom else text)
    ax.set_yscale("log")
    ax.set_yticks(10.0**exps, labels)
    ax.minorticks_off()
    ax.set_ylim(10.0 ** (bottom - 0.04 * -bottom), 10.0 ** (0.04 * -bottom))


def path(path_table: pd.DataFrame, *, title: str | None = None, fig=None):
    """Plot evidence, LOO error, LOO error probability and model size along the ARD path.

    ``path_table`` has the columns of :func:`ardselect.get.path_df` (``class``, ``step``, the four
    quantities, and ``chosen`` marking the chosen step of each class). Each panel shares the step
    axis; the chosen step is marked by a dashed line (binary) or a dot per class (multi-class,
    with the legend beside the panels, off the curves), as in Figure 2 of Qi et al. (2004). The
    LOO error probability is on a log scale down to its smallest value or to
    :data:`LOO_PROB_FLOOR` (1e-6), below which values are drawn at the floor. The pruning tail of
    ``criterion="cv"`` (from the first ``action == "prune"`` step on: the path continued to
    smaller models than it converged to) follows a dotted line. Returns the matplotlib Figure.
    """
    require_matplotlib()
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    classes = class_order(path_table["class"].astype(str))
    colours = class_colours(len(classes))
    multi = len(classes) > 1
    legend_rows = -(-len(classes) // 3) if multi else 0
    if fig is None:
        fig = Figure(figsize=(7.5, 8.0 + 0.22 * legend_rows), layout="constrained")
    elif fig.get_layout_engine() is None:
        fig.set_layout_engine("constrained")
    axes = fig.subplots(len(_PATH_PANELS), 1, sharex=True)
    for ax, (col, label) in zip(axes, _PATH_PANELS, strict=True):
        for i, cls in enumerate(classes):
            sub = path_table[path_table["class"].astype(str) == cls]
            color = colours[i]
            values = sub[col].to_numpy(dtype=float)
            if col == "loo_prob_error":
                values = np.maximum(values, LOO_PROB_FLOOR)
            steps = sub["step"].to_numpy()
            ax.plot(steps, values, color=color, lw=1.2, label=cls if multi else None)
            action = (sub["action"].astype(str).to_numpy() if "action" in sub
                      else np.full(len(sub), ""))
            if (action == PRUNE).any():
                tail = float(steps[action == PRUNE].min()) - 0.5
                ax.axvline(tail, color="0.6", ls=":", lw=0.8,
                           label=None if multi or i else "pruning tail from here")
            chosen = sub["chosen"].astype(bool).to_numpy()
            if chosen.any():
                if multi:
                    ax.plot(sub["step"][chosen], values[chosen], "o", color=color, ms=5)
                else:
                    step = int(sub["step"][chosen].iloc[0])
                    ax.axvline(float(step), color="k", ls="--", lw=1.0,
                               label=f"chosen step {step}")
        if col == "loo_prob_error":
            _log_probability_axis(ax, path_table[col].to_numpy(dtype=float))
            label += " (log)"
        ax.set_ylabel(label)
        ax.grid(visible=True, alpha=0.3)
    has_tail = "action" in path_table and (path_table["action"].astype(str) == PRUNE).any()
    axes[-1].set_xlabel("path step (after the dotted line: the pruning tail)" if has_tail
                        else "path step")
    axes[-1].xaxis.set_major_locator(MaxNLocator(integer=True))
    axes[-1].yaxis.set_major_locator(MaxNLocator(integer=True))
    if multi:
        handles, names = axes[0].get_legend_handles_labels()
        # Below the panels, where it cannot cover a curve.
        fig.legend(handles, [_short(n, 28) for n in names], loc="outside lower center",
                   ncol=min(3, len(classes)), fontsize="small",
                   title="class vs rest (dot: chosen step)", title_fontsize="small")
    elif path_table["chosen"].astype(bool).any() or has_tail:
        axes[0].legend(fontsize="small", loc="best")
    if title:
        fig.suptitle(title)
    fig.align_ylabels(axes)
    return fig


def _per_class(ranked: pd.DataFrame):
    """``(table, name_col, classes)`` for the per-class panels of a ranked table.

    ``table`` is a copy with a ``class`` column (``""`` for a binary table), ``name_col`` the gene
    name column (``gene`` or ``feature``), ``classes`` the first 12 classes in
    :func:`class_order`.
    """
    table = ranked.copy()
    if "class" not in table:
        table["class"] = ""
    name_col = "gene" if "gene" in table else "feature"
    return table, name_col, class_order(table["class"].astype(str))[:12]


def _grid(n_panels: int):
    """``(ncol, nrow)``: at most 3 panels per row."""
    ncol = min(n_panels, 3)
    return ncol, -(-n_panels // ncol)


def _class_panels(fig, n_classes, width, height, title):
    """``(fig, axes)``: one panel per class, ``width`` x ``height`` inches each, on a grid.

    Constrained layout sizes the margins to the tick labels and the titles, so labels are never
    cut at the figure's edge and the figure title never overlaps a panel title.
    """
    from matplotlib.figure import Figure

    ncol, nrow = _grid(n_classes)
    if fig is None:
        fig = Figure(figsize=(width * ncol, height * nrow + (0.4 if title else 0.0)),
                     layout="constrained")
    elif fig.get_layout_engine() is None:
        fig.set_layout_engine("constrained")
    return fig, np.atleast_1d(fig.subplots(nrow, ncol, squeeze=False)).ravel()


def _gene_labels(sub, name_col):
    """Tick labels: each gene's name, with its description shortened at a word boundary."""
    labels = sub[name_col].astype(str).to_numpy()
    if "description" not in sub:
        return labels
    desc = sub["description"].fillna("").astype(str).to_numpy()
    return np.array([_short(f"{g} {d}".strip(), max(LABEL_WIDTH, len(g)))
                     for g, d in zip(labels, desc, strict=True)])


def _short(text: str, width: int) -> str:
    """``text`` cut to at most ``width`` characters at a word boundary, with an ellipsis."""
    text = " ".join(str(text).split())
    if len(text) <= width:
        return text
    cut = text[: width - 1]
    if " " in cut and not text[width - 1].isspace():
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip(" ;,.:-") + "\u2026"


def _row_labels(ax, ypos, labels, *, side: str = "left", **kw) -> None:
    """Label the rows at ``ypos`` beside the panel, one text per row (``gid`` ``"row-<side>"``).

    Plain texts in place of y tick labels: a tick is five artists where a text is one, and a
    figure's layout measures every artist twice, so a panel of 25 labelled rows draws in half
    the time. The texts count in the layout as tick labels do.
    """
    transform = ax.get_yaxis_transform()
    x, ha = (-0.01, "right") if side == "left" else (1.01, "left")
    for y, text in zip(ypos, labels, strict=True):
        ax.text(x, y, text, ha=ha, va="center", fontsize=7, transform=transform,
                gid=f"row-{side}", **kw)
    ax.set_yticks([])
    ax.set_ylim(-0.7, max(len(ypos), 1) - 0.3)


def _column_label(ax, text: str, rows, **font) -> None:
    """A rotated label for the right-hand row labels ``rows``, just beyond the widest of them."""
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import TextToPath

    prop = FontProperties(size=7, **font)
    measure = TextToPath().get_text_width_height_descent
    width = max([measure(str(r), prop, ismath=False)[0] for r in rows] + [0.0])
    ax.annotate(text, xy=(1.01, 0.5), xycoords="axes fraction", xytext=(width + 3.0, 0.0),
                textcoords="offset points", rotation=90, ha="left", va="center", fontsize=7)


def _panel_title(ax, cls: str, classes, title: str | None) -> None:
    """A class panel's title, ``CLASS vs rest`` (a single panel: the figure's ``title``).

    Placed at the top of the axes, not searched for among twin axes.
    """
    text = f"{cls} vs rest" if len(classes) > 1 else (title or "")
    if text:
        ax.set_title(text, fontsize=9, y=1.0)


def _finish_panels(fig, axes, classes, title: str | None) -> bool:
    """Hide the grid's spare panels; the figure's title above several panels (True if set)."""
    for ax in axes[len(classes):]:
        ax.set_visible(False)
    if title and len(classes) > 1:
        fig.suptitle(title, fontsize=10)
        return True
    return False


def weights(ranked: pd.DataFrame, *, top: int = 25, title: str | None = None, fig=None):
    """Forest plot of the selected genes: posterior mean of the weight with +-2 sd bars.

    ``ranked`` is a ranked table (:meth:`ARDClassifier.ranked_features` or
    :func:`ardselect.get.ranked_genes_df`: columns ``rank``, ``gene`` or ``feature``, ``selected``,
    ``weight``, ``weight_sd``, optionally ``class`` and
    ``description``). The ``top`` best-ranked selected genes
    of each class are drawn, best at the top. Blue: the +-2 sd interval excludes zero; grey: it
    crosses zero (the data do not pin the weight's sign down on their own, typical of a gene
    that shares its signal with correlated genes); the legend says so. With a ``cv_frequency``
    column the right-hand labels give each gene's share of the inner cross-validation's fold
    models that hold it. One panel per class (at most 12). Returns the matplotlib Figure.
    """
    require_matplotlib()

    table, name_col, classes = _per_class(ranked)
    n_rows = [min(int(table.loc[(table["class"].astype(str) == c) & table["selected"]].shape[0]),
                  top) for c in classes]
    height = max(2.5, 0.22 * max(n_rows + [1]) + 1.2)
    fig, axes = _class_panels(fig, len(classes), 5.2, height, title)
    for ax, cls in zip(axes, classes, strict=False):
        sub = table[(table["class"].astype(str) == cls) & table["selected"].astype(bool)]
        sub = sub.sort_values("rank", kind="stable").head(top)
        k = len(sub)
        ypos = np.arange(k)[::-1]
        labels = _gene_labels(sub, name_col)
        mean, sd = _weights(sub)
        clear = np.abs(mean) > 2 * sd
        colors = np.where(clear, "C0", "0.6")
        ax.errorbar(mean, ypos, xerr=2 * sd, fmt="none", ecolor=colors, elinewidth=1.2)
        ax.scatter(mean, ypos, c=colors, s=14, zorder=3)
        if k:
            from matplotlib.lines import Line2D

            keys = [Line2D([], [], color="C0", marker="o", ms=4, label="+-2 sd excludes 0"),
                    Line2D([], [], color="0.6", marker="o", ms=4, label="+-2 sd crosses 0")]
            ax.legend(handles=keys, fontsize=6, loc="lower right", framealpha=0.8)
        ax.axvline(0.0, color="k", lw=0.8)
        _row_labels(ax, ypos, labels)
        if "cv_frequency" in sub and k and np.isfinite(sub["cv_frequency"].to_numpy(float)).any():
            # How reproducible each gene's selection is, on the right: its fold-model share.
            shares = [_share_label(p) for p in sub["cv_frequency"].to_numpy(float)]
            _row_labels(ax, ypos, shares, side="right")
            _column_label(ax, "share of the CV fold models holding the gene", shares)
        ax.set_xlabel("weight (posterior mean +- 2 sd)")
        ax.grid(visible=True, axis="x", alpha=0.3)
        _panel_title(ax, cls, classes, title)
        if k == 0:
            ax.text(0.5, 0.5, "no gene selected", ha="center", va="center",
                    transform=ax.transAxes)
    _finish_panels(fig, axes, classes, title)
    return fig


def inclusion(ranked: pd.DataFrame, *, top: int = 40, title: str | None = None, fig=None):
    """How sure the model is of each gene: inclusion probabilities, grouped by credible set.

    ``ranked`` is a ranked table with the certainty columns (:meth:`ARDClassifier.ranked_features`
    or :func:`ardselect.get.ranked_genes_df`: ``rank``, ``gene`` or ``feature``, ``selected``,
    ``pip``, ``credible_set``, ``set_probability``, optionally ``class`` and ``description``).
    For each class, the genes of its credible sets (at most ``top``), set by set: a bar is the
    gene's posterior inclusion probability (PIP), its colour the set (genes the data cannot tell
    apart), a dot marks the genes the model selected, and the label right of each set's first
    bar is the probability that the model holds at least one of its genes. One panel per class
    (at most 12). Returns the matplotlib Figure.
    """
    require_matplotlib()
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    table, name_col, classes = _per_class(ranked)
    if "credible_set" not in table:
        msg = "the table has no credible_set column: fit with certainty=True"
        raise ValueError(msg)

    def members(cls):
        sub = table[(table["class"].astype(str) == cls) & table["credible_set"].notna()]
        order = np.lexsort((-sub["pip"].to_numpy(float), sub["credible_set"].to_numpy(int)))
        return sub.iloc[order].head(top)

    counts = [len(members(c)) for c in classes]
    height = max(2.5, 0.2 * max(counts + [1]) + 1.6)
    fig, axes = _class_panels(fig, len(classes), 6.0, height, title)
    for ax, cls in zip(axes, classes, strict=False):
        sub = members(cls)
        k = len(sub)
        ypos = np.arange(k)[::-1]
        sets = sub["credible_set"].to_numpy(int)
        colors = [f"C{(s - 1) % 10}" for s in sets]
        pip = sub["pip"].to_numpy(float)
        ax.barh(ypos, pip, color=colors, height=0.7)
        sel = sub["selected"].astype(bool).to_numpy()
        ax.scatter(pip[sel] + 0.02, ypos[sel], color="k", s=10, zorder=3)
        _row_labels(ax, ypos, _gene_labels(sub, name_col))
        first = np.flatnonzero(np.r_[True, sets[1:] != sets[:-1]]) if k else []
        prob = sub["set_probability"].to_numpy(float)
        for i in first:
            ax.text(1.02, ypos[i], f"set {sets[i]}: P = {prob[i]:.2f}", fontsize=7,
                    va="center", ha="left", transform=ax.get_yaxis_transform(),
                    color=colors[i])
        ax.set_xlim(0.0, 1.0)
        ax.set_xlabel("probability that the gene is in the model (PIP)")
        ax.grid(visible=True, axis="x", alpha=0.3)
        _panel_title(ax, cls, classes, title)
        if k == 0:
            any_sel = table.loc[table["class"].astype(str) == cls, "selected"].astype(bool).any()
            ax.text(0.5, 0.5, "no inclusion probabilities (certainty off)" if any_sel
                    else "no gene selected", ha="center", va="center", transform=ax.transAxes)
            continue
        keys = [Patch(color="C0", label="bar colour: one credible set, genes the data "
                                        "cannot tell apart"),
                Line2D([], [], color="k", marker="o", ls="", ms=3, label="selected by the model"),
                Patch(color="none", label="P: probability that the model holds at least one "
                                          "gene of the set")]
        ax.legend(handles=keys, fontsize=6, loc="lower right", framealpha=0.85)
    _finish_panels(fig, axes, classes, title)
    return fig


def _share_label(p: float) -> str:
    """A share of fold models, as a percentage."""
    return "-" if not np.isfinite(p) else f"{100 * p:.0f}%"


def _weights(table: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Posterior mean and sd of the weights: ``weight`` / ``weight_sd``."""
    return table["weight"].to_numpy(float), table["weight_sd"].to_numpy(float)


def _sign_labels(sub: pd.DataFrame) -> np.ndarray:
    """``w>0`` / ``w<0`` per gene: the sign of its weight.

    Outside the model (weight 0): the sign the weight would take if the gene entered (that of
    ``z``), else the direction of its class difference (``t_stat``).
    """
    if "weight" not in sub:
        return np.full(len(sub), "")
    w = sub["weight"].to_numpy(float)
    for col in ("z", "t_stat"):  # a gene outside the model has weight 0
        if col in sub:
            w = np.where(w != 0, w, np.nan_to_num(sub[col].to_numpy(float)))
    return np.where(w < 0, "w<0", np.where(w > 0, "w>0", "   "))


def certainty(ranked: pd.DataFrame, *, top: int = 25, title: str | None = None, fig=None):
    """Does the chosen model need each gene beside the others: conditional log Bayes factors.

    ``ranked`` is a ranked table (:meth:`ARDClassifier.ranked_features` or
    :func:`ardselect.get.ranked_genes_df`: ``rank``, ``gene`` or ``feature``, ``selected``,
    ``log_bf_conditional``, ``cv_frequency``, optionally ``class``). For the ``top``
    best-ranked genes of each class (selected ones first, then the best candidates outside the
    model) a bar shows the log Bayes factor of the gene in the model against out of it, given the
    other selected genes; dark bars are selected genes. A gene whose signal another selected
    gene carries gets a bar near 0 however relevant it is: how sure the model is of a gene is its
    ``pip`` and credible set (:func:`inclusion`). Right-hand labels give the share of the inner
    cross-validation's fold models that hold the gene and the sign of its weight (``w>0`` or
    ``w<0``). Dotted lines mark log Bayes factors of +-log(3) and +-log(20) ("positive" and
    "strong" evidence on Kass & Raftery's scale). One panel per class (at most 12). Returns the
    matplotlib Figure.
    """
    require_matplotlib()
    from matplotlib.figure import Figure

    table, name_col, classes = _per_class(ranked)
    counts = [min(int((table["class"].astype(str) == c).sum()), top) for c in classes]
    height = max(2.5, 0.22 * max(counts + [1]) + 1.3)
    ncol, nrow = _grid(len(classes))
    if fig is None:
        fig = Figure(figsize=(5.2 * ncol, height * nrow))
    axes = np.atleast_1d(fig.subplots(nrow, ncol, squeeze=False)).ravel()
    for ax, cls in zip(axes, classes, strict=False):
        sub = table[table["class"].astype(str) == cls].sort_values("rank", kind="stable")
        sub = sub[np.isfinite(sub["log_bf_conditional"].to_numpy(float))].head(top)
        k = len(sub)
        ypos = np.arange(k)[::-1]
        bf = sub["log_bf_conditional"].to_numpy(float)
        sel = sub["selected"].astype(bool).to_numpy()
        ax.barh(ypos, bf, color=np.where(sel, "C0", "0.75"), height=0.7)
        for v in (np.log(3.0), np.log(20.0)):
            for sign in (-1, 1):
                ax.axvline(sign * v, color="0.4", lw=0.6, ls=":")
        ax.axvline(0.0, color="k", lw=0.8)
        _row_labels(ax, ypos, sub[name_col].astype(str).to_numpy())
        signs = _sign_labels(sub)
        share = (sub["cv_frequency"].to_numpy(float) if "cv_frequency" in sub
                 else np.full(k, np.nan))
        rows = [f"{_share_label(p):>5}  {s}" for p, s in zip(share, signs, strict=True)]
        _row_labels(ax, ypos, rows, side="right", family="monospace")
        _column_label(ax, "share of CV fold models;  sign of the weight", rows, family="monospace")
        ax.set_xlabel("log Bayes factor, in vs out, given the other\nselected genes "
                      "(dark: selected)")
        ax.grid(visible=True, axis="x", alpha=0.3)
        _panel_title(ax, cls, classes, title)
    if _finish_panels(fig, axes, classes, title):
        # Keep the panels below the suptitle (tight_layout alone lets them overlap it).
        fig.tight_layout(rect=(0.0, 0.0, 1.0, 1.0 - 0.4 / fig.get_figheight()))
    else:
        fig.tight_layout()
    return fig


def frontier(cv_results: pd.DataFrame, *, title: str | None = None, fig=None):
    """The accuracy-size frontier: held-out log-loss and error against the number of genes.

    ``cv_results`` is the frontier table (``ARDClassifier.cv_results_`` or
    :func:`ardselect.get.frontier_df`: ``class``, ``n_genes``, ``cv_log_loss``,
    ``cv_log_loss_se``, ``cv_error``, ``cv_error_se``, ``chosen``, ``one_se``). One line per binary
    problem with a band of +-1 standard error, as glmnet's cross-validation plot; a filled circle
    marks the chosen size, an open square the smallest size within one standard error of the
    best (``cv_rule="1se"``). The x axis counts genes on a log scale (0 genes, the intercept-only
    model, drawn at the left edge). Returns the matplotlib Figure.
    """
    require_matplotlib()
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    classes = class_order(cv_results["class"].astype(str))
    colours = class_colours(len(classes))
    multi = len(classes) > 1
    if fig is None:
        fig = Figure(figsize=(7.0, 6.2 + (0.25 * -(-len(classes) // 3) if multi else 0.0)),
                     layout="constrained")
    elif fig.get_layout_engine() is None:
        fig.set_layout_engine("constrained")
    axes = fig.subplots(2, 1, sharex=True)
    for i, cls in enumerate(classes):
        sub = cv_results[cv_results["class"].astype(str) == cls].sort_values("n_genes")
        x = np.maximum(sub["n_genes"].to_numpy(float), 0.7)  # 0 genes at the left edge
        color = colours[i]
        for ax, col in zip(axes, ("cv_log_loss", "cv_error"), strict=True):
            y = sub[col].to_numpy(float)
            se = sub[f"{col}_se"].to_numpy(float)
            ax.plot(x, y, "-", color=color, lw=1.2, label=cls if multi else None)
            ax.fill_between(x, y - se, y + se, color=color, alpha=0.15, lw=0)
            for flag, marker, fill in (("one_se", "s", "none"), ("chosen", "o", color)):
                on = sub[flag].astype(bool).to_numpy()
                ax.plot(x[on], y[on], marker, color=color, mfc=fill, ms=7, zorder=3)
    axes[0].set_ylabel("held-out log-loss")
    axes[1].set_ylabel("held-out error rate")
    axes[1].set_xscale("log")
    top = float(cv_results["n_genes"].max()) if len(cv_results) else 1.0
    ticks = [t for t in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000) if t <= max(top, 1.0)]
    if len(cv_results) and (cv_results["n_genes"] == 0).any():
        ticks = [0.7, *ticks]
    axes[1].set_xticks(ticks, ["0" if t < 1 else str(t) for t in ticks])
    axes[1].minorticks_off()
    axes[1].set_xlabel("genes in the model (log scale; 0: the intercept alone)")
    for ax in axes:
        ax.grid(visible=True, alpha=0.3)
    keys = [Line2D([], [], color="0.3", marker="o", ls="none", ms=7, label="chosen size"),
            Line2D([], [], color="0.3", marker="s", mfc="none", ls="none", ms=7,
                   label="smallest within 1 s.e."),
            Line2D([], [], color="0.3", alpha=0.3, lw=6, label="+-1 standard error")]
    if multi:
        handles, names = axes[0].get_legend_handles_labels()
        fig.legend(handles + keys, [_short(n, 28) for n in names] + [k.get_label() for k in keys],
                   loc="outside lower center", ncol=min(3, len(classes) + 3), fontsize="small",
                   title="class vs rest", title_fontsize="small")
    else:
        axes[0].legend(handles=keys, fontsize="small", loc="best")
    if title:
        fig.suptitle(title)
    fig.align_ylabels(axes)
    return fig


def calibration(table: pd.DataFrame, *, title: str | None = None, fig=None):
    """Reliability diagram from :func:`ardselect.model_selection.calibration_table`: accuracy against mean confidence per bin.

    Points on the diagonal are calibrated; below it, over-confident. Marker area follows the number
    of held-out predictions in the bin. Returns the matplotlib Figure.
    """
    require_matplotlib()
    from matplotlib.figure import Figure

    if fig is None:
        fig = Figure(figsize=(5.0, 4.6))
    ax = fig.subplots()
    lo = float(table["bin_low"].min()) if len(table) else 0.0
    ax.plot([lo, 1], [lo, 1], color="k", lw=0.8, ls="--", label="calibrated")
    for i, (crit, sub) in enumerate(table.groupby("criterion", sort=False)):
        size = 12 + 200 * sub["n"] / max(1, table["n"].max())
        ax.plot(sub["mean_confidence"], sub["accuracy"], "-", color=f"C{i}", lw=1.0)
        ax.scatter(sub["mean_confidence"], sub["accuracy"], s=size, color=f"C{i}",
                   label=f"{crit} (ECE {sub['ece'].iloc[0]:.3f})", zorder=3)
    ax.set_xlabel("predicted probability of the predicted class")
    ax.set_ylabel("observed accuracy on held-out samples")
    ax.set_xlim(lo - 0.02, 1.02)
    ax.set_ylim(min(lo, float(table["accuracy"].min()) if len(table) else 0) - 0.05, 1.05)
    ax.grid(visible=True, alpha=0.3)
    ax.legend(fontsize="small", loc="lower right")
    if title:
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig
