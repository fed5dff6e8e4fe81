"""Without PySpark, ``import dpauc_tf.spark`` fails with one line naming the extra."""

from __future__ import annotations

import importlib
import sys

import pytest


def test_import_without_pyspark_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "pyspark", None)  # as if it were not installed
    for name in [
        n for n in sys.modules if n == "dpauc_tf.spark" or n.startswith("dpauc_tf.spark.")
    ]:
        monkeypatch.delitem(sys.modules, name)
    with pytest.raises(
        ImportError,
        match=r'^dpauc_tf\.spark needs PySpark: pip install "\.\[spark\]" in a clone, or '
        r'"dpauc_tf-VERSION-py3-none-any\.whl\[spark\]"$',
    ):
        importlib.import_module("dpauc_tf.spark")


def test_the_cli_names_the_extra_without_pyspark(monkeypatch):
    from dpauc_tf.backends import EvaluationData
    from dpauc_tf.cli import backends
    from dpauc_tf.cli import spark as cli_spark
    from dpauc_tf.cli.main import CommandError

    monkeypatch.setattr(cli_spark.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(CommandError, match=r"needs PySpark: .*\.whl\[spark\]"):
        backends.evaluate_registered(backends.BackendRun("spark", None), EvaluationData())
