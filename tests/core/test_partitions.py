"""Partitions of a test set among clients (IID, non-IID, label-skewed)."""

from __future__ import annotations

import numpy as np
import pytest

from dpauc_tf.core.partitions import (
    client_slices,
    iid_partition,
    label_skewed_partition,
    non_iid_partition,
    partition,
)


def test_non_iid_is_contiguous_equal_blocks_like_reference():
    scores = np.random.default_rng(0).random(103)
    ids = non_iid_partition(scores, 10)
    ranks = np.argsort(np.argsort(scores, kind="stable"), kind="stable")
    np.testing.assert_array_equal(ids, [int(r / (103 / 10)) for r in ranks])
    order = np.argsort(scores)
    assert np.all(np.diff(ids[order]) >= 0)
    assert np.bincount(ids).min() >= 10


def test_iid_and_label_skew_are_seeded_and_cover_all_examples():
    a, b = iid_partition(1000, 7, seed=3), iid_partition(1000, 7, seed=3)
    np.testing.assert_array_equal(a, b)
    assert a.min() >= 0 and a.max() < 7
    labels = (np.arange(2000) % 4 == 0).astype(int)
    ids = label_skewed_partition(labels, 20, concentration=0.1, seed=0)
    per_client = np.bincount(ids[labels == 1], minlength=20)
    assert per_client.max() > 3 * per_client.mean()  # skewed
    slices = client_slices(ids, 25)  # five clients empty
    assert sum(s.size for s in slices) == 2000 and slices[24].size == 0
    with pytest.raises(ValueError, match="partition must be one of"):
        partition("random", labels, labels, 3)
    with pytest.raises(ValueError):
        iid_partition(10, 0)
