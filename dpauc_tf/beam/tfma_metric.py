"""DPAUC as a TensorFlow Model Analysis metric (an ``EvalConfig`` metric spec).

Needs TFMA (``pip install "dpauc-tf[tfma]"``). :class:`DPAUCMetric` is a
``tfma.metrics.Metric`` whose combiner is the library's own counting
(:class:`~dpauc_tf.beam.counting.CountBuckets`: per-bucket counts, merged by adding) and
whose ``extract_output`` releases the merged counts once through a mechanism of the
registry; the AUC is the mechanism's estimate. Use it in an ``EvalConfig``::

    tfma.MetricConfig(class_name="DPAUCMetric", module="dpauc_tf.beam.tfma_metric",
                      config='{"epsilon": 1.0, "num_thresholds": 200}')

**Every slice is a release**: TFMA computes the metric once per slice (the overall slice
and every slice of every ``slicing_specs`` entry), so an example in ``k`` slices pays for
``k`` releases (``docs/tfma.md``). **Confidence intervals are refused**: TFMA computes them
by running the metric's combiner on 20 jackknife or Poisson-bootstrap resamples per slice
and calling ``extract_output`` on each, which would be 21 releases per slice, 20 of them
of resampled data; the metric cannot tell TFMA's resample outputs from the real one.
``confidence_intervals="allow"`` lets TFMA do it anyway (the metric's own interval is not
reported, ``compute_confidence_interval`` is False, but every resample still draws a
release); the cost is then ``21 k`` releases. For one release per slice with the accounting
in the output, use :class:`dpauc_tf.beam.release.PrivateAUC`.

Noise: every release draws its seed from the operating system (TFMA's combiner does not
see the slice key, so a fixed seed would give every slice the same noise).

>>> DPAUCMetric(epsilon=None, num_thresholds=10).get_config()["num_thresholds"]
10
"""

from __future__ import annotations

from typing import Any

try:
    from tensorflow_model_analysis.metrics import metric_types, metric_util
except ImportError:  # pragma: no cover - the keras3 world has TFMA
    raise ImportError(
        'dpauc_tf.beam.tfma_metric needs TFMA: pip install "dpauc-tf[tfma]"'
    ) from None

import apache_beam as beam
import numpy as np

from dpauc_tf.beam.counting import CountBuckets
from dpauc_tf.beam.release import RELEASE_COUNTER
from dpauc_tf.core.defaults import DEFAULT_NUM_THRESHOLDS
from dpauc_tf.mechanisms.release import ReleaseSpec

DPAUC_NAME = "dpauc"
CI_CHOICES = ("refuse", "allow")


class DPAUCMetric(metric_types.Metric):
    """The DP AUC of a TFMA evaluation (one release per slice; see the module docstring).

    Args:
      name: the metric's name in TFMA's output.
      mechanism: a registered mechanism that releases bucket counts (``histogram``, ...).
      epsilon: epsilon of one release (``None`` = no noise, NOT private).
      num_thresholds: ``T``. threshold_grid: ``"tf"`` or ``"reference"``.
      delta: for mechanisms that take one.
      confidence_intervals: ``"refuse"`` (default: an ``EvalConfig`` that asks for
        confidence intervals raises ``ValueError``) or ``"allow"`` (every resample is one
        more release; see ``docs/tfma.md``).

    >>> DPAUCMetric(epsilon=1.0).compute_confidence_interval
    False
    """

    def __init__(
        self,
        name: str = DPAUC_NAME,
        mechanism: str = "histogram",
        epsilon: float | None = None,
        num_thresholds: int = DEFAULT_NUM_THRESHOLDS,
        threshold_grid: str = "tf",
        delta: float | None = None,
        confidence_intervals: str = "refuse",
    ):
        if confidence_intervals not in CI_CHOICES:
            raise ValueError(
                f"confidence_intervals must be one of {CI_CHOICES}, got {confidence_intervals!r}"
            )
        _spec(mechanism, epsilon, num_thresholds, threshold_grid, delta)  # checks them now
        super().__init__(
            _dpauc_computations,
            name=name,
            mechanism=mechanism,
            epsilon=epsilon,
            num_thresholds=num_thresholds,
            threshold_grid=threshold_grid,
            delta=delta,
            confidence_intervals=confidence_intervals,
        )

    @property
    def compute_confidence_interval(self) -> bool:
        return False


metric_types.register_metric(DPAUCMetric)


def _dpauc_computations(
    name: str = DPAUC_NAME,
    mechanism: str = "histogram",
    epsilon: float | None = None,
    num_thresholds: int = DEFAULT_NUM_THRESHOLDS,
    threshold_grid: str = "tf",
    delta: float | None = None,
    confidence_intervals: str = "refuse",
    eval_config=None,
    model_names: list[str] | None = None,
    output_names: list[str] | None = None,
    sub_keys=None,
    example_weighted: bool = False,
) -> metric_types.MetricComputations:
    options = getattr(eval_config, "options", None)
    if (
        options is not None
        and options.compute_confidence_intervals.value
        and confidence_intervals == "refuse"
    ):
        raise ValueError(
            "DPAUCMetric: TFMA's confidence intervals rerun the metric on 20 resamples per "
            "slice and every run is a DP release (21 per slice); turn "
            "compute_confidence_intervals off, pass confidence_intervals='allow' to pay for "
            "them, or use dpauc_tf.beam.PrivateAUC (docs/tfma.md)"
        )
    spec = _spec(mechanism, epsilon, num_thresholds, threshold_grid, delta)
    computations = []
    for model_name in model_names or [""]:
        for output_name in output_names or [""]:
            for sub_key in sub_keys or [None]:
                key = metric_types.MetricKey(
                    name=name,
                    model_name=model_name,
                    output_name=output_name,
                    sub_key=sub_key,
                    example_weighted=example_weighted,
                )
                combiner = _DPAUCCombiner(key, eval_config, spec, example_weighted)
                computations.append(
                    metric_types.MetricComputation(
                        keys=[key], preprocessors=None, combiner=combiner
                    )
                )
    return computations


def _spec(mechanism, epsilon, num_thresholds, threshold_grid, delta) -> ReleaseSpec:
    spec = ReleaseSpec.make(
        mechanism,
        epsilon=epsilon,
        num_thresholds=num_thresholds,
        threshold_grid=threshold_grid,
        delta=delta,
    )
    spec.check_releases_counts("DPAUCMetric")
    return spec


def _one_example(label, prediction, weight) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One example's ``(score, label, weight)``; several values per example (one-hot labels,
    two-class or multi-output predictions) are refused: counted as several examples, one
    label flip would move the counts by more than the stated sensitivity."""
    prediction, label = np.ravel(prediction), np.ravel(label)
    if prediction.size != 1 or label.size != 1:
        raise ValueError(
            "DPAUCMetric: one prediction and one label per example, got "
            f"{prediction.size} predictions and {label.size} labels; for a multi-class or "
            "one-hot model binarize it (MetricsSpec binarize=BinarizationOptions(class_ids=...)) "
            "so that every example has one score"
        )
    return prediction, label, np.ravel(weight)


class _DPAUCCombiner(beam.CombineFn):
    """Counts with :class:`CountBuckets`; ``extract_output`` is the (one) release."""

    def __init__(self, key, eval_config, spec: ReleaseSpec, example_weighted):
        self._key = key
        self._eval_config = eval_config
        self._spec = spec
        self._example_weighted = example_weighted
        # the mechanism's own grid where it has one (auc-only counts on a fine grid)
        self._counter = CountBuckets(
            spec.count_grid(), integer_weights=spec.capabilities.integer_counts
        )

    def create_accumulator(self):
        return self._counter.create_accumulator()

    def add_input(self, accumulator, element: Any):
        for label, prediction, weight in metric_util.to_label_prediction_example_weight(
            element,
            eval_config=self._eval_config,
            model_name=self._key.model_name,
            output_name=self._key.output_name,
            sub_key=self._key.sub_key,
            example_weighted=self._example_weighted,
            flatten=False,
        ):
            accumulator = self._counter.add_input(
                accumulator, _one_example(label, prediction, weight)
            )
        return accumulator

    def merge_accumulators(self, accumulators):
        return self._counter.merge_accumulators(accumulators)

    def compact(self, accumulator):
        return self._counter.compact(accumulator)

    def extract_output(self, accumulator) -> dict:
        counts = self._counter.extract_output(accumulator)
        mechanism = self._spec.build()
        release = mechanism.release(counts.pos, counts.neg, seed=None)
        beam.metrics.Metrics.counter(*RELEASE_COUNTER).inc()
        auc = float(mechanism.estimate_auc(release).numpy())
        return {self._key: auc}
