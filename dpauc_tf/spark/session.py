"""A Spark session for a release and the score files read by Spark's own reader.

[`spark_session`][] yields the active SparkSession (a notebook's, a ``spark-submit`` job's)
as it is, or starts one on a master (default ``local[2]``) and stops it afterwards; a bad
master or a session that cannot start is one [`SparkMasterError`][] line, never a Java
traceback. [`read_scores`][] reads CSV (``.csv``, ``.csv.gz``, with a header) and Parquet
(``.parquet``, ``.pq``) files, directories and globs of them with ``spark.read``: the files
the one path rule names ([`dpauc_tf.io.paths.input_files`][], the same on every backend:
hidden names skipped at every level, a hive-partitioned directory read as its files), handed
to Spark as a list, so that Spark reads exactly the files ``--backend simulate`` reads.

    >>> check_master("local[4]"), check_master("spark://host:7077")
    ('local[4]', 'spark://host:7077')
    >>> check_master("nonsense://x")
    Traceback (most recent call last):
    ...
    dpauc_tf.spark.session.SparkMasterError: 'nonsense://x': not a Spark master URL; a master is local, local[N], local[*], spark://HOST:PORT, yarn or k8s://URL
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

DEFAULT_MASTER = "local[2]"
_MASTER = re.compile(
    r"^(local(\[(\d+|\*)(,\s*\d+)?\])?|local-cluster\[.+\]|yarn|(spark|k8s|mesos)://.+)$"
)
_MASTERS = "a master is local, local[N], local[*], spark://HOST:PORT, yarn or k8s://URL"


class SparkMasterError(ValueError):
    """A master that is not a Spark master URL, or on which no session starts (one line:
    the master and the reason; ``master`` and ``reason`` are kept for a caller's own
    wording).

        >>> error = SparkMasterError("yarn://x", "not a Spark master URL")
        >>> str(error), error.reason
        ("'yarn://x': not a Spark master URL", 'not a Spark master URL')
    """

    def __init__(self, master: str, reason: str):
        super().__init__(f"{master!r}: {reason}")
        self.master, self.reason = master, reason


def check_master(master: str) -> str:
    """``master`` if it has the form of a Spark master URL (checked before a JVM starts,
    which would print a Java stack trace); [`SparkMasterError`][] otherwise."""
    if not isinstance(master, str) or _MASTER.match(master) is None:
        raise SparkMasterError(str(master), f"not a Spark master URL; {_MASTERS}")
    return master


@contextlib.contextmanager
def spark_session(master: str = DEFAULT_MASTER, app_name: str = "dpauc") -> Iterator[SparkSession]:
    """The active SparkSession as it is, else a new one on ``master``, stopped at the end
    of the block (local workers run this interpreter)."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        yield active
        return
    check_master(master)
    if master.startswith("local"):
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    for attempt in range(2):
        log = tempfile.TemporaryFile()  # the JVM's start-up output, shown only in one line
        try:
            with _stderr_to(log):  # the JVM launched here inherits this stderr
                session = (
                    SparkSession.builder.master(master)
                    .appName(app_name)
                    .config("spark.ui.showConsoleProgress", "false")
                    .getOrCreate()
                )
            break
        except Exception as error:  # py4j / Java errors: one line, never a Java traceback
            reason = _java_exception_line(log) or _java_message(error)
            # a JVM that died while starting with nothing to say (seen once on a loaded
            # machine) is started once more; a bad master or configuration fails again
            if attempt == 0 and "JAVA_GATEWAY_EXITED" in reason:
                continue
            raise SparkMasterError(
                master, f"cannot start a Spark session ({reason}); {_MASTERS}"
            ) from None
        finally:
            log.close()
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()


def score_files(path: str) -> tuple[str, list[str]]:
    """The format (``"parquet"`` or ``"csv"``) and the files that ``path`` names, by the
    one path rule; a one-line [`ScoreFileError`][dpauc_tf.io.scores.ScoreFileError] for
    what Spark cannot read (TFRecord, a compression Spark does not decompress)."""
    from dpauc_tf.io.paths import check_readable, input_files

    files = input_files(path)
    check_readable(files, "spark")
    return files[0].format, [str(f.path) for f in files]


def read_scores(session: SparkSession, source: Any) -> DataFrame:
    """``source``'s files as a DataFrame read by Spark (``score_files``'s list, not Spark's
    own listing); a one-line ``ScoreFileError`` when the client column is missing.
    ``source``: its ``path`` and ``client_column`` (a
    [`ScoreSource`][dpauc_tf.backends.ScoreSource])."""
    fmt, paths = score_files(str(source.path))
    reader = session.read
    if fmt == "csv":
        reader = reader.option("header", True).option("inferSchema", True)
    frame = reader.format(fmt).load(paths)
    client = source.client_column
    if client is not None and client not in frame.columns:
        from dpauc_tf.io.errors import ScoreFileError

        raise ScoreFileError(f"{source.path}: no client column {client!r}")
    return frame


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
