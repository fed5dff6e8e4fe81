"""Distribution tests: does the noise a release drew follow the law it states? Each helper
returns a p-value; a privacy test asserts a large one for the stated scale and a tiny one for a
halved and a doubled scale (so it would fail if the statement were false)."""

from __future__ import annotations

import numpy as np
from scipy import stats


def _pooled(observed: np.ndarray, expected: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Adjacent bins pooled (in order) until each expects at least 5; the remainder joins the
    last bin."""
    keep, obs, exp_ = [], 0.0, 0.0
    for o, e in zip(observed, expected, strict=True):
        obs, exp_ = obs + o, exp_ + e
        if exp_ >= 5:
            keep.append((obs, exp_))
            obs, exp_ = 0.0, 0.0
    if keep and exp_ > 0:
        keep[-1] = (keep[-1][0] + obs, keep[-1][1] + exp_)
    observed, expected = np.array(keep).T
    return observed, expected * observed.sum() / expected.sum()


def discrete_laplace_pvalue(noise, scale: float, support: int = 40) -> float:
    """Chi-square p-value of integer ``noise`` against the discrete Laplace law of parameter
    ``scale`` (``P(k) ~ exp(-|k| / scale)``) on ``[-support, support]``, the values beyond
    in one bin and the bins that expect fewer than 5 values in one bin."""
    noise = np.asarray(noise).ravel()
    p = np.exp(-1.0 / scale)
    ks = np.arange(-support, support + 1)
    pmf = (1 - p) / (1 + p) * p ** np.abs(ks)
    observed = np.array([(noise == k).sum() for k in ks] + [(np.abs(noise) > support).sum()])
    expected = np.append(pmf, 1 - pmf.sum()) * noise.size
    keep = expected > 5
    if expected[~keep].sum() > 0:  # the rare values in one bin
        observed = np.append(observed[keep], observed[~keep].sum())
        expected = np.append(expected[keep], expected[~keep].sum())
    else:
        observed, expected = observed[keep], expected[keep]
    expected *= observed.sum() / expected.sum()
    return float(stats.chisquare(observed, expected).pvalue)


def law_pvalue(samples, law: str, scale: float) -> float:
    """Goodness of fit of ``samples`` to ``law`` (``laplace``: Kolmogorov-Smirnov;
    ``discrete-laplace`` or ``skellam``: chi-square), parameter ``scale`` (the Laplace scale,
    or Skellam's mu)."""
    samples = np.asarray(samples).ravel()
    if law == "laplace":
        return float(stats.kstest(samples, stats.laplace(scale=scale).cdf).pvalue)
    dist = stats.dlaplace(1.0 / scale) if law == "discrete-laplace" else stats.skellam(scale, scale)
    edge = int(max(np.abs(samples).max(), 1))
    values = np.arange(-edge, edge + 1)
    expected = dist.pmf(values) * samples.size
    expected[0] += dist.cdf(-edge - 1) * samples.size
    expected[-1] += dist.sf(edge) * samples.size
    observed = np.bincount((samples + edge).astype(int), minlength=values.size)
    return float(stats.chisquare(*_pooled(observed, expected)).pvalue)
