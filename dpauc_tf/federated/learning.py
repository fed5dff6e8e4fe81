"""Client-side DPAUC noise for ``tff.learning.algorithms.build_fed_eval``.

By default TFF sums every client's metric variables and, at the server, rebuilds each Keras
metric from its config, assigns the sums and calls ``result()``. For a noisy
`dpauc_tf.DPAUC` that would be *central* noise drawn by a server that has already seen
the exact label counts; and since ``result()`` inside a TFF computation cannot draw a release,
``DPAUC`` refuses that path with a ``ValueError`` naming this module when ``build_fed_eval``
(or any ``tff.learning`` algorithm) builds its finalizers.
[`build_dpauc_metrics_aggregation_process`][] returns the ``metrics_aggregation_process``
to use instead. Each round,

* every client releases each DPAUC metric's counts through the metric's mechanism **on the
  client** (fresh OS entropy per client: ``tf.random.Generator.from_non_deterministic_state()``,
  since ``build_fed_eval`` gives clients no identity to seed from);
* local mechanisms (``histogram``, ``histogram-public-scores``): the releases are summed by
  ``tff.federated_sum``; each client's report is private on its own;
* secure mechanisms (``secure-histogram``, ``secure-tree-histogram``, discrete Laplace or
  Skellam shares): each client adds its integer noise *share* to its integer counts and sends
  the residues modulo ``2^secure_bitwidth``; ``tff.federated_secure_sum_bitwidth`` sums them
  and the server maps the sum back to signed counts (the code
  [`dpauc_tf.federated.evaluate`][] runs: `dpauc_tf.federated.computations`). The
  shares are sized for ``num_clients`` reports per round; if fewer clients report, the
  achieved epsilon is ``mechanism.achieved_epsilon(num_reporting)`` (``num_reporting`` is in
  the output with ``report_noisy_counts=True``);
* the rank sum (``rank-sum``, DPAUC's ROC default without a ``delta``) runs as
  ``secure-rank-sum`` in **two secure sums inside the one aggregation**
  ([`build_rank_sum_rounds`][]): the clients' bucket totals (the server learns the aggregate
  score histogram, label-free), broadcast back; then each client's ``2 S_k`` and ``P_k``
  with its noise shares, and ``n_k``. The server holds what the central release holds, so
  the error is the central one whatever the number of clients. Its shares are sized for
  ``num_clients`` (required); fewer reporting give ``mechanism.achieved_epsilon(m)``, and
  half or fewer (or a population that changed between the two sums) give NaN. Its
  "total_rounds" value is NaN: rank sums of rounds ranked apart do not add;
* the server computes the metric's value from the summed release **without new noise**
  (the mechanism's AUC estimate, the same post-processing as ``DPAUC.result()``).

All other metrics keep TFF's default: exact sums, finalized by their own finalizers. The
"total_rounds" values are computed from the sums of the rounds' releases (post-processing,
no further cost). Each call of the evaluation process's ``next`` costs every participating
client one release (``epsilon`` of its DPAUC metric).

Supported DPAUC mechanisms: those with the ``fed_eval`` capability
(``dpauc_tf.list_mechanisms(fed_eval=True)``), ``rank-sum`` (as above) and ``epsilon=None``
(no noise); the others are refused with the registry's message (use
[`dpauc_tf.federated.evaluate`][]).

Example (``model_fn`` returns ``tff.learning.models.from_keras_model(..., metrics=[
DPAUC(epsilon=1.0, num_thresholds=100, mechanism="secure-histogram"),
tf.keras.metrics.BinaryAccuracy()])``):

```python
process = build_dpauc_metrics_aggregation_process(model_fn, num_clients=10)
evaluation = tff.learning.algorithms.build_fed_eval(model_fn, metrics_aggregation_process=process)
state = evaluation.set_model_weights(evaluation.initialize(), weights)
output = evaluation.next(state, client_datasets)   # 10 clients
output.metrics["client_work"]["eval"]["current_round_metrics"]["dp_auc"]
```
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Mapping

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from dpauc_tf.federated import computations
from dpauc_tf.keras.metric import DPAUC
from dpauc_tf.mechanisms.arguments import ReleaseArguments
from dpauc_tf.mechanisms.base import CountMechanism, Release
from dpauc_tf.mechanisms.rank_sum import RankSum, twice_sensitivity
from dpauc_tf.mechanisms.registry import require
from dpauc_tf.mechanisms.secure_rank_sum import REPORT_KEYS, TFF_MAX_BITWIDTH, SecureRankSum

# Round two's reports (2 S_k up to W^2 / 4 plus noise) are summed modulo 2^62, TFF's widest
# secure sum: exact for up to 2^30 examples per round (float64 holds 2 S exactly up to about
# 1.9e8 examples).
RANK_SUM_BITWIDTH = TFF_MAX_BITWIDTH


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
        hint = ""
        if mechanism.capabilities.releases == "auc":  # e.g. auc-only (a delta given)
            hint = (
                f" ({mechanism.name!r} releases one data holder's AUC: pass "
                "DPAUC(mechanism='rank-sum') (DPAUC's ROC default without a delta: the rank "
                "sum over clients in two secure sums, build_dpauc_metrics_aggregation_process("
                "model_fn, num_clients=K)), or 'histogram' / 'secure-histogram' for a curve)"
            )
        raise ValueError(f"DPAUC metric {name!r}: {error}{hint}") from None


class ClientNoiseSumFactory(tff.aggregators.UnweightedAggregationFactory):
    """Adds DPAUC noise to the named metrics on each client, then ``tff.federated_sum``.

    The inner summation of a ``tff.learning.metrics.SumThenFinalizeFactory``, for **local**
    mechanisms whose release is a per-bucket histogram (``histogram``,
    ``histogram-public-scores``). [`build_dpauc_metrics_aggregation_process`][] covers
    these and the secure mechanisms, and is what ``build_fed_eval`` should get.

    Args:
      mechanisms: metric name -> the metric's `CountMechanism`.
        Each named metric's unfinalized value must be ``[positives, negatives]``.

    The process's measurements are ``{num_reporting}``: how many clients' reports were summed.
    """

    def __init__(self, mechanisms: Mapping[str, CountMechanism]):
        for name, mechanism in mechanisms.items():
            _check_mechanism(name, mechanism)
            if mechanism.capabilities.secure:
                raise ValueError(
                    f"DPAUC metric {name!r}: {mechanism.name!r} releases noise shares that need "
                    "a secure sum; use build_dpauc_metrics_aggregation_process"
                )
        self._mechanisms = dict(mechanisms)

    def create(self, value_type) -> tff.templates.AggregationProcess:
        add_client_noise = _build_client_releases(self._mechanisms, value_type, None)
        one = _build_one(value_type)

        @tff.federated_computation
        def init_fn():
            return tff.federated_value((), tff.SERVER)

        @tff.federated_computation(
            init_fn.type_signature.result, tff.FederatedType(value_type, tff.CLIENTS)
        )
        def next_fn(state, value):
            total = tff.federated_sum(tff.federated_map(add_client_noise, value))
            reporting = tff.federated_sum(tff.federated_map(one, value))
            return tff.templates.MeasuredProcessOutput(
                state=state,
                result=total,
                measurements=tff.federated_zip(collections.OrderedDict(num_reporting=reporting)),
            )

        return tff.templates.AggregationProcess(init_fn, next_fn)


def _build_one(value_type) -> tff.Computation:
    @tff.tensorflow.computation(value_type)
    def one(value):
        del value
        return tf.constant(1, tf.int32)

    return one


def _build_client_releases(
    mechanisms: Mapping[str, CountMechanism],
    value_type,
    secure_bitwidth: int | None,
) -> tff.Computation:
    """The client step for the metrics named in ``mechanisms`` (the others pass through).

    ``secure_bitwidth=None``: local releases in place of the metrics' ``[positives,
    negatives]`` (histogram-shaped, as [`ClientNoiseSumFactory`][] needs). With a bitwidth:
    only the named (secure) metrics, each as its release's int64 residues modulo
    ``2^secure_bitwidth`` ([`dpauc_tf.federated.computations.modular_from_signed`][]).
    """

    @tff.tensorflow.computation(value_type)
    def client_releases(metrics):
        generator = tf.random.Generator.from_non_deterministic_state()
        out = collections.OrderedDict()
        for name, values in metrics.items():
            if name not in mechanisms:
                if secure_bitwidth is None:
                    out[name] = values
                continue
            positives, negatives = values[0], values[1]
            seed = generator.make_seeds(1)[:, 0]
            release = mechanisms[name].release(
                tf.cast(positives, tf.float64), tf.cast(negatives, tf.float64), seed=seed
            )
            release = collections.OrderedDict(sorted(release.items()))
            if secure_bitwidth is not None:
                out[name] = computations.modular_from_signed(release, secure_bitwidth)
            else:
                noisy_pos, noisy_neg = histogram_from_release(release)
                out[name] = [
                    tf.cast(noisy_pos, positives.dtype),
                    tf.cast(noisy_neg, negatives.dtype),
                ]
        return out

    return client_releases


def build_client_reports(
    mechanisms: Mapping[str, CountMechanism],
    value_type,
    secure_bitwidth: int = computations.DEFAULT_BITWIDTH,
) -> tuple[tff.Computation, tff.Computation | None]:
    """The two client steps of [`build_dpauc_metrics_aggregation_process`][].

    Returns ``(summed, secure)``: ``summed`` maps a client's unfinalized metrics to what
    ``tff.federated_sum`` receives (other metrics unchanged, each local DPAUC metric as its
    float release); ``secure`` (``None`` without secure mechanisms) to what
    ``tff.federated_secure_sum_bitwidth`` receives: each secure DPAUC metric's integer counts
    plus this client's integer noise share, as int64 residues modulo ``2^secure_bitwidth``.
    The rank sum's metrics are in neither ([`build_rank_sum_rounds`][]).
    """
    local = {name: m for name, m in mechanisms.items() if not m.capabilities.secure}
    secure = {
        name: m for name, m in mechanisms.items() if m.capabilities.secure and not _two_rounds(m)
    }
    two_rounds = {name for name, m in mechanisms.items() if _two_rounds(m)}

    @tff.tensorflow.computation(value_type)
    def summed(metrics):
        generator = tf.random.Generator.from_non_deterministic_state()
        out = collections.OrderedDict()
        for name, values in metrics.items():
            if name in secure or name in two_rounds:  # never summed in the clear
                continue
            if name not in local:
                out[name] = values
                continue
            seed = generator.make_seeds(1)[:, 0]
            release = local[name].release(
                tf.cast(values[0], tf.float64), tf.cast(values[1], tf.float64), seed=seed
            )
            out[name] = collections.OrderedDict(sorted(release.items()))
        return out

    secure_step = _build_client_releases(secure, value_type, secure_bitwidth) if secure else None
    return summed, secure_step


def _fewest_shares(mechanism: SecureRankSum) -> int:
    """The fewest reports whose shares achieve a finite epsilon (`achieved_epsilon` falls
    as more arrive): below it the server releases nothing (NaN), as ``finish`` refuses."""
    low, high = 1, mechanism.num_clients
    while low < high:
        middle = (low + high) // 2
        if np.isfinite(mechanism.achieved_epsilon(middle)):
            high = middle
        else:
            low = middle + 1
    return low


def build_rank_sum_rounds(
    mechanisms: Mapping[str, SecureRankSum],
    value_type,
    totals_bitwidth: int = computations.DEFAULT_BITWIDTH,
) -> tuple[tff.Computation, tff.Computation, tff.Computation, tff.Computation]:
    """The steps of the rank sum's two rounds inside one metrics aggregation (issue 32).

    Returns ``(round_one, signed_totals, round_two, release)``:

    * ``round_one`` (client): each named metric's bucket totals ``pos + neg``
      ([`SecureRankSum.round_one_report`][dpauc_tf.mechanisms.secure_rank_sum.SecureRankSum.round_one_report],
      label-free, no noise) as int64 residues modulo ``2^totals_bitwidth``, for
      ``tff.federated_secure_sum_bitwidth``: the server learns the aggregate score histogram;
    * ``signed_totals`` (server): the secure sum as signed totals, which the server
      broadcasts;
    * ``round_two`` (client): [`SecureRankSum.round_two_report`][dpauc_tf.mechanisms.secure_rank_sum.SecureRankSum.round_two_report]
      with the global ranks and this client's noise shares (fresh OS entropy per client), as
      residues modulo ``2^62`` for the second secure sum;
    * ``release`` (server): ``(totals, summed reports, num_reporting)`` -> the release the
      mechanism's ``estimate_auc`` reads (``rank_sum``, ``num_pos``, ``total``,
      ``sensitivity``), with NaN in ``rank_sum`` and ``num_pos`` where round two's examples
      are not round one's (a client lost between the rounds) or where half the shares or
      fewer arrived (no epsilon holds): as ``SecureRankSum.finish`` refuses, nothing is
      estimated.
    """
    fewest = {name: _fewest_shares(m) for name, m in mechanisms.items()}

    @tff.tensorflow.computation(value_type)
    def round_one(metrics):
        return collections.OrderedDict(
            (
                name,
                tf.math.floormod(
                    tf.cast(m.round_one_report(metrics[name][0], metrics[name][1]), tf.int64),
                    tf.constant(2**totals_bitwidth, tf.int64),
                ),
            )
            for name, m in mechanisms.items()
        )

    @tff.tensorflow.computation(round_one.type_signature.result)
    def signed_totals(total):
        signed = computations.signed_from_modular(total, totals_bitwidth)
        return collections.OrderedDict((k, tf.cast(v, tf.int64)) for k, v in signed.items())

    totals_type = signed_totals.type_signature.result

    @tff.tensorflow.computation(value_type, totals_type)
    def round_two(metrics, totals):
        generator = tf.random.Generator.from_non_deterministic_state()
        out = collections.OrderedDict()
        for name, m in mechanisms.items():
            seed = generator.make_seeds(1)[:, 0]
            report = m.round_two_report(metrics[name][0], metrics[name][1], totals[name], seed)
            out[name] = collections.OrderedDict(
                (key, tf.math.floormod(tf.cast(report[key], tf.int64), 2**RANK_SUM_BITWIDTH))
                for key in REPORT_KEYS
            )
        return out

    @tff.tensorflow.computation(
        totals_type, round_two.type_signature.result, tff.TensorType(np.int32)
    )
    def release(totals, reports, num_reporting):
        nan = tf.constant(np.nan, tf.float64)
        out = collections.OrderedDict()
        for name in mechanisms:
            summed = computations.signed_from_modular(reports[name], RANK_SUM_BITWIDTH)
            total = tf.cast(tf.reduce_sum(totals[name]), tf.float64)
            same_population = tf.equal(summed["num_examples"], total)
            valid = same_population & (num_reporting >= fewest[name])
            out[name] = collections.OrderedDict(
                num_pos=tf.where(valid, summed["num_pos"], nan),
                rank_sum=tf.where(valid, summed["twice_rank_sum"] / 2.0, nan),
                sensitivity=tf.cast(twice_sensitivity(totals[name]), tf.float64) / 2.0,
                total=total,
            )
        return out

    return round_one, signed_totals, round_two, release


def _two_rounds(mechanism: CountMechanism) -> bool:
    """Whether the metric's release over clients is the rank sum's two rounds."""
    return isinstance(mechanism, SecureRankSum)


def _process_mechanism(metric: DPAUC, num_clients: int | None) -> CountMechanism:
    """The metric's mechanism; a secure one with its shares sized for ``num_clients``; the
    central ``rank-sum`` (DPAUC's ROC default) as its form over clients, ``secure-rank-sum``
    with the same epsilon, ``count_share`` and ``resolution`` (the same counts)."""
    mechanism = metric.mechanism
    if type(mechanism) is RankSum:  # unit weights: a max_weight bound wraps it and is refused
        if num_clients is None:
            raise ValueError(
                f"DPAUC metric {metric.name!r} uses {mechanism.name!r}, which runs over clients "
                f"as {SecureRankSum.name!r} (two secure sums, one noise share per client): "
                "pass num_clients= (the clients expected to report in each round) to "
                "build_dpauc_metrics_aggregation_process"
            )
        if isinstance(num_clients, bool) or not isinstance(num_clients, (int, np.integer)):
            raise TypeError(f"num_clients must be an int, got {num_clients!r}")
        arguments = ReleaseArguments(
            mechanism.epsilon, SecureRankSum.name, mechanism_options=mechanism.options()
        )
        return arguments.build(int(num_clients))
    _check_mechanism(metric.name, mechanism)
    if not mechanism.capabilities.secure:
        return mechanism
    if num_clients is None:
        configured = (metric.get_config().get("mechanism_options") or {}).get("num_clients")
        if configured is None:
            raise ValueError(
                f"DPAUC metric {metric.name!r} uses the secure mechanism {mechanism.name!r}, "
                "whose noise is split into one share per client: pass num_clients= (the "
                "number of clients expected to report in each round) to "
                "build_dpauc_metrics_aggregation_process"
            )
        return mechanism
    if isinstance(num_clients, bool) or not isinstance(num_clients, (int, np.integer)):
        raise TypeError(f"num_clients must be an int, got {num_clients!r}")
    options = {**mechanism.options(), "num_clients": int(num_clients)}
    return type(mechanism)(
        epsilon=mechanism.epsilon,
        num_thresholds=mechanism.num_thresholds,
        delta=mechanism.delta or None,
        **options,
    )


def _tensor_type(tensor) -> tff.TensorType:
    return tff.TensorType(tensor.dtype.as_numpy_dtype, tensor.shape.as_list())


def build_dpauc_metrics_aggregation_process(
    model_fn: Callable[[], tff.learning.models.VariableModel],
    *,
    num_clients: int | None = None,
    secure_bitwidth: int = computations.DEFAULT_BITWIDTH,
    report_noisy_counts: bool = False,
) -> tff.templates.AggregationProcess:
    """A ``metrics_aggregation_process`` for ``build_fed_eval`` with client-side DPAUC noise.

    Args:
      model_fn: the same no-arg function given to ``build_fed_eval``; its model must expose
        its Keras metrics (``get_metrics()``, as ``tff.learning.models.from_keras_model``
        models do). Every `dpauc_tf.DPAUC` among them gets client-side noise.
      num_clients: secure mechanisms only: the number of clients expected to report in each
        round; the noise is split into that many shares (default: the metric's own
        ``mechanism_options={"num_clients": K}``; required if it has none).
      secure_bitwidth: bitwidth of ``tff.federated_secure_sum_bitwidth`` (totals must fit in
        ``[-2^(b-1), 2^(b-1))``).
      report_noisy_counts: finalize DPAUC as ``{auc, <the summed release>, num_reporting}``
        (``positives``/``negatives`` for histogram releases, the release's own keys for
        trees) instead of the AUC alone (for audits, tests and the achieved epsilon).

    Secure mechanisms need TFF's test execution context in simulation; it is installed here
    (`dpauc_tf.federated.install_secure_sum_context`: an **ordinary** sum, no
    cryptography).

    Raises:
      ValueError: no DPAUC metric in the model, a DPAUC mechanism without the ``fed_eval``
        capability, or a secure mechanism without ``num_clients``.
    """
    computations.check_bitwidth(secure_bitwidth)
    with tf.Graph().as_default():
        model = model_fn()
        if not hasattr(model, "get_metrics"):
            raise TypeError("the model must expose its Keras metrics via get_metrics()")
        unfinalized = model.report_local_unfinalized_metrics()
        finalizers = collections.OrderedDict(model.metric_finalizers())
        metrics = {m.name: m for m in model.get_metrics() if isinstance(m, DPAUC)}
        value_type = tff.StructWithPythonType(
            [
                (
                    name,
                    tff.StructWithPythonType([(None, _tensor_type(t)) for t in values], list),
                )
                for name, values in unfinalized.items()
            ],
            collections.OrderedDict,
        )
    if not metrics:
        raise ValueError("the model has no DPAUC metric; build_fed_eval's default is enough")
    mechanisms = {name: _process_mechanism(m, num_clients) for name, m in metrics.items()}
    summed_step, secure_step = build_client_reports(mechanisms, value_type, secure_bitwidth)
    two_rounds = {name: m for name, m in mechanisms.items() if _two_rounds(m)}
    if secure_step is not None or two_rounds:
        from dpauc_tf.federated.evaluate import install_secure_sum_context

        install_secure_sum_context()
    if two_rounds:
        round_one, signed_totals, round_two, rank_release = build_rank_sum_rounds(
            two_rounds, value_type, secure_bitwidth
        )
        rank_type = rank_release.type_signature.result
    else:
        rank_type = tff.StructWithPythonType([], collections.OrderedDict)
    if secure_step is not None:

        @tff.tensorflow.computation(secure_step.type_signature.result)
        def signed(total):
            return collections.OrderedDict(
                (name, computations.signed_from_modular(release, secure_bitwidth))
                for name, release in total.items()
            )

        secure_type = signed.type_signature.result
    else:
        secure_type = tff.StructWithPythonType([], collections.OrderedDict)
    summed_type = summed_step.type_signature.result
    names = list(unfinalized)

    @tff.tensorflow.computation(summed_type, secure_type, rank_type, tff.TensorType(np.int32))
    def merge(summed, secure, rank, num_reporting):
        merged = collections.OrderedDict()
        for name in names:
            if name in two_rounds:
                merged[name] = rank[name]
            elif name in mechanisms and name in secure:
                merged[name] = secure[name]
            else:
                merged[name] = summed[name]
        return merged, num_reporting

    state_type = merge.type_signature.result

    @tff.tensorflow.computation
    def zeros():
        return tff.types.structure_from_tensor_type_tree(
            lambda t: tf.zeros(t.shape, t.dtype), state_type
        )

    @tff.tensorflow.computation(state_type, state_type)
    def add(total, current):
        return tf.nest.map_structure(tf.add, total, current)

    def build_finalize(over_rounds: bool) -> tff.Computation:
        @tff.tensorflow.computation(state_type)
        def finalize(state):
            merged, num_reporting = state
            out = collections.OrderedDict()
            for name in names:
                if name not in mechanisms:
                    out[name] = finalizers[name](list(merged[name]))
                    continue
                release = dict(merged[name])
                if over_rounds and name in two_rounds:
                    # rank sums of rounds ranked apart do not add: no value over rounds
                    release = {
                        key: tf.fill(tf.shape(v), tf.constant(np.nan, v.dtype))
                        for key, v in release.items()
                    }
                value = metrics[name].value_from_release(release, mechanisms[name].aggregate())
                if report_noisy_counts:
                    out[name] = _noisy_counts_report(value, release, num_reporting)
                else:
                    out[name] = value
            return out

        return finalize

    finalize_round, finalize_rounds = build_finalize(False), build_finalize(True)

    one = _build_one(value_type)

    @tff.federated_computation
    def init_fn():
        return tff.federated_eval(zeros, tff.SERVER)

    @tff.federated_computation(
        init_fn.type_signature.result, tff.FederatedType(value_type, tff.CLIENTS)
    )
    def next_fn(state, value):
        summed = tff.federated_sum(tff.federated_map(summed_step, value))
        if secure_step is not None:
            residues = tff.federated_map(secure_step, value)
            total = tff.federated_secure_sum_bitwidth(residues, secure_bitwidth)
            secure = tff.federated_map(signed, total)
        else:
            secure = tff.federated_value(collections.OrderedDict(), tff.SERVER)
        reporting = tff.federated_sum(tff.federated_map(one, value))
        if two_rounds:  # two secure sums in this one aggregation: totals, then rank sums
            totals = tff.federated_secure_sum_bitwidth(
                tff.federated_map(round_one, value), secure_bitwidth
            )
            totals = tff.federated_map(signed_totals, totals)
            reports = tff.federated_map(round_two, (value, tff.federated_broadcast(totals)))
            reports = tff.federated_secure_sum_bitwidth(reports, RANK_SUM_BITWIDTH)
            rank = tff.federated_map(rank_release, (totals, reports, reporting))
        else:
            rank = tff.federated_value(collections.OrderedDict(), tff.SERVER)
        current = tff.federated_map(merge, (summed, secure, rank, reporting))
        accumulated = tff.federated_map(add, (state, current))
        result = tff.federated_zip(
            (
                tff.federated_map(finalize_round, current),
                tff.federated_map(finalize_rounds, accumulated),
            )
        )
        measurements = tff.federated_zip(collections.OrderedDict(num_reporting=reporting))
        return tff.templates.MeasuredProcessOutput(accumulated, result, measurements)

    return tff.templates.AggregationProcess(init_fn, next_fn)


def _noisy_counts_report(value, release: Release, num_reporting) -> collections.OrderedDict:
    report = collections.OrderedDict(auc=value)
    try:
        report["positives"], report["negatives"] = histogram_from_release(release)
    except ValueError:
        report.update(sorted(release.items()))
    report["num_reporting"] = num_reporting
    return report
