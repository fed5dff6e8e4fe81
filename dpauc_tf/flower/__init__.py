"""Federated DP-AUC on Flower (``pip install "dpauc-tf[flower]"``): client reports, a
summing server strategy, secure mechanisms through SecAgg+, and [`evaluate`][] on
Flower's simulation engine. Flower is imported only when a function needs it.

    >>> from dpauc_tf.flower import LimbLayout
    >>> LimbLayout.for_clients(100).bits
    25
"""

from dpauc_tf.flower.client import client_report, make_client_app, model_client_report
from dpauc_tf.flower.encoding import LimbLayout
from dpauc_tf.flower.evaluate import FlowerEvaluation, evaluate, require_flower
from dpauc_tf.flower.secagg import SecAggSettings
from dpauc_tf.flower.server import SummedReports, make_server_app, make_strategy

__all__ = [
    "FlowerEvaluation",
    "LimbLayout",
    "SecAggSettings",
    "SummedReports",
    "client_report",
    "evaluate",
    "make_client_app",
    "make_server_app",
    "make_strategy",
    "model_client_report",
    "require_flower",
]
