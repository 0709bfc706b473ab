"""Figures: the ARD path, the selected genes' weights, and held-out calibration.

Every function draws on a :class:`matplotlib.figure.Figure` (a new one unless ``fig`` is given) and
returns it; :func:`save_png` writes a figure as a byte-reproducible PNG. matplotlib is an optional
dependency (``pip install 'ardselect[plot]'``); it is imported when a figure is drawn, so the rest
of ardselect works without it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ._classifier import ML_ACTION
from ._screen import SCREEN
from .io import atomic_write

__all__ = [
    "LOO_PROB_FLOOR", "calibration", "certainty", "path", "require_matplotlib", "save_png", "weights",
]

#: Gene labels of the weights plot: the gene and its description, at most this many characters.
LABEL_WIDTH = 34


def require_matplotlib() -> None:
    """Raise a clear :class:`ImportError` naming the extra to install when matplotlib is missing."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        msg = "ardselect's figures need matplotlib: pip install 'ardselect[plot]'"
        raise ImportError(msg) from None


def save_png(fig, path) -> None:
    """Save ``fig`` as PNG, atomically.

    100 dpi and no software or date metadata, so the same figure gives the same bytes.
    """
    with atomic_write(path, "wb") as fh:
        fig.savefig(fh, format="png", dpi=100, metadata={"Software": None})


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
    :data:`LOO_PROB_FLOOR` (1e-6), below which values are drawn at the floor. The other candidates
    of ``criterion="cv"`` follow the path after a dotted line, not joined to it: the screened
    models (``action == "screen"``) as open squares, the ``ml_candidate`` model (``"ml"``) as an
    open diamond. Returns the matplotlib Figure.
    """
    require_matplotlib()
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    classes = list(dict.fromkeys(path_table["class"].astype(str)))
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
            color = f"C{i % 10}"
            values = sub[col].to_numpy(dtype=float)
            if col == "loo_prob_error":
                values = np.maximum(values, LOO_PROB_FLOOR)
            # The other candidates of criterion="cv" are recorded after the ARD path but are not
            # steps of it: drawn as separate markers, not joined to the path's curve.
            action = (sub["action"].astype(str).to_numpy() if "action" in sub
                      else np.full(len(sub), ""))
            screen, ml = action == SCREEN, action == ML_ACTION
            steps = sub["step"].to_numpy()
            on_path = ~(screen | ml)
            ax.plot(steps[on_path], values[on_path], color=color, lw=1.2,
                    label=cls if multi else None)
            if screen.any():
                ax.plot(steps[screen], values[screen], "s", color=color, ms=3.5, mfc="none",
                        label=None if multi or i else "screened models (top-k genes)")
            if ml.any():
                ax.plot(steps[ml], values[ml], "D", color=color, ms=4, mfc="none",
                        label=None if multi or i else "LOO model of the ML path")
            if not on_path.all():
                ax.axvline(steps[~on_path].min() - 0.5, color="0.6", ls=":", lw=0.8)
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
    has_others = "action" in path_table and \
        path_table["action"].astype(str).isin([SCREEN, ML_ACTION]).any()
    axes[-1].set_xlabel("path step (after the dotted line: the other CV candidates)" if has_others
                        else "path step")
    axes[-1].xaxis.set_major_locator(MaxNLocator(integer=True))
    axes[-1].yaxis.set_major_locator(MaxNLocator(integer=True))
    if multi:
        handles, names = axes[0].get_legend_handles_labels()
        # Below the panels, where it cannot cover a curve.
        fig.legend(handles, [_short(n, 28) for n in names], loc="outside lower center",
                   ncol=min(3, len(classes)), fontsize="small",
                   title="class vs rest (dot: chosen step)", title_fontsize="small")
    elif path_table["chosen"].astype(bool).any():
        axes[0].legend(fontsize="small", loc="best")
    if title:
        fig.suptitle(title)
    fig.align_ylabels(axes)
    return fig


def _per_class(ranked: pd.DataFrame):
    """``(table, name_col, classes)`` for the per-class panels of a ranked table.

    ``table`` is a copy with a ``class`` column (``""`` for a binary table), ``name_col`` the gene
    name column (``gene`` or ``feature``), ``classes`` the first 12 classes in table order.
    """
    table = ranked.copy()
    if "class" not in table:
        table["class"] = ""
    name_col = "gene" if "gene" in table else "feature"
    return table, name_col, list(dict.fromkeys(table["class"].astype(str)))[:12]


def _grid(n_panels: int):
    """``(ncol, nrow)``: at most 3 panels per row."""
    ncol = min(n_panels, 3)
    return ncol, -(-n_panels // ncol)


def _short(text: str, width: int) -> str:
    """``text`` cut to at most ``width`` characters at a word boundary, with an ellipsis."""
    text = " ".join(str(text).split())
    if len(text) <= width:
        return text
    cut = text[: width - 1]
    if " " in cut and not text[width - 1].isspace():
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip(" ;,.:-") + "\u2026"


def weights(ranked: pd.DataFrame, *, top: int = 25, title: str | None = None, fig=None):
    """Forest plot of the selected genes: posterior mean of the weight with +-2 sd bars.

    ``ranked`` is a ranked table (:meth:`ARDClassifier.ranked_features` or
    :func:`ardselect.get.ranked_genes_df`: columns ``rank``, ``gene`` or ``feature``, ``selected``,
    ``mean``, ``sd``, optionally ``class`` and ``description``). The ``top`` best-ranked selected genes
    of each class are drawn, best at the top; a bar that crosses zero marks a weight whose sign the
    data do not pin down. One panel per class (at most 12). Returns the matplotlib Figure.
    """
    require_matplotlib()
    from matplotlib.figure import Figure

    table, name_col, classes = _per_class(ranked)
    n_rows = [min(int(table.loc[(table["class"].astype(str) == c) & table["selected"]].shape[0]),
                  top) for c in classes]
    height = max(2.5, 0.22 * max(n_rows + [1]) + 1.2)
    ncol, nrow = _grid(len(classes))
    if fig is None:
        # Constrained layout sizes the margins to the tick labels and the titles, so labels are
        # never cut at the figure's edge and the figure title never overlaps a panel title.
        fig = Figure(figsize=(5.2 * ncol, height * nrow + (0.4 if title else 0.0)),
                     layout="constrained")
    elif fig.get_layout_engine() is None:
        fig.set_layout_engine("constrained")
    axes = np.atleast_1d(fig.subplots(nrow, ncol, squeeze=False)).ravel()
    for ax, cls in zip(axes, classes, strict=False):
        sub = table[(table["class"].astype(str) == cls) & table["selected"].astype(bool)]
        sub = sub.sort_values("rank", kind="stable").head(top)
        k = len(sub)
        ypos = np.arange(k)[::-1]
        labels = sub[name_col].astype(str).to_numpy()
        if "description" in sub:
            # The description shortened at a word boundary, with an ellipsis: never cut mid-word.
            desc = sub["description"].fillna("").astype(str).to_numpy()
            labels = np.array([_short(f"{g} {d}".strip(), max(LABEL_WIDTH, len(g)))
                               for g, d in zip(labels, desc, strict=True)])
        mean = sub["mean"].to_numpy(float)
        sd = sub["sd"].to_numpy(float)
        colors = np.where(np.abs(mean) > 2 * sd, "C0", "0.6")
        ax.errorbar(mean, ypos, xerr=2 * sd, fmt="none", ecolor=colors, elinewidth=1.2)
        ax.scatter(mean, ypos, c=colors, s=14, zorder=3)
        ax.axvline(0.0, color="k", lw=0.8)
        ax.set_yticks(ypos)
        ax.set_yticklabels(labels, fontsize=7)
        if "pip" in sub and k:
            # How sure the model is of each gene, on the right: its posterior inclusion probability.
            right = ax.twinx()
            right.set_ylim(ax.get_ylim())
            right.set_yticks(ypos)
            right.set_yticklabels([_pip_label(p) for p in sub["pip"].to_numpy(float)], fontsize=7)
            right.tick_params(axis="y", length=0)
            right.set_ylabel("posterior inclusion probability", fontsize=7)
        ax.set_xlabel("weight (posterior mean +- 2 sd)")
        ax.grid(visible=True, axis="x", alpha=0.3)
        sub_title = f"{cls} vs rest" if len(classes) > 1 else (title or "")
        if sub_title:
            ax.set_title(sub_title, fontsize=9)
        if k == 0:
            ax.text(0.5, 0.5, "no gene selected", ha="center", va="center",
                    transform=ax.transAxes)
    for ax in axes[len(classes):]:
        ax.set_visible(False)
    if title and len(classes) > 1:
        fig.suptitle(title, fontsize=10)
    return fig


def _pip_label(p: float) -> str:
    """A probability shown to two decimals, without rounding a near-certainty up to 1."""
    if not np.isfinite(p):
        return "-"
    if p >= 0.995:
        return ">0.99"
    if p <= 0.005:
        return "<0.01"
    return f"{p:.2f}"


def certainty(ranked: pd.DataFrame, *, top: int = 25, title: str | None = None, fig=None):
    """How sure the model is of each gene: log Bayes factor, inclusion and sign probability.

    ``ranked`` is a ranked table with the certainty columns (:meth:`ARDClassifier.ranked_features`
    or :func:`ardselect.get.ranked_genes_df`: ``rank``, ``gene`` or ``feature``, ``selected``,
    ``log_bf``, ``pip``, ``p_sign``, optionally ``class``). For the ``top`` best-ranked genes of each
    class (selected ones first, then the best candidates outside the model) a bar shows the log Bayes
    factor of the gene in the model against out of it; dark bars are selected genes. Right-hand
    labels give the posterior inclusion probability and the probability that the weight has the
    sign shown (``w>0`` or ``w<0``). Dotted lines mark log Bayes factors of +-log(3) and +-log(20) ("positive" and
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
        sub = sub[np.isfinite(sub["log_bf"].to_numpy(float))].head(top)
        k = len(sub)
        ypos = np.arange(k)[::-1]
        bf = sub["log_bf"].to_numpy(float)
        sel = sub["selected"].astype(bool).to_numpy()
        ax.barh(ypos, bf, color=np.where(sel, "C0", "0.75"), height=0.7)
        for v in (np.log(3.0), np.log(20.0)):
            for sign in (-1, 1):
                ax.axvline(sign * v, color="0.4", lw=0.6, ls=":")
        ax.axvline(0.0, color="k", lw=0.8)
        ax.set_yticks(ypos)
        ax.set_yticklabels(sub[name_col].astype(str).to_numpy(), fontsize=7)
        ax.set_ylim(-0.7, max(k, 1) - 0.3)
        right = ax.twinx()
        right.set_ylim(ax.get_ylim())
        right.set_yticks(ypos)
        signs = np.where(sub["mean"].to_numpy(float) < 0, "w<0", "w>0") if "mean" in sub else [""] * k
        right.set_yticklabels(
            [f"{_pip_label(p):>5}  {s} {_pip_label(q):>5}" for p, s, q in
             zip(sub["pip"].to_numpy(float), signs, sub["p_sign"].to_numpy(float), strict=True)],
            fontsize=7, family="monospace")
        right.tick_params(axis="y", length=0)
        right.set_ylabel("inclusion probability;  probability of the sign", fontsize=7)
        ax.set_xlabel("log Bayes factor, in vs out (dark: selected)")
        ax.grid(visible=True, axis="x", alpha=0.3)
        sub_title = f"{cls} vs rest" if len(classes) > 1 else (title or "")
        if sub_title:
            ax.set_title(sub_title, fontsize=9)
    for ax in axes[len(classes):]:
        ax.set_visible(False)
    if title and len(classes) > 1:
        fig.suptitle(title, fontsize=10)
        # Keep the panels below the suptitle (tight_layout alone lets them overlap it).
        fig.tight_layout(rect=(0.0, 0.0, 1.0, 1.0 - 0.4 / fig.get_figheight()))
    else:
        fig.tight_layout()
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
