"""``evaluate_multiclass``: one-vs-rest (multi-class) DP-AUC in one Flower round.

The multi-class release path on Flower's pieces: the server sends a
[`ReleaseSpec`][dpauc_tf.mechanisms.release.ReleaseSpec] with ``num_classes`` in the evaluate
message's config (`dpauc_tf.flower.records`: the binary release's JSON plus
``num_classes`` and ``average``); every client answers with
[`evaluate_reply`][] of its ``[n, C]`` scores and
class ids, which releases its ``[C, T + 1]`` class counts through the
[`OneVsRest`][dpauc_tf.mechanisms.multiclass.OneVsRest] mechanism (local noise, or one
integer share masked by SecAgg+ for the secure mechanisms); ``secure-rank-sum`` runs the
per-class rank sums ([`SecureOneVsRestRankSum`][dpauc_tf.mechanisms.multiclass_rank_sum.SecureOneVsRestRankSum])
in the binary release's two exchanges (`dpauc_tf.flower.rank_sum`: exchange one sums
the ``[C, B]`` column histograms, exchange two the per-class ``2 S_k,c``, ``P_k,c`` with
their noise shares). The server sums the reports and
[`finish_release`][dpauc_tf.mechanisms.release.finish_release] gives one
[`AUCResult`][dpauc_tf.mechanisms.release.AUCResult] with a class axis. In a Flower
app, ``num-classes`` in the run config makes `spec_from_run_config` return such a spec, and
`DPAUCStrategy` runs it in every evaluate round.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from dpauc_tf.core.defaults import DEFAULT_NUM_THRESHOLDS
from dpauc_tf.flower.evaluate import (
    DEFAULT_ROUND_TIMEOUT,
    FlowerEngine,
    checked_round_timeout,
    require_flower,
    run_round,
)
from dpauc_tf.flower.rank_sum import two_exchanges
from dpauc_tf.mechanisms.release import AUCResult


def checked_multiclass_clients(
    client_data: Sequence, num_classes: int | None
) -> tuple[list[tuple[np.ndarray, np.ndarray]], int]:
    """Every client's ``(scores [n, C], class ids [n])``, checked in the caller's process
    (one-line ``ValueError`` naming the client), and ``C``."""
    from dpauc_tf.mechanisms.multiclass import check_client_data

    clients = []
    for index, item in enumerate(client_data):
        scores, one_hot = check_client_data(item, num_classes, index)
        num_classes = scores.shape[1]
        clients.append((scores, one_hot.argmax(axis=1).astype(np.float64)))
    if not clients:
        raise ValueError("need at least one client")
    return clients, int(num_classes)


def evaluate_multiclass(
    client_data: Sequence,
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
    vanishing_clients: Iterable[int] = (),
    lost_between_exchanges: Iterable[int] = (),
    num_shares: int | float | None = None,
    reconstruction_threshold: int | float | None = None,
    observe_replies: Callable[[Any], None] | None = None,
    engine: str = "simulation",
    round_timeout: float | None = DEFAULT_ROUND_TIMEOUT,
) -> AUCResult:
    """Federated one-vs-rest label-DP AUC of ``C``-class scores in one Flower round.

    Args:
      client_data: one ``(scores, labels)`` pair per client: scores ``[n, C]`` in [0, 1],
        labels class ids ``[n]`` or one-hot ``[n, C]`` (a client may be empty). Client ``k``
        is Flower's ``partition-id`` ``k``.
      epsilon: of one release of all classes (``None``: no noise, NOT private).
      mechanism: the binary curve mechanism of every class (secure ones run through SecAgg+;
        ``None``: the registry's default for a one-vs-rest release in a secure deployment,
        a federated one for one client).
      num_classes: ``C`` (default: the first client's score columns).
      num_thresholds: the grid's thresholds.
      delta: for mechanisms with one.
      average: the headline average (``macro``, ``weighted``, ``micro``).
      mechanism_options: the mechanism's options.
      seed: ``None``: every client draws its own seed; an int derives them (reproducible).
      repeats: independent releases in the same round (they compose).
      vanishing_clients: as for [`dpauc_tf.flower.evaluate`][].
      lost_between_exchanges: as for [`dpauc_tf.flower.evaluate`][] (``secure-rank-sum``).
      num_shares: as for [`dpauc_tf.flower.evaluate`][].
      reconstruction_threshold: as for [`dpauc_tf.flower.evaluate`][].
      observe_replies: as for [`dpauc_tf.flower.evaluate`][].
      engine: ``"simulation"`` (Ray) or ``"in-process"``.
      round_timeout: as for [`dpauc_tf.flower.evaluate`][].

    Returns:
      The [`AUCResult`][dpauc_tf.mechanisms.release.AUCResult] with a class axis
      (``macro``, ``weighted``, ``micro``, ``class_aucs``, ...) and the round's
      ``round_report``.

    Raises:
      ImportError: Flower or Ray missing (one line naming the extra).
      ValueError: bad client data (naming the client), one class, a mechanism that cannot
        release one-vs-rest counts, or no report arriving.
    """
    require_flower()
    from dpauc_tf.mechanisms.arguments import ReleaseArguments
    from dpauc_tf.mechanisms.release import check_repeats

    engine = FlowerEngine(engine)
    round_timeout = checked_round_timeout(round_timeout)
    repeats = check_repeats(repeats)
    clients, num_classes = checked_multiclass_clients(client_data, num_classes)
    vanishing = frozenset(int(k) for k in vanishing_clients)
    if any(not 0 <= k < len(clients) for k in vanishing):
        raise ValueError(f"vanishing_clients must be client indices in [0, {len(clients)})")
    lost = frozenset(int(k) for k in lost_between_exchanges)
    if any(not 0 <= k < len(clients) for k in lost):
        raise ValueError(f"lost_between_exchanges must be client indices in [0, {len(clients)})")
    from dpauc_tf.mechanisms.laws import Deployment

    spec = ReleaseArguments.of(locals()).spec(  # the one spec of this evaluation
        Deployment.SECURE if len(clients) >= 2 else Deployment.FEDERATED,
        entry="dpauc_tf.flower.evaluate_multiclass",
        shares_set_by="(the noise shares are sized for every client)",
    )
    if not spec.capabilities.federated:
        rank_sums = spec.build().releases_from_summed_counts
        raise ValueError(
            f"mechanism {spec.mechanism!r} cannot run on Flower (it is not federated)"
            + (
                ": one-vs-rest rank sums over clients need the ranks of a first exchange; use "
                "mechanism='secure-rank-sum' (two exchanges under SecAgg+)"
                if rank_sums
                else ""
            )
        )
    if lost and not two_exchanges(spec):
        raise ValueError("lost_between_exchanges: secure-rank-sum only (two exchanges)")
    return run_round(
        spec,
        clients,
        seed=spec.seed,
        repeats=repeats,
        vanishing=vanishing,
        lost_between_exchanges=lost,
        secure_shares=None,
        num_shares=num_shares,
        reconstruction_threshold=reconstruction_threshold,
        observe_replies=observe_replies,
        engine=engine,
        round_timeout=round_timeout,
    )
