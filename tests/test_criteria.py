import pytest

from ardselect._criteria import CRITERIA, choose_step


def test_criteria_names():
    assert CRITERIA == ("loo", "loo-prob", "evidence")


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
