"""The server side on Flower: a strategy that sums the clients' reports (plainly, or the
masked sum that SecAgg+ unmasks) and a ``ServerApp`` running one evaluation round.

The server adds no noise: it turns the summed release into the ROC curve and the AUC with
the mechanism's own post-processing (``mechanism.aggregate()``, ``to_confusion``,
``estimate_auc``) and states the epsilon achieved by the reports that arrived
(:func:`dpauc_tf.mechanisms.base.achieved_statement`).

Secure mechanisms run ``SecAggPlusWorkflow`` (with the clients' ``secaggplus_mod``): the
server only ever holds masked vectors and their unmasked **sum**; clients that drop out
after key sharing are unmasked away by SecAgg+ and are not counted as reporting.

>>> summed = SummedReports({"pos": np.zeros(3), "neg": np.zeros(3)}, num_reporting=2)
>>> summed.num_reporting
2
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

from dpauc_tf.flower.client import LIMB_BITS_KEY, unflatten_report
from dpauc_tf.flower.encoding import LimbLayout
from dpauc_tf.flower.secagg import SecAggSettings, make_recording_workflow


@dataclasses.dataclass(frozen=True)
class SummedReports:
    """What the server learns: the summed release and how many reports entered the sum."""

    release: dict[str, np.ndarray]
    num_reporting: int
    num_failures: int = 0


def make_strategy(
    *,
    num_clients: int,
    report_shapes: dict[str, tuple],
    layout: LimbLayout | None,
    on_result: Callable[[SummedReports], None],
):
    """A Flower ``Strategy`` for one evaluation round over ``num_clients`` clients.

    ``layout`` given: the fit results carry SecAgg+'s unmasked sum of the limbs (every
    result holds the same aggregate), decoded exactly; otherwise every result is one
    client's report and they are summed here. ``on_result`` receives the
    :class:`SummedReports`.
    """
    from flwr.common import FitIns, Parameters, parameters_to_ndarrays
    from flwr.server.strategy import Strategy

    class SummingStrategy(Strategy):
        def initialize_parameters(self, client_manager):
            return Parameters(tensors=[], tensor_type="numpy.ndarray")

        def configure_fit(self, server_round, parameters, client_manager):
            clients = client_manager.sample(num_clients=num_clients, min_num_clients=num_clients)
            config = {} if layout is None else {LIMB_BITS_KEY: layout.bits}
            return [(client, FitIns(parameters, config)) for client in clients]

        def aggregate_fit(self, server_round, results, failures):
            num_reporting = len(results)
            if num_reporting == 0:
                return None, {}
            if layout is not None:
                limbs = parameters_to_ndarrays(results[0][1].parameters)
                vector = layout.decode(limbs, num_reporting).astype(np.float64)
            else:
                vector = None
                for _, fit_res in results:
                    (report,) = parameters_to_ndarrays(fit_res.parameters)
                    vector = report if vector is None else vector + report
            release = unflatten_report(np.asarray(vector, np.float64), report_shapes)
            on_result(SummedReports(release, num_reporting, len(failures)))
            return None, {}

        def configure_evaluate(self, server_round, parameters, client_manager):
            return []

        def aggregate_evaluate(self, server_round, results, failures):
            return None, {}

        def evaluate(self, server_round, parameters):
            return None

    return SummingStrategy()


class _ObservedGrid:
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


def make_server_app(
    strategy,
    *,
    secagg=None,
    observe_replies: Callable[[Any], None] | None = None,
):
    """A Flower ``ServerApp`` running one round of ``strategy`` (through ``secagg``, a
    ``SecAggPlusWorkflow``, when given). ``observe_replies`` sees every incoming message."""
    from flwr.server import ServerApp, ServerConfig
    from flwr.server.compat import LegacyContext
    from flwr.server.workflow import DefaultWorkflow

    app = ServerApp()

    @app.main()
    def main(grid, context) -> None:
        if observe_replies is not None:
            grid = _ObservedGrid(grid, observe_replies)
        legacy = LegacyContext(context, config=ServerConfig(num_rounds=1), strategy=strategy)
        DefaultWorkflow(fit_workflow=secagg)(grid, legacy)

    return app


def make_secagg_workflow(
    layout: LimbLayout,
    settings: SecAggSettings,
    *,
    on_graph: Callable[[dict[int, set[int]], set[int]], None] | None = None,
    timeout: float | None = None,
):
    """``SecAggPlusWorkflow`` with ``settings``' neighbourhoods, configured so that integer
    limbs are summed exactly (:mod:`dpauc_tf.flower.encoding`): weight 1 per report,
    quantizer scale 1, no clipping. ``on_graph`` sees the neighbourhoods and the clients
    whose masked vectors arrived (:func:`dpauc_tf.flower.secagg.make_recording_workflow`)."""
    return make_recording_workflow(
        on_graph if on_graph is not None else (lambda neighbours, active: None),
        **settings.flower_arguments,
        max_weight=1.0,
        clipping_range=layout.clipping_range,
        quantization_range=layout.quantization_range,
        modulus_range=layout.modulus_range,
        timeout=timeout,
    )
