"""``evaluate_multiclass``: federated one-vs-rest DP-AUC in TFF, on the multi-class release path.

The same path as the simulate backend
([`dpauc_tf.mechanisms.multiclass_release.evaluate_multiclass`][]): a
[`ReleaseSpec`][dpauc_tf.mechanisms.release.ReleaseSpec] with ``num_classes`` builds the
[`OneVsRest`][] mechanism for the clients; in one TFF
round every client counts its ``[C, T + 1]`` one-vs-rest histograms and releases them through
the class mechanism (local noise, or one integer noise share for the secure mechanisms, summed
by ``tff.federated_secure_sum_bitwidth``); the server adds the reports up and
[`finish_release`][dpauc_tf.mechanisms.release.finish_release] turns the sum
into one [`AUCResult`][dpauc_tf.mechanisms.release.AUCResult] with a class axis.
Client ``k``'s seed of repeat ``r`` is ``spec.seed_for("tff", r, k)``.

The one-vs-rest rank sums (``rank-sum``, ``secure-rank-sum``) need the ranks first: they run
in two rounds (``evaluate_rank_sums``, the builders of ``dpauc_tf.federated.rank_sum``).
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from dpauc_tf.core.counts import bucket_counts
from dpauc_tf.core.defaults import DEFAULT_NUM_THRESHOLDS
from dpauc_tf.core.thresholds import Thresholds
from dpauc_tf.federated import computations
from dpauc_tf.federated.evaluate import (
    DEFAULT_COHORT_SIZE,
    SEED_KEY,
    _cohorts,
    _expected_count,
    install_secure_sum_context,
)
from dpauc_tf.federated.rank_sum import (
    build_round_one,
    build_round_two,
    run_round_one,
    run_round_two,
)
from dpauc_tf.mechanisms.arguments import ReleaseArguments
from dpauc_tf.mechanisms.laws import Deployment
from dpauc_tf.mechanisms.multiclass import OneVsRest, check_client_data
from dpauc_tf.mechanisms.multiclass_rank_sum import OneVsRestRankSum
from dpauc_tf.mechanisms.registry import require
from dpauc_tf.mechanisms.release import AUCResult, ReleaseSpec, check_repeats, finish_release
from dpauc_tf.mechanisms.secure_rank_sum import TFF_MAX_BITWIDTH

COUNT_DTYPE = computations.COUNT_DTYPE


def client_arrays_type(num_classes: int) -> tff.Type:
    """One client's data: ``<score=float32[?, C], label=float32[?, C]>`` (labels one-hot)."""
    return tff.StructWithPythonType(
        [
            ("score", tff.TensorType(np.float32, [None, num_classes])),
            ("label", tff.TensorType(np.float32, [None, num_classes])),
        ],
        collections.OrderedDict,
    )


def client_class_counts(client_data, thresholds: Thresholds, num_classes: int, integer: bool):
    """Per-class bucket counts ``(pos, neg)`` ``[C, T + 1]`` of one client's one-hot labels and
    scores: class ``c``'s [`bucket_counts`][] of column ``c``
    (what [`one_vs_rest_counts`][dpauc_tf.mechanisms.multiclass.one_vs_rest_counts] computes;
    one call per class, as the graph-mode group-id checks would be dropped unused)."""
    pos, neg = [], []
    for c in range(num_classes):
        class_pos, class_neg = bucket_counts(
            client_data["label"][:, c],
            client_data["score"][:, c],
            thresholds,
            dtype=COUNT_DTYPE,
            integer_weights=integer,
        )
        pos.append(class_pos)
        neg.append(class_neg)
    return tf.stack(pos), tf.stack(neg)


def build_multiclass_summed_release(
    mechanism: OneVsRest,
    thresholds: Thresholds,
    *,
    secure_bitwidth: int | None = None,
) -> tff.Computation:
    """``(<score, label>@CLIENTS, int64[2]@CLIENTS) -> <release, num_reporting>@SERVER``:
    every client's ``[C, T + 1]`` release of the class mechanism, summed (a secure sum of the
    integer releases with ``secure_bitwidth``)."""
    computations.check_bitwidth(secure_bitwidth)
    num_classes = mechanism.num_classes
    class_mechanism = mechanism.class_mechanism
    integer = bool(class_mechanism.capabilities.integer_counts)

    def body(client_data, seed):
        pos, neg = client_class_counts(client_data, thresholds, num_classes, integer)
        release = class_mechanism.release(pos, neg, seed=seed)
        release = collections.OrderedDict(sorted(release.items()))
        if secure_bitwidth is not None:
            release = computations.modular_from_signed(release, secure_bitwidth)
        return release

    client_release = tff.tensorflow.computation(
        body, client_arrays_type(num_classes), computations.SEED_TYPE
    )
    signed = None
    if secure_bitwidth is not None:
        signed = computations.build_signed_from_modular(
            client_release.type_signature.result, secure_bitwidth
        )

    @tff.tensorflow.computation(computations.SEED_TYPE)
    def one(seed):
        del seed
        return tf.constant(1, tf.int32)

    @tff.federated_computation(
        tff.FederatedType(client_arrays_type(num_classes), tff.CLIENTS),
        tff.FederatedType(computations.SEED_TYPE, tff.CLIENTS),
    )
    def summed_release(client_data, seeds):
        releases = tff.federated_map(client_release, (client_data, seeds))
        if signed is None:
            total = tff.federated_sum(releases)
        else:
            total = tff.federated_map(
                signed, tff.federated_secure_sum_bitwidth(releases, secure_bitwidth)
            )
        reporting = tff.federated_sum(tff.federated_map(one, seeds))
        return tff.federated_zip(collections.OrderedDict(release=total, num_reporting=reporting))

    return summed_release


_COMPUTATIONS: dict[tuple, tff.Computation] = {}


def _computation(spec: ReleaseSpec, mechanism: OneVsRest, secure_bitwidth) -> tff.Computation:
    # the seed is CLIENTS data, not part of the computation: one build for every seed
    key = (dataclasses.replace(spec, seed=None), mechanism.num_clients, secure_bitwidth)
    if key not in _COMPUTATIONS:
        _COMPUTATIONS[key] = build_multiclass_summed_release(
            mechanism, spec.thresholds, secure_bitwidth=secure_bitwidth
        )
    return _COMPUTATIONS[key]


def multiclass_client_arrays(
    item: Any, num_classes: int | None, index: int = 0, *, from_logits: bool = False
) -> collections.OrderedDict:
    """One client's ``(scores [n, C], labels)`` as the TFF input (float32 scores, one-hot
    labels), checked here in Python ([`check_client_data`][]): a one-line error naming
    client ``index``."""
    scores, one_hot = check_client_data(item, num_classes, index, from_logits=from_logits)
    return collections.OrderedDict(
        score=scores.astype(np.float32), label=one_hot.astype(np.float32)
    )


def evaluate_multiclass(
    client_data: Iterable | Callable[[], Iterable],
    *,
    epsilon: float | None,
    mechanism: str | None = None,
    num_classes: int | None = None,
    num_thresholds: int = DEFAULT_NUM_THRESHOLDS,
    delta: float | None = None,
    average: str = "macro",
    mechanism_options: Mapping[str, Any] | None = None,
    seed: int | None = None,
    repeats: int = 1,
    from_logits: bool = False,
    num_clients: int | None = None,
    secure_shares: int | None = None,
    secure_bitwidth: int = computations.DEFAULT_BITWIDTH,
    cohort_size: int = DEFAULT_COHORT_SIZE,
) -> AUCResult:
    """Federated one-vs-rest label-DP AUC of ``C``-class scores held by clients, in TFF.

    Every client counts its ``[C, T + 1]`` per-class histograms and releases them through the
    [`OneVsRest`][] mechanism built for the clients
    (local mechanisms: each report private on its own, noise of scale ``4 / epsilon`` per
    count for ``histogram``; secure ones: one share each, the sum carries one draw); the
    server sums the reports (cohort by cohort, as [`dpauc_tf.federated.evaluate`][]) and
    post-processes the sum once, adding no noise.

    Args:
      client_data: one ``(scores, labels)`` pair per client: scores ``[n, C]``
        probabilities (logits with ``from_logits``), labels class ids ``[n]`` or one-hot
        ``[n, C]``; a client may be empty. A sequence, an iterable or a callable returning
        one (read once per repeat).
      epsilon: of one release of all classes (``None``: no noise, NOT private).
      mechanism: the binary curve mechanism of every class (``histogram``,
        ``histogram-public-scores``, ``secure-histogram``, ...), or the per-class rank sums
        (``rank-sum``: local noise; ``secure-rank-sum``: noise shares; two rounds,
        ``evaluate_rank_sums``); ``None``: the registry's
        default for a one-vs-rest release by clients summed by secure aggregation
        (``Deployment.SECURE``).
      num_classes: ``C`` (default: the first client's score columns).
      num_thresholds: the grid's thresholds.
      delta: for mechanisms with one (of the whole release).
      average: the headline average (``macro``, ``weighted``, ``micro``).
      mechanism_options: the mechanism's options.
      seed: ``None`` (OS entropy) or an int (reproducible: client seeds derived from it).
      repeats: independent releases (each client releases once per repeat; they compose).
      from_logits: the scores are logits (each client applies a softmax first).
      num_clients: the number of clients, needed when ``client_data`` has no ``len()`` and
        the mechanism is secure (its shares are sized for them).
      secure_shares: reports the secure shares are sized for (default: every client);
        fewer give the (larger) achieved epsilon.
      secure_bitwidth: of the modular secure sum.
      cohort_size: clients per run of the TFF computation.

    Raises:
      ValueError: no client, scores not ``[n, C]`` (or ``C`` differing between clients),
        labels outside ``[0, C)`` or not one-hot, scores outside [0, 1], a mechanism that
        cannot release one-vs-rest counts (the message names the client or the option).

    Example (needs TFF; noise off, so it equals the central ``evaluate_multiclass``):

    ```python
    clients = [(np.array([[.7, .2, .1], [.1, .8, .1]]), [0, 1]), (np.array([[.2, .2, .6]]), [2])]
    out = evaluate_multiclass(clients, epsilon=None, num_thresholds=50)
    out.macro, out.num_reporting   # (array([1.]), 2)
    ```
    """
    repeats = check_repeats(repeats)
    if isinstance(cohort_size, bool) or not isinstance(cohort_size, int) or cohort_size < 1:
        raise ValueError(f"cohort_size must be a positive int, got {cohort_size!r}")
    clients = client_data() if callable(client_data) else client_data
    known = _expected_count(clients, num_clients)
    if repeats > 1 and not callable(client_data) and not isinstance(clients, Sequence):
        raise ValueError(
            f"repeats={repeats} reads the clients once per repeat: pass a sequence or a "
            "callable that returns the clients, not a one-pass iterable"
        )
    cohorts = _cohorts(clients, cohort_size)
    first = next(cohorts, None)
    if first is None:
        raise ValueError("need at least one client (client_data yielded none)")
    if num_classes is None:
        num_classes = multiclass_client_arrays(first[0], None, 0)["score"].shape[1]
    spec = ReleaseArguments.of(locals()).spec(Deployment.SECURE)
    secure = epsilon is not None and spec.capabilities.secure
    if secure and known is None and secure_shares is None:
        raise ValueError(
            "client_data has no len(): pass num_clients= (the secure shares are sized for them)"
        )
    shares = known if secure_shares is None else int(secure_shares)
    built = spec.build(shares)
    if isinstance(built, OneVsRestRankSum):  # per-class rank sums: two rounds
        every = [
            multiclass_client_arrays(item, num_classes, i, from_logits=from_logits)
            for i, item in enumerate([*first, *(c for cohort in cohorts for c in cohort)])
        ]
        if known is not None and len(every) != known:
            raise ValueError(f"client_data yielded {len(every)} clients, not num_clients={known}")
        return evaluate_rank_sums(
            spec,
            built,
            every,
            repeats=repeats,
            cohort_size=cohort_size,
            secure_bitwidth=secure_bitwidth,
        )
    require(built.class_mechanism, "federated")
    secure = bool(built.capabilities.secure)
    if secure:
        install_secure_sum_context()
    computation = _computation(spec, built, secure_bitwidth if secure else None)
    totals, num_seen, num_reporting, num_examples = [], 0, 0, 0.0
    for repeat in range(repeats):
        if repeat:
            cohorts = _cohorts(client_data() if callable(client_data) else clients, cohort_size)
            first = next(cohorts, None)
        total, num_seen, num_reporting, num_examples = None, 0, 0, 0.0
        for cohort in _prepend(first, cohorts):
            arrays = [
                multiclass_client_arrays(item, num_classes, num_seen + i, from_logits=from_logits)
                for i, item in enumerate(cohort)
            ]
            seeds = [
                spec.seed_for(SEED_KEY, repeat, num_seen + i).numpy() for i in range(len(cohort))
            ]
            num_seen += len(cohort)
            if known is not None and num_seen > known:
                raise ValueError(f"client_data yielded more than num_clients={known} clients")
            out = computation(arrays, seeds)
            release = {k: np.asarray(v, np.float64) for k, v in out["release"].items()}
            total = release if total is None else {k: total[k] + release[k] for k in total}
            num_reporting += int(out["num_reporting"])
            num_examples += float(sum(a["score"].shape[0] for a in arrays))
        if total is None:
            raise ValueError("need at least one client (client_data yielded none)")
        if known is not None and num_seen != known:
            raise ValueError(f"client_data yielded {num_seen} clients, not num_clients={known}")
        totals.append(total)
    joined = {key: np.stack([total[key] for total in totals]) for key in sorted(totals[0])}
    return finish_release(
        spec,
        joined,
        num_examples=num_examples,
        num_clients=num_seen,
        num_reporting=num_reporting,
        shares=shares if shares is not None else num_seen,
    )


def _prepend(first, rest):
    if first is not None:
        yield first
    yield from rest


def evaluate_rank_sums(
    spec: ReleaseSpec,
    mechanism: OneVsRestRankSum,
    arrays: Sequence[Mapping[str, Any]],
    *,
    repeats: int = 1,
    cohort_size: int = DEFAULT_COHORT_SIZE,
    secure_bitwidth: int = computations.DEFAULT_BITWIDTH,
) -> AUCResult:
    """The one-vs-rest rank sums of clients' ``arrays`` (``multiclass_client_arrays``) by the
    two rounds of ``dpauc_tf.federated.rank_sum``: round one sums every client's label-free
    column histograms ``[C, B]`` (securely for ``secure-rank-sum``, modulo
    ``2^secure_bitwidth``; in the clear for ``rank-sum``, whose clients noise their own
    reports), round two every client's
    [`round_two_report`][dpauc_tf.mechanisms.multiclass_rank_sum.OneVsRestRankSum.round_two_report]
    with the global ranks (securely modulo ``2^mechanism.report_width(n)`` for the integer
    shares); the server [`finish`][dpauc_tf.mechanisms.multiclass_rank_sum.OneVsRestRankSum.finish]es
    the sums. Round one runs once and every report carries the ``repeats`` releases (the
    ranks are the same), with client ``k``'s seed ``spec.seed_for("client", k)``: the
    simulate backend's, so a seeded run equals ``dpauc multiclass --clients``' on the same
    clients."""
    num_classes = mechanism.num_classes
    grid = spec.count_grid()
    data_type = client_arrays_type(num_classes)
    secure = bool(mechanism.capabilities.secure)
    if secure:
        install_secure_sum_context()

    def counts(client_data):
        return client_class_counts(client_data, grid, num_classes, True)

    def report(pos, neg, totals, seed):
        return mechanism.round_two_report(pos, neg, totals, seed, repeats=repeats)

    round_one = build_round_one(mechanism, data_type, counts, secure_bitwidth if secure else None)
    totals = run_round_one(round_one, arrays, cohort_size, secure_bitwidth if secure else None)
    num_examples = int(totals[0].sum())
    width = mechanism.report_width(num_examples) if secure else None
    if width is not None and width > TFF_MAX_BITWIDTH:
        raise ValueError(
            f"{mechanism.name}: {num_examples} examples need a {width}-bit secure sum in round "
            f"two, beyond TFF's {TFF_MAX_BITWIDTH}; rank-sum (local noise, summed in the clear) or "
            "the simulate backend take it"
        )
    totals_type = tff.TensorType(np.int64, [num_classes, grid.num_buckets])
    round_two = build_round_two(report, data_type, counts, totals_type, width)
    seeds = [spec.seed_for("client", k).numpy() for k in range(len(arrays))]
    summed, num_reporting = run_round_two(round_two, arrays, seeds, totals, cohort_size, width)
    return finish_release(
        spec,
        mechanism.finish(summed, totals),
        num_examples=float(num_examples),
        num_clients=len(arrays),
        num_reporting=num_reporting,
        shares=mechanism.num_clients,
        mechanism=mechanism,
    )
