"""Starting a Spark session: a JVM that dies while starting with nothing to say is started
once more; every other start-up error is one line at once."""

from __future__ import annotations

import pytest

pyspark = pytest.importorskip("pyspark")

from pyspark.sql import SparkSession  # noqa: E402

from dpauc_tf.spark.session import SparkMasterError, spark_session  # noqa: E402


class _Session:
    class sparkContext:
        @staticmethod
        def setLogLevel(level):
            pass

    stopped = False

    def stop(self):
        self.stopped = True


def _starts(monkeypatch, failures: list[str]):
    """SparkSession's builder fails with each message of ``failures`` in turn, then starts."""
    calls = []

    def get_or_create(builder):
        calls.append(1)
        if failures:
            raise RuntimeError(failures.pop(0))
        return _Session()

    monkeypatch.setattr(SparkSession, "getActiveSession", staticmethod(lambda: None))
    monkeypatch.setattr(SparkSession.Builder, "getOrCreate", get_or_create)
    return calls


def test_a_jvm_that_exits_while_starting_is_started_once_more(monkeypatch):
    gone = "[JAVA_GATEWAY_EXITED] Java gateway process exited before sending its port number."
    calls = _starts(monkeypatch, [gone])
    with spark_session("local[1]") as session:
        assert isinstance(session, _Session)
    assert len(calls) == 2 and session.stopped
    calls = _starts(monkeypatch, [gone, gone])  # twice: the one-line error
    with pytest.raises(SparkMasterError, match="JAVA_GATEWAY_EXITED"):
        with spark_session("local[1]"):
            pass
    assert len(calls) == 2


def test_other_start_up_errors_are_not_retried(monkeypatch):
    calls = _starts(monkeypatch, ["Could not parse Master URL"])
    with pytest.raises(SparkMasterError, match="Could not parse Master URL"):
        with spark_session("local[1]"):
            pass
    assert len(calls) == 1
