"""Federated evaluation simulated centrally: count once per client, release all repeats at once.

``R`` repeats of a DP evaluation must not mean ``R`` passes over the data. The data are
bucketed once per client (:func:`client_histograms`, one :func:`dpauc_tf.core.counts.bucket_counts`
pass with the client as group id); a mechanism's ``release(..., repeats=R)`` then draws the
noise of all ``R`` repeats for all ``K`` clients in one vectorised call (``[R, K, ...]``
tensors, in chunks of repeats to bound memory); the server's sum over clients, the confusion
counts, the ROC and the AUC are the library's own functions (:mod:`dpauc_tf.core.curve`). Every
repeat and every client gets independent noise, so the result has exactly the distribution of
``R`` separate evaluations with ``K`` separate client releases each
(``tests/experiments/test_simulation.py`` checks this against one-at-a-time releases).

Secure mechanisms are simulated through their exactly equivalent aggregate
(``mechanism.aggregate()``): the server only ever sees the secure sum, and the sum of ``K``
clients' shares is one draw of the total noise, so the sum is simulated as one release of
the summed counts with the full noise. Mechanisms that transform the data before counting
(capability ``transforms_data``, e.g. ``score-noise``) need a pass over the examples per
release: :func:`simulate_examples` does that in chunks of repeats, one counting pass per
chunk with (repeat, client) as the group id; for every other mechanism it counts once and
calls :func:`simulate`.

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


def _sum_of_laplace(shape, scale: float, num_clients: int, seed, dtype) -> tf.Tensor:
    """One draw of the sum of ``num_clients`` independent Laplace(scale) variables.

    ``Laplace(b) = b (E1 - E2)`` with standard exponentials, and a sum of ``K`` of them is
    ``Gamma(K, 1)``: the sum is ``b (G1 - G2)``, ``G ~ Gamma(K, 1)``, exactly in
    distribution (``tests/experiments/test_summed_client_noise.py`` checks it against the
    sum of per-client draws)."""
    gammas = tf.random.stateless_gamma(
        tf.concat([[2], shape], 0),
        seed=seed,
        alpha=tf.constant(float(num_clients), tf.float64),
        dtype=tf.float64,
    )
    return tf.cast(scale * (gammas[0] - gammas[1]), dtype)


def _sums_client_noise(mechanism: CountMechanism) -> bool:
    """Whether :func:`_summed_release` draws the clients' summed noise of ``mechanism``."""
    from dpauc_tf.mechanisms.histogram import HistogramLaplace, HistogramPublicScores
    from dpauc_tf.mechanisms.paper import PaperLaplace

    kinds = (PaperLaplace, HistogramLaplace, HistogramPublicScores)
    return type(mechanism) in kinds and getattr(mechanism, "noise", "continuous") == "continuous"


def _summed_release(mechanism: CountMechanism, pos, neg, num_clients: int, seed, repeats):
    """The server's sum of ``num_clients`` clients' releases, drawn at once: ``[R, 1, ...]``.

    For the mechanisms whose client release is ``counts + Laplace`` with continuous noise
    (``paper``, ``histogram``, ``histogram-public-scores``) the server's sum is the sum of
    the counts plus a sum of ``K`` Laplace draws per value (:func:`_sum_of_laplace`), which
    is what the server sees and all that the estimate uses: the same distribution as ``K``
    per-client draws, for ``1 / K`` of the random numbers. ``None`` for any other mechanism
    (drawn client by client)."""
    from dpauc_tf.core.curve import confusion_from_histogram
    from dpauc_tf.mechanisms.histogram import HistogramPublicScores
    from dpauc_tf.mechanisms.paper import PaperLaplace

    if not _sums_client_noise(mechanism):
        return None
    kind = type(mechanism)
    pos = tf.reduce_sum(pos, axis=0, keepdims=True)  # [1, T + 1]: the counts' sum is exact
    neg = tf.reduce_sum(neg, axis=0, keepdims=True)

    def noisy(counts, scale, key_seed):
        shape = tf.concat([[repeats], tf.shape(counts)], 0)
        return counts[None] + _sum_of_laplace(shape, scale, num_clients, key_seed, counts.dtype)

    if kind is PaperLaplace:
        exact = confusion_from_histogram(pos, neg)
        seeds = split_seed(seed, 4)
        return {
            key: noisy(value, mechanism.noise_scale, seeds[i])
            for i, (key, value) in enumerate(exact._asdict().items())
        }
    if kind is HistogramPublicScores:
        total = tf.broadcast_to((pos + neg)[None], tf.concat([[repeats], tf.shape(pos)], 0))
        return {"pos": noisy(pos, mechanism.noise_scale, seed), "total": total}
    seeds = split_seed(seed, 2)
    scale_pos, scale_neg = mechanism.class_scales
    return {"pos": noisy(pos, scale_pos, seeds[0]), "neg": noisy(neg, scale_neg, seeds[1])}


def simulate(
    mechanism: CountMechanism,
    pos: np.ndarray,
    neg: np.ndarray,
    *,
    seed: int | tf.Tensor | None = None,
    repeats: int = 1,
    per_client_noise: bool = True,
) -> SimulationResult:
    """``repeats`` evaluations: every client of ``pos, neg [K, T + 1]`` releases, the server sums.

    Returns the AUC and ROC of every repeat (``[R, 0]`` ROC arrays for a mechanism that
    releases only the AUC, which also takes one client only). Secure mechanisms are simulated by their exact
    aggregate (see the module docstring). Mechanisms that transform the data before
    counting cannot be simulated from counts: use :func:`simulate_examples`.

    ``per_client_noise=False`` draws the server's sum of the clients' Laplace noise at once
    where that sum has a closed form (:func:`_summed_release`: ``paper``, ``histogram``,
    ``histogram-public-scores``): the same distribution from ``1 / K`` of the random
    numbers, so different numbers for the same seed. The default draws every client's noise.
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
    num_clients = int(pos.shape[0])
    summed = not per_client_noise and num_clients > 1 and aggregate is mechanism
    summed = summed and _sums_client_noise(mechanism)
    per_repeat = (1 if summed else num_clients) * _released_values_per_client(mechanism)
    rocs, aucs = [], []
    for size, chunk_seed in _chunks(repeats, per_repeat, seed):
        if summed:
            release = _summed_release(mechanism, pos, neg, num_clients, chunk_seed, size)
        else:
            release = aggregate.release(pos, neg, seed=chunk_seed, repeats=size)  # [r, K, ...]
        summed = {key: tf.reduce_sum(value, axis=1) for key, value in release.items()}
        rocs.append(_roc(aggregate, summed))
        aucs.append(aggregate.estimate_auc(summed))
    return _collect(rocs, aucs, statement)


def even_grid_buckets(values: np.ndarray, scores: np.ndarray) -> np.ndarray | None:
    """``np.searchsorted(values, scores, side="left")`` for evenly spaced ``values``, by
    arithmetic (a division, then one exact comparison each way with the thresholds
    themselves), or ``None`` where ``values`` are not evenly spaced.

    The same ids as the sorted search, element for element: the division's rounding moves
    the first guess by less than one bucket, and the two comparisons settle it.

    >>> v = np.linspace(-1.0, 2.0, 7)
    >>> s = np.array([-5.0, -1.0, 0.0, 0.5, 0.50001, 2.0, 9.0])
    >>> even_grid_buckets(v, s).tolist() == np.searchsorted(v, s, side="left").tolist()
    True
    """
    count = values.size
    if count < 2:
        return None
    step = (values[-1] - values[0]) / (count - 1)
    if not step > 0 or not np.allclose(np.diff(values), step, rtol=1e-9, atol=0.0):
        return None
    guess = np.ceil((scores - values[0]) / step)
    ids = np.clip(guess, 0, count).astype(np.int64)
    below = ids < count
    ids[below] += values[ids[below]] < scores[below]  # one more threshold below the score
    above = ids > 0
    ids[above] -= values[ids[above] - 1] >= scores[above]  # one threshold fewer
    return ids


def _grouped_counts(labels: np.ndarray, scores, grid: Thresholds, groups, num_groups: int):
    """``bucket_counts(labels, scores, grid, group_ids=groups, ...)`` (unit weights, no
    validation) in NumPy where the grid is evenly spaced: the same float64 counts."""
    scores_np = scores.numpy() if isinstance(scores, tf.Tensor) else np.asarray(scores)
    ids = None
    if grid.grid == "explicit" and not grid.inclusive:
        ids = even_grid_buckets(grid.as_array(), scores_np.astype(np.float64, copy=False))
    if ids is None:
        return bucket_counts(
            labels,
            scores,
            grid,
            validate=False,  # checked by the caller; noisy scores leave [0, 1] by design
            group_ids=groups,
            num_groups=num_groups,
            dtype=tf.float64,
        )
    buckets = grid.num_buckets
    segment = ids + (labels == 0) * buckets + np.asarray(groups, np.int64) * (2 * buckets)
    counts = np.bincount(segment, minlength=num_groups * 2 * buckets).astype(np.float64)
    counts = counts.reshape(num_groups, 2, buckets)
    return tf.constant(counts[:, 0]), tf.constant(counts[:, 1])


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

    Counts once and calls :func:`simulate` unless the mechanism transforms the data before
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
        pos, neg = _grouped_counts(tiled_labels, noisy, grid, groups, size * num_clients)
        pos = tf.reshape(pos, [size, num_clients, -1])
        neg = tf.reshape(neg, [size, num_clients, -1])
        release = aggregate.release(pos, neg, seed=chunk_seed)
        summed = {key: tf.reduce_sum(value, axis=1) for key, value in release.items()}
        rocs.append(roc_from_confusion(aggregate.to_confusion(summed)))
        aucs.append(aggregate.estimate_auc(summed))
    return _collect(rocs, aucs, statement)
