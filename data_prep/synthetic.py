"""Synthetic click logs with Criteo's schema and a planted signal (the project's default data).

Rows look like Criteo's: a 0/1 label, 13 heavy-tailed integer counts (``I2`` may be -1) and 26
categorical hashes (8 hex characters), with Criteo-like missing rates and Zipf-distributed
category frequencies (the vocabulary sizes follow Criteo's, capped at 50,000).

The label is drawn from a logistic model: ``P(click) = sigmoid(bias + signal)``, where the signal
sums per-value effects of 10 categorical columns, an interaction of ``C1`` and ``C2``, and
effects of 6 integer columns (and of ``I1`` being missing). ``bias`` is set so that about 25 %
of rows are positive, as in Criteo (23.8 % in the shared real sample). A model that knew the
true logits would reach an AUC of about 0.80; Wide & Deep trained on 100k-1M rows reaches about
0.75-0.78 (see ``tests/models``).

Everything is a fixed function of ``seed``: row ``i`` is the same whatever the chunk size and
however many rows are asked for.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from data_prep.preprocess import resolve_seed
from data_prep.reader import ParsedChunk
from data_prep.schema import NUM_CATEGORICAL_FEATURES, NUM_INTEGER_FEATURES

# Criteo Kaggle training-set vocabulary sizes of C1..C26, capped at 50,000.
CRITEO_VOCAB_SIZES = (
    1460, 583, 10131227, 2202608, 305, 24, 12517, 633, 3, 93145, 5683, 8351593, 3194,
    27, 14992, 5461306, 10, 5652, 2173, 4, 7046547, 18, 15, 286181, 105, 142572,
)  # fmt: skip
SYNTHETIC_VOCAB_CAP = 50_000
# Approximate share of missing values per column in Criteo's training set.
CATEGORICAL_MISSING_RATES = (
    0.0, 0.0, 0.034, 0.034, 0.0, 0.121, 0.0, 0.0, 0.0, 0.0, 0.0, 0.034, 0.0,
    0.0, 0.0, 0.034, 0.0, 0.0, 0.44, 0.44, 0.034, 0.76, 0.0, 0.034, 0.44, 0.44,
)  # fmt: skip
INTEGER_MISSING_RATES = (
    0.45, 0.0, 0.21, 0.22, 0.026, 0.22, 0.043, 0.0005, 0.043, 0.45, 0.043, 0.77, 0.22,
)  # fmt: skip
# log-normal parameters of the integer counts (I5 is large, I10 and I12 are small).
_INTEGER_LOG_MEAN = np.array([0.5, 1.5, 2.0, 1.8, 7.5, 3.5, 1.5, 2.5, 3.5, 0.2, 1.0, 0.3, 2.0])
_INTEGER_LOG_STD = np.array([1.2, 1.6, 1.4, 1.1, 1.8, 1.6, 1.3, 1.0, 1.4, 0.8, 1.0, 0.9, 1.3])
_ZIPF_EXPONENT = 1.1

# The planted signal: standard deviations of per-value effects of the informative categorical
# columns (0-based column index -> std), of the C1 x C2 interaction, and integer slopes.
_CATEGORICAL_EFFECT_STD = {0: 0.5, 1: 0.4, 4: 0.5, 6: 0.5, 10: 0.6, 13: 0.4, 16: 0.5, 18: 0.3,
                           22: 0.4, 24: 0.3}  # fmt: skip
_INTERACTION_STD = 0.5
_INTERACTION_BUCKETS = 16
_INTEGER_SLOPES = {0: 0.35, 2: -0.25, 5: 0.2, 6: 0.3, 10: 0.35, 12: -0.2}
_I1_MISSING_EFFECT = -0.3
TARGET_POSITIVE_RATE = 0.25
BLOCK_ROWS = 1 << 16  # rows are generated in blocks with their own random streams
_M32 = 0xFFFFFFFF


def _hash32(x: np.ndarray, key: int) -> np.ndarray:
    """A bijection of 32-bit integers (so distinct ranks get distinct hashes)."""
    x = (x.astype(np.uint64) ^ np.uint64(key & _M32)) & np.uint64(_M32)
    x = (x * np.uint64(0x9E3779B1)) & np.uint64(_M32)
    x ^= x >> np.uint64(16)
    x = (x * np.uint64(0x85EBCA6B)) & np.uint64(_M32)
    x ^= x >> np.uint64(13)
    return x


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


@dataclass
class SyntheticCriteo:
    """A deterministic generator of Criteo-shaped rows with a planted signal.

    Args:
        seed: an integer makes every row reproducible; ``None`` draws fresh entropy (the drawn
            seed is kept in :attr:`seed`, so a run can still be repeated).
        positive_rate: the target share of positive labels.

    Example:
        >>> gen = SyntheticCriteo(seed=0)
        >>> chunk = next(gen.chunks(1000))
        >>> len(chunk), chunk.categoricals.shape, chunk.integers.shape
        (1000, (1000, 26), (1000, 13))
        >>> bool(np.array_equal(chunk.labels, next(SyntheticCriteo(seed=0).chunks(1000)).labels))
        True
    """

    seed: int | None = 0
    positive_rate: float = TARGET_POSITIVE_RATE
    vocab_sizes: tuple[int, ...] = field(
        default_factory=lambda: tuple(min(v, SYNTHETIC_VOCAB_CAP) for v in CRITEO_VOCAB_SIZES)
    )

    def __post_init__(self) -> None:
        self.seed = resolve_seed(self.seed)
        if not 0.0 < self.positive_rate < 1.0:
            raise ValueError(f"positive_rate must be in (0, 1), got {self.positive_rate}")
        if len(self.vocab_sizes) != NUM_CATEGORICAL_FEATURES or min(self.vocab_sizes) < 1:
            raise ValueError("vocab_sizes needs 26 positive sizes")
        rng = np.random.default_rng([self.seed, 0xC817E0])
        self._cdfs = []
        for size in self.vocab_sizes:
            weights = 1.0 / np.arange(1, size + 1) ** _ZIPF_EXPONENT
            self._cdfs.append(np.cumsum(weights) / weights.sum())
        # Effects: per informative column one per value rank, plus one for "missing" (last).
        self._effects = {
            c: rng.normal(0.0, std, self.vocab_sizes[c] + 1)
            for c, std in sorted(_CATEGORICAL_EFFECT_STD.items())
        }
        self._interaction = rng.normal(
            0.0, _INTERACTION_STD, (_INTERACTION_BUCKETS, _INTERACTION_BUCKETS)
        )
        self._hash_keys = rng.integers(0, 1 << 32, NUM_CATEGORICAL_FEATURES)
        self._tables: list[np.ndarray | None] = [None] * NUM_CATEGORICAL_FEATURES
        self._bias = 0.0
        self._bias = self._calibrate_bias(rng)

    def _value_table(self, column: int) -> np.ndarray:
        """The hex strings of column ``column``'s values, by rank (built on first use)."""
        table = self._tables[column]
        if table is None:
            hashes = _hash32(np.arange(self.vocab_sizes[column]), int(self._hash_keys[column]))
            table = np.array([f"{h:08x}" for h in hashes.tolist()], dtype=object)
            self._tables[column] = table
        return table

    def _draw_block(self, rng: np.random.Generator, n: int):
        ranks = np.empty((n, NUM_CATEGORICAL_FEATURES), dtype=np.int64)
        missing_cat = np.empty((n, NUM_CATEGORICAL_FEATURES), dtype=bool)
        for c in range(NUM_CATEGORICAL_FEATURES):
            ranks[:, c] = np.searchsorted(self._cdfs[c], rng.random(n), side="right")
            np.minimum(ranks[:, c], self.vocab_sizes[c] - 1, out=ranks[:, c])
            missing_cat[:, c] = rng.random(n) < CATEGORICAL_MISSING_RATES[c]
        counts = np.floor(rng.lognormal(_INTEGER_LOG_MEAN, _INTEGER_LOG_STD, (n, 13)))
        counts[:, 1] -= 1.0  # I2 takes the value -1, as in Criteo
        missing_int = rng.random((n, NUM_INTEGER_FEATURES)) < np.array(INTEGER_MISSING_RATES)
        return ranks, missing_cat, counts, missing_int

    def _signal(self, ranks, missing_cat, counts, missing_int) -> np.ndarray:
        signal = np.zeros(len(ranks))
        for c, effects in self._effects.items():
            index = np.where(missing_cat[:, c], self.vocab_sizes[c], ranks[:, c])
            signal += effects[index]
        signal += self._interaction[
            ranks[:, 0] % _INTERACTION_BUCKETS, ranks[:, 1] % _INTERACTION_BUCKETS
        ]
        for j, slope in _INTEGER_SLOPES.items():
            z = (np.log1p(np.maximum(counts[:, j], 0.0)) - _INTEGER_LOG_MEAN[j]) / _INTEGER_LOG_STD[
                j
            ]
            signal += np.where(missing_int[:, j], 0.0, slope * z)
        signal += np.where(missing_int[:, 0], _I1_MISSING_EFFECT, 0.0)
        return signal

    def _calibrate_bias(self, rng: np.random.Generator) -> float:
        signal = self._signal(*self._draw_block(rng, 50_000))
        low, high = -10.0, 10.0
        for _ in range(60):  # bisection: mean click probability == positive_rate
            mid = (low + high) / 2
            if _sigmoid(mid + signal).mean() < self.positive_rate:
                low = mid
            else:
                high = mid
        return (low + high) / 2

    def block(self, index: int, rows: int = BLOCK_ROWS) -> tuple[ParsedChunk, np.ndarray]:
        """Rows ``index * BLOCK_ROWS ...`` (the first ``rows`` of the block) and their true
        click probabilities."""
        rng = np.random.default_rng([self.seed, 1, index])
        ranks, missing_cat, counts, missing_int = self._draw_block(rng, BLOCK_ROWS)
        probability = _sigmoid(self._bias + self._signal(ranks, missing_cat, counts, missing_int))
        labels = (rng.random(BLOCK_ROWS) < probability).astype(np.int8)
        categoricals = np.empty((rows, NUM_CATEGORICAL_FEATURES), dtype=object)
        for c in range(NUM_CATEGORICAL_FEATURES):
            categoricals[:, c] = self._value_table(c)[ranks[:rows, c]]
            categoricals[missing_cat[:rows, c], c] = ""
        integers = np.where(missing_int, np.nan, counts)[:rows]
        start = index * BLOCK_ROWS
        chunk = ParsedChunk(
            labels=labels[:rows],
            integers=integers,
            categoricals=categoricals,
            row_index=np.arange(start, start + rows, dtype=np.int64),
            line_numbers=np.arange(start + 1, start + rows + 1, dtype=np.int64),
        )
        return chunk, probability[:rows]

    def chunks(self, rows: int) -> Iterator[ParsedChunk]:
        """The first ``rows`` rows, in blocks of at most :data:`BLOCK_ROWS`."""
        if rows < 1:
            raise ValueError(f"rows must be at least 1, got {rows}")
        for index in range(-(-rows // BLOCK_ROWS)):
            yield self.block(index, min(BLOCK_ROWS, rows - index * BLOCK_ROWS))[0]

    def true_probabilities(self, rows: int) -> np.ndarray:
        """The planted click probabilities of the first ``rows`` rows (the ideal scores)."""
        parts = []
        for index in range(-(-rows // BLOCK_ROWS)):
            parts.append(self.block(index, min(BLOCK_ROWS, rows - index * BLOCK_ROWS))[1])
        return np.concatenate(parts)

    def write_tsv(self, path: str | os.PathLike, rows: int, *, progress: bool = False) -> None:
        """Write the first ``rows`` rows in Criteo's raw TSV layout (``train.txt``)."""
        from tqdm.auto import tqdm

        with open(path, "w", encoding="utf-8", newline="\n") as f:
            for chunk in tqdm(
                self.chunks(rows),
                total=-(-rows // BLOCK_ROWS),
                desc="synthetic rows",
                disable=not progress,
                leave=False,
            ):
                f.write(chunk_to_tsv(chunk))


def chunk_to_tsv(chunk: ParsedChunk) -> str:
    """Format parsed rows as raw TSV lines (integers without decimals, missing -> empty)."""
    columns = [chunk.labels.astype(str).astype(object)]
    for j in range(NUM_INTEGER_FEATURES):
        values = chunk.integers[:, j]
        text = np.full(len(values), "", dtype=object)
        present = ~np.isnan(values)
        text[present] = values[present].astype(np.int64).astype(str)
        columns.append(text)
    columns.extend(chunk.categoricals[:, c] for c in range(NUM_CATEGORICAL_FEATURES))
    table = np.stack(columns, axis=1)
    return "".join("\t".join(row) + "\n" for row in table.tolist())
