"""One binary problem's fit: its path on the full training set and the model chosen on it.

:func:`fit_problems` runs every problem's path (one-vs-rest tasks, or one shared path with
``multiclass="shared"``) and returns a :class:`BinaryFit` per problem; the estimator picks a step
on each (:meth:`BinaryFit.choose`) and rebuilds its posterior there (:meth:`BinaryFit.set_step`).
"""

from __future__ import annotations

import logging

import numpy as np

from ..engine._problem import PathRun, run_binary, run_joint, signed
from ..numerics._criteria import choose_step
from ._base import label, warn_path_stopped

__all__ = ["BinaryFit", "check_steps", "fit_binary", "fit_problems", "path_choice"]

logger = logging.getLogger("ardselect")


def fit_binary(spec, k, label, y_idx, Phi_s, allowed):
    """One binary problem (class ``k`` against the rest) on the full training set."""
    t = np.where(y_idx == k, 1.0, -1.0)
    run = run_binary(spec, signed(Phi_s, t), allowed, label)
    run.problem.release(Phi_s, t)
    return run


def path_choice(steps, criterion, n_genes):
    """The step a path criterion picks among ``steps`` (evidence and LOO records; ``n_genes`` per step)."""
    return choose_step(np.array([s.stats["log_evidence"] for s in steps]),
                       np.array([s.stats["loo_error"] for s in steps]),
                       np.array([s.stats["loo_prob_error"] for s in steps]), criterion,
                       n_genes=n_genes)


class BinaryFit:
    """Everything kept of one binary problem: the path and the model chosen on it."""

    def __init__(self, positive_class, run, scale, names, intercept_col, signs, covariates=(),
                 fixed=None):
        self.positive_class = positive_class
        self.steps = run.steps
        self.n_path = run.n_path  # the path proper's steps; its pruning tail follows them
        self.converged = run.converged
        self.problem = run.problem
        self.scale = scale  # (m,) column scales of the basis (design = t * basis / scale)
        self.names = names  # (m,) basis function names
        self.intercept_col = intercept_col  # column index of the intercept in the basis, or -1
        self.signs = signs  # (n,) +1 for the problem's class
        # Columns of the known covariates (held in every model, never genes) and the precisions
        # of the held columns ({column: alpha}, or None).
        self.covariate_cols = np.asarray(covariates, dtype=np.intp)
        self.fixed = fixed
        self.cv_step = None  # the step the inner cross-validation chose (criterion="cv")
        self.step_calibration = {}  # step -> Calibration fitted by the inner CV
        self.frequency = None  # (m,) share of the fold models of the chosen size holding a column
        self.joint_losses = None  # shared fit: {size: pooled multi-class held-out log-loss}

    def choose(self, criterion, max_genes=None):
        """The step ``criterion`` picks: the paper's criteria read the path proper.

        With ``max_genes`` only steps with at most that many genes compete (the pruning tail's
        too, which holds every smaller size).
        """
        if criterion == "cv":
            if self.cv_step is None:
                msg = "criterion 'cv' is chosen while fitting: fit with criterion='cv' to use it."
                raise ValueError(msg)
            return self.cv_step
        sizes = [self.n_genes(s.active) for s in self.steps]
        if max_genes is None:
            idx = list(range(self.n_path))
        else:
            idx = [i for i, size in enumerate(sizes) if size <= max_genes]
        return idx[path_choice([self.steps[i] for i in idx], criterion, [sizes[i] for i in idx])]

    def n_genes(self, active):
        """The number of genes among the columns ``active`` (not the intercept or covariates)."""
        held = np.isin(active, self.covariate_cols) | (active == self.intercept_col)
        return int(np.sum(~held))

    def set_step(self, k):
        """Rebuild the posterior at path step ``k`` with tightly converged EP."""
        s = self.steps[k]
        st = self.problem.fit_sites(s.active, s.alpha, s.state, tol=1e-9)
        self.chosen = k
        self.active = s.active
        self.alpha_scaled = s.alpha
        self.post = st.post
        self.var_scaled = st.post.var()
        self.mean = st.post.mean / self.scale[s.active]  # back to the units of the basis
        self.ep = st

    def cov(self):
        c = self.scale[self.active]
        return self.post.cov() / np.outer(c, c)



def fit_problems(spec, problems, classes, y_idx, Phi_s, allowed, scale, *, joint, tasks,
                 client, names, icol, estimator_name, max_steps):
    """Run every problem's path on the full training set: ``(fits, n_iter)``.

    ``tasks(fn, args)`` runs the one-vs-rest problems; ``client`` is a dask Client (or falsy).
    A path that stopped at ``max_steps`` is reported by a :class:`ConvergenceWarning`.
    """
    if joint:
        runs = run_joint(spec, Phi_s, y_idx, allowed)
    else:
        # hash=False: a content-hashed key would be shared with the inner-CV scatter of the
        # same matrix, and releasing one future would lose the other's data on the workers.
        design = Phi_s
        if client and len(problems) > 1:
            design = client.scatter(Phi_s, broadcast=True, hash=False)
        runs = tasks(fit_binary, [(spec, k, classes[k], y_idx, design, allowed)
                                  for k in problems])
    fits = []
    for k, run in zip(problems, runs, strict=True):
        if not run.converged and not (joint and k != problems[0]):
            what = "shared path" if joint else f"path for class {label(classes[k])}"
            warn_path_stopped(estimator_name, what, max_steps, stacklevel=3)
        if run.problem.n_ep_unconverged:
            logger.info("EP hit ep_max_iter at %d path steps", run.problem.n_ep_unconverged)
        fits.append(BinaryFit(classes[k], run, scale, names, icol,
                              np.where(y_idx == k, 1.0, -1.0), spec.covariates, spec.fixed))
    return fits, max(f.n_path - 1 for f in fits)


def as_runs(fits):
    """The full fit's path runs, as the inner cross-validation reads them."""
    return [PathRun(f.problem, f.steps, f.converged, f.n_path) for f in fits]


def check_steps(step, fits, *, joint):
    """``ARDClassifier.at_step``'s ``step`` checked against the fits: one int per problem.

    A ``joint`` (``multiclass="shared"``) fit takes one step for all classes.
    """
    steps = np.atleast_1d(np.asarray(step))
    if joint:
        if steps.size == 1 and steps.dtype.kind in "iu":
            steps = np.full(len(fits), steps[0])
        elif steps.ndim == 1 and np.unique(steps).size > 1:
            msg = (f"a multiclass='shared' fit holds the same genes in every class at each "
                   f"step: give one step for all classes, not {step!r}.")
            raise ValueError(msg)
    if steps.ndim != 1 or steps.size != len(fits) or steps.dtype.kind not in "iu":
        msg = (f"step must be an int or an array of {len(fits)} int(s), one per binary "
               f"problem (a row of coef_); got {step!r}.")
        raise ValueError(msg)
    for s, fit in zip(steps, fits, strict=True):
        if not 0 <= int(s) < len(fit.steps):
            msg = f"step must be in [0, {len(fit.steps) - 1}]; got {int(s)}."
            raise ValueError(msg)
    return [int(s) for s in steps]
