"""``compare_models``: the private paired comparison of two models' AUCs on one labelled test
set, released through the spec ([`dpauc_tf.mechanisms.release.ReleaseSpec`][]: by default the
rank-sum difference, [`dpauc_tf.mechanisms.comparison_rank_sum.RankSumComparison`][]; with
``method="histogram"`` the ``"paired-comparison"`` joint histogram,
[`dpauc_tf.mechanisms.comparison.PairedComparison`][]) and finished by
[`dpauc_tf.mechanisms.release.finish_release`][] as every release is. The default is chosen
by measurement (``docs/comparison.md``: the rank-sum test's size stays at or below 0.05 and
its power is about twice the histogram's at n = 2,000).

Examples:
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> labels = rng.random(4000) < 0.3
    >>> a = rng.normal(size=4000) + 1.0 * labels
    >>> b = 0.8 * a + 0.6 * rng.normal(size=4000) + 0.3 * labels
    >>> result = compare_models(labels, 1 / (1 + np.exp(-a)), 1 / (1 + np.exp(-b)), epsilon=1.0,
    ...                         seed=0)
    >>> result.ci_low < result.difference < result.ci_high, 0.0 <= result.p_value <= 1.0
    (True, True)
    >>> "p_value" in result.to_dict()
    True
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dpauc_tf.mechanisms.comparison import (
    DEFAULT_COMPARISON_BUCKETS,
    DEFAULT_CONFIDENCE,
    MAX_COMPARISON_BUCKETS,
    PAIRED_COMPARISON,
    ComparisonResult,
    joint_counts,
    quantile_edges,
)
from dpauc_tf.mechanisms.comparison_rank_sum import RANK_SUM_COMPARISON, comparison_statistics
from dpauc_tf.mechanisms.release import ReleaseSpec, finish_release


def compare_models(
    labels: np.ndarray | Sequence[int],
    scores_a: np.ndarray | Sequence[float],
    scores_b: np.ndarray | Sequence[float],
    epsilon: float,
    *,
    num_buckets: int | None = None,
    edges_a: Sequence[float] | None = None,
    edges_b: Sequence[float] | None = None,
    confidence: float = DEFAULT_CONFIDENCE,
    positive_share: float | None = None,
    positive_rate: float | None = None,
    seed: int | None = None,
    method: str = "rank-sum",
    num_clients: int | None = None,
    client_ids: Sequence[int] | None = None,
    secure: bool = False,
) -> ComparisonResult:
    """Private paired comparison of models A and B on one labelled test set (one release).

    Args:
      labels: 0/1 labels ``[n]`` (private).
      scores_a: model A's scores of the examples ``[n]`` (public under label DP).
      scores_b: model B's scores of the same examples ``[n]``.
      epsilon: the budget of the one release.
      num_buckets: ``"histogram"``: buckets per model at quantiles of its scores (default 6;
        the noise of ``D`` grows about linearly with it, the grid's bias falls:
        ``docs/comparison.md``).
      edges_a: explicit inner bucket edges for A instead (a score goes to the first bucket
        whose edge is ``>=`` it).
      edges_b: the same for B.
      confidence: of the interval (default 0.95).
      positive_share: the positive histogram's share of the budget
        ([`PairedComparison`][dpauc_tf.mechanisms.comparison.PairedComparison]).
      positive_rate: a public prior of the positive rate that sets the share instead.
      seed: ``None`` for fresh noise, an int for a reproducible release.
      method: ``"rank-sum"`` (the default: four noisy numbers, the rank-sum difference,
        model A's rank sum, the positives and the squared differences;
        [`dpauc_tf.mechanisms.comparison_rank_sum`][]) or ``"histogram"`` (the noisy joint
        histogram of quantile buckets); ``num_buckets``, the edges and the shares above
        belong to ``"histogram"`` and are refused (one line) with ``"rank-sum"``.
      num_clients: ``"rank-sum"`` only: ``K`` simulated clients (``client_ids`` in
        ``[0, K)``, default IID) in two rounds on TensorFlow's fine grid (scores in [0, 1]),
        each adding its own noise, or a share of it with ``secure``.
      client_ids: each example's client.
      secure: the clients' noise shares are summed by secure aggregation.

    Returns:
      A [`ComparisonResult`][dpauc_tf.mechanisms.comparison.ComparisonResult].
    """
    labels = np.asarray(labels).ravel()
    scores_a = np.asarray(scores_a, np.float64).ravel()
    scores_b = np.asarray(scores_b, np.float64).ravel()
    if not (labels.size == scores_a.size == scores_b.size) or labels.size == 0:
        raise ValueError(
            f"need one label and two scores per example, got {labels.size} labels, "
            f"{scores_a.size} and {scores_b.size} scores"
        )
    if not np.all(np.isin(labels, (0, 1))):
        raise ValueError("labels must be 0 or 1")
    if not (np.all(np.isfinite(scores_a)) and np.all(np.isfinite(scores_b))):
        raise ValueError("scores must be finite numbers")
    given_split = {"positive_share": positive_share, "positive_rate": positive_rate}
    if method == "rank-sum":
        given = {
            "num_buckets": num_buckets,
            "edges_a": edges_a,
            "edges_b": edges_b,
            **given_split,
        }
        extra = sorted(key for key, value in given.items() if value is not None)
        if extra:
            raise ValueError(
                f"{', '.join(extra)}: only method='histogram' takes "
                f"{'it' if len(extra) == 1 else 'them'} (the default method is 'rank-sum')"
            )
        return _compare_rank_sums(
            labels, scores_a, scores_b, epsilon, confidence, seed, num_clients, client_ids, secure
        )
    if method != "histogram":
        raise ValueError(f"method must be 'histogram' or 'rank-sum', got {method!r}")
    if num_clients is not None or secure:
        raise ValueError("clients (num_clients, secure) need method='rank-sum'")
    if num_buckets is None:
        num_buckets = DEFAULT_COMPARISON_BUCKETS
    if isinstance(num_buckets, bool) or not isinstance(num_buckets, (int, np.integer)):
        raise TypeError(f"num_buckets must be an int, got {num_buckets!r}")
    if not 2 <= num_buckets <= MAX_COMPARISON_BUCKETS:
        raise ValueError(f"num_buckets must be in [2, {MAX_COMPARISON_BUCKETS}], got {num_buckets}")
    if not (isinstance(confidence, (int, float)) and 0.0 < confidence < 1.0):
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    given = {"positive_share": positive_share, "positive_rate": positive_rate}
    spec = ReleaseSpec.make(
        PAIRED_COMPARISON,
        epsilon=epsilon,
        options={key: value for key, value in given.items() if value is not None},
        seed=seed,
    )
    mechanism = spec.build()
    cut_a = _edges(scores_a, edges_a, num_buckets, "edges_a")
    cut_b = _edges(scores_b, edges_b, num_buckets, "edges_b")
    shape = (cut_a.size + 1, cut_b.size + 1)
    bucket_a = np.searchsorted(cut_a, scores_a, side="left")
    bucket_b = np.searchsorted(cut_b, scores_b, side="left")
    pos, neg = joint_counts(labels, bucket_a, bucket_b, shape)
    noisy = mechanism.release(pos, neg, seed=spec.seed)
    return finish_release(spec, noisy, num_examples=int(labels.size), confidence=confidence)


def _edges(scores: np.ndarray, edges: Sequence[float] | None, num_buckets: int, name: str):
    if edges is None:
        return quantile_edges(scores, num_buckets)
    edges = np.asarray(edges, np.float64).ravel()
    if edges.size == 0 or not np.all(np.isfinite(edges)) or np.any(np.diff(edges) <= 0):
        raise ValueError(f"{name} must be a non-empty, strictly increasing list of numbers")
    return edges


def _compare_rank_sums(
    labels, scores_a, scores_b, epsilon, confidence, seed, num_clients, client_ids, secure
) -> ComparisonResult:
    """The rank-sum comparison: central (exact midranks of the scores), or over ``K``
    simulated clients in two rounds on TensorFlow's fine grid."""
    if not (isinstance(confidence, (int, float)) and 0.0 < confidence < 1.0):
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    spec = ReleaseSpec.make(RANK_SUM_COMPARISON, epsilon=epsilon, seed=seed)
    if num_clients is None:
        if secure:
            raise ValueError("secure=True needs num_clients (the clients that hold shares)")
        mechanism = spec.build()
        exact = comparison_statistics(labels, scores_a, scores_b)
        noisy = mechanism.release(exact, seed=spec.seed_for("central"))
        return finish_release(spec, noisy, num_examples=int(labels.size), confidence=confidence)
    from dpauc_tf.mechanisms.comparison_rank_sum import RankSumComparison
    from dpauc_tf.mechanisms.multiclass_release import _client_ids

    if isinstance(num_clients, bool) or not isinstance(num_clients, int) or num_clients < 1:
        raise ValueError(f"num_clients must be an int >= 1, got {num_clients!r}")
    for name, scores in (("scores_a", scores_a), ("scores_b", scores_b)):
        if np.any((scores < 0) | (scores > 1)):
            raise ValueError(f"{name}: clients count on TensorFlow's grid: scores in [0, 1]")
    mechanism = RankSumComparison(epsilon, num_clients=num_clients, secure=secure)
    ids = _client_ids(client_ids, num_clients, labels.size, seed)
    release = comparison_rounds(
        mechanism,
        labels.astype(np.float64),
        scores_a,
        scores_b,
        [ids == k for k in range(num_clients)],
        lambda k: spec.seed_for("client", k),
    )
    return finish_release(
        None,
        release,
        num_examples=int(labels.size),
        confidence=confidence,
        mechanism=mechanism,
    )


def comparison_rounds(
    mechanism,
    labels: np.ndarray,
    scores_a: np.ndarray,
    scores_b: np.ndarray,
    clients: Sequence[np.ndarray],
    seed_for,
    repeats: int = 1,
) -> dict:
    """The federated rank-sum comparison's rounds over simulated clients (``clients``: each
    one's rows, a boolean mask; ``seed_for(k)``: client ``k``'s seed): round one sums both
    models' bucket totals on TensorFlow's fine grid (label-free), then every client's
    largest ``|d|`` with the global ranks gives the sensitivity, round two sums the four
    statistics with every client's noise; the server's release of
    [`RankSumComparison.finish`][dpauc_tf.mechanisms.comparison_rank_sum.RankSumComparison.finish]
    (``[repeats]`` releases; ``labels`` may be weights, as the audit's negative control)."""
    from dpauc_tf.mechanisms.rank_sum import RankSum

    grid = RankSum(epsilon=1.0).count_thresholds(None)
    bucket_a, bucket_b = grid.bucketize_numpy(scores_a), grid.bucketize_numpy(scores_b)
    # round one: both models' bucket totals (label-free; a secure sum)
    totals = sum(
        mechanism.round_one_report(bucket_a[rows], bucket_b[rows], grid.num_buckets)
        for rows in clients
    )

    # the sensitivity: every client's largest |d| with the global ranks (label-free)
    def largest_difference(rows) -> float:
        rank_a, rank_b = mechanism.client_ranks(bucket_a[rows], bucket_b[rows], totals)
        return float(np.abs(rank_b - rank_a).max(initial=0.0))

    sensitivity = max(largest_difference(rows) for rows in clients)
    summed = None
    for k, rows in enumerate(clients):
        report = mechanism.round_two_report(
            labels[rows],
            bucket_a[rows],
            bucket_b[rows],
            totals,
            sensitivity,
            seed=seed_for(k),
            repeats=repeats,
        )
        summed = report if summed is None else {key: summed[key] + report[key] for key in summed}
    return mechanism.finish(summed, totals, sensitivity)
