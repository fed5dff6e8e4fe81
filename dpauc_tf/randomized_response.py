"""Randomized response on labels (the paper's DPAUC_RR baseline) and its debiased AUC.

Mechanism (Warner 1965; used for AUC by the DPAUC paper, debiasing by Menon et al. 2015):

* **Neighbouring relation**: label DP: two test sets are neighbours when they differ only in
  the label of one example (the scores are not protected and are counted exactly).
* **Noise**: every label is flipped independently with probability ``p = 1 / (1 + e^eps)``.
* **Sensitivity**: one label is one input of one randomized response; the likelihood ratio of
  any flipped label is ``(1 - p) / p = e^eps``.
* **Epsilon**: ``eps``-label-DP (``delta = 0``) for the flipped labels *and everything computed
  from them*: clients may flip once and reuse the flipped labels for any number of later
  evaluations at no further cost. (:func:`dpauc_tf.federated.evaluate` flips afresh on every
  call, so each call there costs ``eps``.) Composition of several independent flips is
  accounted by the sum; randomized response is the least favourable ``eps``-DP mechanism, so
  no tighter accountant applies in general.

The server sees exact counts of the *flipped* labels and debiases (DESIGN.md, Menon et al.),
with ``q = p``:

``P^ = (N~+ (1 - q) - N~- q) / (1 - p - q)``, ``pi = P^ / n``,
``alpha = (1 - pi) q / (pi (1 - p) + (1 - pi) q)``, ``beta = pi p / (pi p + (1 - pi)(1 - q))``,
``AUC = (AUC~ - (alpha + beta) / 2) / (1 - alpha - beta)``,

clipped to [0, 1] (the reference code does not clip; values above 1 occur there).

>>> round(flip_probability(1.0), 4)
0.2689
>>> round(float(debias_auc(0.5, 50, 50, epsilon=1.0)), 12)  # a flipped AUC of 0.5 stays 0.5
0.5
"""

from __future__ import annotations

import math

import tensorflow as tf

from dpauc_tf import noise
from dpauc_tf.accounting import EpsilonSpent
from dpauc_tf.mechanisms import LABEL_DP, PrivacyStatement, check_epsilon

NAME = "rr"


def flip_probability(epsilon: float) -> float:
    """``p = 1 / (1 + e^eps)``: the probability that randomized response flips a label."""
    epsilon = check_epsilon(epsilon)
    if epsilon is None:
        raise ValueError("randomized response needs an epsilon > 0")
    return 1.0 / (1.0 + math.exp(epsilon))


def flip_labels(labels, epsilon: float, seed) -> tf.Tensor:
    """Flips each 0/1 label independently with probability :func:`flip_probability`.

    Args:
      labels: 0/1 labels (any shape, any numeric or bool dtype).
      epsilon: label-DP epsilon of the flip.
      seed: ``None`` (OS entropy), an int, or a ``[2]`` int64 tensor for the stateless RNG.

    Returns:
      Flipped labels with the dtype and shape of ``labels`` (bool input: float32).
    """
    p = flip_probability(epsilon)
    labels = tf.convert_to_tensor(labels)
    if labels.dtype == tf.bool:
        labels = tf.cast(labels, tf.float32)
    uniform = tf.random.stateless_uniform(
        tf.shape(labels), seed=noise.make_seed(seed), dtype=tf.float64
    )
    flip = tf.cast(uniform < p, labels.dtype)
    return labels + flip - 2 * labels * flip  # XOR for 0/1 values


def debias_auc(auc_flipped, num_positive_flipped, num_negative_flipped, epsilon: float):
    """Menon et al.'s unbiased AUC estimate from the AUC on flipped labels, clipped to [0, 1].

    Args:
      auc_flipped: AUC computed with the flipped labels (any shape).
      num_positive_flipped: number of examples whose *flipped* label is 1 (``N~+``).
      num_negative_flipped: number whose flipped label is 0 (``N~-``).
      epsilon: the epsilon the labels were flipped with.

    Returns:
      A float64 tensor of the shape of ``auc_flipped``.
    """
    p = flip_probability(epsilon)
    q = p
    auc_flipped = tf.cast(auc_flipped, tf.float64)
    pos = tf.cast(num_positive_flipped, tf.float64)
    neg = tf.cast(num_negative_flipped, tf.float64)
    n = pos + neg
    positives_hat = (pos * (1 - q) - neg * q) / (1 - p - q)
    pi = tf.clip_by_value(tf.math.divide_no_nan(positives_hat, n), 0.0, 1.0)
    alpha = tf.math.divide_no_nan((1 - pi) * q, pi * (1 - p) + (1 - pi) * q)
    beta = tf.math.divide_no_nan(pi * p, pi * p + (1 - pi) * (1 - q))
    debiased = tf.math.divide_no_nan(auc_flipped - (alpha + beta) / 2, 1 - alpha - beta)
    return tf.clip_by_value(debiased, 0.0, 1.0)


def statement(epsilon: float) -> PrivacyStatement:
    """The guarantee of one randomized-response flip of every label."""
    p = flip_probability(epsilon)
    return PrivacyStatement(
        mechanism=NAME,
        neighbouring=LABEL_DP + "; scores counted exactly",
        sensitivity="one label per example (likelihood ratio (1-p)/p = e^eps)",
        noise=f"each label flipped with probability p = 1/(1+e^eps) = {p:.4g}",
        epsilon=float(epsilon),
        delta=0.0,
    )


def privacy_spent(epsilon: float, releases: int = 1) -> EpsilonSpent:
    """Epsilon of ``releases`` independent flips (the sum; no tighter accountant applies)."""
    flip_probability(epsilon)  # validates epsilon
    if releases < 0:
        raise ValueError(f"releases must be >= 0, got {releases}")
    return EpsilonSpent(
        basic=releases * float(epsilon), pld=None, rdp=None, delta=0.0, count=releases
    )
