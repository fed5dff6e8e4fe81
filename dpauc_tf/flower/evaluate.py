"""``evaluate``: one federated DP-AUC evaluation on Flower's simulation engine (Ray, local).

Every client runs [`dpauc_tf.flower.client.client_report`][] in a Flower ``ClientApp``;
the ``ServerApp`` ([`dpauc_tf.flower.server`][]) sums the reports, through SecAgg+ for the
secure mechanisms, and computes the curve. The simulation runs on this machine only: Ray
is started on the loopback address, without its dashboard, and Flower's telemetry is off.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from dpauc_tf.core.defaults import DEFAULT_NUM_THRESHOLDS
from dpauc_tf.flower.client import ClientSetup, make_client_app
from dpauc_tf.flower.encoding import LimbLayout
from dpauc_tf.flower.secagg import SecAggSettings, unmasked_groups
from dpauc_tf.flower.server import (
    RoundLog,
    SummedReports,
    make_secagg_workflow,
    make_server_app,
    make_strategy,
)

ENGINES = ("simulation", "in-process")
# Seconds the server waits for the clients' replies in each exchange of the round (the fit,
# and each SecAgg+ stage). Generous: a loaded 2-core runner starts Ray workers and imports
# TensorFlow in each; a client that does not answer in time is left out (and named).
DEFAULT_ROUND_TIMEOUT = 600.0
INSTALL_HINT = (
    'the flower backend needs Flower with its simulation engine: pip install "dpauc-tf[flower]"'
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


@dataclasses.dataclass(frozen=True)
class FlowerEvaluation:
    """What the server learns from one Flower evaluation (``R`` repeated releases).

    Attributes:
      aucs: the AUC estimate of every repeat ``[R]`` (NaN where undefined).
      fpr: the ROC curve of every repeat ``[R, T]`` (sorted by FPR, then TPR).
      tpr: as ``fpr``.
      mechanism: the mechanism's name.
      epsilon: the guarantee of one release, achieved by the reports that arrived.
      delta: as ``epsilon``.
      statement: its [`PrivacyStatement`][dpauc_tf.privacy.statement.PrivacyStatement].
      num_clients: clients asked to report.
      num_reporting: reports in the sum.
      release: the server's summed release (NumPy arrays with the leading ``R`` axis).
      secagg: SecAgg+'s settings (secure mechanisms; ``None`` otherwise).
      unanswered: clients (indices) that did not answer within ``round_timeout``.
      failed: clients whose reply was an error (index -> reason).
      unmasked_groups: sizes of the groups of reporting clients whose sums the server can
        unmask: one group (all of them) unless dropouts split SecAgg+'s neighbourhoods;
        the epsilon is then the smallest group's ([`dpauc_tf.flower.secagg`][]).
    """

    aucs: np.ndarray
    fpr: np.ndarray
    tpr: np.ndarray
    mechanism: str
    epsilon: float
    delta: float
    statement: Any
    num_clients: int
    num_reporting: int
    release: dict[str, np.ndarray]
    secagg: SecAggSettings | None = None
    unmasked_groups: tuple[int, ...] = ()
    unanswered: tuple[int, ...] = ()
    failed: Mapping[Any, str] = dataclasses.field(default_factory=dict)

    @property
    def auc(self) -> float:
        """The first repeat's AUC."""
        return float(self.aucs[0])


def _checked_clients(client_data: Sequence) -> list[tuple[np.ndarray, np.ndarray]]:
    from dpauc_tf.experiments.score_files import ScoreSet

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


def client_seeds(seed: int | None, num_clients: int) -> list | None:
    """Every simulated client's own seed, derived from ``seed`` (``None``: each client
    draws from the OS)."""
    from dpauc_tf.noise.seeds import make_seed, split_seed

    if seed is None:
        return None
    return split_seed(make_seed(seed), num_clients).numpy().tolist()


def evaluate(
    client_data: Sequence,
    *,
    mechanism: str = "histogram",
    epsilon: float | None,
    num_thresholds: int = DEFAULT_NUM_THRESHOLDS,
    delta: float | None = None,
    threshold_grid: str | Sequence[float] = "tf",
    seed: int | None = None,
    repeats: int = 1,
    noise_family: str | None = None,
    secure_shares: int | None = None,
    vanishing_clients: Iterable[int] = (),
    num_shares: int | float | None = None,
    reconstruction_threshold: int | float | None = None,
    observe_replies: Callable[[Any], None] | None = None,
    engine: str = "simulation",
    mechanism_options: Mapping[str, Any] | None = None,
    round_timeout: float | None = DEFAULT_ROUND_TIMEOUT,
) -> FlowerEvaluation:
    """Federated, label-DP AUC and ROC of precomputed scores on Flower's simulation engine.

    Args:
      client_data: one ``(scores, labels)`` pair per client (scores in [0, 1], labels 0/1;
        a client may be empty). Client ``k`` is Flower's ``partition-id`` ``k``.
      mechanism: a registered name with ``federated=True``
        (``dpauc_tf.list_mechanisms(federated=True)``); secure ones run through SecAgg+.
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
        after SecAgg+'s key sharing, before sending their masked vector).
      num_shares: SecAgg+'s neighbourhood size ``k`` (odd, or the number of clients);
        see ``reconstruction_threshold``.
      reconstruction_threshold: the shares ``t`` that rebuild a client's secret
        ([`SecAggSettings`][]; floats are fractions, as in
        ``SecAggPlusWorkflow``). Default: ``k = 2 ceil(log2 K) + 1`` (all clients when that
        is not fewer) and ``t = k // 2 + 1``; see ``docs/flower.md`` for the trade-off.
      observe_replies: called with every message the server receives (an audit hook).
      mechanism_options: further options of the mechanism's constructor (e.g.
        ``{"positive_rate": 0.25, "estimator": "mann-whitney-smooth"}``); they reach every
        client with the mechanism.
      round_timeout: seconds the server waits for the clients' replies in each exchange
        (the fit, each SecAgg+ stage; default `DEFAULT_ROUND_TIMEOUT`; ``None``: no
        limit). Clients that do not answer in time are left out, as dropouts, and named in
        ``unanswered`` (and in the error when no report arrives).
      engine: ``"simulation"`` (Flower's simulation engine, ``run_simulation`` on local
        Ray) or ``"in-process"`` (the same apps through [`LocalGrid`][dpauc_tf.flower.local.LocalGrid],
        no Ray: fast start, for tests and small machines).

    Raises:
      ImportError: Flower or Ray missing (one line naming ``dpauc-tf[flower]``).
      ValueError: a mechanism that cannot run federated, bad client data (naming the
        client), fewer than 2 clients for a secure mechanism, or no report arriving (saying
        whether it was a timeout and which clients did not answer or failed).
    """
    require_flower()
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES}, got {engine!r}")
    round_timeout = checked_round_timeout(round_timeout)
    from dpauc_tf.core.curve import roc_from_confusion
    from dpauc_tf.core.thresholds import Thresholds
    from dpauc_tf.mechanisms.registry import (
        check_mechanism_options,
        get_mechanism,
        mechanism_spec,
    )

    clients = _checked_clients(client_data)
    num_clients = len(clients)
    if num_clients < 1:
        raise ValueError("need at least one client")
    if isinstance(repeats, bool) or int(repeats) != repeats or repeats < 1:
        raise ValueError(f"repeats must be a positive integer, got {repeats!r}")
    vanishing = frozenset(int(k) for k in vanishing_clients)
    if any(not 0 <= k < num_clients for k in vanishing):
        raise ValueError(f"vanishing_clients must be client indices in [0, {num_clients})")
    thresholds = Thresholds.make(num_thresholds, threshold_grid)
    options = {
        "epsilon": epsilon,
        "num_thresholds": thresholds.num_thresholds,
        "delta": delta,
        "num_clients": num_clients if secure_shares is None else int(secure_shares),
    }
    options.update(
        check_mechanism_options(
            mechanism,
            mechanism_options,
            entry="dpauc_tf.flower.evaluate",
            num_clients="secure_shares= (default: every client)",
        )
    )
    if noise_family is not None and epsilon is not None:
        options["family"] = noise_family
    capabilities = mechanism_spec(mechanism).capabilities
    if not capabilities.federated or capabilities.transforms_data:
        raise ValueError(
            f"mechanism {mechanism!r} cannot run on Flower (dpauc_tf.flower.evaluate): its "
            "client step is not a release of bucket counts"
        )
    count_mechanism = get_mechanism(mechanism, **options)
    secure = count_mechanism.capabilities.secure
    if secure and num_clients < 2:
        raise ValueError("SecAgg+ needs at least 2 clients; use a local mechanism for one")
    if vanishing and not secure:
        raise ValueError("vanishing_clients simulates SecAgg+ dropouts: secure mechanisms only")
    if not secure and (num_shares is not None or reconstruction_threshold is not None):
        raise ValueError(
            "num_shares and reconstruction_threshold set SecAgg+: secure mechanisms only"
        )
    settings = (
        SecAggSettings.for_clients(num_clients, num_shares, reconstruction_threshold)
        if secure
        else None
    )

    seeds = client_seeds(seed, num_clients)
    # an explicit list goes to the clients as given: they add the two ends as Keras does
    grid = threshold_grid if isinstance(threshold_grid, str) else [float(v) for v in threshold_grid]
    setup = ClientSetup(
        mechanism=count_mechanism.name,
        mechanism_options={
            **options,
            **{k: v for k, v in count_mechanism.options().items() if k != "num_clients"},
        },
        num_thresholds=int(num_thresholds),
        threshold_grid=grid,
        client_data=clients,
        seeds=seeds,
        repeats=int(repeats),
        vanishing_clients=vanishing,
    )
    zeros = np.zeros(thresholds.num_buckets)
    shapes = {
        key: value.shape
        for key, value in count_mechanism.release(zeros, zeros, seed=0, repeats=repeats).items()
    }
    layout = LimbLayout.for_clients(num_clients) if secure else None
    outcome: list[SummedReports] = []
    strategy = make_strategy(
        num_clients=num_clients, report_shapes=shapes, layout=layout, on_result=outcome.append
    )
    graphs: list[tuple[dict, set]] = []
    secagg = None
    if secure:
        secagg = make_secagg_workflow(
            layout,
            settings,
            on_graph=lambda neighbours, active: graphs.append((neighbours, active)),
            timeout=round_timeout,
        )
    round_log = RoundLog(num_clients=num_clients, timeout=round_timeout)
    server_app = make_server_app(
        strategy, secagg=secagg, observe_replies=observe_replies, round_log=round_log
    )
    client_app = make_client_app(setup, secure=secure)
    if engine == "simulation":
        run_on_simulation_engine(server_app, client_app, num_clients)
    else:
        from dpauc_tf.flower.local import run_in_process

        run_in_process(server_app, client_app, num_clients)
    if not outcome:
        raise ValueError(_no_report_reason(round_log, settings))
    summed = outcome[0]

    import tensorflow as tf

    aggregate = count_mechanism.aggregate()
    release = {key: tf.constant(value) for key, value in summed.release.items()}
    roc = roc_from_confusion(aggregate.to_confusion(release))
    aucs = np.atleast_1d(np.asarray(aggregate.estimate_auc(release), np.float64))
    groups = (summed.num_reporting,) if not graphs else tuple(unmasked_groups(*graphs[0]))
    statement = _statement(count_mechanism, summed.num_reporting, groups)
    return FlowerEvaluation(
        aucs=aucs,
        fpr=np.atleast_2d(roc.fpr.numpy()),
        tpr=np.atleast_2d(roc.tpr.numpy()),
        mechanism=count_mechanism.name,
        epsilon=float(statement.epsilon),
        delta=float(statement.delta),
        statement=statement,
        num_clients=num_clients,
        num_reporting=summed.num_reporting,
        release=summed.release,
        secagg=settings,
        unmasked_groups=groups,
        unanswered=tuple(round_log.unanswered),
        failed=round_log.failed,
    )


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


def _no_report_reason(round_log: RoundLog, settings: SecAggSettings | None) -> str:
    """Why no report reached the server, in one line: a timeout (and which clients did not
    answer), failing clients, or SecAgg+'s halt."""
    text = "no report reached the server"
    details = round_log.describe()
    if details:
        text += f": {details}"
    if settings is not None:
        text += (
            f" (SecAgg+ halts when fewer than its reconstruction threshold "
            f"{settings.reconstruction_threshold} of a neighbourhood stay)"
        )
    return text


def _statement(mechanism, num_reporting: int, groups: tuple[int, ...]):
    """The epsilon achieved by the reports that arrived; when dropouts split SecAgg+'s
    neighbourhoods, by the smallest group the server can unmask on its own."""
    from dpauc_tf.mechanisms.base import achieved_statement

    if len(groups) <= 1:
        return achieved_statement(mechanism, num_reporting)
    smallest = min(groups)
    statement = achieved_statement(mechanism, smallest)
    return dataclasses.replace(
        statement,
        noise=f"{mechanism.statement().noise}; dropouts split SecAgg+'s neighbourhoods into "
        f"groups of {sorted(groups, reverse=True)} clients whose sums the server can unmask "
        f"separately, so epsilon is the one achieved by the smallest group's {smallest} shares: "
        f"{statement.epsilon:g}",
    )


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
    try:
        run_simulation(
            server_app=server_app,
            client_app=client_app,
            num_supernodes=num_clients,
            backend_config=backend_config,
        )
    finally:
        flwr_logger.setLevel(level)
