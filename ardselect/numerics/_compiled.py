r"""The engine's innermost loops, compiled (numba).

* :func:`ep_sweeps`: the parallel EP sweep loop of :func:`ardselect.numerics._ep.run_ep` for small designs,
  and what ``run_ep`` reports for the final sites (the posterior's factor, marginals and mean, the
  cavities and the evidence);
* :func:`candidate_actions`: the best action for every candidate feature and its gain
  (:func:`ardselect.engine._sequential.candidate_actions`, which documents the rules).

Both are elementwise or small-matrix loops that numpy runs as dozens of short array calls. numba is
imported (and the loops compiled, or loaded from its disk cache) at the first fit, not with
ardselect.

EP sweeps
---------
Why compiled: on the problems the path meets most (tens of samples, tens of weights) a sweep is a
few thousand multiply-adds, and the numpy version of the loop spends most of its time in the
interpreter between about fifty small array calls. Here the whole loop, sweeps and step control,
is one compiled call: the same algebra as :class:`ardselect.numerics._ep._Marginals` and
:func:`ardselect.numerics._ep._new_sites`, the same convergence test and step control as ``run_ep``, and
``log Phi`` from scipy's own ``log_ndtr`` (its C routine, called directly). The results agree with
the numpy loop to rounding; only the order of the additions inside the Cholesky factorisation and
the triangular solves differs.

The factorisation and the solves are plain loops, which beat a BLAS call only while the matrix is
small; ``run_ep`` sends a design here when ``m^2 n <= _ep.KERNEL_MAX_WORK`` (``m`` the side of
the factored matrix) and keeps the BLAS loop for larger ones. A
factorisation that fails (a non-positive or non-finite pivot) returns ``status = 1`` before the
sites move, and ``run_ep`` then reruns the sweeps with the numpy loop, whose jitter policy
handles it.
"""

from __future__ import annotations

import math

import llvmlite.binding as llvm
import numpy as np
from numba import njit, types
from numba.extending import get_cython_function_address

__all__ = ["candidate_actions", "ep_sweeps"]

# scipy.special.log_ndtr for a double (the fused specialisation ``__pyx_fuse_1``): the routine the
# numpy loop calls, so both loops evaluate log Phi identically. It is declared by a symbol name
# registered with LLVM, not as a ctypes pointer, so that the compiled code can be cached on disk.
llvm.add_symbol(
    "ardselect_log_ndtr",
    get_cython_function_address("scipy.special.cython_special", "__pyx_fuse_1log_ndtr"),
)
_log_ndtr = types.ExternalFunction("ardselect_log_ndtr", types.float64(types.float64, types.intc))

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def _jit(**options):
    """``numba.njit`` without the GIL, cached on disk where numba can, else compiled per process.

    numba caches in the package's ``__pycache__``, in ``NUMBA_CACHE_DIR`` or in the user's cache
    folder; where none is writable (a read-only installation and home) it refuses ``cache=True``
    with a RuntimeError, and the loops are then compiled afresh in every process instead.
    """

    def wrap(fn):
        # nogil: the loops touch no Python object, so other threads run meanwhile (the rest of a
        # small fit is GIL-bound, so this does not make n_jobs threads faster there: measured).
        try:
            return njit(cache=True, nogil=True, **options)(fn)
        except RuntimeError:  # "cannot cache function ...: no locator available"
            return njit(cache=False, nogil=True, **options)(fn)

    return wrap


@_jit()
def _cholesky(B, L):
    """Lower Cholesky factor of ``B`` (lower triangle read) into ``L``; False on a bad pivot."""
    m = B.shape[0]
    for j in range(m):
        acc = B[j, j]
        for k in range(j):
            acc -= L[j, k] * L[j, k]
        if not (acc > 0.0 and math.isfinite(acc)):
            return False
        ljj = math.sqrt(acc)
        L[j, j] = ljj
        for i in range(j + 1, m):
            acc = B[i, j]
            for k in range(j):
                acc -= L[i, k] * L[j, k]
            L[i, j] = acc / ljj
    return True


@_jit()
def _forward(L, R, V):
    """``V = L^-1 R`` for lower-triangular ``L`` (``(m, m)``) and ``R`` (``(m, k)``), row by row."""
    m, k = R.shape
    for a in range(m):
        for c in range(k):
            V[a, c] = R[a, c]
        for b in range(a):
            lab = L[a, b]
            for c in range(k):
                V[a, c] -= lab * V[b, c]
        inv = 1.0 / L[a, a]
        for c in range(k):
            V[a, c] *= inv


@_jit()
def _marginals(A, weight, diag_K, tau, nu, B, L, R, V, w, f_mean, f_var):
    """Latent marginals for sites ``tau, nu``; False if the factorisation failed.

    Weight space (``A = Pt^T``, ``(d, n)``): ``B = I + A T A^T``, ``V = L^-1 A``,
    ``f_var = colsum(V^2)``, ``f_mean = V^T (V nu)``. Sample space (``A = K``, ``(n, n)``):
    ``B = I + T^1/2 K T^1/2``, ``V = L^-1 T^1/2 K``, ``f_var = diag(K) - colsum(V^2)``,
    ``f_mean = K nu - V^T (V nu)``.
    """
    m, n = A.shape
    if weight:
        for a in range(m):
            for b in range(a + 1):
                acc = 0.0
                for i in range(n):
                    acc += tau[i] * A[a, i] * A[b, i]
                B[a, b] = acc
            B[a, a] += 1.0
        if not _cholesky(B, L):
            return False
        _forward(L, A, V)
    else:
        s = np.sqrt(tau)
        for a in range(m):
            for c in range(n):
                R[a, c] = s[a] * A[a, c]
        for a in range(m):
            for b in range(a + 1):
                B[a, b] = R[a, b] * s[b]
            B[a, a] += 1.0
        if not _cholesky(B, L):
            return False
        _forward(L, R, V)
    for a in range(m):
        acc = 0.0
        for c in range(n):
            acc += V[a, c] * nu[c]
        w[a] = acc
    for c in range(n):
        sq = 0.0
        mean = 0.0
        for a in range(m):
            sq += V[a, c] * V[a, c]
            mean += V[a, c] * w[a]
        if weight:
            f_var[c] = sq
            f_mean[c] = mean
        else:
            f_var[c] = diag_K[c] - sq
            kn = 0.0
            for a in range(m):
                kn += A[c, a] * nu[a]
            f_mean[c] = kn - mean
    return True


@_jit()
def _site_update(mc, vc):
    """New ``(tau, nu)`` of one site from a valid cavity (the formulas of ``_ep._new_sites``)."""
    s2 = vc + 1.0
    s = math.sqrt(s2)
    z = mc / s
    r = math.exp(-0.5 * z * z - _LOG_SQRT_2PI - _log_ndtr(z, 0))
    tv = 1.0 - (z + r) * r
    tv = min(max(tv, 1e-300), 1.0)
    tv = (tv * vc + 1.0) / s2  # 1 - a
    var = vc * tv
    return (1.0 - tv) / var, (mc + vc * r / s) / var - mc / vc


@_jit()
def _sweeps(A, weight, diag_K, site, damping, tol, max_iter, B, L, R, V, w, f_mean, f_var):
    """The sweeps of ``run_ep`` in place on ``site``; ``(n_iter, converged, n_skipped, ok)``."""
    m, n = A.shape
    tau = site[0]
    nu = site[1]
    new = np.empty((2, n))
    rel = np.empty(2 * n)
    prev = np.empty(2 * n)
    have_prev = False
    prev_sq = 0.0
    step = damping
    converged = False
    n_skipped = 0
    it = 0
    if not _marginals(A, weight, diag_K, tau, nu, B, L, R, V, w, f_mean, f_var):
        return it, converged, n_skipped, False
    for it in range(1, max_iter + 1):
        n_skipped = 0
        for i in range(n):
            denom = 1.0 - tau[i] * f_var[i]
            if denom > 1e-12 and f_var[i] > 0.0:
                vc = f_var[i] / denom
                mc = (f_mean[i] - nu[i] * f_var[i]) / denom
                new[0, i], new[1, i] = _site_update(mc, vc)
            else:
                # A cavity that rounding made invalid: that site is left as it is.
                new[0, i] = tau[i]
                new[1, i] = nu[i]
                n_skipped += 1
        change = 0.0
        rel_sq = 0.0
        dot = 0.0
        for r_ in range(2):
            for i in range(n):
                x = (new[r_, i] - site[r_, i]) / (abs(new[r_, i]) + 1.0)
                rel[r_ * n + i] = x
                change = max(change, abs(x))
                rel_sq += x * x
                if have_prev:
                    dot += x * prev[r_ * n + i]
        # Step control as in run_ep: shrink on opposite successive updates, grow back when they agree.
        if have_prev:
            nrm = math.sqrt(rel_sq * prev_sq)
            cos = dot / nrm if nrm > 0 else 0.0
            if cos < -0.3:
                step = max(0.5 * step, 0.05)
            elif cos > 0.3:
                step = min(1.5 * step, damping)
        prev[:] = rel
        prev_sq = rel_sq
        have_prev = True
        for r_ in range(2):
            for i in range(n):
                site[r_, i] += step * (new[r_, i] - site[r_, i])
        if change < tol:
            converged = True
            break
        if it < max_iter and not _marginals(A, weight, diag_K, tau, nu, B, L, R, V, w, f_mean,
                                            f_var):
            return it, converged, n_skipped, False
    return it, converged, n_skipped, True


@_jit()
def ep_sweeps(A, weight, diag_K, site, damping, tol, max_iter):
    """Run the parallel EP sweeps of ``run_ep`` in place on ``site`` (``(2, n)``: ``tau``, ``nu``).

    Then, for the final sites, what ``run_ep`` reports (``_ep._finish``'s algebra): the factor and
    the latent marginals, the posterior mean's solve, the cavities and the EP log evidence.

    Returns ``(n_iter, converged, n_skipped, status, L, f_mean, f_var, x, mc, vc, log_evidence)``:
    ``L`` the lower Cholesky factor of ``B`` (zeros above the diagonal); ``x`` the scaled posterior
    mean ``A^1/2 mean`` in weight space (``Bw^-1 Pt^T nu``) and the vector ``b = nu - T^1/2 Bs^-1
    T^1/2 K nu`` in sample space (``A^1/2 mean = Pt^T b``); ``mc, vc`` the cavities, where one is
    invalid by rounding the marginal itself (``n_skipped`` then counts them). ``status`` is 1 when a
    factorisation failed (``site`` is then part-way, the other outputs meaningless, and the caller
    starts again from its own copy) and 0 otherwise.
    """
    m, n = A.shape
    B = np.zeros((m, m))
    L = np.zeros((m, m))
    R = np.empty((0, 0) if weight else (m, n))  # T^1/2 K, sample space only
    V = np.empty((m, n))
    w = np.empty(m)
    f_mean = np.empty(n)
    f_var = np.empty(n)
    x = np.empty(m)
    mc = np.empty(n)
    vc = np.empty(n)
    it, converged, n_skipped, ok = _sweeps(A, weight, diag_K, site, damping, tol, max_iter, B, L,
                                           R, V, w, f_mean, f_var)
    if ok:
        ok = _marginals(A, weight, diag_K, site[0], site[1], B, L, R, V, w, f_mean, f_var)
    if not ok:
        return it, converged, n_skipped, 1, L, f_mean, f_var, x, mc, vc, 0.0
    tau = site[0]
    nu = site[1]
    # x = L^-T w: weight space Bw^-1 Pt^T nu; sample space Bs^-1 T^1/2 K nu, then b = nu - s x.
    for a in range(m - 1, -1, -1):
        acc = w[a]
        for c in range(a + 1, m):
            acc -= L[c, a] * x[c]
        x[a] = acc / L[a, a]
    if not weight:
        for a in range(m):
            x[a] = nu[a] - math.sqrt(tau[a]) * x[a]
    # Cavities (an invalid one is replaced by the marginal itself) and the EP log evidence
    # (``_ep._log_evidence``).
    bad = 0
    site_sum = 0.0
    quad = 0.0
    for i in range(n):
        denom = 1.0 - tau[i] * f_var[i]
        if denom > 1e-12 and f_var[i] > 0.0:
            vc[i] = f_var[i] / denom
            mc[i] = (f_mean[i] - nu[i] * f_var[i]) / denom
        else:
            vc[i] = f_var[i]
            mc[i] = f_mean[i]
            bad += 1
        mi = nu[i] / tau[i] if tau[i] > 0.0 else 0.0
        tv = tau[i] * vc[i]
        site_sum += (_log_ndtr(mc[i] / math.sqrt(1.0 + vc[i]), 0) + 0.5 * math.log1p(tv)
                     + 0.5 * tau[i] * (mi - mc[i]) ** 2 / (1.0 + tv))
        quad += tau[i] * mi * mi - nu[i] * f_mean[i]
    log_det = 0.0
    for a in range(m):
        log_det += math.log(L[a, a])
    if bad:
        n_skipped = bad
    log_ev = site_sum - log_det - 0.5 * quad  # 0.5 log|B| = sum log L_aa
    return it, converged, n_skipped, 0, L, f_mean, f_var, x, mc, vc, log_ev


# Actions, as ardselect.engine._sequential numbers them.
_NONE, _ADD, _DELETE, _REESTIMATE = 0, 1, 2, 3


@_jit(error_model="numpy")
def candidate_actions(S, Q, alpha, allowed, alpha_min, penalty, has_penalty):
    """Action, gain and new precision per feature; ``penalty`` has one value per feature.

    One pass over the features with the formulas of ``_sequential.candidate_actions``; divisions by
    zero give infinities and logs of negatives NaN, as numpy's do there, and a non-finite gain of a
    possible action becomes ``-inf``.
    """
    m = S.shape[0]
    action = np.zeros(m, dtype=np.int8)
    gain = np.full(m, -np.inf)
    new_alpha = np.full(m, np.inf)
    for j in range(m):
        a, Sj, Qj = alpha[j], S[j], Q[j]
        active = math.isfinite(a)
        if active:
            denom = a - Sj
            s = a * Sj / denom
            q = a * Qj / denom
        else:
            s, q = Sj, Qj
        theta = q * q - s
        pos = theta > 0
        a_opt = max(s * s / theta, alpha_min) if pos else np.inf
        act = _NONE
        g = -np.inf
        if not active:
            if pos and allowed[j]:
                if s * s / theta >= alpha_min:
                    r = Qj * Qj / Sj
                    g = 0.5 * (r - 1.0 - math.log(r))
                else:  # the optimum is below the floor: the gain of adding at the floor
                    sd = Sj / alpha_min
                    g = 0.5 * (Qj * Qj / alpha_min / (1.0 + sd) - math.log1p(sd))
                g -= penalty[j] if has_penalty else 0.0
                act = _ADD
        elif pos:
            # 0.5 [ Q^2 delta / (1 + S delta) - log(1 + S delta) ],  delta = 1/a_new - 1/a_old
            delta = 1.0 / a_opt - 1.0 / a
            sd = Sj * delta
            g = 0.5 * (Qj * Qj * delta / (1.0 + sd) - math.log1p(sd))
            act = _REESTIMATE
            if has_penalty:
                # A relevant feature may still be worth deleting, beside its penalty.
                g_del = 0.5 * (Qj * Qj / (Sj - a) - math.log1p(-Sj / a)) + penalty[j]
                if g_del > g:
                    g = g_del
                    act = _DELETE
        else:
            g = 0.5 * (Qj * Qj / (Sj - a) - math.log1p(-Sj / a))
            if has_penalty:
                g += penalty[j]
            act = _DELETE
        if act != _NONE and not math.isfinite(g):
            g = -np.inf
        action[j] = act
        gain[j] = g
        new_alpha[j] = np.inf if act == _DELETE else a_opt
    return action, gain, new_alpha
