"""SpikeSlabClassifier: probit classification with spike-and-slab priors, fitted by EP.

Each gene is in the model with prior probability ``p0`` and then has a ``N(0, slab_variance)``
weight, else a weight of exactly zero; EP (:mod:`ardselect.estimators._spikeslab_ep`) gives every gene's
posterior inclusion probability (PIP) from one fit. ``p0`` is integrated over a hyperprior on the
expected number of genes in the model (``prior_genes``), by quadrature: one EP fit per node, the
nodes weighted by their EP evidence. Correlated genes that share their inclusion probability are
grouped into credible sets (:func:`credible_sets`).
"""

from __future__ import annotations

import warnings
from numbers import Integral, Real

import numpy as np
import pandas as pd
from scipy.special import logsumexp, ndtri_exp
from sklearn.base import ClassifierMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.feature_selection import SelectorMixin
from sklearn.utils.validation import check_is_fitted

from ..engine._parallel import one_blas_thread
from ..engine._validation import constant_columns
from ._base import _FamilyEstimator, label
from ._classifier import INTERCEPT_ALPHA
from ._constraints import Interval, Options, check_params
from ._spikeslab_ep import _Mixture, combine_problems, run_spikeslab_ep

__all__ = ["SpikeSlabClassifier", "credible_sets"]

#: A gene can be in a credible set only if its posterior odds of inclusion are at least this many
#: times its prior odds (a Bayes factor of 10, "strong" evidence): genes the data say nothing about
#: keep their prior probability, and thousands of them would add up to any coverage.
CREDIBLE_MIN_BAYES_FACTOR = 10.0
#: Credible sets are searched among at most this many genes of highest PIP (their correlations are
#: computed, ``(m, m)``).
CREDIBLE_MAX_CANDIDATES = 1000
#: Expected genes of the prior EP starts from cold; sparser priors are reached by continuation.
CONTINUATION_GENES = 20.0
#: Largest prior inclusion probability a hyperprior node may have (with few genes, ``E / p`` is
#: capped here).
MAX_NODE_P0 = 0.5


def credible_sets(pip, Z, *, prior_inclusion, coverage=0.95, min_correlation=0.5):
    """Groups of correlated genes that together hold a gene of the model with high probability.

    Genes whose posterior odds of inclusion are at least ``CREDIBLE_MIN_BAYES_FACTOR`` times the
    prior odds (at most the ``CREDIBLE_MAX_CANDIDATES`` highest PIPs) are
    visited in decreasing PIP (ties in input order). Each gene not yet in a set and with
    ``pip < coverage`` seeds a set; the other free genes join it in decreasing PIP if their absolute
    correlation with *every* member is at least ``min_correlation``, until the members' PIPs add up
    to ``coverage``. A set that reaches it with two or more genes is kept; its genes are then taken.
    A gene with ``pip >= coverage`` needs no set: it is told apart on its own.

    The sum of the PIPs is the expected number of the set's genes in the model; when the genes
    stand in for each other (the model holds one of them at a time) it is the probability that the
    model holds one of them. ``min_correlation`` is what "cannot be told apart" means here.

    Parameters
    ----------
    pip : ndarray of shape (p,)
        Posterior inclusion probabilities.
    Z : ndarray of shape (n, p)
        The genes, centred and scaled to unit variance (their correlations are ``Z.T @ Z / n``).
    prior_inclusion : float
        The prior inclusion probability ``p0`` the PIPs are compared with.
    coverage : float, default=0.95
        Sum of PIPs a set must reach, in (0, 1].
    min_correlation : float, default=0.5
        Smallest absolute correlation between any two genes of a set, in [0, 1].

    Returns
    -------
    list of (ndarray of int, float)
        Each set's genes (decreasing PIP) and its purity (smallest absolute correlation within it).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> g = rng.normal(size=50)
    >>> Z = np.column_stack([g, g + 0.1 * rng.normal(size=50), rng.normal(size=50)])
    >>> Z = (Z - Z.mean(0)) / Z.std(0)
    >>> sets = credible_sets(np.array([0.5, 0.48, 0.3]), Z, prior_inclusion=0.02)
    >>> [genes.tolist() for genes, _ in sets]
    [[0, 1]]
    """
    pip = np.asarray(pip, dtype=np.float64)
    if prior_inclusion >= 1.0:
        return []  # every gene is in the model: nothing to tell apart
    odds = CREDIBLE_MIN_BAYES_FACTOR * prior_inclusion / (1.0 - prior_inclusion)
    min_pip = odds / (1.0 + odds)
    order = np.argsort(-pip, kind="stable")
    order = order[pip[order] >= min_pip][:CREDIBLE_MAX_CANDIDATES]
    if order.size < 2:
        return []
    C = order.size
    Zc = Z[:, order]
    R = np.abs(Zc.T @ Zc) / Z.shape[0]  # (C, C) absolute correlations
    free = np.ones(C, dtype=bool)
    sets = []
    for s in range(C):
        if not free[s] or pip[order[s]] >= coverage:
            continue
        members = [s]
        total = pip[order[s]]
        ok = free.copy()
        ok[s] = False
        ok &= R[s] >= min_correlation
        for h in range(s + 1, C):
            if total >= coverage:
                break
            if ok[h]:
                members.append(h)
                total += pip[order[h]]
                ok &= R[h] >= min_correlation
        if total >= coverage and len(members) >= 2:
            free[members] = False
            sub = R[np.ix_(members, members)]
            sets.append((order[members], float(sub.min())))
    return sets


class SpikeSlabClassifier(ClassifierMixin, SelectorMixin, _FamilyEstimator):
    """Probit classifier with spike-and-slab priors on the genes, fitted by Expectation Propagation.

    The model is ``P(y = +1 | x) = Phi(w . z + b)`` on the standardised genes ``z``, where each
    gene is in the model with probability ``p0`` (then ``w_j ~ N(0, slab_variance)``) or out of it
    (``w_j = 0``), and the intercept ``b ~ N(0, 1 / intercept_alpha)`` is always in. EP fits the
    posterior and gives each gene's posterior inclusion probability (``pip_``): the probability,
    given the data, that the gene belongs in the model, with the uncertainty about the other genes
    averaged over instead of fixed at one chosen model. ``p0`` is not fixed: with ``prior_genes``
    it is integrated over a hyperprior (see Notes). With more than two classes, one binary problem
    per class is fitted (the class against the rest).

    Parameters
    ----------
    prior_genes : tuple of float, default=(1, 2, 5, 10, 20)
        The hyperprior on ``p0``: the expected numbers of genes in the model, ``E``, equally likely
        a priori (``p0 = E / p`` for ``p`` usable genes, at most 0.5). Each is one EP fit; the fits
        are averaged with weights proportional to their EP evidence. The default expresses "a few
        genes, from one to about twenty, drive the phenotype".
    prior_inclusion : float in (0, 1] or None, default=None
        A fixed ``p0`` instead of the hyperprior (``prior_genes`` is then unused). 1 puts every
        gene in the model: the Gaussian prior of :func:`ardselect.diagnostics.ep_probit` with precision
        ``1 / slab_variance``.
    slab_variance : float > 0, default=1.0
        Prior variance of an included gene's weight, in latent (probit) units per standard deviation
        of the gene: a gene in the model typically moves the latent by about one unit per sd.
    fit_intercept : bool, default=True
        Hold an intercept in the model (genes are then centred before scaling).
    intercept_alpha : float > 0, default=0.01
        Prior precision of the intercept: 0.01 is a prior sd of 10 latent units, nearly flat.
    threshold : float in [0, 1], default=0.5
        ``get_support`` selects the genes whose PIP exceeds it (in any binary problem): 0.5 gives the
        median probability model.
    coverage : float in (0, 1], default=0.95
        Credible sets: the sum of PIPs a set of interchangeable genes must reach (see
        :func:`credible_sets`; only genes whose posterior odds of inclusion are at least 10 times
        their prior odds can be members).
    min_correlation : float in [0, 1], default=0.5
        Credible sets: the smallest absolute correlation (on the training data) between any two
        genes of a set.
    damping : float in (0, 1], default=0.5
        Mixing fraction of the accelerated EP iteration.
    tol : float > 0, default=1e-4
        EP stops when no sweep proposes to change a site parameter by more than ``tol`` relative to
        ``1 + |value|``.
    max_iter : int >= 1, default=200
        Maximum number of EP sweeps per hyperprior node (converged nodes took at most 87 on the
        shared data sets).
    constant_features : {"warn", "ignore", "raise"}, default="warn"
        Constant genes are left out of the model (PIP 0) with a :class:`ConstantFeatureWarning`,
        silently, or refused with a :class:`~ardselect.exceptions.DataError`.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    coef_ : ndarray of shape (n_problems, n_features_in_)
        Posterior mean of the weights in the units of the input (genes out of the model count as
        0). One row per binary problem: one for two classes (``classes_[1]`` against
        ``classes_[0]``), one per class otherwise. Never holds the intercept.
    coef_sd_ : ndarray of shape (n_problems, n_features_in_)
        Posterior standard deviation of the weights.
    pip_ : ndarray of shape (n_problems, n_features_in_)
        Posterior inclusion probability of each gene (0 for constant genes).
    alpha_ : ndarray of shape (n_problems, n_features_in_)
        Prior precision of an included gene's weight in the units of the input (``sd_j^2 /
        slab_variance``), ``inf`` for constant genes.
    intercept_, intercept_sd_ : ndarray of shape (n_problems,)
        Posterior mean and sd of the intercept in the units of the input (0 without an intercept).
    intercept_alpha_ : ndarray of shape (n_problems,)
        The intercept's prior precision (``inf`` without an intercept).
    prior_inclusion_ : ndarray of shape (n_problems,)
        Posterior mean of ``p0`` (``prior_inclusion`` when fixed).
    log_evidence_ : ndarray of shape (n_problems,)
        EP's log marginal likelihood, averaged over the hyperprior.
    hyper_results_ : pandas.DataFrame
        One row per binary problem and hyperprior node: ``class``, ``expected_genes``,
        ``prior_inclusion``, ``log_evidence``, ``weight`` (posterior weight of the node),
        ``converged``, ``n_iter``.
    credible_sets_ : pandas.DataFrame
        One row per gene of a credible set: ``class``, ``set`` (1, 2, ... per class), ``feature``,
        ``pip``, ``set_pip`` (the set's sum), ``size``, ``purity`` (smallest absolute correlation).
    support_ : ndarray of bool of shape (n_features_in_,)
        Genes with PIP above ``threshold`` in some binary problem.
    n_iter_ : int
        Largest number of EP sweeps a binary problem took, its hyperprior nodes together.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when X has string column names.

    See Also
    --------
    ardselect.ARDClassifier : ARD probit by EP along a sequential path (one chosen model).
    ardselect.diagnostics.ep_probit : EP with a fixed Gaussian prior.

    Notes
    -----
    Why a hyperprior and not the evidence: with far more genes than samples the EP evidence is
    nearly flat in ``p0`` and the slab variance, and its maximum often sits at a dense model (many
    small weights, every PIP near ``p0``) or at the widest slab; the inclusion probabilities of such
    a model do not single out genes. Averaging over ``prior_genes`` keeps the model sparse, as a gene
    signature is meant to be, and lets the evidence weigh how sparse. The guide page
    ``docs/guide/spike-slab.md`` has the measurements.

    EP runs in float64 whatever the input dtype. Every gene enters every EP sweep, so sparse input is
    made dense once, and a dask array is gathered into memory; the algebra runs in sample space
    (``n x n`` matrices) when genes outnumber samples. Genes are centred and scaled to unit variance
    (to unit root mean square without an intercept), which makes ``slab_variance`` a statement per
    standard deviation of a gene; ``coef_`` is reported back in the input's units. The hyperprior's
    nodes are fitted from the densest down, each EP warm-started from the previous one.

    References
    ----------
    Hernandez-Lobato, D., Hernandez-Lobato, J. M., Suarez, A. (2010). Expectation propagation for
    microarray data classification. Pattern Recognition Letters 31, 1618-1626.
    Hernandez-Lobato, J. M., Hernandez-Lobato, D., Suarez, A. (2015). Expectation propagation in
    linear regression models with spike-and-slab priors. Machine Learning 99, 437-487.

    Examples
    --------
    >>> import numpy as np
    >>> from ardselect import SpikeSlabClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(60, 40))
    >>> y = (X[:, 3] - X[:, 7] + 0.5 * rng.normal(size=60) > 0).astype(int)
    >>> clf = SpikeSlabClassifier().fit(X, y)
    >>> np.flatnonzero(clf.get_support()).tolist()
    [3, 7]
    >>> clf.predict_proba(X[:2]).shape
    (2, 2)
    """

    #: Every gene enters every EP sweep: ``_validate_x`` makes sparse input dense (and gathers a
    #: dask array, as for every estimator of the family).
    _dense_x = True

    _constraints: dict = {
        "prior_genes": [tuple, list],
        "prior_inclusion": [Interval(Real, 0, 1, closed="right"), None],
        "slab_variance": [Interval(Real, 0, None, closed="neither")],
        "fit_intercept": ["boolean"],
        "intercept_alpha": [Interval(Real, 0, None, closed="neither")],
        "threshold": [Interval(Real, 0, 1, closed="both")],
        "coverage": [Interval(Real, 0, 1, closed="right")],
        "min_correlation": [Interval(Real, 0, 1, closed="both")],
        "damping": [Interval(Real, 0, 1, closed="right")],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "constant_features": [Options({"warn", "ignore", "raise"})],
    }

    def __init__(self, *, prior_genes=(1, 2, 5, 10, 20), prior_inclusion=None, slab_variance=1.0,
                 fit_intercept=True, intercept_alpha=INTERCEPT_ALPHA, threshold=0.5, coverage=0.95,
                 min_correlation=0.5, damping=0.5, tol=1e-4, max_iter=200,
                 constant_features="warn"):
        self.prior_genes = prior_genes
        self.prior_inclusion = prior_inclusion
        self.slab_variance = slab_variance
        self.fit_intercept = fit_intercept
        self.intercept_alpha = intercept_alpha
        self.threshold = threshold
        self.coverage = coverage
        self.min_correlation = min_correlation
        self.damping = damping
        self.tol = tol
        self.max_iter = max_iter
        self.constant_features = constant_features

    def _nodes(self, p):
        """Prior inclusion probabilities of the hyperprior's nodes (decreasing) and their priors."""
        if self.prior_inclusion is not None:
            p0 = float(self.prior_inclusion)
            return np.array([p0]), np.zeros(1), np.array([p0 * p])
        genes = np.asarray(self.prior_genes, dtype=np.float64)
        if genes.ndim != 1 or genes.size == 0 or not np.all(np.isfinite(genes) & (genes > 0)):
            msg = (f"prior_genes must be a non-empty tuple of positive numbers (expected numbers of "
                   f"genes in the model); got {self.prior_genes!r}.")
            raise ValueError(msg)
        p0 = np.minimum(genes / max(p, 1), MAX_NODE_P0)
        # Nodes that coincide (few genes: E / p capped) pool their prior weight.
        uniq, counts = np.unique(p0, return_counts=True)
        order = np.argsort(-uniq)
        expected = np.round(uniq[order] * max(p, 1), 9)  # E again, or p / 2 where capped
        return uniq[order], np.log(counts[order] / genes.size), expected

    # ------------------------------------------------------------------ fit
    def fit(self, X, y):
        """Fit one spike-and-slab probit model per binary problem.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array} of shape (n_samples, n_features)
            Training data (samples x genes). NaN or infinite values raise :class:`DataError`.
        y : array-like of shape (n_samples,)
            Class labels: {0, 1}, {-1, +1}, booleans, strings; more than two classes are fitted
            one-vs-rest.

        Returns
        -------
        self : SpikeSlabClassifier
        """
        check_params(self)
        X = self._validate_x(X, reset=True)
        classes, y_idx = self._class_labels(y, X.shape[0])
        n, n_features = X.shape
        usable = ~constant_columns(X)
        self._constant_features(~usable, self.constant_features, stacklevel=2)
        self._usable = np.flatnonzero(usable)
        Xu = X[:, usable]
        self._center = Xu.mean(axis=0) if self.fit_intercept else np.zeros(Xu.shape[1])
        self._scale = np.sqrt(np.mean((Xu - self._center) ** 2, axis=0))
        Z = (Xu - self._center) / self._scale  # (n, p)
        problems = [1] if classes.size == 2 else list(range(classes.size))
        nodes, log_prior, expected = self._nodes(Z.shape[1])
        self._prior_pip = float(np.exp(log_prior) @ nodes)  # P(gene in) before the data
        # The posterior's covariance in sample space is built from the training rows: a portable
        # model (ardselect.model) needs them when genes outnumber samples.
        d = Z.shape[1] + int(self.fit_intercept)
        self._design = Z if d > n else None
        self._mixtures, rows, n_iter = [], [], []
        # EP's products are on matrices of tens to hundreds of rows, where BLAS threads cost more
        # than they give (engine/_parallel.py): one thread, as the ARD path runs.
        with one_blas_thread():
            for k in problems:
                t = np.where(y_idx == k, 1.0, -1.0)
                mix, table, sweeps = self._fit_problem(Z, t, nodes, log_prior, expected,
                                                       classes[k])
                self._mixtures.append(mix)
                rows.append(table)
                n_iter.append(sweeps)
        self.n_iter_ = int(max(n_iter))
        self.hyper_results_ = pd.concat(rows, ignore_index=True)
        self._set_summaries(Z, n_features, [classes[k] for k in problems])
        return self

    def _fit_problem(self, Z, t, nodes, log_prior, expected, positive):
        """The hyperprior's nodes for one signed problem, densest first, each warm-started."""
        P = t[:, None] * Z
        icpt = t if self.fit_intercept else None
        fits, sweeps = [], 0
        start = None

        def ep(p0, start):
            return run_spikeslab_ep(P, prior_inclusion=p0, slab_variance=self.slab_variance,
                                    intercept=icpt, intercept_alpha=self.intercept_alpha,
                                    damping=self.damping, tol=self.tol, max_iter=self.max_iter,
                                    start=start)

        # EP from a cold start can fail at a very sparse prior (the first sweeps overshoot); from
        # the fit of a denser prior it does not. A first node sparser than CONTINUATION_GENES
        # expected genes is reached by a continuation: fits at p0 four times smaller each time,
        # each warm-starting the next, not part of the average.
        p0_start = min(MAX_NODE_P0, CONTINUATION_GENES / max(Z.shape[1], 1))
        for p0 in p0_start / 4.0 ** np.arange(int(np.log(p0_start / nodes[0]) / np.log(4.0)) + 1):
            if p0 <= nodes[0] * (1 + 1e-12):
                break
            st = ep(p0, start)
            sweeps += st.n_iter
            start = st if st.converged else start
        for p0 in nodes:
            st = ep(p0, start)
            sweeps += st.n_iter
            fits.append(st)
            start = st if st.converged else start
        conv = np.array([f.converged for f in fits])
        log_ev = np.array([f.log_evidence for f in fits])
        # Unconverged nodes have no trustworthy evidence: they are left out unless none converged.
        use = conv if conv.any() else np.ones_like(conv)
        log_w = np.where(use, log_ev + log_prior, -np.inf)
        weights = np.exp(log_w - logsumexp(log_w))
        if not conv.all():
            bad = ", ".join(f"{e:g}" if np.isfinite(e) else f"p0={p:g}"
                            for e, p in zip(expected[~conv], nodes[~conv], strict=True))
            warnings.warn(
                f"EP did not converge in {self.max_iter} sweeps for class {label(positive)} at "
                f"{int((~conv).sum())} hyperprior node(s) (expected genes {bad}); "
                + ("they are left out of the average. " if conv.any() else "")
                + "Raise max_iter or lower damping.", ConvergenceWarning, stacklevel=3)
        keep = weights > 0
        mix = _Mixture([f for f, k in zip(fits, keep, strict=True) if k], weights[keep],
                       expected[keep], log_prior[keep])
        mix.signs = t
        table = pd.DataFrame({
            "class": positive, "expected_genes": expected, "prior_inclusion": nodes,
            "log_evidence": log_ev, "weight": weights, "converged": conv,
            "n_iter": [f.n_iter for f in fits]})
        # log of sum_g prior_g Z_g: the evidence averaged over the hyperprior's (used) nodes.
        mix.log_evidence = float(logsumexp(np.where(use, log_ev + log_prior, -np.inf)))
        return mix, table, sweeps

    def _set_summaries(self, Z, n_features, positives):
        """Weights, PIPs and credible sets in the units of the input, from the mixtures."""
        k = len(self._mixtures)
        p = self._usable.size
        cols, c = self._usable, self._scale
        self.coef_ = np.zeros((k, n_features))
        self.coef_sd_ = np.zeros((k, n_features))
        self.pip_ = np.zeros((k, n_features))
        self.alpha_ = np.full((k, n_features), np.inf)
        self.alpha_[:, cols] = c**2 / self.slab_variance
        self._p_sign = np.full((k, n_features), np.nan)
        self.intercept_ = np.zeros(k)
        self.intercept_sd_ = np.zeros(k)
        self.intercept_alpha_ = np.full(k, float(self.intercept_alpha) if self.fit_intercept
                                        else np.inf)
        self.prior_inclusion_ = np.zeros(k)
        self.log_evidence_ = np.zeros(k)
        frames = []
        origin = self._rows(np.zeros((1, n_features)))  # the input's origin, standardised
        for i, mix in enumerate(self._mixtures):
            mean, var, pip, p_sign = mix.summaries(p)
            self.coef_[i, cols] = mean[:p] / c
            self.coef_sd_[i, cols] = np.sqrt(var[:p]) / c
            self.pip_[i, cols] = pip
            self._p_sign[i, cols] = p_sign
            if self.fit_intercept:
                _, _, m0, v0 = mix.log_proba(origin)
                self.intercept_[i] = float(m0[0])
                self.intercept_sd_[i] = float(np.sqrt(v0[0]))
            self.prior_inclusion_[i] = float(mix.weights @ [f.prior_inclusion for f in mix.fits])
            self.log_evidence_[i] = mix.log_evidence
            names = self._names()
            for s, (genes, purity) in enumerate(
                    credible_sets(pip, Z, prior_inclusion=self.prior_inclusion_[i],
                                  coverage=self.coverage, min_correlation=self.min_correlation),
                    start=1):
                frames.append(pd.DataFrame({
                    "class": positives[i], "set": s, "feature": names[cols[genes]],
                    "pip": pip[genes], "set_pip": float(pip[genes].sum()), "size": genes.size,
                    "purity": purity}))
        self.credible_sets_ = (pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
            {"class": pd.Series(dtype=object), "set": pd.Series(dtype=int),
             "feature": pd.Series(dtype=object), "pip": pd.Series(dtype=float),
             "set_pip": pd.Series(dtype=float), "size": pd.Series(dtype=int),
             "purity": pd.Series(dtype=float)}))
        self.support_ = (self.pip_ > self.threshold).any(axis=0)

    def _names(self):
        if hasattr(self, "feature_names_in_"):
            return np.asarray(self.feature_names_in_, dtype=object).astype(str)
        return np.array([f"x{i}" for i in range(self.n_features_in_)], dtype=object)

    def _rows(self, X):
        """Rows ``[z, 1]`` (standardised usable genes, then the intercept's 1) of input rows X."""
        Z = (X[:, self._usable] - self._center) / self._scale
        return np.column_stack([Z, np.ones(X.shape[0])]) if self.fit_intercept else Z

    # ------------------------------------------------------------------ prediction
    def _log_proba_problems(self, X):
        """Per problem: ``log P(+)``, ``log P(-)``, latent mean and variance, each ``(n, k)``."""
        check_is_fitted(self)
        Za = self._rows(self._validate_x(X, reset=False))
        out = [mix.log_proba(Za) for mix in self._mixtures]
        return tuple(np.array([o[j] for o in out]).T for j in range(4))

    def _latent(self, X):
        """Posterior mean and variance of each problem's latent (mixture moments), ``(n, k)`` each."""
        _, _, m, v = self._log_proba_problems(X)
        return m, v

    def predict_log_proba(self, X):
        """Log class probabilities, integrating over the posterior (and the hyperprior).

        Each binary problem's ``P(+) = sum_g w_g Phi(m_g / sqrt(1 + v_g))`` over the hyperprior's
        nodes ``g`` (``m_g, v_g`` the latent's posterior mean and variance under node ``g``). With
        more than two classes the one-vs-rest answers are combined as in
        :func:`ardselect.numerics._probit.ovr_log_proba`: a softmax of their log odds.

        Returns
        -------
        ndarray of shape (n_samples, n_classes), columns in ``classes_`` order.
        """
        lp, lm, _, _ = self._log_proba_problems(X)
        return combine_problems(lp, lm)

    def predict_proba(self, X):
        """Class probabilities (:meth:`predict_log_proba`, exponentiated).

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
        """
        return np.exp(self.predict_log_proba(X))

    def decision_function(self, X):
        """``Phi^-1`` of each binary problem's ``P(+)``: the score whose ``Phi`` is the probability.

        Returns
        -------
        ndarray of shape (n_samples,) or (n_samples, n_classes)
        """
        lp, _, _, _ = self._log_proba_problems(X)
        z = ndtri_exp(lp)
        return z[:, 0] if z.shape[1] == 1 else z

    def predict(self, X):
        """Most probable class (the argmax of :meth:`predict_proba`)."""
        best = np.argmax(self.predict_log_proba(X), axis=1)
        return self.classes_[best]

    # ------------------------------------------------------------------ selection
    def _get_support_mask(self):
        check_is_fitted(self)
        return self.support_

    def ranked_features(self):
        """Every gene ranked by its posterior inclusion probability, for each binary problem.

        Returns
        -------
        pandas.DataFrame
            Columns ``class``, ``rank`` (1 = highest PIP; ties keep input order), ``feature``,
            ``selected`` (PIP above ``threshold``), ``pip``, ``log_bf`` (the Bayes factor of the
            gene being in the model: its posterior log odds of inclusion minus its prior log odds,
            the prior inclusion probability averaged over the hyperprior's nodes; NaN for constant
            genes), ``weight`` and ``weight_sd`` (posterior mean and sd of the weight, input units),
            ``z`` (``weight / weight_sd``), ``p_sign`` (probability that the weight has the sign
            of ``weight`` given that the gene is in the model; NaN for constant genes),
            ``credible_set`` (the gene's set in ``credible_sets_``, <NA> if none) and
            ``set_pip``. Ordered by class, then rank.
        """
        check_is_fitted(self)
        names = self._names()
        frames = []
        positives = self.hyper_results_["class"].drop_duplicates().tolist()
        for i, positive in enumerate(positives):
            order = np.argsort(-self.pip_[i], kind="stable")
            sets = self.credible_sets_[self.credible_sets_["class"] == positive]
            set_of = dict(zip(sets["feature"], sets["set"], strict=True))
            set_pip = dict(zip(sets["feature"], sets["set_pip"], strict=True))
            feats = names[order]
            pip = self.pip_[i, order]
            usable = np.isfinite(self.alpha_[i, order])
            prior = self._prior_pip
            with np.errstate(divide="ignore", invalid="ignore"):
                log_bf = (np.log(pip) - np.log1p(-pip)) - (np.log(prior) - np.log1p(-prior))
                z = self.coef_[i, order] / self.coef_sd_[i, order]
            frames.append(pd.DataFrame({
                "class": positive,
                "rank": np.arange(1, names.size + 1),
                "feature": feats,
                "selected": pip > self.threshold,
                "pip": pip,
                "log_bf": np.where(usable, log_bf, np.nan),
                "weight": self.coef_[i, order],
                "weight_sd": self.coef_sd_[i, order],
                "z": np.where(usable, z, np.nan),
                "p_sign": self._p_sign[i, order],
                "credible_set": pd.array([set_of.get(f) for f in feats], dtype="Int64"),
                "set_pip": np.array([set_pip.get(f, np.nan) for f in feats], dtype=float),
            }))
        return pd.concat(frames, ignore_index=True)
