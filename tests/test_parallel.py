"""run_tasks: here, in threads or in worker processes; the same results, records and warnings."""

import logging
import os
import threading
import warnings

import numpy as np
import pytest

from ardselect import ARDClassifier
from ardselect.engine import _parallel
from ardselect.engine._parallel import PROCESS_MIN_WORK, run_tasks, task_work
from ardselect.exceptions import DataError


def _pid(_):
    return os.getpid()


def _warn_and_log(i):
    logging.getLogger("ardselect.path").debug("task %d", i, extra={"step": i})
    warnings.warn(f"task {i} warns", RuntimeWarning, stacklevel=1)
    return i * i


def _fail(i):
    if i == 1:
        msg = "task 1 failed"
        raise DataError(msg)
    return i


def _thread(_):
    return threading.get_ident()


def test_small_tasks_stay_in_this_process_large_ones_go_to_workers():
    here = os.getpid()
    assert set(run_tasks(_pid, [(0,), (1,)], n_jobs=2, work=PROCESS_MIN_WORK - 1)) == {here}
    # Small tasks run one after the other in the calling thread (threads would hold the GIL in
    # turn); tasks on a lazily read design (work=None) in threads of this process.
    me = threading.get_ident()
    assert run_tasks(_thread, [(0,), (1,)], n_jobs=2, work=PROCESS_MIN_WORK - 1) == [me, me]
    assert me not in run_tasks(_thread, [(i,) for i in range(4)], n_jobs=2, work=None)
    assert set(run_tasks(_pid, [(0,), (1,)], n_jobs=2, work=None)) == {here}
    pids = run_tasks(_pid, [(0,), (1,)], n_jobs=2, work=PROCESS_MIN_WORK)
    assert here not in pids
    assert run_tasks(_pid, [(0,), (1,)], n_jobs=1, work=PROCESS_MIN_WORK) == [here, here]


def test_task_work_is_samples_times_capped_genes_squared():
    assert task_work(72, 7129) == 72 * 100**2
    assert task_work(525, 765) == 525 * 100**2 >= PROCESS_MIN_WORK
    assert task_work(400, 30) == 400 * 30**2


def test_workers_records_and_warnings_reach_this_process_in_order_of_tasks():
    seen = []

    class Keep(logging.Handler):
        def emit(self, record):
            seen.append((record.getMessage(), record.step))

    log = logging.getLogger("ardselect.path")
    keep, old = Keep(), log.level
    log.addHandler(keep)
    log.setLevel(logging.DEBUG)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = run_tasks(_warn_and_log, [(i,) for i in range(4)], n_jobs=2,
                            work=PROCESS_MIN_WORK)
    finally:
        log.removeHandler(keep)
        log.setLevel(old)
    assert out == [0, 1, 4, 9]
    assert sorted(seen) == [(f"task {i}", i) for i in range(4)]
    assert sorted(str(w.message) for w in caught) == [f"task {i} warns" for i in range(4)]
    assert all(w.category is RuntimeWarning for w in caught)


def test_no_records_are_made_in_workers_when_nobody_listens():
    seen = []

    class Keep(logging.Handler):
        def emit(self, record):
            seen.append(record)

    logging.getLogger().addHandler(keep := Keep())
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            run_tasks(_warn_and_log, [(0,), (1,)], n_jobs=2, work=PROCESS_MIN_WORK)
    finally:
        logging.getLogger().removeHandler(keep)
    assert not [r for r in seen if r.name.startswith("ardselect")]


def test_a_workers_error_is_raised_here_with_its_type():
    with pytest.raises(DataError, match="task 1 failed"):
        run_tasks(_fail, [(0,), (1,), (2,)], n_jobs=2, work=PROCESS_MIN_WORK)


def test_processes_give_the_same_fit_and_progress_as_one_thread(monkeypatch):
    rng = np.random.default_rng(2)
    X = rng.normal(size=(90, 40))
    y = np.argmax(X[:, :3], axis=1)

    def fit(n_jobs):
        labels = []

        class Keep(logging.Handler):
            def emit(self, record):
                if getattr(record, "step", None) == 0:
                    labels.append(str(record.class_label))

        log = logging.getLogger("ardselect.path")
        keep, old = Keep(), log.level
        log.addHandler(keep)
        log.setLevel(logging.DEBUG)
        try:
            return ARDClassifier(n_jobs=n_jobs).fit(X, y), labels
        finally:
            log.removeHandler(keep)
            log.setLevel(old)

    a, paths_a = fit(1)
    monkeypatch.setattr(_parallel, "PROCESS_MIN_WORK", 0)  # every task to the workers
    b, paths_b = fit(2)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
    assert a.path_.equals(b.path_)
    assert a.cv_results_.equals(b.cv_results_)
    # The certainty's problems run as tasks too.
    np.testing.assert_array_equal(a.pip_, b.pip_)
    assert a.credible_sets_.equals(b.credible_sets_)
    assert np.isfinite(a.pip_).any()
    # One path per class and per (fold, class): 3 + 5 x 3, each reported once.
    assert len(paths_a) == len(paths_b) == 18
    assert sorted(paths_a) == sorted(paths_b)
