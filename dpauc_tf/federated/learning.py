"""Client-side DPAUC noise for ``tff.learning.algorithms.build_fed_eval``.

By default TFF sums every client's metric variables and, at the server, rebuilds each Keras
metric from its config, assigns the sums and calls ``result()``: for :class:`dpauc_tf.DPAUC`
that would be *central* noise added by the server to exact sums of labels it should never
see. :func:`build_dpauc_metrics_aggregation_process` instead returns a
``SumThenFinalizeFactory`` process whose

* inner summation (:class:`ClientNoiseSumFactory`) adds the DPAUC mechanism's noise to the
  ``positives``/``negatives`` variables **on each client** before ``tff.federated_sum``
  (local DP: each client's report is private on its own; fresh OS entropy per client from
  ``tf.random.Generator.from_non_deterministic_state()``, since ``build_fed_eval`` gives
  clients no identity to seed from), and whose
* server finalizer for DPAUC computes the AUC from the already-noisy sums **without new
  noise** (clip at 0, ROC, trapezoid: :func:`dpauc_tf.core.curve.auc_from_histogram`).

**Warning.** Without this process (``build_fed_eval(model_fn)`` alone) DPAUC's noise is
central noise added by the server to exact label counts it has already seen, not label DP
against the server. The library cannot detect that path; see the trust model in
``docs/mechanisms.md``.

All other metrics keep TFF's default: exact sums, finalized by their own ``result()``.
Each call of the evaluation process's ``next`` costs every participating client one
release (``epsilon`` of its DPAUC metric); the "total_rounds" metrics are sums of released
values (post-processing, no further cost).

Supported DPAUC mechanisms: those with the ``fed_eval`` capability
(``dpauc_tf.list_mechanisms(fed_eval=True)``: their releases are per-bucket histograms and
fit DPAUC's variables) and ``epsilon=None`` (no noise). The others (``paper`` releases
``4T`` cumulative counts, the secure mechanisms need a secure sum) are refused with the
registry's message: use :func:`dpauc_tf.federated.evaluate` for those.

Example (``model_fn`` returns ``tff.learning.models.from_keras_model(..., metrics=[
DPAUC(epsilon=1.0, num_thresholds=100), tf.keras.metrics.BinaryAccuracy()])``):

```python
process = build_dpauc_metrics_aggregation_process(model_fn)
evaluation = tff.learning.algorithms.build_fed_eval(model_fn, metrics_aggregation_process=process)
state = evaluation.set_model_weights(evaluation.initialize(), weights)
output = evaluation.next(state, client_datasets)
output.metrics["client_work"]["eval"]["current_round_metrics"]["dp_auc"]
```
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Mapping

import tensorflow as tf
import tensorflow_federated as tff

from dpauc_tf.core.curve import auc_from_histogram
from dpauc_tf.keras.metric import DPAUC
from dpauc_tf.mechanisms.base import CountMechanism, Release
from dpauc_tf.mechanisms.registry import require


def histogram_from_release(release: Release) -> tuple[tf.Tensor, tf.Tensor]:
    """``(pos, neg)`` per-bucket counts carried by a histogram-type release."""
    if set(release) == {"pos", "neg"}:
        return release["pos"], release["neg"]
    if set(release) == {"pos", "total"}:
        return release["pos"], release["total"] - release["pos"]
    raise ValueError(f"release with keys {sorted(release)} is not a per-bucket histogram")


def _check_mechanism(name: str, mechanism: CountMechanism) -> None:
    try:
        require(mechanism, "fed_eval")
    except ValueError as error:
        raise ValueError(f"DPAUC metric {name!r}: {error}") from None


def noise_free_dpauc_finalizer(report_noisy_counts: bool = False) -> Callable:
    """Server finalizer for DPAUC: AUC of the summed (already noisy) counts, no new noise.

    With ``report_noisy_counts`` the finalized value is ``{auc, positives, negatives}``.
    """

    @tf.function
    def finalize(unfinalized):
        positives, negatives = unfinalized
        auc = auc_from_histogram(positives, negatives)
        if report_noisy_counts:
            return collections.OrderedDict(auc=auc, positives=positives, negatives=negatives)
        return auc

    return finalize


class ClientNoiseSumFactory(tff.aggregators.UnweightedAggregationFactory):
    """Adds DPAUC noise to the named metrics on each client, then ``tff.federated_sum``.

    Args:
      mechanisms: metric name -> the metric's :class:`~dpauc_tf.mechanisms.CountMechanism`.
        Each named metric's unfinalized value must be ``[positives, negatives]``.

    The process's measurements are ``{num_reporting}``: how many clients' reports were summed.
    """

    def __init__(self, mechanisms: Mapping[str, CountMechanism]):
        for name, mechanism in mechanisms.items():
            _check_mechanism(name, mechanism)
        self._mechanisms = dict(mechanisms)

    def create(self, value_type) -> tff.templates.AggregationProcess:
        mechanisms = self._mechanisms

        @tff.tensorflow.computation(value_type)
        def add_client_noise(metrics):
            generator = tf.random.Generator.from_non_deterministic_state()
            out = collections.OrderedDict()
            for name, values in metrics.items():
                if name not in mechanisms:
                    out[name] = values
                    continue
                positives, negatives = values[0], values[1]
                seed = generator.make_seeds(1)[:, 0]
                release = mechanisms[name].release(
                    tf.cast(positives, tf.float64), tf.cast(negatives, tf.float64), seed=seed
                )
                noisy_pos, noisy_neg = histogram_from_release(release)
                out[name] = [
                    tf.cast(noisy_pos, positives.dtype),
                    tf.cast(noisy_neg, negatives.dtype),
                ]
            return out

        @tff.tensorflow.computation
        def one():
            return tf.constant(1, tf.int32)

        @tff.federated_computation
        def init_fn():
            return tff.federated_value((), tff.SERVER)

        @tff.federated_computation(
            init_fn.type_signature.result, tff.FederatedType(value_type, tff.CLIENTS)
        )
        def next_fn(state, value):
            total = tff.federated_sum(tff.federated_map(add_client_noise, value))
            reporting = tff.federated_sum(tff.federated_eval(one, tff.CLIENTS))
            return tff.templates.MeasuredProcessOutput(
                state=state,
                result=total,
                measurements=tff.federated_zip(collections.OrderedDict(num_reporting=reporting)),
            )

        return tff.templates.AggregationProcess(init_fn, next_fn)


def build_dpauc_metrics_aggregation_process(
    model_fn: Callable[[], tff.learning.models.VariableModel],
    *,
    report_noisy_counts: bool = False,
) -> tff.templates.AggregationProcess:
    """A ``metrics_aggregation_process`` for ``build_fed_eval`` with client-side DPAUC noise.

    Args:
      model_fn: the same no-arg function given to ``build_fed_eval``; its model must expose
        its Keras metrics (``get_metrics()``, as ``tff.learning.models.from_keras_model``
        models do). Every :class:`dpauc_tf.DPAUC` among them gets client-side noise.
      report_noisy_counts: finalize DPAUC as ``{auc, positives, negatives}`` (the summed
        noisy counts) instead of the AUC alone (for audits and tests).

    Raises:
      ValueError: no DPAUC metric in the model, or a DPAUC mechanism that cannot run
        client-side here (see the module docstring).
    """
    with tf.Graph().as_default():
        model = model_fn()
        if not hasattr(model, "get_metrics"):
            raise TypeError("the model must expose its Keras metrics via get_metrics()")
        unfinalized = model.report_local_unfinalized_metrics()
        finalizers = collections.OrderedDict(model.metric_finalizers())
        mechanisms = {
            metric.name: metric.mechanism
            for metric in model.get_metrics()
            if isinstance(metric, DPAUC)
        }
        value_type = tff.StructWithPythonType(
            [
                (
                    name,
                    tff.StructWithPythonType(
                        [
                            (None, tff.TensorType(t.dtype.as_numpy_dtype, t.shape.as_list()))
                            for t in values
                        ],
                        list,
                    ),
                )
                for name, values in unfinalized.items()
            ],
            collections.OrderedDict,
        )
    if not mechanisms:
        raise ValueError("the model has no DPAUC metric; build_fed_eval's default is enough")
    for name in mechanisms:
        finalizers[name] = noise_free_dpauc_finalizer(report_noisy_counts)
    factory = tff.learning.metrics.SumThenFinalizeFactory(
        finalizers, inner_summation_factory=ClientNoiseSumFactory(mechanisms)
    )
    return factory.create(value_type)
