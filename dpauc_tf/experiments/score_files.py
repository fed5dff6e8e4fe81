"""Reading score files (CSV or Parquet) and checking them before any privacy arithmetic.

A score file has one row per test example with a ``score`` in [0, 1], a ``label`` in {0, 1}
and optionally an integer ``client`` id (column names are configurable). Every problem is a
[`ScoreFileError`][] with a one-line message: a missing file or column, an empty file,
NaN, labels other than 0/1, scores outside [0, 1].

``models.train`` writes one file per epoch, ``scores_epoch{N}.parquet`` (or ``.csv``);
[`epoch_files`][] finds them in a directory.

    >>> import numpy as np
    >>> s = ScoreSet.checked(np.array([0, 1]), np.array([0.2, 0.7]))
    >>> s.num_examples, s.num_positives
    (2, 1)
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import warnings
from pathlib import Path

import numpy as np

_EPOCH_FILE = re.compile(r"^scores_epoch(\d+)\.(parquet|csv)$")


class ScoreFileError(ValueError):
    """A score file or score set that cannot be evaluated (message fits on one line)."""


@dataclasses.dataclass(frozen=True)
class ScoreSet:
    """Validated labels (int8, 0/1), scores (float64, in [0, 1]) and optional client ids."""

    labels: np.ndarray
    scores: np.ndarray
    clients: np.ndarray | None = None

    @classmethod
    def checked(cls, labels, scores, clients=None, *, source: str = "input") -> ScoreSet:
        """Validates and converts; raises [`ScoreFileError`][] naming the problem."""
        labels = np.asarray(labels).ravel()
        scores = np.asarray(scores).ravel()
        if labels.size == 0:
            raise ScoreFileError(f"{source}: no examples")
        if labels.size != scores.size:
            raise ScoreFileError(f"{source}: {labels.size} labels but {scores.size} scores")
        try:
            label_values = labels.astype(np.float64)
            score_values = scores.astype(np.float64)
        except (TypeError, ValueError) as error:
            raise ScoreFileError(f"{source}: labels and scores must be numbers ({error})") from None
        if np.isnan(label_values).any():
            raise ScoreFileError(f"{source}: {int(np.isnan(label_values).sum())} labels are NaN")
        if np.isnan(score_values).any():
            raise ScoreFileError(f"{source}: {int(np.isnan(score_values).sum())} scores are NaN")
        bad_labels = (label_values != 0) & (label_values != 1)
        if bad_labels.any():
            example = label_values[bad_labels][0]
            raise ScoreFileError(
                f"{source}: labels must be 0 or 1; {int(bad_labels.sum())} are not (e.g. {example:g})"
            )
        bad_scores = (score_values < 0) | (score_values > 1)
        if bad_scores.any():
            example = score_values[bad_scores][0]
            raise ScoreFileError(
                f"{source}: scores must be in [0, 1]; {int(bad_scores.sum())} are not "
                f"(e.g. {example:g})"
            )
        client_ids = None
        if clients is not None:
            clients = np.asarray(clients).ravel()
            if clients.size != labels.size:
                raise ScoreFileError(
                    f"{source}: {clients.size} client ids for {labels.size} examples"
                )
            if clients.dtype.kind == "f" and np.isnan(clients).any():
                raise ScoreFileError(f"{source}: client ids must not be NaN")
            if clients.dtype == object:
                missing = np.array([_is_missing(c) for c in clients], dtype=bool)
                if missing.any():
                    raise ScoreFileError(
                        f"{source}: {int(missing.sum())} client ids are missing (empty or NaN)"
                    )
                kinds = sorted({type(c).__name__ for c in clients})
                if len(kinds) > 1:
                    raise ScoreFileError(
                        f"{source}: client ids mix types ({', '.join(kinds)}); use one type"
                    )
            # Any sortable ids -> 0..K-1 in sorted order.
            try:
                _, client_ids = np.unique(clients, return_inverse=True)
            except TypeError as error:
                raise ScoreFileError(f"{source}: client ids cannot be compared ({error})") from None
            client_ids = client_ids.astype(np.int64).ravel()
        return cls(label_values.astype(np.int8), score_values, client_ids)

    @property
    def num_examples(self) -> int:
        return int(self.labels.size)

    @property
    def num_positives(self) -> int:
        return int(self.labels.sum())

    @property
    def num_file_clients(self) -> int:
        return 0 if self.clients is None else int(self.clients.max()) + 1


def _is_missing(value) -> bool:
    """``None`` or a float NaN (what pandas puts in an empty cell of an object column)."""
    return value is None or (isinstance(value, float) and math.isnan(value))


def read_score_file(
    path: str | os.PathLike,
    *,
    score_column: str = "score",
    label_column: str = "label",
    client_column: str | None = None,
    client_column_optional: bool = False,
    from_logits: bool = False,
) -> ScoreSet:
    """Reads a CSV or Parquet score file and validates it.

    ``client_column``: the column of client ids; ``None`` reads no client ids. A given column
    that is absent is an error, unless ``client_column_optional`` (the command line's
    default ``"client"``, used only when present). ``from_logits``: the score column holds
    logits; a sigmoid maps them to [0, 1] (NaN stays NaN and is refused).
    """
    import pandas as pd

    from dpauc_tf.experiments.score_sources import csv_source

    path = Path(path)
    if not path.is_file():
        raise ScoreFileError(f"{path}: no such file")
    if path.stat().st_size == 0:
        raise ScoreFileError(f"{path}: empty file")
    try:
        if path.suffix.lower() in (".parquet", ".pq"):
            frame = pd.read_parquet(path)
        else:
            with warnings.catch_warnings():
                # Numbers and text in one column: the checks below say which (no pandas advice).
                warnings.simplefilter("ignore", pd.errors.DtypeWarning)
                source = csv_source(path)
                try:
                    frame = pd.read_csv(source)
                finally:
                    if source is not path:
                        source.close()
    except pd.errors.EmptyDataError:
        raise ScoreFileError(f"{path}: empty file") from None
    except ImportError as error:
        if path.suffix.lower() == ".zst":
            raise ScoreFileError(f"{path}: reading .zst needs zstandard ({error})") from None
        raise ScoreFileError(
            f'{path}: reading Parquet needs pyarrow: pip install "dpauc-tf[parquet]" ({error})'
        ) from None
    except Exception as error:
        from dpauc_tf.experiments.score_sources import compression_error

        damaged = compression_error(path, error)
        if damaged is not None:
            raise damaged from None
        if not isinstance(error, (ValueError, OSError)):
            raise
        # The whole message on one line: Parquet readers put the cause after the first line.
        text = " ".join(str(error).split()) or type(error).__name__
        raise ScoreFileError(f"{path}: cannot read ({text})") from None
    required = [score_column, label_column]
    if client_column is not None and not client_column_optional:
        required.append(client_column)
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise ScoreFileError(
            f"{path}: missing column(s) {', '.join(map(repr, missing))}; "
            f"found {', '.join(map(repr, map(str, frame.columns)))}"
        )
    clients = None
    if client_column is not None and client_column in frame.columns:
        clients = frame[client_column].to_numpy()
    scores = frame[score_column].to_numpy()
    if from_logits:
        from scipy.special import expit

        try:
            scores = expit(scores.astype(np.float64))
        except (TypeError, ValueError) as error:
            raise ScoreFileError(f"{path}: logits must be numbers ({error})") from None
    return ScoreSet.checked(frame[label_column].to_numpy(), scores, clients, source=str(path))


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
