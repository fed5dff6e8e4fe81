"""DPAUC as a TensorFlow Model Analysis metric (an ``EvalConfig`` metric spec).

Needs TFMA (the ``tfma`` extra: ``pip install ".[tfma]"`` in a clone). [`DPAUCMetric`][] is a
``tfma.metrics.Metric`` whose combiner is the library's own counting
([`CountBuckets`][]: per-bucket counts, merged by adding) and
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
in the output, use [`dpauc_tf.beam.release.PrivateAUC`][].

Noise: every release draws its seed from the operating system (TFMA's combiner does not
see the slice key, so a fixed seed would give every slice the same noise).

**The config must name ``epsilon``**: a config without it is refused (it never means "no
noise"). The exact, NOT private AUC is asked for explicitly, with ``"epsilon": null`` or
``"mechanism": "none"`` (as ``dpauc evaluate --mechanism none``); its output then says so: ``dpauc_mechanism`` is
``"none"``, ``dpauc_epsilon`` and ``dpauc_epsilon_total`` are infinite (no guarantee).

    >>> DPAUCMetric(epsilon=None, num_thresholds=10).get_config()["num_thresholds"]
    10
"""

from __future__ import annotations

import contextlib
import math
from typing import Any

from dpauc_tf.core.extras import install_hint

try:
    from tensorflow_model_analysis.metrics import metric_types, metric_util
except ImportError:  # pragma: no cover - the keras3 world has TFMA
    raise ImportError(f"dpauc_tf.beam.tfma_metric needs TFMA: {install_hint('tfma')}") from None

import apache_beam as beam
import numpy as np

from dpauc_tf.beam.release import ReleaseCounts
from dpauc_tf.core.defaults import DEFAULT_NUM_THRESHOLDS
from dpauc_tf.core.vocabulary import Vocabulary
from dpauc_tf.mechanisms.arguments import ReleaseArguments
from dpauc_tf.mechanisms.laws import Deployment
from dpauc_tf.mechanisms.release import (
    AUCResult,
    ReleaseSpec,
    check_slices_bound,
)
from dpauc_tf.privacy.statement import check_label_free_keys

DPAUC_NAME = "dpauc"
# Metric keys beside the value: one release's epsilon and the whole evaluation's.
EPSILON_SUFFIXES = ("_epsilon", "_epsilon_total")
MECHANISM_SUFFIX = "_mechanism"  # the mechanism's name beside the value ("none": exact)
INTERVAL_SUFFIXES = ("_lower", "_upper", "_privacy_share")


class TFMAIntervals(Vocabulary):
    """Whether the metric lets TFMA compute its bootstrap confidence intervals
    (``confidence_intervals=``; module docstring): ``"refuse"`` (the default) or ``"allow"``.
    """

    REFUSE = "refuse"
    ALLOW = "allow"

    @classmethod
    def argument(cls) -> str:
        return "confidence_intervals"


_MISSING = object()  # no epsilon in the config: refused, never "no noise"


def _given_epsilon(epsilon: Any, mechanism: str | None) -> float | None:
    """The config's ``epsilon``; a config without one is refused unless it names the
    ``"none"`` mechanism (as ``dpauc evaluate --mechanism none``): the exact AUC must be
    asked for explicitly."""
    if epsilon is not _MISSING:
        return epsilon
    if mechanism == "none":
        return None
    raise ValueError(
        'DPAUCMetric: the config names no "epsilon"; give a number (one release\'s budget), '
        'or "epsilon": null (or "mechanism": "none") for the exact AUC (NOT private)'
    )


class DPAUCMetric(metric_types.Metric):
    """The DP AUC of a TFMA evaluation (one release per slice; see the module docstring).

    Args:
      name: the metric's name in TFMA's output.
      mechanism: a registered mechanism that releases from bucket counts. Default
        (``None``): the rule of ``DPAUC`` and ``dpauc evaluate``
        ([`dpauc_tf.mechanisms.registry.default_mechanism`][]): ``"rank-sum"``, or
        ``"auc-only"`` with a ``delta``. The output names it (``dpauc_mechanism``).
      epsilon: epsilon of one release; required (a config without it is refused, unless
        its mechanism is ``"none"``). ``None`` (``null`` in the JSON config) asks for the
        exact AUC, NOT private: its ``dpauc_epsilon`` and ``dpauc_epsilon_total`` are then
        infinite.
      num_thresholds: ``T``.
      threshold_grid: ``"tf"`` or ``"reference"``.
      delta: for mechanisms that take one.
      confidence_intervals: ``"refuse"`` (default: an ``EvalConfig`` that asks for
        confidence intervals raises ``ValueError``) or ``"allow"`` (every resample is one
        more release; see ``docs/tfma.md``).
      slices_per_example: a bound on the slices one example is in, for ``dpauc_epsilon_total``;
        default: one per slicing spec of the ``EvalConfig`` (true when every slicing feature
        has one value per example; declare more for multivalent slicing features).

    Every slice's output holds ``dpauc`` (the AUC), ``dpauc_mechanism`` (the mechanism's
    name, ``"none"`` for the exact AUC), ``dpauc_epsilon`` (one release's epsilon) and
    ``dpauc_epsilon_total`` (the whole evaluation's: the composition of
    ``slices_per_example`` releases); both are infinite for the exact, NOT private AUC.
    With ``confidence`` (e.g. 0.95) also ``dpauc_lower``, ``dpauc_upper`` and
    ``dpauc_privacy_share``: the release's interval for ``ci_target`` (``"population"`` or
    ``"sample"``), computed from the release alone, in place of TFMA's resampling intervals
    (no privacy cost; ``docs/intervals.md``).

        >>> DPAUCMetric(epsilon=1.0).compute_confidence_interval
        False
    """

    def __init__(
        self,
        name: str = DPAUC_NAME,
        mechanism: str | None = None,
        epsilon: Any = _MISSING,
        num_thresholds: int = DEFAULT_NUM_THRESHOLDS,
        threshold_grid: str = "tf",
        delta: float | None = None,
        confidence_intervals: str = "refuse",
        slices_per_example: int | None = None,
        confidence: float | None = None,
        ci_target: str = "population",
    ):
        epsilon = _given_epsilon(epsilon, mechanism)
        check_slices_bound(slices_per_example, "slices_per_example")
        confidence_intervals = TFMAIntervals(confidence_intervals).value
        spec = _spec(mechanism, epsilon, num_thresholds, threshold_grid, delta)  # checks them
        if confidence is not None:
            from dpauc_tf.mechanisms.intervals import (
                IntervalTarget,
                check_confidence,
                check_interval_support,
            )

            check_confidence(confidence), IntervalTarget(ci_target)
            check_interval_support(spec.build())
        super().__init__(
            _dpauc_computations,
            name=name,
            mechanism=spec.mechanism,  # resolved by the spec: the config names it
            epsilon=epsilon,
            num_thresholds=num_thresholds,
            threshold_grid=threshold_grid,
            delta=delta,
            confidence_intervals=confidence_intervals,
            slices_per_example=slices_per_example,
            confidence=confidence,
            ci_target=ci_target,
        )

    @property
    def compute_confidence_interval(self) -> bool:
        return False


metric_types.register_metric(DPAUCMetric)


def _dpauc_computations(
    name: str = DPAUC_NAME,
    mechanism: str | None = None,
    epsilon: Any = _MISSING,
    num_thresholds: int = DEFAULT_NUM_THRESHOLDS,
    threshold_grid: str = "tf",
    delta: float | None = None,
    confidence_intervals: str = "refuse",
    slices_per_example: int | None = None,
    confidence: float | None = None,
    ci_target: str = "population",
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
    epsilon = _given_epsilon(epsilon, mechanism)
    _refuse_label_slices(eval_config)
    spec = _spec(mechanism, epsilon, num_thresholds, threshold_grid, delta)
    slices = slices_per_example or _slices_of(eval_config)
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
                # the guarantee beside the value (infinite for the exact AUC: none)
                keys = [key] + [
                    key._replace(name=f"{name}{s}") for s in (*EPSILON_SUFFIXES, MECHANISM_SUFFIX)
                ]
                interval = [key._replace(name=f"{name}{suffix}") for suffix in INTERVAL_SUFFIXES]
                asked = (
                    {} if confidence is None else {"confidence": confidence, "ci_target": ci_target}
                )
                keys += interval if asked else []
                combiner = _DPAUCCombiner(keys, eval_config, spec, example_weighted, slices, asked)
                computations.append(
                    metric_types.MetricComputation(keys=keys, preprocessors=None, combiner=combiner)
                )
    return computations


def _label_keys(eval_config) -> set[str]:
    """The label features the ``EvalConfig``'s model specs name."""
    names = set()
    for spec in getattr(eval_config, "model_specs", ()):
        names.update(name for name in (spec.label_key, *spec.label_keys.values()) if name)
    return names


def _refuse_label_slices(eval_config) -> None:
    """Refuses a slicing spec on a label feature: each slice's size would be an exact class
    count (by name: a check of the values would itself depend on the labels)."""
    if eval_config is None:
        return
    specs = list(eval_config.slicing_specs)
    for cross in eval_config.cross_slicing_specs:
        specs += [cross.baseline_spec, *cross.slicing_specs]
    names = [(*spec.feature_keys, *spec.feature_values) for spec in specs]
    for label in sorted(_label_keys(eval_config)):
        check_label_free_keys(label, names, None, "DPAUCMetric")


def _slices_of(eval_config) -> int:
    """Slices one example is in: one per slicing spec (and cross-slicing spec) when every
    slicing feature has one value per example; the overall slice alone without specs."""
    if eval_config is None:
        return 1
    count = len(eval_config.slicing_specs) + len(eval_config.cross_slicing_specs)
    return max(count, 1)


def _spec(mechanism, epsilon, num_thresholds, threshold_grid, delta) -> ReleaseSpec:
    """The metric's one spec ([`ReleaseArguments.spec`][dpauc_tf.mechanisms.arguments.ReleaseArguments.spec];
    one data holder: the central default where no mechanism is named); no fixed seed
    (TFMA's combiner does not see the slice)."""
    spec = ReleaseArguments.of(locals()).spec(Deployment.CENTRAL)
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


class _DPAUCCombiner(ReleaseCounts):
    """The Beam release combiner ([`ReleaseCounts`][dpauc_tf.beam.release.ReleaseCounts],
    shared with ``PrivateAUC``) on TFMA's inputs; ``extract_output`` is the (one) release,
    as TFMA's metric keys."""

    def __init__(
        self, keys, eval_config, spec: ReleaseSpec, example_weighted, slices: int, interval
    ):
        super().__init__(spec, slices_per_example=slices, interval=interval)
        self._keys = keys
        self._key = keys[0]
        self._eval_config = eval_config
        self._example_weighted = example_weighted

    def add_input(self, accumulator, element: Any, **unused):
        for label, prediction, weight in metric_util.to_label_prediction_example_weight(
            element,
            eval_config=self._eval_config,
            model_name=self._key.model_name,
            output_name=self._key.output_name,
            sub_key=self._key.sub_key,
            example_weighted=self._example_weighted,
            flatten=False,
        ):
            accumulator = super().add_input(accumulator, _one_example(label, prediction, weight))
        return accumulator

    def extract_output(self, accumulator, **unused) -> dict:
        return _metric_values(super().extract_output(accumulator), self._keys)


def _metric_values(result: AUCResult, keys) -> dict:
    """TFMA's metric values of one release: the AUC, one release's epsilon and the whole
    evaluation's (infinite for the exact AUC: no guarantee), the mechanism's name, and the
    interval where one was asked."""
    value, one, whole, mechanism = keys[:4]
    out = {
        value: float(result.aucs[0]),
        mechanism: result.mechanism,  # "none" for the exact AUC
        one: math.inf if result.epsilon is None else float(result.epsilon),
        whole: math.inf if result.epsilon_total is None else float(result.epsilon_total),
    }
    if result.interval is not None:
        ci = result.interval
        values = (ci.low[0], ci.high[0], ci.privacy_share[0])
        out.update({key: float(v) for key, v in zip(keys[4:], values, strict=True)})
    return out


def run_model_analysis(
    eval_config,
    data_location: str,
    output_path: str | None = None,
    *,
    file_format: str | None = None,
    pipeline_options=None,
):
    """TFMA's ``run_model_analysis`` on TFRecord, **Parquet or CSV** inputs (model-agnostic:
    the examples carry the predictions and the labels).

    TFRecord goes to TFMA's own ``run_model_analysis``. Parquet and CSV files (globs, ``.gz``)
    are read with Beam's own sources ([`ReadScores`][], only the columns
    the ``EvalConfig`` names: label, prediction, example weight and slicing features),
    turned into ``tf.train.Example`` records in the pipeline and evaluated by
    ``tfma.ExtractEvaluateAndWriteResults``, as ``run_model_analysis`` does for TFRecord.
    A missing value in a slicing column leaves the example out of that spec's slices.

    Returns TFMA's ``EvalResult`` (``result.slicing_metrics``).
    """
    import tempfile

    from tensorflow_model_analysis.api import model_eval_lib
    from tensorflow_model_analysis.utils import config_util

    from dpauc_tf.beam.io import ReadScores
    from dpauc_tf.beam.io import file_format as format_of

    fmt = file_format or format_of(data_location)
    if fmt == "tfrecord":
        with _refusals_said_first():
            return model_eval_lib.run_model_analysis(
                eval_config=eval_config,
                data_location=data_location,
                output_path=output_path,
                pipeline_options=pipeline_options,
            )
    from tensorflow_model_analysis import constants
    from tfx_bsl.tfxio import tf_example_record

    output_path = output_path or tempfile.mkdtemp(prefix="dpauc-tfma-")
    columns, slicing = _columns_of(eval_config)
    config = config_util.update_eval_config_with_defaults(eval_config)
    examples = tf_example_record.TFExampleBeamRecord(
        physical_format="inmem",
        raw_record_column_name=constants.ARROW_INPUT_COLUMN,
        telemetry_descriptors=["dpauc_tf"],
    )
    with _refusals_said_first(), beam.Pipeline(options=pipeline_options) as pipeline:
        _ = (
            pipeline
            | "ReadScores" >> ReadScores(data_location, columns, format=fmt)
            | "ToExamples" >> beam.FlatMap(_serialized_examples, slicing=slicing)
            | "ToArrow" >> examples.BeamSource()
            | "ExtractEvaluateAndWriteResults"
            >> model_eval_lib.ExtractEvaluateAndWriteResults(
                eval_config=config,
                output_path=output_path,
                display_only_data_location=data_location,
                display_only_file_format=fmt,
                config_version=2,
            )
        )
    return model_eval_lib.load_eval_result(output_path)


@contextlib.contextmanager
def _refusals_said_first():
    """TFMA wraps a combiner's error in ``RuntimeError('add_input failed on ... with inputs:
    [the example's labels and predictions]')``: the reason was only in the chained traceback,
    under a message that prints an example's label. A ``DPAUCMetric`` refusal comes out as
    its own one-line ``ValueError``, without that chain."""
    try:
        yield
    except Exception as error:
        cause: BaseException | None = error
        while cause is not None:
            if isinstance(cause, ValueError) and str(cause).startswith("DPAUCMetric:"):
                raise ValueError(str(cause)) from None
            cause = cause.__cause__ or cause.__context__
        raise


def _columns_of(eval_config) -> tuple[list[str], list[str]]:
    """The columns to read: the model specs' keys, and the slicing features."""
    keys = []
    for spec in eval_config.model_specs:
        keys += [k for k in (spec.label_key, spec.prediction_key, spec.example_weight_key) if k]
    if not keys:
        raise ValueError(
            "run_model_analysis: the EvalConfig's model_specs name no label_key or "
            "prediction_key (the model-agnostic path reads them from the examples)"
        )
    specs = list(eval_config.slicing_specs)
    for cross in eval_config.cross_slicing_specs:
        specs += [cross.baseline_spec, *cross.slicing_specs]
    slicing = [name for spec in specs for name in [*spec.feature_keys, *spec.feature_values]]
    slicing = [name for name in dict.fromkeys(slicing) if name not in keys]
    return list(dict.fromkeys(keys)) + slicing, slicing


def _serialized_examples(batch: dict, slicing: list[str]) -> list[bytes]:
    """A column batch -> serialized ``tf.train.Example`` records (one value per feature;
    numbers as floats, text as bytes). A missing value in a slicing column leaves the feature
    out (the example is in none of that spec's slices); elsewhere it stays NaN, which the
    metric refuses."""
    from tensorflow.core.example import example_pb2, feature_pb2

    names = list(batch)
    size = len(batch[names[0]]) if names else 0
    records = []
    for row in range(size):
        features = {}
        for name in names:
            value = batch[name][row]
            missing = value is None or (isinstance(value, float) and value != value)
            if missing and name in slicing:
                continue
            if isinstance(value, (str, bytes)):
                data = value.encode() if isinstance(value, str) else value
                features[name] = feature_pb2.Feature(bytes_list=feature_pb2.BytesList(value=[data]))
            else:
                number = float("nan") if value is None else float(value)
                features[name] = feature_pb2.Feature(
                    float_list=feature_pb2.FloatList(value=[number])
                )
        example = example_pb2.Example(features=feature_pb2.Features(feature=features))
        records.append(example.SerializeToString())
    return records
