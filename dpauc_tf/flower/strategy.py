"""The server side on Flower: one private-AUC evaluation round, and a strategy wrapper that
runs one in every evaluate round of any Flower strategy.

`evaluate_round` sends the release's settings (`dpauc_tf.flower.records`) and
the global model to every node in an *evaluate* round, sums the reports (through SecAgg+
for the secure mechanisms: the server receives only masked vectors and unmasks their sum)
and returns the release path's [`AUCResult`][]: AUC,
curve, the epsilon achieved by the reports that arrived and the number of reporting
clients. `DPAUCStrategy` wraps a training strategy (``FedAvg``, ...) the way
Flower's DP wrappers do: training is the wrapped strategy's, every evaluate round is a
private AUC of the current global model, charged to a
[`PrivacyLedger`][dpauc_tf.privacy.ledger.PrivacyLedger] before any report is sent::

    from flwr.app import ArrayRecord, Context
    from flwr.serverapp import Grid, ServerApp
    from flwr.serverapp.strategy import FedAvg
    from dpauc_tf.flower import DPAUCStrategy, spec_from_run_config

    app = ServerApp()

    @app.main()
    def main(grid: Grid, context: Context) -> None:
        strategy = DPAUCStrategy(FedAvg(), spec_from_run_config(context.run_config))
        strategy.start(grid, ArrayRecord(my_model.get_weights()), num_rounds=3)
        for server_round, result in strategy.results.items():
            print(server_round, result.auc, result.epsilon, result.num_reporting)

The server adds no noise: it post-processes the sum ([`finish_release`][]).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from dpauc_tf.flower.encoding import LimbLayout
from dpauc_tf.flower.records import (
    ARRAYS_RECORD,
    CONFIG_RECORD,
    ReleaseSettings,
    release_config,
    report_arrays,
    unflatten_report,
)
from dpauc_tf.flower.secagg import SecAggSettings, unmasked_groups
from dpauc_tf.flower.server import (
    ObservedGrid,
    RoundLog,
    SummedReports,
    TimedGrid,
    make_legacy_summing_strategy,
    make_secagg_workflow,
)
from dpauc_tf.mechanisms.laws import Average
from dpauc_tf.mechanisms.release import AUCResult, ReleaseSpec, finish_release

if TYPE_CHECKING:  # pragma: no cover - names for the type hints only
    from flwr.app import ArrayRecord, Message
    from flwr.serverapp import Grid

DEFAULT_TIMEOUT = 600.0  # seconds the server waits for each exchange of a round


@dataclasses.dataclass(frozen=True)
class FlowerRoundReport:
    """What the server saw of one Flower round besides the release: the result's
    ``AUCResult.round_report``.

    Attributes:
      secagg: SecAgg+'s settings (secure mechanisms; ``None`` otherwise).
      unmasked_groups: sizes of the groups of reporting clients whose sums the server can
        unmask: one group (all of them) unless dropouts split SecAgg+'s neighbourhoods;
        the epsilon is then the smallest group's (`dpauc_tf.flower.secagg`).
      unanswered: clients (indices) that did not answer within the round's timeout.
      failed: clients whose reply was an error (index -> reason).

    Examples:
        >>> FlowerRoundReport(None, (3,), (1,), {}).unanswered
        (1,)
    """

    secagg: SecAggSettings | None = None
    unmasked_groups: tuple[int, ...] = ()
    unanswered: tuple[int, ...] = ()
    failed: Mapping[Any, str] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class RoundDetails:
    """What the server saw of one round besides the result (for reports and audits).

    Attributes:
      log: who answered late, not at all, or with an error ([`RoundLog`][]).
      secagg: SecAgg+'s settings (secure mechanisms) or ``None``.
      unmasked_groups: sizes of the groups of reporting clients whose sums the server can
        unmask: one group unless dropouts split SecAgg+'s neighbourhoods.
    """

    log: RoundLog
    secagg: SecAggSettings | None = None
    unmasked_groups: tuple[int, ...] = ()

    def report(self) -> FlowerRoundReport:
        """The frozen record of the round so far (the result carries it)."""
        return FlowerRoundReport(
            secagg=self.secagg,
            unmasked_groups=tuple(self.unmasked_groups),
            unanswered=tuple(self.log.unanswered),
            failed=dict(self.log.failed),
        )


def spec_from_run_config(run_config: Mapping[str, Any], *, seed: int | None = None) -> ReleaseSpec:
    """The release from a Flower app's ``[tool.flwr.app.config]`` (``context.run_config``).

    Keys: ``mechanism`` (missing: the registry's default for a secure deployment, through
    ``ReleaseArguments(epsilon).spec(Deployment.SECURE)``: the app's clients run
    SecAgg+ with `secagg_evaluate_mod`; ``secure-rank-sum`` runs two exchanges), ``epsilon`` (a number; required by every
    noisy mechanism: a missing or ``"none"`` epsilon is refused, as ``dpauc evaluate``
    refuses it; the exact AUC, NOT private, is asked for explicitly with ``mechanism =
    "none"``, which uses no epsilon), ``delta``, ``num-thresholds`` (default 200),
    ``threshold-grid`` (``"tf"`` or ``"reference"``) and ``mechanism-options`` (a JSON
    object, e.g. ``'{"estimator": "mann-whitney-smooth"}'``). Unknown names fail in one line.
    With ``num-classes`` (an int >= 2) the release is one-vs-rest: a
    [`ReleaseSpec`][] with ``num_classes`` (``average``:
    ``"macro"``, ``"weighted"`` or ``"micro"``; the ``"tf"`` grid only), and the clients
    reply with their ``[n, C]`` scores and class ids.

    Raises:
      ValueError: a noisy mechanism without an epsilon, or a bad value (one line).
    """
    from dpauc_tf.core.defaults import DEFAULT_NUM_THRESHOLDS
    from dpauc_tf.mechanisms.arguments import ReleaseArguments
    from dpauc_tf.mechanisms.laws import Deployment
    from dpauc_tf.mechanisms.registry import mechanism_spec

    mechanism = run_config.get("mechanism")
    mechanism = None if mechanism in (None, "") else str(mechanism)  # None: the default's
    private = mechanism is None or mechanism_spec(mechanism).capabilities.protects != "nothing"
    epsilon = _run_config_epsilon(run_config.get("epsilon"))
    if not private:
        epsilon = None  # mechanism "none" is the explicit exact opt-in: no epsilon is used
    elif epsilon is None:
        raise ValueError(
            f"mechanism {mechanism or 'default'!r} needs an epsilon in the run config (a "
            'number, e.g. -c "epsilon=1.0"); mechanism = "none" is the exact AUC, NOT private'
        )
    delta = run_config.get("delta")
    options = _run_config_options(run_config.get("mechanism-options", "{}"))
    num_classes = run_config.get("num-classes")
    one_vs_rest = num_classes not in (None, "none", 0)
    grid = str(run_config.get("threshold-grid", "tf"))
    if one_vs_rest and grid != "tf":
        raise ValueError('num-classes (one-vs-rest) supports threshold-grid "tf" only')
    return ReleaseArguments(
        epsilon,
        mechanism,
        num_thresholds=int(run_config.get("num-thresholds", DEFAULT_NUM_THRESHOLDS)),
        threshold_grid=grid,
        delta=None if delta in (None, "none") else float(delta),
        mechanism_options=options,
        seed=seed,
        num_classes=num_classes if one_vs_rest else None,
        average=str(run_config.get("average", "macro")) if one_vs_rest else "macro",
    ).spec(Deployment.SECURE)


def _run_config_epsilon(value: Any) -> float | None:
    """The run config's ``epsilon``: a positive number, or ``None`` (missing or ``"none"``)."""
    if value is None:
        return None
    if isinstance(value, str):
        if value.strip().lower() != "none":
            raise ValueError(f'epsilon must be a number or "none", got {value!r}')
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"epsilon must be a number, got {value!r}")
    return float(value)


def _run_config_options(value: Any) -> dict:
    """The run config's ``mechanism-options``: a JSON object (or a mapping), as a dict."""
    import json

    if value is None or value == "":
        return {}
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as error:
            raise ValueError(f"mechanism-options must be a JSON object: {error}") from None
    if not isinstance(value, Mapping):
        raise ValueError(
            f"mechanism-options must be a JSON object ({{...}}), got a {type(value).__name__}: "
            f"{value!r}"[:200]
        )
    return dict(value)


def ledger_from_run_config(run_config: Mapping[str, Any]):
    """The [`PrivacyLedger`][dpauc_tf.privacy.ledger.PrivacyLedger] of a Flower app's run
    config, every setting of the ledger reachable from it: ``privacy-budget`` (a number, or
    ``"none"``: no limit, every release still recorded), ``ledger-delta`` (the delta at which
    the budget is spent, default 0: pure epsilon; releases with a delta, e.g. the Skellam
    family's, need one), ``ledger-file`` (a path: the ledger persists across runs; ``""``:
    in memory) and ``ledger-durable`` (flush the file to disk on every record, default
    true). The data set name the strategy charges is ``ledger-dataset``
    (`DPAUCStrategy`'s ``dataset``).

    Raises:
      ValueError: a bad value (one line).
    """
    from dpauc_tf.privacy.ledger import PrivacyLedger

    budget = run_config.get("privacy-budget", "none")
    if isinstance(budget, str) and budget.strip().lower() == "none":
        budget = None
    elif isinstance(budget, bool) or not isinstance(budget, (int, float)):
        raise ValueError(f'privacy-budget must be a number or "none", got {budget!r}')
    delta = run_config.get("ledger-delta", 0.0)
    if isinstance(delta, bool) or not isinstance(delta, (int, float)):
        raise ValueError(f"ledger-delta must be a number in [0, 1), got {delta!r}")
    path = str(run_config.get("ledger-file", "") or "") or None
    durable = run_config.get("ledger-durable", True)
    if not isinstance(durable, bool):
        raise ValueError(f"ledger-durable must be true or false, got {durable!r}")
    return PrivacyLedger(
        budget=None if budget is None else float(budget),
        delta=float(delta),
        path=path,
        durable=durable,
    )


def wait_for_nodes(grid: Any, num_nodes: int, timeout: float | None = 60.0) -> list[int]:
    """The grid's node ids once at least ``num_nodes`` SuperNodes are connected (the
    simulation engine and a SuperLink register nodes while the ``ServerApp`` starts).

    Raises:
      ValueError: fewer than ``num_nodes`` connected within ``timeout`` seconds.
    """
    import time

    deadline = None if timeout is None else time.monotonic() + float(timeout)
    while True:
        nodes = sorted(int(n) for n in grid.get_node_ids())
        if len(nodes) >= num_nodes:
            return nodes
        if deadline is not None and time.monotonic() > deadline:
            raise ValueError(f"{len(nodes)} of {num_nodes} SuperNodes connected within {timeout} s")
        time.sleep(0.2)


def evaluate_round(
    grid: Grid,
    spec: ReleaseSpec,
    *,
    arrays: ArrayRecord | None = None,
    server_round: int = 1,
    repeats: int = 1,
    node_ids: Iterable[int] | None = None,
    secagg: SecAggSettings | None = None,
    timeout: float | None = DEFAULT_TIMEOUT,
    observe_replies: Callable[[Any], None] | None = None,
    details: RoundDetails | None = None,
    confidence: float | None = None,
    ci_target: str = "population",
) -> AUCResult:
    """One private-AUC evaluation of ``arrays`` (the global model) on every node.

    Args:
      grid: the ``Grid`` of the ``ServerApp``'s ``main``.
      spec: the release ([`ReleaseSpec`][]); its ``seed``
        is never sent (the clients hold their own).
      arrays: the ``ArrayRecord`` the clients evaluate (``None``: an empty one).
      server_round: the round's number (the messages' group id).
      repeats: independent releases in this round (each composes).
      node_ids: the nodes asked to report (default: all of the grid's). The secure
        mechanisms' noise shares are sized for all of them.
      secagg: SecAgg+'s neighbourhoods (secure mechanisms; default
        [`SecAggSettings.for_clients`][]).
      timeout: seconds the server waits for each exchange (``None``: no limit); clients
        that do not answer in time are left out and named in ``details.log``.
      observe_replies: called with every message the server receives (an audit hook).
      details: filled with what the server saw (`RoundDetails`).
      confidence: e.g. 0.95: the release's own interval too (``finish_release``, from the
        shares that arrived; post-processing, no privacy cost); ``None``: none.
      ci_target: ``"population"`` or ``"sample"`` (the interval's target).

    Returns:
      The [`AUCResult`][] of the reports that arrived: its
      epsilon is the one they achieve (with dropouts splitting SecAgg+'s neighbourhoods, the
      smallest unmaskable group's).

    Raises:
      ValueError: a mechanism that cannot run on Flower, fewer than 2 nodes for a secure
        one, or no report arriving (saying who did not answer or failed).
    """
    from flwr.app import ArrayRecord

    from dpauc_tf.flower.rank_sum import secure_rank_sum_round, two_exchanges

    spec.check_releases_counts("Flower")
    nodes = sorted(int(n) for n in (grid.get_node_ids() if node_ids is None else node_ids))
    if not nodes:
        raise ValueError("no node to evaluate on: the grid has no SuperNode")
    rank_sums = two_exchanges(spec)
    if not rank_sums:
        spec.check_summable(len(nodes), "Flower")
    secure = spec.capabilities.secure
    if secure and len(nodes) < 2:
        raise ValueError("SecAgg+ needs at least 2 clients; use a local mechanism for one")
    if secagg is not None and not secure:
        raise ValueError("secagg sets SecAgg+: secure mechanisms only")
    if secure and secagg is None:
        secagg = SecAggSettings.for_clients(len(nodes))
    details = details if details is not None else RoundDetails(RoundLog(len(nodes), timeout))
    details.log.num_clients, details.log.timeout = len(nodes), timeout
    details.secagg = secagg
    grid = TimedGrid(grid, details.log)
    if observe_replies is not None:
        grid = ObservedGrid(grid, observe_replies)
    arrays = ArrayRecord() if arrays is None else arrays
    if rank_sums:  # two exchanges, SecAgg+ on both (dpauc_tf.flower.rank_sum)
        result = secure_rank_sum_round(
            grid, spec, arrays=arrays, nodes=nodes, server_round=server_round,
            repeats=repeats, secagg=secagg, timeout=timeout, details=details,
            secure_sum=_secure_sum, confidence=confidence, ci_target=ci_target,
        )  # fmt: skip
        if result is None:
            raise ValueError(_no_report_reason(details.log, secagg))
        return result
    layout = LimbLayout.for_clients(len(nodes)) if secure else None
    config = release_config(spec, num_clients=len(nodes), repeats=repeats, layout=layout)
    settings = ReleaseSettings(spec, len(nodes), repeats, None if layout is None else layout.bits)
    if secure:
        summed, graphs = _secure_sum(
            grid, config, arrays, nodes, server_round, secagg, timeout,
            shapes=settings.report_shapes(), layout=layout,
        )  # fmt: skip
    else:
        summed, graphs = _plain_sum(grid, settings, config, arrays, nodes, server_round), []
    if summed is None:
        raise ValueError(_no_report_reason(details.log, secagg))
    groups = (summed.num_reporting,) if not graphs else tuple(unmasked_groups(*graphs[0]))
    details.unmasked_groups = groups
    return finish_release(
        spec,
        summed.release,
        num_examples=summed.num_examples,
        num_clients=len(nodes),
        num_reporting=summed.num_reporting,
        unmasked_groups=groups,
        round_report=details.report(),
        confidence=confidence,
        ci_target=ci_target,
    )


def _messages(content_for, nodes, server_round) -> list[Message]:
    from flwr.app import Message, MessageType

    return [
        Message(content_for(nid), dst_node_id=nid, message_type=MessageType.EVALUATE,
                group_id=str(server_round))
        for nid in nodes
    ]  # fmt: skip


def _plain_sum(grid, settings, config, arrays, nodes, server_round) -> SummedReports | None:
    from flwr.app import ConfigRecord, RecordDict

    def content(_nid):
        return RecordDict({ARRAYS_RECORD: arrays, CONFIG_RECORD: ConfigRecord(dict(config))})

    replies = list(grid.send_and_receive(_messages(content, nodes, server_round)))
    shapes = settings.report_shapes()
    total, reporting, failures = None, 0, 0
    for reply in replies:
        if reply.has_error():
            failures += 1
            continue
        (vector,) = report_arrays(reply.content)
        vector = np.asarray(vector, np.float64)
        total = vector if total is None else total + vector
        reporting += 1
    if total is None:
        return None
    release, num_examples = unflatten_report(total, shapes)
    return SummedReports(release, reporting, failures, num_examples)


class _EvaluateGrid:
    """SecAgg+'s workflow sends training messages; this grid sends them as *evaluate*
    messages (the clients' [`secagg_evaluate_mod`][] answers)."""

    def __init__(self, grid):
        self._grid = grid

    def send_and_receive(self, messages, *, timeout=None):
        from flwr.app import MessageType

        messages = list(messages)
        for message in messages:
            message.metadata.message_type = MessageType.EVALUATE
        return self._grid.send_and_receive(messages, timeout=timeout)

    def __getattr__(self, name):
        return getattr(self._grid, name)


def _secure_sum(
    grid, config, arrays, nodes, server_round, secagg, timeout, *, shapes, layout, may_unmask=None
):
    """One SecAgg+ exchange of ``config`` with ``nodes``: the unmasked sum of their reports
    (``shapes``, in ``layout``'s limbs) and the neighbourhoods seen before unmasking;
    ``may_unmask(neighbours, active)`` returning ``False`` halts before the sum is unmasked."""
    from flwr.app import ConfigRecord, Context, RecordDict
    from flwr.server import ServerConfig
    from flwr.server.client_manager import SimpleClientManager
    from flwr.server.compat.grid_client_proxy import GridClientProxy
    from flwr.server.compat.legacy_context import LegacyContext
    from flwr.server.workflow.constant import MAIN_CONFIGS_RECORD, MAIN_PARAMS_RECORD, Key

    outcome: list[SummedReports] = []
    graphs: list[tuple[dict, set]] = []
    strategy = make_legacy_summing_strategy(
        node_ids=nodes, config=config, shapes=shapes, layout=layout, on_result=outcome.append
    )
    run_id = _run_id(grid)
    clients = SimpleClientManager()
    for nid in nodes:
        clients.register(GridClientProxy(nid, grid, run_id))
    context = Context(run_id=run_id, node_id=0, node_config={}, state=RecordDict(), run_config={})
    legacy = LegacyContext(context, ServerConfig(num_rounds=1), strategy, clients)
    legacy.state.config_records[MAIN_CONFIGS_RECORD] = ConfigRecord(
        {Key.CURRENT_ROUND: int(server_round)}
    )
    legacy.state.array_records[MAIN_PARAMS_RECORD] = arrays

    def on_graph(neighbours, active):
        graphs.append((neighbours, active))
        return True if may_unmask is None else may_unmask(neighbours, active)

    workflow = make_secagg_workflow(layout, secagg, on_graph=on_graph, timeout=timeout)
    workflow(_EvaluateGrid(grid), legacy)
    return (outcome[0] if outcome else None), graphs


def _run_id(grid) -> int:
    try:
        return int(grid.run.run_id)
    except Exception:  # a grid without a run (tests): Flower's messages carry their own
        return 0


def _no_report_reason(log: RoundLog, settings: SecAggSettings | None) -> str:
    text = "no report reached the server"
    described = log.describe()
    if described:
        text += f": {described}"
    if settings is not None:
        text += (
            f" (SecAgg+ halts when fewer than its reconstruction threshold "
            f"{settings.reconstruction_threshold} of a neighbourhood stay)"
        )
    return text


def achieved_event(result: AUCResult):
    """The dp-accounting event of what ``result`` released: ``R`` releases of the epsilon
    the arrived reports achieve (the mechanism's own event when they achieve its target)."""
    import dp_accounting

    return dp_accounting.SelfComposedDpEvent(
        dp_accounting.EpsilonDeltaDpEvent(float(result.epsilon), float(result.delta)),
        int(np.size(result.aucs)),
    )


def _strategy_base():
    from flwr.serverapp.strategy import Strategy

    return Strategy


class DPAUCStrategy:
    """Wraps any Flower strategy: training is its own, every evaluate round is a private AUC.

    Built as a subclass of ``flwr.serverapp.strategy.Strategy`` (Flower is imported when the
    first one is made). ``configure_evaluate`` runs `evaluate_round` on the round's
    global model (the wrapped strategy's federated evaluation is replaced) and
    ``aggregate_evaluate`` returns its figures as a ``MetricRecord``
    (``dpauc-auc``, ``dpauc-epsilon``, ``dpauc-num-reporting``, ``dpauc-num-clients``);
    the full [`AUCResult`][] of round ``r`` is
    ``strategy.results[r]``.

    Args:
      strategy: the training strategy (``FedAvg()``, ...).
      spec: the release of every evaluation (`spec_from_run_config` builds it from the
        app's config); a one-vs-rest ``ReleaseSpec`` (``num-classes`` in the config) makes every
        round one-vs-rest, with a one-vs-rest ``AUCResult`` per round.
      ledger: charged before every evaluation (an evaluation that would exceed its budget
        is refused before any report is sent: see ``on_refusal``); when fewer reports
        arrive than a secure mechanism's noise was sized for, the difference to the
        achieved epsilon is not lost: the achieved release is recorded too (``dataset``,
        ``"...: achieved"``).
      dataset: the ledger's data set name.
      repeats: as for `evaluate_round`.
      secagg: as for `evaluate_round`.
      timeout: as for `evaluate_round`.
      observe_replies: as for `evaluate_round`.
      on_result: called with every round's ``(server_round, AUCResult)``.
      on_refusal: what a refused evaluation does: ``"record"`` (the default) logs it, keeps
        its one-line reason in ``strategy.refused[round]`` and goes on (training continues,
        ``start`` returns its result: nothing released or trained is lost); ``"raise"``
        lets the [`BudgetExceededError`][dpauc_tf.privacy.ledger.BudgetExceededError] end
        ``start``.

    Examples:
        >>> DPAUCStrategy.__name__
        'DPAUCStrategy'
    """

    def __init__(
        self,
        strategy,
        spec: ReleaseSpec,
        *,
        ledger=None,
        dataset: str = "flower-evaluation",
        repeats: int = 1,
        secagg: SecAggSettings | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
        observe_replies: Callable[[Any], None] | None = None,
        on_result: Callable[[int, AUCResult], None] | None = None,
        on_refusal: str = "record",
    ) -> None:
        """The signature only: ``__new__`` returns the Flower subclass, whose own
        ``__init__`` (the same arguments) is the one that runs."""

    def __new__(cls, *args, **kwargs):
        instance = object.__new__(_strategy_class())
        instance.__init__(*args, **kwargs)
        return instance


_CLASS: list = []


def _strategy_class():
    if _CLASS:
        return _CLASS[0]
    Strategy = _strategy_base()

    class _DPAUCStrategy(Strategy):
        __doc__ = DPAUCStrategy.__doc__

        def __init__(
            self,
            strategy,
            spec: ReleaseSpec,
            *,
            ledger=None,
            dataset: str = "flower-evaluation",
            repeats: int = 1,
            secagg: SecAggSettings | None = None,
            timeout: float | None = DEFAULT_TIMEOUT,
            observe_replies: Callable[[Any], None] | None = None,
            on_result: Callable[[int, AUCResult], None] | None = None,
            on_refusal: str = "record",
        ):
            if on_refusal not in ("record", "raise"):
                raise ValueError(f'on_refusal must be "record" or "raise", got {on_refusal!r}')
            self.strategy = strategy
            self.spec = spec
            self.ledger = ledger
            self.dataset = dataset
            self.repeats = repeats
            self.secagg = secagg
            self.timeout = timeout
            self.observe_replies = observe_replies
            self.on_result = on_result
            self.on_refusal = on_refusal
            self.results: dict[int, AUCResult] = {}
            self.refused: dict[int, str] = {}  # round -> the ledger's one-line reason
            self.details: dict[int, RoundDetails] = {}
            spec.check_releases_counts("Flower")

        # training: the wrapped strategy's
        def configure_train(self, server_round, arrays, config, grid):
            return self.strategy.configure_train(server_round, arrays, config, grid)

        def aggregate_train(self, server_round, replies):
            return self.strategy.aggregate_train(server_round, replies)

        def summary(self) -> None:
            self.strategy.summary()
            from flwr.supercore import log

            log(20, "\t└──> private AUC on evaluate: %s", self.spec.mechanism)

        # evaluation: one private AUC of the current global model
        def configure_evaluate(self, server_round, arrays, config, grid):
            planned = self.spec.build(len(list(grid.get_node_ids())) or 1)
            if self.ledger is not None and self.spec.epsilon is not None:
                import dp_accounting

                from dpauc_tf.privacy.ledger import BudgetExceededError

                event = dp_accounting.SelfComposedDpEvent(planned.dp_event(), self.repeats)
                try:
                    self.ledger.record(event, self.dataset, f"flower round {server_round}")
                except BudgetExceededError as error:
                    if self.on_refusal == "raise":
                        raise
                    from flwr.supercore import log

                    self.refused[int(server_round)] = str(error)
                    log(30, "dpauc round %s: evaluation refused: %s", server_round, error)
                    return []  # nothing sent: no report exists
            details = RoundDetails(RoundLog(0, self.timeout))
            result = evaluate_round(
                grid,
                self.spec,
                arrays=arrays,
                server_round=server_round,
                repeats=self.repeats,
                secagg=self.secagg,
                timeout=self.timeout,
                observe_replies=self.observe_replies,
                details=details,
            )
            if (
                self.ledger is not None
                and result.epsilon is not None
                and result.epsilon > float(planned.statement().epsilon)
            ):
                self.ledger.record(
                    achieved_event(result), self.dataset, f"flower round {server_round}: achieved"
                )
            self.results[int(server_round)] = result
            self.details[int(server_round)] = details
            if self.on_result is not None:
                self.on_result(int(server_round), result)
            return []  # the round ran in evaluate_round: nothing more to send

        def aggregate_evaluate(self, server_round, replies):
            from flwr.app import MetricRecord

            result = self.results.get(int(server_round))
            if result is None:
                return None
            metrics = {
                "dpauc-auc": result.auc,
                "dpauc-epsilon": -1.0 if result.epsilon is None else result.epsilon,
                "dpauc-num-reporting": int(result.num_reporting or 0),
                "dpauc-num-clients": int(result.num_clients or 0),
            }
            if result.num_classes is not None:  # a one-vs-rest release
                for average in Average.values():
                    metrics[f"dpauc-{average}"] = float(getattr(result, average)[0])
            return MetricRecord(metrics)

    _DPAUCStrategy.__name__ = _DPAUCStrategy.__qualname__ = "DPAUCStrategy"
    _CLASS.append(_DPAUCStrategy)
    return _DPAUCStrategy
