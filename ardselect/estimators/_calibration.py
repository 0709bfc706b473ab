"""Calibration of held-out latents: how a model's latent becomes a probability.

The inner cross-validation (:mod:`ardselect.estimators._cv`) pools each model size's held-out
latent means ``m`` and variances ``v`` and fits ``P = Phi(a + T m / sqrt(1 + s v))`` to them by
maximum held-out likelihood: the temperature ``T`` in ``[T_MIN, 1]`` (it only softens), the offset
``a`` (a softened model moves toward the class frequencies) and the variance scale ``s`` in
``[s_min, 1]`` (how much of the latent's posterior variance the predictive counts). With more than
two classes, one more temperature combines the problems' answers by the odds rule.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import log_ndtr

from ..numerics._probit import inv_mills, moderated_latent, ovr_log_proba

__all__ = [
    "OFFSET_MAX",
    "S_MIN",
    "T_MIN",
    "Calibration",
    "calibrated_latent",
    "fit_calibration",
    "fit_combine_temperature",
    "fit_platt",
    "fit_temperature",
]

#: Smallest temperature: a model whose held-out answers carry no information is shrunk this far.
T_MIN = 1e-2

#: Smallest variance scale: the predictive counts at least half the latent's posterior variance.
S_MIN = 0.5

#: Bound on the calibration offset, in latent units (a class frequency of 1e-23 or its complement).
OFFSET_MAX = 10.0


@dataclass(frozen=True)
class Calibration:
    """How a model's latent becomes a probability: ``Phi(offset + temperature * m / sqrt(1 + s v))``."""

    temperature: float = 1.0
    variance_scale: float = 1.0
    offset: float = 0.0


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


def fit_platt(z, t):
    """The offset ``a`` and temperature ``T`` of least held-out log-loss, and that log-loss.

    Minimises ``f(a, T) = -mean log Phi(t (a + T z))`` over ``a`` in ``[-OFFSET_MAX, OFFSET_MAX]``
    and ``T`` in ``[T_MIN, 1]``. ``f`` is convex (``log Phi`` is concave and its argument linear in
    ``(a, T)``), with gradient ``-mean(t r [1, z])`` and Hessian ``mean(w [1, z]' [1, z])``,
    ``r = phi / Phi`` at ``x = t (a + T z)`` and ``w = r (x + r) >= 0``; a projected Newton
    method with a backtracking line search finds its minimum in a few steps. Returns
    ``(a, T, log_loss)``.

    Examples
    --------
    >>> import numpy as np
    >>> t = np.array([1.0, -1.0, -1.0, -1.0, 1.0, -1.0])
    >>> a, T, _ = fit_platt(np.array([0.5, -0.5, 0.5, -0.5, -0.5, 0.5]), t)  # uninformative
    >>> float(np.round(T, 2)), bool(a < 0)  # the model is flattened onto the class frequency
    (0.01, True)
    """
    z = np.asarray(z, dtype=np.float64)
    t = np.asarray(t, dtype=np.float64)
    lo = np.array([-OFFSET_MAX, T_MIN])
    hi = np.array([OFFSET_MAX, 1.0])

    def loss(p):
        return -float(np.mean(log_ndtr(t * (p[0] + p[1] * z))))

    p = np.array([0.0, 1.0])
    f = loss(p)
    for _ in range(100):
        x = t * (p[0] + p[1] * z)
        r = inv_mills(x)
        w = r * (x + r)
        g = -np.array([np.mean(t * r), np.mean(t * r * z)])
        H = np.array([[np.mean(w), np.mean(w * z)], [np.mean(w * z), np.mean(w * z * z)]])
        # A coordinate at a bound whose gradient points outwards stays there (projected Newton).
        free = ~(((p <= lo) & (g > 0)) | ((p >= hi) & (g < 0)))
        if not free.any():
            break
        step = np.zeros(2)
        Hf = H[np.ix_(free, free)]
        # Levenberg term: a constant z (the intercept-only model) makes H singular.
        Hf = Hf + (1e-12 + 1e-9 * np.trace(Hf)) * np.eye(int(free.sum()))
        step[free] = -np.linalg.solve(Hf, g[free])
        k = 1.0
        while True:
            q = np.clip(p + k * step, lo, hi)
            fq = loss(q)
            if fq <= f + 1e-4 * float(g @ (q - p)) or k < 1e-10:
                break
            k *= 0.5
        done = abs(f - fq) <= 1e-12 * (1.0 + abs(f)) and np.max(np.abs(q - p)) <= 1e-9
        if fq <= f:
            p, f = q, fq
        if done or k < 1e-10:
            break
    return float(p[0]), float(p[1]), f


def fit_calibration(mean, var, t, s_min=S_MIN):
    """The :class:`Calibration` of best held-out likelihood, and the log-loss there.

    Maximises ``mean log Phi(t (a + T m / sqrt(1 + s v)))`` over the offset ``a``, the
    temperature ``T`` in ``[T_MIN, 1]`` and the variance scale ``s`` in ``[s_min, 1]``
    (``s_min = 1``: ``a`` and ``T`` alone). For each ``s`` the objective is convex in ``(a, T)``
    (:func:`fit_platt`); ``s`` is found by a bounded scalar search on that profile, the bounds
    themselves included. Ties go to ``s = 1`` (with ``v = 0`` everywhere ``s`` changes nothing).

    Parameters
    ----------
    mean, var : ndarray of shape (n,)
        Held-out posterior mean and variance of the positive class's latent.
    t : ndarray of shape (n,)
        Signed labels, +1 for the positive class and -1 otherwise.
    s_min : float in [0, 1], default=S_MIN

    Returns
    -------
    calibration : Calibration
    log_loss : float
    """
    mean = np.asarray(mean, dtype=np.float64)
    var = np.maximum(np.asarray(var, dtype=np.float64), 0.0)

    def profile(s):
        return fit_platt(moderated_latent(mean, var, variance_scale=s), t)

    s_min = float(s_min)
    scales = [1.0]
    if s_min < 1.0 and np.any(var > 0):
        res = minimize_scalar(lambda s: profile(s)[2], bounds=(s_min, 1.0), method="bounded",
                              options={"xatol": 1e-2})
        scales += [float(res.x), s_min]
    best = None
    for s in scales:  # the first of equal losses wins
        a, temp, ll = profile(s)
        if best is None or ll < best[1] - 1e-12:
            best = (Calibration(temp, s, a), ll)
    return best


def calibrated_latent(mean, var, calibration):
    """``a + T m / sqrt(1 + s v)`` for one problem's :class:`Calibration` (arrays of shape (n,))."""
    c = calibration
    return c.offset + moderated_latent(mean, var, c.temperature, c.variance_scale)


def fit_combine_temperature(z, y_idx):
    """Temperature of the multi-class combination in ``[T_MIN, 1]``, and the mean log-loss there.

    ``z`` is ``(n, k)``: each problem's calibrated held-out latents (:func:`calibrated_latent`),
    ``y_idx`` the ``(n,)`` true class indices. The class probabilities are those of
    :func:`ardselect.numerics._probit.ovr_log_proba` (the odds rule at 1).
    """
    z = np.asarray(z, dtype=np.float64)
    rows = np.arange(len(y_idx))
    return _bounded_min(lambda temp: -float(np.mean(ovr_log_proba(z, temp)[rows, y_idx])))
