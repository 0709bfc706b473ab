"""Reproduce Table 1 of Bishop & Tipping (2000): the variational RVM on noisy sinc, against an SVR.

Set-up, as in the paper (section 6.1, Figure 3 and Table 1): N = 50 points with x uniform on (-10,
10), t = sin(x)/x + Gaussian noise of standard deviation 0.1; 25 random data sets; Gaussian kernels
exp(-(x - x')^2 / r^2) with the width r chosen by 5-fold cross-validation on the training data; for
the SVR the width, C and epsilon are chosen by 5-fold cross-validation too. The error is the RMS
deviation of the predictive mean from the true function on 1000 evenly spaced points of (-10, 10).

Usage: python benchmarks/variational_sinc.py [--reps 25] [--n-train 50] [--noise 0.1] [--width R]
(``--width`` fixes r and skips the cross-validation of the VRVM's width).
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.svm import SVR

from ardselect import VariationalRVMRegressor

WIDTHS = (1.0, 1.5, 2.0, 3.0, 4.0, 5.0)
PAPER = {  # Table 1: RMS error, number of kernels, noise estimate
    "SVM": (0.0519, 28.0, None),
    "RVM": (0.0494, 6.9, 0.0943),
    "VRVM": (0.0494, 7.4, 0.0950),
}


def sinc_data(rng, n, noise):
    x = rng.uniform(-10, 10, size=(n, 1))
    return x, np.sinc(x[:, 0] / np.pi) + noise * rng.standard_normal(n)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=25, help="number of random data sets (25)")
    parser.add_argument("--n-train", type=int, default=50, help="training points per set (50)")
    parser.add_argument("--noise", type=float, default=0.1, help="noise standard deviation (0.1)")
    parser.add_argument("--width", type=float, default=None, help="fix the VRVM kernel width r")
    parser.add_argument("--seed", type=int, default=0, help="seed of the data sets (0)")
    args = parser.parse_args(argv)

    wall = time.perf_counter()
    rng = np.random.default_rng(args.seed)
    x_grid = np.linspace(-10, 10, 1000)[:, None]
    f_grid = np.sinc(x_grid[:, 0] / np.pi)
    gammas = [1.0 / r**2 for r in WIDTHS]
    rows = {"VRVM": [], "SVM": []}
    chosen = {"VRVM": [], "SVM": []}
    n_iter, n_warn = [], 0
    for rep in range(args.reps):
        X, t = sinc_data(rng, args.n_train, args.noise)
        cv = KFold(5, shuffle=True, random_state=rep)

        start = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            if args.width is None:
                search = GridSearchCV(
                    VariationalRVMRegressor(),
                    {"gamma": gammas},
                    cv=cv,
                    scoring="neg_mean_squared_error",
                ).fit(X, t)
                model = search.best_estimator_
            else:
                model = VariationalRVMRegressor(gamma=1.0 / args.width**2).fit(X, t)
        n_warn += sum(issubclass(w.category, ConvergenceWarning) for w in caught)
        elapsed = time.perf_counter() - start
        rms = np.sqrt(np.mean((model.predict(x_grid) - f_grid) ** 2))
        rows["VRVM"].append(
            (rms, len(model.relevance_vectors_), model.noise_variance_**0.5, elapsed)
        )
        chosen["VRVM"].append(model.gamma**-0.5)
        n_iter.append(model.n_iter_)

        start = time.perf_counter()
        svr = GridSearchCV(
            SVR(kernel="rbf"),
            {"gamma": gammas, "C": [0.1, 1.0, 10.0, 100.0], "epsilon": [0.0, 0.05, 0.1, 0.2]},
            cv=cv,
            scoring="neg_mean_squared_error",
        ).fit(X, t)
        elapsed = time.perf_counter() - start
        best = svr.best_estimator_
        rms = np.sqrt(np.mean((best.predict(x_grid) - f_grid) ** 2))
        rows["SVM"].append((rms, len(best.support_), np.nan, elapsed))
        chosen["SVM"].append(best.gamma**-0.5)

    print(
        f"Noisy sinc: {args.reps} data sets of N={args.n_train}, noise sd {args.noise}, "
        f"RMS error against sin(x)/x on 1000 points of (-10, 10)"
    )
    print(
        "Kernel width r (k = exp(-d^2/r^2)) "
        + (f"fixed at {args.width}" if args.width is not None else f"by 5-fold CV over {WIDTHS}")
        + "; SVR: r, C, epsilon by 5-fold CV."
    )
    print()
    header = (
        f"{'model':<6} {'RMS error':>10} {'(sd)':>8} {'# kernels':>10} {'noise est.':>11} "
        f"{'fit+CV s':>9} | {'paper error':>11} {'# kernels':>9} {'noise':>7}"
    )
    print(header)
    print("-" * len(header))
    for name in ("SVM", "VRVM"):
        arr = np.array(rows[name], dtype=float)
        perr, pk, pn = PAPER[name]
        noise = f"{np.nanmean(arr[:, 2]):.4f}" if name == "VRVM" else "-"
        print(
            f"{name:<6} {arr[:, 0].mean():>10.4f} {arr[:, 0].std():>8.4f} "
            f"{arr[:, 1].mean():>10.1f} "
            f"{noise:>11} {arr[:, 3].mean():>9.2f} | {perr:>11.4f} {pk:>9.1f} "
            f"{pn if pn is not None else '-':>7}"
        )
    perr, pk, pn = PAPER["RVM"]
    print(f"{'RVM':<6} {'(type-II ML; not run here)':>52} | {perr:>11.4f} {pk:>9.1f} {pn:>7}")
    print()
    print(
        "chosen width r, VRVM: "
        + ", ".join(f"{r:g}" for r in sorted(set(chosen["VRVM"])))
        + f" (median {np.median(chosen['VRVM']):g}); SVR median {np.median(chosen['SVM']):g}"
    )
    print(
        f"VRVM iterations of the final fits: median {int(np.median(n_iter))}, "
        f"max {max(n_iter)}; ConvergenceWarnings (CV fits included): {n_warn}"
    )
    print(
        "# kernels: VRVM relevance vectors (<alpha> <= prune_threshold = 100), SVR support "
        "vectors; the bias is not counted. Noise estimate: <tau>^-1/2."
    )

    print(f"Total wall time: {time.perf_counter() - wall:.0f} s.")


if __name__ == "__main__":
    main()
