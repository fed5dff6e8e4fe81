"""Score files: one reader for CSV, Parquet, TFRecord, compressed CSV, directories and globs.

* [`errors`][]: [`ScoreFileError`][dpauc_tf.io.errors.ScoreFileError] (one-line errors) and
  how an error quotes a file (the bottom of the package: it imports no other module of it);
* [`scores`][]: [`ScoreSet`][dpauc_tf.io.scores.ScoreSet] (validated examples), the whole-file
  [`read_score_file`][dpauc_tf.io.scores.read_score_file] and the epoch files of a training run;
* [`paths`][]: [`input_files`][dpauc_tf.io.paths.input_files], what a path means (file,
  directory, glob; hidden names at every level; compression by suffix), the one rule of
  every backend;
* [`readers`][]: [`iter_score_chunks`][dpauc_tf.io.readers.iter_score_chunks], validated
  chunks of any number of files (the one reader every path goes through);
* [`streaming`][]: per-client bucket counts in one chunked pass, bounded memory.

Names load on first use (``import dpauc_tf.io`` imports neither pandas nor TensorFlow).

Examples:
    >>> from dpauc_tf.io import ScoreSet
    >>> ScoreSet.checked([0, 1], [0.2, 0.7]).num_examples
    2
"""

from __future__ import annotations

import importlib

_NAMES = {
    "ScoreFileError": "dpauc_tf.io.errors",
    "ScoreSet": "dpauc_tf.io.scores",
    "epoch_files": "dpauc_tf.io.scores",
    "read_score_file": "dpauc_tf.io.scores",
    "InputFile": "dpauc_tf.io.paths",
    "input_files": "dpauc_tf.io.paths",
    "ScoreChunk": "dpauc_tf.io.readers",
    "iter_column_chunks": "dpauc_tf.io.readers",
    "iter_score_chunks": "dpauc_tf.io.readers",
    "score_files": "dpauc_tf.io.readers",
    "CountedScores": "dpauc_tf.io.streaming",
    "count_score_file": "dpauc_tf.io.streaming",
}

__all__ = sorted(_NAMES)


def __getattr__(name: str):
    if name in _NAMES:
        return getattr(importlib.import_module(_NAMES[name]), name)
    raise AttributeError(f"module 'dpauc_tf.io' has no attribute {name!r}")
