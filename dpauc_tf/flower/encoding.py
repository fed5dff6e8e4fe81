"""Exact integer sums through Flower's SecAgg+ (which quantizes floats).

Flower's SecAgg+ (``SecAggPlusWorkflow`` + ``secaggplus_mod``) sums integer vectors modulo
``modulus_range`` (``M``, a power of two up to ``2^32``), but its client side *quantizes*
floats: it multiplies each value by ``num_examples / max_weight``, clips it to
``[-clipping_range, clipping_range]``, maps it onto ``[0, quantization_range]`` with
stochastic rounding, and the server divides the unmasked sum by the sum of the weights
(a weighted average). This module chooses a configuration in which every one of these
steps is the identity on integers, so that the sum is **exact**:

* every client reports ``num_examples = max_weight = 1`` (weight ratio 1, so nothing is
  rescaled; the server's weight total is the number of reports ``n``);
* ``quantization_range = B = 2^b`` and ``clipping_range = B / 2``: the quantizer's scale is
  1 and a value ``d - B/2`` with integer ``d`` in ``[0, B)`` quantizes to exactly ``d``
  (stochastic rounding of an integer never moves it);
* ``b`` is the largest with ``K * B < M`` for the ``K`` sampled clients, so that neither the
  digit sums (at most ``K (B - 1)``) nor the weight total (``K B``) wrap modulo ``M``;
* a signed integer is sent as its residue modulo ``2^64`` cut into ``ceil(64 / b)`` digits
  of ``b`` bits (limbs). The server recovers each digit sum from Flower's average
  (``S = round(n * avg + n * B / 2)``, exact in float64 because ``|S| < 2^33``), recombines
  the limbs modulo ``2^64`` and reads the result as a signed int64: exact for any totals in
  ``[-2^63, 2^63)``, far beyond the ``2^53`` at which float64 counts stop being exact.

Pure NumPy (no Flower, no TensorFlow): ``tests/flower/test_encoding.py`` checks the
round trip through Flower's own quantizer and dequantizer.

    >>> layout = LimbLayout.for_clients(10)
    >>> layout.bits, layout.num_limbs
    (28, 3)
    >>> parts = layout.encode(np.array([-5, 7, 2**40]))
    >>> summed = [layout.flower_average([p, p], 2) for p in parts]  # what Flower returns for 2
    >>> layout.decode(summed, 2).tolist()
    [-10, 14, 2199023255552]

Values known to be non-negative and narrow (``value_bits``) travel in fewer limbs:

    >>> LimbLayout(28, value_bits=28).encode(np.array([3, 2**27]))[0].tolist()
    [-134217725.0, 0.0]
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

MAX_MODULUS = 2**32  # SecAgg+ samples masks with NumPy int64 and quantizes into int32
WORD_BITS = 64


@dataclasses.dataclass(frozen=True)
class LimbLayout:
    """How signed integers travel through SecAgg+ exactly (see the module docstring).

    Attributes:
      bits: ``b``, the bits per limb; ``quantization_range = 2^b``.
      modulus_range: ``M``, SecAgg+'s modulus (a power of two, at most ``2^32``).
      value_bits: the width of the values: 64 (signed words, the default), or fewer for
        values known to lie in ``[0, 2^value_bits)`` (``ceil(value_bits / b)`` limbs; a value
        outside is refused in one line).
    """

    bits: int
    modulus_range: int = MAX_MODULUS
    value_bits: int = WORD_BITS

    @classmethod
    def for_clients(cls, num_clients: int, modulus_range: int = MAX_MODULUS) -> LimbLayout:
        """The widest limbs for which ``num_clients`` reports cannot wrap modulo ``M``."""
        if isinstance(num_clients, bool) or int(num_clients) != num_clients or num_clients < 1:
            raise ValueError(f"num_clients must be a positive integer, got {num_clients!r}")
        if modulus_range > MAX_MODULUS or modulus_range < 4 or modulus_range & (modulus_range - 1):
            raise ValueError(
                f"modulus_range must be a power of two in [4, 2^32], got {modulus_range}"
            )
        bits = math.floor(math.log2((modulus_range - 1) / int(num_clients)))
        bits = min(bits, 31)  # Flower quantizes into int32
        while bits >= 1 and int(num_clients) * 2**bits >= modulus_range:
            bits -= 1
        if bits < 2:
            raise ValueError(
                f"{num_clients} clients do not fit SecAgg+'s modulus {modulus_range}: "
                "each would get fewer than 2 bits per value"
            )
        return cls(bits=bits, modulus_range=modulus_range)

    @classmethod
    def for_bits(
        cls, bits: int, modulus_range: int = MAX_MODULUS, value_bits: int = WORD_BITS
    ) -> LimbLayout:
        """The layout with ``bits`` bits per limb (as the server announced it)."""
        if not 2 <= int(bits) <= 31 or 2 ** int(bits) >= modulus_range:
            raise ValueError(
                f"limb bits must be in [2, 31] and 2^bits < {modulus_range}, got {bits}"
            )
        if not 1 <= int(value_bits) <= WORD_BITS:
            raise ValueError(f"value_bits must be in [1, {WORD_BITS}], got {value_bits}")
        return cls(bits=int(bits), modulus_range=modulus_range, value_bits=int(value_bits))

    @property
    def base(self) -> int:
        return 2**self.bits

    @property
    def num_limbs(self) -> int:
        return math.ceil(self.value_bits / self.bits)

    @property
    def quantization_range(self) -> int:
        """SecAgg+'s ``quantization_range``: ``2^b`` (the quantizer's scale is then 1)."""
        return self.base

    @property
    def clipping_range(self) -> float:
        """SecAgg+'s ``clipping_range``: ``2^b / 2`` (no limb is ever clipped)."""
        return float(self.base // 2)

    def encode(self, values: np.ndarray) -> list[np.ndarray]:
        """Signed integers (int64, or integral floats below ``2^53``) -> ``num_limbs`` float64
        arrays of the same shape, each value in ``[-B/2, B/2)``, as SecAgg+'s input."""
        values = _as_int64(values)
        if self.value_bits < WORD_BITS and (
            np.any(values < 0) or np.any(values >= 2**self.value_bits)
        ):
            raise ValueError(
                f"this report's values must lie in [0, 2^{self.value_bits}) (its limbs carry "
                f"{self.value_bits} bits); got {int(values.min())}..{int(values.max())}"
            )
        word = values.astype(np.uint64)  # two's complement: the residue modulo 2^64
        half = self.base // 2
        mask = np.uint64(self.base - 1)
        limbs = []
        for j in range(self.num_limbs):
            digit = (word >> np.uint64(j * self.bits)) & mask
            limbs.append(digit.astype(np.float64) - half)
        return limbs

    def flower_average(self, limbs: list[np.ndarray], num_reports: int) -> np.ndarray:
        """What SecAgg+'s server returns for ``num_reports`` equal reports of one limb array
        (for doctests and tests; the real protocol computes this from masked vectors)."""
        total = sum(np.asarray(limb, np.float64) + self.base // 2 for limb in limbs)
        return (total - num_reports * (self.base // 2)) / num_reports

    def decode(self, averages: list[np.ndarray], num_reports: int) -> np.ndarray:
        """The exact int64 sums from SecAgg+'s per-limb weighted averages over ``num_reports``."""
        if len(averages) != self.num_limbs:
            raise ValueError(f"expected {self.num_limbs} limb arrays, got {len(averages)}")
        n = int(num_reports)
        word = None
        for j, average in enumerate(averages):
            digit_sum = np.rint(np.asarray(average, np.float64) * n + n * (self.base // 2))
            if np.any(digit_sum < 0) or np.any(digit_sum >= self.modulus_range):
                raise ValueError("SecAgg+ returned a limb sum outside [0, modulus): not exact")
            part = digit_sum.astype(np.uint64) << np.uint64(j * self.bits)
            word = part if word is None else word + part  # wraps modulo 2^64, as intended
        return word.astype(np.int64)


def _as_int64(values) -> np.ndarray:
    array = np.asarray(values)
    if array.dtype.kind in "iu":
        return array.astype(np.int64)
    array = array.astype(np.float64)
    if not np.all(np.isfinite(array)):
        raise ValueError("secure reports must be finite integers; got NaN or inf")
    if np.any(np.abs(array) >= 2.0**53):
        raise ValueError("secure reports must be below 2^53 in absolute value (float64 exact)")
    if np.any(array != np.round(array)):
        raise ValueError("secure reports must be integers; got a fractional value")
    return array.astype(np.int64)
