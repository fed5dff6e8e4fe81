"""``dpauc evaluate --backend spark``: the file read by Spark's reader, counted on the
executors, released on the driver (`dpauc_tf.spark`).

The master is ``--spark-master`` (default ``local[2]``); an active SparkSession (e.g. in a
notebook or a ``spark-submit`` job) is used as it is. CSV (``.csv``, ``.csv.gz``, with a
header) and Parquet (``.parquet``, ``.pq``) files, directories and globs of them are read
with ``spark.read``; the columns are the command's ``--score-column``, ``--label-column``
and ``--client-column``.
"""

from __future__ import annotations

import glob
import importlib.util
import os
import sys

from dpauc_tf.cli.main import CommandError
from dpauc_tf.core.extras import install_hint

DEFAULT_MASTER = "local[2]"
PARQUET_SUFFIXES = (".parquet", ".pq")


def spark_format(path: str) -> str:
    """``"parquet"`` or ``"csv"`` from the suffixes of ``path`` (or of the files it names)."""
    names = [path]
    if os.path.isdir(path):
        names = [os.path.join(path, name) for name in sorted(os.listdir(path))]
    elif glob.has_magic(path):
        names = glob.glob(path) or [path]
    names = [name.lower() for name in names if not os.path.basename(name).startswith((".", "_"))]
    if names and all(name.endswith(PARQUET_SUFFIXES) for name in names):
        return "parquet"
    if names and all(name.endswith((".csv", ".csv.gz", ".txt")) for name in names):
        return "csv"
    raise CommandError(
        f"--backend spark reads CSV (.csv, .csv.gz) and Parquet (.parquet, .pq) files, "
        f"directories or globs of one of them; {path!r} is neither"
    )


def _session(master: str):
    """The active SparkSession, else a new one on ``master`` (and whether it is new)."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active, False
    if master.startswith("local"):  # the local workers run this interpreter
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    session = (
        SparkSession.builder.master(master)
        .appName("dpauc evaluate")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    return session, True


def evaluate_with_spark(args, client_ids, num_clients: int):
    """The release of ``args.scores`` through `dpauc_tf.spark.private_auc` (an
    [`AUCResult`][dpauc_tf.mechanisms.release.AUCResult]), after the driver has read the file
    (``--show-exact``, ``--plot``); per client when the file has more than one client."""
    if client_ids is not None:
        raise CommandError(
            "--backend spark takes its clients from the file's client column "
            "(--client-column); --clients partitions the examples in memory: use "
            "--backend simulate"
        )
    return evaluate_file_with_spark(args, per_client=num_clients > 1)


def evaluate_file_with_spark(args, per_client: bool | None = None):
    """``args.scores`` read by Spark's reader, counted on the executors and released on the
    driver: an [`AUCResult`][dpauc_tf.mechanisms.release.AUCResult]. The driver holds no row.
    ``per_client=None`` sums every client's report when the file has the client column
    (``--client-column``; a column merely named ``client`` is not one)."""
    from dpauc_tf.cli.evaluate import release_settings

    if importlib.util.find_spec("pyspark") is None:
        raise CommandError(f"--backend spark needs PySpark: {install_hint('spark')}")
    fmt = spark_format(str(args.scores))
    from dpauc_tf.spark import private_auc

    session, created = _session(args.spark_master or DEFAULT_MASTER)
    try:
        reader = session.read
        if fmt == "csv":
            reader = reader.option("header", True).option("inferSchema", True)
        frame = reader.format(fmt).load(str(args.scores))
        client = args.client_column  # client ids only from a named column (--client-column)
        if client is not None and client not in frame.columns:
            raise CommandError(f"--scores {args.scores}: no client column {client!r}")
        if per_client is None:
            per_client = client is not None
        return private_auc(
            frame,
            score_col=args.score_column,
            label_col=args.label_column,
            client_col=client if per_client else None,
            seed=args.seed,
            repeats=args.repeats,
            from_logits=args.from_logits,
            **release_settings(args),
        )
    except ValueError as error:
        raise CommandError(str(error)) from None
    finally:
        if created:
            session.stop()
