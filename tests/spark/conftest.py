"""One local Spark session per test module (``local[2]``), skipped where PySpark is missing."""

from __future__ import annotations

import os
import sys

import pytest


@pytest.fixture(scope="module")
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
