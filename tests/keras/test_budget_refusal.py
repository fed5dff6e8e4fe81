"""A release refused by ``DPAUCBudgetCallback`` reaches no one (issue 21): not a callback
listed before it (a LambdaCallback, CSVLogger's file), not History, not the progress bar, not
the per-batch values of a later ``fit`` or ``evaluate``. The scenarios live in
``refusal_scenario.py`` (shared with the JAX backend's checks)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import tensorflow as tf

_spec = importlib.util.spec_from_file_location(
    "refusal_scenario", Path(__file__).with_name("refusal_scenario.py")
)
scenario = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(scenario)


@pytest.mark.parametrize("mode", ["graph", "jit", "run_eagerly"])
def test_a_refused_release_reaches_no_one(mode, tmp_path):
    out = scenario.run(tf.keras, mode, str(tmp_path))
    assert out["refused"] == ["train", "validation", "evaluation"]
    assert scenario.problems(out) == []
    if mode != "run_eagerly":  # there every step is a release: the budget ends in epoch 0
        assert out["csv"], "CSVLogger wrote the charged values"
