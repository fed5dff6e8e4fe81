"""TFF computations for federated DP-AUC over precomputed scores, built by small factories.

The federated round (one evaluation) is

``(client data {score, label} as two float32 vectors, client seeds) @CLIENTS``
  -> client: per-bucket counts ([`dpauc_tf.core.counts.bucket_counts`][]), then the mechanism's
     client-side release ([`dpauc_tf.mechanisms.base.CountMechanism.release`][]);
  -> ``tff.federated_sum`` of the releases (``tff.federated_secure_sum_bitwidth`` of integer
     releases for secure mechanisms), and of a 1 per client (the number that reported);
  -> server: cumulative counts ([`to_confusion`][dpauc_tf.mechanisms.base.CountMechanism.to_confusion]),
     ROC points and the mechanism's AUC estimate, without new noise.

Randomness comes only from each client's own seed (CLIENTS data): stateless ops, never
op-level seeds (those gave identical noise to several TFF clients).

Secure sums of signed integers use modular arithmetic: each client sends
``value mod 2^bitwidth``, the server takes the sum ``mod 2^bitwidth`` and maps it back to
``[-2^(bitwidth-1), 2^(bitwidth-1))``, exact as long as every true total lies in that range.
In simulation the secure sum needs ``tff.backends.test.set_sync_test_cpp_execution_context()``,
which performs an **ordinary sum** (no cryptography).
"""

from __future__ import annotations

import collections

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from dpauc_tf.core.counts import bucket_counts
from dpauc_tf.core.curve import Confusion, roc_from_confusion
from dpauc_tf.core.thresholds import Thresholds
from dpauc_tf.mechanisms.base import CountMechanism

COUNT_DTYPE = tf.float64
SEED_TYPE = tff.TensorType(np.int64, [2])
BATCH_TYPE = tff.StructWithPythonType(
    [("score", tff.TensorType(np.float32, [None])), ("label", tff.TensorType(np.float32, [None]))],
    collections.OrderedDict,
)
DATASET_TYPE = tff.SequenceType(BATCH_TYPE)
# One client's whole data as two vectors (of any length, 0 included): what
# `build_federated_evaluation` takes. Counting them is one ``bucket_counts``, where a
# dataset costs TFF's worker a ``tf.data`` pipeline and a ``reduce`` per client, which made
# most of an evaluation's time with many small clients (docs/federated.md, "Measured").
ARRAYS_TYPE = BATCH_TYPE
DEFAULT_BITWIDTH = 32


def client_counts(client_data, thresholds: Thresholds, integer_weights: bool = False):
    """Per-bucket ``(pos, neg)`` counts of one client's data (float64, ``[T + 1]`` each).

    ``client_data`` is ``{score, label}`` vectors (`ARRAYS_TYPE`: one
    [`bucket_counts`][]) or a ``tf.data.Dataset`` of such batches
    (`DATASET_TYPE`: summed batch by batch). The counts are the same either way:
    whole numbers, exact in float64.
    """
    if not isinstance(client_data, tf.data.Dataset):
        return bucket_counts(
            client_data["label"],
            client_data["score"],
            thresholds,
            dtype=COUNT_DTYPE,
            integer_weights=integer_weights,
        )
    dataset = client_data
    num_buckets = thresholds.num_buckets
    zeros = tf.zeros([num_buckets], COUNT_DTYPE)

    def add_batch(state, batch):
        pos, neg = state
        batch_pos, batch_neg = bucket_counts(
            batch["label"],
            batch["score"],
            thresholds,
            dtype=COUNT_DTYPE,
            integer_weights=integer_weights,
        )
        return pos + batch_pos, neg + batch_neg

    return dataset.reduce((zeros, zeros), add_batch)


def release_type(mechanism: CountMechanism, thresholds: Thresholds) -> tff.Type:
    """The TFF type of one float release (from one eager release of zero counts)."""
    zeros = tf.zeros([thresholds.num_buckets], COUNT_DTYPE)
    release = mechanism.release(zeros, zeros, seed=0)
    return tff.StructWithPythonType(
        [
            (key, tff.TensorType(value.dtype.as_numpy_dtype, value.shape.as_list()))
            for key, value in sorted(release.items())
        ],
        collections.OrderedDict,
    )


def _client_release_fn(
    mechanism: CountMechanism,
    thresholds: Thresholds,
    secure_bitwidth: int | None,
):
    """The Python body of the client step: counts, release, (modular for a secure sum)."""

    def client_release(client_data, seed):
        pos, neg = client_counts(client_data, thresholds, mechanism.capabilities.integer_counts)
        release = mechanism.release(pos, neg, seed=seed)
        release = collections.OrderedDict(sorted(release.items()))
        if secure_bitwidth is not None:
            release = modular_from_signed(release, secure_bitwidth)
        return release

    return client_release


def build_client_release(
    mechanism: CountMechanism,
    thresholds: Thresholds,
    *,
    secure_bitwidth: int | None = None,
    client_type: tff.Type = ARRAYS_TYPE,
) -> tff.Computation:
    """``(client data, seed) -> release`` run on each client (a ``tff.tensorflow.computation``).

    ``client_type``: `ARRAYS_TYPE` (the client's ``{score, label}`` vectors) or
    `DATASET_TYPE` (a dataset of such batches); the release is the same.
    With ``secure_bitwidth`` the release is rounded to int64 and reduced modulo
    ``2^secure_bitwidth`` (the input a secure sum of that bitwidth expects).
    """
    body = _client_release_fn(mechanism, thresholds, secure_bitwidth)
    return tff.tensorflow.computation(body, client_type, SEED_TYPE)


def build_server_curve(
    mechanism: CountMechanism,
    thresholds: Thresholds,
    release_type,
) -> tff.Computation:
    """``summed release -> {auc, fpr, tpr}`` at the server; no noise is added here.

    The server step of the whole-round computations ([`build_federated_evaluation`][],
    [`build_mapreduce_evaluation`][]: a TFF-native round for platforms that run the server
    in TFF). It is the mechanism's own post-processing (``to_confusion``, ``estimate_auc``),
    the methods [`finish_release`][dpauc_tf.mechanisms.release.finish_release] calls;
    [`dpauc_tf.federated.evaluate`][] uses that, not this.

    ``fpr``/``tpr`` are the (clipped) rates at each threshold, in threshold order; the AUC is
    the mechanism's [`estimate_auc`][dpauc_tf.mechanisms.base.CountMechanism.estimate_auc].
    """

    @tff.tensorflow.computation(release_type)
    def server_curve(release):
        confusion = mechanism.to_confusion(dict(release))
        auc = mechanism.estimate_auc(dict(release))
        # Rates per threshold, unsorted: every threshold as its own one-point curve.
        per_threshold = roc_from_confusion(Confusion(*(c[:, tf.newaxis] for c in confusion)))
        return collections.OrderedDict(
            auc=tf.cast(auc, tf.float64),
            fpr=tf.cast(per_threshold.fpr[:, 0], tf.float64),
            tpr=tf.cast(per_threshold.tpr[:, 0], tf.float64),
        )

    return server_curve


def modular_from_signed(release, bitwidth: int) -> collections.OrderedDict:
    """One client's integer release (float counts + integer noise) as the int64 residues
    ``value mod 2^bitwidth`` that ``tff.federated_secure_sum_bitwidth`` sums."""
    modulus = tf.constant(2**bitwidth, tf.int64)
    return collections.OrderedDict(
        (key, tf.math.floormod(tf.cast(tf.round(value), tf.int64), modulus))
        for key, value in release.items()
    )


def signed_from_modular(total, bitwidth: int) -> collections.OrderedDict:
    """Maps a modular int64 sum to ``[-2^(bitwidth-1), 2^(bitwidth-1))`` as float64 counts."""
    modulus = tf.constant(2**bitwidth, tf.int64)
    half = tf.constant(2 ** (bitwidth - 1), tf.int64)
    out = collections.OrderedDict()
    for key, value in total.items():
        value = tf.math.floormod(value, modulus)
        out[key] = tf.cast(tf.where(value >= half, value - modulus, value), COUNT_DTYPE)
    return out


def build_signed_from_modular(release_type_int, bitwidth: int) -> tff.Computation:
    """Server-side map of a modular secure sum back to signed float64 counts."""

    @tff.tensorflow.computation(release_type_int)
    def signed(total):
        return signed_from_modular(total, bitwidth)

    return signed


def check_bitwidth(secure_bitwidth: int | None) -> None:
    if secure_bitwidth is not None and not 2 <= secure_bitwidth <= 62:
        raise ValueError(f"secure_bitwidth must be in [2, 62], got {secure_bitwidth}")


@tff.tensorflow.computation(SEED_TYPE)
def _one_per_client(seed):
    del seed
    return tf.constant(1, tf.int32)


def _clients_to_server_sum(
    mechanism: CountMechanism, thresholds: Thresholds, secure_bitwidth: int | None
):
    """The federated part of the round, as a Python function for a federated computation's
    body: ``(client data, seeds)@CLIENTS -> (summed float64 release, num_reporting)@SERVER``."""
    check_bitwidth(secure_bitwidth)
    client_release = build_client_release(mechanism, thresholds, secure_bitwidth=secure_bitwidth)
    signed = (
        build_signed_from_modular(client_release.type_signature.result, secure_bitwidth)
        if secure_bitwidth is not None
        else None
    )

    def clients_to_server(client_data, seeds):
        releases = tff.federated_map(client_release, (client_data, seeds))
        if signed is None:
            total = tff.federated_sum(releases)
        else:
            modular = tff.federated_secure_sum_bitwidth(releases, secure_bitwidth)
            total = tff.federated_map(signed, modular)
        reporting = tff.federated_sum(tff.federated_map(_one_per_client, seeds))
        return total, reporting

    return clients_to_server


def build_summed_release(
    mechanism: CountMechanism,
    thresholds: Thresholds,
    *,
    secure_bitwidth: int | None = None,
) -> tff.Computation:
    """The round without the server's curve: every client's release, summed.

    Type: ``(<score=float32[?], label=float32[?]>@CLIENTS, int64[2]@CLIENTS) ->
    <release, num_reporting>@SERVER``. [`dpauc_tf.federated.evaluate`][] runs it once per
    cohort of clients and post-processes the sum of the cohorts' sums once, with the
    release protocol's [`finish_release`][dpauc_tf.mechanisms.release.finish_release] (as every
    backend does).
    """
    clients_to_server = _clients_to_server_sum(mechanism, thresholds, secure_bitwidth)

    @tff.federated_computation(
        tff.FederatedType(ARRAYS_TYPE, tff.CLIENTS), tff.FederatedType(SEED_TYPE, tff.CLIENTS)
    )
    def summed_release(client_data, seeds):
        total, reporting = clients_to_server(client_data, seeds)
        return tff.federated_zip(collections.OrderedDict(release=total, num_reporting=reporting))

    return summed_release


def build_federated_evaluation(
    mechanism: CountMechanism,
    thresholds: Thresholds,
    *,
    secure_bitwidth: int | None = None,
) -> tff.Computation:
    """The whole round as a ``tff.federated_computation``.

    Type: ``(<score=float32[?], label=float32[?]>@CLIENTS, int64[2]@CLIENTS) ->
    <curve=<auc, fpr, tpr>, release, num_reporting>@SERVER``: each client's data is its whole
    score and label vectors (`ARRAYS_TYPE`); ``release`` is the server's summed (noisy)
    release and ``num_reporting`` the number of clients whose reports entered the sum.
    With ``secure_bitwidth`` the integer releases are summed by
    ``tff.federated_secure_sum_bitwidth`` (needs the test execution context in simulation).
    This is [`build_summed_release`][] followed by [`build_server_curve`][] in one
    computation.
    """
    clients_to_server = _clients_to_server_sum(mechanism, thresholds, secure_bitwidth)
    server_curve = build_server_curve(mechanism, thresholds, release_type(mechanism, thresholds))

    @tff.federated_computation(
        tff.FederatedType(ARRAYS_TYPE, tff.CLIENTS), tff.FederatedType(SEED_TYPE, tff.CLIENTS)
    )
    def evaluate_round(client_data, seeds):
        total, reporting = clients_to_server(client_data, seeds)
        curve = tff.federated_map(server_curve, total)
        return tff.federated_zip(
            collections.OrderedDict(curve=curve, release=total, num_reporting=reporting)
        )

    return evaluate_round


def build_mapreduce_evaluation(
    mechanism: CountMechanism,
    thresholds: Thresholds,
    *,
    secure_bitwidth: int | None = None,
) -> tff.Computation:
    """The round in the ``(state@SERVER, data@CLIENTS) -> <state, output>@SERVER`` shape.

    This is the shape ``tff.backends.mapreduce.get_map_reduce_form_for_computation`` compiles
    for cross-device platforms: the server state counts evaluations, each client's data is
    ``<data={score, label}*, seed=int64[2]>``, the output is the server's curve and the
    number of reports.
    """
    check_bitwidth(secure_bitwidth)
    client_data_type = tff.StructWithPythonType(
        [("data", DATASET_TYPE), ("seed", SEED_TYPE)], collections.OrderedDict
    )
    body = _client_release_fn(mechanism, thresholds, secure_bitwidth)

    @tff.tensorflow.computation(client_data_type)
    def client_release(client_data):
        release = body(client_data["data"], client_data["seed"])
        release["num_reporting"] = tf.constant(1, tf.int64 if secure_bitwidth else COUNT_DTYPE)
        return release

    report_type = client_release.type_signature.result
    float_type = release_type(mechanism, thresholds)
    server_curve = build_server_curve(mechanism, thresholds, float_type)

    @tff.tensorflow.computation(report_type)
    def finish(total):
        total = collections.OrderedDict(total.items())
        reporting = tf.cast(total.pop("num_reporting"), tf.int32)
        if secure_bitwidth is not None:
            total = signed_from_modular(total, secure_bitwidth)
        return reporting, total

    @tff.tensorflow.computation(tff.TensorType(np.int32))
    def increment(state):
        return state + 1

    @tff.federated_computation(
        tff.FederatedType(tff.TensorType(np.int32), tff.SERVER),
        tff.FederatedType(client_data_type, tff.CLIENTS),
    )
    def evaluation_step(state, client_data):
        releases = tff.federated_map(client_release, client_data)
        if secure_bitwidth is None:
            total = tff.federated_sum(releases)
        else:
            total = tff.federated_secure_sum_bitwidth(releases, secure_bitwidth)
        reporting, signed_total = tff.federated_map(finish, total)
        curve = tff.federated_map(server_curve, signed_total)
        output = tff.federated_zip(collections.OrderedDict(curve=curve, num_reporting=reporting))
        return tff.federated_map(increment, state), output

    return evaluation_step
