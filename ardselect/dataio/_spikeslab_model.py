"""The spike-and-slab model as plain data: what :class:`ardselect.model.PortableModel` stores and reads.

A fitted :class:`~ardselect.SpikeSlabClassifier` predicts, for each binary problem, with a mixture
over the hyperprior's nodes: ``P(+ | x) = sum_g w_g Phi(m_g / sqrt(1 + v_g))``, where ``m_g, v_g``
are the mean and variance of the latent under node ``g``'s Gaussian posterior of the weights of
*every* gene (no gene's weight is exactly zero). The model file keeps, per node, the factors
:class:`ardselect.numerics._ep.LatentPosterior` predicts from, so a prediction from the file runs the same
arithmetic as the estimator:

========================  ==========================================================================
field (per node)          meaning
========================  ==========================================================================
``weight``                the node's posterior weight ``w_g`` (the weights of a problem sum to 1)
``route``                 ``"weight"``: the factor is ``d x d``; ``"sample"``: it is ``n x n``
``alpha``                 ``(d,)`` prior precisions of ``(w, b)`` from the gene sites and the intercept
``prior_mean``            ``(d,)`` prior mean ``mu0`` of ``(w, b)`` from the gene sites
``mean_t``                ``(d,)`` posterior mean of the shifted weights, times ``sqrt(alpha)``
``tau``                   ``(n,)`` likelihood-site precisions (``"sample"`` only)
``chol``                  the lower Cholesky factor of ``B``, row ``i`` holding its first ``i + 1``
                          entries
========================  ==========================================================================

``d`` is the number of genes, plus one with an intercept (last). In sample space (``d > n``) the
posterior covariance is built from the training rows: the file then holds the standardised
training values of every gene (``design``, ``(n, p)``) and each problem's labels as +1 / -1
(``signs``). A spike-and-slab model file therefore carries its training data, in standardised form.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ..estimators._spikeslab_ep import _Mixture, combine_problems
from ..exceptions import ModelError
from ..numerics._ep import LatentPosterior
from ._model_schema import _CORRUPTED, _brief, _is_number, _numbers, _refuse

__all__ = ["SPIKESLAB", "SpikeSlabPredictive", "check_spikeslab_data", "spikeslab_model_data"]

#: The value of a model file's ``model`` field for the spike-and-slab model (absent: ARD).
SPIKESLAB = "spike-slab"
#: How far a problem's node weights may sum from 1 (they are written with full precision).
_WEIGHT_SUM_TOL = 1e-9


def spikeslab_model_data(estimator) -> dict:
    """The fields of a fitted :class:`~ardselect.SpikeSlabClassifier` a prediction needs.

    The model's genes are the estimator's usable input columns (``estimator._usable``, in order).
    Returns ``fit_intercept``, ``standardization`` (the estimator's own centring and scaling of
    those genes), ``problems`` (positive class filled in by the caller) and ``design`` (sample
    space only).
    """
    problems = []
    for mix in estimator._mixtures:
        nodes = []
        for weight, expected, fit in zip(mix.weights, mix.expected, mix.fits, strict=True):
            post = fit.post
            if post.route not in ("weight", "sample"):
                msg = f"a spike-and-slab fit with posterior route {post.route!r} has no portable form"
                raise ModelError(msg)
            L = np.asarray(post.L, dtype=np.float64)
            node = {
                "weight": float(weight),
                "expected_genes": float(expected),
                "prior_inclusion": float(fit.prior_inclusion),
                "route": post.route,
                "alpha": np.asarray(post.alpha, dtype=np.float64).tolist(),
                "prior_mean": np.asarray(fit.mu0, dtype=np.float64).tolist(),
                "mean_t": np.asarray(post.mean_t, dtype=np.float64).tolist(),
                "chol": [L[i, : i + 1].tolist() for i in range(L.shape[0])],
            }
            if post.route == "sample":
                node["tau"] = np.asarray(post.tau, dtype=np.float64).tolist()
            nodes.append(node)
        problem = {"nodes": nodes}
        if estimator._design is not None:
            problem["signs"] = [int(v) for v in mix.signs]
        problems.append(problem)
    data = {
        "fit_intercept": bool(estimator.fit_intercept),
        "standardization": {"center": np.asarray(estimator._center, dtype=np.float64).tolist(),
                            "scale": np.asarray(estimator._scale, dtype=np.float64).tolist()},
        "problems": problems,
    }
    if estimator._design is not None:
        data["design"] = np.asarray(estimator._design, dtype=np.float64).tolist()
    return data


def _matrix(value, field: str, n_rows: int, n_cols: int) -> None:
    """A list of ``n_rows`` lists of ``n_cols`` finite numbers."""
    if not isinstance(value, list) or len(value) != n_rows:
        size = f"{len(value)} rows" if isinstance(value, list) else _brief(value)
        msg = (f"model field {field} must be a list of {n_rows} rows (one per training sample), "
               f"got {size}; {_CORRUPTED}")
        raise ModelError(msg)
    for r, row in enumerate(value):
        _numbers(row, f"{field}[{r}]", n_cols)


def _positive(value, field: str, n: int, *, zero: bool = False) -> np.ndarray:
    """``n`` finite numbers, each positive (or zero with ``zero``)."""
    values = _numbers(value, field, n)
    bad = values < 0 if zero else values <= 0
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        _refuse(f"{field}[{k}]", "a number >= 0" if zero else "a positive number", value[k])
    return values


def _check_chol(value, field: str, size: int) -> None:
    """A lower triangle of ``size`` rows, row ``i`` of ``i + 1`` numbers, positive diagonal."""
    if not isinstance(value, list) or len(value) != size:
        got = f"{len(value)} rows" if isinstance(value, list) else _brief(value)
        msg = (f"model field {field} must be a lower triangle of {size} rows, got {got}; "
               f"{_CORRUPTED}")
        raise ModelError(msg)
    for i, row in enumerate(value):
        _numbers(row, f"{field}[{i}]", i + 1)
        if row[i] <= 0:
            _refuse(f"{field}[{i}][{i}]", "a positive number (a Cholesky factor's diagonal)",
                    row[i])


def _check_node(node, field: str, d: int, n: int | None) -> float:
    """One hyperprior node's fields; returns its weight."""
    if not isinstance(node, Mapping):
        _refuse(field, "an object", node)
    weight = node.get("weight")
    if not (_is_number(weight) and 0 < weight <= 1):
        _refuse(f"{field}.weight", "a number in (0, 1]", weight)
    route = node.get("route")
    if route not in ("weight", "sample"):
        _refuse(f"{field}.route", "weight or sample", route)
    _positive(node.get("alpha"), f"{field}.alpha", d)
    _numbers(node.get("prior_mean"), f"{field}.prior_mean", d)
    _numbers(node.get("mean_t"), f"{field}.mean_t", d)
    if route == "sample":
        if n is None:
            _refuse("design", "the training rows (a node is in sample space)", None, shown=False)
        _positive(node.get("tau"), f"{field}.tau", n, zero=True)
    _check_chol(node.get("chol"), f"{field}.chol", d if route == "weight" else n)
    return float(weight)


def check_spikeslab_data(data: Mapping, n_features: int, positives) -> None:
    """The spike-and-slab fields of a model (``problems`` a list of one per positive, checked)."""
    if data.get("covariates") is not None:
        _refuse("covariates", "absent (the spike-and-slab model holds no covariates)",
                shown=False)
    intercept = data.get("fit_intercept")
    if not isinstance(intercept, bool):
        _refuse("fit_intercept", "true or false", intercept)
    std = data.get("standardization")
    if not isinstance(std, Mapping):
        _refuse("standardization", "an object", std)
    _numbers(std.get("center"), "standardization.center", n_features,
             "finite numbers (one per gene)")
    _positive(std.get("scale"), "standardization.scale", n_features)
    design = data.get("design")
    n = None
    if design is not None:
        n = len(design) if isinstance(design, list) else 0
        if n < 1:
            _refuse("design", "a list of training rows", design)
        _matrix(design, "design", n, n_features)
    d = n_features + int(intercept)
    for k, (prob, positive) in enumerate(zip(data["problems"], positives, strict=True)):
        field = f"problems[{k}]"
        if not isinstance(prob, Mapping):
            _refuse(field, "an object", prob)
        if "positive" in prob and prob["positive"] != positive:
            _refuse(f"{field}.positive", f"the class {_brief(positive)}", prob["positive"])
        nodes = prob.get("nodes")
        if not isinstance(nodes, list) or not nodes:
            _refuse(f"{field}.nodes", "a non-empty list of hyperprior nodes", nodes)
        total = sum(_check_node(node, f"{field}.nodes[{g}]", d, n)
                    for g, node in enumerate(nodes))
        if abs(total - 1.0) > _WEIGHT_SUM_TOL:
            msg = (f"model field {field}.nodes: the node weights must sum to 1, got "
                   f"{total:.12g}; {_CORRUPTED}")
            raise ModelError(msg)
        if n is not None:
            signs = prob.get("signs")
            if not isinstance(signs, list) or len(signs) != n or any(
                    s not in (1, -1) or isinstance(s, bool) for s in signs):
                _refuse(f"{field}.signs", f"a list of {n} labels +1 / -1", signs)


class _Node:
    """One hyperprior node: the latent's posterior mean and variance, as the estimator's node."""

    def __init__(self, post: LatentPosterior, mu0: np.ndarray):
        self.post = post
        self.mu0 = mu0

    def latent(self, Za):
        """Posterior mean and variance of the latent at rows ``Za`` (``(m, d)``)."""
        m, v = self.post.latent(Za)
        return Za @ self.mu0 + m, v


def _lower(rows) -> np.ndarray:
    """The square lower-triangular matrix whose row ``i`` starts with ``rows[i]``."""
    L = np.zeros((len(rows), len(rows)))
    for i, row in enumerate(rows):
        L[i, : i + 1] = row
    return L


def _posterior(node, P) -> LatentPosterior:
    """The node's :class:`LatentPosterior`, as the fit left it (what ``latent`` reads)."""
    post = LatentPosterior.__new__(LatentPosterior)
    post.alpha = np.asarray(node["alpha"], dtype=np.float64)
    post.inv_sqrt_alpha = 1.0 / np.sqrt(post.alpha)  # as GaussianPrior computes it
    post.route = node["route"]
    post.mean_t = np.asarray(node["mean_t"], dtype=np.float64)
    post.L = _lower(node["chol"])
    if post.route == "sample":
        post.tau = np.asarray(node["tau"], dtype=np.float64)
        post.s = np.sqrt(post.tau)
        post.Pt = P * post.inv_sqrt_alpha  # (n, d) alpha-scaled signed design
    return post


class SpikeSlabPredictive:
    """The class probabilities of a spike-and-slab model file (its fields checked beforehand)."""

    def __init__(self, data: Mapping):
        self.fit_intercept = bool(data["fit_intercept"])
        std = data["standardization"]
        self.center = np.asarray(std["center"], dtype=np.float64)
        self.scale = np.asarray(std["scale"], dtype=np.float64)
        design = data.get("design")
        self._design = None if design is None else np.asarray(design, dtype=np.float64)
        self.problems = []
        for prob in data["problems"]:
            P = None
            if self._design is not None:
                t = np.asarray(prob["signs"], dtype=np.float64)
                P = t[:, None] * self._design  # as the fit signs its rows
                if self.fit_intercept:
                    P = np.column_stack([P, t])
            nodes = [_Node(_posterior(node, P), np.asarray(node["prior_mean"], dtype=np.float64))
                     for node in prob["nodes"]]
            weights = np.array([node["weight"] for node in prob["nodes"]], dtype=np.float64)
            self.problems.append(_Mixture(nodes, weights, None, None))

    def log_proba(self, Z) -> np.ndarray:
        """Log class probabilities, ``(n, n_classes)``, for rows ``Z`` after the preprocessing."""
        Z = (np.asarray(Z, dtype=np.float64) - self.center) / self.scale
        Za = np.column_stack([Z, np.ones(Z.shape[0])]) if self.fit_intercept else Z
        out = [mix.log_proba(Za) for mix in self.problems]  # what the estimator runs
        lp = np.array([o[0] for o in out]).T  # (n, k)
        lm = np.array([o[1] for o in out]).T
        return combine_problems(lp, lm)
