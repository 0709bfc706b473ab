"""MCMC convergence diagnostics: split-R-hat and bulk effective sample size, for any sampler's draws.

Public as :func:`ardselect.diagnostics.split_rhat` and :func:`ardselect.diagnostics.effective_sample_size`;
:class:`ardselect.GibbsRVMClassifier` reports them per weight (``rhat_``, ``ess_``). They follow
Vehtari, Gelman, Simpson, Carpenter & Buerkner (2021), *Rank-normalization, folding, and
localization: an improved R-hat*, Bayesian Analysis 16(2), and Gelman et al., *Bayesian Data
Analysis* (3rd ed.), sections 11.4-11.5.
"""

from __future__ import annotations

import numpy as np
from scipy.special import ndtri

from ..exceptions import DataError

__all__ = ["effective_sample_size", "split_rhat"]


def _as_draws(draws) -> np.ndarray:
    """Return draws as a float array of shape (n_chains, n_draws, n_params)."""
    draws = np.asarray(draws, dtype=np.float64)
    if draws.ndim == 2:
        draws = draws[:, :, None]
    if draws.ndim != 3:
        msg = (
            f"draws must have shape (n_chains, n_draws) or (n_chains, n_draws, n_params); "
            f"got {draws.shape}."
        )
        raise DataError(msg)
    return draws


def _split_chains(draws: np.ndarray) -> np.ndarray:
    """Split each chain into its two halves (the middle draw of an odd chain is dropped)."""
    half = draws.shape[1] // 2
    return np.concatenate([draws[:, :half], draws[:, draws.shape[1] - half :]], axis=0)


def _rank_normalize(draws: np.ndarray) -> np.ndarray:
    """Rank-normalise pooled draws per parameter: z = Phi^-1((r - 3/8) / (S + 1/4)) (Blom scores).

    Ranks are taken over all chains together with ties averaged (Vehtari et al. 2021, eq. 14).
    """
    from scipy.stats import rankdata

    C, n, p = draws.shape
    flat = draws.reshape(C * n, p)
    r = rankdata(flat, axis=0, method="average")
    return ndtri((r - 0.375) / (C * n + 0.25)).reshape(C, n, p)


def _rhat_basic(draws: np.ndarray) -> np.ndarray:
    """Potential scale reduction sqrt(var_plus / W) of BDA3 eq. 11.4 for already-split chains."""
    _C, n, _ = draws.shape
    chain_mean = draws.mean(axis=1)  # (C, p)
    W = draws.var(axis=1, ddof=1).mean(axis=0)  # (p,) within-chain variance
    B_over_n = chain_mean.var(axis=0, ddof=1)  # (p,) between-chain variance / n
    var_plus = (n - 1) / n * W + B_over_n
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.sqrt(var_plus / W)


def split_rhat(draws, *, rank_normalize: bool = True) -> np.ndarray:
    """Split-R-hat convergence diagnostic per parameter.

    With ``rank_normalize=True`` (default) this is the R-hat of Vehtari et al. (2021): the larger of
    the rank-normalised split-R-hat (bulk) and the rank-normalised split-R-hat of the draws folded
    about their median (tails). With ``rank_normalize=False`` it is the classical split-R-hat of
    BDA3 (section 11.4) on the raw draws.

    Parameters
    ----------
    draws : array-like of shape (n_chains, n_draws) or (n_chains, n_draws, n_params)
        Post-warm-up draws. Each chain is split in halves, so ``n_draws >= 4`` is needed.

    Returns
    -------
    rhat : ndarray of shape (n_params,)
        NaN for a parameter with zero within-chain variance (e.g. a weight fixed at 0).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> mixed = rng.normal(size=(4, 500))
    >>> bool(split_rhat(mixed)[0] < 1.01)
    True
    >>> apart = mixed + np.arange(4)[:, None]  # four chains stuck in different places
    >>> bool(split_rhat(apart)[0] > 1.5)
    True
    """
    draws = _as_draws(draws)
    if draws.shape[1] < 4:
        msg = f"split-R-hat needs at least 4 draws per chain; got {draws.shape[1]}."
        raise DataError(msg)
    split = _split_chains(draws)
    if not rank_normalize:
        return _rhat_basic(split)
    bulk = _rhat_basic(_rank_normalize(split))
    folded = np.abs(split - np.median(split.reshape(-1, split.shape[2]), axis=0))
    tail = _rhat_basic(_rank_normalize(folded))
    return np.fmax(bulk, tail)


def _autocov(draws: np.ndarray) -> np.ndarray:
    """Biased autocovariance (divide by n) of each chain and parameter by FFT: shape (C, n, p)."""
    _C, n, _p = draws.shape
    x = draws - draws.mean(axis=1, keepdims=True)
    nfft = 1 << int(np.ceil(np.log2(2 * n)))  # zero padding to >= 2n avoids circular wrap-around
    f = np.fft.rfft(x, n=nfft, axis=1)
    return np.fft.irfft(f * np.conj(f), n=nfft, axis=1)[:, :n] / n


def _ess_basic(draws: np.ndarray) -> np.ndarray:
    """Effective sample size of BDA3 section 11.5 with Geyer's initial monotone sequence.

    ``rho_t = 1 - (W - mean_c acov_c(t)) / var_plus``; adjacent pairs ``P_k = rho_2k + rho_2k+1``
    are summed while positive and made non-increasing; ``tau = -1 + 2 sum_k P_k``; ESS = C n / tau,
    capped at ``C n log10(C n)`` as in Stan (antithetic chains can otherwise give unbounded values).
    """
    C, n, _p = draws.shape
    acov = _autocov(draws)  # (C, n, p)
    W = acov[:, 0, :].mean(axis=0) * n / (n - 1)  # (p,) within-chain variance (unbiased)
    var_plus = W * (n - 1) / n
    if C > 1:
        var_plus = var_plus + draws.mean(axis=1).var(axis=0, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = 1.0 - (W - acov.mean(axis=0)) / var_plus  # (n, p)
    rho[0] = 1.0
    n_pairs = n // 2
    pairs = rho[: 2 * n_pairs : 2] + rho[1 : 2 * n_pairs : 2]  # (K, p)
    # Initial positive sequence: keep pairs up to (not including) the first non-positive one.
    keep = np.cumprod(pairs > 0, axis=0).astype(bool)
    # Initial monotone sequence: each kept pair is at most the previous one.
    mono = np.minimum.accumulate(np.where(keep, pairs, np.inf), axis=0)
    tau = -1.0 + 2.0 * np.where(keep, mono, 0.0).sum(axis=0)
    total = C * n
    tau = np.maximum(tau, 1.0 / np.log10(total))
    ess = total / tau
    return np.where(np.isfinite(var_plus) & (W > 0), ess, np.nan)


def effective_sample_size(draws, *, rank_normalize: bool = True) -> np.ndarray:
    """Bulk effective sample size per parameter (Vehtari et al. 2021; BDA3 section 11.5).

    The chains are split in halves and, with ``rank_normalize=True`` (default), rank-normalised
    before the autocorrelations are estimated (the "bulk-ESS"). ``rank_normalize=False`` gives the
    classical split-chain ESS of the raw draws, the one that measures the Monte Carlo error of a
    posterior mean.

    Parameters
    ----------
    draws : array-like of shape (n_chains, n_draws) or (n_chains, n_draws, n_params)
        Post-warm-up draws; ``n_draws >= 4``.

    Returns
    -------
    ess : ndarray of shape (n_params,)
        NaN for a parameter with zero variance.

    Examples
    --------
    >>> import numpy as np
    >>> iid = np.random.default_rng(1).normal(size=(4, 1000))
    >>> bool(3400 < effective_sample_size(iid)[0] < 4600)
    True
    """
    draws = _as_draws(draws)
    if draws.shape[1] < 4:
        msg = f"the effective sample size needs at least 4 draws per chain; got {draws.shape[1]}."
        raise DataError(msg)
    split = _split_chains(draws)
    if rank_normalize:
        split = _rank_normalize(split)
    return _ess_basic(split)
