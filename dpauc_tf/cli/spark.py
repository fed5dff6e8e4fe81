"""``dpauc evaluate --backend spark``: the file read by Spark's reader, counted on the
executors, released on the driver (`dpauc_tf.spark`).

The master is ``--spark-master`` (default ``local[2]``); an active SparkSession (e.g. in a
notebook or a ``spark-submit`` job) is used as it is. CSV (``.csv``, ``.csv.gz``, with a
header) and Parquet (``.parquet``, ``.pq``) files, directories and globs of them are read
with ``spark.read``; the columns are the command's ``--score-column``, ``--label-column``
and ``--client-column``. The files are the ones the path rule names
([`dpauc_tf.io.paths.input_files`][], the same on every backend: hidden names skipped at
every level, a hive-partitioned directory read as its files), handed to Spark as a list, so
Spark reads exactly the files ``--backend simulate`` reads.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import sys
import tempfile

from dpauc_tf.cli.errors import CommandError
from dpauc_tf.core.extras import install_hint
from dpauc_tf.io.paths import PARQUET_SUFFIXES  # noqa: F401 (a public name)

DEFAULT_MASTER = "local[2]"


def spark_files(path: str) -> tuple[str, list[str]]:
    """The format (``"parquet"`` or ``"csv"``) and the files that ``path`` names, by the one
    path rule ([`dpauc_tf.io.paths.input_files`][]); one line when Spark cannot read them
    (TFRecord, a compression Spark does not decompress)."""
    from dpauc_tf.io.paths import check_readable, input_files
    from dpauc_tf.io.scores import ScoreFileError

    try:
        files = input_files(path)
        check_readable(files, "spark", "--scores")
    except ScoreFileError as error:
        text = str(error)
        raise CommandError(text if text.startswith("--scores") else f"--scores {text}") from None
    return files[0].format, [str(f.path) for f in files]


def spark_format(path: str) -> str:
    """``"parquet"`` or ``"csv"``: the format of the files ``path`` names (`spark_files`)."""
    return spark_files(path)[0]


def _session(master: str):
    """The active SparkSession, else a new one on ``master`` (and whether it is new)."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active, False
    if _MASTER.match(master) is None:  # before a JVM starts (it prints a Java stack trace)
        raise CommandError(f"--spark-master {master!r}: not a Spark master URL; {_MASTERS}")
    if master.startswith("local"):  # the local workers run this interpreter
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    log = tempfile.TemporaryFile()  # the JVM's start-up output, shown only in one line
    try:
        with _stderr_to(log):  # the JVM launched here inherits this stderr
            session = (
                SparkSession.builder.master(master)
                .appName("dpauc evaluate")
                .config("spark.ui.showConsoleProgress", "false")
                .getOrCreate()
            )
    except Exception as error:  # py4j / Java errors: one line, never a Java traceback
        reason = _java_exception_line(log) or _java_message(error)
        raise CommandError(
            f"--spark-master {master!r}: cannot start a Spark session ({reason}); {_MASTERS}"
        ) from None
    session.sparkContext.setLogLevel("ERROR")
    return session, True


_MASTER = re.compile(
    r"^(local(\[(\d+|\*)(,\s*\d+)?\])?|local-cluster\[.+\]|yarn|(spark|k8s|mesos)://.+)$"
)
_MASTERS = "a master is local, local[N], local[*], spark://HOST:PORT, yarn or k8s://URL"


@contextlib.contextmanager
def _stderr_to(file):
    """File descriptor 2 is ``file`` inside the block (a child process started there keeps it)."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        os.dup2(file.fileno(), 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


def _java_exception_line(log) -> str | None:
    """The message of the first Java exception the JVM printed, e.g. ``SparkException:
    Master must either be yarn or start with spark, k8s, or local``."""
    log.seek(0)
    text = log.read(1 << 20).decode("utf-8", "replace")
    causes = re.findall(r"Caused by: [\w.$]+: ([^\n]+)", text)  # the root cause, if told
    found = causes[-1:] or re.findall(r"(?:Exception|Error)[^\n:]*: ([^\n]+)", text)[:1]
    return found[0].strip() if found else None


def _java_message(error: BaseException) -> str:
    """The first line of a py4j/Java error's message (not its Java stack trace)."""
    java = getattr(error, "java_exception", None)
    text = None
    if java is not None:
        try:
            text = java.getMessage() or java.toString()
        except Exception:  # the JVM may be gone
            text = None
    text = text or str(error) or type(error).__name__
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    return lines[0] if lines else type(error).__name__


def evaluate_with_spark(run, client_ids, num_clients: int):
    """The release of the file through `dpauc_tf.spark.private_auc` (an
    [`AUCResult`][dpauc_tf.mechanisms.release.AUCResult]), after the driver has read the file
    (``--show-exact``, ``--plot``); per client when the file has more than one client."""
    if client_ids is not None:
        raise CommandError(
            "--backend spark takes its clients from the file's client column "
            "(--client-column); --clients partitions the examples in memory: use "
            "--backend simulate"
        )
    return evaluate_file_with_spark(run, per_client=num_clients > 1)


def evaluate_file_with_spark(run, per_client: bool | None = None):
    """``run.source`` read by Spark's reader, counted on the executors and released on the
    driver, with ``run.confidence``'s interval: an
    [`AUCResult`][dpauc_tf.mechanisms.release.AUCResult]. The driver holds no row.
    ``per_client=None`` sums every client's report when the file has the client column
    (``--client-column``; a column merely named ``client`` is not one)."""
    if importlib.util.find_spec("pyspark") is None:
        raise CommandError(f"--backend spark needs PySpark: {install_hint('spark')}")
    source, spec = run.source, run.spec
    fmt, paths = spark_files(str(source.path))
    from dpauc_tf.spark import private_auc

    session, created = _session(run.spark_master or DEFAULT_MASTER)
    try:
        reader = session.read
        if fmt == "csv":
            reader = reader.option("header", True).option("inferSchema", True)
        frame = reader.format(fmt).load(paths)  # the rule's files, not Spark's own listing
        client = source.client_column  # client ids only from a named column
        if client is not None and client not in frame.columns:
            raise CommandError(f"--scores {source.path}: no client column {client!r}")
        if per_client is None:
            per_client = client is not None
        return private_auc(
            frame,
            score_col=source.score_column,
            label_col=source.label_column,
            client_col=client if per_client else None,
            from_logits=source.from_logits,
            **spec.settings(),
            seed=spec.seed,
            repeats=run.repeats,
            confidence=run.confidence,
            ci_target=run.ci_target,
        )
    except ValueError as error:
        raise CommandError(str(error)) from None
    finally:
        if created:
            session.stop()
