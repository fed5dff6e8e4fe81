"""The server's plumbing on Flower: the grids that time and observe an exchange, what the
server saw of a round ([`RoundLog`][]), and SecAgg+'s workflow configured for exact
integer sums (driven by `dpauc_tf.flower.evaluate_round`).

The server adds no noise: it turns the summed release into the ROC curve and the AUC with
the mechanism's own post-processing (``mechanism.aggregate()``, ``to_confusion``,
``estimate_auc``) and states the epsilon achieved by the reports that arrived
([`dpauc_tf.mechanisms.base.achieved_statement`][]).

Secure mechanisms run ``SecAggPlusWorkflow`` (with the clients' ``secaggplus_mod``): the
server only ever holds masked vectors and their unmasked **sum**; clients that drop out
after key sharing are unmasked away by SecAgg+ and are not counted as reporting.

Examples:
    >>> summed = SummedReports({"pos": np.zeros(3), "neg": np.zeros(3)}, num_reporting=2)
    >>> summed.num_reporting
    2
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

from dpauc_tf.flower.client import CLIENT_RECORD_KEY
from dpauc_tf.flower.encoding import LimbLayout
from dpauc_tf.flower.records import unflatten_report
from dpauc_tf.flower.secagg import SecAggSettings, make_recording_workflow


@dataclasses.dataclass(frozen=True)
class SummedReports:
    """What the server learns: the summed release, the summed number of examples and how
    many reports entered the sum."""

    release: dict[str, np.ndarray]
    num_reporting: int
    num_failures: int = 0
    num_examples: float | None = None


def make_legacy_summing_strategy(
    *,
    node_ids: list[int],
    config: dict[str, str],
    shapes: dict[str, tuple],
    layout: LimbLayout,
    on_result: Callable[[SummedReports], None],
):
    """The legacy Flower ``Strategy`` that ``SecAggPlusWorkflow`` drives (it knows no
    other): its "fit" instructions carry the release's ``config`` to every node in
    ``node_ids``, and its ``aggregate_fit`` receives SecAgg+'s unmasked sum of the limbs
    (every result holds the same aggregate), decoded exactly and given to ``on_result``.
    Internal to `dpauc_tf.flower.evaluate_round`."""
    from flwr.common import FitIns, Parameters, parameters_to_ndarrays
    from flwr.server.strategy import Strategy

    class SummingStrategy(Strategy):
        def initialize_parameters(self, client_manager):
            return Parameters(tensors=[], tensor_type="numpy.ndarray")

        def configure_fit(self, server_round, parameters, client_manager):
            clients = client_manager.all()
            return [(clients[str(nid)], FitIns(parameters, dict(config))) for nid in node_ids]

        def aggregate_fit(self, server_round, results, failures):
            num_reporting = len(results)
            if num_reporting == 0:
                return None, {}
            limbs = parameters_to_ndarrays(results[0][1].parameters)
            vector = layout.decode(limbs, num_reporting).astype(np.float64)
            release, num_examples = unflatten_report(vector, shapes)
            on_result(SummedReports(release, num_reporting, len(failures), num_examples))
            return None, {}

        def configure_evaluate(self, server_round, parameters, client_manager):
            return []

        def aggregate_evaluate(self, server_round, results, failures):
            return None, {}

        def evaluate(self, server_round, parameters):
            return None

    return SummingStrategy()


class ObservedGrid:
    """A Grid that shows every reply to ``observe`` before the workflow sees it (tests,
    audits: what the server receives)."""

    def __init__(self, grid, observe: Callable[[Any], None]):
        self._grid = grid
        self._observe = observe

    def send_and_receive(self, messages, *, timeout=None):
        replies = list(self._grid.send_and_receive(messages, timeout=timeout))
        for reply in replies:
            self._observe(reply)
        return replies

    def __getattr__(self, name):
        return getattr(self._grid, name)


@dataclasses.dataclass
class RoundLog:
    """What the server saw of each exchange of one round: which clients answered late or
    not at all, and which failed. Clients are named by their index (``partition-id``),
    learnt from their replies; a client that never answered is named by elimination.

    Examples:
        >>> log = RoundLog(num_clients=3, timeout=5.0)
        >>> log.record("train", sent=[11, 12, 13], answered=[11], failed={12: "boom"})
        >>> log.partitions.update({11: 0, 12: 1})
        >>> log.unanswered, log.failed
        ([2], {1: 'boom'})
    """

    num_clients: int
    timeout: float | None
    partitions: dict[int, int] = dataclasses.field(default_factory=dict)
    stages: list[tuple[str, list[int], dict[int, str]]] = dataclasses.field(default_factory=list)

    exchanges: int = 0

    def record(self, stage: str, *, sent, answered, failed: dict[int, str]) -> None:
        self.exchanges += 1
        answered = set(answered) | set(failed)
        missing = [node for node in sent if node not in answered]
        if missing or failed:
            self.stages.append((stage, missing, dict(failed)))

    def _client(self, node: int):
        return self.partitions.get(node)

    def _by_elimination(self) -> list[int]:
        return sorted(set(range(self.num_clients)) - set(self.partitions.values()))

    @property
    def timed_out(self) -> bool:
        """Whether some client did not answer within the timeout."""
        return any(missing for _, missing, _ in self.stages)

    @property
    def unanswered(self) -> list[int]:
        """Clients that did not answer within the timeout (indices)."""
        named, unknown = set(), 0
        for _, missing, _ in self.stages:
            for node in missing:
                client = self._client(node)
                if client is None:
                    unknown += 1
                else:
                    named.add(client)
        if unknown:
            named.update(self._by_elimination())
        return sorted(named)

    @property
    def failed(self) -> dict[int | str, str]:
        """Clients whose reply was an error: index (or ``"node N"``) -> the reason."""
        out: dict[int | str, str] = {}
        for _, _, failures in self.stages:
            for node, reason in failures.items():
                client = self._client(node)
                out[client if client is not None else f"node {node}"] = reason
        return out

    def describe(self) -> str:
        """One sentence: who did not answer (a timeout) and who failed, or ``""``."""
        if not self.exchanges:
            return (
                "the server exchanged no message with the clients (the engine did not run the "
                "round; on Flower's simulation engine Ray's start-up can time out on a busy "
                "machine: docs/flower.md)"
            )
        parts = []
        if self.timed_out:
            stages = sorted({stage for stage, missing, _ in self.stages if missing})
            parts.append(
                f"timed out: client(s) {self.unanswered} of {self.num_clients} did not answer "
                f"within round_timeout={self.timeout:g} s (stage {', '.join(stages)}; raise it "
                "with round_timeout=, on the command line --round-timeout)"
            )
        if self.failed:
            first = next(iter(self.failed.items()))
            parts.append(
                f"client(s) {sorted(self.failed, key=str)} failed (client {first[0]}: {first[1]})"
            )
        return "; ".join(parts)


def _stage(message) -> str:
    """A message's SecAgg+ stage, else its type (``train``)."""
    try:
        from flwr.common.secure_aggregation.secaggplus_constants import RECORD_KEY_CONFIGS, Key

        configs = message.content.config_records.get(RECORD_KEY_CONFIGS)
        if configs is not None and Key.STAGE in configs:
            return f"SecAgg+ {configs[Key.STAGE]}"
    except Exception:  # a label for a message, never an error of its own
        pass
    return str(message.metadata.message_type)


class TimedGrid:
    """A Grid whose every exchange waits at most ``log.timeout`` seconds (Flower's default
    workflow waits without limit) and records in ``log`` who did not answer or failed."""

    def __init__(self, grid, log: RoundLog):
        self._grid = grid
        self._log = log

    def send_and_receive(self, messages, *, timeout=None):
        messages = list(messages)
        sent = [message.metadata.dst_node_id for message in messages]
        stage = _stage(messages[0]) if messages else "empty"
        if timeout is None:
            timeout = self._log.timeout
        replies = list(self._grid.send_and_receive(messages, timeout=timeout))
        answered, failed = [], {}
        for reply in replies:
            node = reply.metadata.src_node_id
            if reply.has_error():
                failed[node] = str(reply.error.reason)
                continue
            answered.append(node)
            record = reply.content.config_records.get(CLIENT_RECORD_KEY)
            if record is not None and "partition-id" in record:
                self._log.partitions[node] = int(record["partition-id"])
        self._log.record(stage, sent=sent, answered=answered, failed=failed)
        return replies

    def __getattr__(self, name):
        return getattr(self._grid, name)


def make_secagg_workflow(
    layout: LimbLayout,
    settings: SecAggSettings,
    *,
    on_graph: Callable[[dict[int, set[int]], set[int]], bool | None] | None = None,
    timeout: float | None = None,
):
    """``SecAggPlusWorkflow`` with ``settings``' neighbourhoods, configured so that integer
    limbs are summed exactly ([`dpauc_tf.flower.encoding`][]): weight 1 per report,
    quantizer scale 1, no clipping. ``on_graph`` sees the neighbourhoods and the clients
    whose masked vectors arrived ([`dpauc_tf.flower.secagg.make_recording_workflow`][])."""
    return make_recording_workflow(
        on_graph if on_graph is not None else (lambda neighbours, active: None),
        **settings.flower_arguments,
        max_weight=1.0,
        clipping_range=layout.clipping_range,
        quantization_range=layout.quantization_range,
        modulus_range=layout.modulus_range,
        timeout=timeout,
    )
