"""Intervals on the Beam and TFMA entry points: one per slice and release, no extra
release; refused before any work where the mechanism has none."""

from __future__ import annotations

import numpy as np
import pytest

beam = pytest.importorskip("apache_beam")

from apache_beam.options.pipeline_options import PipelineOptions  # noqa: E402

from dpauc_tf.beam import PrivateAUC  # noqa: E402
from dpauc_tf.beam.pipeline import run_and_collect  # noqa: E402


def _examples(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    labels = (rng.random(n) < 0.3).astype(np.float32)
    scores = (1 / (1 + np.exp(-rng.normal(labels, 1.0)))).astype(np.float32)
    slices = rng.integers(0, 2, n)
    return [(f"s{k}", (s, y)) for k, s, y in zip(slices, scores, labels, strict=True)]


def test_private_auc_gives_every_slice_its_interval():
    def build(pipeline):
        return (
            pipeline
            | beam.Create(_examples())
            | PrivateAUC(
                "histogram", epsilon=1.0, num_thresholds=50, seed=0, repeats=2, confidence=0.9
            )
        )

    results, _ = run_and_collect(build, PipelineOptions(["--runner=DirectRunner"]))
    assert len(results) == 2
    for result in results:
        out = result.to_dict()
        assert out["confidence"] == 0.9 and out["ci_target"] == "population"
        assert len(out["releases"]) == 2
        for release in out["releases"]:
            assert release["ci_low"] < release["auc"] < release["ci_high"]


def test_private_auc_refuses_an_interval_it_cannot_give():
    with pytest.raises(ValueError, match="not a consistent estimate"):
        PrivateAUC(
            "paper",
            epsilon=1.0,
            num_thresholds=10,
            confidence=0.95,
            mechanism_options={"estimator": "reference"},
        )
    with pytest.raises(ValueError, match="confidence"):
        PrivateAUC("histogram", epsilon=1.0, confidence=1.5)


def test_tfma_metric_outputs_the_interval_keys(tmp_path):
    pytest.importorskip("tensorflow_model_analysis")
    from dpauc_tf.beam import tfma_metric
    from tests.helpers.tfma import metric_config, write_examples

    scores, labels = zip(*(example for _, example in _examples(2000)), strict=True)
    path = write_examples(tmp_path / "examples.tfrecord", scores, labels)
    options = {"epsilon": 1.0, "num_thresholds": 50, "confidence": 0.95, "ci_target": "sample"}
    config = metric_config(options)
    result = tfma_metric.run_model_analysis(config, path, str(tmp_path / "out"))
    values = result.slicing_metrics[0][1][""][""]
    auc = values["dpauc"]["doubleValue"]
    assert values["dpauc_lower"]["doubleValue"] < auc < values["dpauc_upper"]["doubleValue"]
    assert 0.0 < values["dpauc_privacy_share"]["doubleValue"] < 1.0
