"""``dpauc_tf.flower.evaluate`` on Flower's simulation engine printed Flower's "DEPRECATED
FEATURE: run_simulation ... use flwr run" (issue 34). ``run_simulation`` is Flower 1.42's
only in-process entry for app objects; the record is dropped by a standard logging filter on
Flower's logger while the run lasts, every other record kept. Ray is not started here: Flower's
``run_simulation`` runs for real up to its engine, which is replaced by a stub."""

from __future__ import annotations

import logging

import pytest

pytest.importorskip("flwr")


class _Collect(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record):
        self.records.append(record)


def test_the_run_simulation_deprecation_is_not_printed_and_other_warnings_are(monkeypatch):
    import importlib

    from flwr.supercore.logger import log

    from dpauc_tf.flower.evaluate import run_on_simulation_engine

    # the module (its name is shadowed by the function in flwr.simulation)
    flower_module = importlib.import_module("flwr.simulation.run_simulation")
    calls = []

    def engine(**kwargs):  # stands in for Ray; a warning of Flower's own must still show
        calls.append(kwargs["num_supernodes"])
        log(logging.WARNING, "a warning of the run itself")

    monkeypatch.setattr(flower_module, "_run_simulation", engine)
    monkeypatch.setattr(flower_module, "_check_ray_support", lambda *a, **k: None)
    logger = logging.getLogger("flwr")
    collect = _Collect()
    logger.addHandler(collect)
    try:
        run_on_simulation_engine(object(), object(), 3)
        messages = [record.getMessage() for record in collect.records]
        assert calls == [3]
        assert not any("DEPRECATED" in m for m in messages), messages  # before: printed
        assert "a warning of the run itself" in messages
        assert not logger.filters  # the filter lasts for the run only
        flower_module.warn_deprecated_feature("run_simulation, outside dpauc")
        assert "DEPRECATED" in collect.records[-1].getMessage()
    finally:
        logger.removeHandler(collect)
