"""Score files of any size: per-client bucket counts in one chunked pass, bounded memory.

[`count_score_file`][] reads a file (or a directory or glob of them) in chunks
([`dpauc_tf.io.readers`][]) and keeps only counts: per client, the mechanism
grid's ``T + 1`` buckets (`dpauc_tf.core.counts.bucket_counts_numpy`, TensorFlow's
bucket rule bit for bit, int64); summed over clients, any further grids (TensorFlow's, for
the reference ``tf_auc``) and a fine histogram of ``2^20`` equal buckets over [0, 1] for
the reference AUC. State is ``O(K x T + 2^20)`` whatever the number of examples.

The examples themselves are kept too while there are at most ``max_rows_in_memory`` of
them: then the reference AUC is scikit-learn's exact one (as for a whole file in memory),
and what needs every example (a ``--clients`` partition, a mechanism that transforms the
data) can run. Past the limit they are dropped and the reference AUC comes from the fine
histogram, with its largest possible error stated
(`dpauc_tf.experiments.ground_truth.histogram_auc`); never silently approximate.

Client ids (a client column) may be any sortable values; they become ``0..K-1`` in sorted
order, exactly as the whole-file reader numbers them.

Examples:
    >>> import tempfile, pathlib
    >>> from dpauc_tf.core.thresholds import Thresholds
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "s.csv"
    >>> _ = path.write_text("score,label,client\\n0.2,0,b\\n0.7,1,a\\n0.4,1,b\\n")
    >>> counted = count_score_file(path, Thresholds.make(3), client_column="client", chunk_rows=2)
    >>> counted.num_examples, counted.num_clients, counted.pos.tolist()
    (3, 2, [[0, 0, 1, 0], [0, 1, 0, 0]])
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Iterable, Mapping

import numpy as np

from dpauc_tf.core.counts import bucket_counts_numpy
from dpauc_tf.core.thresholds import Thresholds
from dpauc_tf.io.errors import ScoreFileError
from dpauc_tf.io.readers import (
    DEFAULT_CHUNK_ROWS,
    ScoreChunk,
    count_rows,
    iter_score_chunks,
    score_files,
)
from dpauc_tf.io.scores import ScoreSet

FINE_BUCKETS = 1 << 20
# Examples kept for the exact AUC (float64 score, int8 label, int64 client: 17 bytes each;
# scikit-learn's exact AUC needs a few times that while it sorts).
DEFAULT_MAX_ROWS_IN_MEMORY = 2_000_000
# Per-client counts of one chunk are bincounted densely up to this many cells.
_MAX_DENSE_CELLS = 1 << 23
# Smaller chunks are counted together: each count has a fixed cost (the fine histogram alone
# is 2^21 cells), which chunks of a few rows would pay once per row.
_COUNT_BATCH_ROWS = 1 << 16


def fine_bucket_ids(scores: np.ndarray) -> np.ndarray:
    """Bucket ``floor(s * 2^20)`` of each score in [0, 1] (1 joins the last bucket).

    Bucket ``b`` holds ``[b / 2^20, (b + 1) / 2^20)``: disjoint, ordered intervals, so two
    scores in different buckets are ordered by their buckets (the product by a power of two
    is exact in float64).
    """
    ids = (np.asarray(scores, np.float64) * FINE_BUCKETS).astype(np.int64)
    return np.minimum(ids, FINE_BUCKETS - 1, out=ids)


@dataclasses.dataclass(frozen=True)
class CountedScores:
    """What one pass over a score file leaves: counts, totals and maybe the examples.

    Attributes:
      pos: int64 ``[K, T + 1]`` per-client positive counts on the counting grid (``K = 1``
        without a client column).
      neg: the negative counts, the same shape.
      summed: ``{name: (pos, neg)}``, int64 ``[T' + 1]`` counts of every extra grid.
      fine_pos: int64 ``[2^20]`` fine histogram of the positives over [0, 1].
      fine_neg: the negatives' fine histogram.
      num_examples: the number of examples.
      num_positives: the number of positives.
      client_keys: the raw client ids in sorted order (``None`` without a client column).
      examples: the validated examples (client ids ``0..K-1``) if there were at most
        ``max_rows_in_memory``, else ``None``.
      max_rows_in_memory: that limit.

    Examples:
        >>> counter = ScoreCounter(Thresholds.make(3), max_rows_in_memory=0)
        >>> counter.add(ScoreChunk(np.array([1, 0], np.int8), np.array([0.9, 0.2]), None, "x", 1))
        >>> counted = counter.finish()
        >>> counted.num_clients, counted.num_positives, counted.examples is None
        (1, 1, True)
    """

    pos: np.ndarray
    neg: np.ndarray
    summed: Mapping[str, tuple[np.ndarray, np.ndarray]]
    fine_pos: np.ndarray
    fine_neg: np.ndarray
    num_examples: int
    num_positives: int
    client_keys: np.ndarray | None
    examples: ScoreSet | None
    max_rows_in_memory: int

    @property
    def num_clients(self) -> int:
        return int(self.pos.shape[0])

    @property
    def num_file_clients(self) -> int:
        """Clients named by the file's client column (0 without one)."""
        return 0 if self.client_keys is None else int(self.client_keys.size)


class _ClientIndex:
    """Raw client ids -> dense indices in first-seen order (sorted order at the end)."""

    def __init__(self):
        self.sorted_keys: np.ndarray | None = None
        self.sorted_index = np.zeros(0, np.int64)
        self.kind: str | None = None

    def __len__(self) -> int:
        return int(self.sorted_index.size)

    def lookup(self, raw: np.ndarray, source: str, first_row: int) -> np.ndarray:
        kind = "text" if raw.dtype == object else "number"
        if self.kind is not None and kind != self.kind:
            raise ScoreFileError(
                f"{source}: rows from {first_row}: client ids are {kind}s after {self.kind}s; "
                "use one type"
            )
        self.kind = kind
        try:
            unique, inverse = np.unique(raw, return_inverse=True)
        except TypeError as error:
            raise ScoreFileError(f"{source}: client ids cannot be compared ({error})") from None
        if self.sorted_keys is None:
            self.sorted_keys = unique
            self.sorted_index = np.arange(unique.size, dtype=np.int64)
            return inverse.ravel().astype(np.int64)
        at = np.searchsorted(self.sorted_keys, unique)
        found = at < self.sorted_keys.size
        found[found] = self.sorted_keys[at[found]] == unique[found]
        local = np.empty(unique.size, np.int64)
        local[found] = self.sorted_index[at[found]]
        new = np.flatnonzero(~found)
        if new.size:
            local[new] = len(self) + np.arange(new.size)
            keys = np.concatenate([self.sorted_keys, unique[new]])
            index = np.concatenate([self.sorted_index, local[new]])
            order = np.argsort(keys, kind="stable")
            self.sorted_keys, self.sorted_index = keys[order], index[order]
        return local[inverse.ravel()]

    def ranks(self) -> np.ndarray:
        """Sorted position of every first-seen index."""
        ranks = np.empty(len(self), np.int64)
        ranks[self.sorted_index] = np.arange(len(self))
        return ranks


class ScoreCounter:
    """Accumulates [`ScoreChunk`][] s into [`CountedScores`][] (see the module).

    ``grid``: the per-client counting grid; ``summed_grids``: further grids counted over all
    clients; ``per_client``: count per client of the chunks' client ids (else one client).

    Examples:
        >>> counter = ScoreCounter(Thresholds.make(3))
        >>> counter.add(ScoreChunk(np.array([1, 0], np.int8), np.array([0.9, 0.2]), None, "x", 1))
        >>> counter.finish().neg.tolist()
        [[0, 1, 0, 0]]
    """

    def __init__(
        self,
        grid: Thresholds,
        summed_grids: Mapping[str, Thresholds] | None = None,
        *,
        per_client: bool = True,
        max_rows_in_memory: int = DEFAULT_MAX_ROWS_IN_MEMORY,
    ):
        self.grid = grid
        self.summed_grids = dict(summed_grids or {})
        self.per_client = per_client
        self.max_rows_in_memory = int(max_rows_in_memory)
        width = grid.num_buckets
        self._counts = np.zeros((1, 2, width), np.int64)
        self._summed = {
            name: np.zeros(2 * g.num_buckets, np.int64)
            for name, g in self.summed_grids.items()
            if g != grid
        }
        self._fine = np.zeros(2 * FINE_BUCKETS, np.int64)
        self._clients: _ClientIndex | None = None
        self._kept: list[tuple[np.ndarray, np.ndarray, np.ndarray | None]] | None = []
        self._pending: list[tuple[np.ndarray, np.ndarray, np.ndarray | None]] = []
        self._pending_rows = 0
        self.num_examples = 0
        self.num_positives = 0

    def add(self, chunk: ScoreChunk) -> None:
        """Counts one validated chunk."""
        labels, scores = chunk.labels, chunk.scores
        ids = None
        if self.per_client and chunk.clients is not None:
            if self._clients is None:
                if self.num_examples:
                    raise ScoreFileError(f"{chunk.source}: a client column only in some files")
                self._clients = _ClientIndex()
            ids = self._clients.lookup(chunk.clients, chunk.source, chunk.first_row)
            self._grow(len(self._clients))
        elif self.per_client and self._clients is not None:
            raise ScoreFileError(f"{chunk.source}: a client column only in some files")
        self._pending.append((labels, scores, ids))
        self._pending_rows += chunk.num_examples
        if self._pending_rows >= _COUNT_BATCH_ROWS:
            self._flush()
        self.num_examples += chunk.num_examples
        self.num_positives += int(np.count_nonzero(labels))
        if self._kept is not None:
            if self.num_examples > self.max_rows_in_memory:
                self._kept = None  # past the limit: counts only
            else:
                self._kept.append((labels, scores, ids))

    def _flush(self) -> None:
        """Counts the chunks added since the last flush, in one go."""
        if not self._pending:
            return
        pending, self._pending, self._pending_rows = self._pending, [], 0
        labels = np.concatenate([p[0] for p in pending])
        scores = np.concatenate([p[1] for p in pending])
        ids = None if pending[0][2] is None else np.concatenate([p[2] for p in pending])
        self._count_grid(labels, scores, ids)
        for name, grid in self.summed_grids.items():
            if name in self._summed:
                pos, neg = bucket_counts_numpy(labels, scores, grid)
                self._summed[name] += np.concatenate([pos[0], neg[0]])
        fine = fine_bucket_ids(scores)
        fine += (1 - labels.astype(np.int64)) * FINE_BUCKETS
        self._fine += np.bincount(fine, minlength=2 * FINE_BUCKETS)

    def _grow(self, num_clients: int) -> None:
        if num_clients > self._counts.shape[0]:
            size = max(num_clients, 2 * self._counts.shape[0])
            grown = np.zeros((size, *self._counts.shape[1:]), np.int64)
            grown[: self._counts.shape[0]] = self._counts
            self._counts = grown

    def _count_grid(self, labels, scores, ids) -> None:
        if ids is None:
            pos, neg = bucket_counts_numpy(labels, scores, self.grid)
            self._counts[0, 0] += pos[0]
            self._counts[0, 1] += neg[0]
            return
        present, local = np.unique(ids, return_inverse=True)
        local = local.ravel()
        if present.size * 2 * self.grid.num_buckets <= _MAX_DENSE_CELLS:
            pos, neg = bucket_counts_numpy(labels, scores, self.grid, local, present.size)
            self._counts[present, 0] += pos
            self._counts[present, 1] += neg
            return
        # Many clients in one chunk: count the occupied cells only.
        width = self.grid.num_buckets
        cell = self.grid.bucketize_numpy(scores)
        cell += (1 - labels.astype(np.int64)) * width + ids * (2 * width)
        cells, counts = np.unique(cell, return_counts=True)
        self._counts.reshape(-1)[cells] += counts

    def finish(self) -> CountedScores:
        """The counts (clients in sorted order of their ids); raises if nothing was read."""
        if self.num_examples == 0:
            raise ScoreFileError("no examples")
        self._flush()
        keys, counts, ranks = None, self._counts[:1], None
        if self._clients is not None:
            ranks = self._clients.ranks()
            counts = np.empty((len(self._clients), *self._counts.shape[1:]), np.int64)
            counts[ranks] = self._counts[: len(self._clients)]
            keys = self._clients.sorted_keys
        summed = {}
        for name, grid in self.summed_grids.items():
            if name in self._summed:
                flat = self._summed[name]
                summed[name] = (flat[: grid.num_buckets], flat[grid.num_buckets :])
            else:
                summed[name] = (counts[:, 0].sum(0), counts[:, 1].sum(0))
        examples = None
        if self._kept is not None:
            labels = np.concatenate([k[0] for k in self._kept])
            scores = np.concatenate([k[1] for k in self._kept])
            clients = None if ranks is None else ranks[np.concatenate([k[2] for k in self._kept])]
            examples = ScoreSet(labels, scores, clients)
        return CountedScores(
            pos=counts[:, 0],
            neg=counts[:, 1],
            summed=summed,
            fine_pos=self._fine[:FINE_BUCKETS],
            fine_neg=self._fine[FINE_BUCKETS:],
            num_examples=self.num_examples,
            num_positives=self.num_positives,
            client_keys=keys,
            examples=examples,
            max_rows_in_memory=self.max_rows_in_memory,
        )


def count_chunks(
    chunks: Iterable[ScoreChunk],
    grid: Thresholds,
    summed_grids: Mapping[str, Thresholds] | None = None,
    *,
    per_client: bool = True,
    max_rows_in_memory: int = DEFAULT_MAX_ROWS_IN_MEMORY,
    progress: bool = False,
    total_rows: int | None = None,
) -> CountedScores:
    """Counts an iterable of chunks (any reader); a tqdm bar on stderr with ``progress``."""
    counter = ScoreCounter(
        grid, summed_grids, per_client=per_client, max_rows_in_memory=max_rows_in_memory
    )
    from tqdm.auto import tqdm

    with tqdm(
        total=total_rows,
        unit="rows",
        unit_scale=True,
        desc="counting",
        file=sys.stderr,
        disable=not progress,
        leave=False,
    ) as bar:
        for chunk in chunks:
            counter.add(chunk)
            bar.update(chunk.num_examples)
    return counter.finish()


def count_score_file(
    path: str | os.PathLike,
    grid: Thresholds,
    summed_grids: Mapping[str, Thresholds] | None = None,
    *,
    score_column: str = "score",
    label_column: str = "label",
    client_column: str | None = None,
    client_column_optional: bool = False,
    from_logits: bool = False,
    per_client: bool = True,
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
    max_rows_in_memory: int = DEFAULT_MAX_ROWS_IN_MEMORY,
    progress: bool = False,
) -> CountedScores:
    """Reads ``path`` in chunks of ``chunk_rows`` and counts it (see the module docstring).

    Column arguments as [`dpauc_tf.io.scores.read_score_file`][]'s. Errors
    are [`ScoreFileError`][] (one line, with the row).
    """
    chunks = iter_score_chunks(
        path,
        score_column=score_column,
        label_column=label_column,
        client_column=client_column,
        client_column_optional=client_column_optional,
        from_logits=from_logits,
        chunk_rows=chunk_rows,
    )
    try:
        return count_chunks(
            chunks,
            grid,
            summed_grids,
            per_client=per_client,
            max_rows_in_memory=max_rows_in_memory,
            progress=progress,
            total_rows=count_rows(score_files(path)) if progress else None,
        )
    except ScoreFileError as error:
        if str(error) == "no examples":
            raise ScoreFileError(f"{path}: no examples") from None
        raise
