"""Federated evaluation simulated centrally: count once per client, release all repeats at once.

``R`` repeats of a DP evaluation must not mean ``R`` passes over the data. The data are
bucketed once per client ([`client_histograms`][], one [`dpauc_tf.core.counts.bucket_counts`][]
pass with the client as group id); a mechanism's ``release(..., repeats=R)`` then draws the
noise of all ``R`` repeats for all ``K`` clients in one vectorised call (``[R, K, ...]``
tensors, in chunks of repeats to bound memory); the server's sum over clients, the confusion
counts, the ROC and the AUC are the library's own functions ([`dpauc_tf.core.curve`][]). Every
repeat and every client gets independent noise, so the result has exactly the distribution of
``R`` separate evaluations with ``K`` separate client releases each
(``tests/experiments/test_simulation.py`` checks this against one-at-a-time releases).

Secure mechanisms are simulated through their exactly equivalent aggregate
(``mechanism.aggregate()``): the server only ever sees the secure sum, and the sum of ``K``
clients' shares is one draw of the total noise, so the sum is simulated as one release of
the summed counts with the full noise. Mechanisms that transform the data before counting
(capability ``transforms_data``, e.g. ``score-noise``) need a pass over the examples per
release: [`simulate_examples`][] does that in chunks of repeats, one counting pass per
chunk with (repeat, client) as the group id; for every other mechanism it counts once and
calls [`simulate`][].

Examples:
    >>> import numpy as np
    >>> from dpauc_tf import get_mechanism
    >>> from dpauc_tf.core.thresholds import Thresholds
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

from dpauc_tf.core.counts import bucket_counts
from dpauc_tf.core.curve import (
    RocCurve,
    roc_from_confusion,
)
from dpauc_tf.core.thresholds import Thresholds
from dpauc_tf.experiments.score_files import ScoreSet
from dpauc_tf.mechanisms import CountMechanism
from dpauc_tf.noise.seeds import make_seed, split_seed
from dpauc_tf.privacy.statement import PrivacyStatement

# Noisy values per chunk ([repeats, clients, released values]), to bound memory (~ 80 MB).
MAX_CHUNK_ELEMENTS = 10_000_000


@dataclasses.dataclass(frozen=True)
class SimulationResult:
    """``R`` repeats of one setting: AUCs ``[R]``, ROC points ``[R, T]`` and the guarantee.

    Examples:
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
        """Mean over the releases whose AUC estimate is defined (NaN if none is)."""
        defined = self.aucs[~np.isnan(self.aucs)]
        return float(np.mean(defined)) if defined.size else float("nan")

    @property
    def std(self) -> float:
        """Standard deviation over the releases whose estimate is defined."""
        defined = self.aucs[~np.isnan(self.aucs)]
        return float(np.std(defined)) if defined.size else float("nan")

    @property
    def num_undefined(self) -> int:
        """Releases whose AUC estimate is undefined (noise left no positive or negative)."""
        return int(np.isnan(self.aucs).sum())


def client_histograms(
    labels, scores, thresholds: Thresholds, client_ids=None, num_clients: int = 1
) -> tuple[np.ndarray, np.ndarray]:
    """Per-client bucket counts ``pos, neg`` of shape ``[K, T + 1]`` (float64), one pass."""
    labels = np.asarray(labels, np.float64).ravel()
    scores = np.asarray(scores, np.float64).ravel()
    if client_ids is None:
        client_ids = np.zeros(labels.size, np.int32)
    pos, neg = bucket_counts(
        labels, scores, thresholds, group_ids=client_ids, num_groups=num_clients, dtype=tf.float64
    )
    return pos.numpy(), neg.numpy()


def _released_values_per_client(mechanism: CountMechanism) -> int:
    # The paper's mechanisms release 4T counts, the histograms at most 2(T + 1); auc-only
    # two scalars (it reduces the counts before the repeats axis).
    if mechanism.capabilities.releases == "auc":
        return 2
    return max(4 * mechanism.num_thresholds, 2 * mechanism.num_buckets)


def _chunks(repeats: int, per_repeat: int, seed) -> list[tuple[int, tf.Tensor]]:
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    chunk = max(1, min(repeats, MAX_CHUNK_ELEMENTS // max(per_repeat, 1)))
    sizes = [chunk] * (repeats // chunk) + ([repeats % chunk] if repeats % chunk else [])
    seeds = split_seed(make_seed(seed), len(sizes))
    return [(size, seeds[i]) for i, size in enumerate(sizes)]


def _collect(rocs: list[RocCurve | None], aucs: list[tf.Tensor], statement) -> SimulationResult:
    """Concatenates the chunks; a mechanism that releases no curve gets ``[R, 0]`` ROC arrays."""
    values = np.concatenate([a.numpy() for a in aucs]).astype(np.float64)
    if any(r is None for r in rocs):
        empty = np.zeros((values.size, 0))
        return SimulationResult(aucs=values, fpr=empty, tpr=empty, statement=statement)
    return SimulationResult(
        aucs=values,
        fpr=np.concatenate([r.fpr.numpy() for r in rocs]),
        tpr=np.concatenate([r.tpr.numpy() for r in rocs]),
        statement=statement,
    )


def _roc(mechanism: CountMechanism, summed) -> RocCurve | None:
    """The released ROC curve, or ``None`` for a mechanism that releases only the AUC."""
    if mechanism.capabilities.releases != "curve":
        return None
    return roc_from_confusion(mechanism.to_confusion(summed))


def simulate(
    mechanism: CountMechanism,
    pos: np.ndarray,
    neg: np.ndarray,
    *,
    seed: int | tf.Tensor | None = None,
    repeats: int = 1,
) -> SimulationResult:
    """``repeats`` evaluations: every client of ``pos, neg [K, T + 1]`` releases, the server sums.

    Returns the AUC and ROC of every repeat (``[R, 0]`` ROC arrays for a mechanism that
    releases only the AUC, which also takes one client only). Secure mechanisms are simulated by their exact
    aggregate (see the module docstring). Mechanisms that transform the data before
    counting cannot be simulated from counts: use [`simulate_examples`][].
    """
    pos = tf.convert_to_tensor(np.asarray(pos, np.float64))
    neg = tf.convert_to_tensor(np.asarray(neg, np.float64))
    if pos.shape.rank != 2 or pos.shape != neg.shape:
        raise ValueError("pos and neg must both have shape [num_clients, T + 1]")
    if pos.shape[1] != mechanism.num_buckets:
        raise ValueError(
            f"counts have {pos.shape[1]} buckets but the mechanism expects {mechanism.num_buckets}"
        )
    if mechanism.capabilities.transforms_data:
        raise ValueError(
            f"{mechanism.name} transforms the examples before counting; "
            "simulate it from the examples (simulate_examples)"
        )
    if mechanism.capabilities.releases != "curve" and pos.shape[0] != 1:
        raise ValueError(
            f"{mechanism.name} releases one AUC from one data holder's counts; got "
            f"{pos.shape[0]} clients"
        )
    statement = mechanism.statement()
    aggregate = mechanism.aggregate()
    if aggregate is not mechanism:
        pos = tf.reduce_sum(pos, axis=0, keepdims=True)
        neg = tf.reduce_sum(neg, axis=0, keepdims=True)
    per_repeat = int(pos.shape[0]) * _released_values_per_client(mechanism)
    rocs, aucs = [], []
    for size, chunk_seed in _chunks(repeats, per_repeat, seed):
        release = aggregate.release(pos, neg, seed=chunk_seed, repeats=size)  # [r, K, ...]
        summed = {key: tf.reduce_sum(value, axis=1) for key, value in release.items()}
        rocs.append(_roc(aggregate, summed))
        aucs.append(aggregate.estimate_auc(summed))
    return _collect(rocs, aucs, statement)


def simulate_examples(
    mechanism: CountMechanism,
    labels,
    scores,
    thresholds: Thresholds,
    client_ids=None,
    num_clients: int = 1,
    *,
    seed: int | tf.Tensor | None = None,
    repeats: int = 1,
) -> SimulationResult:
    """``repeats`` evaluations of examples held by ``num_clients`` clients (any mechanism).

    Counts once and calls [`simulate`][] unless the mechanism transforms the data before
    counting; then every chunk of repeats transforms all examples (one independent draw per
    repeat and example) and counts them in one pass, grouped by (repeat, client).
    """
    checked = ScoreSet.checked(labels, scores)  # one-line errors for bad labels or scores
    labels = checked.labels.astype(np.float64)
    scores = checked.scores
    grid = mechanism.count_thresholds(thresholds)
    if client_ids is None:
        client_ids = np.zeros(labels.size, np.int64)
    client_ids = np.asarray(client_ids, np.int64).ravel()
    if not mechanism.capabilities.transforms_data:
        pos, neg = client_histograms(labels, scores, grid, client_ids, num_clients)
        return simulate(mechanism, pos, neg, seed=seed, repeats=repeats)
    statement = mechanism.statement()
    aggregate = mechanism.aggregate()
    rocs, aucs = [], []
    for size, chunk_seed in _chunks(repeats, 4 * labels.size, seed):
        tiled_labels = np.tile(labels, size)
        _, noisy = mechanism.transform(tiled_labels, np.tile(scores, size), chunk_seed)
        groups = np.repeat(np.arange(size), labels.size) * num_clients + np.tile(client_ids, size)
        pos, neg = bucket_counts(
            tiled_labels,
            noisy,
            grid,
            validate=False,  # checked by the caller; noisy scores leave [0, 1] by design
            group_ids=groups,
            num_groups=size * num_clients,
            dtype=tf.float64,
        )
        pos = tf.reshape(pos, [size, num_clients, -1])
        neg = tf.reshape(neg, [size, num_clients, -1])
        release = aggregate.release(pos, neg, seed=chunk_seed)
        summed = {key: tf.reduce_sum(value, axis=1) for key, value in release.items()}
        rocs.append(roc_from_confusion(aggregate.to_confusion(summed)))
        aucs.append(aggregate.estimate_auc(summed))
    return _collect(rocs, aucs, statement)
