"""DPAUC as a TFMA metric on the model-agnostic path (predictions and labels in the examples):
noise off it equals the Beam transform's value per slice; every slice is one release; with
confidence intervals TFMA releases once per resample, so they are refused unless allowed."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("apache_beam")
pytest.importorskip("tensorflow_model_analysis")

from tensorflow_model_analysis.api import model_eval_lib
from tensorflow_model_analysis.proto import config_pb2

from dpauc_tf.beam import tfma_metric
from dpauc_tf.beam.release import ReleaseCounts
from dpauc_tf.mechanisms.release import ReleaseSpec
from tests.helpers.tfma import metric_config, write_examples

T = 20
N = 120


@pytest.fixture(scope="module")
def examples(tmp_path_factory):
    rng = np.random.default_rng(0)
    scores = rng.random(N).astype(np.float32)
    labels = (rng.random(N) < scores).astype(np.float32)
    groups = rng.integers(0, 2, N)
    path = tmp_path_factory.mktemp("tfma") / "examples.tfrecord"
    return write_examples(path, scores, labels, groups), scores, labels, groups


def eval_config(confidence_intervals: bool, allow: bool = False) -> config_pb2.EvalConfig:
    options = {"epsilon": None, "num_thresholds": T}
    if allow:
        options["confidence_intervals"] = "allow"
    return metric_config(
        options,
        slicing=[(), ("group",)],
        compute_confidence_intervals={"value": confidence_intervals},
    )


def run_tfma(path, tmp_path, config, monkeypatch):
    """Runs TFMA (in-process runner) and counts the metric's releases."""
    calls = []
    original = tfma_metric._DPAUCCombiner.extract_output

    def counting(self, accumulator):
        calls.append(1)
        return original(self, accumulator)

    monkeypatch.setattr(tfma_metric._DPAUCCombiner, "extract_output", counting)
    result = model_eval_lib.run_model_analysis(
        eval_config=config, data_location=path, output_path=str(tmp_path)
    )
    values = {}
    for slice_key, metrics in result.slicing_metrics:
        values[slice_key] = metrics[""][""]["dpauc"]
    return values, len(calls)


def beam_transform_auc(scores, labels) -> float:
    """The value of PrivateAUC's per-slice release combiner with noise off."""
    spec = ReleaseSpec.make("histogram", epsilon=None, num_thresholds=T)
    fn = ReleaseCounts(spec)
    return fn.extract_output(fn.add_input(fn.create_accumulator(), (scores, labels))).auc_or_none


def test_tfma_metric_equals_beam_transform_one_release_per_slice(examples, tmp_path, monkeypatch):
    path, scores, labels, groups = examples
    values, releases = run_tfma(path, tmp_path, eval_config(False), monkeypatch)
    assert releases == 3  # overall, g0, g1
    expected = {
        (): beam_transform_auc(scores, labels),
        (("group", "g0"),): beam_transform_auc(scores[groups == 0], labels[groups == 0]),
        (("group", "g1"),): beam_transform_auc(scores[groups == 1], labels[groups == 1]),
    }
    assert {key: value["doubleValue"] for key, value in values.items()} == expected


def test_confidence_intervals_are_refused_by_default(examples, tmp_path):
    with pytest.raises(ValueError, match="every run is a DP release"):
        model_eval_lib.run_model_analysis(
            eval_config=eval_config(True),
            data_location=examples[0],
            output_path=str(tmp_path),
        )


def test_allowed_confidence_intervals_release_once_per_resample(examples, tmp_path, monkeypatch):
    path, scores, labels, _ = examples
    values, releases = run_tfma(path, tmp_path, eval_config(True, allow=True), monkeypatch)
    # TFMA's default jackknife: 20 delete-one-bucket resamples + the full data, per slice.
    assert releases == 3 * 21
    # the metric asks TFMA for no interval: the value reported is the full data's
    assert values[()] == {"doubleValue": beam_transform_auc(scores, labels)}


def test_score_noise_is_refused_it_would_release_the_exact_auc(examples, tmp_path):
    """score-noise noises the scores before counting; from TFMA's counts of the exact scores
    it released the exact AUC at every epsilon."""
    with pytest.raises(ValueError, match="changes every example before counting"):
        tfma_metric.DPAUCMetric(mechanism="score-noise", epsilon=1.0)
    with pytest.raises(ValueError, match="changes every example before counting"):
        model_eval_lib.run_model_analysis(
            eval_config=metric_config({"mechanism": "score-noise", "epsilon": 0.01}),
            data_location=examples[0],
            output_path=str(tmp_path),
        )


def test_one_hot_examples_are_refused_not_counted_twice(tmp_path):
    """A one-hot label and a two-class prediction per example: raveled, every example was
    counted twice (one label flip moved the counts by L1 = 4 where the statement says 2)."""
    rng = np.random.default_rng(1)
    positive = rng.random(40)
    predictions = np.stack([1 - positive, positive], axis=1)
    labels = np.eye(2)[(rng.random(40) < positive).astype(int)]
    path = write_examples(str(tmp_path / "onehot.tfrecord"), predictions, labels)
    with pytest.raises(Exception) as info:
        model_eval_lib.run_model_analysis(
            eval_config=metric_config({"epsilon": 1.0, "num_thresholds": T}),
            data_location=path,
            output_path=str(tmp_path / "out"),
        )
    chain, error = [], info.value
    while error is not None:  # TFMA wraps the combiner's error in its own
        chain.append(str(error))
        error = error.__cause__ or error.__context__
    assert any("one prediction and one label per example" in text for text in chain), chain


def test_one_hot_refusal_is_the_top_level_message_and_prints_no_label(tmp_path):
    """TFMA's wrapper said only 'add_input failed ... with inputs: [the labels and
    predictions]' (issue 35): the library's ``run_model_analysis`` raises the refusal itself,
    in one line, without the chain that prints an example's label."""
    from dpauc_tf.beam.tfma_metric import run_model_analysis

    rng = np.random.default_rng(1)
    positive = rng.random(40)
    predictions = np.stack([1 - positive, positive], axis=1)
    labels = np.eye(2)[(rng.random(40) < positive).astype(int)]
    path = write_examples(str(tmp_path / "onehot.tfrecord"), predictions, labels)
    with pytest.raises(ValueError) as info:
        run_model_analysis(
            metric_config({"epsilon": 1.0, "num_thresholds": T}), path, str(tmp_path / "out")
        )
    assert str(info.value).startswith("DPAUCMetric: one prediction and one label per example")
    assert "array(" not in str(info.value) and "add_input failed" not in str(info.value)
    assert info.value.__cause__ is None and info.value.__suppress_context__


def test_auc_only_counts_on_its_own_grid(tmp_path):
    """auc-only's release is the Mann-Whitney AUC of counts on its own 2^17 grid; on the
    metric's 200 thresholds it read visibly low."""
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(2)
    labels = (rng.random(2_000) < 0.4).astype(np.float32)
    scores = np.clip(0.002 * rng.standard_normal(2_000) + 0.01 + 0.002 * labels, 0, 1)
    path = write_examples(str(tmp_path / "narrow.tfrecord"), scores.astype(np.float32), labels)
    exact = roc_auc_score(labels, scores.astype(np.float32))
    options = {"mechanism": "auc-only", "epsilon": 1000.0, "delta": 1e-6, "num_thresholds": 200}
    result = model_eval_lib.run_model_analysis(
        eval_config=metric_config(options), data_location=path, output_path=str(tmp_path / "out")
    )
    (_, metrics), *_ = result.slicing_metrics
    value = metrics[""][""]["dpauc"]["doubleValue"]
    assert value == pytest.approx(exact, abs=2e-3)


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_parquet_and_csv_inputs_equal_the_tfrecord_values(examples, tmp_path, fmt):
    """Parquet and CSV read by Beam's own IO (TFMA's reader failed with 'Not a valid
    TFRecord'): the same AUC per slice as the TFRecord input, noise off."""
    import pandas as pd

    path, scores, labels, groups = examples
    frame = pd.DataFrame(
        {"prediction": scores, "label": labels, "group": [f"g{g}" for g in groups]}
    )
    target = str(tmp_path / f"examples.{fmt}")
    if fmt == "parquet":
        frame.to_parquet(target, index=False)
    else:
        frame.to_csv(target, index=False)
    config = eval_config(False)
    got = tfma_metric.run_model_analysis(config, target, str(tmp_path / "out"))
    want = tfma_metric.run_model_analysis(config, path, str(tmp_path / "want"))
    as_dict = lambda result: {key: m[""][""]["dpauc"] for key, m in result.slicing_metrics}  # noqa: E731
    assert as_dict(got) == as_dict(want)
    assert len(as_dict(got)) == 3


def test_epsilon_of_each_slice_and_of_the_whole_in_tfmas_output(examples, tmp_path):
    options = {"epsilon": 0.5, "num_thresholds": T}
    config = eval_config(False)
    config.metrics_specs[0].metrics[0].config = json.dumps(options)
    result = tfma_metric.run_model_analysis(config, examples[0], str(tmp_path / "out"))
    assert len(result.slicing_metrics) == 3
    for _, metrics in result.slicing_metrics:
        values = metrics[""][""]
        auc = values["dpauc"]["doubleValue"]  # TFMA writes an undefined AUC as "NaN"
        assert auc == "NaN" or 0.0 <= auc <= 1.0
        assert values["dpauc_epsilon"]["doubleValue"] == pytest.approx(0.5)
        # two slicing specs (overall, group): every example is in two releases
        assert values["dpauc_epsilon_total"]["doubleValue"] == pytest.approx(1.0)
    declared = {**options, "slices_per_example": 3}
    config.metrics_specs[0].metrics[0].config = json.dumps(declared)
    result = tfma_metric.run_model_analysis(config, examples[0], str(tmp_path / "declared"))
    for _, metrics in result.slicing_metrics:
        assert metrics[""][""]["dpauc_epsilon_total"]["doubleValue"] == pytest.approx(1.5)
