import numpy as np
import pytest

from ardselect._criteria import CRITERIA, choose_step


@pytest.mark.parametrize("seed", range(5))
def test_each_criterion_picks_its_optimum_on_random_records(seed):
    """Every name in CRITERIA picks what it is documented to.

    The first smallest LOO error, the first smallest LOO error probability, the largest evidence
    (records drawn with many ties).
    """
    rng = np.random.default_rng(seed)
    ev = rng.normal(size=30).round(1)
    loo = rng.integers(0, 4, size=30) / 10
    prob = rng.integers(0, 6, size=30) / 20
    expected = {"loo": int(np.flatnonzero(loo == loo.min())[0]),
                "loo-prob": int(np.flatnonzero(prob == prob.min())[0]),
                "evidence": int(np.argmax(ev))}
    assert set(CRITERIA) == set(expected)
    for criterion in CRITERIA:
        assert choose_step(ev, loo, prob, criterion) == expected[criterion], criterion


def test_loo_ties_go_to_the_first_step():
    ev = [-9.0, -7.0, -5.0, -4.0]
    loo = [0.1, 0.05, 0.05, 0.05]
    prob = [0.3, 0.2, 0.1, 0.15]
    assert choose_step(ev, loo, prob, "loo") == 1
    assert choose_step(ev, loo, prob, "loo-prob") == 2
    assert choose_step(ev, loo, prob, "evidence") == 3


def test_float_noise_does_not_break_loo_ties():
    assert choose_step([0, 1], [1 / 3, (1 / 3) * (1 + 1e-15)], [0, 0], "loo") == 0


def test_unknown_criterion():
    with pytest.raises(ValueError, match="criterion must be one of"):
        choose_step([0], [0], [0], "aic")
