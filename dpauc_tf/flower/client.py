"""The client side on Flower: what a ``ClientApp``'s ``@app.evaluate()`` returns.

A Flower user's client holds its own model and data. To answer a private-AUC evaluation
it calls [`evaluate_reply`][] with its own labels and scores (or
`model_evaluate_reply` with its Keras model and local data); the settings of the
release come from the server's message (`dpauc_tf.flower.records`), never a pickled
blob of other clients' data. The reply holds the mechanism's report
([`release`][dpauc_tf.mechanisms.base.CountMechanism.release] of the client's bucket counts):
a noisy histogram for the local-DP mechanisms; integer counts plus one noise share for
the secure ones, which [`secagg_evaluate_mod`][] masks with Flower's SecAgg+ before the
reply leaves the client::

    from flwr.app import Context, Message
    from flwr.clientapp import ClientApp
    from dpauc_tf.flower import evaluate_reply, secagg_evaluate_mod

    app = ClientApp()

    @app.evaluate(mods=[secagg_evaluate_mod])
    def evaluate(msg: Message, context: Context) -> Message:
        labels, scores = my_local_labels_and_scores(context)
        return evaluate_reply(msg, labels, scores)

Randomness is the client's own: ``seed=None`` draws from the operating system. A server
that chose the clients' seeds could subtract their noise, so the server never sends one;
`client_seed` derives a reproducible seed for experiments from a seed the client
holds.

Examples:
    >>> from dpauc_tf import get_mechanism
    >>> from dpauc_tf.core.thresholds import Thresholds
    >>> m = get_mechanism("none", epsilon=None, num_thresholds=3)
    >>> report = client_report(m, Thresholds.make(3), [0, 1, 1], [0.2, 0.7, 0.9])
    >>> report["pos"].tolist(), report["neg"].tolist()
    ([0.0, 0.0, 2.0, 0.0], [0.0, 1.0, 0.0, 0.0])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from dpauc_tf.flower.rank_sum import exchange_layout, rank_sum_report, two_exchanges
from dpauc_tf.flower.records import (
    ARRAYS_RECORD,
    CONFIG_RECORD,
    REPORT_KEY,
    flatten_report,
    release_from_config,
    report_arrays,
    report_record,
)

if TYPE_CHECKING:  # pragma: no cover - names for the type hints only
    from flwr.app import Context, Message

# The reply record that names the client (its partition-id, public): the server names the
# clients that did not answer by elimination (dpauc_tf.flower.server.RoundLog).
CLIENT_RECORD_KEY = "dpauc-client"


def client_report(
    mechanism,
    thresholds,
    labels,
    scores,
    *,
    seed=None,
    repeats: int | None = None,
) -> dict[str, np.ndarray]:
    """One client's report: its bucket counts released by ``mechanism`` (NumPy, sorted keys).

    ``repeats=R`` gives ``R`` independent reports of the same counts (a leading ``R`` axis).
    Integer-noise (secure) mechanisms count with integer weights only.
    """
    import tensorflow as tf

    from dpauc_tf.core.counts import bucket_counts

    labels = np.asarray(labels, np.float64).ravel()
    scores = np.asarray(scores, np.float64).ravel()
    pos, neg = bucket_counts(
        labels,
        scores,
        mechanism.count_thresholds(thresholds),
        dtype=tf.float64,
        integer_weights=mechanism.capabilities.integer_counts,
    )
    release = mechanism.release(pos, neg, seed=seed, repeats=repeats)
    return {key: np.asarray(release[key].numpy(), np.float64) for key in sorted(release)}


def multiclass_client_report(
    mechanism,
    thresholds,
    labels,
    scores,
    *,
    seed=None,
    repeats: int | None = None,
) -> dict[str, np.ndarray]:
    """One client's one-vs-rest report: its ``[C, T + 1]`` class counts
    ([`one_vs_rest_counts`][dpauc_tf.mechanisms.multiclass.one_vs_rest_counts]) released by
    ``mechanism`` (a [`OneVsRest`][dpauc_tf.mechanisms.multiclass.OneVsRest]), as NumPy.

    ``labels``: class ids ``[n]`` or one-hot ``[n, C]``; ``scores``: ``[n, C]`` in [0, 1].
    An empty client (``n = 0``) reports zeros plus its noise.
    """
    from dpauc_tf.mechanisms.multiclass import one_vs_rest_counts

    scores = np.asarray(scores, np.float64)
    if scores.size == 0:
        scores = scores.reshape(0, mechanism.num_classes)
        labels = np.zeros(0)
    pos, neg = one_vs_rest_counts(
        labels,
        scores,
        thresholds,
        mechanism.num_classes,
        integer_weights=bool(mechanism.capabilities.integer_counts),
    )
    release = mechanism.release(pos, neg, seed=seed, repeats=repeats)
    return {key: np.asarray(release[key].numpy(), np.float64) for key in sorted(release)}


def model_client_report(
    mechanism,
    thresholds,
    model,
    features,
    labels,
    *,
    seed=None,
    repeats: int | None = None,
    batch_size: int = 1024,
) -> dict[str, np.ndarray]:
    """[`client_report`][] of a Keras model's scores on the client's own data.

    The model must output probabilities in [0, 1] (one per example, e.g. a sigmoid unit).
    """
    scores = np.asarray(model.predict(features, batch_size=batch_size, verbose=0)).reshape(-1)
    return client_report(mechanism, thresholds, labels, scores, seed=seed, repeats=repeats)


def client_seed(seed: int | None, client: Any, server_round: int = 1):
    """A client's ``[2]`` seed for one round, derived from a seed the *client* holds
    (``None``: fresh operating-system entropy; an int: reproducible, for experiments), through
    the one derivation of the release path, as a spec's ``seed_for`` derives its own:
    ``derive_seed(seed, "flower-client", client, server_round)``
    ([`dpauc_tf.noise.seeds.derive_seed`][])."""
    from dpauc_tf.noise.seeds import derive_seed

    return derive_seed(seed, "flower-client", client, int(server_round))


def client_seeds(seed: int | None, num_clients: int, server_round: int = 1) -> list | None:
    """[`client_seed`][] of clients ``0..num_clients-1`` (``None`` when ``seed`` is)."""
    if seed is None:
        return None
    return [client_seed(seed, k, server_round).numpy().tolist() for k in range(num_clients)]


def evaluate_reply(
    message: Message,
    labels: ArrayLike,
    scores: ArrayLike,
    *,
    seed: Any = None,
) -> Message:
    """The reply to a private-AUC evaluate message, from this client's own labels and scores.

    Args:
      message: the evaluate message the server (`DPAUCStrategy`)
        sent; its ``"config"`` ConfigRecord describes the release.
      labels: this client's 0/1 labels (for a one-vs-rest release: class ids ``[n]`` or
        one-hot ``[n, C]``).
      scores: this client's scores in [0, 1] (same length; one-vs-rest: ``[n, C]``).
      seed: this client's own seed (``None``: the operating system's entropy; a ``[2]``
        seed, e.g. `client_seed`, for reproducible experiments).

    Returns:
      A ``Message`` replying to ``message`` with one ``ArrayRecord`` (the report). For the
      secure mechanisms it must pass [`secagg_evaluate_mod`][] (registered with
      ``@app.evaluate(mods=[secagg_evaluate_mod])``), which masks it.

    Raises:
      ValueError: the message carries no release, or bad labels or scores (one line).
    """
    from flwr.app import Message

    settings = release_from_config(_config_of(message))
    if two_exchanges(settings.spec):  # secure rank sums (binary or one-vs-rest): exchange 1 or 2
        config = _config_of(message)
        if not settings.multiclass:
            labels, scores = checked_examples(labels, scores)
        try:
            report = rank_sum_report(settings, config, labels, scores, seed)
        except ValueError as error:
            raise ValueError(f"this client: {error}") from None
        rows = float(np.shape(scores)[0]) if np.size(scores) else 0.0
        vector = flatten_report(report, num_examples=rows)
        return Message(report_record(vector, exchange_layout(settings, config)), reply_to=message)
    if settings.multiclass:
        try:
            report = multiclass_client_report(
                settings.mechanism(),
                settings.spec.thresholds,
                labels,
                scores,
                seed=seed,
                repeats=settings.repeats,
            )
        except ValueError as error:
            raise ValueError(f"this client: {error}") from None
        rows = float(np.shape(scores)[0]) if np.size(scores) else 0.0
        vector = flatten_report(report, num_examples=rows)
        return Message(report_record(vector, settings.layout), reply_to=message)
    labels, scores = checked_examples(labels, scores)
    report = client_report(
        settings.mechanism(),
        settings.spec.thresholds,
        labels,
        scores,
        seed=seed,
        repeats=settings.repeats,
    )
    vector = flatten_report(report, num_examples=float(labels.size))
    return Message(report_record(vector, settings.layout), reply_to=message)


def model_evaluate_reply(
    message: Message,
    model: Any,
    features: ArrayLike,
    labels: ArrayLike,
    *,
    seed: Any = None,
    batch_size: int = 1024,
) -> Message:
    """[`evaluate_reply`][] for a Keras model: loads the global weights the message
    carries (its ``"arrays"`` ArrayRecord, as ``FedAvg`` sends them) into ``model``, scores
    the client's own ``features`` and replies with the report of ``labels``.

    The model must output probabilities in [0, 1] (one per example, e.g. a sigmoid unit).
    """
    if ARRAYS_RECORD in message.content.array_records:
        arrays = message.content.array_records[ARRAYS_RECORD].to_numpy_ndarrays()
        if arrays:
            model.set_weights(arrays)
    scores = np.asarray(model.predict(features, batch_size=batch_size, verbose=0)).reshape(-1)
    return evaluate_reply(message, labels, scores, seed=seed)


def checked_examples(
    labels: ArrayLike, scores: ArrayLike, source: str = "this client"
) -> tuple[np.ndarray, np.ndarray]:
    """Labels and scores as float64 vectors, checked (0/1 labels, finite scores in [0, 1],
    equal lengths; none is fine: an empty client reports zeros); one-line ``ValueError``."""
    from dpauc_tf.io.scores import ScoreSet

    labels = np.asarray(labels, np.float64).ravel()
    scores = np.asarray(scores, np.float64).ravel()
    if labels.size != scores.size:
        raise ValueError(f"{source}: {scores.size} scores but {labels.size} labels")
    if labels.size:
        ScoreSet.checked(labels, scores, source=source)
    return labels, scores


def _config_of(message) -> dict:
    content = message.content
    if CONFIG_RECORD in content.config_records:
        return dict(content.config_records[CONFIG_RECORD])
    if "fitins.config" in content.config_records:  # as SecAgg+'s workflow forwards it
        return dict(content.config_records["fitins.config"])
    return {}


def secagg_evaluate_mod(message: Message, context: Context, call_next: Callable) -> Message:
    """A client mod: Flower's ``secaggplus_mod`` for *evaluate* messages.

    ``secaggplus_mod`` acts on training messages only. The server's SecAgg+ evaluation
    (`dpauc_tf.flower.evaluate_round`) sends its four stages (setup, key sharing,
    masked vectors, unmasking) as evaluate messages; this mod runs each through
    ``secaggplus_mod``: in the masked-vector stage the client's ``@app.evaluate()`` function
    answers with its report ([`evaluate_reply`][]), and what leaves the client is the
    masked vector only (the report's arrays are cleared). Evaluate messages without SecAgg+
    settings (the local-DP mechanisms) pass through unchanged.
    """
    from flwr.app import ArrayRecord, ConfigRecord, Message, MessageType, RecordDict
    from flwr.client.mod import secaggplus_mod
    from flwr.common import Code, FitRes, Status, ndarrays_to_parameters
    from flwr.common.secure_aggregation.secaggplus_constants import RECORD_KEY_CONFIGS
    from flwr.compat.common import recorddict_compat as compat

    kind = str(message.metadata.message_type).split(".")[0]
    if kind != MessageType.EVALUATE or RECORD_KEY_CONFIGS not in message.content.config_records:
        return call_next(message, context)

    def report_as_fit_result(inner: Message, ctxt: Context) -> Message:
        # the evaluate function sees an evaluate message with "arrays" and "config"
        content = inner.content
        forwarded = RecordDict(
            {
                ARRAYS_RECORD: content.array_records.get("fitins.parameters", ArrayRecord()),
                CONFIG_RECORD: ConfigRecord(dict(_config_of(inner))),
            }
        )
        inner.metadata.message_type = MessageType.EVALUATE
        original, inner.content = inner.content, forwarded
        try:
            reply = call_next(inner, ctxt)
        finally:
            inner.content = original
            inner.metadata.message_type = MessageType.TRAIN
        if reply.has_error():
            return reply
        limbs = report_arrays(reply.content)
        # SecAgg+ weighs each report by num_examples / max_weight: 1 / 1, no rescaling
        fit_res = FitRes(Status(Code.OK, ""), ndarrays_to_parameters(limbs), 1, {})
        return Message(compat.fitres_to_recorddict(fit_res, False), reply_to=inner)

    message.metadata.message_type = MessageType.TRAIN
    try:
        reply = secaggplus_mod(message, context, report_as_fit_result)
    finally:
        message.metadata.message_type = MessageType.EVALUATE
    reply.metadata.message_type = MessageType.EVALUATE
    return reply


def identify_mod(message: Message, context: Context, call_next: Callable) -> Message:
    """A client mod: every reply names the client's ``partition-id`` (public: which client
    answered, never what it holds), so the server can say which clients did not answer."""
    from flwr.app import ConfigRecord

    reply = call_next(message, context)
    if reply.has_content() and "partition-id" in context.node_config:
        reply.content.config_records[CLIENT_RECORD_KEY] = ConfigRecord(
            {"partition-id": int(context.node_config["partition-id"])}
        )
    return reply


def make_client_app(
    client_data,
    *,
    seed: int | None = None,
    vanishing_clients: frozenset = frozenset(),
    lost_between_exchanges: frozenset = frozenset(),
):
    """The ``ClientApp`` of [`dpauc_tf.flower.evaluate`][]: node ``k`` (``partition-id``)
    answers with [`evaluate_reply`][] of ``client_data[k]`` (its ``(scores, labels)``),
    seeded by `client_seed` of ``seed`` when one is given.

    Clients in ``vanishing_clients`` take part in SecAgg+'s key sharing, then fail before
    sending their masked vector (a dropout, for tests and audits); clients in
    ``lost_between_exchanges`` answer a ``secure-rank-sum`` round's first exchange and fail
    before sending their masked vector in the second.
    """
    from flwr.clientapp import ClientApp

    app = ClientApp()
    dropping = _vanish_mod(vanishing_clients, lost_between_exchanges)

    @app.evaluate(mods=[identify_mod, dropping, secagg_evaluate_mod])
    def evaluate(message, context):
        index = int(context.node_config["partition-id"])
        scores, labels = client_data[index]
        server_round = _server_round(message)
        local_seed = None if seed is None else client_seed(seed, index, server_round)
        return evaluate_reply(message, labels, scores, seed=local_seed)

    return app


def _server_round(message) -> int:
    try:
        return int(message.metadata.group_id or 1)
    except ValueError:
        return 1


def _vanish_mod(vanishing: frozenset, lost_between: frozenset = frozenset()) -> Callable:
    """A client mod: the ``vanishing`` clients fail once SecAgg+ asks for their masked
    vectors; the ``lost_between`` ones only in a secure-rank-sum round's second exchange."""
    from dpauc_tf.flower.rank_sum import EXCHANGE_KEY, RankSumExchange

    def vanish_after_share_keys(msg, ctxt, call_next):
        from flwr.common.secure_aggregation.secaggplus_constants import (
            RECORD_KEY_CONFIGS,
            Key,
            Stage,
        )

        index = int(ctxt.node_config["partition-id"])
        configs = msg.content.config_records.get(RECORD_KEY_CONFIGS)
        stage = None if configs is None else configs.get(Key.STAGE)
        if stage == Stage.COLLECT_MASKED_VECTORS:
            if index in vanishing:
                raise ConnectionError(f"client {index} vanished after SecAgg+ key sharing")
            exchange = _config_of(msg).get(EXCHANGE_KEY)
            if index in lost_between and exchange == RankSumExchange.RANK_SUM.value:
                raise ConnectionError(f"client {index} was lost between the two exchanges")
        return call_next(msg, ctxt)

    return vanish_after_share_keys


__all__ = [
    "REPORT_KEY",
    "client_report",
    "client_seed",
    "client_seeds",
    "evaluate_reply",
    "identify_mod",
    "make_client_app",
    "model_client_report",
    "model_evaluate_reply",
    "multiclass_client_report",
    "secagg_evaluate_mod",
]
