"""Federated evaluation simulated centrally: count once per client, release all repeats at once.

``R`` repeats of a DP evaluation must not mean ``R`` passes over the data. The data are
bucketed once per client (:func:`client_histograms`, one :func:`dpauc_tf.counts.bucket_counts`
pass with the client as group id); a mechanism's ``release(..., repeats=R)`` then draws the
noise of all ``R`` repeats for all ``K`` clients in one vectorised call (``[R, K, ...]``
tensors, in chunks of repeats to bound memory); the server's sum over clients, the confusion
counts, the ROC and the AUC are the library's own functions (:mod:`dpauc_tf.curve`). Every
repeat and every client gets independent noise, so the result has exactly the distribution of
``R`` separate evaluations with ``K`` separate client releases each
(``tests/experiments/test_simulation.py`` checks this against one-at-a-time releases).

Two mechanisms are simulated through an exactly equivalent aggregate:

* ``secure-histogram``: the server only ever sees the secure sum, and the module guarantees
  that the sum of ``K`` clients' shares is one draw of the total noise; the sum is simulated
  as one release of the summed counts with the full noise (``num_clients=1``).
* ``rr`` (randomized response): flipping every label independently with probability ``p``
  makes the flipped-positive count of a bucket ``Binomial(pos, 1 - p) + Binomial(neg, p)``;
  that is drawn per client and bucket instead of per example. The AUC of the flipped counts is
  debiased by :func:`dpauc_tf.randomized_response.debias_auc`.

>>> import numpy as np
>>> from dpauc_tf import Thresholds, get_mechanism
>>> rng = np.random.default_rng(0)
>>> labels, scores = rng.integers(0, 2, 1000), rng.random(1000)
>>> pos, neg = client_histograms(labels, scores, Thresholds.make(20), rng.integers(0, 4, 1000), 4)
>>> pos.shape
(4, 21)
>>> out = simulate(get_mechanism("histogram", epsilon=1.0, num_thresholds=20), pos, neg, seed=0, repeats=5)
>>> out.aucs.shape
(5,)
"""

from __future__ import annotations

import dataclasses

import numpy as np
import tensorflow as tf

from dpauc_tf import noise
from dpauc_tf.counts import bucket_counts
from dpauc_tf.curve import (
    RocCurve,
    auc_from_roc,
    confusion_from_histogram,
    roc_from_confusion,
)
from dpauc_tf.mechanisms import CountMechanism, PrivacyStatement
from dpauc_tf.thresholds import Thresholds

# Noisy values per chunk ([repeats, clients, released values]), to bound memory (~ 80 MB).
MAX_CHUNK_ELEMENTS = 10_000_000


@dataclasses.dataclass(frozen=True)
class SimulationResult:
    """``R`` repeats of one setting: AUCs ``[R]``, ROC points ``[R, T]`` and the guarantee.

    >>> r = SimulationResult(np.array([0.7, 0.8]), np.zeros((2, 3)), np.zeros((2, 3)), None)
    >>> round(r.mean, 2), round(r.std, 2)
    (0.75, 0.05)
    """

    aucs: np.ndarray
    fpr: np.ndarray
    tpr: np.ndarray
    statement: PrivacyStatement | None

    @property
    def mean(self) -> float:
        return float(np.mean(self.aucs))

    @property
    def std(self) -> float:
        return float(np.std(self.aucs))


def client_histograms(
    labels, scores, thresholds: Thresholds, client_ids=None, num_clients: int = 1
) -> tuple[np.ndarray, np.ndarray]:
    """Per-client bucket counts ``pos, neg`` of shape ``[K, T + 1]`` (float32), one pass."""
    labels = np.asarray(labels, np.float32).ravel()
    scores = np.asarray(scores, np.float32).ravel()
    if client_ids is None:
        client_ids = np.zeros(labels.size, np.int32)
    pos, neg = bucket_counts(
        labels, scores, thresholds, group_ids=client_ids, num_groups=num_clients
    )
    return pos.numpy(), neg.numpy()


def _released_values_per_client(mechanism: CountMechanism) -> int:
    # The paper's mechanisms release 4T counts, the histograms at most 2(T + 1).
    return max(4 * mechanism.num_thresholds, 2 * mechanism.num_buckets)


def _chunks(repeats: int, per_repeat: int, seed) -> list[tuple[int, tf.Tensor]]:
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    chunk = max(1, min(repeats, MAX_CHUNK_ELEMENTS // max(per_repeat, 1)))
    sizes = [chunk] * (repeats // chunk) + ([repeats % chunk] if repeats % chunk else [])
    seeds = noise.split_seed(noise.make_seed(seed), len(sizes))
    return [(size, seeds[i]) for i, size in enumerate(sizes)]


def _collect(rocs: list[RocCurve], aucs: list[tf.Tensor], statement) -> SimulationResult:
    return SimulationResult(
        aucs=np.concatenate([a.numpy() for a in aucs]).astype(np.float64),
        fpr=np.concatenate([r.fpr.numpy() for r in rocs]),
        tpr=np.concatenate([r.tpr.numpy() for r in rocs]),
        statement=statement,
    )


def aggregate_mechanism(mechanism: CountMechanism) -> CountMechanism:
    """The mechanism whose release of the *summed* counts equals the server's view of a sum.

    For the secure mechanisms (``secure-histogram``, ``secure-tree-histogram``) that is the
    same mechanism with one share, the full noise (their ``aggregate()``); every other
    mechanism is returned unchanged (its clients' releases are simulated).
    """
    aggregate = getattr(mechanism, "aggregate", None)
    return aggregate() if aggregate is not None else mechanism


def simulate(
    mechanism: CountMechanism,
    pos: np.ndarray,
    neg: np.ndarray,
    *,
    seed: int | tf.Tensor | None = None,
    repeats: int = 1,
) -> SimulationResult:
    """``repeats`` evaluations: every client of ``pos, neg [K, T + 1]`` releases, the server sums.

    Returns the AUC and ROC of every repeat. ``secure-histogram`` is simulated by its exact
    aggregate (see the module docstring).
    """
    pos = tf.convert_to_tensor(np.asarray(pos, np.float32))
    neg = tf.convert_to_tensor(np.asarray(neg, np.float32))
    if pos.shape.rank != 2 or pos.shape != neg.shape:
        raise ValueError("pos and neg must both have shape [num_clients, T + 1]")
    if pos.shape[1] != mechanism.num_buckets:
        raise ValueError(
            f"counts have {pos.shape[1]} buckets but the mechanism expects {mechanism.num_buckets}"
        )
    statement = mechanism.statement()
    aggregate = aggregate_mechanism(mechanism)
    if aggregate is not mechanism:
        pos = tf.reduce_sum(pos, axis=0, keepdims=True)
        neg = tf.reduce_sum(neg, axis=0, keepdims=True)
    per_repeat = int(pos.shape[0]) * _released_values_per_client(mechanism)
    rocs, aucs = [], []
    for size, chunk_seed in _chunks(repeats, per_repeat, seed):
        release = aggregate.release(pos, neg, seed=chunk_seed, repeats=size)  # [r, K, ...]
        summed = {key: tf.reduce_sum(value, axis=1) for key, value in release.items()}
        roc = roc_from_confusion(aggregate.to_confusion(summed))
        rocs.append(roc)
        aucs.append(aggregate.estimate_auc(summed))
    return _collect(rocs, aucs, statement)


def simulate_randomized_response(
    epsilon: float,
    pos: np.ndarray,
    neg: np.ndarray,
    *,
    seed: int | tf.Tensor | None = None,
    repeats: int = 1,
) -> SimulationResult:
    """``repeats`` randomized-response evaluations of per-client counts ``[K, T + 1]``.

    Each example's label is flipped with probability ``p = 1 / (1 + e^eps)``, drawn per client
    and bucket as binomials (see the module docstring). AUCs are debiased; the ROC points are
    those of the flipped labels (the debiasing acts on the AUC only).
    """
    from dpauc_tf import randomized_response as rr

    p = rr.flip_probability(epsilon)
    pos = tf.convert_to_tensor(np.asarray(pos, np.float64))
    neg = tf.convert_to_tensor(np.asarray(neg, np.float64))
    rocs, aucs = [], []
    for size, chunk_seed in _chunks(repeats, 2 * int(np.prod(pos.shape)), seed):
        kept_seed, flipped_seed = tf.unstack(noise.split_seed(chunk_seed, 2))
        shape = tf.concat([[size], tf.shape(pos)], 0)
        keep_prob = tf.constant(1.0 - p, tf.float64)
        flip_prob = tf.constant(p, tf.float64)
        stay = tf.random.stateless_binomial(
            shape, kept_seed, counts=pos, probs=keep_prob, output_dtype=tf.float64
        )
        come = tf.random.stateless_binomial(
            shape, flipped_seed, counts=neg, probs=flip_prob, output_dtype=tf.float64
        )
        flipped_pos = tf.reduce_sum(stay + come, axis=1)
        flipped_neg = tf.reduce_sum(pos + neg, axis=0) - flipped_pos
        roc = roc_from_confusion(confusion_from_histogram(flipped_pos, flipped_neg))
        auc_flipped = auc_from_roc(roc)
        rocs.append(roc)
        aucs.append(
            rr.debias_auc(
                auc_flipped,
                tf.reduce_sum(flipped_pos, axis=-1),
                tf.reduce_sum(flipped_neg, axis=-1),
                epsilon,
            )
        )
    return _collect(rocs, aucs, rr.statement(epsilon))
