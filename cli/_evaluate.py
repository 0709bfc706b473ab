"""Repeated random train/test partitions for ``ardselect evaluate``.

Each partition: preprocess on the training part only, fit one :class:`ardselect.ARDClassifier`
path, then for every criterion take the model that criterion picks on that same path
(``choose_step`` / ``at_step``) and count its errors on the test part. Partitions run in parallel
with joblib; results do not depend on the number of workers.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

_COLUMNS = (
    "split",
    "criterion",
    "n_train",
    "n_test",
    "errors",
    "error_rate",
    "genes",
    "chosen_step",
)


def _one_split(split, X, y, train, test, preprocess, max_steps, seed):
    import warnings

    import ardselect
    from ardselect.io import Preprocessor

    with warnings.catch_warnings():
        # A path stopping at max_steps still yields valid models; the CLI reports nothing per split.
        warnings.simplefilter("ignore")
        pre = Preprocessor(**preprocess).fit(X[train])
        Ztr, Zte = pre.transform(X[train]), pre.transform(X[test])
        params = {} if max_steps is None else {"max_steps": int(max_steps)}
        est = ardselect.ARDClassifier(criterion="loo", random_state=seed, **params)
        est.fit(Ztr, y[train])
    rows = []
    preds = []
    for criterion in ardselect.CRITERIA:
        step = est.choose_step(criterion)
        model = est.at_step(step)
        proba = model.predict_proba(Zte)
        predicted = model.classes_[np.argmax(proba, axis=1)]
        errors = int(np.sum(predicted != y[test]))
        preds.append(pd.DataFrame({
            "split": split,
            "criterion": criterion,
            "sample": np.asarray(test),
            "n_classes": len(model.classes_),
            "confidence": proba.max(axis=1),
            "correct": predicted == y[test],
        }))
        rows.append(
            {
                "split": split,
                "criterion": criterion,
                "n_train": len(train),
                "n_test": len(test),
                "errors": errors,
                "error_rate": errors / len(test),
                "genes": int(np.sum(model.get_support())),
                "chosen_step": ";".join(f"{k}={v}" for k, v in step.items())
                if isinstance(step, dict)
                else str(int(step)),
            }
        )
    return rows, pd.concat(preds, ignore_index=True)


def evaluate_splits(
    X,
    labels,
    *,
    positive=None,
    preprocess: dict,
    max_steps=None,
    n_splits: int = 20,
    train_size: float = 0.5,
    seed: int = 0,
    n_jobs: int = -1,
    quiet: bool = False,
    return_predictions: bool = False,
):
    """Per-partition, per-criterion test errors and gene counts (one row each).

    With ``return_predictions``, also the held-out predictions (``split``, ``criterion``, ``sample``,
    ``n_classes``, ``confidence`` = probability of the predicted class, ``correct``), for calibration.
    """
    import scipy.sparse as sp
    from joblib import Parallel, delayed
    from sklearn.model_selection import StratifiedShuffleSplit

    import ardselect

    from ._util import task_progress

    labels = pd.Series(labels)
    if labels.isna().any():
        msg = f"{int(labels.isna().sum())} sample(s) have no label; drop them first"
        raise ardselect.LabelError(msg)
    y = labels.astype(str).to_numpy()
    classes = np.unique(y)
    if classes.size < 2:
        msg = f"the labels have a single class ({classes[0]!r}); at least two are needed"
        raise ardselect.LabelError(msg)
    if positive is not None:
        if str(positive) not in set(classes):
            msg = f"positive class {positive!r} is not a label; labels: {', '.join(classes)}"
            raise ardselect.LabelError(msg)
        if classes.size > 2:
            y = np.where(y == str(positive), str(positive), "rest").astype(object)
    n = y.shape[0]
    size = float(train_size)
    size = int(size) if size >= 1 else size
    if isinstance(size, int) and not 0 < size < n:
        msg = f"--train-size {train_size:g} must be below the number of samples ({n})"
        raise ardselect.DataError(msg)
    X = sp.csr_matrix(X) if sp.issparse(X) else np.asarray(X)
    try:
        splitter = StratifiedShuffleSplit(n_splits=n_splits, train_size=size, random_state=seed)
        parts = list(splitter.split(np.zeros(n), y))
    except ValueError as exc:
        msg = f"cannot draw stratified partitions: {exc}"
        raise ardselect.LabelError(msg) from None
    jobs = (
        delayed(_one_split)(i + 1, X, y, tr, te, preprocess, max_steps, seed)
        for i, (tr, te) in enumerate(parts)
    )
    parallel = Parallel(n_jobs=n_jobs, return_as="generator_unordered")
    progress = task_progress(len(parts), "partitions", quiet=quiet)
    rows = []
    preds = []
    if progress is None:
        for chunk, pred in parallel(jobs):
            rows.extend(chunk)
            preds.append(pred)
    else:
        with progress:
            task = progress.add_task("partitions", total=len(parts))
            for chunk, pred in parallel(jobs):
                rows.extend(chunk)
                preds.append(pred)
                progress.advance(task)
    order = {c: k for k, c in enumerate(ardselect.CRITERIA)}
    df = pd.DataFrame(rows, columns=list(_COLUMNS))
    df["_c"] = df["criterion"].map(order)
    df = df.sort_values(["split", "_c"], kind="stable").drop(columns="_c").reset_index(drop=True)
    if not return_predictions:
        return df
    pred = pd.concat(preds, ignore_index=True)
    pred["_c"] = pred["criterion"].map(order)
    pred = pred.sort_values(["split", "_c", "sample"], kind="stable").drop(columns="_c")
    return df, pred.reset_index(drop=True)


def summarize(results: pd.DataFrame) -> pd.DataFrame:
    """Mean and standard error (sd / sqrt(n), ddof=1) per criterion, in CRITERIA order."""
    import ardselect

    rows = []
    for criterion in ardselect.CRITERIA:
        sub = results[results["criterion"] == criterion]
        k = len(sub)

        def se(v, k=k):
            return float(np.std(v, ddof=1) / np.sqrt(k)) if k > 1 else float("nan")

        rows.append(
            {
                "criterion": criterion,
                "n_splits": k,
                "errors_mean": float(sub["errors"].mean()),
                "errors_se": se(sub["errors"]),
                "error_rate_mean": float(sub["error_rate"].mean()),
                "error_rate_se": se(sub["error_rate"]),
                "genes_mean": float(sub["genes"].mean()),
                "genes_se": se(sub["genes"]),
            }
        )
    return pd.DataFrame(rows)
