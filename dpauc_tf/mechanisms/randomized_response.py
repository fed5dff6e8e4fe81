"""Randomized response on labels (the paper's DPAUC_RR baseline) and its debiased AUC.

Mechanism (Warner 1965; used for AUC by the DPAUC paper, debiasing by Menon et al. 2015):

* **Neighbouring relation**: label DP: two test sets are neighbours when they differ only in
  the label of one example (the scores are not protected and are counted exactly).
* **Noise**: every label is flipped independently with probability ``p = 1 / (1 + e^eps)``.
* **Sensitivity**: one label is one input of one randomized response; the likelihood ratio of
  any flipped label is ``(1 - p) / p = e^eps``.
* **Epsilon**: ``eps``-label-DP (``delta = 0``) for the flipped labels *and everything computed
  from them*. Every release here flips afresh (so each release costs ``eps``); composition
  is accounted with dp-accounting's ``RandomizedResponseDpEvent`` (PLD), basic sum otherwise.

As a mechanism on counts: flipping every label of a bucket independently makes the flipped
positive count ``Binomial(pos[b], 1 - p) + Binomial(neg[b], p)``, so [`release`][] draws
exactly that from the bucket counts: the same distribution as flipping each example's
label and counting (integer counts only: fractional weights are refused).

The server sees exact counts of the *flipped* labels and debiases (Menon et al.),
with ``q = p``:

``P^ = (N~+ (1 - q) - N~- q) / (1 - p - q)``, ``pi = P^ / n``,
``alpha = (1 - pi) q / (pi (1 - p) + (1 - pi) q)``, ``beta = pi p / (pi p + (1 - pi)(1 - q))``,
``AUC = (AUC~ - (alpha + beta) / 2) / (1 - alpha - beta)``,

clipped to [0, 1] (the reference code does not clip; values above 1 occur there).

**Where the estimate is undefined it is NaN** (never a number that looks like an estimate;
the reference code and earlier versions returned 0 there):

* the flipped labels hold one class (or no example): the flipped AUC is undefined
  ([`dpauc_tf.core.postprocessing.mann_whitney_auc`][]); always the case for one row;
* ``pi`` is not strictly inside (0, 1): the debiased number of positives says the data
  hold no positive (``pi <= 0``) or no negative (``pi >= 1``). Then ``alpha + beta = 1``
  and the debiasing divides by 0. At small epsilon (``1 - 2p`` near 0) this happens often
  on small data: the release carries too little information for an AUC.

Where ``0 < pi < 1`` the debiased value is defined and is clipped to [0, 1].

    >>> round(flip_probability(1.0), 4)
    0.2689
    >>> round(float(debias_auc(0.5, 50, 50, epsilon=1.0)), 12)  # a flipped AUC of 0.5 stays 0.5
    0.5
"""

from __future__ import annotations

import math
from typing import ClassVar

import dp_accounting
import numpy as np
import tensorflow as tf
from dp_accounting import dp_event

from dpauc_tf.core.curve import auc_from_confusion, confusion_from_histogram
from dpauc_tf.core.postprocessing import mann_whitney_auc, monotone_confusion
from dpauc_tf.mechanisms.base import CountMechanism, area_over_pairs, histogram_of
from dpauc_tf.mechanisms.capabilities import Capabilities
from dpauc_tf.mechanisms.laws import GridRule, IntervalLaw
from dpauc_tf.noise.seeds import split_seed
from dpauc_tf.privacy.statement import LABEL_DP, PrivacyStatement, check_epsilon


def flip_probability(epsilon: float) -> float:
    """``p = 1 / (1 + e^eps)``: the probability that randomized response flips a label."""
    epsilon = check_epsilon(epsilon)
    if epsilon is None:
        raise ValueError("randomized response needs an epsilon > 0")
    # exp(-eps) / (1 + exp(-eps)): the same value, without overflow for large epsilon
    return math.exp(-epsilon) / (1.0 + math.exp(-epsilon))


def debias_auc(auc_flipped, num_positive_flipped, num_negative_flipped, epsilon: float):
    """Menon et al.'s AUC estimate from the AUC on flipped labels; NaN where undefined.

    Args:
      auc_flipped: AUC computed with the flipped labels (any shape; NaN where undefined).
      num_positive_flipped: number of examples whose *flipped* label is 1 (``N~+``).
      num_negative_flipped: number whose flipped label is 0 (``N~-``).
      epsilon: the epsilon the labels were flipped with.

    Returns:
      A float64 tensor of the shape of ``auc_flipped``: the debiased AUC clipped to [0, 1]
      where the estimated fraction of positives ``pi`` lies strictly inside (0, 1) and
      ``auc_flipped`` is a number; NaN elsewhere (see the module docstring).

    Examples:
        >>> float(debias_auc(0.7, 0, 0, epsilon=1.0))  # no example: undefined
        nan
    """
    p = flip_probability(epsilon)
    q = p
    auc_flipped = tf.cast(auc_flipped, tf.float64)
    pos = tf.cast(num_positive_flipped, tf.float64)
    neg = tf.cast(num_negative_flipped, tf.float64)
    n = pos + neg
    positives_hat = (pos * (1 - q) - neg * q) / (1 - p - q)
    pi_raw = tf.math.divide_no_nan(positives_hat, n)
    defined = (n > 0) & (pi_raw > 0) & (pi_raw < 1) & tf.math.is_finite(auc_flipped)
    pi = tf.where(defined, pi_raw, tf.constant(0.5, tf.float64))  # keeps every op finite
    alpha = (1 - pi) * q / (pi * (1 - p) + (1 - pi) * q)
    beta = pi * p / (pi * p + (1 - pi) * (1 - q))
    safe_auc = tf.where(defined, auc_flipped, tf.constant(0.5, tf.float64))
    debiased = tf.clip_by_value((safe_auc - (alpha + beta) / 2) / (1 - alpha - beta), 0.0, 1.0)
    return tf.where(defined, debiased, tf.constant(float("nan"), tf.float64))


class RandomizedResponse(CountMechanism):
    """Randomized response on every label (the paper's DPAUC_RR), drawn from bucket counts.

    See the module docstring for the guarantee. The release is the flipped labels' bucket
    counts ``pos``/``neg`` (their totals equal the exact bucket totals: scores are not
    protected); [`estimate_auc`][] debiases the flipped curve's AUC (Menon et al.).

        >>> m = RandomizedResponse(epsilon=1.0, num_thresholds=3)
        >>> r = m.release(tf.constant([0., 50., 30., 0.]), tf.constant([0., 40., 10., 0.]), seed=0)
        >>> [float(x) for x in r["pos"] + r["neg"]]
        [0.0, 90.0, 40.0, 0.0]
    """

    name = "rr"
    capabilities: ClassVar[Capabilities] = Capabilities(
        integer_counts=True, unit_weights=True, xla=False
    )
    grid_rule: ClassVar[GridRule] = GridRule.DEFAULT_GRID  # no per-bucket noise
    interval_law: ClassVar[IntervalLaw] = IntervalLaw.FLIPS
    roc_note = "ROC of the flipped labels; only the AUC is debiased"

    @property
    def flip_probability(self) -> float:
        return flip_probability(self.epsilon)

    @property
    def noise_stddev(self) -> float:
        """Standard deviation of the flipped count of a bucket holding one example."""
        p = self.flip_probability
        return math.sqrt(p * (1.0 - p))

    def _integer_counts_message(self) -> str:
        return (
            f"{self.name} flips whole labels: it needs integer counts (sample weights of 1 "
            "only); a fractional count would be released as it is, and a weight that depends "
            "on the label (Keras class_weight) would show in the released totals"
        )

    def _noisy_release(self, pos, neg, seed):
        p = self.flip_probability
        kept_seed, flipped_seed = tf.unstack(split_seed(seed, 2))
        shape = tf.shape(pos)
        stay = tf.random.stateless_binomial(
            shape,
            kept_seed,
            counts=pos,
            probs=tf.constant(1.0 - p, pos.dtype),
            output_dtype=pos.dtype,
        )
        come = tf.random.stateless_binomial(
            shape, flipped_seed, counts=neg, probs=tf.constant(p, pos.dtype), output_dtype=pos.dtype
        )
        flipped = stay + come
        return {"pos": flipped, "neg": pos + neg - flipped}

    # -- the noise law -------------------------------------------------------------------
    def noise_variances(self, release):
        """The variance ``n[b] p (1 - p)`` of the flipped positive count of every bucket
        (its negative count is the released total minus it)."""
        p = self.flip_probability
        total = np.asarray(release["pos"], np.float64) + np.asarray(release["neg"], np.float64)
        return {"pos": total * p * (1.0 - p)}

    def with_noisy_entries(self, release, noisy):
        """The flipped negatives are the released totals minus the (noisy) positives."""
        out = dict(release, **noisy)
        total = tf.stop_gradient(release["pos"] + release["neg"])
        out["neg"] = total - noisy["pos"]
        return out

    def unclipped_estimate(self, release):
        """Menon et al.'s debiasing (`debias_auc`) of the flipped counts' Mann-Whitney
        area, without its clip; where it is undefined the release's AUC is NaN anyway."""
        flipped = area_over_pairs(
            confusion_from_histogram(release["pos"], release["neg"]), self.within_bucket
        )
        p = q = self.flip_probability
        pos = tf.reduce_sum(release["pos"], -1)
        n = pos + tf.reduce_sum(release["neg"], -1)
        neg = n - pos
        pi = ((pos * (1 - q) - neg * q) / (1 - p - q)) / tf.where(n > 0, n, tf.ones_like(n))
        pi = tf.clip_by_value(pi, 1e-9, 1 - 1e-9)
        alpha = (1 - pi) * q / (pi * (1 - p) + (1 - pi) * q)
        beta = pi * p / (pi * p + (1 - pi) * (1 - q))
        return (flipped - (alpha + beta) / 2) / (1 - alpha - beta)

    def projected_counts(self, release):
        """The monotone projection of the debiased bucket counts."""
        tensors = {key: tf.constant(np.asarray(v, np.float64)) for key, v in release.items()}
        p = self.flip_probability
        total = tensors["pos"] + tensors["neg"]
        pos = (tensors["pos"] * (1 - p) - tensors["neg"] * p) / (1 - 2 * p)
        return histogram_of(monotone_confusion(pos, total - pos))

    def to_confusion(self, release):
        """The flipped labels' cumulative counts (the ROC is not debiased, only the AUC)."""
        return confusion_from_histogram(release["pos"], release["neg"])

    def estimate_auc(self, release):
        """Debiased AUC of the flipped labels (`debias_auc`); NaN where undefined.

        The flipped counts are exact counts of the flipped labels, so the flipped AUC is
        [`mann_whitney_auc`][] (``estimator="reference"``: the reference code's rule, which
        gives the same number on exact counts except where it is undefined).
        """
        confusion = self.to_confusion(release)
        if self.estimator == "reference":
            flipped_auc = auc_from_confusion(confusion)
        else:
            flipped_auc = mann_whitney_auc(confusion, within_bucket=self.within_bucket)
        return debias_auc(
            flipped_auc,
            tf.reduce_sum(release["pos"], axis=-1),
            tf.reduce_sum(release["neg"], axis=-1),
            self.epsilon,
        )

    def dp_event(self) -> dp_accounting.DpEvent:
        """Randomized response over 2 buckets: a random output with probability ``2p``."""
        return dp_event.RandomizedResponseDpEvent(
            noise_parameter=2.0 * self.flip_probability, num_buckets=2
        )

    def statement(self) -> PrivacyStatement:
        p = self.flip_probability
        return PrivacyStatement(
            mechanism=self.name,
            neighbouring=LABEL_DP + "; scores counted exactly",
            sensitivity="one label per example (likelihood ratio (1-p)/p = e^eps)",
            noise=f"each label flipped with probability p = 1/(1+e^eps) = {p:.4g}",
            epsilon=self.epsilon,
            delta=0.0,
        )
