"""ardselect.pl: the figures, drawn deterministically (no ARD fit except for the weights plot)."""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd
import pytest

from ardselect import pl
from ardselect.model_selection import calibration_table


def test_path_png_deterministic(tmp_path):
    path_table = pd.DataFrame(
        {
            "class": ["b"] * 4,
            "step": [0, 1, 2, 3],
            "log_evidence": [-9.0, -8.0, -7.5, -7.4],
            "loo_error": [0.2, 0.1, 0.1, 0.1],
            "loo_prob_error": [0.21, 0.12, 0.1, 0.1],
            "n_features": [1, 2, 3, 3],
            "chosen": [False, True, False, False],
        }
    )
    a, b = tmp_path / "a.png", tmp_path / "b.png"
    pl.save_png(pl.path(path_table, title="t"), a)
    pl.save_png(pl.path(path_table, title="t"), b)
    assert a.read_bytes() == b.read_bytes()
    assert a.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _path_table(loo_prob, classes=("b",)):
    rows = []
    for k, cls in enumerate(classes):
        for step, p in enumerate(loo_prob):
            rows.append({"class": cls, "step": step, "log_evidence": -9.0 + step + k,
                         "loo_error": 0.2 / (step + 1), "loo_prob_error": p,
                         "n_features": step + 1, "chosen": step == 1})
    return pd.DataFrame(rows)


def test_loo_probability_axis_stops_at_the_floor():
    """Issue 12, item 11: values of 1e-40 or 1e-300 carry no information; the axis stops at 1e-6.

    Values below the floor (and exact zeros) are drawn at it, and its tick says so.
    """
    ax = pl.path(_path_table([0.21, 1e-40, 1e-120, 0.0])).axes[2]
    assert ax.get_yscale() == "log"
    lo, hi = ax.get_ylim()
    assert pl.LOO_PROB_FLOOR * 0.5 < lo < pl.LOO_PROB_FLOOR
    assert 1.0 <= hi < 2.0
    np.testing.assert_array_equal(ax.get_lines()[0].get_ydata(), [0.21, 1e-6, 1e-6, 1e-6])
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels[0] == "\u22641e-6"
    assert labels[-1] == "1"


def test_loo_probability_axis_follows_the_data_above_the_floor():
    ax = pl.path(_path_table([0.3, 0.05, 0.002, 0.004])).axes[2]
    lo, _ = ax.get_ylim()
    assert 1e-4 < lo < 1e-3  # down to the decade of the smallest value, not further
    assert not any(t.get_text().startswith("\u2264") for t in ax.get_yticklabels())


def _rows(ax, side="left"):
    """The row labels drawn beside a panel (gene names on the left)."""
    return [t for t in ax.texts if t.get_gid() == f"row-{side}"]


def _boxes(fig):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig).draw()
    return fig.canvas.get_renderer()


def test_multiclass_path_legend_is_off_the_curves_and_title_clear():
    classes = ["CD4+/CD25 T Reg", "CD8+/CD45RA+ Naive Cytotoxic", "B", "NK"]
    fig = pl.path(_path_table([0.3, 0.1, 0.01, 0.02], classes), title="a long title " * 4)
    renderer = _boxes(fig)
    legend = fig.legends[0].get_window_extent(renderer)
    for ax in fig.axes:
        assert not legend.overlaps(ax.get_window_extent(renderer))
        assert ax.get_legend() is None
    title = fig._suptitle.get_window_extent(renderer)
    assert not title.overlaps(fig.axes[0].get_window_extent(renderer))
    assert title.y0 >= fig.axes[0].get_window_extent(renderer).y1
    full = fig.bbox
    for box in (legend, title):
        assert full.x0 <= box.x0
        assert box.x1 <= full.x1
        assert full.y0 <= box.y0
        assert box.y1 <= full.y1


def test_weights_labels_whole_words_inside_the_figure_and_titles_apart():
    ranked = pd.DataFrame({
        "class": np.repeat(["CD4+/CD25 T Reg", "b", "c", "d"], 3),
        "rank": np.tile([1, 2, 3], 4),
        "gene": [f"M{k}_at" for k in range(12)],
        "description": ["Hypothetical human serine-threonine protein kinase R31240_1 gene"] * 12,
        "selected": True,
        "weight": np.linspace(-2, 2, 12),
        "weight_sd": 0.3,
    })
    fig = pl.weights(ranked, title="a figure title")
    renderer = _boxes(fig)
    for ax in fig.axes[:4]:
        labels = _rows(ax)
        assert len(labels) == 3
        for label in labels:
            text = label.get_text()
            assert text.endswith("\u2026")
            assert text[:-1].split()[-1] in ranked["description"].iloc[0].split() + ["M0_at"]
            box = label.get_window_extent(renderer)
            assert fig.bbox.x0 <= box.x0
        title = fig._suptitle.get_window_extent(renderer)
        assert not title.overlaps(ax.title.get_window_extent(renderer))


def test_weights_and_calibration_plots_are_written(tmp_path, expression):
    from ardselect import ARDClassifier

    df = expression(n_samples=40, n_genes=12, n_classes=3, seed=2)
    X = pd.DataFrame(np.log(df.iloc[:, 2:].to_numpy()), columns=df.columns[2:])
    clf = ARDClassifier().fit(X, df["label"])
    ranked = clf.ranked_features()
    pl.save_png(pl.weights(ranked, title="three classes"), tmp_path / "w.png")
    fig = pl.certainty(ranked, top=8, title="three classes")
    pl.save_png(fig, tmp_path / "k.png")
    # Bars are the log Bayes factors of the best-ranked genes, selected ones first, per class.
    first = ranked[ranked["class"] == ranked["class"].iloc[0]].head(8)
    bars = sorted(p.get_width() for p in fig.axes[0].patches)
    np.testing.assert_allclose(bars, sorted(first["log_bf_conditional"]))
    pred = pd.DataFrame({"criterion": "loo", "n_classes": 3,
                         "confidence": clf.predict_proba(X).max(axis=1),
                         "correct": clf.predict(X) == df["label"].to_numpy()})
    pl.save_png(pl.calibration(calibration_table(pred)), tmp_path / "c.png")
    for name in ("w.png", "c.png", "k.png"):
        data = (tmp_path / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
        assert len(data) > 5000


def test_figures_ask_for_the_plot_extra_without_matplotlib(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now fails
    table = pd.DataFrame({"class": ["b"], "step": [0], "log_evidence": [-9.0], "loo_error": [0.2],
                          "loo_prob_error": [0.2], "n_features": [1], "chosen": [True]})
    with pytest.raises(ImportError, match=r"pip install matplotlib \(the plot extra\)"):
        pl.path(table)


def test_the_pruning_tail_follows_a_dotted_line():
    # criterion="cv" continues the path by its pruning tail: one curve, the tail's start marked.
    path_table = pd.DataFrame(
        {
            "class": ["b"] * 7,
            "step": [0, 1, 2, 3, 4, 5, 6],
            "action": ["init", "add", "delete", "prune", "reestimate", "prune", "prune"],
            "log_evidence": [-9.0, -8.0, -7.5, -8.0, -7.9, -9.0, -11.0],
            "loo_error": [0.2, 0.1, 0.1, 0.1, 0.1, 0.1, 0.2],
            "loo_prob_error": [0.21, 0.12, 0.1, 0.1, 0.1, 0.11, 0.2],
            "n_features": [3, 4, 3, 2, 2, 1, 0],
            "chosen": [False, False, False, False, True, False, False],
        }
    )
    fig = pl.path(path_table)
    lines = fig.axes[0].get_lines()
    curve = [ln for ln in lines if ln.get_linestyle() == "-" and ln.get_marker() in ("None", "")]
    assert [list(ln.get_xdata()) for ln in curve] == [[0, 1, 2, 3, 4, 5, 6]]
    assert "pruning tail" in fig.axes[-1].get_xlabel()
    seps = [ln for ln in lines if ln.get_linestyle() == ":"]
    assert [list(ln.get_xdata()) for ln in seps] == [[2.5, 2.5]]
    assert "pruning tail from here" in [t.get_text() for t in fig.axes[0].get_legend().get_texts()]


def test_frontier_marks_the_chosen_and_the_one_se_sizes():
    front = pd.DataFrame({
        "class": ["b"] * 5, "n_genes": [0, 1, 2, 5, 10],
        "cv_log_loss": [0.69, 0.4, 0.3, 0.25, 0.26], "cv_log_loss_se": [0.0, 0.05, 0.04, 0.03, 0.03],
        "cv_error": [0.5, 0.2, 0.1, 0.08, 0.08], "cv_error_se": [0.1, 0.06, 0.05, 0.04, 0.04],
        "chosen": [False, False, False, True, False], "one_se": [False, False, True, False, False],
    })
    fig = pl.frontier(front)
    top = fig.axes[0]
    dots = [ln for ln in top.get_lines() if ln.get_marker() == "o"]
    squares = [ln for ln in top.get_lines() if ln.get_marker() == "s"]
    assert [list(ln.get_xdata()) for ln in dots] == [[5.0]]
    assert [list(ln.get_xdata()) for ln in squares] == [[2.0]]
    labels = [t.get_text() for t in top.get_legend().get_texts()]
    assert labels == ["chosen size", "smallest within 1 s.e.", "+-1 standard error"]
    assert fig.axes[1].get_xticklabels()[0].get_text() == "0"  # the intercept alone


def test_certainty_labels_the_sign_of_genes_outside_the_model_by_their_direction():
    from ardselect.signature._plots import _sign_labels

    table = pd.DataFrame({"weight": [0.8, -0.5, 0.0, 0.0, 0.0],
                          "z": [3.0, -2.0, -1.2, 0.7, np.nan],
                          "t_stat": [4.0, -3.0, -2.0, 1.0, -0.5]})
    assert _sign_labels(table).tolist() == ["w>0", "w<0", "w<0", "w>0", "w<0"]
    # A table without weights has no sign labels.
    assert _sign_labels(table.drop(columns="weight")).tolist() == [""] * 5


def test_inclusion_draws_each_set_with_its_probability():
    ranked = pd.DataFrame({
        "rank": [1, 2, 3, 4, 5], "gene": ["A", "B", "C", "D", "E"],
        "selected": [True, True, False, False, False],
        "pip": [0.6, 0.1, 0.3, np.nan, 0.05],
        "credible_set": pd.array([1, 2, 1, None, 2], dtype="Int64"),
        "set_probability": [0.97, 0.12, 0.97, np.nan, 0.12]})
    fig = pl.inclusion(ranked, title="t")
    ax = fig.axes[0]
    assert [t.get_text() for t in _rows(ax)] == ["A", "C", "B", "E"]
    assert [t.get_position()[1] for t in _rows(ax)] == [3, 2, 1, 0]  # beside their bars
    assert [round(p.get_width(), 2) for p in ax.patches] == [0.6, 0.3, 0.1, 0.05]
    labels = [t.get_text() for t in ax.texts if t.get_gid() is None]
    assert labels == ["set 1: P = 0.97", "set 2: P = 0.12"]
    # the colours tell the sets apart
    assert ax.patches[0].get_facecolor() == ax.patches[1].get_facecolor()
    assert ax.patches[0].get_facecolor() != ax.patches[2].get_facecolor()
    off = ranked.assign(pip=np.nan, credible_set=pd.array([None] * 5, dtype="Int64"))
    ax = pl.inclusion(off).axes[0]
    assert "certainty off" in ax.texts[0].get_text()


def test_eleven_clusters_are_drawn_in_number_order_each_in_its_own_colour():
    # louvain clusters '0'..'10' come from np.unique as 0, 1, 10, 2, ...; ten colours repeat.
    from matplotlib.colors import to_hex

    clusters = [str(c) for c in np.unique([str(i) for i in range(11)])]
    assert clusters[:3] == ["0", "1", "10"]
    assert pl.class_order(clusters) == [str(i) for i in range(11)]
    assert pl.class_order(["c10", "B", "c2", "A", "b"]) == ["A", "B", "b", "c2", "c10"]
    for n in (3, 11, 20, 25, 60, 75):
        assert len({to_hex(c) for c in pl.class_colours(n)}) == n, n
    assert pl.class_colours(3) == ["C0", "C1", "C2"]  # up to ten: the usual cycle
    fig = pl.path(_path_table([0.3, 0.1, 0.01], classes=clusters))
    curves = [ln for ln in fig.axes[0].get_lines() if ln.get_label() in clusters]
    assert [ln.get_label() for ln in curves] == [str(i) for i in range(11)]
    assert len({to_hex(ln.get_color()) for ln in curves}) == 11
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend == [str(i) for i in range(11)]
    front = pd.DataFrame([{"class": c, "n_genes": n, "cv_log_loss": 0.5, "cv_log_loss_se": 0.1,
                           "cv_error": 0.2, "cv_error_se": 0.1, "chosen": n == 1,
                           "one_se": n == 1} for c in clusters for n in (0, 1)])
    fig = pl.frontier(front)
    curves = [ln for ln in fig.axes[0].get_lines() if ln.get_label() in clusters]
    assert [ln.get_label() for ln in curves] == [str(i) for i in range(11)]
    assert len({to_hex(ln.get_color()) for ln in curves}) == 11
    ranked = pd.DataFrame([{"class": c, "rank": 1, "gene": f"g{c}", "selected": True,
                            "log_bf_conditional": 3.0, "cv_frequency": 1.0, "weight": 1.0,
                            "weight_sd": 0.1} for c in clusters])
    titles = [ax.get_title() for ax in pl.certainty(ranked).axes if ax.get_title()]
    assert titles == [f"{i} vs rest" for i in range(11)]
