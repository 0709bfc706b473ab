"""Where the independent pieces of a fit run: here, in joblib threads or processes, or on dask.

The path is thousands of small dense operations; multi-threaded BLAS only adds contention there
(measured 50x slower on a loaded 2-core machine), so path work runs on one BLAS thread
(:func:`one_blas_thread`), and parallelism comes from running whole binary problems and folds at
once (:func:`run_tasks`).

Processes, or one after the other here: between its BLAS calls a path step runs Python code
under the GIL, so two threads of path work take about as long as one (measured on 525 PBMC
cells: 36.9 s against 37.2 s; on a 36-sample leukaemia fit, threads took 0.71 s of wall time
against 0.65 s one after the other). Worker processes run them side by side, at the price of
starting the workers (a few seconds, once per session: joblib keeps them) and of copying each
task's arrays to them. Tasks go to processes when each is large enough to repay that
(:data:`PROCESS_MIN_WORK`), else they run here one after the other. Tasks on a design read
lazily from disk (passes over its chunks, which wait on reading and decompressing) run in
threads. The results are the same either way: every task is the same computation on one BLAS
thread.
"""

from __future__ import annotations

import functools
import logging
import warnings

from threadpoolctl import ThreadpoolController

__all__ = ["PROCESS_MIN_WORK", "one_blas_thread", "run_tasks"]

#: A task's size, ``n_samples * min(n_features, 100) ** 2`` (the cost of one EP sweep of a path
#: step at the default's 100 starting genes), from which tasks run in worker processes.
#: The leukaemia set (72 x 7,129: 720,000, a path in ~50 ms) stays in threads; PBMC's 525
#: training cells (5.25 million, a path in ~1 s) go to processes.
PROCESS_MIN_WORK = 2_000_000


@functools.cache
def _blas_controller():
    """One :class:`threadpoolctl.ThreadpoolController`, made on first use and kept.

    Making one scans the loaded libraries (about 4 ms, which a fit would otherwise pay once per
    fold and class).
    """
    return ThreadpoolController()


def one_blas_thread():
    """A context in which BLAS runs on one thread."""
    return _blas_controller().limit(limits=1, user_api="blas")


def _on_one_blas_thread(fn, *args):
    with one_blas_thread():
        return fn(*args)


def task_work(n_samples, n_features):
    """A task's size as :data:`PROCESS_MIN_WORK` measures it."""
    return int(n_samples) * min(int(n_features), 100) ** 2


def run_tasks(fn, args, *, n_jobs=None, client=None, work=0):
    """``[fn(*a) for a in args]``, each on one BLAS thread: on a dask Client, in workers or here.

    ``client`` is a running dask.distributed Client (tasks are submitted to it), else ``n_jobs``
    joblib workers (``None`` = 1, ``-1`` = all cores): processes when ``work`` (each task's
    size, :func:`task_work`) reaches :data:`PROCESS_MIN_WORK`; below it the tasks run here, one
    after the other (threads would hold the GIL in turn, for no gain); ``work=None`` (tasks on a
    lazily read design) gives threads, which share the design and overlap its reads.
    In processes, the tasks' log records (the path's progress) and warnings are passed on here as
    each task ends. Results come back in the order of ``args``.
    """
    n_jobs = 1 if n_jobs is None else n_jobs
    if client and len(args) > 1:
        futures = [client.submit(_on_one_blas_thread, fn, *a, pure=False) for a in args]
        return client.gather(futures)
    if n_jobs != 1 and len(args) > 1:
        from joblib import Parallel, delayed

        if work is None:
            return Parallel(n_jobs=n_jobs, prefer="threads")(
                delayed(_on_one_blas_thread)(fn, *a) for a in args)
        if work >= PROCESS_MIN_WORK:
            return _in_processes(fn, args, n_jobs)
    return [_on_one_blas_thread(fn, *a) for a in args]


# ------------------------------------------------------------------------------ worker processes
_LOGGERS = ("ardselect", "ardselect.path")


class _Records(logging.Handler):
    """Keeps a worker's log records, made picklable (message formatted, no arguments)."""

    def __init__(self):
        super().__init__(logging.NOTSET)
        self.records = []

    def emit(self, record):
        record.msg = record.getMessage()
        record.args = None
        record.exc_info = record.exc_text = None
        self.records.append(record)


def _in_worker(index, fn, args, levels):
    """Run one task in a worker process: ``(index, result, log records, warnings)``.

    The ``ardselect`` loggers take the parent's levels, so a worker makes the records the parent
    would (the progress records only when something there listens to them).
    """
    loggers = [logging.getLogger(name) for name in _LOGGERS]
    saved = [(lg.level, lg.propagate) for lg in loggers]
    keep = _Records()
    for lg, level in zip(loggers, levels, strict=True):
        lg.setLevel(level)
    loggers[0].addHandler(keep)
    loggers[0].propagate = False
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")  # the parent's filters decide what is shown
            out = _on_one_blas_thread(fn, *args)
    finally:
        loggers[0].removeHandler(keep)
        for lg, (level, propagate) in zip(loggers, saved, strict=True):
            lg.setLevel(level)
            lg.propagate = propagate
    found = [(w.category, str(w.message), w.filename, w.lineno) for w in caught]
    return index, out, keep.records, found


def _in_processes(fn, args, n_jobs):
    """:func:`run_tasks` in joblib's worker processes (loky), the workers' records replayed here."""
    from joblib import Parallel, delayed

    levels = [logging.getLogger(name).getEffectiveLevel() for name in _LOGGERS]
    out = [None] * len(args)
    done = Parallel(n_jobs=n_jobs, backend="loky", return_as="generator_unordered")(
        delayed(_in_worker)(i, fn, a, levels) for i, a in enumerate(args))
    for i, result, records, found in done:
        for record in records:
            logger = logging.getLogger(record.name)
            if logger.isEnabledFor(record.levelno):
                logger.handle(record)
        for category, message, filename, lineno in found:
            warnings.warn_explicit(message, category, filename, lineno)
        out[i] = result
    return out
