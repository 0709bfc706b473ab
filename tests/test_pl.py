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


def test_path_plot_loo_probability_is_log_scaled_down_to_its_smallest_value():
    """The LOO error probability panel is log-scaled down to its smallest value.

    Separable data give LOO error probabilities near 1e-300 (and exact zeros): the panel is on a
    log scale whose range reaches the smallest value, with zeros drawn at the 1e-300 floor.
    """
    path_table = pd.DataFrame(
        {
            "class": ["b"] * 4,
            "step": [0, 1, 2, 3],
            "log_evidence": [-9.0, -8.0, -7.5, -7.4],
            "loo_error": [0.2, 0.0, 0.0, 0.0],
            "loo_prob_error": [0.21, 1e-40, 1e-120, 0.0],
            "n_features": [1, 2, 3, 3],
            "chosen": [False, True, False, False],
        }
    )
    ax = pl.path(path_table).axes[2]
    assert ax.get_yscale() == "log"
    lo, hi = ax.get_ylim()
    assert lo <= 1e-300
    assert 1.0 <= hi < 10.0
    line = ax.get_lines()[0].get_ydata()
    np.testing.assert_array_equal(line, [0.21, 1e-40, 1e-120, 1e-300])
    ticks = ax.get_yticks()
    assert ticks.max() == 1.0
    assert ticks.min() >= lo
    assert len(ticks) >= 3


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
    np.testing.assert_allclose(bars, sorted(first["log_bf"]))
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
    with pytest.raises(ImportError, match=r"pip install 'ardselect\[plot\]'"):
        pl.path(table)
