"""The EP probit problem as the path engine sees it, and the runs of its ARD path.

:class:`EPProbitProblem` adapts EP for the probit model to the sequential engine
(:class:`ardselect.engine._sequential.SequentialPath`): EP's sites are the engine's virtual regression.
:class:`PathSpec` holds every setting a run of the path needs, so that the full fit and the folds
of the inner cross-validation (:mod:`ardselect.estimators._cv`) run the same path from the same settings:
:func:`run_binary` for one class against the rest, :func:`run_joint` for the classes of a
``multiclass="shared"`` fit (shared precisions, :mod:`ardselect.engine._joint`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..numerics._ep import loo_error, loo_log_loss, loo_prob_error, run_ep
from ..numerics._probit import tilted_moments
from ._design import as_design
from ._joint import JointPath
from ._sequential import SequentialPath, _PathProblem, score_candidates

__all__ = ["LARGE_SAMPLES", "SIZE_GRID", "EPProbitProblem", "PathSpec", "ep_tol_for",
           "run_binary", "run_joint", "signed", "size_steps"]

#: The model sizes (genes per binary problem) the frontier compares along the path: every size up
#: to 10, then about a fifth more at each step. Size 0 is the intercept-only model.
SIZE_GRID = (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 15, 18, 22, 27, 33, 40, 50, 60, 75, 90, 110,
             135, 165, 200, 250, 300, 400, 500)


#: Training sets of at least this many samples are *large* for ``ep_tol="auto"``.
LARGE_SAMPLES = 500

#: ``ep_tol="auto"``: EP's tolerance along the path below and from :data:`LARGE_SAMPLES` samples.
#: With many samples, the sites move little when one precision changes, and a tighter tolerance
#: buys sweeps, not a different path (the chosen model is refined to 1e-9 either way).
EP_TOL_AUTO = (1e-5, 1e-3)


def ep_tol_for(ep_tol, n_samples):
    """``ep_tol`` with ``"auto"`` resolved for a training set of ``n_samples``."""
    if ep_tol != "auto":
        return float(ep_tol)
    return EP_TOL_AUTO[int(n_samples >= LARGE_SAMPLES)]


class EPProbitProblem(_PathProblem):
    """The EP probit model as the sequential engine sees it (see ``_sequential.SequentialPath``)."""

    def __init__(self, design, allowed, *, loo_prob_scale, damping, ep_tol, ep_max_iter):
        self._design = design  # (n, m) signed, column-scaled
        self._basis = self._signs = None
        self.allowed = allowed
        self.loo_prob_scale = loo_prob_scale
        self.damping = damping
        self.ep_tol = ep_tol
        self.ep_max_iter = ep_max_iter
        n = design.shape[0]
        # Initial sites: one EP update of each sample under a unit latent prior N(0, 1), i.e. the
        # sites a sample would get if its signed latent had unit prior variance and no other data.
        _, mhat, tau0, vhat = tilted_moments(np.zeros(1), np.ones(1))
        nu0 = mhat / vhat  # cavity mean 0
        self.tau0 = np.full(n, float(tau0[0]))
        self.nu0 = np.full(n, float(nu0[0]))
        self.n_ep_unconverged = 0

    def release(self, basis, signs):
        """Drop the signed copy of the design once the path is done; keep the shared ``basis``.

        ``design`` is then ``diag(signs) @ basis``, rebuilt when asked for and not kept, and
        ``columns`` signs only the columns it takes (bitwise the same: the signs are +-1). A fit
        of many classes on a large matrix then holds one design, not one per class.
        """
        self._basis, self._signs, self._design = basis, signs, None

    @property
    def basis(self):
        """The unsigned design ``(n, m)`` once released, else None."""
        return self._basis

    @property
    def design(self):
        """The signed, column-scaled design ``(n, m)``."""
        return self._design if self._design is not None else signed(self._basis, self._signs)

    def columns(self, active):
        """The dense columns ``active`` of the design, from the basis once it is released."""
        if self._design is None:
            P = as_design(self._basis).columns(active)
            return np.ascontiguousarray(self._signs[:, None] * P)
        return super().columns(active)

    def initial_virtual(self):
        return self.tau0.copy(), self.nu0 / self.tau0

    def scores(self, post, b, t, sq_cache=None):
        """``S_j, Q_j`` of every column of the signed design (``score_candidates``).

        A released design is scored from the shared basis and the signs, with no signed copy.
        """
        if self._design is not None:
            return score_candidates(self._design, post, b, t, sq_cache=sq_cache)
        return score_candidates(self._basis, post, b, t, sq_cache=sq_cache, signs=self._signs)

    def fit_sites(self, active, alpha, state, tol=None):
        tau, nu = state if state is not None else (self.tau0, self.nu0)
        return run_ep(self.columns(active), alpha, tau, nu, damping=self.damping,
                      tol=self.ep_tol if tol is None else tol, max_iter=self.ep_max_iter)

    def refresh(self, active, alpha, state):
        st = self.fit_sites(active, alpha, state)
        if not st.converged:
            self.n_ep_unconverged += 1
        stats = {
            "log_evidence": st.log_evidence,
            "loo_error": loo_error(st.cavity_mean),
            "loo_prob_error": loo_prob_error(st.cavity_mean, st.cavity_var, self.loo_prob_scale),
            "loo_log_loss": loo_log_loss(st.cavity_mean, st.cavity_var),
            "ep_sweeps": st.n_iter,
        }
        tau = st.tau
        t = np.where(tau > 0, st.nu / np.where(tau > 0, tau, 1.0), 0.0)
        return tau, t, st.post, stats, (tau.copy(), st.nu.copy())


def signed(Phi, t):
    """The design with row i multiplied by ``t[i]`` (CSC if sparse)."""
    return as_design(Phi).signed(t)


def sign_in_place(Phi, t):
    """:func:`signed` without a copy, for a design this caller owns (CSC or dense)."""
    return as_design(Phi).sign_in_place(t)


@dataclass(frozen=True)
class PathSpec:
    """Everything a run of the ARD path needs, beside the design: one per fit.

    ``icol`` is the intercept's column (-1 without one) and ``fixed`` the columns held at a fixed
    precision in every model (``{icol: intercept_alpha}`` and the covariates', or None);
    ``covariates`` the columns of the known covariates (held in ``fixed``, never counted as genes);
    ``penalty`` the prior log odds against a gene (nats, the intercept and covariates free). ``sizes`` are the model sizes of the frontier (the
    path is then continued by its pruning tail down to each of them, :meth:`SequentialPath.prune`),
    or None for the path alone.
    """

    init: object
    max_init: object
    max_steps: int
    tol: float
    alpha_min: float
    patience: int
    penalty: float
    icol: int
    fixed: dict | None
    loo_prob_scale: float
    damping: float
    ep_tol: float
    ep_max_iter: int
    sizes: tuple | None
    covariates: tuple = ()

    @property
    def nongene(self):
        """The columns not counted as genes, as :func:`size_steps` takes them.

        The intercept's (an int, -1 without one) alone, or with covariates an array of the
        intercept's and theirs.
        """
        if not self.covariates:
            return self.icol
        held = [self.icol] if self.icol >= 0 else []
        return np.array([*held, *self.covariates], dtype=np.intp)

    def problem(self, design, allowed):
        return EPProbitProblem(design, allowed, loo_prob_scale=self.loo_prob_scale,
                               damping=self.damping, ep_tol=self.ep_tol,
                               ep_max_iter=self.ep_max_iter)

    def penalties(self, n_columns):
        """One penalty per design column, 0 for the intercept and covariates (the prior is on genes)."""
        per = np.full(n_columns, float(self.penalty))
        if self.icol >= 0:
            per[self.icol] = 0.0
        per[list(self.covariates)] = 0.0
        return per

    def n_init(self, n_samples):
        """``max_init`` with ``"auto"`` resolved: at most one starting gene per sample, and 100."""
        return min(int(n_samples), 100) if self.max_init == "auto" else self.max_init


@dataclass
class PathRun:
    """One problem's run of the path.

    Its adapter, its steps (the path proper, then its pruning tail), whether the path proper
    converged, and ``n_path``, the number of the path proper's steps.
    """

    problem: object
    steps: list
    converged: bool
    n_path: int


def run_binary(spec, design, allowed, label=None):
    """The ARD path of one signed design (and its pruning tail when ``spec.sizes`` is set)."""
    prob = spec.problem(design, allowed)
    n, m = design.shape
    path = SequentialPath(prob, init=spec.init, max_steps=spec.max_steps, tol=spec.tol,
                          max_init=spec.n_init(n), alpha_min=spec.alpha_min,
                          patience=spec.patience, progress_label=None if label is None
                          else str(label), penalty=spec.penalties(m), fixed=spec.fixed).run()
    n_path = len(path.steps)
    if spec.sizes is not None:
        path.prune(spec.sizes)
    return PathRun(prob, list(path.steps), path.converged, n_path)


def run_joint(spec, Phi, y_idx, allowed):
    """The shared-precision path of every class (``multiclass="shared"``): one run per class.

    ``Phi`` is the unsigned, unit-RMS design; every class's adapter signs it when used. The runs
    share their genes and precisions at every step (and the pruning tail, with ``spec.sizes``).
    """
    n, m = Phi.shape
    probs = []
    for k in range(int(y_idx.max()) + 1):
        prob = spec.problem(Phi, allowed)
        prob.release(Phi, np.where(y_idx == k, 1.0, -1.0))  # one design for all classes
        probs.append(prob)
    path = JointPath(probs, allowed, alpha_min=spec.alpha_min, penalty=spec.penalties(m),
                     fixed=spec.fixed, max_init=spec.n_init(n), max_steps=spec.max_steps,
                     tol=spec.tol, patience=spec.patience, progress_label="all").run()
    n_path = len(path.steps[0])
    if spec.sizes is not None:
        path.prune(spec.sizes)
    return [PathRun(prob, list(steps), path.converged, n_path)
            for prob, steps in zip(probs, path.steps, strict=True)]


def size_steps(steps, icol, sizes=SIZE_GRID):
    """``{size: step index}``: for each size of ``sizes`` on the path, its step of most evidence.

    A size is the number of genes in the model: the intercept, column ``icol`` (or the columns of
    an array ``icol``: the intercept's and the covariates', :attr:`PathSpec.nongene`), not
    counted. Ties go to the earlier step.
    """
    best, wanted = {}, set(sizes)
    for i, st in enumerate(steps):
        k = int(np.sum(~np.isin(st.active, icol)))
        if k in wanted and (k not in best or st.stats["log_evidence"]
                            > steps[best[k]].stats["log_evidence"]):
            best[k] = i
    return dict(sorted(best.items()))
