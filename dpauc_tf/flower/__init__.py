"""Federated DP-AUC on Flower (``pip install ".[flower]"`` in a clone), in Flower's own idiom.

A Flower app (``flwr run``) uses three pieces: on the client, [`evaluate_reply`][] (or
[`model_evaluate_reply`][]) answers an evaluate message with the mechanism's report of
the client's own data, and [`secagg_evaluate_mod`][] runs SecAgg+ for the secure
mechanisms in that evaluate round; on the server, `DPAUCStrategy` wraps any training
strategy (``FedAvg``, ...) and turns every evaluate round into a private AUC
(`evaluate_round`, an [`AUCResult`][dpauc_tf.mechanisms.release.AUCResult]), with the
release from the app's config (`spec_from_run_config`, the ledger from
`ledger_from_run_config`). [`evaluate`][] runs the
same pieces on precomputed scores of every client in one process (``dpauc evaluate
--backend flower``); [`evaluate_multiclass`][] does the same for one-vs-rest (multi-class)
AUC, and ``num-classes`` in the app's config makes every round one-vs-rest.
``examples/flower-app`` is a template app. Flower is imported only
when a function needs it.

Examples:
    >>> from dpauc_tf.flower import LimbLayout
    >>> LimbLayout.for_clients(100).bits
    25
"""

from dpauc_tf.flower.client import (
    client_report,
    client_seed,
    evaluate_reply,
    make_client_app,
    model_client_report,
    model_evaluate_reply,
    secagg_evaluate_mod,
)
from dpauc_tf.flower.encoding import LimbLayout
from dpauc_tf.flower.evaluate import evaluate, require_flower
from dpauc_tf.flower.multiclass import evaluate_multiclass
from dpauc_tf.flower.records import ReleaseSettings, release_config, release_from_config
from dpauc_tf.flower.secagg import SecAggSettings
from dpauc_tf.flower.server import RoundLog, SummedReports
from dpauc_tf.flower.strategy import (
    DPAUCStrategy,
    FlowerRoundReport,
    RoundDetails,
    evaluate_round,
    ledger_from_run_config,
    spec_from_run_config,
)

__all__ = [
    "DPAUCStrategy",
    "FlowerRoundReport",
    "LimbLayout",
    "ReleaseSettings",
    "RoundDetails",
    "RoundLog",
    "SecAggSettings",
    "SummedReports",
    "client_report",
    "client_seed",
    "evaluate",
    "evaluate_multiclass",
    "evaluate_reply",
    "evaluate_round",
    "ledger_from_run_config",
    "make_client_app",
    "model_client_report",
    "model_evaluate_reply",
    "release_config",
    "release_from_config",
    "require_flower",
    "secagg_evaluate_mod",
    "spec_from_run_config",
]
