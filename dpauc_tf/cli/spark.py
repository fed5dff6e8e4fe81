"""``dpauc evaluate --backend spark``: the command's wording of the registered Spark backend
([`dpauc_tf.backends.spark.SparkBackend`][]: the file read by Spark's reader, counted on the
executors, released on the driver), which `dpauc_tf.cli.backends` dispatches to as to every
registered backend.

The master is ``--spark-master`` (default ``local[2]``); an active SparkSession (e.g. in a
notebook or a ``spark-submit`` job) is used as it is. The library's one-line errors become
the command's, worded with its flags (``--scores``, ``--spark-master``).
"""

from __future__ import annotations

import contextlib
import importlib.util
from collections.abc import Iterator

from dpauc_tf.cli.errors import CommandError
from dpauc_tf.core.extras import install_hint


def _scores_message(error: BaseException) -> str:
    text = str(error)
    return text if text.startswith("--scores") else f"--scores {text}"


def spark_files(path: str) -> tuple[str, list[str]]:
    """The format (``"parquet"`` or ``"csv"``) and the files that ``path`` names
    ([`dpauc_tf.spark.session.score_files`][]); one ``--scores`` line when Spark cannot
    read them (TFRecord, a compression Spark does not decompress)."""
    from dpauc_tf.io.scores import ScoreFileError
    from dpauc_tf.spark.session import score_files

    try:
        return score_files(path)
    except ScoreFileError as error:
        raise CommandError(_scores_message(error)) from None


def spark_format(path: str) -> str:
    """``"parquet"`` or ``"csv"``: the format of the files ``path`` names (`spark_files`)."""
    return spark_files(path)[0]


def _require_pyspark() -> None:
    if importlib.util.find_spec("pyspark") is None:
        raise CommandError(f"--backend spark needs PySpark: {install_hint('spark')}")


@contextlib.contextmanager
def spark_wording() -> Iterator[None]:
    """``--backend spark``'s one-line errors worded with the command's flags: PySpark
    missing (naming the extra), ``--spark-master``, ``--scores``."""
    from dpauc_tf.io.scores import ScoreFileError

    _require_pyspark()
    from dpauc_tf.spark.session import SparkMasterError

    try:
        yield
    except SparkMasterError as error:
        raise CommandError(f"--spark-master {error}") from None
    except ScoreFileError as error:
        raise CommandError(_scores_message(error)) from None
    except ValueError as error:
        raise CommandError(str(error)) from None
