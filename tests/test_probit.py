import numpy as np
import pytest
from scipy import integrate
from scipy.stats import norm

from ardselect.numerics._probit import inv_mills, log_Phi, tilted_moments


@pytest.mark.parametrize("z", [-1e4, -200.0, -40.0, -10.0, -1.0, 0.0, 1.0, 8.0, 30.0])
def test_log_phi_matches_scipy_norm(z):
    assert log_Phi(z) == pytest.approx(norm.logcdf(z), rel=1e-12, abs=1e-300)


@pytest.mark.parametrize("z", [-1e3, -40.0, -8.0, -1.0, 0.0, 2.0, 10.0])
def test_inverse_mills_ratio(z):
    # Far lower tail: phi/Phi ~ -z - 1/z + 2/z^3 (asymptotic series); elsewhere scipy directly.
    expected = (-z - 1 / z + 2 / z**3 - 10 / z**5) if z < -30 else norm.pdf(z) / norm.cdf(z)
    assert inv_mills(z) == pytest.approx(expected, rel=1e-9)
    assert np.isfinite(inv_mills(z))


@pytest.mark.parametrize(("m", "v"), [(0.0, 1.0), (1.3, 0.4), (-2.0, 3.0), (-6.0, 0.5), (4.0, 10.0)])
def test_tilted_moments_against_quadrature(m, v):
    sd = np.sqrt(v)

    def dens(h):
        return norm.cdf(h) * norm.pdf(h, m, sd)

    lo, hi = m - 12 * sd, m + 12 * sd
    Z = integrate.quad(dens, lo, hi, epsabs=0, epsrel=1e-12, limit=200)[0]
    mean = integrate.quad(lambda h: h * dens(h), lo, hi, epsabs=0, epsrel=1e-12, limit=200)[0] / Z
    var = integrate.quad(lambda h: (h - mean) ** 2 * dens(h), lo, hi, epsabs=0, epsrel=1e-12,
                         limit=200)[0] / Z
    log_Z, mhat, site_prec, vhat = tilted_moments(np.array([m]), np.array([v]))
    assert log_Z[0] == pytest.approx(np.log(Z), rel=1e-8)
    assert mhat[0] == pytest.approx(mean, rel=1e-7, abs=1e-9)
    assert vhat[0] == pytest.approx(var, rel=1e-7)
    assert site_prec[0] == pytest.approx(1 / var - 1 / v, rel=1e-6)
    assert site_prec[0] >= 0  # probit is log-concave: sites never have negative precision


def test_tilted_moments_far_tail_stays_finite_and_positive():
    m = np.array([-60.0, -25.0, 25.0, 60.0])
    v = np.array([1.0, 4.0, 1.0, 0.1])
    log_Z, mhat, site_prec, vhat = tilted_moments(m, v)
    assert np.all(np.isfinite(log_Z))
    assert np.all(np.isfinite(mhat))
    assert np.all(site_prec >= 0)
    assert np.all(vhat > 0)
    assert np.all(vhat <= v)
    # Far on the right, the likelihood is ~1: the tilted distribution is the cavity.
    assert mhat[3] == pytest.approx(m[3], abs=1e-10)
    assert vhat[3] == pytest.approx(v[3], rel=1e-10)


def test_ovr_combination_is_the_exactly_one_true_posterior():
    # Brute force: enumerate every yes/no outcome of k independent one-vs-rest answers, keep those
    # with exactly one yes, and read off which class said yes.
    import itertools

    from scipy.stats import norm

    from ardselect.numerics._probit import ovr_log_proba

    rng = np.random.default_rng(3)
    z = rng.normal(scale=2.0, size=(6, 4))
    z[0] = [-40.0, -39.0, 3.0, -1.0]  # far tails stay finite
    got = np.exp(ovr_log_proba(z))
    for i in range(z.shape[0]):
        p, q = norm.cdf(z[i]), norm.sf(z[i])  # q = 1 - p without cancellation
        want = np.zeros(4)
        for outcome in itertools.product([0, 1], repeat=4):
            if sum(outcome) == 1:
                k = outcome.index(1)
                want[k] += np.prod(np.where(outcome, p, q))
        np.testing.assert_allclose(got[i], want / want.sum(), rtol=1e-9)
    np.testing.assert_allclose(got.sum(axis=1), 1.0, rtol=1e-12)


def test_ovr_binary_is_the_probit():
    from scipy.stats import norm

    from ardselect.numerics._probit import ovr_log_proba

    z = np.array([[-50.0], [-1.0], [0.0], [2.5]])
    np.testing.assert_allclose(ovr_log_proba(z), np.column_stack([norm.logcdf(-z[:, 0]),
                                                                  norm.logcdf(z[:, 0])]), rtol=1e-12)
