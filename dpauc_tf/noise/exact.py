"""Exact integer noise: discrete Laplace and discrete Gaussian samplers (Canonne, Kamath & Steinke 2020).

Why exact sampling. Floating-point noise leaks. Mironov (2012, "On significance of the
least significant bits for differential privacy") showed that textbook Laplace samplers,
``b * log(U)`` evaluated in double precision, cannot produce every double: the set of
reachable outputs near ``x + noise`` depends on ``x``, so an attacker who sees the exact bits
of one noisy release can often tell which of two neighbouring inputs produced it, i.e.
epsilon is effectively infinite. The floating-point samplers in `dpauc_tf.noise` share
that weakness. The samplers here draw **integers** with **integer/rational arithmetic
only** (uniform integers and exact Bernoulli trials, no logarithms, no floats on the
sampling path), so the output distribution is exactly the stated one; integer noise added to
integer counts (exactly representable in float64 up to 2**53) leaves no low-order-bit
channel. This is the hardened choice: ``noise="discrete"`` on the histogram mechanisms.

Algorithms (CKS 2020, "The Discrete Gaussian for Differential Privacy", Algorithms 1-3):

* ``Bernoulli(exp(-gamma))`` for rational ``gamma``: the alternating-series trick for
  ``gamma <= 1`` (Bernoulli(gamma/k) trials), and ``floor(gamma)`` Bernoulli(exp(-1)) trials
  for the integer part;
* discrete Laplace with rational scale ``t/s``: a geometric variate built from a uniform
  integer and Bernoulli(exp(-1)) trials, a sign, and rejection of "-0";
* discrete Gaussian with rational ``sigma^2``: discrete Laplace proposals of scale
  ``floor(sigma) + 1`` accepted with probability ``exp(-(|y| - sigma^2/t)^2 / (2 sigma^2))``.

Every loop is vectorised with numpy over the samples still in play, so ~1e5 draws take a
fraction of a second. A float scale is converted to a rational **rounded up** (a larger scale
only adds privacy); an int or `fractions.Fraction` is used exactly.

Randomness: ``seed=None`` seeds numpy's PCG64 generator with 128 bits of operating-system
entropy (fresh for every call): the only mode for real releases. An integer seed (or a
``[2]`` seed tensor as used by `dpauc_tf.noise`) makes draws reproducible, for
experiments and tests only: whoever knows the seed can subtract the noise. PCG64 is a
statistical generator, not a cryptographic one; the sampling *arithmetic* is exact.

TensorFlow Privacy ships a discrete Gaussian sampler
(``tensorflow_privacy.privacy.dp_query.discrete_gaussian_utils``); its own docstring says it
relaxes exactness (float Bernoulli and geometric draws), it takes only integer scales and it
cannot be seeded statelessly, so it is used here only as an independent cross-check in the
tests (and it is absent from the Keras 3 environment).

Examples:
    >>> draws = discrete_laplace_sample(4.0, size=5, seed=0)
    >>> draws.dtype.name, bool(np.all(draws == np.round(draws)))
    ('int64', True)
    >>> float(discrete_laplace_pmf(0, 4.0))  # (1 - q) / (1 + q) with q = exp(-1/4)
    0.1243530017715962
"""

from __future__ import annotations

import math
import secrets
from fractions import Fraction

import numpy as np

# Rationals derived from float scales use this denominator (rounded up).
_FLOAT_DENOMINATOR = 2**20
# Largest integer that the vectorised Bernoulli trials may form (uniform draws in [0, den*k)).
_INT_LIMIT = 2**62
# Bernoulli(exp(-gamma)) with gamma <= 1 stops after k trials with probability
# 1 - 1/k!; beyond this many the chance is below 1e-80, and the sampler raises instead.
_MAX_SERIES_TERMS = 60


def rng_from_seed(seed: int | np.ndarray | object | None = None) -> np.random.Generator:
    """A numpy generator: OS entropy for ``None``, reproducible for an int or ``[2]`` seed.

    Examples:
        >>> rng_from_seed(3).integers(0, 10, 3).tolist() == rng_from_seed(3).integers(0, 10, 3).tolist()
        True
    """
    if seed is None:
        return np.random.Generator(np.random.PCG64(secrets.randbits(128)))
    if isinstance(seed, bool):
        raise TypeError("seed must be an int, None or a [2] integer array, not a bool")
    if isinstance(seed, (int, np.integer)):
        if seed < 0:
            raise ValueError(f"seed must be non-negative, got {seed}")
        return np.random.default_rng(int(seed))
    values = np.asarray(getattr(seed, "numpy", lambda: seed)()).astype(np.int64).ravel()
    if values.size != 2:
        raise ValueError(f"a seed array must have 2 entries, got {values.size}")
    return np.random.default_rng([int(v) & (2**64 - 1) for v in values])


def rational_scale(scale: float | int | Fraction, *, name: str = "scale") -> Fraction:
    """``scale`` as an exact positive rational; floats are rounded *up* to a multiple of 2^-20.

    Examples:
        >>> rational_scale(4.0), rational_scale(Fraction(10, 3))
        (Fraction(4, 1), Fraction(10, 3))
    """
    if isinstance(scale, bool) or not isinstance(scale, (int, float, Fraction, np.number)):
        raise TypeError(f"{name} must be a number, got {scale!r}")
    if isinstance(scale, (float, np.floating)) and not math.isfinite(scale):
        raise ValueError(f"{name} must be finite and > 0, got {scale}")
    exact = Fraction(scale) if not isinstance(scale, np.number) else Fraction(scale.item())
    if exact <= 0:
        raise ValueError(f"{name} must be finite and > 0, got {scale}")
    if exact.denominator > _FLOAT_DENOMINATOR:
        exact = Fraction(math.ceil(exact * _FLOAT_DENOMINATOR), _FLOAT_DENOMINATOR)
    return exact


def _bernoulli_ratio(num: np.ndarray, den: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Exact Bernoulli(num / den) per element (``0 <= num <= den``, integer arrays)."""
    return rng.integers(0, den, dtype=np.int64) < num


def _bernoulli_exp_fraction(num: np.ndarray, den: np.ndarray, rng) -> np.ndarray:
    """Exact Bernoulli(exp(-num/den)) per element for ``0 <= num <= den`` (CKS Algorithm 1)."""
    num = np.asarray(num, dtype=np.int64)
    den = np.broadcast_to(np.asarray(den, dtype=np.int64), num.shape)
    if np.any(den.astype(object) * _MAX_SERIES_TERMS >= _INT_LIMIT):
        raise ValueError("denominator too large for the exact sampler")
    result = np.zeros(num.shape, dtype=bool)
    active = np.arange(num.size)
    k = 1
    while active.size:
        if k > _MAX_SERIES_TERMS:  # probability < 1e-80
            raise RuntimeError("exact Bernoulli sampler did not terminate")
        success = _bernoulli_ratio(num.ravel()[active], den.ravel()[active] * k, rng)
        stopped = active[~success]
        result.ravel()[stopped] = k % 2 == 1
        active = active[success]
        k += 1
    return result


def _count_exp_minus_one_successes(size: int, rng) -> np.ndarray:
    """Number of Bernoulli(exp(-1)) successes before the first failure (geometric)."""
    counts = np.zeros(size, dtype=np.int64)
    active = np.arange(size)
    while active.size:
        ones = np.ones(active.size, dtype=np.int64)
        ok = _bernoulli_exp_fraction(ones, ones, rng)
        counts[active[ok]] += 1
        active = active[ok]
    return counts


def _discrete_laplace_candidates(size: int, t: int, s: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """One round of CKS Algorithm 2 (scale ``t/s``): candidate values and an accept mask."""
    u = rng.integers(0, t, size=size, dtype=np.int64)
    keep = _bernoulli_exp_fraction(u, np.full(size, t, dtype=np.int64), rng)
    v = _count_exp_minus_one_successes(size, rng)
    y = (u + t * v) // s
    negative = rng.integers(0, 2, size=size, dtype=np.int64) == 1
    keep &= ~(negative & (y == 0))
    return np.where(negative, -y, y), keep


def _draw_with_rejection(size: int, candidates) -> np.ndarray:
    out = np.empty(0, dtype=np.int64)
    while out.size < size:
        missing = size - out.size
        values, keep = candidates(int(missing * 2.5) + 32)
        out = np.concatenate([out, values[keep]])
    return out[:size]


def discrete_laplace_sample(
    scale: float | int | Fraction,
    size: int | tuple[int, ...] = (),
    seed: int | np.ndarray | object | None = None,
) -> np.ndarray:
    """Exact discrete Laplace draws: ``P(k) = (1 - q) / (1 + q) q^|k|``, ``q = exp(-1/scale)``.

    Adding it with ``scale = Delta / epsilon`` to integer counts of L1 sensitivity ``Delta``
    gives epsilon-DP. Returns int64 values of shape ``size``.

    Examples:
        >>> discrete_laplace_sample(2, size=(2, 3), seed=1).shape
        (2, 3)
    """
    exact = rational_scale(scale)
    t, s = exact.numerator, exact.denominator
    if t * _MAX_SERIES_TERMS >= _INT_LIMIT:
        raise ValueError(f"scale {scale} is too large for the exact sampler")
    rng = rng_from_seed(seed)
    shape = (size,) if isinstance(size, (int, np.integer)) else tuple(size)
    total = math.prod(shape)
    draws = _draw_with_rejection(total, lambda n: _discrete_laplace_candidates(n, t, s, rng))
    return draws.reshape(shape)


def _gaussian_parameters(sigma: float | int | Fraction) -> tuple[int, int, int]:
    """``sigma^2 = a/b`` (rounded up) and the proposal scale ``t = floor(sigma) + 1``.

    ``b`` is the largest power of two that keeps the acceptance test's denominator
    ``2 a b t^2`` within the exact integer range.
    """
    exact_sigma = rational_scale(sigma, name="sigma")
    variance = exact_sigma * exact_sigma
    t = math.isqrt(math.floor(variance)) + 1
    for power in range(40, -1, -1):
        b = 2**power
        a = math.ceil(variance * b)  # exact when b is a multiple of the denominator
        if 2 * a * b * t * t * _MAX_SERIES_TERMS < _INT_LIMIT:
            return a, b, t
    raise ValueError(f"sigma={sigma} is too large for the exact discrete Gaussian sampler")


def discrete_gaussian_sample(
    sigma: float | int | Fraction,
    size: int | tuple[int, ...] = (),
    seed: int | np.ndarray | object | None = None,
) -> np.ndarray:
    """Exact discrete Gaussian draws: ``P(k) ~ exp(-k^2 / (2 sigma^2))`` on the integers.

    ``sigma^2`` is used as a rational rounded up (relative change below 1e-9 for
    ``sigma <= 1e3``); sigma up to about 1e4 is supported. Returns int64 values.

    Examples:
        >>> discrete_gaussian_sample(3.0, size=4, seed=0).dtype.name
        'int64'
    """
    a, b, t = _gaussian_parameters(sigma)
    rng = rng_from_seed(seed)

    def candidates(n: int):
        y, keep = _discrete_laplace_candidates(n, t, 1, rng)
        # exp(-(|y| - sigma^2/t)^2 / (2 sigma^2)) = exp(-m^2 / (2 a b t^2)), m = |y| b t - a
        m = np.abs(y).astype(object) * (b * t) - a
        den = 2 * a * b * t * t
        squared = m * m
        whole, rest = squared // den, squared % den
        accept = _bernoulli_exp_split(whole.astype(np.int64), rest.astype(np.int64), den, rng)
        return y, keep & accept

    shape = (size,) if isinstance(size, (int, np.integer)) else tuple(size)
    return _draw_with_rejection(math.prod(shape), candidates).reshape(shape)


def _bernoulli_exp_split(whole: np.ndarray, rest: np.ndarray, den: int, rng) -> np.ndarray:
    """Exact Bernoulli(exp(-(whole + rest/den))) with ``0 <= rest < den``."""
    alive = np.ones(whole.shape, dtype=bool)
    step = 0
    todo = np.flatnonzero(whole > 0)
    while todo.size:
        ones = np.ones(todo.size, dtype=np.int64)
        ok = _bernoulli_exp_fraction(ones, ones, rng)
        alive[todo[~ok]] = False
        step += 1
        todo = todo[ok & (whole[todo] > step)]
    survivors = np.flatnonzero(alive)
    if survivors.size:
        alive[survivors] = _bernoulli_exp_fraction(
            rest[survivors], np.full(survivors.size, den, dtype=np.int64), rng
        )
    return alive


def discrete_laplace_pmf(k: int | np.ndarray, scale: float) -> np.ndarray:
    """``P(K = k)`` of the discrete Laplace distribution with the given scale."""
    q = math.exp(-1.0 / float(scale))
    return (1.0 - q) / (1.0 + q) * np.power(q, np.abs(np.asarray(k, dtype=np.float64)))


def discrete_laplace_variance(scale: float) -> float:
    """Variance ``2 q / (1 - q)^2`` of the discrete Laplace distribution, ``q = exp(-1/scale)``."""
    q = math.exp(-1.0 / float(scale))
    return 2.0 * q / (1.0 - q) ** 2


def discrete_gaussian_pmf(k: int | np.ndarray, sigma: float) -> np.ndarray:
    """``P(K = k)`` of the discrete Gaussian (normalised over ``|k| <= 60 sigma + 60``)."""
    support = np.arange(-int(60 * sigma) - 60, int(60 * sigma) + 61, dtype=np.float64)
    norm = np.exp(-(support**2) / (2.0 * sigma**2)).sum()
    k = np.asarray(k, dtype=np.float64)
    return np.exp(-(k**2) / (2.0 * sigma**2)) / norm


def discrete_gaussian_variance(sigma: float) -> float:
    """Variance of the discrete Gaussian (slightly below ``sigma^2`` for small sigma)."""
    support = np.arange(-int(60 * sigma) - 60, int(60 * sigma) + 61, dtype=np.float64)
    weights = np.exp(-(support**2) / (2.0 * sigma**2))
    return float((weights * support**2).sum() / weights.sum())
