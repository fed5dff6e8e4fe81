"""Federated DP-AUC with TensorFlow Federated (the TF 2.14 / TFF 0.87 world only).

``import dpauc_tf`` never imports TFF; importing this package does (about 12 s), and fails
with a clear message where TFF is not installed.

* [`evaluate`][]: AUC and ROC of precomputed scores held by clients, one call per evaluation
  (clients from a list, a generator or a sampler, run in cohorts).
* [`evaluate_multiclass`][]: one-vs-rest (multi-class) AUC of clients' ``[n, C]`` scores on
  the same multi-class release path as the simulate backend (docs/multiclass.md).
* [`build_dpauc_metrics_aggregation_process`][]: client-side DPAUC noise (local or secure
  shares) for ``tff.learning.algorithms.build_fed_eval``.
* [`dpauc_tf.federated.computations`][]: the TFF computations (and their MapReduce shape).
* [`shutdown_tff_workers`][]: stop TFF's ``worker_binary``. Importing this package
  registers it with ``atexit`` and gives every later ``worker_binary`` ``/dev/null`` as its
  stdout/stderr, so ``python script.py | cat`` returns ([`dpauc_tf.federated.process`][]).
"""

from __future__ import annotations

from dpauc_tf.core.extras import install_hint

try:
    import tensorflow_federated  # noqa: F401
except ImportError as error:  # pragma: no cover - the keras3 world
    raise ImportError(
        "dpauc_tf.federated needs TensorFlow Federated, which runs on Python 3.11 with "
        f"TensorFlow 2.14: {install_hint('federated')} in a Python 3.11 environment"
    ) from error

from dpauc_tf.core.partitions import client_data_from_partition
from dpauc_tf.federated.evaluate import (
    evaluate,
    evaluate_spec,
    install_secure_sum_context,
    iter_client_data,
)
from dpauc_tf.federated.learning import (
    ClientNoiseSumFactory,
    build_dpauc_metrics_aggregation_process,
)
from dpauc_tf.federated.multiclass import evaluate_multiclass
from dpauc_tf.federated.process import (
    own_tff_workers,
    register_atexit_shutdown,
    shutdown_tff_workers,
)

# From its first use the library owns TFF's worker process: quiet output, stopped at exit.
own_tff_workers()

__all__ = [
    "ClientNoiseSumFactory",
    "build_dpauc_metrics_aggregation_process",
    "client_data_from_partition",
    "evaluate",
    "evaluate_multiclass",
    "evaluate_spec",
    "install_secure_sum_context",
    "iter_client_data",
    "own_tff_workers",
    "register_atexit_shutdown",
    "shutdown_tff_workers",
]
