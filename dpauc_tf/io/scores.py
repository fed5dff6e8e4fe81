"""Score sets, and reading a score file whole, checked before any privacy arithmetic.

A score file has one row per test example with a ``score`` in [0, 1], a ``label`` in {0, 1}
and optionally an integer ``client`` id (column names are configurable). Every problem is a
[`ScoreFileError`][] with a one-line message: a missing file or column, an empty file,
NaN, labels other than 0/1, scores outside [0, 1].

``models.train`` writes one file per epoch, ``scores_epoch{N}.parquet`` (or ``.csv``);
`epoch_files` finds them in a directory.

Examples:
    >>> import numpy as np
    >>> s = ScoreSet.checked(np.array([0, 1]), np.array([0.2, 0.7]))
    >>> s.num_examples, s.num_positives
    (2, 1)
"""

from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path

import numpy as np

from dpauc_tf.io.errors import ScoreFileError
from dpauc_tf.io.readers import check_chunk, iter_score_chunks

_EPOCH_FILE = re.compile(r"^scores_epoch(\d+)\.(parquet|csv)$")


@dataclasses.dataclass(frozen=True)
class ScoreSet:
    """Validated labels (int8, 0/1), scores (float64, in [0, 1]) and optional client ids."""

    labels: np.ndarray
    scores: np.ndarray
    clients: np.ndarray | None = None

    @classmethod
    def checked(cls, labels, scores, clients=None, *, source: str = "input") -> ScoreSet:
        """Validates and converts; raises [`ScoreFileError`][] naming the problem. The
        checks are the chunked reader's (`dpauc_tf.io.readers.check_chunk`): one set
        of rules for every path."""
        labels = np.asarray(labels).ravel()
        scores = np.asarray(scores).ravel()
        if labels.size == 0:
            raise ScoreFileError(f"{source}: no examples")
        if labels.size != scores.size:
            raise ScoreFileError(f"{source}: {labels.size} labels but {scores.size} scores")
        if clients is not None:
            clients = np.asarray(clients).ravel()
            if clients.size != labels.size:
                raise ScoreFileError(
                    f"{source}: {clients.size} client ids for {labels.size} examples"
                )
        try:
            chunk = check_chunk(labels, scores, clients, source, None)
        except (TypeError, ValueError) as error:
            if isinstance(error, ScoreFileError):
                raise
            raise ScoreFileError(f"{source}: labels and scores must be numbers ({error})") from None
        client_ids = None
        if chunk.clients is not None:
            # Any sortable ids -> 0..K-1 in sorted order.
            try:
                _, client_ids = np.unique(chunk.clients, return_inverse=True)
            except TypeError as error:
                raise ScoreFileError(f"{source}: client ids cannot be compared ({error})") from None
            client_ids = client_ids.astype(np.int64).ravel()
        return cls(chunk.labels, chunk.scores, client_ids)

    @property
    def num_examples(self) -> int:
        return int(self.labels.size)

    @property
    def num_positives(self) -> int:
        return int(self.labels.sum())

    @property
    def num_file_clients(self) -> int:
        return 0 if self.clients is None else int(self.clients.max()) + 1


def read_score_file(
    path: str | os.PathLike,
    *,
    score_column: str = "score",
    label_column: str = "label",
    client_column: str | None = None,
    client_column_optional: bool = False,
    from_logits: bool = False,
) -> ScoreSet:
    """Reads a score file (or a directory or glob of them) whole and validates it.

    The one reader, [`dpauc_tf.io.readers.iter_score_chunks`][], reads it (every format
    it reads, with its row-numbered errors); the chunks are joined and the client ids
    numbered ``0..K-1`` in sorted order.

    ``client_column``: the column of client ids; ``None`` reads no client ids. A given column
    that is absent is an error, unless ``client_column_optional`` (the command line's
    default ``"client"``, used only when present). ``from_logits``: the score column holds
    logits; [`dpauc_tf.core.logit_scale.logit_scores`][] maps them to [0, 1] (strictly
    increasing, no saturation; NaN stays NaN and is refused).
    """
    chunks = list(
        iter_score_chunks(
            path,
            score_column=score_column,
            label_column=label_column,
            client_column=client_column,
            client_column_optional=client_column_optional,
            from_logits=from_logits,
        )
    )
    if not chunks:
        raise ScoreFileError(f"{path}: no examples")
    with_clients = {chunk.clients is not None for chunk in chunks}
    if len(with_clients) > 1:
        raise ScoreFileError(f"{path}: a client column only in some files")
    clients = None
    if with_clients == {True}:
        clients = np.concatenate([chunk.clients for chunk in chunks])
    return ScoreSet.checked(
        np.concatenate([chunk.labels for chunk in chunks]),
        np.concatenate([chunk.scores for chunk in chunks]),
        clients,
        source=str(path),
    )


def epoch_files(directory: str | os.PathLike) -> dict[int, Path]:
    """``{epoch: path}`` of the ``scores_epoch{N}.parquet|csv`` files in ``directory``."""
    directory = Path(directory)
    if not directory.is_dir():
        raise ScoreFileError(f"{directory}: not a directory (nor 'synthetic')")
    found: dict[int, Path] = {}
    for path in sorted(directory.iterdir()):
        match = _EPOCH_FILE.match(path.name)
        if match:
            epoch = int(match.group(1))
            # Prefer Parquet when both exist.
            if epoch not in found or path.suffix == ".parquet":
                found[epoch] = path
    if not found:
        raise ScoreFileError(f"{directory}: no scores_epoch<N>.parquet or .csv files")
    return dict(sorted(found.items()))
