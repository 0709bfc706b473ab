"""Safe screening of path candidates: the bounds hold at every step, and the path is the exhaustive one."""

import numpy as np
import pytest
import scipy.sparse as sp

import ardselect.engine._sequential as seq
from ardselect import ARDClassifier
from ardselect.engine._screening import CandidateScreen, add_gain_threshold
from ardselect.numerics._ep import GaussianPrior, LatentPosterior, _Marginals, _new_sites
from ardselect.numerics._probit import tilted_moments
from tests.reference.make_path_reference import PARAMS, record, seed_data


@pytest.mark.parametrize("gain", [1e-8, 1e-5, 0.01, 1.0, 50.0])
def test_add_gain_threshold_inverts_the_gain(gain):
    r = add_gain_threshold(gain)
    assert r > 1.0
    assert 0.5 * (r - 1.0 - np.log(r)) == pytest.approx(gain, rel=1e-9)


def test_add_gain_threshold_of_nothing_is_one():
    assert add_gain_threshold(0.0) == 1.0
    assert add_gain_threshold(-np.inf) == 1.0


def test_fused_site_update_matches_tilted_moments():
    rng = np.random.default_rng(0)
    mc = np.concatenate([rng.normal(scale=3, size=50), [-40.0, -8.0, 0.0, 8.0, 40.0]])
    vc = rng.uniform(0.01, 20, size=mc.size)
    _, mhat, tau, vhat = tilted_moments(mc, vc)
    out = _new_sites(mc, vc, np.empty((2, mc.size)))
    np.testing.assert_allclose(out[0], tau, rtol=1e-12)
    np.testing.assert_allclose(out[1], mhat / vhat - mc / vc, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize(("n", "d"), [(30, 6), (10, 25)])
def test_loop_posterior_matches_latent_posterior(n, d):
    rng = np.random.default_rng(1)
    P = rng.normal(size=(n, d))
    alpha = rng.uniform(0.2, 3.0, size=d)
    tau = rng.uniform(0.05, 2.0, size=n)
    nu = rng.normal(size=n)
    prior = GaussianPrior(P, alpha)
    ref = LatentPosterior(P, alpha, tau, nu, None, prior)
    marg = _Marginals(prior)
    fast = marg.posterior(prior, P, alpha, tau, nu)
    f_mean, f_var = marg(tau, nu)
    assert fast.route == ref.route == ("weight" if d <= n else "sample")
    for name in ("f_mean", "f_var", "mean", "mean_t"):
        np.testing.assert_allclose(getattr(fast, name), getattr(ref, name), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(f_mean, ref.f_mean, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(f_var, ref.f_var, rtol=1e-10, atol=1e-12)
    assert fast.log_det_B == pytest.approx(ref.log_det_B, rel=1e-12)
    np.testing.assert_allclose(fast.cov(), ref.cov(), rtol=1e-9, atol=1e-12)


class _CheckedScreen(CandidateScreen):
    """CandidateScreen that checks every step against the exhaustive scores."""

    n_checked = 0

    def best(self, post, b, t, alpha, add_ok, rules, tol, penalty=0.0):
        out = super().best(post, b, t, alpha, add_ok, rules, tol, penalty)
        S, Q = seq.score_candidates(self.Phi, post, b, t)
        # The bounds hold for every feature (up to rounding far below the margins).
        assert np.all(self.S_lb <= S + 1e-9 * (1.0 + np.abs(S)))
        act, gain, _ = rules(np.arange(S.size), S, Q)
        j = int(np.argmax(gain))
        if gain[j] > tol:
            assert out[0] == j
            assert out[2] == pytest.approx(gain[j], rel=1e-9, abs=1e-12)
        else:
            assert not out[2] > tol
        type(self).n_checked += 1
        return out


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize(("alpha_min", "penalty"), [(1e-2, 0.0), (1.0, 0.0), (0.1, 1.0)])
def test_screened_steps_are_the_exhaustive_steps(monkeypatch, seed, alpha_min, penalty):
    monkeypatch.setattr(seq, "CandidateScreen", _CheckedScreen)
    monkeypatch.setattr(seq, "SCREEN_MIN_FEATURES", 0)
    _CheckedScreen.n_checked = 0
    rng = np.random.default_rng(seed)
    n, m = 30, 300
    X = rng.normal(size=(n, m)) * rng.uniform(0.2, 5, size=m)
    y = (X[:, 0] / X[:, 0].std() - X[:, 1] / X[:, 1].std() + 0.5 * rng.normal(size=n) > 0)
    ARDClassifier(alpha_min=alpha_min, max_init=10, inclusion_penalty=penalty,
                  criterion="loo").fit(X, y.astype(int))
    assert _CheckedScreen.n_checked > 10


@pytest.mark.parametrize("sparse", [False, True])
def test_screened_path_equals_exhaustive_path(monkeypatch, sparse):
    rng = np.random.default_rng(7)
    X = rng.normal(size=(40, 400))
    y = (X[:, 3] - X[:, 8] + 0.7 * rng.normal(size=40) > 0).astype(int)
    X = sp.csr_matrix(np.where(np.abs(X) > 1.0, X, 0.0)) if sparse else X
    monkeypatch.setattr(seq, "SCREEN_MIN_FEATURES", 10**9)
    ref = ARDClassifier(alpha_min=0.05).fit(X, y)
    monkeypatch.setattr(seq, "SCREEN_MIN_FEATURES", 0)
    got = ARDClassifier(alpha_min=0.05).fit(X, y)
    assert list(got.path_["feature"]) == list(ref.path_["feature"])
    assert list(got.path_["action"]) == list(ref.path_["action"])
    np.testing.assert_allclose(got.path_["log_evidence"], ref.path_["log_evidence"], atol=1e-9)


@pytest.mark.parametrize("seed", range(5))
def test_screening_forced_on_reference_seeds(monkeypatch, seed):
    """The path reference (pre-speed code) holds with screening forced on its small designs."""
    import json
    import pathlib

    monkeypatch.setattr(seq, "SCREEN_MIN_FEATURES", 0)
    ref = json.loads((pathlib.Path(__file__).parent / "reference" / "path_reference.json").read_text())
    X, y = seed_data(seed)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = record(ARDClassifier(alpha_min=1e-2, **PARAMS).fit(X, y))
    want = ref["seeds"][repr(1e-2)][seed]
    assert got["feature"] == want["feature"]
    assert got["action"] == want["action"]
    np.testing.assert_allclose(got["log_evidence"], want["log_evidence"], rtol=0, atol=1e-6)
