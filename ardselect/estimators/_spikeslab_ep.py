r"""Expectation Propagation for the probit model with spike-and-slab priors.

The model (Hernandez-Lobato, Hernandez-Lobato & Suarez 2010; the regression version in
Hernandez-Lobato et al. 2015), on a signed, standardised design ``P`` (row ``i`` is ``t_i z_i``)::

    p(t | w, b) = prod_i Phi(t_i (z_i . w + b)),
    p(w_j) = p0 N(w_j; 0, v_s) + (1 - p0) delta(w_j),      b ~ N(0, 1 / alpha_b),

where the indicator ``gamma_j`` of gene ``j`` being in the model (``P(gamma_j = 1) = p0``) is summed
out of each prior factor. EP approximates the posterior of ``(w, b)`` by a Gaussian ``q``: the exact
intercept prior times one Gaussian site per sample (on its signed latent ``h_i``) and one per gene
(on ``w_j``). A gene's posterior inclusion probability is the one of its tilted distribution,
``P(gamma_j = 1 | cavity_j)``, EP's approximation of ``P(gamma_j = 1 | t)``.

Notation (paper -> code)
------------------------
==========================  ===================  ==============================================
paper                       code                 meaning
==========================  ===================  ==============================================
``p0``                      ``prior_inclusion``  prior probability that a gene is in the model
``v_s``                     ``slab_variance``    prior variance of an included weight
``t~_i`` (likelihood site)  ``tau, nu``          precision and precision-mean of sample i's site
``s~_j`` (prior site)       ``lam, eta``         precision and precision-mean of gene j's site
``m, V``                    ``mean, var``        Gaussian posterior of the weights (marginals)
``m_j^{\j}, v_j^{\j}``      ``h_c/r_c, 1/r_c``   cavity of gene j, kept in natural form
``p_j``                     ``pip``              posterior inclusion probability of gene j
``Z_EP``                    ``log_evidence``     EP's approximation of the marginal likelihood
==========================  ===================  ==============================================

Algebra
-------
The product of the gene sites and the intercept prior is a Gaussian ``N(mu0, diag(1 / alpha))``
with ``alpha = (lam, alpha_b)`` and ``mu0 = (eta / lam, 0)``. Writing ``u = mu0 + u'`` turns it into
the zero-mean prior of :class:`ardselect.numerics._ep.LatentPosterior` and shifts each likelihood site's
precision-mean by ``-tau_i f0_i``, ``f0 = P mu0``. That class gives the posterior of ``u'`` in weight
space (``d x d`` matrices, ``d = p + 1``) when ``d <= n`` and in sample space (Woodbury: ``n x n``
matrices only, never ``d x d``) otherwise; both routes give the same posterior (tested).

Site updates
------------
A sweep computes the posterior once and proposes new values for all sites (parallel EP): the
likelihood sites from the probit tilted moments (:func:`ardselect.numerics._ep._new_sites`, log space), the
gene sites from the tilted distribution cavity ``N(w; h_c / r_c, 1 / r_c)`` times the spike-and-slab
prior, a two-component mixture with closed-form moments (:func:`prior_site_moments`). The mixture's
variance can exceed the cavity's, which would make the site precision negative; **the one rule** for
that case: the site precision is set to its floor ``LAM_MIN_REL / v_s`` (a site no wider than the slab,
as the prior factor it stands for never is) and its precision-mean is chosen so that the posterior
mean of the weight still matches the tilted mean (the KL projection under that constraint). Such
updates are counted (``n_clipped``).

Plain damped parallel EP falls into slow cycles here when the prior is sparse and genes are
interchangeable (the latents' margins and several genes' inclusion swell and shrink together over
tens of sweeps). The iteration is therefore accelerated by Anderson mixing (:class:`_Anderson`) on
``(tau, nu, log lam, eta)``; its fixed points are exactly EP's. Convergence: the largest change a
sweep proposes for a site parameter (natural form), relative to ``1 + |value|``, below ``tol``.

Evidence
--------
``log Z_EP = Phi_d(q) - Phi_1(intercept prior) + sum_k [log Z_k + Phi_1(cavity_k) - Phi_1(q_k)]``
over all sites ``k``, with ``Phi`` the log-normaliser of a Gaussian in natural parameters; the first
difference is ``0.5 (eta . m_w + nu . f_mean) + 0.5 p log(2 pi) - 0.5 sum log lam - 0.5 log|B|``.
With ``p0 = 1`` every gene site is the exact Gaussian prior and this is the evidence
:func:`ardselect.numerics._ep.run_ep` reports at ``alpha = 1 / v_s`` (tested).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np
from scipy.linalg.blas import dtrmm as _dtrmm
from scipy.linalg.blas import dtrmv as _dtrmv
from scipy.linalg.lapack import dtrtri as _dtrtri
from scipy.special import expit, logsumexp

from ..numerics._ep import LatentPosterior, _assemble_posterior, _factor, _new_sites
from ..numerics._probit import log_Phi

__all__ = ["SpikeSlabEP", "combine_problems", "prior_site_moments", "run_spikeslab_ep"]

logger = logging.getLogger("ardselect")

_LOG_2PI = math.log(2.0 * math.pi)

#: Floor of a gene site's precision, relative to ``1 / v_s`` (the negative-precision rule): a site
#: approximates a prior factor that is never wider than the slab, so its variance is at most the
#: slab's. (A floor of 1e-2, a site 100 times wider than the slab, let clipped sites swing between
#: nearly flat and tight, and EP cycled on 6 of 50 Golub partitions; at 1, on 1 of 50.)
LAM_MIN_REL = 1.0
#: Ceiling of a gene site's precision, relative to ``1 / v_s``: a site this precise pins its weight
#: at 0 within 1e-5 slab sd. It keeps ``1 / lam`` and the cavity ``1 / v_j - lam`` well conditioned
#: when a gene's inclusion probability underflows.
LAM_MAX_REL = 1e10


def prior_site_moments(r_c, h_c, p0, v_s):
    """Moments of cavity ``N(w; h_c / r_c, 1 / r_c)`` times ``p0 N(w; 0, v_s) + (1 - p0) delta(w)``.

    Parameters
    ----------
    r_c, h_c : ndarray of shape (p,)
        Cavity precision (``>= 0``) and precision-mean of each weight.
    p0 : float
        Prior inclusion probability, in (0, 1].
    v_s : float
        Slab variance, > 0.

    Returns
    -------
    log_odds : ndarray of shape (p,)
        ``log P(gamma_j = 1 | cavity) - log P(gamma_j = 0 | cavity)`` (``+inf`` for ``p0 = 1``).
    log_bf : ndarray of shape (p,)
        ``log N(m_c; 0, v_c + v_s) - log N(m_c; 0, v_c)``: the Bayes factor of the slab against the
        spike under the cavity, ``0.5 (h_c^2 v_s / (1 + v_s r_c) - log(1 + v_s r_c))``.
    mean, var : ndarray of shape (p,)
        Mean and variance of the tilted distribution.
    slab_mean, slab_var : ndarray of shape (p,)
        Mean and variance of the weight given inclusion.
    """
    a = 1.0 + v_s * r_c
    log_bf = 0.5 * (h_c * h_c * v_s / a - np.log1p(v_s * r_c))
    slab_var = v_s / a
    slab_mean = h_c * slab_var
    if p0 >= 1.0:
        return np.full(r_c.shape, np.inf), log_bf, slab_mean, slab_var.copy(), slab_mean, slab_var
    log_odds = math.log(p0) - math.log1p(-p0) + log_bf
    pi = expit(log_odds)
    # pi (var1 + mean1^2) - (pi mean1)^2, written without the cancellation.
    var = pi * (slab_var + expit(-log_odds) * slab_mean * slab_mean)
    return log_odds, log_bf, pi * slab_mean, var, slab_mean, slab_var


def _log_z_prior_over_cavity(r_c, h_c, p0, v_s):
    """``log Z_j + Phi_1(cavity_j)`` of every gene site, without its ``0.5 log 2 pi``.

    ``log Z_j = log N(m_c; 0, v_c) + log(1 - p0) + log(1 + exp(log_odds))`` and the first term is
    ``0.5 log(r_c / 2 pi) - 0.5 h_c^2 / r_c``, which cancels against the cavity's log-normaliser
    ``Phi_1 = 0.5 h_c^2 / r_c - 0.5 log r_c`` up to ``-0.5 log 2 pi``: no ``1 / r_c`` is formed,
    so a gene no sample informs (``r_c = 0``) gives a finite term.
    """
    log_odds, log_bf, *_ = prior_site_moments(r_c, h_c, p0, v_s)
    if p0 >= 1.0:
        return -0.5 * _LOG_2PI + log_bf
    return -0.5 * _LOG_2PI + math.log1p(-p0) + np.logaddexp(0.0, log_odds)


@dataclass
class SpikeSlabEP:
    """EP fixed point (or last sweep) of the spike-and-slab probit model for one signed design.

    Arrays over samples are ``(n,)``, over genes ``(p,)``; ``d = p + 1`` with a held intercept (last),
    else ``p``. ``post`` is the :class:`~ardselect.numerics._ep.LatentPosterior` of the shifted weights
    ``u - mu0``; ``mean``, ``var`` are the posterior marginals of ``(w, b)``.
    """

    tau: np.ndarray
    nu: np.ndarray
    lam: np.ndarray
    eta: np.ndarray
    post: LatentPosterior
    mu0: np.ndarray  # (d,) prior mean of (w, b) from the gene sites
    mean: np.ndarray  # (d,)
    var: np.ndarray  # (d,)
    pip: np.ndarray
    log_bf: np.ndarray
    slab_mean: np.ndarray
    slab_var: np.ndarray
    prior_inclusion: float
    slab_variance: float
    log_evidence: float
    n_iter: int
    converged: bool
    n_clipped: int

    def latent(self, Za):
        """Posterior mean and variance of the latent at rows ``Za`` (``(m, d)``: genes, then 1)."""
        m, v = self.post.latent(Za)
        return Za @ self.mu0 + m, v


class _Sweeper:
    """The posterior of given sites over the design ``P`` (``(n, d)``, intercept column last).

    In sample space (``d > n``) a sweep needs only the marginals, which :meth:`marginals` computes
    with direct BLAS calls on one ``(d, n + 1)`` buffer, allocated once, that holds the scaled
    transposed design ``Pt^T = A^-1/2 P^T`` and, in its last column, ``A^1/2 mu0``:

    * one product gives ``K = Pt Pt^T`` and ``f0 = P mu0`` (``Pt`` times the buffer);
    * ``B = I + S K S`` is factored and inverted (``n x n``);
    * one triangular product overwrites the buffer with ``X = (S Pt)^T L^-T`` and, in its last
      column, ``Pt^T b``: the triangular factor is ``[L^-1 S, 0; b^T, 0]``;
    * ``var = (1 - rowsum(X^2)) / alpha`` and ``mean = mu0 + A^-1/2 Pt^T b``,

    the formulas of :class:`ardselect.numerics._ep.LatentPosterior`, with no ``d x d`` matrix and
    no other ``(n, d)`` array per sweep. ``B >= I``, so its factor's inverse ``L^-1`` is bounded
    (norm at most 1): the solves are products with it (``n x n``, inverted once per sweep), which
    BLAS runs faster than triangular solves on these shapes. :meth:`posterior` assembles the
    :class:`~ardselect.numerics._ep.LatentPosterior` of the sites a :meth:`marginals` call was
    given from what it computed (in weight space, it is that class's own).
    """

    def __init__(self, P, intercept_alpha, route):
        self.P = P
        self.n, self.d = P.shape
        self.alpha_b = intercept_alpha  # None: no intercept column
        self.route = route or ("weight" if self.d <= self.n else "sample")
        if self.route == "sample":
            self.PT = np.asfortranarray(P.T)  # (d, n)
            self._buf = np.empty((self.d, self.n + 1), order="F")
            self._tri = np.zeros((self.n + 1, self.n + 1), order="F")

    def _prior(self, lam, eta):
        mu0 = eta / lam  # (p,)
        alpha = lam
        if self.alpha_b is not None:
            alpha = np.append(lam, self.alpha_b)
            mu0 = np.append(mu0, 0.0)
        return alpha, mu0

    def marginals(self, tau, nu, lam, eta):
        """``(parts, mu0, f_mean, f_var, mean, var)`` for sites ``(tau, nu)`` and ``(lam, eta)``.

        ``parts`` is what :meth:`posterior` needs to assemble the posterior of these sites (in
        weight space, the posterior itself).
        """
        alpha, mu0 = self._prior(lam, eta)
        if self.route != "sample":
            f0 = self.P @ mu0  # (n,)
            post = LatentPosterior(self.P, alpha, tau, nu - tau * f0, self.route)
            return post, mu0, f0 + post.f_mean, post.f_var, mu0 + post.mean, post.var()
        n = self.n
        r = 1.0 / np.sqrt(alpha)
        buf = self._buf
        Pt = buf[:, :n]  # (d, n) view, Fortran order
        np.multiply(self.PT, r[:, None], out=Pt)
        np.divide(mu0, r, out=buf[:, n])
        G = Pt.T @ buf  # (n, n + 1): [K, f0]
        K, f0 = G[:, :n], G[:, n].copy()
        nu_s = nu - tau * f0  # sites of the shifted latent
        s = np.sqrt(tau)
        SK = s[:, None] * K
        B = SK * s
        B.flat[:: n + 1] += 1.0
        L = _factor(B)
        Li = _dtrtri(L, lower=1)[0]  # L^-1 (its lower triangle)
        V = _dtrmm(1.0, Li, SK, lower=1)  # (n, n) = L^-1 S K
        f_var = np.diagonal(K) - np.einsum("ij,ij->j", V, V)
        b = nu_s - s * _dtrmv(Li, V @ nu_s, lower=1, trans=1)
        f_shift = K @ b
        tri = self._tri
        np.multiply(Li, s, out=tri[:n, :n])  # L^-1 S (lower triangle used)
        tri[n, :n] = b
        X = _dtrmm(1.0, tri, buf, side=1, lower=1, trans_a=1, overwrite_b=1)
        mean = mu0 + r * X[:, n]
        var = (1.0 - np.einsum("ij,ij->i", X[:, :n], X[:, :n])) / alpha
        parts = (alpha, tau, nu_s, L, b, f_shift)
        return parts, mu0, f0 + f_shift, f_var, mean, np.maximum(var, 0.0)

    def posterior(self, state):
        """The posterior of the shifted weights ``u - mu0`` for the sites of a :meth:`marginals` call.

        ``state`` is what that call returned; the result is a
        :class:`~ardselect.numerics._ep.LatentPosterior`.
        """
        parts, f_var = state[0], state[3]
        if self.route != "sample":
            return parts
        alpha, tau, nu_s, L, b, f_shift = parts
        inv_sqrt_alpha = 1.0 / np.sqrt(alpha)
        prior = SimpleNamespace(inv_sqrt_alpha=inv_sqrt_alpha, Pt=self.P * inv_sqrt_alpha,
                                route="sample")
        return _assemble_posterior(prior, alpha, tau, nu_s, np.tril(L), f_shift, f_var, b)


def _gene_cavities(mean, var, lam, eta):
    """Cavity natural parameters ``(r_c, h_c)`` of the gene sites from the posterior marginals."""
    # r_c = 1 / v - lam >= 0 in exact arithmetic (the likelihood sites only add precision); rounding
    # can push it a hair below 0 for a gene no sample informs, whose cavity is then flat.
    r_c = np.maximum(1.0 / var - lam, 0.0)
    h_c = mean / var - eta
    return r_c, np.where(r_c > 0, h_c, 0.0)


def _new_gene_sites(r_c, h_c, p0, v_s):
    """New gene sites ``(lam, eta)`` from their cavities; the number clipped at the floor."""
    _, _, m_hat, v_hat, _, _ = prior_site_moments(r_c, h_c, p0, v_s)
    lam_min, lam_max = LAM_MIN_REL / v_s, LAM_MAX_REL / v_s
    with np.errstate(divide="ignore"):
        lam = 1.0 / v_hat - r_c  # inf where the inclusion probability underflowed: the ceiling
    low = lam < lam_min
    lam = np.clip(lam, lam_min, lam_max)
    # eta matches the tilted mean: posterior precision r_c + lam, mean m_hat.
    eta = m_hat * (r_c + lam) - h_c
    return lam, eta, int(low.sum())


def _log_phi_1(r, h):
    """Log-normaliser of a 1-D Gaussian in natural form, without its ``0.5 log 2 pi``."""
    return 0.5 * h * h / r - 0.5 * np.log(r)


def log_evidence(post, tau, nu, lam, eta, f_mean, f_var, mean, var, p0, v_s):
    """``log Z_EP`` of the spike-and-slab probit model at the given sites (module notes)."""
    p = lam.shape[0]
    # Likelihood sites: cavity and posterior marginal of each signed latent.
    r_post, h_post = 1.0 / f_var, f_mean / f_var
    r_cav, h_cav = r_post - tau, h_post - nu
    vc, mc = 1.0 / r_cav, h_cav / r_cav
    lik = np.sum(log_Phi(mc / np.sqrt(1.0 + vc)) + _log_phi_1(r_cav, h_cav)
                 - _log_phi_1(r_post, h_post))
    # Gene sites.
    mw, vw = mean[:p], var[:p]
    r_c, h_c = _gene_cavities(mw, vw, lam, eta)
    gene = np.sum(_log_z_prior_over_cavity(r_c, h_c, p0, v_s) - _log_phi_1(1.0 / vw, mw / vw))
    # The Gaussian q against the intercept prior (whose log-determinant cancels against its own
    # normaliser): 0.5 m^T Q m + 0.5 p log 2 pi - 0.5 sum log lam - 0.5 log|B|, with
    # Q m = (eta, 0) + A^T nu, Q the posterior precision.
    quad = float(eta @ mw + nu @ f_mean)
    log_det = float(np.sum(np.log(lam))) + post.log_det_B
    return float(lik + gene + 0.5 * quad + 0.5 * p * _LOG_2PI - 0.5 * log_det)


def _sweep(sweeper, x, n, p, p0, v_s):
    """One parallel EP sweep: the proposed sites ``F(x)`` from the posterior of the sites ``x``.

    ``x`` packs ``(tau, nu, log lam, eta)``; returns ``F(x)`` packed the same way, the marginals
    (``sweeper.marginals``), the gene site precisions of ``x`` and of ``F(x)``, and the number of
    clipped gene sites.
    """
    tau, nu, lam, eta = _unpack(x, n, p)
    state = sweeper.marginals(tau, nu, lam, eta)
    _, _, f_mean, f_var, mean, var = state
    new = np.empty((2, n))
    new[0], new[1] = tau, nu
    # Likelihood sites (Qi et al. eqs. 6-10, log space). A cavity that rounding made invalid (only
    # possible for a site with no information) leaves its site as it is.
    denom = 1.0 - tau * f_var
    ok = (denom > 1e-12) & (f_var > 0)
    if ok.all():
        _new_sites((f_mean - nu * f_var) / denom, f_var / denom, new)
    elif ok.any():
        new[:, ok] = _new_sites((f_mean[ok] - nu[ok] * f_var[ok]) / denom[ok],
                                f_var[ok] / denom[ok], np.empty((2, int(ok.sum()))))
    r_c, h_c = _gene_cavities(mean[:p], var[:p], lam, eta)
    lam_new, eta_new, n_clipped = _new_gene_sites(r_c, h_c, p0, v_s)
    fx = np.concatenate([np.maximum(new[0], 0.0), new[1], np.log(lam_new), eta_new])
    return fx, state, (lam, lam_new), n_clipped


def _unpack(x, n, p):
    return x[:n], x[n:2 * n], np.exp(x[2 * n:2 * n + p]), x[2 * n + p:]


def _relative_change(x, fx, n, p, lam, lam_new):
    """Largest change of a site parameter (natural form) relative to ``1 + |new value|``.

    ``lam`` and ``lam_new`` are the gene site precisions of ``x`` and ``fx`` (stored as logs).
    """
    if not fx.size:
        return 0.0
    change = np.abs(fx - x)
    change[2 * n:2 * n + p] = np.abs(lam_new - lam)
    scale = np.abs(fx)
    scale[2 * n:2 * n + p] = lam_new
    scale += 1.0
    change /= scale
    return float(change.max())


class _Anderson:
    """Anderson acceleration (type II, memory ``mem``, mixing ``beta``) of the EP fixed point.

    Anderson mixing extrapolates from the last ``mem`` iterates to the point where the residual
    ``g = F(x) - x`` vanishes; a fixed point of EP is one of the accelerated iteration and vice
    versa. The least-squares coefficients come from the ``(k, k)`` Gram matrix of the residual
    differences, kept up to date as columns come and go (ridge ``1e-12`` times its trace against
    collinear columns). Two safeguards: when a step more than doubles the residual norm, the
    history is dropped and that step's difference is not remembered either (so the history never
    starts with a jump: from a cold start, the first sweep moves only the likelihood sites and the
    second then proposes to move the gene sites far, a pair of differences that would stall the
    extrapolation for ``mem`` sweeps); when ``mem`` steps in a row have not lowered the smallest
    residual norm seen, the history is dropped and the next ``mem`` steps are plain damped ones,
    ``x + beta g`` (extrapolation can stall where damped iteration converges). Iterates stay
    inside the sites' bounds ``[lower, upper]``.
    """

    def __init__(self, mem, beta, lower, upper):
        self.mem, self.beta = mem, beta
        self.lower, self.upper = lower, upper
        # Differences of successive iterates and residuals, one row each, and their residuals'
        # Gram matrix. A ring: the first k rows are in use, the next difference goes to row pos
        # (the oldest once all mem rows are); the least squares do not depend on the rows' order.
        self.dX = np.empty((mem, lower.size))
        self.dG = np.empty((mem, lower.size))
        self.gram = np.empty((mem, mem))
        self.k = self.pos = 0
        self.prev = None  # (x, g) of the previous step
        self.best, self.stalled, self.plain = np.inf, 0, 0
        self.n_restarts = 0

    def _push(self, dx, dg):
        i = self.pos
        self.dX[i], self.dG[i] = dx, dg
        k = min(self.k + 1, self.mem)
        col = self.dG[:k] @ dg
        self.gram[i, :k] = self.gram[:k, i] = col
        self.k, self.pos = k, (i + 1) % self.mem

    def _reset(self):
        self.k = self.pos = 0
        self.n_restarts += 1

    def step(self, x, g):
        r2 = float(g @ g)
        if r2 < self.best:
            self.best, self.stalled = r2, 0
        else:
            self.stalled += 1
        if self.prev is not None:
            x0, g0 = self.prev
            if r2 > 4.0 * float(g0 @ g0):
                if self.k:
                    self._reset()
            else:
                self._push(x - x0, g - g0)
        if self.stalled >= self.mem and self.plain == 0:
            self._reset()
            self.plain, self.stalled = self.mem, 0
        self.prev = (x, g)
        x_new = x + self.beta * g
        if self.plain > 0:
            self.plain -= 1
        elif self.k:
            k = self.k
            dX, dG, gram = self.dX[:k], self.dG[:k], self.gram[:k, :k]
            rhs = dG @ g
            ridge = 1e-12 * np.trace(gram) + 1e-300
            gamma = np.linalg.solve(gram + ridge * np.eye(k), rhs)
            x_new -= gamma @ dX + self.beta * (gamma @ dG)
        return np.clip(x_new, self.lower, self.upper)


def run_spikeslab_ep(P, *, prior_inclusion, slab_variance, intercept=None, intercept_alpha=None,
                     damping=0.5, tol=1e-4, max_iter=200, route=None, start=None, memory=10):
    """Fit the spike-and-slab probit model to the signed design ``P`` by parallel EP.

    Parameters
    ----------
    P : ndarray of shape (n, p)
        Signed standardised genes (row ``i`` is ``t_i z_i``).
    prior_inclusion : float
        ``p0``, in (0, 1]; 1 makes every gene site the exact Gaussian prior ``N(0, v_s)``.
    slab_variance : float
        ``v_s > 0``.
    intercept : ndarray of shape (n,), optional
        The signed intercept column (the signs ``t``), held under ``N(0, 1 / intercept_alpha)``.
    intercept_alpha : float, optional
        Prior precision of the intercept (with ``intercept``).
    damping : float, default=0.5
        Mixing fraction of the accelerated iteration, in (0, 1].
    tol : float, default=1e-4
        Convergence: the largest change a sweep proposes for a site parameter, relative to
        ``1 + |value|``.
    max_iter : int, default=200
        Maximum number of sweeps.
    route : {None, "weight", "sample"}
        Posterior algebra (default: weight space if ``d <= n``, else sample space).
    start : SpikeSlabEP, optional
        Warm start from another fit of the same design (its sites).
    memory : int, default=10
        Iterates the Anderson acceleration remembers (0: plain damped iteration).

    Returns
    -------
    SpikeSlabEP
    """
    P = np.asarray(P, dtype=np.float64)
    n, p = P.shape
    if intercept is not None:
        P = np.column_stack([P, intercept])
    p0, v_s = float(prior_inclusion), float(slab_variance)
    if not 0.0 < damping <= 1.0:
        msg = f"damping must be in (0, 1]; got {damping!r}."
        raise ValueError(msg)
    sweeper = _Sweeper(P, intercept_alpha if intercept is not None else None, route)
    lower = np.concatenate([np.zeros(n), np.full(n, -np.inf), np.full(p, math.log(LAM_MIN_REL / v_s)),
                            np.full(p, -np.inf)])
    upper = np.concatenate([np.full(2 * n, np.inf), np.full(p, math.log(LAM_MAX_REL / v_s)),
                            np.full(p, np.inf)])
    if start is not None:
        x = np.concatenate([start.tau, start.nu, np.log(start.lam), start.eta])
        x = np.clip(x, lower, upper)
    else:
        # Gene sites start at the prior's own moments (mean 0, variance p0 v_s).
        x = np.concatenate([np.zeros(2 * n), np.full(p, -math.log(p0 * v_s)), np.zeros(p)])
    acc = _Anderson(memory, float(damping), lower, upper)
    converged = False
    n_sweeps = 0
    while n_sweeps < max_iter:
        n_sweeps += 1
        fx, state, (lam, lam_new), n_clipped = _sweep(sweeper, x, n, p, p0, v_s)
        if _relative_change(x, fx, n, p, lam, lam_new) < tol:
            converged = True
            break
        g = fx - x
        x = acc.step(x, g) if memory > 0 else np.clip(x + damping * g, lower, upper)
    # The posterior reported is that of the sites x (the last sweep's input when converged).
    tau, nu, lam, eta = _unpack(x, n, p)
    if not converged:
        state = sweeper.marginals(tau, nu, lam, eta)
    post = sweeper.posterior(state)
    _, mu0, f_mean, f_var, mean, var = state
    r_c, h_c = _gene_cavities(mean[:p], var[:p], lam, eta)
    log_odds, log_bf, _, _, slab_mean, slab_var = prior_site_moments(r_c, h_c, p0, v_s)
    pip = np.ones(p) if p0 >= 1.0 else expit(log_odds)
    log_ev = log_evidence(post, tau, nu, lam, eta, f_mean, f_var, mean, var, p0, v_s)
    logger.debug("spike-and-slab EP: p0 %.3g, %d sweeps, converged %s, %d clipped, %d restarts",
                 p0, n_sweeps, converged, n_clipped, acc.n_restarts)
    return SpikeSlabEP(tau=tau.copy(), nu=nu.copy(), lam=lam, eta=eta.copy(), post=post, mu0=mu0,
                       mean=mean, var=var, pip=pip, log_bf=log_bf, slab_mean=slab_mean,
                       slab_var=slab_var, prior_inclusion=p0, slab_variance=v_s,
                       log_evidence=log_ev, n_iter=n_sweeps, converged=converged, n_clipped=n_clipped)


def combine_problems(lp, lm):
    """Class log probabilities from each binary problem's ``log P(+)``, ``log P(-)`` (``(n, k)``).

    One problem (two classes): ``[log P(-), log P(+)]``. One per class (one-vs-rest): a softmax of
    their log odds, as :func:`ardselect.numerics._probit.ovr_log_proba` combines them.
    """
    if lp.shape[1] == 1:
        return np.column_stack([lm[:, 0], lp[:, 0]])
    log_odds = lp - lm
    return log_odds - logsumexp(log_odds, axis=1, keepdims=True)


class _Mixture:
    """One binary problem: the EP fits at the hyperprior's nodes and their posterior weights."""

    def __init__(self, fits, weights, expected, log_prior):
        self.fits = fits  # SpikeSlabEP per node kept (weight > 0)
        self.weights = weights  # (g,) posterior weights of the nodes, summing to 1
        self.expected = expected  # (g,) expected genes of each node
        self.log_prior = log_prior
        self.log_evidence = np.nan
        self.signs = None  # (n,) the training labels as +1 / -1 (the portable model needs them)

    def summaries(self, p):
        """Mixture mean and variance of ``(w, b)``, PIPs and the sign probability of each gene."""
        w = self.weights
        mean = sum(wi * f.mean for wi, f in zip(w, self.fits, strict=True))
        second = sum(wi * (f.var + f.mean**2) for wi, f in zip(w, self.fits, strict=True))
        pip = sum(wi * f.pip for wi, f in zip(w, self.fits, strict=True))
        # P(weight has the sign of its posterior mean | included): each node's slab, weighted by
        # the node's weight times the gene's inclusion there.
        sign = np.sign(mean[:p])
        num = sum(wi * f.pip * np.exp(log_Phi(sign * f.slab_mean / np.sqrt(f.slab_var)))
                  for wi, f in zip(w, self.fits, strict=True))
        with np.errstate(invalid="ignore", divide="ignore"):
            p_sign = np.where((pip > 0) & (sign != 0), num / pip, 0.5)
        return mean, np.maximum(second - mean**2, 0.0), pip[:p], p_sign

    def log_proba(self, Za):
        """``log P(t = +1)``, ``log P(t = -1)`` and the latent's mixture mean and variance at ``Za``."""
        lp, lm, means, variances = [], [], [], []
        for f in self.fits:
            m, v = f.latent(Za)
            z = m / np.sqrt(1.0 + v)
            lp.append(log_Phi(z))
            lm.append(log_Phi(-z))
            means.append(m)
            variances.append(v)
        log_w = np.log(self.weights)[:, None]
        means, variances = np.array(means), np.array(variances)
        mean = self.weights @ means
        var = self.weights @ (variances + means**2) - mean**2
        return (logsumexp(log_w + np.array(lp), axis=0), logsumexp(log_w + np.array(lm), axis=0),
                mean, np.maximum(var, 0.0))
