"""Single-cell scale: a sparse cells x genes matrix of log counts, k cell types, one-vs-rest markers.

Counts are Poisson(2) + 1 at 5% of the entries (the rest 0); every cell type has ``--markers`` marker
genes whose counts rise by Poisson(4) in its cells. The matrix is log1p-transformed and fitted as scipy
CSR with ``ARDClassifier(criterion="loo", inclusion_penalty=0.0, intercept_alpha="ard",
max_samples=..., n_jobs=...)`` by default (the paper's type-II maximum likelihood and ARD intercept,
one path per class); ``--criterion cv --inclusion-penalty 0 --intercept-alpha 0.01`` gives the
estimator's defaults, which add one fold path per class and fold. Beside it, L1-logistic regression (liblinear, one
C, and C by 3-fold CV over 5 values) fitted in the same process on the same matrix. Memory: the peak
resident memory of this process and its workers above what it held before the fit, sampled every
50 ms, against the bytes of the CSR matrix (data, indices, indptr).

``--compare-exact`` also fits the exact model (every cell) and reports, per class, the overlap of the
selected genes with the exact fit's, the markers each recovers and the held-out error of both on
cells not used for fitting.

``--dask-store DIR --dask-cells 10000,50000,200000``: for each size, writes the data as an on-disk zarr
AnnData, reads ``X`` lazily (``anndata.experimental.read_elem_lazy``, CSR chunks of 10,000 cells),
starts a ``distributed.LocalCluster`` of ``--jobs`` single-threaded workers, fits the dask array with
the classes as tasks on that Client, checks the result against the in-memory fit on the same sketch
rows, and prints the time to gather the sketch from the store and the time of the path. With
``--dask-rank`` it also times ``ardselect.rank_genes`` on the store read by ``ardselect.io.read_lazy``
(preprocessing and fold changes as passes over the chunks) against ``rank_genes`` in memory. With
``--dask-exact`` it fits instead every cell of the store exactly (``max_samples=None``: the path's
passes over the design are dask reductions over the chunks on the LocalCluster, nothing but the
gathered genes' columns is held in memory) and compares it with the exact in-memory fit of the same
matrix: wall time of both, passes over the store, path steps, and the largest difference along the
path.

Usage: python benchmarks/scale.py [--cells 50000] [--genes 20000] [--classes 10]
       [--max-samples 3000] [--jobs 2] [--compare-exact] [--baselines]
       [--dask-store DIR --dask-cells 10000,200000 [--dask-rank | --dask-exact]]
"""

from __future__ import annotations

import argparse
import os
import threading
import time
import warnings
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np
import scipy.sparse as sp


def make_data(n, p, k, n_markers, density, seed):
    """Sparse log counts (CSR, float64), labels (n,) and the marker genes of each class (k, n_markers)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, size=n)
    nnz_row = rng.binomial(p, density, size=n)
    indptr = np.concatenate([[0], np.cumsum(nnz_row)]).astype(np.int64)
    cols = np.empty(indptr[-1], dtype=np.int32)
    for lo in range(0, n, 5000):  # per row block: distinct column positions, sorted
        for i in range(lo, min(n, lo + 5000)):
            cols[indptr[i]:indptr[i + 1]] = np.sort(rng.choice(p, size=nnz_row[i], replace=False))
    data = rng.poisson(2.0, size=cols.size).astype(np.float64) + 1.0
    X = sp.csr_matrix((data, cols, indptr), shape=(n, p))
    markers = np.stack([rng.choice(p, size=n_markers, replace=False) for _ in range(k)])
    rows, mcols, vals = [], [], []
    for c in range(k):
        cells = np.flatnonzero(y == c)
        rows.append(np.repeat(cells, n_markers))
        mcols.append(np.tile(markers[c], cells.size))
        vals.append(rng.poisson(4.0, size=cells.size * n_markers).astype(np.float64))
    boost = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(mcols))),
                          shape=(n, p))
    X = (X + boost).tocsr()
    X.eliminate_zeros()
    X.data = np.log1p(X.data)
    return X, y, markers


class PeakMemory:
    """Peak resident memory (this process and its children) above the level at start, in bytes."""

    def __init__(self, interval=0.05):
        self.interval = interval

    @staticmethod
    def _read(path):
        try:
            return Path(path).read_text()
        except OSError:  # a process that has just ended
            return ""

    @classmethod
    def _rss_tree(cls):
        pids, stack = [], [os.getpid()]
        while stack:
            pid = stack.pop()
            pids.append(pid)
            stack += [int(k) for k in cls._read(f"/proc/{pid}/task/{pid}/children").split()]
        total = 0
        for pid in pids:
            for line in cls._read(f"/proc/{pid}/status").splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        return total

    def __enter__(self):
        self.start = self._rss_tree()
        self.peak = self.start
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, self._rss_tree())
            time.sleep(self.interval)

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._rss_tree())
        self.extra = self.peak - self.start


def nbytes(X):
    return X.data.nbytes + X.indices.nbytes + X.indptr.nbytes


def selected_per_class(clf):
    """Selected genes of each one-vs-rest problem (list of arrays)."""
    return [np.flatnonzero(np.isfinite(clf.alpha_[i])) for i in range(clf.alpha_.shape[0])]


def marker_recovery(clf, markers, *, chosen=False):
    """Per class: its markers among the genes with a positive weight in the evidence model.

    With ``chosen``, in the model the criterion chose instead.

    With two classes there is one binary model: the first class's markers count with a negative
    weight. Returns the counts and the number of such genes per class.
    """
    ev = clf if chosen else clf.at_step(clf.choose_step("evidence"))
    coef = ev.coef_ if ev.coef_.shape[0] > 1 else np.vstack([-ev.coef_[0], ev.coef_[0]])
    return ([int(np.isin(markers[c], np.flatnonzero(coef[c] > 0)).sum())
             for c in range(markers.shape[0])],
            [int((coef[c] > 0).sum()) for c in range(markers.shape[0])])


def _max_samples(value):
    """``--max-samples`` as ``ARDClassifier`` takes it: an int, ``"auto"`` or None (``all``)."""
    return {"auto": "auto", "all": None}.get(value) if value in ("auto", "all") else int(value)


def main(argv=None):
    from ardselect import ARDClassifier

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cells", type=int, default=50000)
    ap.add_argument("--genes", type=int, default=20000)
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("--markers", type=int, default=10)
    ap.add_argument("--density", type=float, default=0.05)
    ap.add_argument("--max-samples", type=_max_samples, default=3000,
                    help="an int, 'auto' (the estimator's default) or 'all' (every cell)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--compare-exact", action="store_true")
    ap.add_argument("--baselines", action="store_true")
    ap.add_argument("--baselines-only", action="store_true")
    ap.add_argument("--dask-store", default=None)
    ap.add_argument("--dask-cells", default="10000,200000")
    ap.add_argument("--dask-rank", action="store_true",
                    help="with --dask-store: also time rank_genes on the lazily read store "
                    "against rank_genes in memory")
    ap.add_argument("--dask-exact", action="store_true",
                    help="with --dask-store: fit every cell of the store exactly (max_samples=None, "
                    "per-step passes over the chunks) against the exact in-memory fit")
    ap.add_argument("--criterion", default="loo",
                    help="ARDClassifier criterion (default loo, as the README's rows were measured)")
    ap.add_argument("--inclusion-penalty", default="0",
                    help="'bic' or a number (default 0, as the README's rows were measured)")
    ap.add_argument("--intercept-alpha", default="ard",
                    help="'ard' or a number (default ard, as the README's rows were measured; the "
                    "estimator's default is 0.01)")
    args = ap.parse_args(argv)
    args.penalty = "bic" if args.inclusion_penalty == "bic" else float(args.inclusion_penalty)
    args.intercept = "ard" if args.intercept_alpha == "ard" else float(args.intercept_alpha)
    print(f"ARDClassifier(criterion={args.criterion!r}, inclusion_penalty={args.penalty!r}, "
          f"intercept_alpha={args.intercept!r})")
    warnings.simplefilter("ignore")
    if args.dask_store:
        for n in [int(v) for v in args.dask_cells.split(",")]:
            dask_run(args, n)
        return
    t0 = time.perf_counter()
    X, y, markers = make_data(args.cells, args.genes, args.classes, args.markers, args.density,
                              args.seed)
    print(f"{X.shape[0]} cells x {X.shape[1]} genes, {X.nnz / np.prod(X.shape):.1%} non-zero, "
          f"{args.classes} cell types with {args.markers} markers each; CSR {nbytes(X) / 1e6:.0f} MB "
          f"(generated in {time.perf_counter() - t0:.0f} s)")
    if args.baselines_only:
        baselines(args, X, y, markers)
        return
    clf = ARDClassifier(criterion=args.criterion, inclusion_penalty=args.penalty,
                        intercept_alpha=args.intercept, max_samples=args.max_samples,
                        n_jobs=args.jobs)
    with PeakMemory() as mem:
        t0 = time.perf_counter()
        clf.fit(X, y)
        wall = time.perf_counter() - t0
    sel = selected_per_class(clf)
    found, n_pos = marker_recovery(clf, markers)
    found_c, n_pos_c = marker_recovery(clf, markers, chosen=True)
    sizes = [len(s) for s in sel]
    used = X.shape[0] if clf.sketch_ is None else clf.sketch_.size
    held = np.setdiff1d(np.arange(X.shape[0]), clf.sketch_ if clf.sketch_ is not None else [])
    test = held[:: max(1, held.size // 20000)] if held.size else np.arange(0)
    err = float(np.mean(clf.predict(X[test]) != y[test])) if test.size else float("nan")
    print(f"ARD-EP, sketch of {used} cells, {args.jobs} jobs: {wall:.1f} s wall for {args.classes} "
          f"classes; peak memory +{mem.extra / 1e6:.0f} MB = {mem.extra / nbytes(X):.2f}x the CSR "
          f"matrix; markers recovered {sum(found)}/{markers.size} (evidence model, positive "
          f"weights; per class {found} of {n_pos} such genes); in the chosen ({args.criterion}) "
          f"model {sum(found_c)}/{markers.size} ({sum(n_pos_c)} genes with positive weights); "
          f"genes per class in the chosen model {sizes}; held-out error {err:.3%} on {test.size} cells outside the sketch")
    if args.compare_exact:
        ex = ARDClassifier(criterion=args.criterion, inclusion_penalty=args.penalty,
                        intercept_alpha=args.intercept, n_jobs=args.jobs)
        t0 = time.perf_counter()
        ex.fit(X, y)
        wall_ex = time.perf_counter() - t0
        sel_ex = selected_per_class(ex)
        found_ex, _ = marker_recovery(ex, markers)
        jac = [len(np.intersect1d(a, b)) / max(1, len(np.union1d(a, b)))
               for a, b in zip(sel, sel_ex, strict=True)]
        agree = float(np.mean(clf.predict(X[test]) == ex.predict(X[test]))) if test.size else np.nan
        print(f"exact (all {X.shape[0]} cells): {wall_ex:.1f} s wall; markers {sum(found_ex)}/"
              f"{markers.size}; genes per class {[len(s) for s in sel_ex]}; Jaccard of the selected "
              f"genes, sketch vs exact, per class {np.round(jac, 2).tolist()}; predictions agree on "
              f"{agree:.2%} of the held-out cells")
    if args.baselines:
        baselines(args, X, y, markers)


def baselines(args, X, y, markers):
    """L1-logistic with one C and with C by CV, on the whole matrix, beside the ARD fit."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GridSearchCV, StratifiedKFold
    from sklearn.multiclass import OneVsRestClassifier

    def l1(c=None):
        lr = LogisticRegression(l1_ratio=1.0, solver="liblinear", **({} if c is None else
                                                                      {"C": c}))
        return OneVsRestClassifier(lr) if args.classes > 2 else lr

    t0 = time.perf_counter()
    fitted = l1(0.1).fit(X, y)
    t_l1 = time.perf_counter() - t0
    coefs = ([e.coef_[0] for e in fitted.estimators_] if args.classes > 2
             else [-fitted.coef_[0], fitted.coef_[0]])
    nz = [np.flatnonzero(coefs[c]) for c in range(args.classes)]
    f_l1 = sum(int(np.isin(markers[c], nz[c]).sum()) for c in range(args.classes))
    print(f"L1-logistic, one C (liblinear, one-vs-rest): {t_l1:.1f} s; markers {f_l1}/"
          f"{markers.size}; genes per class {[len(z) for z in nz]}")
    t0 = time.perf_counter()
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    key = "estimator__C" if args.classes > 2 else "C"
    GridSearchCV(l1(), {key: np.logspace(-2, 1, 5)}, cv=cv, n_jobs=args.jobs).fit(X, y)
    print(f"L1-logistic, C by 3-fold CV over 5 values: {time.perf_counter() - t0:.1f} s")


def dask_run(args, n):
    """One size of the on-disk run: write the store, fit it lazily on a LocalCluster, compare."""
    import shutil

    import anndata as ad
    import pandas as pd
    import zarr
    from anndata.experimental import read_elem_lazy
    from distributed import Client, LocalCluster

    from ardselect import ARDClassifier
    from ardselect.engine._rows import sketch_size, stratified_sketch

    X, y, markers = make_data(n, args.genes, args.classes, args.markers, args.density, args.seed)
    path = Path(args.dask_store) / f"cells_{n}.zarr"
    if path.exists():
        shutil.rmtree(path)
    t0 = time.perf_counter()
    obs = pd.DataFrame({"cell_type": y.astype(str)}, index=[f"c{i}" for i in range(n)])
    ad.AnnData(X=X, obs=obs).write_zarr(path)
    t_write = time.perf_counter() - t0
    if args.dask_exact:
        exact_run(args, path, X, y, markers)
        shutil.rmtree(path)
        return
    with LocalCluster(n_workers=args.jobs, threads_per_worker=1, dashboard_address=None) as cluster, \
            Client(cluster):
        lazy = read_elem_lazy(zarr.open(path)["X"], chunks=(10000, -1))
        y_store = np.asarray(ad.io.read_elem(zarr.open(path)["obs"])["cell_type"]).astype(int)
        clf = ARDClassifier(criterion=args.criterion, inclusion_penalty=args.penalty,
                        intercept_alpha=args.intercept, max_samples=args.max_samples)
        t0 = time.perf_counter()
        codes = np.unique(y_store, return_inverse=True)[1]
        rows = stratified_sketch(codes, *sketch_size(codes, args.max_samples))
        gathered = lazy[rows].compute()
        t_gather = time.perf_counter() - t0
        t0 = time.perf_counter()
        clf.fit(lazy, y_store)
        t_fit = time.perf_counter() - t0
    ref = ARDClassifier(criterion=args.criterion, inclusion_penalty=args.penalty,
                        intercept_alpha=args.intercept).fit(X[rows], y[rows])
    same = bool(np.array_equal(ref.coef_, clf.coef_) and ref.path_.equals(clf.path_))
    found, _ = marker_recovery(clf, markers)
    print(f"dask, {n} cells x {args.genes} genes on disk ({nbytes(X) / 1e6:.0f} MB CSR, written in "
          f"{t_write:.0f} s): gathering the {rows.size}-cell sketch from the store {t_gather:.1f} s; "
          f"the whole fit (gather + {args.classes} classes as tasks on {args.jobs} workers) "
          f"{t_fit:.1f} s; equal to the in-memory fit on the sketch rows: {same} "
          f"(gathered rows equal: {bool((gathered != X[rows]).nnz == 0)}); markers {sum(found)}/"
          f"{markers.size}")
    if args.dask_rank:
        rank_run(args, path, X, y)
    shutil.rmtree(path)


def exact_run(args, path, X, y, markers):
    """The exact fit on every cell of the store (per-step passes) against the exact in-memory fit."""
    import anndata as ad
    import zarr
    from anndata.experimental import read_elem_lazy
    from distributed import Client, LocalCluster

    from ardselect import ARDClassifier

    params = {"criterion": args.criterion, "inclusion_penalty": args.penalty,
              "intercept_alpha": args.intercept}
    with LocalCluster(n_workers=args.jobs, threads_per_worker=1, dashboard_address=None) as cluster, \
            Client(cluster):
        lazy = read_elem_lazy(zarr.open(path)["X"], chunks=(10000, -1))
        y_store = np.asarray(ad.io.read_elem(zarr.open(path)["obs"])["cell_type"]).astype(int)
        t0 = time.perf_counter()
        got = ARDClassifier(**params).fit(lazy, y_store)
        t_lazy = time.perf_counter() - t0
    t0 = time.perf_counter()
    ref = ARDClassifier(**params, n_jobs=args.jobs).fit(X, y)
    t_mem = time.perf_counter() - t0
    a, b = ref.path_, got.path_
    same = (len(a) == len(b) and (a["action"].values == b["action"].values).all()
            and (a["feature"].values == b["feature"].values).all())
    num = a.select_dtypes("number").columns
    diff = (float(np.nanmax(np.abs(a[num].to_numpy(float) - b[num].to_numpy(float))))
            if same else float("nan"))
    found, _ = marker_recovery(got, markers)
    steps = len(b)
    print(f"dask exact, {X.shape[0]} cells x {X.shape[1]} genes ({nbytes(X) / 1e6:.0f} MB CSR): "
          f"store on {args.jobs} workers {t_lazy:.1f} s, {got._n_passes} passes over the store "
          f"for {steps} recorded steps ({got._n_passes / max(steps, 1):.1f} per step, "
          f"{t_lazy / max(got._n_passes, 1):.2f} s per pass); in memory {t_mem:.1f} s; "
          f"same path: {same}, largest difference along it {diff:.1e}; markers "
          f"{sum(found)}/{markers.size}", flush=True)


def rank_run(args, path, X, y):
    """``rank_genes`` on the lazily read store (passes over the chunks) against the in-memory run."""
    import anndata as ad
    import pandas as pd
    from distributed import Client, LocalCluster

    import ardselect

    params = {"estimator": ardselect.ARDClassifier(
        criterion=args.criterion, max_samples=args.max_samples, inclusion_penalty=args.penalty,
        intercept_alpha=args.intercept)}
    with LocalCluster(n_workers=args.jobs, threads_per_worker=1, dashboard_address=None) as cluster, \
            Client(cluster):
        lazy = ardselect.io.read_lazy(path)
        t0 = time.perf_counter()
        ardselect.rank_genes(lazy, "cell_type", **params)
        t_lazy = time.perf_counter() - t0
    mem = ad.AnnData(X=X, obs=pd.DataFrame({"cell_type": y.astype(str)},
                                           index=[f"c{i}" for i in range(y.size)]))
    t0 = time.perf_counter()
    ardselect.rank_genes(mem, "cell_type", **params)
    t_mem = time.perf_counter() - t0
    cols = ["class", "rank", "gene", "selected"]
    a, b = ardselect.get.ranked_genes_df(mem)[cols], ardselect.get.ranked_genes_df(lazy)[cols]
    print(f"rank_genes, {X.shape[0]} cells: lazy store on {args.jobs} workers {t_lazy:.1f} s "
          f"(two passes over the store, the sketch gathered, {args.classes} classes); in memory "
          f"{t_mem:.1f} s; ranked tables equal: {a.equals(b)}")


if __name__ == "__main__":
    main()
