"""Federated evaluation simulated centrally: count once per client, release all repeats at once.

``R`` repeats of a DP evaluation must not mean ``R`` passes over the data. The data are
bucketed once per client (`client_histograms`, one [`dpauc_tf.core.counts.bucket_counts`][]
pass with the client as group id); a mechanism's ``release(..., repeats=R)`` then draws the
noise of all ``R`` repeats for all ``K`` clients in one vectorised call (``[R, K, ...]``
tensors, in chunks of repeats to bound memory); the server's sum over clients, the confusion
counts, the ROC and the AUC are the library's own functions ([`dpauc_tf.core.curve`][]). Every
repeat and every client gets independent noise, so the result has exactly the distribution of
``R`` separate evaluations with ``K`` separate client releases each
(``tests/simulation/test_simulation.py`` checks this against one-at-a-time releases).

The backend is written against the release protocol ([`dpauc_tf.mechanisms.release`][]):
a [`ReleaseSpec`][] (or a built mechanism) sets the release
up, chunk ``i`` of the repeats is seeded by the spec, ``spec.seed_for("simulate", i)`` (a
mechanism passed without a spec: the same derivation of ``seed``,
[`dpauc_tf.noise.seeds.derive_seed`][]), and
[`finish_release`][] turns the summed reports into the one
result type, [`AUCResult`][] (AUC and curve of every repeat,
the guarantee, the whole output's cost).

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
    >>> out.aucs.shape, out.epsilon, out.epsilon_total
    ((5,), 1.0, 5.0)
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np
import tensorflow as tf

from dpauc_tf.core.counts import bucket_counts
from dpauc_tf.core.thresholds import Thresholds
from dpauc_tf.io.scores import ScoreSet
from dpauc_tf.mechanisms import CountMechanism
from dpauc_tf.mechanisms.release import (
    AUCResult,
    ReleaseSpec,
    check_repeats,
    finish_release,
)
from dpauc_tf.noise.seeds import derive_seed

# Noisy values per chunk ([repeats, clients, released values]), to bound memory (~ 80 MB).
MAX_CHUNK_ELEMENTS = 10_000_000
# The key of the simulate backend's seeds: chunk i of the repeats is spec.seed_for(SEED_KEY, i).
SEED_KEY = "simulate"


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


def _set_up(release, seed, num_clients: int):
    """The spec (its seed replaced by ``seed`` where one is given), the mechanism built for
    ``num_clients`` and where every chunk's seed comes from: the spec's ``seed_for``; for a
    mechanism passed without a spec, the same derivation of ``seed``."""
    if isinstance(release, ReleaseSpec):
        spec, seeds = _seed_source(release, seed)
        return spec, spec.build(num_clients), seeds
    if not isinstance(release, CountMechanism):
        raise TypeError(
            f"simulate takes a ReleaseSpec or a built mechanism, got {type(release).__name__}"
        )
    return None, release, _seed_source(None, seed)[1]


def _seed_source(spec: ReleaseSpec | None, seed: int | None):
    """The spec with ``seed`` where one is given, and its ``seed_for``; without a spec
    (a mechanism built by the caller), the same derivation of ``seed``."""
    if spec is None:
        return None, functools.partial(derive_seed, seed)
    if seed is not None:
        spec = dataclasses.replace(spec, seed=seed)
    return spec, spec.seed_for


def _chunks(repeats: int, per_repeat: int, seeds) -> list[tuple[int, tf.Tensor]]:
    """Chunks of repeats (bounded memory), chunk ``i`` seeded by ``seeds("simulate", i)``
    (a spec's ``seed_for``): fresh entropy for a spec without a seed, reproducible for an
    int."""
    check_repeats(repeats)
    chunk = max(1, min(repeats, MAX_CHUNK_ELEMENTS // max(per_repeat, 1)))
    sizes = [chunk] * (repeats // chunk) + ([repeats % chunk] if repeats % chunk else [])
    return [(size, seeds(SEED_KEY, i)) for i, size in enumerate(sizes)]


def _finish(
    spec, mechanism, summed: list[dict], num_examples, num_clients: int, interval: dict
) -> AUCResult:
    """The chunks' summed reports, joined along the repeats axis, through
    [`finish_release`][] (the one post-processing; ``interval``: its ``confidence`` and
    ``ci_target``, where asked). Every client reported: every noise share the mechanism was sized for
    arrived (its own `noise_shares` rule)."""
    joined = {key: np.concatenate([np.asarray(part[key]) for part in summed]) for key in summed[0]}
    shares = mechanism.noise_shares(num_clients) if isinstance(mechanism, CountMechanism) else None
    clients = None if num_clients == 1 else int(num_clients)
    return finish_release(
        spec,
        joined,
        num_examples=num_examples,
        num_clients=clients,
        num_reporting=clients,
        shares=shares,
        shares_arrived=shares,
        mechanism=mechanism,
        **interval,
    )


def simulate(
    release: ReleaseSpec | CountMechanism,
    pos: np.ndarray,
    neg: np.ndarray,
    *,
    seed: int | None = None,
    repeats: int = 1,
    per_client_noise: bool = True,
    confidence: float | None = None,
    ci_target: str = "population",
) -> AUCResult:
    """``repeats`` evaluations: every client of ``pos, neg [K, T + 1]`` releases, the server sums.

    ``release``: a [`ReleaseSpec`][] (built here for the
    ``K`` clients; its seed unless ``seed`` is given) or a mechanism already built.
    Returns an [`AUCResult`][]: the AUC and ROC of every
    repeat (``[R, 0]`` ROC arrays for a mechanism that releases only the AUC, which also
    takes one client only) and the cost. Secure mechanisms are simulated by their exact
    aggregate (see the module docstring). Mechanisms that transform the data before
    counting cannot be simulated from counts: use [`simulate_examples`][].

    ``per_client_noise=False`` draws the server's sum of the clients' Laplace noise at once
    where the mechanism has a closed form for that sum (its ``sums_client_noise()`` and
    ``summed_client_release``: ``paper``, ``histogram``, ``histogram-public-scores`` with
    continuous noise): the same distribution from ``1 / K`` of the random numbers, so
    different numbers for the same seed. The default draws every client's noise.

    ``confidence`` (e.g. 0.95) and ``ci_target``: also the interval of every release, as
    [`finish_release`][] computes it (post-processing, no privacy cost).
    """
    interval = {"confidence": confidence, "ci_target": ci_target}
    pos = np.asarray(pos, np.float64)
    spec, mechanism, seeds = _set_up(release, seed, pos.shape[0] if pos.ndim == 2 else 1)
    pos = tf.convert_to_tensor(pos)
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
    if mechanism.releases_from_summed_counts and pos.shape[0] != 1:  # rank sums
        clients = int(pos.shape[0])
        pos, neg = tf.reduce_sum(pos, 0), tf.reduce_sum(neg, 0)
        return simulate_rank_sums(
            spec, mechanism, pos, neg, clients, seed=seed, repeats=repeats, **interval
        )
    if mechanism.capabilities.releases != "curve" and pos.shape[0] != 1:
        raise ValueError(
            f"{mechanism.name} releases one AUC from one data holder's counts; got "
            f"{pos.shape[0]} clients"
        )
    num_clients = int(pos.shape[0])
    num_examples = float(tf.reduce_sum(pos) + tf.reduce_sum(neg))
    aggregate = mechanism.aggregate()
    if aggregate is not mechanism:
        pos = tf.reduce_sum(pos, axis=0, keepdims=True)
        neg = tf.reduce_sum(neg, axis=0, keepdims=True)
    per_client = int(pos.shape[0])
    draw_summed = not per_client_noise and per_client > 1 and aggregate is mechanism
    draw_summed = draw_summed and mechanism.sums_client_noise()
    per_repeat = (1 if draw_summed else per_client) * _released_values_per_client(mechanism)
    summed = []
    for size, chunk_seed in _chunks(repeats, per_repeat, seeds):
        if draw_summed:
            reports = mechanism.summed_client_release(pos, neg, per_client, chunk_seed, size)
        else:
            reports = aggregate.release(pos, neg, seed=chunk_seed, repeats=size)  # [r, K, ...]
        summed.append({key: tf.reduce_sum(value, axis=1) for key, value in reports.items()})
    return _finish(spec, mechanism, summed, num_examples, num_clients, interval)


def simulate_rank_sums(
    spec,
    mechanism: CountMechanism,
    pos,
    neg,
    num_clients: int,
    *,
    seed: int | None = None,
    repeats: int,
    confidence: float | None = None,
    ci_target: str = "population",
) -> AUCResult:
    """``repeats`` evaluations over ``num_clients`` clients whose counts sum to ``pos, neg
    [B]``, for a mechanism that releases from the summed counts only
    (``releases_from_summed_counts``: the rank sums, whose ranks come from round one's
    global totals): its own ``release_over_clients`` law, seeded as [`simulate`][] (the
    spec's seeds; ``seed`` replaces the spec's or seeds a mechanism given with no spec).
    Returns an [`AUCResult`][] (with the interval at ``confidence``, as [`simulate`][])."""
    interval = {"confidence": confidence, "ci_target": ci_target}
    spec, seeds = _seed_source(spec, seed)
    pos = tf.convert_to_tensor(np.asarray(pos, np.float64))
    neg = tf.convert_to_tensor(np.asarray(neg, np.float64))
    num_examples = float(tf.reduce_sum(pos) + tf.reduce_sum(neg))
    parts = [
        mechanism.release_over_clients(pos, neg, num_clients, chunk_seed, size)
        for size, chunk_seed in _chunks(repeats, 2, seeds)
    ]
    return _finish(spec, mechanism, parts, num_examples, num_clients, interval)


def even_grid_buckets(values: np.ndarray, scores: np.ndarray) -> np.ndarray | None:
    """``np.searchsorted(values, scores, side="left")`` for evenly spaced ``values``, by
    arithmetic (a division, then one exact comparison each way with the thresholds
    themselves), or ``None`` where ``values`` are not evenly spaced.

    The same ids as the sorted search, element for element: the division's rounding moves
    the first guess by less than one bucket, and the two comparisons settle it.

    Examples:
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
    release: ReleaseSpec | CountMechanism,
    labels,
    scores,
    thresholds: Thresholds,
    client_ids=None,
    num_clients: int = 1,
    *,
    seed: int | None = None,
    repeats: int = 1,
    confidence: float | None = None,
    ci_target: str = "population",
) -> AUCResult:
    """``repeats`` evaluations of examples held by ``num_clients`` clients (any mechanism).

    Counts once and calls [`simulate`][] unless the mechanism transforms the data before
    counting; then every chunk of repeats transforms all examples (one independent draw per
    repeat and example) and counts them in one pass, grouped by (repeat, client).
    ``confidence`` and ``ci_target``: the interval of every release, as [`simulate`][].
    """
    interval = {"confidence": confidence, "ci_target": ci_target}
    spec, mechanism, seeds = _set_up(release, seed, num_clients)
    checked = ScoreSet.checked(labels, scores)  # one-line errors for bad labels or scores
    labels = checked.labels.astype(np.float64)
    scores = checked.scores
    grid = mechanism.count_thresholds(thresholds)
    if client_ids is None:
        client_ids = np.zeros(labels.size, np.int64)
    client_ids = np.asarray(client_ids, np.int64).ravel()
    if mechanism.releases_from_summed_counts and num_clients > 1:  # rank sums
        pos, neg = client_histograms(labels, scores, grid)
        return simulate_rank_sums(
            spec, mechanism, pos[0], neg[0], num_clients, seed=seed, repeats=repeats, **interval
        )
    if not mechanism.capabilities.transforms_data:
        pos, neg = client_histograms(labels, scores, grid, client_ids, num_clients)
        return simulate(
            spec or mechanism, pos, neg, seed=None if spec else seed, repeats=repeats, **interval
        )
    aggregate = mechanism.aggregate()
    summed = []
    for size, chunk_seed in _chunks(repeats, 4 * labels.size, seeds):
        tiled_labels = np.tile(labels, size)
        _, noisy = mechanism.transform(tiled_labels, np.tile(scores, size), chunk_seed)
        groups = np.repeat(np.arange(size), labels.size) * num_clients + np.tile(client_ids, size)
        pos, neg = _grouped_counts(tiled_labels, noisy, grid, groups, size * num_clients)
        pos = tf.reshape(pos, [size, num_clients, -1])
        neg = tf.reshape(neg, [size, num_clients, -1])
        reports = aggregate.release(pos, neg, seed=chunk_seed)
        summed.append({key: tf.reduce_sum(value, axis=1) for key, value in reports.items()})
    return _finish(spec, mechanism, summed, float(labels.size), num_clients, interval)
