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

Each candidate's held-out latents are pooled over the folds: their posterior mean ``m`` and
variance ``v``, whose standardised value ``z = m / sqrt(1 + v)`` gives the probit predictive
probability ``Phi(z)``. Two calibration constants are fitted to them by maximum held-out likelihood:

* the *temperature* ``T`` in ``[T_MIN, 1]`` (``P = Phi(T z)``). It only ever softens a model,
  undoing the overconfidence that selection on the training data leaves in the posterior; it never
  sharpens one (on separable data the held-out likelihood would push ``T`` to infinity);
* the *variance scale* ``s`` in ``[S_MIN, 1]`` (``P = Phi(T m / sqrt(1 + s v))``; the estimator's
  ``variance_scale_min``, ``S_MIN`` by default): how much of the posterior variance of the latent
  the predictive counts. With far more genes than samples, most of ``v`` at a new sample is
  prior variance along directions the training samples never constrained, and the predictive is underconfident where the signal is strong (the Huntington
  set: mean confidence 6 points below accuracy). ``s`` can only sharpen, and only by discounting
  ``v``: at most by half, so a prediction stays between the Bayesian predictive and a point
  estimate. The held-out folds ask for more (``s`` sits at ``S_MIN`` in most problems), but a
  full-data model trained on more samples does not want the fold models' sharpening: with the
  bound at 0 the test log-loss grew on four of seven microarray sets (README, "Accuracy").

The candidate with the lowest held-out log-loss after the temperature alone is chosen for the
problem (with ``s`` in the choice too, the choice drifted to large models that are separable on the
folds, and kept twice the genes); it then predicts with its jointly fitted ``(T, s)``. With more
than two classes, the problems' calibrated answers are combined by the odds rule with one more
temperature, fitted the same way on the pooled held-out multi-class log-loss.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import log_ndtr

from ._ep import LatentPosterior
from ._probit import inv_mills, moderated_latent, ovr_log_proba

__all__ = [
    "S_MIN",
    "T_MIN",
    "choose_candidate",
    "fit_calibration",
    "fit_combine_temperature",
    "fit_temperature",
    "step_latent",
]

#: Smallest temperature: a model whose held-out answers carry no information is shrunk this far.
T_MIN = 1e-2

#: Smallest variance scale: the predictive counts at least half the latent's posterior variance.
S_MIN = 0.5


def _bounded_min(loss):
    """Minimiser of a scalar ``loss`` on ``[T_MIN, 1]``, the bounds themselves included."""
    res = minimize_scalar(loss, bounds=(T_MIN, 1.0), method="bounded", options={"xatol": 1e-6})
    cands = ((float(res.x), float(res.fun)), (1.0, loss(1.0)), (T_MIN, loss(T_MIN)))
    return min(cands, key=lambda p: p[1])


def _temperature(a):
    """The ``T`` in ``[T_MIN, 1]`` maximising ``f(T) = mean log Phi(T a)``, and ``-f`` there.

    ``f`` is concave (``log Phi`` is), with ``f'(T) = mean(a r(T a))`` and
    ``f''(T) = -mean(a^2 r (T a + r))``, ``r = phi / Phi`` the inverse Mills ratio. A bound is the
    answer when ``f'`` does not change sign inside; otherwise Newton's method, kept inside a
    shrinking bracket of the root of ``f'`` (bisection where a step would leave it), finds it.
    """

    def slope(temp):
        x = temp * a
        r = inv_mills(x)
        return float(np.mean(a * r)), -float(np.mean(a * a * r * (x + r)))

    def loss(temp):
        return -float(np.mean(log_ndtr(temp * a)))

    if slope(1.0)[0] >= 0.0:
        return 1.0, loss(1.0)
    if slope(T_MIN)[0] <= 0.0:
        return T_MIN, loss(T_MIN)
    lo, hi, temp = T_MIN, 1.0, 1.0
    for _ in range(100):
        g, h = slope(temp)
        if g > 0.0:
            lo = temp
        else:
            hi = temp
        step = temp - g / h if h < 0.0 else np.nan
        new = step if lo < step < hi else 0.5 * (lo + hi)
        if abs(new - temp) <= 1e-10 or hi - lo <= 1e-10:
            temp = new
            break
        temp = new
    return temp, loss(temp)


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
    a safeguarded Newton search on its derivative finds the optimum.

    Examples
    --------
    >>> import numpy as np
    >>> t = np.array([1.0, 1.0, -1.0, -1.0])
    >>> fit_temperature(np.array([3.0, 2.0, -3.0, -2.0]), t)[0]  # separable: never sharpened
    1.0
    >>> fit_temperature(np.array([2.0, -2.0, -2.0, 2.0]), t)[0]  # right half the time: flat
    0.01
    """
    return _temperature(np.asarray(t, dtype=np.float64) * np.asarray(z, dtype=np.float64))


def fit_combine_temperature(z, temperature, y_idx):
    """Temperature of the multi-class combination in ``[T_MIN, 1]``, and the mean log-loss there.

    ``z`` is ``(n, k)``: each problem's held-out standardised latents, ``temperature`` the
    problems' own ``(k,)`` temperatures, ``y_idx`` the ``(n,)`` true class indices. The class
    probabilities are those of :func:`ardselect._probit.ovr_log_proba` (the odds rule at 1).
    """
    zt = np.asarray(z) * np.asarray(temperature)
    rows = np.arange(len(y_idx))
    return _bounded_min(lambda temp: -float(np.mean(ovr_log_proba(zt, temp)[rows, y_idx])))


def fit_calibration(mean, var, t, s_min=S_MIN):
    """The temperature and variance scale of best held-out likelihood, and the log-loss there.

    Returns ``(T, s, log_loss)``: the ``T`` in ``[T_MIN, 1]`` and ``s`` in ``[s_min, 1]`` that
    maximise ``mean log Phi(T t m / sqrt(1 + s v))`` (``s_min = 1``: the temperature alone).

    Parameters
    ----------
    mean, var : ndarray of shape (n,)
        Held-out posterior mean and variance of the positive class's latent.
    t : ndarray of shape (n,)
        Signed labels, +1 for the positive class and -1 otherwise.

    For each ``s`` the objective is convex in ``T`` (:func:`fit_temperature`); ``s`` is found by a
    bounded scalar search on that profile, the bounds themselves included. Ties go to ``s = 1``
    (with ``v = 0`` everywhere ``s`` changes nothing and stays 1).

    Examples
    --------
    >>> import numpy as np
    >>> t = np.array([1.0, 1.0, -1.0, -1.0])
    >>> T, s, _ = fit_calibration(np.array([2.0, 1.0, -2.0, -1.0]), np.full(4, 8.0), t)
    >>> float(T), float(s)  # right every time but soft: the variance is discounted, at most by half
    (1.0, 0.5)
    """
    tm = np.asarray(t, dtype=np.float64) * np.asarray(mean, dtype=np.float64)
    var = np.maximum(np.asarray(var, dtype=np.float64), 0.0)

    def profile(s):
        return _temperature(tm / np.sqrt(1.0 + s * var))

    s_min = float(s_min)
    scales = [1.0]
    if s_min < 1.0:
        res = minimize_scalar(lambda s: profile(s)[1], bounds=(s_min, 1.0), method="bounded",
                              options={"xatol": 1e-2})
        scales += [float(res.x), s_min]
    best = None
    for s in scales:  # the first of equal losses wins
        temp, ll = profile(s)
        if best is None or ll < best[2] - 1e-12:
            best = (temp, s, ll)
    return best


def step_latent(problem, step, rows):
    """Posterior mean and variance of the latent at ``rows`` under a recorded path step.

    ``problem`` is the fold's :class:`ardselect._classifier._EPProbitProblem`; its design is
    signed, so the posterior of the weights is the one of the positive class. ``rows`` are the
    unsigned, unit-RMS design rows of the held-out samples (all columns). The posterior is rebuilt
    from the step's stored EP sites, without further EP sweeps. Returns a ``(2, n)`` array: the
    means, then the variances (never negative).
    """
    tau, nu = step.state
    post = LatentPosterior(problem.columns(step.active), step.alpha, tau, nu)
    A = rows[:, step.active]
    A = A.toarray() if hasattr(A, "toarray") else np.asarray(A)
    m, v = post.latent(A)
    return np.vstack([m, np.maximum(v, 0.0)])


def choose_candidate(oof, t, s_min=S_MIN):
    """Calibrate every candidate's pooled held-out latents; the lowest log-loss wins.

    ``oof`` maps candidate name -> ``(2, n)`` held-out latent means and variances, in the order
    ties are broken (the first wins). The choice compares the log-losses after the temperature
    alone (``cv_log_loss``); every candidate is then calibrated with ``(T, s)``
    (:func:`fit_calibration`, ``s`` at least ``s_min``), which it predicts with (``temperature``,
    ``variance_scale``, ``cv_log_loss_final``). Returns the winner's name, its ``(T, s)`` and one
    record per candidate.
    """
    rows = []
    best = None
    for name, (m, v) in oof.items():
        z = moderated_latent(m, v)
        raw = -float(np.mean(log_ndtr(t * z)))
        ll = fit_temperature(z, t)[1]
        temp, scale, final = fit_calibration(m, v, t, s_min)
        rows.append({"candidate": name, "cv_log_loss_raw": raw, "cv_log_loss": ll,
                     "temperature": temp, "variance_scale": scale, "cv_log_loss_final": final})
        if best is None or ll < best[1] - 1e-12:
            best = (name, ll, (temp, scale))
    return best[0], best[2], rows
