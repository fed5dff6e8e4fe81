"""The simulate backend of one-vs-rest multi-class AUC, on the one release path.

The same three steps as the binary path ([`dpauc_tf.mechanisms.release`][]):
a [`ReleaseSpec`][dpauc_tf.mechanisms.release.ReleaseSpec] with ``num_classes``
describes the release (hashable), every client (or the one data
holder) counts ``[C, T + 1]`` positives and negatives per class
([`one_vs_rest_counts`][dpauc_tf.mechanisms.multiclass.one_vs_rest_counts]) and releases
them through [`OneVsRest`][dpauc_tf.mechanisms.multiclass.OneVsRest], and
[`finish_release`][dpauc_tf.mechanisms.release.finish_release] turns the summed reports
into one [`AUCResult`][dpauc_tf.mechanisms.release.AUCResult] with a class axis.
[`evaluate_multiclass`][] runs the whole path in one process: centrally, or as ``K`` simulated clients that each release their
own counts (local noise, or secure shares whose sum carries one draw of the noise).

Examples:
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> scores = rng.dirichlet([1, 1, 1], size=200)
    >>> labels = rng.integers(0, 3, size=200)
    >>> result = evaluate_multiclass(labels, scores, epsilon=None, num_thresholds=50)
    >>> result.average, result.epsilon is None, result.class_aucs.shape
    ('macro', True, (1, 3))
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from dpauc_tf.core.defaults import DEFAULT_NUM_THRESHOLDS
from dpauc_tf.mechanisms.multiclass import one_vs_rest_counts
from dpauc_tf.mechanisms.release import AUCResult, ReleaseSpec, check_repeats, finish_release


def evaluate_multiclass(
    labels: Any,
    scores: Any,
    *,
    epsilon: float | None,
    mechanism: str = "histogram",
    num_thresholds: int = DEFAULT_NUM_THRESHOLDS,
    delta: float | None = None,
    average: str = "macro",
    options: Mapping[str, Any] | None = None,
    num_clients: int | None = None,
    client_ids: Any = None,
    repeats: int = 1,
    seed: int | None = None,
    sample_weight: Any = None,
    from_logits: bool = False,
    confidence: float | None = None,
    ci_target: str = "population",
) -> AUCResult:
    """One-vs-rest private AUC of ``scores [N, C]`` and ``labels`` (the simulate backend).

    Without ``num_clients`` one data holder counts and releases once (central noise). With
    ``num_clients=K`` the examples go to ``K`` clients (``client_ids`` in ``[0, K)``, or
    uniformly at random: IID), every client releases its own ``[C, T + 1]`` counts through
    the mechanism built for ``K`` (a secure mechanism: one noise share each, and only the
    sum carries the stated noise; a local one: every report private on its own), and the
    reports are summed.

    Args:
      labels: class ids ``[N]`` or one-hot ``[N, C]``.
      scores: ``[N, C]`` class probabilities (logits with ``from_logits``).
      epsilon: of one release of all classes (``None``: no noise, NOT private).
      mechanism: the binary curve mechanism of every class.
      num_thresholds: the grid's thresholds.
      delta: for mechanisms with a delta (of the whole release).
      options: the mechanism's options.
      average: the headline average.
      num_clients: simulated clients (``None``: central).
      client_ids: each example's client (default: IID, drawn from ``seed``).
      repeats: independent releases (the cost composes).
      seed: ``None`` (OS entropy) or an int (reproducible).
      sample_weight: weights ``[N]`` in [0, 1].
      from_logits: the scores are logits (softmax first).
      confidence: e.g. 0.95: every class's interval too (rank-sum mechanisms only).
      ci_target: ``"population"`` or ``"sample"`` (the interval's target).
    """
    scores = np.asarray(scores, np.float64)
    if scores.ndim != 2:
        raise ValueError(
            f"scores must have shape [N, C] (one column per class), got {scores.shape}"
        )
    spec = ReleaseSpec.make(
        mechanism,
        epsilon=epsilon,
        num_classes=scores.shape[1],
        num_thresholds=num_thresholds,
        delta=delta,
        options=options,
        seed=seed,
        average=average,
    )
    repeats = check_repeats(repeats)
    built = spec.build(num_clients)
    integer = bool(built.capabilities.integer_counts)
    grid = spec.count_grid()
    if num_clients is None:
        pos, neg = one_vs_rest_counts(
            labels,
            scores,
            grid,
            sample_weight=sample_weight,
            from_logits=from_logits,
            integer_weights=integer,
            unit_weights=built.epsilon is not None,
        )
        release = built.release(pos, neg, seed=spec.seed_for("central"), repeats=repeats)
        summed = {key: np.asarray(value) for key, value in release.items()}
        return finish_release(
            spec,
            summed,
            num_examples=_total(sample_weight, scores),
            confidence=confidence,
            ci_target=ci_target,
        )
    if isinstance(num_clients, bool) or not isinstance(num_clients, int) or num_clients < 1:
        raise ValueError(f"num_clients must be an int >= 1, got {num_clients!r}")
    clients = _client_ids(client_ids, num_clients, scores.shape[0], seed)
    weights = None if sample_weight is None else np.asarray(sample_weight, np.float64).ravel()
    counts = []
    for client in range(num_clients):
        rows = clients == client
        if rows.any():
            counts.append(
                one_vs_rest_counts(
                    np.asarray(labels)[rows],
                    scores[rows],
                    grid,
                    sample_weight=None if weights is None else weights[rows],
                    from_logits=from_logits,
                    integer_weights=integer,
                    unit_weights=built.epsilon is not None,
                )
            )
        else:  # a client with no examples still sends its share of the noise
            counts.append(2 * (np.zeros((spec.num_classes, grid.num_buckets)),))
    if built.releases_from_summed_counts:  # rank sums: two rounds, ranks from round one
        summed = two_round_release(spec, built, counts, repeats)
    else:
        summed = None
        for client, (pos, neg) in enumerate(counts):
            release = built.release(pos, neg, seed=spec.seed_for("client", client), repeats=repeats)
            report = {key: np.asarray(value) for key, value in release.items()}
            summed = report if summed is None else {k: summed[k] + report[k] for k in summed}
    return finish_release(
        spec,
        summed,
        num_examples=_total(sample_weight, scores),
        num_clients=num_clients,
        confidence=confidence,
        ci_target=ci_target,
    )


def two_round_release(
    spec: ReleaseSpec, built: Any, counts: list[tuple[Any, Any]], repeats: int
) -> dict[str, np.ndarray]:
    """The two rounds of a one-vs-rest rank-sum release over clients' ``(pos, neg) [C, B]``:
    round one sums the clients' label-free column histograms, round two every client's
    rank sums with the global ranks and its noise (the whole noise for ``rank-sum``, a share
    for ``secure-rank-sum``); the server finishes the sums
    ([`dpauc_tf.mechanisms.multiclass_rank_sum`][])."""
    totals = sum(built.round_one_report(pos, neg) for pos, neg in counts)
    summed: dict[str, np.ndarray] | None = None
    for client, (pos, neg) in enumerate(counts):
        report = built.round_two_report(
            pos, neg, totals, seed=spec.seed_for("client", client), repeats=repeats
        )
        summed = report if summed is None else {k: summed[k] + report[k] for k in summed}
    return built.finish(summed, totals)


def _total(sample_weight: Any, scores: np.ndarray) -> float:
    if sample_weight is None:
        return float(scores.shape[0])
    return float(np.sum(sample_weight))


def _client_ids(client_ids: Any, num_clients: int, rows: int, seed: int | None) -> np.ndarray:
    if client_ids is None:
        return np.random.default_rng(seed).integers(0, num_clients, size=rows)
    ids = np.asarray(client_ids).ravel()
    if ids.shape[0] != rows:
        raise ValueError(f"{ids.shape[0]} client ids for {rows} examples")
    if not np.issubdtype(ids.dtype, np.integer) or ids.min() < 0 or ids.max() >= num_clients:
        raise ValueError(f"client ids must be integers in [0, num_clients={num_clients})")
    return ids
