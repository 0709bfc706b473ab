"""Inner cross-validation for ``ARDClassifier(criterion="cv")``: how many genes, and how confident.

Every score computed on the training data after the genes were chosen (the EP evidence, the EP
leave-one-out error or density) is optimistic for the models that selection favoured, and more so
the harder the data. The honest remedy is the one glmnet and scikit-learn use: refit on part of the
training data and score on the rest.

The ARD path (and its pruning tail, :meth:`ardselect.engine._sequential.SequentialPath.prune`) holds a
model of every size of :data:`ardselect.engine._problem.SIZE_GRID` up to its largest: for each size, the path step of that
many genes with the largest EP evidence. The inner cross-validation runs the same path on the
training part of each of ``n_folds`` stratified folds and scores the held-out part at every size,
as glmnet scores every ``lambda`` of its path: the *frontier* of held-out log-loss against the
number of genes. The size chosen on the frontier is taken from the path of the whole training set.

Each size's held-out latents are pooled over the folds: their posterior mean ``m`` and variance
``v`` give the probit predictive ``Phi(m / sqrt(1 + v))``. Three calibration constants are fitted
to them by maximum held-out likelihood, ``P = Phi(a + T m / sqrt(1 + s v))``:

* the *temperature* ``T`` in ``[T_MIN, 1]``. It only ever softens a model, undoing the
  overconfidence that selection on the training data leaves in the posterior; it never sharpens one
  (on separable data the held-out likelihood would push ``T`` to infinity);
* the *offset* ``a``: with it a softened model moves toward the class frequencies, not toward
  one half (a model that predicts nothing falls back to the base rate);
* the *variance scale* ``s`` in ``[s_min, 1]`` (the estimator's ``variance_scale_min``): how much of
  the posterior variance of the latent the predictive counts. With far more genes than samples,
  most of ``v`` at a new sample is prior variance along directions the training samples never
  constrained; ``s`` can only sharpen, and only by discounting ``v``, so a prediction stays
  between the Bayesian predictive and a point estimate.

The size is chosen by the held-out log-loss after ``(a, T)`` (:func:`choose_size`): the lowest
(``rule="min"``), or the smallest within one standard error of the lowest (``rule="1se"``, glmnet's
``lambda.1se``). A model with genes must beat the intercept-only model (size 0, the class
frequencies) by ``null_se`` paired standard errors of the per-sample log-loss difference, else the
signature is empty. With more than two classes, the problems' calibrated answers are combined by
the odds rule with one more temperature, fitted the same way on the pooled held-out multi-class
log-loss.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.special import log_ndtr

from ..choices import groups_need_cv
from ..engine._design import as_design, dense
from ..engine._problem import run_binary, run_joint, sign_in_place, size_steps
from ..numerics._ep import LatentPosterior
from ..numerics._probit import moderated_latent, ovr_log_proba
from ._binary_fit import as_runs
from ._calibration import (
    S_MIN,
    Calibration,
    calibrated_latent,
    fit_calibration,
    fit_combine_temperature,
    fit_platt,
)
from ._panel import choose_panel

__all__ = [
    "NULL_SE",
    "PAPER_SE",
    "SMALL_N",
    "Frontier",
    "calibrate",
    "choose_by_cv",
    "choose_size",
    "cross_validate",
    "frontier",
    "step_latent",
]

#: Paired standard errors by which a model with genes must beat the intercept-only model.
NULL_SE = 1.0

#: ``cv_rule="min+paper"``: below this many training samples the paper-settings LOO model competes
#: with the frontier's choice.
SMALL_N = 500

#: Paired standard errors by which the paper-settings LOO model must beat the frontier's choice:
#: the frontier's held-out log-loss is the lowest of many sizes (optimistic), the LOO model's is
#: that of one rule.
PAPER_SE = 1.0

#: ``cv="holdout"``: one validation split holding out ``1 / HOLDOUT_FOLDS`` of the samples (the
#: first fold of the stratified ``HOLDOUT_FOLDS``-fold split).
HOLDOUT_FOLDS = 5


def step_latent(problem, step, rows):
    """Posterior mean and variance of the latent at ``rows`` under a recorded path step.

    ``problem`` is the fold's :class:`ardselect.engine._problem.EPProbitProblem`; its design is
    signed, so the posterior of the weights is the one of the positive class. ``rows`` are the
    unsigned, unit-RMS design rows of the held-out samples (all columns). The posterior is rebuilt
    from the step's stored EP sites, without further EP sweeps. Returns a ``(2, n)`` array: the
    means, then the variances (never negative).
    """
    tau, nu = step.state
    post = LatentPosterior(problem.columns(step.active), step.alpha, tau, nu)
    A = dense(rows[:, step.active])
    m, v = post.latent(A)
    return np.vstack([m, np.maximum(v, 0.0)])


def frontier(oof, t):
    """The held-out scores of every model size: one record per size, and the per-sample losses.

    ``oof`` maps a size (genes) to the ``(2, n)`` pooled held-out latent means and variances of
    that size's fold models, smallest first; ``t`` are the signed labels ``(n,)``. Each record
    holds ``n_genes``, ``cv_log_loss`` (after the offset and temperature, :func:`fit_platt`: what
    the choice compares) and its standard error over the samples, ``cv_error`` (the share of
    held-out samples on the wrong side, after the same calibration) and its binomial standard
    error, and the calibration: ``temperature`` and ``offset`` with ``variance_scale`` 1 and
    ``cv_log_loss_final`` equal to ``cv_log_loss`` (:func:`calibrate` fits the variance scale of
    the sizes that are kept). Returns ``(records, losses)``, ``losses`` mapping each size to its
    ``(n,)`` per-sample log-losses (the ones ``cv_log_loss`` averages).
    """
    t = np.asarray(t, dtype=np.float64)
    records, losses = [], {}
    for k, (m, v) in oof.items():
        z = moderated_latent(m, v)
        a, temp, ll = fit_platt(z, t)
        x = t * (a + temp * z)
        per = -log_ndtr(x)
        losses[k] = per
        err = float(np.mean(x <= 0.0))
        records.append({
            "n_genes": int(k),
            "cv_log_loss": ll,
            "cv_log_loss_se": float(np.std(per, ddof=1) / np.sqrt(per.size)),
            "cv_error": err,
            "cv_error_se": float(np.sqrt(err * (1.0 - err) / per.size)),
            "temperature": temp,
            "variance_scale": 1.0,
            "offset": a,
            "cv_log_loss_final": ll,
        })
    return records, losses


def calibrate(record, latent, t, s_min=S_MIN):
    """Fit a frontier record's full calibration (:func:`fit_calibration`) in place.

    ``latent`` is the size's ``(2, n)`` pooled held-out means and variances. Only the sizes a fit
    keeps (the chosen one and the one-standard-error one) are given their variance scale; the
    other records keep ``variance_scale`` 1 with their offset and temperature.
    """
    cal, final = fit_calibration(latent[0], latent[1], t, s_min)
    record.update({"temperature": cal.temperature, "variance_scale": cal.variance_scale,
                   "offset": cal.offset, "cv_log_loss_final": final})


def choose_size(records, losses, rule="min", null_se=NULL_SE):
    """Index into ``records`` (:func:`frontier`, smallest size first) of the chosen size.

    ``rule="min"``: the lowest ``cv_log_loss`` (the smaller size on ties); ``"1se"``: the
    smallest size whose ``cv_log_loss`` is within one standard error of the lowest. When the
    frontier holds the intercept-only model (size 0) and ``null_se`` is not None, a size with
    genes is kept only if its per-sample log-loss (``losses``, by size) is below that model's by
    at least ``null_se`` paired standard errors.

    Examples
    --------
    >>> import numpy as np
    >>> recs = [{"n_genes": k, "cv_log_loss": ll, "cv_log_loss_se": 0.02}
    ...         for k, ll in [(1, 0.30), (2, 0.25), (5, 0.24)]]
    >>> choose_size(recs, {}, "min"), choose_size(recs, {}, "1se")
    (2, 1)
    """
    means = np.array([r["cv_log_loss"] for r in records])
    best = int(np.argmin(means))  # the first minimum: the smaller size
    pick = best
    if rule == "1se":
        pick = int(np.flatnonzero(means <= means[best] + records[best]["cv_log_loss_se"]
                                  + 1e-12)[0])
    if null_se is not None and records[0]["n_genes"] == 0 and pick != 0:
        d = losses[records[pick]["n_genes"]] - losses[0]
        if d.size < 2 or np.mean(d) > -null_se * np.std(d, ddof=1) / np.sqrt(d.size):
            pick = 0
    return pick


# ---------------------------------------------------------------------------- the folds
def fold_design(Phi_s, allowed, icol, train, test):
    """A fold's training design, the genes that may enter there and its held-out rows.

    As a refit on the fold would: columns back to unit RMS on the fold's training part (the
    precision floor is defined on that scale), genes constant there left out. The held-out rows
    are scaled the same way. ``icol`` is the intercept's column, or an array of the columns held
    in every model (:attr:`~ardselect.engine._problem.PathSpec.nongene`). Returns
    ``(Phi_tr, allowed_f, rows)``.
    """
    from ..engine._basis import unit_rms
    from ..engine._validation import constant_columns

    Phi_tr, scale, nonzero = unit_rms(Phi_s[train])
    allowed_f = allowed & nonzero & ~constant_columns(Phi_tr)
    held = np.atleast_1d(icol)
    held = held[held >= 0]
    # The held columns stay as in the full fit: the intercept is constant by design, and a
    # covariate may be constant (a batch absent) within a fold.
    allowed_f[held] = allowed[held]
    rows = as_design(Phi_s).scaled_rows(test, scale)
    return Phi_tr, allowed_f, rows


def _held_out(run, icol, sizes, rows):
    """``{size: (latent, genes)}`` of one fold run: the held-out latents at each size's step."""
    out = {}
    for k, i in size_steps(run.steps, icol, sizes).items():
        st = run.steps[i]
        out[k] = (step_latent(run.problem, st, rows), st.active[~np.isin(st.active, icol)])
    return out


def fold_binary(spec, k, y_idx, Phi_s, allowed, train, test, label=None):
    """One problem (class ``k`` against the rest) refitted on a fold's training part.

    Returns ``{size: (latent, genes)}``: for every size of the fold's path, the ``(2, n_test)``
    posterior mean and variance of the held-out latents (:func:`step_latent`) and the columns of
    its genes. ``label`` names the class in the progress records.
    """
    Phi_tr, allowed_f, rows = fold_design(Phi_s, allowed, spec.nongene, train, test)
    t = np.where(y_idx[train] == k, 1.0, -1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the full fit reports its own warnings
        run = run_binary(spec, sign_in_place(Phi_tr, t), allowed_f, label)
        return _held_out(run, spec.nongene, spec.sizes, rows)


def fold_joint(spec, y_idx, Phi_s, allowed, train, test):
    """The shared-precision path (``multiclass="shared"``) refitted on a fold's training part.

    Returns one ``{size: (latent, genes)}`` per class, as :func:`fold_binary` does for one problem;
    every class holds the same genes at each size.
    """
    Phi_tr, allowed_f, rows = fold_design(Phi_s, allowed, spec.nongene, train, test)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the full fit reports its own warnings
        runs = run_joint(spec, Phi_tr, y_idx[train], allowed_f)
        return [_held_out(run, spec.nongene, spec.sizes, rows) for run in runs]


@dataclass
class Frontier:
    """One problem's frontier and the size chosen on it.

    ``records``: one per size (:func:`frontier`, with its ``step`` on the full path); ``chosen``:
    the index of the chosen record; ``frequency``: each column's share of the fold models of the
    chosen size that hold it, ``(m,)``; ``one_se``: the index of the size ``rule="1se"`` picks;
    ``latent``: the chosen size's calibrated held-out latent of every pooled sample held out;
    ``rows``: those samples' pooled indices (repeat ``r`` of sample ``i`` is ``r * n + i``);
    ``pooled``: a shared fit's pooled multi-class log-loss of each size compared (else None).
    """

    records: list
    chosen: int
    frequency: np.ndarray
    one_se: int
    latent: np.ndarray | None = None
    rows: np.ndarray | None = None
    pooled: dict | None = None

    def calibration(self, i):
        r = self.records[i]
        return Calibration(r["temperature"], r["variance_scale"], r["offset"])


def cross_validate(spec, runs, Phi_s, y_idx, problems, allowed, folds, run_tasks, *,
                   joint=False, s_min=S_MIN, rule="min", null_se=NULL_SE, max_genes=None,
                   panel=None, labels=None):
    """The frontier of every problem and the size chosen on it, from the fold refits.

    ``runs`` are the full training set's path runs (one per problem), ``problems`` the class index
    of each, ``folds`` the ``(train, test, offset)`` triples (``offset``: where a repeat's
    predictions start in the pooled arrays), ``run_tasks(fn, args)`` the executor. A size is
    compared only when the full path and every fold path hold it, and chosen only up to
    ``max_genes`` (the frontier still shows the larger sizes); ``labels`` name the problems'
    classes in the progress records. With ``joint`` one size is chosen
    for all classes, by the pooled multi-class log-loss (each class calibrated at that size).
    ``panel`` bounds the distinct genes of all problems together: with ``joint`` it is one more
    cap on the shared size, else the sizes come from :func:`choose_panel` (the summed log-loss
    of the problems, each at most the size it would choose on its own). Returns the problems'
    :class:`Frontier` (a ``joint`` one with ``pooled``: the pooled multi-class log-loss of every
    size compared) and the combination temperature.
    """
    n = y_idx.shape[0]
    n_pooled = max(off for _, _, off in folds) + n
    # The pooled rows some fold holds out: all of them with k folds, a fifth with a holdout.
    kept = np.unique(np.concatenate([off + te for _, te, off in folds]))
    if joint:
        per_fold = run_tasks(fold_joint, [(spec, y_idx, Phi_s, allowed, tr, te)
                                          for tr, te, _ in folds])
        results = [(i, off, te, res[i]) for (_, te, off), res in zip(folds, per_fold, strict=True)
                   for i in range(len(problems))]
    else:
        keys = [(i, off, tr, te) for tr, te, off in folds for i in range(len(problems))]
        names = labels if labels is not None else [None] * len(problems)
        tasks = [(spec, problems[i], y_idx, Phi_s, allowed, tr, te, names[i])
                 for i, _, tr, te in keys]
        results = [(i, off, te, res) for (i, off, _, te), res in
                   zip(keys, run_tasks(fold_binary, tasks), strict=True)]
    held = [{} for _ in problems]  # problem -> size -> [(offset, test, latent, genes)]
    for i, off, te, res in results:
        for k, (latent, genes) in res.items():
            held[i].setdefault(k, []).append((off, te, latent, genes))
    y_pooled = np.tile(y_idx, n_pooled // n)[kept]
    m = allowed.shape[0]
    tables = []
    for i, (k, run) in enumerate(zip(problems, runs, strict=True)):
        full = size_steps(run.steps, spec.nongene, spec.sizes)
        sizes = [s for s in full if len(held[i].get(s, ())) == len(folds)]
        oof = {}
        for s in sizes:
            arr = np.zeros((2, n_pooled))
            for off, te, latent, _ in held[i][s]:
                arr[:, off + te] = latent
            oof[s] = arr[:, kept]
        records, losses = frontier(oof, np.where(y_pooled == k, 1.0, -1.0))
        for r in records:
            r["step"] = full[r["n_genes"]]
        tables.append((records, losses, oof))
    cap = min((b for b in (max_genes, panel if joint else None) if b is not None), default=None)

    def eligible(records):
        """The records a choice may take: those within the gene budget (smallest first)."""
        return [r for r in records if cap is None or r["n_genes"] <= cap]

    pooled = None
    if joint:
        pick, pooled = _choose_joint([(eligible(rec), losses, oof) for rec, losses, oof in tables],
                                     y_pooled, rule, null_se)
        chosen = [pick] * len(problems)
    else:
        chosen = [choose_size(eligible(rec), losses, rule, null_se) for rec, losses, _ in tables]
        if panel is not None:
            genes = [[frozenset(np.setdiff1d(run.steps[r["step"]].active, spec.nongene).tolist())
                      for r in eligible(rec)] for (rec, _, _), run in zip(tables, runs, strict=True)]
            chosen = choose_panel([[r["cv_log_loss"] for r in eligible(rec)] for rec, _, _ in tables],
                                  genes, panel, upto=chosen)
    out = []
    for i, ((records, _, oof), c, k) in enumerate(zip(tables, chosen, problems, strict=True)):
        freq = np.zeros(m)
        for _, _, _, genes in held[i][records[c]["n_genes"]]:
            freq[genes] += 1.0
        one_se = choose_size(eligible(records), {}, "1se", null_se=None)
        t = np.where(y_pooled == k, 1.0, -1.0)
        for j in {c, one_se}:
            calibrate(records[j], oof[records[j]["n_genes"]], t, s_min)
        fr = Frontier(records, c, freq / len(folds), one_se, pooled=pooled)
        fr.latent = calibrated_latent(*oof[records[c]["n_genes"]], fr.calibration(c))
        fr.rows = kept
        out.append(fr)
    combine = 1.0
    if len(problems) > 1:
        z = np.column_stack([fr.latent for fr in out])
        combine = fit_combine_temperature(z, y_pooled)[0]
    return out, combine


def _choose_joint(tables, y_pooled, rule, null_se):
    """The one size of a shared fit, by the pooled multi-class log-loss of its calibrated classes.

    Sizes held by every class are compared: the lowest mean (``rule="min"``, the smaller size on
    ties) or the smallest within one standard error of it (``"1se"``); a size with genes must
    beat size 0 by ``null_se`` paired standard errors of the per-sample multi-class log-loss.
    Returns the chosen record's index and ``{size: pooled mean log-loss}`` of the sizes compared.
    """
    common = sorted(set.intersection(*[{r["n_genes"] for r in rec} for rec, _, _ in tables]))
    rows = np.arange(y_pooled.shape[0])
    per = {}
    for s in common:
        z = []
        for rec, _, oof in tables:
            r = next(r for r in rec if r["n_genes"] == s)
            cal = Calibration(r["temperature"], r["variance_scale"], r["offset"])
            z.append(calibrated_latent(*oof[s], cal))
        z = np.column_stack(z)
        temp = fit_combine_temperature(z, y_pooled)[0]
        per[s] = -ovr_log_proba(z, temp)[rows, y_pooled]
    best = min(common, key=lambda s: (float(np.mean(per[s])), s))
    if rule == "1se":
        se = float(np.std(per[best], ddof=1) / np.sqrt(per[best].size))
        best = next(s for s in common if np.mean(per[s]) <= np.mean(per[best]) + se + 1e-12)
    if common[0] == 0 and best != 0:
        d = per[best] - per[0]
        if np.mean(d) > -null_se * np.std(d, ddof=1) / np.sqrt(d.size):
            best = 0
    means = {s: float(np.mean(v)) for s, v in per.items()}
    return next(j for j, r in enumerate(tables[0][0]) if r["n_genes"] == best), means


def fold_paper(spec, k, y_idx, Phi_s, allowed, train, test):
    """The paper-settings path refitted on a fold's training part, and its ``"loo"`` model.

    Returns the ``(2, n_test)`` held-out latent means and variances of the step the ``"loo"``
    criterion picks on the fold's path, and the columns of its genes.
    """
    from ._binary_fit import path_choice

    Phi_tr, allowed_f, rows = fold_design(Phi_s, allowed, spec.nongene, train, test)
    t = np.where(y_idx[train] == k, 1.0, -1.0)
    held = np.atleast_1d(spec.nongene)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the full fit reports its own warnings
        run = run_binary(spec, sign_in_place(Phi_tr, t), allowed_f)
    sizes = [int(np.sum(~np.isin(s.active, held))) for s in run.steps[:run.n_path]]
    st = run.steps[path_choice(run.steps[:run.n_path], "loo", sizes)]
    return step_latent(run.problem, st, rows), st.active[~np.isin(st.active, held)]


def paper_challenge(fronts, spec, problems, y_idx, Phi_s, allowed, folds, tasks, *, s_min,
                    margin=PAPER_SE):
    """Score the paper-settings ``"loo"`` model on the folds of the frontier, problem by problem.

    ``spec`` is the paper settings' :class:`~ardselect.engine._problem.PathSpec`; ``fronts`` the
    problems' :class:`Frontier` (their ``latent`` and ``rows``: the chosen size's calibrated
    held-out latents on the pooled rows). Each fold's paper path is refitted and its ``"loo"``
    step predicts the fold's held-out samples; the pooled held-out latents are calibrated as the
    frontier's chosen size is (:func:`fit_calibration`). The LOO model wins a problem when its mean
    per-sample log-loss is below the frontier choice's by at least ``margin`` paired standard
    errors. Returns one dict per problem: ``won``, the calibrated held-out ``latent`` of the
    LOO model, its :class:`Calibration`, the columns' share of fold models holding them
    (``frequency``), and the scores (``frontier_log_loss``, ``loo_log_loss``, ``difference``,
    ``difference_se``).
    """
    n = y_idx.shape[0]
    n_pooled = max(off for _, _, off in folds) + n
    keys = [(i, off, tr, te) for tr, te, off in folds for i in range(len(problems))]
    res = tasks(fold_paper, [(spec, problems[i], y_idx, Phi_s, allowed, tr, te)
                             for i, _, tr, te in keys])
    out = []
    for i, (k, fr) in enumerate(zip(problems, fronts, strict=True)):
        arr = np.zeros((2, n_pooled))
        freq = np.zeros(allowed.shape[0])
        for (j, off, _, te), (latent, genes) in zip(keys, res, strict=True):
            if j == i:
                arr[:, off + te] = latent
                freq[genes] += 1.0
        arr = arr[:, fr.rows]
        t = np.where(np.tile(y_idx, n_pooled // n)[fr.rows] == k, 1.0, -1.0)
        cal, _ = fit_calibration(arr[0], arr[1], t, s_min)
        z = calibrated_latent(arr[0], arr[1], cal)
        d = -log_ndtr(t * z) + log_ndtr(t * fr.latent)  # LOO model minus frontier, per sample
        se = float(np.std(d, ddof=1) / np.sqrt(d.size)) if d.size > 1 else np.inf
        out.append({"won": bool(np.mean(d) < -margin * se), "latent": z, "calibration": cal,
                    "frequency": freq / len(folds),
                    "frontier_log_loss": float(np.mean(-log_ndtr(t * fr.latent))),
                    "loo_log_loss": float(np.mean(-log_ndtr(t * z))),
                    "difference": float(np.mean(d)), "difference_se": se})
    return out


def check_groups(groups, y, criterion):
    """``groups`` (one label per sample) as an array of strings, or None; checked against ``y``."""
    if groups is None:
        return None
    groups_need_cv(criterion)
    groups = np.asarray(groups, dtype=object)
    n = len(y)
    if groups.ndim != 1 or groups.shape[0] != n:
        msg = f"groups has shape {groups.shape} for {n} samples; give one group per sample"
        raise ValueError(msg)
    if pd.isna(groups).any():
        msg = f"groups has {int(pd.isna(groups).sum())} missing value(s); give every sample one"
        raise ValueError(msg)
    groups = groups.astype(str)
    if np.unique(groups).size < 2:
        msg = ("groups has a single group; at least 2 are needed to hold out whole groups "
               "(or fit without groups)")
        raise ValueError(msg)
    return groups


def make_folds(y_idx, n_folds, cv_repeats, random_state, groups=None, *, holdout=False):
    """The inner cross-validation's ``(train, test, offset)`` triples.

    Repeat ``r``'s held-out latents go to rows ``r * n ... (r + 1) * n - 1`` of the pooled
    predictions. Without groups, the folds are those of ``RepeatedStratifiedKFold`` (with one
    repeat, of ``StratifiedKFold``) with a seed drawn from ``random_state``; with groups,
    ``StratifiedGroupKFold`` shuffled with that seed plus the repeat's number, so that no group
    is on both sides of a fold. With ``holdout``, only the first fold of each repeat: one
    validation split holding out ``1 / n_folds`` of the samples.
    """
    if holdout:
        folds = make_folds(y_idx, n_folds, cv_repeats, random_state, groups)
        return folds[::n_folds] if groups is None else _first_of_repeats(folds)
    from sklearn.model_selection import RepeatedStratifiedKFold, StratifiedGroupKFold
    from sklearn.utils import check_random_state

    n = y_idx.shape[0]
    seed = check_random_state(random_state).randint(np.iinfo(np.int32).max)
    if groups is None:
        splitter = RepeatedStratifiedKFold(n_splits=n_folds, n_repeats=int(cv_repeats),
                                           random_state=seed)
        return [(tr, te, f // n_folds * n)
                for f, (tr, te) in enumerate(splitter.split(np.zeros(n), y_idx))]
    folds = []
    for r in range(int(cv_repeats)):
        splitter = StratifiedGroupKFold(n_splits=n_folds, shuffle=True,
                                        random_state=(seed + r) % np.iinfo(np.int32).max)
        with warnings.catch_warnings():
            # sklearn warns when a class has fewer groups than folds; the folds stay valid.
            warnings.simplefilter("ignore", UserWarning)
            folds.extend((tr, te, r * n) for tr, te in splitter.split(np.zeros(n), y_idx, groups))
    return folds


def _first_of_repeats(folds):
    """The first fold of each repeat (its ``offset`` is the repeat's ``r * n``)."""
    out, seen = [], set()
    for tr, te, off in folds:
        if off not in seen:
            seen.add(off)
            out.append((tr, te, off))
    return out


def group_table(fronts, y_idx, groups, combine_temperature):
    """Each group's held-out error and log-loss at the chosen sizes (pooled over repeats)."""
    n = y_idx.shape[0]
    z = np.column_stack([f.latent for f in fronts])
    sample = fronts[0].rows % n
    y_pooled = y_idx[sample]
    if len(fronts) == 1:  # two classes: the latent of classes_[1] against classes_[0]
        t = np.where(y_pooled == 1, 1.0, -1.0)
        loss = -log_ndtr(t * z[:, 0])
        wrong = (z[:, 0] > 0) != (y_pooled == 1)
    else:
        logp = ovr_log_proba(z, combine_temperature)
        loss = -logp[np.arange(y_pooled.shape[0]), y_pooled]
        wrong = np.argmax(logp, axis=1) != y_pooled
    frame = pd.DataFrame({"group": groups[sample], "sample": sample, "wrong": wrong,
                          "loss": loss})
    table = frame.groupby("group", sort=True).agg(
        n_samples=("sample", "nunique"), cv_error=("wrong", "mean"), cv_log_loss=("loss", "mean"))
    return table.reset_index()


def choose_by_cv(fits, spec, problems, y_idx, Phi_s, allowed, *, cv, cv_repeats, random_state,
                 s_min, rule, max_genes, joint, tasks, client=None, groups=None, paper=None,
                 panel=None):
    """Choose each problem's size and calibration by inner cross-validation.

    Sets ``cv_step``, ``step_calibration`` and ``frequency`` on every
    :class:`~ardselect.estimators._binary_fit.BinaryFit` of ``fits`` and returns ``(cv_results,
    combine_temperature, group_table)``: the table of ``ARDClassifier.cv_results_``, the
    temperature of the one-vs-rest combination and, with ``groups`` (held out whole by the folds,
    :func:`make_folds`), each group's held-out error and log-loss (else None). ``tasks(fn, args)``
    runs the fold refits; ``client`` is a dask Client (or falsy). ``cv`` is the number of folds,
    or ``"holdout"`` for one validation split; ``panel`` a budget of distinct genes over all
    problems (:func:`cross_validate`). A shared fit also sets ``joint_losses`` (the pooled
    multi-class log-loss by size) on every fit. Fewer than 2 samples in a class: the LOO choice
    instead, with a warning.

    ``paper``: ``(spec, fits)`` of the paper settings' full paths (``cv_rule="min+paper"``),
    or None. Each problem's LOO model of those settings then competes with the frontier's choice
    on the same folds (:func:`paper_challenge`); where it wins, its fit replaces the problem's
    in ``fits`` (in place), with the LOO step as ``cv_step``. The fourth value returned is then
    the table of ``ARDClassifier.cv_choice_`` (else None).
    """
    holdout = cv == "holdout"  # one validation split: the first of HOLDOUT_FOLDS folds
    cv = HOLDOUT_FOLDS if holdout else int(cv)
    smallest = int(np.bincount(y_idx).min())
    n_folds = min(cv, smallest)
    if groups is not None:
        n_folds = min(cv, int(np.unique(groups).size))
    if n_folds < 2:
        warnings.warn(
            f"criterion='cv' needs at least 2 samples of every class (the smallest class has "
            f"{smallest}); the model is chosen by criterion='loo' instead.", UserWarning,
            stacklevel=3)
        if panel is not None and not joint and len(fits) > 1:
            msg = (f"panel={panel} is chosen on the inner cross-validation's frontier, which "
                   f"needs at least 2 samples of every class (the smallest class has {smallest})")
            raise ValueError(msg)
        cap = min((b for b in (max_genes, panel) if b is not None), default=None)
        for fit in fits:
            fit.cv_step = fit.choose("loo", cap)
        return pd.DataFrame(), 1.0, None, None
    folds = make_folds(y_idx, n_folds, cv_repeats, random_state, groups, holdout=holdout)
    design = client.scatter(Phi_s, broadcast=True, hash=False) if client else Phi_s
    fronts, combine_temperature = cross_validate(
        spec, as_runs(fits), design, y_idx, problems, allowed, folds, tasks, joint=joint,
        s_min=s_min, rule=rule, null_se=NULL_SE, max_genes=max_genes, panel=panel,
        labels=[f.positive_class for f in fits])
    rows = []
    for fit, front in zip(fits, fronts, strict=True):
        recs = front.records
        fit.step_calibration = {r["step"]: front.calibration(i) for i, r in enumerate(recs)}
        fit.cv_step = recs[front.chosen]["step"]
        fit.frequency = front.frequency
        fit.joint_losses = front.pooled
        one_se = front.one_se
        for i, r in enumerate(recs):
            rows.append({"class": fit.positive_class, **r, "chosen": i == front.chosen,
                         "one_se": i == one_se})
    cols = ["class", "n_genes", "step", "cv_log_loss", "cv_log_loss_se", "cv_error",
            "cv_error_se", "temperature", "variance_scale", "offset", "cv_log_loss_final",
            "chosen", "one_se"]
    choice = None
    if paper is not None:
        paper_spec, paper_fits = paper
        challenge = paper_challenge(fronts, paper_spec, problems, y_idx, design, allowed, folds,
                                    tasks, s_min=s_min)
        choice = []
        for i, (fit, front, c) in enumerate(zip(fits, fronts, challenge, strict=True)):
            alt = paper_fits[i]
            alt.cv_step = alt.choose("loo")
            alt.step_calibration = {alt.cv_step: c["calibration"]}
            alt.frequency = c["frequency"]
            choice.append({"class": fit.positive_class, "rule": "loo" if c["won"] else "frontier",
                           "frontier_genes": fit.n_genes(fit.steps[fit.cv_step].active),
                           "loo_genes": alt.n_genes(alt.steps[alt.cv_step].active),
                           **{key: c[key] for key in ("frontier_log_loss", "loo_log_loss",
                                                      "difference", "difference_se")}})
            if c["won"]:
                fits[i] = alt
                front.latent = c["latent"]
        if len(problems) > 1 and any(c["won"] for c in challenge):
            z = np.column_stack([fr.latent for fr in fronts])
            combine_temperature = fit_combine_temperature(z, np.tile(y_idx, 1 + max(
                off for _, _, off in folds) // y_idx.shape[0])[fronts[0].rows])[0]
        choice = pd.DataFrame(choice)
    by_group = (None if groups is None
                else group_table(fronts, y_idx, groups, combine_temperature))
    return pd.DataFrame(rows, columns=cols), combine_temperature, by_group, choice
