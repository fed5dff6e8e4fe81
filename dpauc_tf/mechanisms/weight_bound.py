"""Sample weights up to a declared bound ``W``: a decorator of any float-noise mechanism,
which releases counts / W and scales the law.

Every mechanism's sensitivity assumes weights in [0, 1]: one label change moves at most
one unit of weight. With weights in ``[0, W]`` a label change moves up to ``W``: the
sensitivity of the weighted counts is ``W`` times the mechanism's. `bound_weights`
wraps a mechanism so that it releases the counts divided by ``W`` (whose weights are in
[0, 1] again, so the mechanism's own analysis and epsilon hold unchanged): in units of
weighted counts that is noise ``W`` times larger, and the statement says so. The release
stays in units of ``W`` (every AUC and curve from it is scale-free); ``noise_stddev`` is the
noise on one released (scaled) count, ``weighted_noise_stddev`` the same in weighted counts.

The law, scaled: the statement's numeric ``sensitivity_value`` and ``noise_scale`` are the
wrapped mechanism's times ``W`` (in weighted counts) and its texts are written from those
numbers (nothing is read back from the wrapped mechanism's prose); the noise law of a release
(``noise_variances``, the interval law, the unclipped estimate) is the wrapped mechanism's in
released units, so intervals need no unwrapping, and ``examples_in_release_units`` divides
the number of examples by ``W``.

Integer-noise mechanisms (``capabilities.integer_counts``: secure, ``rr``) take weights 0 or
1 only; ``W != 1`` is refused for them (a count divided by W is a fraction, and integer
noise would not hide it).

Examples:
    >>> from dpauc_tf.mechanisms import get_mechanism
    >>> m = bound_weights(get_mechanism("histogram", epsilon=1.0, num_thresholds=3), 2.5)
    >>> m.max_weight, m.weighted_noise_scale
    (2.5, 5.0)
    >>> m.statement().sensitivity
    'L1 = 5 in weighted counts (weights in [0, 2.5]): L1 = 2 (one unit of weight moves between pos[b] and neg[b]) on the counts divided by max_weight = 2.5'
    >>> m.statement().sensitivity_value, m.statement().noise_scale
    (5.0, 5.0)
"""

from __future__ import annotations

import dataclasses
import math

import tensorflow as tf

from dpauc_tf.privacy.statement import PrivacyStatement, label_dp


def check_max_weight(max_weight) -> float:
    """A finite number > 0, as a float; ``ValueError`` naming the argument otherwise."""
    if (
        isinstance(max_weight, bool)
        or not isinstance(max_weight, (int, float))
        or not (math.isfinite(max_weight) and max_weight > 0)
    ):
        raise ValueError(f"max_weight must be a finite number > 0, got {max_weight!r}")
    return float(max_weight)


class WeightBounded:
    """``mechanism`` for weights in ``[0, max_weight]``: releases counts / ``max_weight``.

    Everything not defined here is the wrapped mechanism's (its AUC estimate, curve,
    capabilities, dp-accounting event and epsilon: the guarantee of the scaled counts; its
    noise law in released units: ``interval_law``, ``noise_variances``,
    ``unclipped_estimate``, ``projected_counts``).
    """

    def __init__(self, mechanism, max_weight: float):
        self.inner = mechanism
        self.max_weight = check_max_weight(max_weight)

    def __getattr__(self, name):
        if name == "inner":  # not set yet (copy, pickle): no recursion
            raise AttributeError(name)
        return getattr(self.inner, name)

    def release(self, pos, neg, seed=None, repeats=None):
        """The wrapped mechanism's release of ``pos / W, neg / W`` (see the module)."""
        scale = tf.constant(self.max_weight, tf.float64)
        pos = tf.cast(tf.convert_to_tensor(pos), tf.float64) / scale
        neg = tf.cast(tf.convert_to_tensor(neg), tf.float64) / scale
        return self.inner.release(pos, neg, seed=seed, repeats=repeats)

    def examples_in_release_units(self, num_examples: float | None) -> float | None:
        """The number of examples in the released units (divided by ``max_weight``)."""
        return None if num_examples is None else float(num_examples) / self.max_weight

    @property
    def weighted_noise_stddev(self) -> float:
        """The noise on one count, in weighted counts (``W`` times ``noise_stddev``)."""
        return self.max_weight * float(self.inner.noise_stddev)

    @property
    def weighted_noise_scale(self) -> float:
        """The noise scale (e.g. Laplace ``b``) in weighted counts, where the mechanism has one."""
        return self.max_weight * float(self.inner.noise_scale)

    def statement(self) -> PrivacyStatement:
        """The wrapped mechanism's statement with its law scaled by ``W``: the numbers
        (``sensitivity_value``, ``noise_scale``) in weighted counts, and texts written from
        them."""
        inner = self.inner.statement()
        w = self.max_weight
        number = inner.sensitivity_value
        scaled = (
            f"{inner.sensitivity_norm} = {number * w:g} in weighted counts"
            if number is not None
            else f"{w:g} times the sensitivity below in weighted counts"
        )
        neighbouring = inner.neighbouring
        if neighbouring.startswith(label_dp(1.0)):  # the relation, stated for weights in [0, W]
            neighbouring = label_dp(w) + neighbouring[len(label_dp(1.0)) :]
        return dataclasses.replace(
            inner,
            neighbouring=neighbouring,
            sensitivity=f"{scaled} (weights in [0, {w:g}]): {inner.sensitivity} on the counts "
            f"divided by max_weight = {w:g}",
            noise=f"{inner.noise}, on the counts divided by {w:g} (noise {w:g} times as large "
            "in weighted counts)",
            sensitivity_value=None if number is None else number * w,
            noise_scale=None if inner.noise_scale is None else inner.noise_scale * w,
        )

    def options(self) -> dict:
        return {**self.inner.options(), "max_weight": self.max_weight}

    def __repr__(self) -> str:
        return f"WeightBounded({self.inner!r}, max_weight={self.max_weight!r})"


def bound_weights(mechanism, max_weight: float):
    """``mechanism`` for weights in ``[0, max_weight]`` (itself for ``max_weight=1``).

    Refuses integer-noise mechanisms for ``max_weight != 1`` (one line saying what to do).
    """
    max_weight = check_max_weight(max_weight)
    if max_weight == 1.0 or mechanism.epsilon is None:
        return mechanism
    if mechanism.capabilities.unit_weights:
        raise ValueError(
            f"mechanism {mechanism.name!r} takes sample weights of 1 only (it releases "
            f"totals as label-free), so max_weight must be 1 (got {max_weight:g}); use "
            "mechanism='histogram' for weights"
        )
    if mechanism.capabilities.integer_counts:
        raise ValueError(
            f"mechanism {mechanism.name!r} adds integer noise and takes sample weights of 0 "
            f"or 1 only, so max_weight must be 1 (got {max_weight:g}); use a float-noise "
            "mechanism such as 'histogram' for larger weights, or weights of 0 and 1"
        )
    return WeightBounded(mechanism, max_weight)
