"""``dpauc evaluate --backend spark``: the command's face of the registered Spark backend
([`dpauc_tf.backends.spark.SparkBackend`][]: the file read by Spark's reader, counted on the
executors, released on the driver).

The master is ``--spark-master`` (default ``local[2]``); an active SparkSession (e.g. in a
notebook or a ``spark-submit`` job) is used as it is. The library's one-line errors become
the command's, worded with its flags (``--scores``, ``--spark-master``).
"""

from __future__ import annotations

import importlib.util

from dpauc_tf.backends import EvaluationData, backend
from dpauc_tf.cli.errors import CommandError
from dpauc_tf.core.extras import install_hint
from dpauc_tf.io.paths import PARQUET_SUFFIXES  # noqa: F401 (a public name)

DEFAULT_MASTER = "local[2]"


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


def _release(run, data: EvaluationData):
    """The registered backend's release of ``data`` with the command's spec, its errors as
    the command's one line."""
    from dpauc_tf.io.scores import ScoreFileError
    from dpauc_tf.spark.session import SparkMasterError

    try:
        engine = backend("spark", master=run.spark_master or DEFAULT_MASTER)
        engine.check_installed()
        return engine.evaluate(
            run.spec,
            data,
            repeats=run.repeats,
            confidence=run.confidence,
            ci_target=run.ci_target,
        )
    except SparkMasterError as error:
        raise CommandError(f"--spark-master {error}") from None
    except ScoreFileError as error:
        raise CommandError(_scores_message(error)) from None
    except (ImportError, ValueError) as error:
        raise CommandError(str(error)) from None


def evaluate_with_spark(run, client_ids, num_clients: int):
    """The release of the file through Spark after the driver has read it
    (``--show-exact``, ``--plot``): an [`AUCResult`][dpauc_tf.mechanisms.release.AUCResult],
    per client when the file has the client column (``--client-column``)."""
    _require_pyspark()
    return _release(
        run, EvaluationData(num_clients=num_clients, client_ids=client_ids, source=run.source)
    )


def evaluate_file_with_spark(run):
    """``run.source`` read by Spark's reader, counted on the executors and released on the
    driver, with ``run.confidence``'s interval: an
    [`AUCResult`][dpauc_tf.mechanisms.release.AUCResult]. The driver holds no row."""
    _require_pyspark()
    return _release(run, EvaluationData(source=run.source))
