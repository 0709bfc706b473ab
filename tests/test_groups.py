"""Donor-honest fitting: groups held out whole by the inner cross-validation, and scaled X beside raw."""

from __future__ import annotations

import warnings

import anndata as ad
import numpy as np
import pandas as pd
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin
from typer.testing import CliRunner

import ardselect
from ardselect import ARDClassifier, ScaledXWarning
from ardselect.model_selection import evaluate
from tests.conftest import one_error, run_cli

runner = CliRunner()


def donor_data(seed=0, n_donors=6, per_donor=30, p=30):
    """Two classes in every donor; gene 0 marks the class, gene 1 the donor (a per-donor shift)."""
    rng = np.random.default_rng(seed)
    n = n_donors * per_donor
    donors = np.repeat([f"d{k}" for k in range(n_donors)], per_donor)
    y = np.tile([0, 1], n // 2)
    X = rng.normal(size=(n, p))
    X[:, 0] += 1.2 * y
    X[:, 1] += np.repeat(rng.normal(scale=2.0, size=n_donors), per_donor)
    return X, y, donors


run = run_cli


@pytest.mark.parametrize("repeats", [1, 2])
def test_grouped_inner_folds_never_split_a_group(repeats):
    from ardselect.estimators._cv import make_folds

    X, y, donors = donor_data()
    for n_folds in (2, 3, 5):
        folds = make_folds(y, n_folds, repeats, 0, donors)
        assert len(folds) == n_folds * repeats
        for r in range(repeats):
            tests = np.concatenate([te for tr, te, off in folds if off == r * y.size])
            np.testing.assert_array_equal(np.sort(tests), np.arange(y.size))  # each sample once
        for tr, te, _ in folds:
            assert not set(donors[tr]) & set(donors[te])


def test_group_table_adds_up_to_the_chosen_models_held_out_log_loss():
    # Per-group means weighted by the group sizes give back the pooled held-out log-loss of the
    # chosen size with its full calibration (the frontier's cv_log_loss_final), which the group
    # table was not computed from.
    X, y, donors = donor_data(1)
    clf = ARDClassifier().fit(X, y, groups=donors)
    table = clf.cv_groups_
    assert list(table.columns) == ["group", "n_samples", "cv_error", "cv_log_loss"]
    assert sorted(table["group"]) == sorted(set(donors))
    assert table["n_samples"].sum() == y.size
    chosen = clf.cv_results_[clf.cv_results_["chosen"]].iloc[0]
    pooled = float((table["n_samples"] * table["cv_log_loss"]).sum() / y.size)
    assert pooled == pytest.approx(chosen["cv_log_loss_final"], rel=1e-10)
    assert ((table["cv_error"] >= 0) & (table["cv_error"] <= 1)).all()


def test_group_table_multiclass_and_the_sketch():
    X, y, donors = donor_data(2)
    y3 = np.digitize(X[:, 0] + 0.3 * X[:, 2], [0.0, 1.0])
    clf = ARDClassifier().fit(X, y3, groups=donors)
    assert clf.cv_groups_["n_samples"].sum() == y3.size
    sk = ARDClassifier(max_samples=90).fit(X, y3, groups=donors)
    assert sk.cv_groups_["n_samples"].sum() == 90


def test_same_seed_same_grouped_fit_and_a_refit_without_groups_forgets_them():
    X, y, donors = donor_data(3)
    a = ARDClassifier(random_state=4).fit(X, y, groups=donors)
    b = ARDClassifier(random_state=4).fit(X, y, groups=donors)
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
    pd.testing.assert_frame_equal(a.cv_groups_, b.cv_groups_)
    a.fit(X, y)
    assert not hasattr(a, "cv_groups_")


@pytest.mark.parametrize(("kwargs", "groups", "pattern"), [
    ({"criterion": "loo"}, "ok", "criterion='cv' only"),
    ({}, "one", "single group"),
    ({}, "short", "one group per sample"),
    ({}, "nan", "missing value"),
])
def test_bad_groups_are_refused(kwargs, groups, pattern):
    X, y, donors = donor_data()
    g = {"ok": donors, "one": np.full(y.size, "d"), "short": donors[:-1],
         "nan": np.where(np.arange(y.size) == 3, None, donors)}[groups]
    with pytest.raises(ValueError, match=pattern):
        ARDClassifier(**kwargs).fit(X, y, groups=g)


class _RecordsGroups(ClassifierMixin, BaseEstimator):
    """A stand-in classifier that records the groups its fit was given."""

    seen: list = []

    def fit(self, X, y, groups=None):
        type(self).seen.append(None if groups is None else np.asarray(groups).copy())
        self.classes_ = np.unique(y)
        self.coef_ = np.zeros((1, X.shape[1]))
        return self

    def predict_proba(self, X):
        return np.full((X.shape[0], self.classes_.size), 1.0 / self.classes_.size)


@pytest.mark.parametrize("inner", [True, False])
def test_evaluate_gives_the_training_groups_to_the_inner_fit(inner):
    X, y, donors = donor_data()
    _RecordsGroups.seen = []
    evaluate(X, y, {"m": _RecordsGroups()}, groups=donors, inner_groups=inner, n_splits=3,
             n_jobs=1)
    assert len(_RecordsGroups.seen) == 3
    for g in _RecordsGroups.seen:
        if inner:
            assert g is not None
            assert 2 <= len(set(g)) < len(set(donors))  # the training part's donors
        else:
            assert g is None


def _adata(*, scaled=False):
    X, y, donors = donor_data(4, p=12)
    obs = pd.DataFrame({"cell_type": np.where(y == 1, "T", "B"), "donor": donors},
                       index=[f"c{i}" for i in range(y.size)])
    counts = np.exp(X / 2)  # positive, unscaled
    adata = ad.AnnData(counts, obs=obs, var=pd.DataFrame(index=[f"g{j}" for j in range(12)]))
    if scaled:
        adata.raw = adata.copy()
        adata.X = (counts - counts.mean(0)) / counts.std(0)
    return adata


def test_rank_genes_with_groups_stores_the_group_table():
    adata = _adata()
    ardselect.rank_genes(adata, "cell_type", groups="donor")
    table = ardselect.get.cv_groups_df(adata)
    assert sorted(table["group"]) == [f"d{k}" for k in range(6)]
    assert table["n_samples"].sum() == adata.n_obs
    plain = _adata()
    ardselect.rank_genes(plain, "cell_type")
    assert ardselect.get.cv_groups_df(plain).empty
    with pytest.raises(ardselect.exceptions.LabelError, match="not an obs column"):
        ardselect.rank_genes(_adata(), "cell_type", groups="patient")
    with pytest.raises(ValueError, match="criterion='cv' only"):
        ardselect.rank_genes(_adata(), "cell_type", groups="donor",
                             estimator=ardselect.ARDClassifier(criterion="loo"))


def test_scaled_x_beside_raw_is_announced_and_use_raw_is_quiet():
    with pytest.warns(ScaledXWarning, match="use_raw=True"):
        ardselect.rank_genes(_adata(scaled=True), "cell_type")
    with warnings.catch_warnings():
        warnings.simplefilter("error", ScaledXWarning)
        ardselect.rank_genes(_adata(scaled=True), "cell_type", use_raw=True)
        ardselect.rank_genes(_adata(), "cell_type")  # no raw: nothing to say


def test_cli_fit_groups_writes_the_group_table_and_summary(tmp_path):
    path = tmp_path / "cells.h5ad"
    _adata().write_h5ad(path)
    result = run("fit", "--no-figures", path, "--label-key", "cell_type", "--groups", "donor", "-j", "2",
                 "-o", tmp_path / "out")
    assert result.exit_code == 0, result.stderr
    table = pd.read_csv(tmp_path / "out" / "groups.tsv", sep="\t")
    assert list(table.columns) == ["donor", "n_samples", "cv_error", "cv_log_loss"]
    assert len(table) == 6
    assert "chosen for new donor groups: whole donor groups held out (6 groups)" in \
        " ".join(result.stdout.split())
    assert "groups.tsv" in result.stdout


def test_cli_fit_groups_and_jobs_errors(tmp_path):
    path = tmp_path / "cells.h5ad"
    _adata().write_h5ad(path)
    one_error(run("fit", "--no-figures", path, "--label-key", "cell_type", "--groups", "donor", "--criterion",
                  "loo", "-o", tmp_path / "a"), 2,
              "--groups: groups are used by the inner cross-validation of criterion='cv' only; "
              "got criterion='loo'")
    assert not (tmp_path / "a").exists()
    one_error(run("fit", "--no-figures", path, "--label-key", "cell_type", "-j", "0", "-o", tmp_path / "b"), 2,
              "--n-jobs must be")
    result = run("fit", "--no-figures", path, "--label-key", "cell_type", "--groups", "patient", "-o",
                 tmp_path / "c")
    assert result.exit_code != 0
    assert "patient" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "c").exists()


def test_cli_says_when_x_is_scaled_and_raw_is_not(tmp_path):
    path = tmp_path / "scaled.h5ad"
    _adata(scaled=True).write_h5ad(path)
    result = run("fit", "--no-figures", path, "--label-key", "cell_type", "-o", tmp_path / "x")
    assert result.exit_code == 0, result.stderr
    lines = [ln for ln in result.stderr.splitlines() if "adata.raw" in ln]
    assert len(lines) == 1
    assert "--use-raw" in lines[0]
    quiet = run("fit", "--no-figures", path, "--label-key", "cell_type", "--use-raw", "-o", tmp_path / "r")
    assert quiet.exit_code == 0, quiet.stderr
    assert "adata.raw" not in quiet.stderr


def test_cli_says_how_long_an_exact_fit_of_many_samples_can_take(tmp_path, monkeypatch):
    from ardselect_cli import fit as fit_command

    path = tmp_path / "cells.h5ad"
    _adata().write_h5ad(path)
    monkeypatch.setattr(fit_command, "LARGE_FIT", 100)  # the data hold 180 cells
    quick = ("--criterion", "loo", "--no-certainty")  # the notice is the subject, not the fit
    result = run("fit", "--no-figures", path, "--label-key", "cell_type", "--max-samples", "all",
                 *quick, "-o", tmp_path / "exact")
    assert result.exit_code == 0, result.stderr
    lines = [ln for ln in result.stderr.splitlines() if "--max-samples" in ln]
    assert len(lines) == 1
    assert "180 samples and --max-samples all" in lines[0]
    assert "--max-samples auto fits a stratified sketch of 2,000" in lines[0]
    for args, name in ((["--max-samples", "120"], "sketch"), ([], "auto")):
        other = run("fit", "--no-figures", path, "--label-key", "cell_type", *args, *quick, "-o",
                    tmp_path / name)
        assert other.exit_code == 0, other.stderr
        assert "can take hours" not in other.stderr
