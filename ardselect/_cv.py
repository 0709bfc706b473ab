"""Inner cross-validation for ``ARDClassifier(criterion="cv")``: which model, and how confident.

Every score computed on the training data after the genes were chosen (the EP evidence, the EP
leave-one-out error or density) is optimistic for the models that selection favoured, and more so
the harder the data: on small microarray sets it drifts towards models that predict worse than
tuned L1-logistic regression (README, "Accuracy"). The honest remedy is the one glmnet and
scikit-learn use: refit on part of the training data and score on the rest.

For each of ``n_folds`` stratified folds, every binary problem is fitted on the other folds exactly
as on the whole training set (the ARD path and the screened models of :mod:`ardselect._screen`), and
each *candidate* model predicts the held-out fold:

* ``"ard"``: the model the EP leave-one-out criterion picks on the ARD path (genes chosen jointly);
* ``"screen k"``: the ``k`` individually strongest genes under one shared prior precision.

Each candidate's held-out standardised latents ``z = m / sqrt(1 + v)`` are pooled over the folds.
A *temperature* ``T`` in ``[T_MIN, 1]`` is fitted to them (``P = Phi(T z)``, the held-out
log-likelihood maximised over ``T``). It only ever softens a model, undoing the overconfidence that
selection on the training data leaves in the posterior; it never sharpens one (on separable data the
held-out likelihood would push ``T`` to infinity). The candidate with the lowest calibrated held-out
log-loss is chosen for the problem and keeps its temperature. With more than two classes, the
problems' calibrated answers are combined by the odds rule with one more temperature, fitted the same
way on the pooled held-out multi-class log-loss.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import log_ndtr

from ._ep import LatentPosterior
from ._probit import ovr_log_proba

__all__ = [
    "T_MIN",
    "choose_candidate",
    "fit_combine_temperature",
    "fit_temperature",
    "step_latent_z",
]

#: Smallest temperature: a model whose held-out answers carry no information is shrunk this far.
T_MIN = 1e-2


def _bounded_min(loss):
    """Minimiser of a scalar ``loss`` on ``[T_MIN, 1]``, the bounds themselves included."""
    res = minimize_scalar(loss, bounds=(T_MIN, 1.0), method="bounded", options={"xatol": 1e-6})
    cands = ((float(res.x), float(res.fun)), (1.0, loss(1.0)), (T_MIN, loss(T_MIN)))
    return min(cands, key=lambda p: p[1])


def fit_temperature(z, t):
    """The ``T`` in ``[T_MIN, 1]`` maximising ``mean log Phi(T t z)``, and the mean log-loss there.

    Parameters
    ----------
    z : ndarray of shape (n,)
        Held-out standardised latents of the positive class.
    t : ndarray of shape (n,)
        Signed labels, +1 for the positive class and -1 otherwise.

    Returns
    -------
    temperature, log_loss : float

    The objective is convex in ``T`` (``log Phi`` is concave and ``T t z`` is linear in ``T``), so
    a bounded scalar search finds the optimum.

    Examples
    --------
    >>> import numpy as np
    >>> t = np.array([1.0, 1.0, -1.0, -1.0])
    >>> fit_temperature(np.array([3.0, 2.0, -3.0, -2.0]), t)[0]  # separable: never sharpened
    1.0
    >>> fit_temperature(np.array([2.0, -2.0, -2.0, 2.0]), t)[0]  # right half the time: flat
    0.01
    """
    tz = np.asarray(t, dtype=np.float64) * np.asarray(z, dtype=np.float64)
    return _bounded_min(lambda temp: -float(np.mean(log_ndtr(temp * tz))))


def fit_combine_temperature(z, temperature, y_idx):
    """Temperature of the multi-class combination in ``[T_MIN, 1]``, and the mean log-loss there.

    ``z`` is ``(n, k)``: each problem's held-out standardised latents, ``temperature`` the
    problems' own ``(k,)`` temperatures, ``y_idx`` the ``(n,)`` true class indices. The class
    probabilities are those of :func:`ardselect._probit.ovr_log_proba` (the odds rule at 1).
    """
    zt = np.asarray(z) * np.asarray(temperature)
    rows = np.arange(len(y_idx))
    return _bounded_min(lambda temp: -float(np.mean(ovr_log_proba(zt, temp)[rows, y_idx])))


def step_latent_z(problem, step, rows):
    """Standardised latents ``m / sqrt(1 + v)`` at ``rows`` under a recorded path step.

    ``problem`` is the fold's :class:`ardselect._classifier._EPProbitProblem`; its design is
    signed, so the posterior of the weights is the one of the positive class. ``rows`` are the
    unsigned, unit-RMS design rows of the held-out samples (all columns). The posterior is rebuilt
    from the step's stored EP sites, without further EP sweeps.
    """
    tau, nu = step.state
    post = LatentPosterior(problem.columns(step.active), step.alpha, tau, nu)
    A = rows[:, step.active]
    A = A.toarray() if hasattr(A, "toarray") else np.asarray(A)
    m, v = post.latent(A)
    return m / np.sqrt(1.0 + np.maximum(v, 0.0))


def choose_candidate(oof, t):
    """Calibrate every candidate's pooled held-out latents; the lowest log-loss wins.

    ``oof`` maps candidate name -> ``(n,)`` held-out latents, in the order ties are broken (the
    first wins). Returns the winner's name, its temperature and one record per candidate.
    """
    rows = []
    best = None
    for name, z in oof.items():
        raw = -float(np.mean(log_ndtr(t * z)))
        temp, ll = fit_temperature(z, t)
        rows.append({"candidate": name, "cv_log_loss_raw": raw, "cv_log_loss": ll,
                     "temperature": temp})
        if best is None or ll < best[1] - 1e-12:
            best = (name, ll, temp)
    return best[0], best[2], rows
