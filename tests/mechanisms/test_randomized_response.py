"""Randomized response (``rr``) as a count mechanism: flip rate, statement, debiased AUC."""

from __future__ import annotations

import math

import numpy as np
import pytest
import tensorflow as tf

from dpauc_tf.core.counts import bucket_counts
from dpauc_tf.core.curve import auc_from_histogram
from dpauc_tf.core.thresholds import Thresholds
from dpauc_tf.mechanisms.randomized_response import RandomizedResponse, flip_probability


def test_rr_statement_and_flip_rate():
    m = RandomizedResponse(1.0, 3)
    s = m.statement()
    assert s.epsilon == 1.0 and s.delta == 0.0 and "label DP" in s.neighbouring
    assert "1/(1+e^eps)" in s.noise
    release = m.release(
        tf.constant([0.0, 0.0, 0.0, 0.0]), tf.constant([0.0, 200_000.0, 0, 0]), seed=0
    )
    rate = float(release["pos"][1]) / 200_000
    # p = 0.2689; sd of the rate ~ 0.001.
    assert abs(rate - flip_probability(1.0)) < 0.005
    with pytest.raises(ValueError):
        flip_probability(0.0)


def test_rr_debiased_auc_is_unbiased():
    rng = np.random.default_rng(1)
    n = 20_000
    labels = (rng.random(n) < 0.3).astype(np.float32)
    scores = 1 / (1 + np.exp(-(rng.normal(size=n) + 1.0 * labels - 0.5))).astype(np.float32)
    thresholds = Thresholds.make(200)
    true_auc = float(
        auc_from_histogram(*bucket_counts(labels, scores, thresholds, dtype=tf.float64))
    )
    estimates, flipped_aucs = [], []
    mechanism = RandomizedResponse(2.0, 200)
    exact_pos, exact_neg = bucket_counts(labels, scores, thresholds, dtype=tf.float64)
    for seed in range(40):
        release = mechanism.release(exact_pos, exact_neg, seed=seed)
        flipped_aucs.append(float(auc_from_histogram(release["pos"], release["neg"])))
        estimates.append(float(mechanism.estimate_auc(release)))
    # The flipped AUC is far off; the debiased mean is within ~4 standard errors.
    assert true_auc - np.mean(flipped_aucs) > 0.05
    standard_error = np.std(estimates) / math.sqrt(len(estimates))
    assert abs(np.mean(estimates) - true_auc) < max(4 * standard_error, 0.003)
