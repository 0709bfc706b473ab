"""Regenerate ``path_reference.json``: the EP-ARD paths the speed work must reproduce exactly.

Run with the code whose paths are the reference on ``sys.path`` (provenance is written into the file):

    PYTHONPATH=/path/to/reference/checkout python tests/reference/make_path_reference.py

Every path-relevant parameter is pinned (``PARAMS``) so that later changes of the defaults do not
invalidate the reference. Cases: the 100 seeds of ``tests/test_seeds.py`` at ``alpha_min`` 1e-2 and 1.0,
and the first leukaemia partition (36 x 6194) when the data are present.
"""

import json
import pathlib
import subprocess
import sys

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
PARAMS = dict(criterion="loo", init="auto", max_init=100, max_steps=2000, tol=1e-5, patience=20,
              loo_prob_scale=50.0, damping=1.0, ep_tol=1e-5, ep_max_iter=200,
              inclusion_penalty=0.0, intercept_alpha="ard")


def seed_data(seed):
    rng = np.random.default_rng(seed)
    n, d = 24, 40
    X = rng.normal(size=(n, d)) * rng.uniform(0.1, 10, size=d)
    w = np.zeros(d)
    w[:3] = rng.normal(size=3)
    y = (X @ w + 0.5 * rng.normal(size=n) > 0).astype(int)
    if np.unique(y).size < 2:
        y[0] = 1 - y[0]
    return X, y


def leukaemia_data():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import leukaemia
        X, y = leukaemia.load()
    except Exception:  # data absent
        return None
    train = leukaemia.partitions(1)[0]
    test = np.setdiff1d(np.arange(len(y)), train)
    Xtr, Xte = leukaemia.preprocess(X[train], X[test])
    return Xtr, y[train], Xte


def record(clf):
    p = clf.path_
    return dict(action=[str(a) for a in p["action"]], feature=[str(f) for f in p["feature"]],
                log_evidence=[float(v) for v in p["log_evidence"]],
                # one binary problem: the steps are arrays of one entry
                chosen_loo=int(clf.choose_step("loo")[0]),
                chosen_evidence=int(clf.choose_step("evidence")[0]))


def fit(X, y, alpha_min):
    import warnings

    from ardselect import ARDClassifier
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ARDClassifier(alpha_min=alpha_min, **PARAMS).fit(X, y)


def main():
    import ardselect
    src = pathlib.Path(ardselect.__file__).resolve().parent
    try:
        rev = subprocess.run(["git", "-C", str(src), "rev-parse", "HEAD"], capture_output=True,
                             text=True).stdout.strip()
    except OSError:
        rev = ""
    out = {"provenance": f"ardselect from {src} (git {rev or 'unknown: exported tree'}), params {PARAMS}",
           "seeds": {}, "leukaemia": {}}
    for am in (1e-2, 1.0):
        out["seeds"][repr(am)] = [record(fit(*seed_data(s), am)) for s in range(100)]
        leuk = leukaemia_data()
        if leuk is not None:
            out["leukaemia"][repr(am)] = record(fit(leuk[0], leuk[1], am))
    (HERE / "path_reference.json").write_text(json.dumps(out))


if __name__ == "__main__":
    main()
