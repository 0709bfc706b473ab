"""What SpikeSlabClassifier's inclusion probabilities are worth: calibration, reproducibility, accuracy, speed.

Five sections (``--sections``, all by default), each printing markdown tables:

``calibration``
    Planted data on real genes: in each of ``--replicates`` replicates per setting, 2,000 genes are
    drawn at random from Golub's 72 x 7129 matrix (preprocessed as in ``accuracy.py``, then
    standardised; their correlations are the data's), ``k`` of them are made relevant with weights
    ``N(0, scale^2)``, and labels are drawn from the probit model ``t = sign(z . w + e)``. The
    genes are binned by PIP against the fraction truly relevant (reliability table and ECE: over all
    genes, dominated by the thousands near zero, and over the genes with PIP >= 0.1). Methods: the
    default ``SpikeSlabClassifier()``; the type-II maximum likelihood alternative (the node of
    largest EP evidence on a grid of expected genes 1-100 and slab variances 0.3, 1, 3); the same
    model told the truth (``p0 = k / 2000``, ``v_s = scale^2``); and the default ``ARDClassifier()``'s
    ``ranked_features()["cv_frequency"]`` (the share of its inner cross-validation's fold models that
    hold the gene), read as a probability. ``--no-ml-ii`` leaves the grid out (21 fits per
    replicate: most of the section's time). Credible sets: how many, their size and purity, and the
    fraction holding a planted gene (their coverage).
``bootstrap``
    On the shared two-class sets, one fit on all samples against ``--boots`` stratified bootstrap
    resamples (each preprocessed and fitted the same way): Spearman correlation of each one-fit
    score (the spike-and-slab PIP, and the default ARDClassifier's ``cv_frequency`` and
    ``log_bf_marginal``)
    with each method's bootstrap selection frequency (spike-and-slab: PIP > 0.5; ARD: its chosen
    genes), over the genes that any score ranks in its top 50 or that some resample selects.
``accuracy``
    The partitions of ``accuracy.py`` (``--splits``, two thirds train), the default
    ``SpikeSlabClassifier()`` beside the default ``ARDClassifier()`` and L1-logistic regression:
    error, genes (PIP > 0.5), log-loss, pooled ECE and the confidence gap, and paired differences
    (mean +- s.e. over partitions) against L1 and ARD-EP.
``evidence``
    Why not the evidence: on the first Golub partition of ``accuracy.py`` (48 training samples), the
    EP log evidence, the largest PIP and the sum of PIPs over a grid of expected genes and slab
    variances (each a single-node fit).
``speed``
    Fit time of ``SpikeSlabClassifier()`` on the training part of each Golub partition (one BLAS
    thread): median and largest, wall-clock and CPU time (on a shared machine the CPU time is what a
    free core takes), beside the default ARDClassifier; then the CPU time of five fits on all 72
    samples of the bundled data (floor 100, cap 16000, log10), the first one included.

Usage:
    python benchmarks/spikeslab.py [--sections calibration,evidence,bootstrap,accuracy,speed]
        [--replicates 50] [--no-ml-ii] [--boots 50] [--splits 50] [--speed-splits 50]
        [--datasets golub_leukemia,...] [--jobs 2]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from accuracy import DATASETS, load  # noqa: E402  (the shared loaders and preprocessing rules)

BINARY = ("golub_leukemia", "west_breast_er", "shipp_dlbcl_fl", "borovecki_huntington")
#: Planted settings: (relevant genes k, weight sd, near copies of each relevant gene). A copy is
#: the relevant gene plus noise, at correlation 0.95 with it, in place of another gene: genes the
#: data cannot tell apart, which credible sets are for (only the original counts as relevant).
SETTINGS = ((2, 2.0, 0), (5, 1.0, 0), (10, 1.0, 0), (3, 2.0, 2))
COPY_CORRELATION = 0.95
N_GENES = 2000
BINS = (0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9, 1.0 + 1e-12)
#: The type-II maximum likelihood grid (expected genes, slab variance).
ML_GENES = (1, 2, 5, 10, 20, 50, 100)
ML_SLAB = (0.3, 1.0, 3.0)


def _quiet():
    warnings.simplefilter("ignore")  # path and constant-gene notes do not change the comparisons


# ------------------------------------------------------------------------------------------------
# Calibration on planted data
# ------------------------------------------------------------------------------------------------
def golub_genes():
    """Golub's 72 samples x all genes, preprocessed and standardised."""
    from ardselect.preprocessing import Preprocessor

    X, _, _ = load("golub_leukemia")
    Xt = Preprocessor(**DATASETS["golub_leukemia"]).fit_transform(X)
    sd = Xt.std(axis=0)
    Xt = Xt[:, sd > 0]
    return (Xt - Xt.mean(axis=0)) / Xt.std(axis=0)


def planted(genes, k, scale, seed, copies=0):
    """One replicate: ``(Z, t, relevant mask)``."""
    rng = np.random.default_rng(seed)
    while True:
        Z = genes[:, rng.choice(genes.shape[1], N_GENES, replace=False)]
        picked = rng.choice(N_GENES, k * (1 + copies), replace=False)
        rel = picked[:k]
        for j, c in zip(np.repeat(rel, copies), picked[k:], strict=True):
            noise = rng.normal(size=Z.shape[0])
            r = COPY_CORRELATION
            Z[:, c] = r * Z[:, j] + np.sqrt(1 - r * r) * (noise - noise.mean()) / noise.std()
        w = np.zeros(N_GENES)
        w[rel] = scale * rng.normal(size=k)
        t = np.where(Z @ w + rng.normal(size=Z.shape[0]) > 0, 1, 0)
        if min(t.sum(), (1 - t).sum()) >= 5:
            truth = np.zeros(N_GENES, dtype=bool)
            truth[rel] = True
            return Z, t, truth


def calibration_replicate(genes, k, scale, copies, seed, *, ml_ii=True):
    from ardselect import ARDClassifier, SpikeSlabClassifier

    Z, t, truth = planted(genes, k, scale, seed, copies)
    out = {"truth": truth}
    with warnings.catch_warnings():
        _quiet()
        default = SpikeSlabClassifier().fit(Z, t)
        out["default"] = default.pip_[0]
        sets = default.credible_sets_
        out["sets"] = [(bool(truth[s["feature"].str[1:].astype(int).to_numpy()].any()), len(s),
                        float(s["purity"].iloc[0]), float(s["set_pip"].iloc[0]))
                       for _, s in sets.groupby("set")]
        best = (-np.inf, None)
        for vs in ML_SLAB if ml_ii else ():
            for e in ML_GENES:
                fit = SpikeSlabClassifier(prior_genes=(e,), slab_variance=vs).fit(Z, t)
                if fit.hyper_results_["converged"].all() and fit.log_evidence_[0] > best[0]:
                    best = (fit.log_evidence_[0], fit.pip_[0])
        if ml_ii:
            out["ML-II"] = best[1]
        out["truth prior"] = SpikeSlabClassifier(prior_inclusion=k / N_GENES,
                                                 slab_variance=scale**2).fit(Z, t).pip_[0]
        ard = ARDClassifier(random_state=seed).fit(Z, t).ranked_features()
        freq = np.zeros(N_GENES)
        freq[ard["feature"].str[1:].astype(int).to_numpy()] = ard["cv_frequency"].to_numpy()
        out["ARD-EP cv_frequency"] = freq
    return out


def reliability(pip, truth):
    """Rows per PIP bin: genes, mean PIP, fraction relevant; ECE over all and over PIP >= 0.1."""
    idx = np.digitize(pip, BINS) - 1
    rows, ece, ece_hi = [], 0.0, 0.0
    n_hi = int((pip >= 0.1).sum())
    for b in range(len(BINS) - 1):
        m = idx == b
        if not m.any():
            continue
        gap = abs(pip[m].mean() - truth[m].mean())
        ece += m.sum() / pip.size * gap
        if BINS[b] >= 0.1:
            ece_hi += m.sum() / n_hi * gap
        rows.append((f"[{BINS[b]:.2f}, {min(BINS[b + 1], 1.0):.2f}{']' if b == len(BINS) - 2 else ')'}",
                     int(m.sum()), float(pip[m].mean()), float(truth[m].mean())))
    return rows, ece, ece_hi


def _setting(k, scale, copies):
    return f"k={k}, sd {scale:g}" + (f", {copies} copies each" if copies else "")


def calibration(n_rep, jobs, which=None, *, ml_ii=True):
    from joblib import Parallel, delayed

    genes = golub_genes()
    methods = ("default", *(("ML-II",) if ml_ii else ()), "truth prior", "ARD-EP cv_frequency")
    pooled = {m: ([], []) for m in methods}
    set_rows = []
    print(f"\n## Calibration on planted data ({n_rep} replicates per setting, {N_GENES} Golub genes, "
          "72 samples)\n")
    print("| setting | method | ECE (all genes) | ECE (PIP >= 0.1) | genes PIP >= 0.1 | relevant "
          "found (PIP > 0.5) | false among PIP > 0.5 |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for s, (k, scale, copies) in enumerate(SETTINGS):
        if which is not None and s not in which:
            continue
        reps = Parallel(n_jobs=jobs)(delayed(calibration_replicate)(genes, k, scale, copies,
                                                                    1000 * s + r, ml_ii=ml_ii)
                                     for r in range(n_rep))
        truth = np.concatenate([r["truth"] for r in reps])
        for m in methods:
            pip = np.concatenate([r[m] for r in reps])
            pooled[m][0].append(pip)
            pooled[m][1].append(truth)
            _, ece, ece_hi = reliability(pip, truth)
            sel = pip > 0.5
            print(f"| {_setting(k, scale, copies)} | {m} | {ece:.4f} | {ece_hi:.3f} | {int((pip >= 0.1).sum())} "
                  f"| {truth[sel].sum()}/{truth.sum()} | {int((sel & ~truth).sum())}/"
                  f"{int(sel.sum())} |", flush=True)
        set_rows += [(_setting(k, scale, copies), *row) for r in reps for row in r["sets"]]
    print("\nPooled over the settings:\n")
    print("| method | ECE (all genes) | ECE (PIP >= 0.1) |")
    print("| --- | --- | --- |")
    for m in methods:
        pip, truth = np.concatenate(pooled[m][0]), np.concatenate(pooled[m][1])
        _, ece, ece_hi = reliability(pip, truth)
        print(f"| {m} | {ece:.4f} | {ece_hi:.3f} |")
    pip, truth = np.concatenate(pooled["default"][0]), np.concatenate(pooled["default"][1])
    rows, _, _ = reliability(pip, truth)
    print("\nReliability of the default (pooled):\n")
    print("| PIP bin | genes | mean PIP | fraction relevant |")
    print("| --- | --- | --- | --- |")
    for label, count, mp, fr in rows:
        print(f"| {label} | {count} | {mp:.3f} | {fr:.3f} |")
    print("\nCredible sets of the default (coverage 0.95, purity 0.5):\n")
    print("| setting | sets | holding a planted gene | mean size | mean purity | mean sum of PIPs |")
    print("| --- | --- | --- | --- | --- | --- |")
    frame = pd.DataFrame(set_rows, columns=["setting", "covered", "size", "purity", "set_pip"])
    for setting in [_setting(*s) for i, s in enumerate(SETTINGS) if which is None or i in which]:
        sub = frame[frame["setting"] == setting]
        if sub.empty:
            print(f"| {setting} | 0 | | | | |")
            continue
        print(f"| {setting} | {len(sub)} | {int(sub['covered'].sum())} ({sub['covered'].mean():.2f}) "
              f"| {sub['size'].mean():.1f} | {sub['purity'].mean():.2f} | "
              f"{sub['set_pip'].mean():.2f} |")


# ------------------------------------------------------------------------------------------------
# Agreement with bootstrap selection frequency
# ------------------------------------------------------------------------------------------------
def _fit_both(X, y, pre_kwargs):
    """Preprocess and fit both models; returns (kept input columns, SS pip, ARD table, ARD support)."""
    from ardselect import ARDClassifier, SpikeSlabClassifier
    from ardselect.preprocessing import Preprocessor

    with warnings.catch_warnings():
        _quiet()
        pre = Preprocessor(**pre_kwargs).fit(X)
        Xt = pre.transform(X)
        ss = SpikeSlabClassifier(constant_features="ignore").fit(Xt, y)
        ard = ARDClassifier(constant_features="ignore", random_state=0).fit(Xt, y)
    return np.flatnonzero(pre.keep_), ss.pip_[0], ard.ranked_features(), ard.get_support()


def _boot(X, y, pre_kwargs, idx):
    cols, pip, _, support = _fit_both(X[idx], y[idx], pre_kwargs)
    return cols[pip > 0.5], cols[support]


def bootstrap_agreement(names, n_boots, jobs, seed=0):
    from certainty import bootstrap_indices
    from joblib import Parallel, delayed
    from scipy.stats import spearmanr

    print(f"\n## Agreement with bootstrap selection frequency ({n_boots} stratified resamples)\n")
    print("| data set | one-fit score | Spearman with spike-slab frequency | Spearman with ARD-EP "
          "frequency | genes compared |")
    print("| --- | --- | --- | --- | --- |")
    for name in names:
        X, y, _ = load(name)
        p = X.shape[1]
        cols, pip, table, _ = _fit_both(X, y, DATASETS[name])
        scores = {"spike-slab PIP": np.zeros(p), "ARD-EP cv_frequency": np.zeros(p),
                  "ARD-EP log_bf_marginal": np.full(p, -np.inf)}
        scores["spike-slab PIP"][cols] = pip
        where = cols[table["feature"].str[1:].astype(int).to_numpy()]
        scores["ARD-EP cv_frequency"][where] = np.nan_to_num(table["cv_frequency"].to_numpy())
        scores["ARD-EP log_bf_marginal"][where] = np.nan_to_num(
            table["log_bf_marginal"].to_numpy(), nan=-np.inf)
        boots = Parallel(n_jobs=jobs)(delayed(_boot)(X, y, DATASETS[name], idx)
                                      for idx in bootstrap_indices(y, n_boots, seed))
        freq = {"ss": np.zeros(p), "ard": np.zeros(p)}
        for ss_sel, ard_sel in boots:
            freq["ss"][ss_sel] += 1.0 / n_boots
            freq["ard"][ard_sel] += 1.0 / n_boots
        genes = (freq["ss"] > 0) | (freq["ard"] > 0)
        for s in scores.values():
            genes[np.argsort(-s, kind="stable")[:50]] = True
        for label, s in scores.items():
            s = np.where(np.isfinite(s), s, np.min(s[np.isfinite(s)]) - 1.0)
            rho_ss = spearmanr(s[genes], freq["ss"][genes]).statistic
            rho_ard = spearmanr(s[genes], freq["ard"][genes]).statistic
            print(f"| {name} | {label} | {rho_ss:.2f} | {rho_ard:.2f} | {int(genes.sum())} |",
                  flush=True)
        print(f"| {name} | (genes ever selected: spike-slab {int((freq['ss'] > 0).sum())}, "
              f"ARD-EP {int((freq['ard'] > 0).sum())}; spike-slab PIP > 0.5 on all samples: "
              f"{int((pip > 0.5).sum())}) | | | |")


# ------------------------------------------------------------------------------------------------
# Accuracy and speed
# ------------------------------------------------------------------------------------------------
def accuracy_tables(names, n_splits, jobs, seed=0):
    from accuracy import run

    from ardselect import ARDClassifier, SpikeSlabClassifier
    from ardselect.model_selection import baselines, paired_difference, summarize

    methods = {"spike-slab": SpikeSlabClassifier(constant_features="ignore"),
               "ARD-EP": ARDClassifier(constant_features="ignore", random_state=seed),
               "L1-logistic": baselines(seed)["L1-logistic"]}
    print(f"\n## Accuracy ({n_splits} partitions, two thirds train)\n")
    print("| data set | method | error % | genes | log-loss | ECE (pooled) | confidence - accuracy "
          "| d error % vs L1 | d log-loss vs L1 | d error % vs ARD-EP | d log-loss vs ARD-EP "
          "| fit s |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name in names:
        with warnings.catch_warnings():
            _quiet()
            res, pred = run(name, methods, n_splits=n_splits, jobs=jobs, seed=seed)
        s = summarize(res, pred).set_index("method")
        d = {ref: paired_difference(res, ref).set_index("method") for ref in ("L1-logistic",
                                                                              "ARD-EP")}
        for m, r in s.iterrows():
            cells = []
            for ref in ("L1-logistic", "ARD-EP"):
                if m == ref:
                    cells += ["", ""]
                    continue
                dd = d[ref].loc[m]
                cells += [f"{100 * dd.d_error_rate:+.1f} +- {100 * dd.d_error_rate_se:.1f}",
                          f"{dd.d_log_loss:+.3f} +- {dd.d_log_loss_se:.3f}"]
            print(f"| {name} | {m} | {100 * r.error_rate_mean:.1f} +- {100 * r.error_rate_se:.1f} "
                  f"| {r.genes_mean:.1f} | {r.log_loss_mean:.3f} | {r.ece:.3f} | "
                  f"{r.confidence_gap:+.3f} | {' | '.join(cells)} | {r.fit_seconds_mean:.2f} |",
                  flush=True)


def evidence_surface(seed=0):
    from ardselect import SpikeSlabClassifier
    from ardselect.model_selection import partitions
    from ardselect.preprocessing import Preprocessor

    X, y, _ = load("golub_leukemia")
    tr, _ = partitions(y, n_splits=1, train_size=2 / 3, random_state=seed)[0]
    Xt = Preprocessor(**DATASETS["golub_leukemia"]).fit(X[tr]).transform(X[tr])
    slabs = (0.1, 0.3, 1.0, 3.0, 10.0)
    print(f"\n## EP log evidence on the first Golub partition ({len(tr)} x {Xt.shape[1]} genes)\n")
    print("Cells: log evidence (largest PIP, sum of PIPs); * = EP did not converge.\n")
    print("| expected genes | " + " | ".join(f"slab variance {v:g}" for v in slabs) + " |")
    print("| --- | " + " | ".join("---" for _ in slabs) + " |")
    for e in ML_GENES + (500,):
        cells = []
        for v in slabs:
            with warnings.catch_warnings():
                _quiet()
                fit = SpikeSlabClassifier(prior_genes=(e,), slab_variance=v,
                                          constant_features="ignore").fit(Xt, y[tr])
            mark = "" if fit.hyper_results_["converged"].all() else "*"
            cells.append(f"{fit.log_evidence_[0]:.2f}{mark} ({fit.pip_.max():.2f}, "
                         f"{fit.pip_.sum():.0f})")
        print(f"| {e} | " + " | ".join(cells) + " |", flush=True)


def speed(n_splits, seed=0, repeats=5):
    from ardselect import ARDClassifier, SpikeSlabClassifier
    from ardselect.model_selection import partitions
    from ardselect.preprocessing import Preprocessor

    X, y, _ = load("golub_leukemia")
    times = {"spike-slab": [], "ARD-EP": []}
    cpu = {"spike-slab": [], "ARD-EP": []}
    for tr, _ in partitions(y, n_splits=n_splits, train_size=2 / 3, random_state=seed):
        Xt = Preprocessor(**DATASETS["golub_leukemia"]).fit(X[tr]).transform(X[tr])
        for name, est in (("spike-slab", SpikeSlabClassifier(constant_features="ignore")),
                          ("ARD-EP", ARDClassifier(constant_features="ignore", random_state=seed))):
            with warnings.catch_warnings():
                _quiet()
                t0, c0 = time.perf_counter(), time.process_time()
                est.fit(Xt, y[tr])
                times[name].append(time.perf_counter() - t0)
                cpu[name].append(time.process_time() - c0)
    print(f"\n## Speed (Golub, training part of {n_splits} partitions: {len(tr)} x {Xt.shape[1]} "
          "genes after preprocessing; one BLAS thread)\n")
    print("| method | median fit s (wall) | largest (wall) | median CPU s | largest CPU s | "
          "partitions <= 1 s (wall) | partitions <= 1 s (CPU) |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, t in times.items():
        t, c = np.array(t), np.array(cpu[name])
        print(f"| {name} | {np.median(t):.2f} | {t.max():.2f} | {np.median(c):.2f} | {c.max():.2f} "
              f"| {int((t <= 1.0).sum())}/{t.size} | {int((c <= 1.0).sum())}/{c.size} |")
    print(f"(load average during the runs: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; "
          "CPU time is what one free core would take)")
    # All 72 samples of the bundled data, preprocessed as the command line's demo does.
    from ardselect import datasets

    ad = datasets.leukaemia()
    Xa = Preprocessor(floor=100, cap=16000, log="log10").fit_transform(ad.X)
    ya = (ad.obs["label"] == "AML").to_numpy().astype(int)
    cpu_all, sweeps = [], 0
    for _ in range(repeats):
        with warnings.catch_warnings():
            _quiet()
            c0 = time.process_time()
            fit = SpikeSlabClassifier(constant_features="ignore").fit(Xa, ya)
            cpu_all.append(time.process_time() - c0)
        sweeps = int(fit.hyper_results_["n_iter"].sum())
    print(f"\nAll 72 samples ({Xa.shape[1]} genes after preprocessing, {sweeps} EP sweeps over the "
          f"five hyperprior nodes): `SpikeSlabClassifier()` fit, CPU s over {repeats} repeats: "
          f"first {cpu_all[0]:.2f}, median {np.median(cpu_all):.2f}, largest {max(cpu_all):.2f}.")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sections", default="calibration,evidence,bootstrap,accuracy,speed")
    ap.add_argument("--replicates", type=int, default=50)
    ap.add_argument("--no-ml-ii", action="store_true",
                    help="calibration without the type-II maximum likelihood grid")
    ap.add_argument("--settings", default=None,
                    help="planted settings to run, as indices into SETTINGS (default: all)")
    ap.add_argument("--boots", type=int, default=50)
    ap.add_argument("--splits", type=int, default=50)
    ap.add_argument("--speed-splits", type=int, default=None,
                    help="Golub partitions timed by the speed section (default: --splits)")
    ap.add_argument("--datasets", default=None,
                    help="data sets of the accuracy section (default: all of accuracy.py's) or of "
                    "the bootstrap section (default: the two-class ones)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args(argv)
    sections = [s.strip() for s in args.sections.split(",")]
    unknown = set(sections) - {"calibration", "evidence", "bootstrap", "accuracy", "speed"}
    if unknown:
        ap.error(f"unknown sections {sorted(unknown)}")
    chosen = args.datasets.split(",") if args.datasets else None
    t0 = time.perf_counter()
    if "calibration" in sections:
        which = None if args.settings is None else {int(s) for s in args.settings.split(",")}
        calibration(args.replicates, args.jobs, which, ml_ii=not args.no_ml_ii)
    if "evidence" in sections:
        evidence_surface()
    if "bootstrap" in sections:
        bootstrap_agreement(chosen or BINARY, args.boots, args.jobs)
    if "accuracy" in sections:
        accuracy_tables(chosen or list(DATASETS), args.splits, args.jobs)
    if "speed" in sections:
        speed(args.speed_splits or args.splits)
    print(f"\nwall: {time.perf_counter() - t0:.0f} s on {args.jobs} worker(s)")


if __name__ == "__main__":
    main()
