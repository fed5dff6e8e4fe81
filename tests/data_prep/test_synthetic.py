"""The synthetic generator: schema, determinism, missing values, planted signal."""

import numpy as np
import pytest

from data_prep.reader import read_criteo
from data_prep.synthetic import BLOCK_ROWS, SyntheticCriteo


def test_schema_and_value_formats():
    chunk = next(SyntheticCriteo(seed=0).chunks(2000))
    assert chunk.labels.dtype == np.int8 and set(np.unique(chunk.labels)) <= {0, 1}
    assert chunk.integers.shape == (2000, 13) and chunk.categoricals.shape == (2000, 26)
    present = [v for v in chunk.categoricals.ravel() if v]
    assert all(len(v) == 8 and int(v, 16) >= 0 for v in present[:5000])
    values = chunk.integers[~np.isnan(chunk.integers)]
    assert np.array_equal(values, np.floor(values)) and values.min() >= -1
    # Criteo-like missing values: I12 mostly missing, I2 never, C22 mostly empty
    assert np.isnan(chunk.integers[:, 11]).mean() > 0.6
    assert not np.isnan(chunk.integers[:, 1]).any()
    assert (chunk.categoricals[:, 21] == "").mean() > 0.6


def test_deterministic_given_seed_and_independent_of_row_count():
    a = SyntheticCriteo(seed=3)
    b = SyntheticCriteo(seed=3)
    first = list(a.chunks(BLOCK_ROWS + 10))
    short = next(b.chunks(100))
    assert np.array_equal(first[0].labels[:100], short.labels)
    assert np.array_equal(first[0].categoricals[:100], short.categoricals)
    np.testing.assert_array_equal(first[0].integers[:100], short.integers)
    assert len(first) == 2 and first[1].row_index[0] == BLOCK_ROWS
    other = next(SyntheticCriteo(seed=4).chunks(100))
    assert not np.array_equal(other.categoricals, short.categoricals)


def test_seed_none_is_recorded():
    gen = SyntheticCriteo(seed=None)
    assert isinstance(gen.seed, int)
    again = SyntheticCriteo(seed=gen.seed)
    assert np.array_equal(next(gen.chunks(50)).labels, next(again.chunks(50)).labels)


def test_planted_signal_positive_rate_and_auc():
    from sklearn.metrics import roc_auc_score

    gen = SyntheticCriteo(seed=0)
    rows = 60_000
    labels = np.concatenate([c.labels for c in gen.chunks(rows)])
    probability = gen.true_probabilities(rows)
    assert 0.23 < labels.mean() < 0.27
    assert 0.78 < roc_auc_score(labels, probability) < 0.88


def test_tsv_round_trip(tmp_path):
    gen = SyntheticCriteo(seed=1)
    gen.write_tsv(tmp_path / "train.txt", 300)
    chunk, report = read_criteo(tmp_path / "train.txt")
    original = next(gen.chunks(300))
    assert report.malformed_lines == 0 and len(chunk) == 300
    assert np.array_equal(chunk.labels, original.labels)
    assert np.array_equal(chunk.categoricals, original.categoricals)
    np.testing.assert_array_equal(chunk.integers, original.integers)


def test_bad_arguments():
    with pytest.raises(ValueError):
        SyntheticCriteo(seed=0, positive_rate=1.5)
    with pytest.raises(ValueError):
        next(SyntheticCriteo(seed=0).chunks(0))
