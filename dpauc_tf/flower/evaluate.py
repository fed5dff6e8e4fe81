"""``evaluate``: one federated DP-AUC evaluation on Flower's simulation engine (Ray, local).

Every client runs [`dpauc_tf.flower.client.client_report`][] in a Flower ``ClientApp``;
the ``ServerApp`` (`dpauc_tf.flower.server`) sums the reports, through SecAgg+ for the
secure mechanisms, and computes the curve. The simulation runs on this machine only: Ray
is started on the loopback address, without its dashboard, and Flower's telemetry is off.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from dpauc_tf.core.defaults import DEFAULT_NUM_THRESHOLDS
from dpauc_tf.core.extras import install_hint
from dpauc_tf.core.vocabulary import Vocabulary
from dpauc_tf.flower.client import make_client_app
from dpauc_tf.flower.rank_sum import two_exchanges
from dpauc_tf.flower.secagg import SecAggSettings
from dpauc_tf.flower.server import RoundLog
from dpauc_tf.flower.strategy import RoundDetails, evaluate_round, wait_for_nodes
from dpauc_tf.mechanisms.release import AUCResult, ReleaseSpec


class FlowerEngine(Vocabulary):
    """Where a Flower evaluation runs (``engine=``): Flower's simulation engine (Ray) or in
    this process, without Ray."""

    SIMULATION = "simulation"
    IN_PROCESS = "in-process"

    @classmethod
    def argument(cls) -> str:
        return "engine"


# Seconds the server waits for the clients' replies in each exchange of the round (the fit,
# and each SecAgg+ stage). Generous: a loaded 2-core runner starts Ray workers and imports
# TensorFlow in each; a client that does not answer in time is left out (and named).
DEFAULT_ROUND_TIMEOUT = 600.0
INSTALL_HINT = (
    f"the flower backend needs Flower with its simulation engine: {install_hint('flower')}"
)


def require_flower() -> None:
    """Imports Flower and Ray, or raises ``ImportError`` with one line naming the extra."""
    os.environ["FLWR_TELEMETRY_ENABLED"] = "0"  # nothing leaves the machine
    try:
        import flwr  # noqa: F401
        import flwr.supercore.telemetry as telemetry
        import ray  # noqa: F401
    except ImportError:
        raise ImportError(INSTALL_HINT) from None
    telemetry.FLWR_TELEMETRY_ENABLED = "0"  # also when Flower was imported before


def _checked_clients(client_data: Sequence) -> list[tuple[np.ndarray, np.ndarray]]:
    from dpauc_tf.io.scores import ScoreSet

    clients = []
    for index, item in enumerate(client_data):
        if not (isinstance(item, (tuple, list)) and len(item) == 2):
            raise TypeError(f"client {index}: expected a (scores, labels) pair")
        scores = np.asarray(item[0], np.float64).ravel()
        labels = np.asarray(item[1], np.float64).ravel()
        if scores.size != labels.size:
            raise ValueError(f"client {index}: {scores.size} scores but {labels.size} labels")
        if scores.size:
            ScoreSet.checked(labels, scores, source=f"client {index}")
        clients.append((scores, labels))
    return clients


def evaluate(
    client_data: Sequence,
    *,
    mechanism: str | None = None,
    epsilon: float | None,
    num_thresholds: int = DEFAULT_NUM_THRESHOLDS,
    delta: float | None = None,
    threshold_grid: str | Sequence[float] = "tf",
    seed: int | None = None,
    repeats: int = 1,
    noise_family: str | None = None,
    secure_shares: int | None = None,
    vanishing_clients: Iterable[int] = (),
    lost_between_exchanges: Iterable[int] = (),
    num_shares: int | float | None = None,
    reconstruction_threshold: int | float | None = None,
    observe_replies: Callable[[Any], None] | None = None,
    engine: str = "simulation",
    mechanism_options: Mapping[str, Any] | None = None,
    round_timeout: float | None = DEFAULT_ROUND_TIMEOUT,
) -> AUCResult:
    """Federated, label-DP AUC and ROC of precomputed scores on Flower's simulation engine.

    Args:
      client_data: one ``(scores, labels)`` pair per client (scores in [0, 1], labels 0/1;
        a client may be empty). Client ``k`` is Flower's ``partition-id`` ``k``.
      mechanism: a registered name with ``federated=True``
        (``dpauc_tf.list_mechanisms(federated=True)``); secure ones run through SecAgg+
        (``secure-rank-sum`` in two exchanges: `dpauc_tf.flower.rank_sum`). ``None``: the
        registry's default for a secure deployment (SecAgg+; a federated one for one
        client), through the one ``ReleaseSpec.make``.
      epsilon: label-DP budget of one release; ``None`` = no noise (NOT private).
      num_thresholds: as for the other backends.
      threshold_grid: as for the other backends.
      delta: as for the other backends.
      noise_family: as for the other backends.
      seed: ``None``: every client draws its own seed from the OS; an int derives every
        client's seed from it (reproducible simulation). Seeds stay on the clients.
      repeats: ``R`` independent releases in the same round (each client reports ``R``
        noisy copies of its counts; they compose: each is one release).
      secure_shares: reports the secure mechanisms' noise shares are sized for (default:
        every client). Fewer reporting ones give the (larger) achieved epsilon.
      vanishing_clients: indices of clients that drop out mid-round (secure mechanisms:
        after SecAgg+'s key sharing, before sending their masked vector; ``secure-rank-sum``:
        in its first exchange).
      lost_between_exchanges: indices of clients that answer ``secure-rank-sum``'s first
        exchange and drop out of its second (the round is then refused, in one line).
      num_shares: SecAgg+'s neighbourhood size ``k`` (odd, or the number of clients;
        `SecAggSettings`; a float is a fraction, as in ``SecAggPlusWorkflow``). Default:
        ``k = 2 ceil(log2 K) + 1`` (all clients when that is not fewer); see
        ``docs/flower.md`` for the trade-off.
      reconstruction_threshold: the shares ``t`` that rebuild a client's secret (default
        ``t = k // 2 + 1``; a float is a fraction).
      observe_replies: called with every message the server receives (an audit hook).
      mechanism_options: further options of the mechanism's constructor (e.g.
        ``{"positive_rate": 0.25, "estimator": "mann-whitney-smooth"}``); they reach every
        client with the mechanism.
      round_timeout: seconds the server waits for the clients' replies in each exchange
        (the fit, each SecAgg+ stage; default `DEFAULT_ROUND_TIMEOUT`; ``None``: no
        limit). Clients that do not answer in time are left out, as dropouts, and named in
        ``result.round_report.unanswered`` (and in the error when no report arrives).
      engine: ``"simulation"`` (Flower's simulation engine, ``run_simulation`` on local
        Ray) or ``"in-process"`` (the same apps through `LocalGrid`,
        no Ray: fast start, for tests and small machines).

    Returns:
      The [`AUCResult`][] of the reports that arrived; its ``round_report``
      ([`FlowerRoundReport`][dpauc_tf.flower.strategy.FlowerRoundReport]) is what the server
      saw of the round (SecAgg+'s settings, the unmasked groups, who did not answer or failed).

    Raises:
      ImportError: Flower or Ray missing (one line naming ``dpauc-tf[flower]``).
      ValueError: a mechanism that cannot run federated, bad client data (naming the
        client), fewer than 2 clients for a secure mechanism, or no report arriving (saying
        whether it was a timeout and which clients did not answer or failed).
    """
    require_flower()
    from dpauc_tf.mechanisms.arguments import ReleaseArguments
    from dpauc_tf.mechanisms.laws import Deployment

    spec = ReleaseArguments.of(locals()).spec(  # the one spec of this evaluation
        Deployment.SECURE if len(client_data) >= 2 else Deployment.FEDERATED,
        entry="dpauc_tf.flower.evaluate",
        shares_set_by="secure_shares= (default: every client)",
        family=noise_family,
    )
    return evaluate_spec(
        spec,
        client_data,
        repeats=repeats,
        secure_shares=secure_shares,
        vanishing_clients=vanishing_clients,
        lost_between_exchanges=lost_between_exchanges,
        num_shares=num_shares,
        reconstruction_threshold=reconstruction_threshold,
        observe_replies=observe_replies,
        engine=engine,
        round_timeout=round_timeout,
    )


def evaluate_spec(
    spec: ReleaseSpec,
    client_data: Sequence,
    *,
    repeats: int = 1,
    secure_shares: int | None = None,
    vanishing_clients: Iterable[int] = (),
    lost_between_exchanges: Iterable[int] = (),
    num_shares: int | float | None = None,
    reconstruction_threshold: int | float | None = None,
    observe_replies: Callable[[Any], None] | None = None,
    engine: str = "simulation",
    round_timeout: float | None = DEFAULT_ROUND_TIMEOUT,
    confidence: float | None = None,
    ci_target: str = "population",
) -> AUCResult:
    """[`evaluate`][] of a built spec (its mechanism, grid, options and ``seed``): the
    entry of ``dpauc_tf.backends.flower`` and of [`evaluate`][] itself, which builds the one
    spec; ``confidence``: the release's own interval too (``finish_release``'s); the other
    arguments as for [`evaluate`][]."""
    require_flower()
    engine = FlowerEngine(engine)
    round_timeout = checked_round_timeout(round_timeout)
    clients = _checked_clients(client_data)
    num_clients = len(clients)
    if num_clients < 1:
        raise ValueError("need at least one client")
    if isinstance(repeats, bool) or int(repeats) != repeats or repeats < 1:
        raise ValueError(f"repeats must be a positive integer, got {repeats!r}")
    vanishing = _client_indices(vanishing_clients, num_clients, "vanishing_clients")
    lost = _client_indices(lost_between_exchanges, num_clients, "lost_between_exchanges")
    if not spec.capabilities.federated or spec.capabilities.transforms_data:
        raise ValueError(
            f"mechanism {spec.mechanism!r} cannot run on Flower (dpauc_tf.flower.evaluate): its "
            "client step is not a release of bucket counts"
        )
    if lost and not two_exchanges(spec):
        raise ValueError("lost_between_exchanges: secure-rank-sum only (two exchanges)")
    return run_round(
        spec,
        clients,
        seed=spec.seed,
        repeats=int(repeats),
        vanishing=vanishing,
        lost_between_exchanges=lost,
        secure_shares=secure_shares,
        num_shares=num_shares,
        reconstruction_threshold=reconstruction_threshold,
        observe_replies=observe_replies,
        engine=engine,
        round_timeout=round_timeout,
        confidence=confidence,
        ci_target=ci_target,
    )


def _client_indices(values: Iterable[int], num_clients: int, name: str) -> frozenset:
    indices = frozenset(int(k) for k in values)
    if any(not 0 <= k < num_clients for k in indices):
        raise ValueError(f"{name} must be client indices in [0, {num_clients})")
    return indices


def run_round(
    spec,
    clients: Sequence,
    *,
    seed: int | None,
    repeats: int,
    vanishing: frozenset,
    lost_between_exchanges: frozenset = frozenset(),
    secure_shares: int | None,
    num_shares,
    reconstruction_threshold,
    observe_replies,
    engine: str,
    round_timeout: float | None,
    confidence: float | None = None,
    ci_target: str = "population",
) -> AUCResult:
    """One round of ``spec`` (a ``ReleaseSpec``, binary or one-vs-rest) over ``clients``
    (checked ``(scores, labels)`` pairs) on the chosen engine: the part [`evaluate`][] and
    [`dpauc_tf.flower.multiclass.evaluate_multiclass`][] share."""
    num_clients = len(clients)
    secure = spec.capabilities.secure
    if secure and num_clients < 2:
        raise ValueError("SecAgg+ needs at least 2 clients; use a local mechanism for one")
    if vanishing and not secure:
        raise ValueError("vanishing_clients simulates SecAgg+ dropouts: secure mechanisms only")
    if not secure and (num_shares is not None or reconstruction_threshold is not None):
        raise ValueError(
            "num_shares and reconstruction_threshold set SecAgg+: secure mechanisms only"
        )
    if secure_shares is not None and int(secure_shares) != num_clients:
        raise ValueError(
            "secure_shares: the noise shares are sized for every node asked to report; "
            "fewer reporting ones give the (larger) achieved epsilon (use vanishing_clients)"
        )
    settings = (
        SecAggSettings.for_clients(num_clients, num_shares, reconstruction_threshold)
        if secure
        else None
    )
    details = RoundDetails(RoundLog(num_clients=num_clients, timeout=round_timeout))
    outcome: list = []
    errors: list[BaseException] = []

    from flwr.serverapp import ServerApp

    server_app = ServerApp()

    @server_app.main()
    def main(grid, context) -> None:
        del context
        try:
            outcome.append(
                evaluate_round(
                    grid,
                    spec,
                    node_ids=wait_for_nodes(grid, num_clients),
                    repeats=repeats,
                    secagg=settings,
                    timeout=round_timeout,
                    observe_replies=observe_replies,
                    details=details,
                    confidence=confidence,
                    ci_target=ci_target,
                )
            )
        except ValueError as error:  # reported by the caller, in one line
            errors.append(error)

    client_app = make_client_app(
        clients,
        seed=seed,
        vanishing_clients=vanishing,
        lost_between_exchanges=lost_between_exchanges,
    )
    if engine == "simulation":
        run_on_simulation_engine(server_app, client_app, num_clients)
    else:
        from dpauc_tf.flower.local import run_in_process

        run_in_process(server_app, client_app, num_clients)
    if errors:
        raise ValueError(str(errors[0]))
    if not outcome:
        raise ValueError(
            "no report reached the server: " + (details.log.describe() or "the round did not run")
        )
    return outcome[0]  # its round_report: what the server saw (FlowerRoundReport)


def checked_round_timeout(value) -> float | None:
    """``round_timeout`` as seconds (``None``: no limit); one line for anything else."""
    import math

    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"round_timeout must be a number of seconds or None, got {value!r}")
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"round_timeout must be a positive number of seconds, got {value!r}")
    return float(value)


def run_on_simulation_engine(server_app, client_app, num_clients: int) -> None:
    """``flwr.simulation.run_simulation`` on local Ray (loopback, no dashboard, quiet).

    Ray is shut down when the run ends (Flower's backend does it), so no worker outlives it.
    """
    require_flower()
    import logging

    from flwr.simulation import run_simulation

    backend_config = {
        "client_resources": {"num_cpus": 1, "num_gpus": 0.0},
        "init_args": {
            "include_dashboard": False,
            "_node_ip_address": "127.0.0.1",
            "logging_level": logging.ERROR,
            "log_to_driver": False,
        },
    }
    flwr_logger = logging.getLogger("flwr")
    level = flwr_logger.level
    flwr_logger.setLevel(logging.WARNING)
    quiet = _RunSimulationDeprecation()
    flwr_logger.addFilter(quiet)
    try:
        run_simulation(
            server_app=server_app,
            client_app=client_app,
            num_supernodes=num_clients,
            backend_config=backend_config,
        )
    finally:
        flwr_logger.removeFilter(quiet)
        flwr_logger.setLevel(level)


class _RunSimulationDeprecation(logging.Filter):
    """Drops Flower's "DEPRECATED FEATURE: run_simulation ... use flwr run" record (a
    standard ``logging`` filter on Flower's logger, for the duration of the run only):
    ``run_simulation`` is the only in-process entry Flower 1.42 has for app objects (a
    ``flwr run`` app takes a directory), so the advice does not apply to this caller."""

    def filter(self, record: logging.LogRecord) -> bool:
        text = str(record.msg)
        return not (text.startswith("DEPRECATED FEATURE") and "run_simulation" in str(record.args))
