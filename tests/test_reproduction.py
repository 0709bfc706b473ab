"""Slow reproduction runs of the paper's experiments (CI runs them; `--runslow` locally).

Thresholds are the paper's figures with room for the smaller number of repetitions run here; the full
tables come from `benchmarks/leukaemia.py` and `benchmarks/synthetic.py` (docs/benchmarks.md).
"""

import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCH))

pytestmark = pytest.mark.slow


def test_leukaemia_predictive_beats_evidence_and_matches_the_paper(shared_data):
    import leukaemia

    X, y = leukaemia.load()
    rows = [leukaemia.run_split(X, y, tr, 100, ard_only=True) for tr in leukaemia.partitions(20)]
    loo = np.array([r["loo_errors"] for r in rows])
    ev = np.array([r["evidence_errors"] for r in rows])
    ev_genes = np.array([r["evidence_genes"] for r in rows])
    # Paper: predictive 2.80 +- 0.18, evidence 3.86 +- 0.14 errors of 36 (100 partitions).
    assert loo.mean() <= 2.80 + 0.6
    assert loo.mean() < ev.mean()
    assert np.median(ev_genes) <= 10  # the evidence model is very sparse (paper: 2.78 genes)


def test_synthetic_predictive_is_no_worse_and_evidence_is_sparser():
    # On the paper's synthetic set-up the LOO model is, on average, half a point better than the
    # evidence model (benchmarks/synthetic.py, 50 repetitions: -0.42 +- 0.24 points, 11.9
    # features against 6.6); on 12 repetitions we check it is no worse by more than a point and
    # that the evidence keeps clearly fewer features (measured here: 6.8 against 11.6; the LOO
    # model breaks its ties toward fewer genes).
    import synthetic

    seeds = np.random.SeedSequence(0).generate_state(12)
    rows = [synthetic.one(int(s)) for s in seeds]
    loo = np.mean([r["loo_error"] for r in rows])
    ev = np.mean([r["evidence_error"] for r in rows])
    assert loo <= ev + 0.01
    assert np.mean([r["evidence_features"] for r in rows]) < np.mean(
        [r["loo_features"] for r in rows]) / 1.5


def test_kernel_ep_breast_cancer_matches_the_paper(shared_data):
    # Qi et al. (2004) Table 1: evidence-ARD-EP 27.81 +- 0.35 % with 3.84 relevance vectors (50
    # partitions of 100/177). Ten partitions here: error within 2 points, a handful of vectors.
    import kernel_ep
    from sklearn.model_selection import StratifiedShuffleSplit

    from ardselect import ARDClassifier

    X, y = kernel_ep.breast_cancer()
    sss = StratifiedShuffleSplit(n_splits=10, train_size=100, random_state=0)
    errors, sizes = [], []
    for tr, te in sss.split(X, y):
        mu, sd = X[tr].mean(0), X[tr].std(0)
        sd[sd == 0] = 1
        clf = ARDClassifier(kernel="rbf", gamma=1 / 50, criterion="evidence",
                            alpha_min=kernel_ep.PAPER_ALPHA_MIN).fit(
            (X[tr] - mu) / sd, y[tr])
        errors.append(np.mean(clf.predict((X[te] - mu) / sd) != y[te]))
        sizes.append(np.isfinite(clf.alpha_[0]).sum())
    assert 100 * np.mean(errors) < 27.81 + 2.0
    assert 1 <= np.mean(sizes) <= 8
