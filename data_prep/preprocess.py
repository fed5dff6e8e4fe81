"""The paper's preprocessing: train/test split, vocabularies, integer scaling.

Steps (Sun et al. 2023 follow the usual Criteo recipe):

* missing categorical -> its own category (the empty string);
* missing integer -> 0;
* every categorical value -> an integer id in ``[0, vocabulary size)``; id 0
  (:data:`~data_prep.schema.OOV_ID`) is shared by values unseen in the training part and
  values rarer than ``min_count``;
* every integer feature linearly scaled into [0, 1] (min-max over the training part; test
  values outside the training range are clipped);
* a random train/test split (each row is a test row with probability ``test_fraction``).

Vocabularies and scaling are fitted on the training part only. The split of a row depends
only on ``(seed, row index)`` through a hash, so it does not depend on chunking and two
passes over a file agree.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import pandas as pd

from data_prep.reader import ParsedChunk, ReadReport
from data_prep.schema import (
    CATEGORICAL_COLUMNS,
    CATEGORICAL_IDS_KEY,
    INTEGER_COLUMNS,
    INTEGER_FEATURES_KEY,
    LABEL_KEY,
    NUM_CATEGORICAL_FEATURES,
    NUM_INTEGER_FEATURES,
    OOV_ID,
)

INTEGER_TRANSFORMS = ("identity", "log1p")
_MASK64 = (1 << 64) - 1


def resolve_seed(seed: int | None) -> int:
    """An integer seed: ``seed`` itself, or fresh entropy from the OS when ``seed`` is None."""
    if seed is None:
        return int(np.random.SeedSequence().entropy % (1 << 63))
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an integer or None, got {seed!r}")
    return int(seed)


def _splitmix64(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser on a uint64 array (a good 64-bit mixing function)."""
    x = x + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def split_uniforms(row_index: np.ndarray, seed: int) -> np.ndarray:
    """Uniform numbers in [0, 1), one per row, a fixed function of ``(seed, row index)``."""
    key = np.uint64((int(seed) * 0xD1B54A32D192ED03) & _MASK64)
    with np.errstate(over="ignore"):
        mixed = _splitmix64(_splitmix64(np.asarray(row_index, dtype=np.uint64) ^ key))
    return (mixed >> np.uint64(11)).astype(np.float64) / float(1 << 53)


def is_test_row(row_index: np.ndarray, seed: int, test_fraction: float) -> np.ndarray:
    """Boolean mask: which rows belong to the test split."""
    return split_uniforms(row_index, seed) < test_fraction


def transform_integers(values: np.ndarray, transform: str) -> np.ndarray:
    """Missing (NaN) -> 0, then the optional monotone transform before min-max scaling."""
    if transform not in INTEGER_TRANSFORMS:
        raise ValueError(
            f"integer transform must be one of {INTEGER_TRANSFORMS}, got {transform!r}"
        )
    filled = np.where(np.isnan(values), 0.0, values)
    if transform == "log1p":
        return np.sign(filled) * np.log1p(np.abs(filled))
    return filled


class _ValueCounter:
    """Counts of the values of one categorical column, merged across chunks."""

    def __init__(self) -> None:
        self._parts: list[pd.Series] = []

    def add(self, values: np.ndarray) -> None:
        self._parts.append(pd.Series(values, dtype=object).value_counts(sort=False))
        if len(self._parts) >= 8:
            self._compact()

    def _compact(self) -> None:
        if len(self._parts) > 1:
            merged = pd.concat(self._parts).groupby(level=0, sort=False).sum()
            self._parts = [merged]

    def counts(self) -> pd.Series:
        self._compact()
        return self._parts[0] if self._parts else pd.Series([], dtype=np.int64)


@dataclass
class CriteoPreprocessing:
    """Fitted vocabularies and integer scaling; turns parsed rows into model arrays.

    Attributes:
        vocabularies: per categorical column, its values in id order: value ``v`` at position
            ``k`` has id ``k + 1``; id 0 is the out-of-vocabulary id.
        int_min, int_max: per integer column, the range of the (transformed) training values.
        integer_transform: ``"identity"`` (the paper) or ``"log1p"`` before scaling.
        min_count: values seen fewer times than this in the training part map to id 0.

    Example:
        >>> from data_prep.reader import ParsedChunk
        >>> chunk = ParsedChunk(
        ...     labels=np.array([1, 0], np.int8),
        ...     integers=np.array([[0.0] * 13, [4.0] * 13]),
        ...     categoricals=np.array([["a"] * 26, [""] * 26], dtype=object),
        ...     row_index=np.arange(2), line_numbers=np.arange(1, 3))
        >>> fitter = PreprocessingFitter(); fitter.update(chunk)
        >>> prep = fitter.finish()
        >>> prep.transform(chunk)["int_features"][:, 0].tolist()
        [0.0, 1.0]
    """

    vocabularies: list[list[str]]
    int_min: np.ndarray
    int_max: np.ndarray
    integer_transform: str = "identity"
    min_count: int = 1

    def __post_init__(self) -> None:
        self._indexes = [pd.Index(v, dtype=object) for v in self.vocabularies]
        self.int_min = np.asarray(self.int_min, dtype=np.float64)
        self.int_max = np.asarray(self.int_max, dtype=np.float64)

    @property
    def vocab_sizes(self) -> list[int]:
        """Number of ids per categorical column, the OOV id included."""
        return [len(v) + 1 for v in self.vocabularies]

    def scale_integers(self, integers: np.ndarray) -> np.ndarray:
        """Missing -> 0, transform, min-max scale with the training range, clip to [0, 1]."""
        values = transform_integers(integers, self.integer_transform)
        span = self.int_max - self.int_min
        safe_span = np.where(span > 0, span, 1.0)
        scaled = np.where(span > 0, (values - self.int_min) / safe_span, 0.0)
        return np.clip(scaled, 0.0, 1.0).astype(np.float32)

    def categorical_ids(self, categoricals: np.ndarray) -> np.ndarray:
        """Map category strings to ids; unseen or rare values get :data:`OOV_ID`."""
        ids = np.empty((len(categoricals), NUM_CATEGORICAL_FEATURES), dtype=np.int32)
        for j, index in enumerate(self._indexes):
            # get_indexer gives -1 for values not in the vocabulary: -1 + 1 == OOV_ID.
            ids[:, j] = index.get_indexer(categoricals[:, j]) + 1
        assert OOV_ID == 0
        return ids

    def transform(self, chunk: ParsedChunk) -> dict[str, np.ndarray]:
        """Model-ready arrays: ``label`` (int8), ``int_features`` (float32), ``cat_ids`` (int32)."""
        return {
            LABEL_KEY: chunk.labels.astype(np.int8),
            INTEGER_FEATURES_KEY: self.scale_integers(chunk.integers),
            CATEGORICAL_IDS_KEY: self.categorical_ids(chunk.categoricals),
        }

    def scaling_metadata(self) -> dict:
        return {
            "method": "min-max over the training part, clipped to [0, 1]; missing -> 0",
            "transform": self.integer_transform,
            "columns": list(INTEGER_COLUMNS),
            "min": self.int_min.tolist(),
            "max": self.int_max.tolist(),
        }


class PreprocessingFitter:
    """Accumulates training-part statistics chunk by chunk; :meth:`finish` fits."""

    def __init__(self, integer_transform: str = "identity") -> None:
        if integer_transform not in INTEGER_TRANSFORMS:
            raise ValueError(
                f"integer transform must be one of {INTEGER_TRANSFORMS}, got {integer_transform!r}"
            )
        self.integer_transform = integer_transform
        self._counters = [_ValueCounter() for _ in CATEGORICAL_COLUMNS]
        self._min = np.full(NUM_INTEGER_FEATURES, np.inf)
        self._max = np.full(NUM_INTEGER_FEATURES, -np.inf)
        self.rows = 0

    def update(self, chunk: ParsedChunk) -> None:
        if len(chunk) == 0:
            return
        values = transform_integers(chunk.integers, self.integer_transform)
        self._min = np.minimum(self._min, values.min(axis=0))
        self._max = np.maximum(self._max, values.max(axis=0))
        for j, counter in enumerate(self._counters):
            counter.add(chunk.categoricals[:, j])
        self.rows += len(chunk)

    def finish(self, min_count: int = 1) -> CriteoPreprocessing:
        """Vocabularies (values with at least ``min_count`` training rows, most frequent first,
        ties by value) and the integer ranges."""
        if min_count < 1:
            raise ValueError(f"min_count must be at least 1, got {min_count}")
        if self.rows == 0:
            raise ValueError("cannot fit preprocessing: the training part has no rows")
        vocabularies = []
        for counter in self._counters:
            counts = counter.counts()
            counts = counts[counts >= min_count].sort_index()
            counts = counts.sort_values(ascending=False, kind="stable")
            vocabularies.append([str(v) for v in counts.index])
        return CriteoPreprocessing(
            vocabularies=vocabularies,
            int_min=self._min.copy(),
            int_max=self._max.copy(),
            integer_transform=self.integer_transform,
            min_count=min_count,
        )


ChunkSource = Callable[[ReadReport, str], Iterator[ParsedChunk]]
"""A re-iterable source of parsed rows: called once per pass with a report and a description."""


def fit_preprocessing(
    source: ChunkSource,
    *,
    seed: int,
    test_fraction: float,
    min_count: int = 1,
    integer_transform: str = "identity",
) -> tuple[CriteoPreprocessing, ReadReport]:
    """Pass 1: read every row, keep the training part's statistics, fit."""
    check_test_fraction(test_fraction)
    fitter = PreprocessingFitter(integer_transform)
    report = ReadReport()
    for chunk in source(report, "pass 1/2: fit"):
        train = ~is_test_row(chunk.row_index, seed, test_fraction)
        fitter.update(_select(chunk, train))
    if report.rows == 0:
        raise ValueError("the input holds no valid rows")
    return fitter.finish(min_count), report


def transform_splits(
    source: ChunkSource,
    preprocessing: CriteoPreprocessing,
    sinks: dict[str, Callable[[dict[str, np.ndarray]], None]],
    *,
    seed: int,
    test_fraction: float,
) -> None:
    """Pass 2: read every row again, transform it and hand it to its split's sink."""
    for chunk in source(ReadReport(), "pass 2/2: write"):
        test = is_test_row(chunk.row_index, seed, test_fraction)
        for split, mask in (("train", ~test), ("test", test)):
            if mask.any():
                sinks[split](preprocessing.transform(_select(chunk, mask)))


def check_test_fraction(test_fraction: float) -> None:
    if not 0.0 < float(test_fraction) < 1.0:
        raise ValueError(f"test fraction must be strictly between 0 and 1, got {test_fraction}")


def _select(chunk: ParsedChunk, mask: np.ndarray) -> ParsedChunk:
    return ParsedChunk(
        labels=chunk.labels[mask],
        integers=chunk.integers[mask],
        categoricals=chunk.categoricals[mask],
        row_index=chunk.row_index[mask],
        line_numbers=chunk.line_numbers[mask],
    )
