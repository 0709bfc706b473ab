"""Model choice along the ARD path (Qi et al. 2004, sec. 3.4).

* ``"evidence"``: the step with the largest EP evidence (evidence-ARD-EP).
* ``"loo"``: the smallest EP leave-one-out error count (eq. 12, predictive-ARD-EP). The count is
  discrete, so ties go to the *first* such step on the path, "the one with the smaller evidence".
* ``"loo-prob"``: the smallest LOO error probability (eq. 13, predictive_Prob-ARD-EP); ties to the first.
"""

from __future__ import annotations

import numpy as np

__all__ = ["CRITERIA", "choose_step", "check_criterion"]

#: The model-choice criteria, in the order the CLI lists them.
CRITERIA = ("loo", "loo-prob", "evidence")


def check_criterion(criterion) -> str:
    if criterion not in CRITERIA:
        msg = f"criterion must be one of {CRITERIA}; got {criterion!r}."
        raise ValueError(msg)
    return criterion


def choose_step(log_evidence, loo_error, loo_prob_error, criterion: str) -> int:
    """Index (into the path records) of the step the criterion picks; the first one on ties.

    Examples
    --------
    >>> choose_step([-5.0, -3.0, -2.0], [0.1, 0.0, 0.0], [0.2, 0.1, 0.05], "loo")
    1
    >>> choose_step([-5.0, -3.0, -2.0], [0.1, 0.0, 0.0], [0.2, 0.1, 0.05], "evidence")
    2
    """
    check_criterion(criterion)
    if criterion == "evidence":
        v = -np.asarray(log_evidence, dtype=float)
    elif criterion == "loo":
        # LOO errors are multiples of 1/(2n): round away float noise before comparing.
        v = np.round(np.asarray(loo_error, dtype=float), 12)
    else:
        v = np.asarray(loo_prob_error, dtype=float)
    v = np.where(np.isnan(v), np.inf, v)
    return int(np.argmin(v))  # argmin returns the first minimum
