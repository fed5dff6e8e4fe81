"""The client side on Flower: a client's scores and labels (or a Keras model and its data)
-> the mechanism's report, and the Flower ``ClientApp`` that sends it.

A report is exactly [`release`][dpauc_tf.mechanisms.base.CountMechanism.release] of the client's
bucket counts ([`dpauc_tf.core.counts.bucket_counts`][]): a noisy histogram (or noisy
cumulative counts, for ``paper``) for the local-DP mechanisms, integer counts plus one
noise share for the secure ones (whose reports only make sense summed by SecAgg+). No
mechanism math lives here.

Randomness is the client's own: its seed is held by the client (``None``: drawn from the
operating system), never sent by the server; a server that chose the clients' seeds could
subtract their noise.

    >>> from dpauc_tf import get_mechanism
    >>> from dpauc_tf.core.thresholds import Thresholds
    >>> m = get_mechanism("none", epsilon=None, num_thresholds=3)
    >>> report = client_report(m, Thresholds.make(3), [0, 1, 1], [0.2, 0.7, 0.9])
    >>> report["pos"].tolist(), report["neg"].tolist()
    ([0.0, 0.0, 2.0, 0.0], [0.0, 1.0, 0.0, 0.0])
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from dpauc_tf.flower.encoding import LimbLayout

# The FitIns config key that carries SecAgg+'s limb width (set by the server).
LIMB_BITS_KEY = "dpauc-limb-bits"
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


def flatten_report(report: dict[str, np.ndarray]) -> np.ndarray:
    """The report's arrays (sorted keys) as one float64 vector."""
    return np.concatenate([np.asarray(report[key], np.float64).ravel() for key in sorted(report)])


def unflatten_report(vector: np.ndarray, like: dict[str, Any]) -> dict[str, np.ndarray]:
    """Inverse of [`flatten_report`][], shapes taken from ``like`` (key -> shape)."""
    out, start = {}, 0
    for key in sorted(like):
        shape = tuple(like[key])
        size = int(np.prod(shape, dtype=np.int64))
        out[key] = np.asarray(vector[start : start + size], np.float64).reshape(shape)
        start += size
    if start != vector.size:
        raise ValueError(f"report has {vector.size} values, expected {start}")
    return out


@dataclasses.dataclass(frozen=True)
class ClientSetup:
    """What every simulated client holds (pickled to Flower's workers): the mechanism's
    registry name and options, the threshold grid, and per-client data and seeds."""

    mechanism: str
    mechanism_options: dict
    num_thresholds: int
    threshold_grid: Any
    client_data: Sequence
    seeds: Sequence | None
    repeats: int | None
    vanishing_clients: frozenset = frozenset()

    def build_mechanism(self):
        from dpauc_tf.mechanisms.registry import get_mechanism

        return get_mechanism(self.mechanism, **self.mechanism_options)

    def report(self, index: int) -> dict[str, np.ndarray]:
        from dpauc_tf.core.thresholds import Thresholds

        mechanism = self.build_mechanism()
        thresholds = Thresholds.make(self.num_thresholds, self.threshold_grid)
        scores, labels = self.client_data[index]
        seed = None if self.seeds is None else np.asarray(self.seeds[index], np.int64)
        return client_report(mechanism, thresholds, labels, scores, seed=seed, repeats=self.repeats)


def make_client_app(setup: ClientSetup, *, secure: bool):
    """Flower ``ClientApp`` whose client ``k`` (``partition-id``) reports ``setup.report(k)``.

    With ``secure`` the report is cut into exact limbs ([`dpauc_tf.flower.encoding`][]) and
    sent through ``secaggplus_mod``; clients in ``setup.vanishing_clients`` take part in
    SecAgg+'s key sharing, then vanish before sending their masked vector (a dropout).
    """
    from flwr.client import ClientApp, NumPyClient
    from flwr.client.mod import secaggplus_mod

    class ReportingClient(NumPyClient):
        def __init__(self, index: int):
            self.index = index

        def fit(self, parameters, config):
            del parameters
            vector = flatten_report(setup.report(self.index))
            if secure:
                layout = LimbLayout.for_bits(int(config[LIMB_BITS_KEY]))
                arrays = layout.encode(vector)
            else:
                arrays = [vector]
            # SecAgg+ weighs each report by num_examples / max_weight: 1 / 1, no rescaling.
            return arrays, 1, {}

    def client_fn(context):
        return ReportingClient(int(context.node_config["partition-id"])).to_client()

    mods = [_vanish_mod(setup.vanishing_clients), secaggplus_mod] if secure else []
    return ClientApp(client_fn=client_fn, mods=[_identify_mod, *mods])


def _identify_mod(msg, ctxt, call_next):
    """A client mod: every reply names the client's ``partition-id`` (public: which client
    answered, never what it holds), so the server can say which clients did not answer."""
    from flwr.app import ConfigRecord

    reply = call_next(msg, ctxt)
    if reply.has_content():
        reply.content.config_records[CLIENT_RECORD_KEY] = ConfigRecord(
            {"partition-id": int(ctxt.node_config["partition-id"])}
        )
    return reply


def _vanish_mod(vanishing: frozenset) -> Callable:
    """A client mod: the listed clients fail once SecAgg+ asks for their masked vectors."""

    def vanish_after_share_keys(msg, ctxt, call_next):
        from flwr.common.secure_aggregation.secaggplus_constants import (
            RECORD_KEY_CONFIGS,
            Key,
            Stage,
        )

        index = int(ctxt.node_config["partition-id"])
        configs = msg.content.config_records.get(RECORD_KEY_CONFIGS)
        stage = None if configs is None else configs.get(Key.STAGE)
        if index in vanishing and stage == Stage.COLLECT_MASKED_VECTORS:
            raise ConnectionError(f"client {index} vanished after SecAgg+ key sharing")
        return call_next(msg, ctxt)

    return vanish_after_share_keys
