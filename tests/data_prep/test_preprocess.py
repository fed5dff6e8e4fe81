"""Vocabularies, the OOV id, min-count, integer scaling and the seeded split."""

import numpy as np
import pytest

from data_prep.preprocess import (
    PreprocessingFitter,
    is_test_row,
    resolve_seed,
    split_uniforms,
)
from data_prep.reader import ParsedChunk
from data_prep.schema import OOV_ID


def make_chunk(cat_column0, ints_column0, start=0):
    n = len(cat_column0)
    cats = np.full((n, 26), "v", dtype=object)
    cats[:, 0] = cat_column0
    ints = np.zeros((n, 13))
    ints[:, 0] = ints_column0
    return ParsedChunk(
        labels=np.arange(n, dtype=np.int8) % 2,
        integers=ints,
        categoricals=cats,
        row_index=np.arange(start, start + n),
        line_numbers=np.arange(start + 1, start + n + 1),
    )


def test_vocabulary_order_oov_and_missing_category():
    fitter = PreprocessingFitter()
    fitter.update(make_chunk(["b", "a", "a", "", "c", "b", "a"], [0] * 7))
    prep = fitter.finish()
    # most frequent first, ties by value; the empty string (missing) is its own category
    assert prep.vocabularies[0] == ["a", "b", "", "c"]
    assert prep.vocab_sizes[0] == 5 and prep.vocab_sizes[1] == 2
    ids = prep.categorical_ids(make_chunk(["a", "", "c", "unseen"], [0] * 4).categoricals)
    assert ids[:, 0].tolist() == [1, 3, 4, OOV_ID]
    assert ids.dtype == np.int32 and ids[:, 0].max() < prep.vocab_sizes[0]


def test_min_count_maps_rare_values_to_oov():
    fitter = PreprocessingFitter()
    fitter.update(make_chunk(["a", "a", "a", "b", "b", "c"], [0] * 6))
    prep = fitter.finish(min_count=2)
    assert prep.vocabularies[0] == ["a", "b"]
    ids = prep.categorical_ids(make_chunk(["a", "b", "c"], [0] * 3).categoricals)
    assert ids[:, 0].tolist() == [1, 2, OOV_ID]
    with pytest.raises(ValueError, match="min_count"):
        fitter.finish(min_count=0)


def test_counts_merge_across_many_chunks():
    fitter = PreprocessingFitter()
    for i in range(20):  # more chunks than the compaction threshold
        fitter.update(make_chunk(["x", f"v{i % 3}"], [0, 0], start=2 * i))
    prep = fitter.finish()
    assert prep.vocabularies[0] == ["x", "v0", "v1", "v2"]


def test_min_max_scaling_with_missing_as_zero_and_clipping():
    fitter = PreprocessingFitter()
    fitter.update(make_chunk(["a"] * 4, [np.nan, 2.0, 10.0, 5.0]))
    prep = fitter.finish()
    assert prep.int_min[0] == 0.0 and prep.int_max[0] == 10.0  # NaN counted as 0
    scaled = prep.scale_integers(make_chunk(["a"] * 4, [np.nan, 5.0, 20.0, -3.0]).integers)
    assert scaled[:, 0].tolist() == [0.0, 0.5, 1.0, 0.0]
    assert scaled.dtype == np.float32
    assert (scaled[:, 1:] == 0).all()  # a constant column scales to 0


def test_log1p_transform():
    fitter = PreprocessingFitter("log1p")
    fitter.update(make_chunk(["a"] * 3, [0.0, np.e - 1, np.e**2 - 1]))
    prep = fitter.finish()
    scaled = prep.scale_integers(make_chunk(["a"] * 3, [0.0, np.e - 1, np.e**2 - 1]).integers)
    np.testing.assert_allclose(scaled[:, 0], [0.0, 0.5, 1.0], rtol=1e-6)
    with pytest.raises(ValueError, match="integer transform"):
        PreprocessingFitter("sqrt")


def test_split_is_deterministic_and_about_ten_percent():
    rows = np.arange(200_000)
    a = is_test_row(rows, 7, 0.1)
    assert np.array_equal(a, is_test_row(rows, 7, 0.1))
    assert abs(a.mean() - 0.1) < 0.003
    assert not np.array_equal(a, is_test_row(rows, 8, 0.1))
    # the split of a row depends only on (seed, row index): chunking cannot change it
    assert np.array_equal(a[1000:2000], is_test_row(rows[1000:2000], 7, 0.1))
    u = split_uniforms(rows, 7)
    assert 0.0 <= u.min() and u.max() < 1.0


def test_seed_none_draws_fresh_entropy():
    assert resolve_seed(3) == 3
    assert resolve_seed(None) != resolve_seed(None)
    with pytest.raises(TypeError):
        resolve_seed("3")


def test_fitting_an_empty_training_part_fails():
    with pytest.raises(ValueError, match="no rows"):
        PreprocessingFitter().finish()
