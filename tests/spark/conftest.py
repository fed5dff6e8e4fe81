"""One local Spark session for every Spark test (``local[2]``; its start-up is the slow part),
skipped where PySpark is missing."""

from __future__ import annotations

import os
import sys

import pytest


@pytest.fixture(scope="session")
def spark():
    """A ``local[2]`` SparkSession whose Python workers run this interpreter."""
    pytest.importorskip("pyspark")
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable  # the workers import this dpauc_tf
    session = (
        SparkSession.builder.master("local[2]")
        .appName("dpauc-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
