"""``dpauc evaluate --backend flower``: one Flower round for all ``--repeats``.

The engine is Flower's simulation engine (``run_simulation`` on local Ray) unless the
environment variable ``DPAUC_FLOWER_ENGINE=in-process`` selects the in-process grid
(:mod:`dpauc_tf.flower.local`; no Ray, for small or busy machines and tests).
"""

from __future__ import annotations

import os

ENGINE_VARIABLE = "DPAUC_FLOWER_ENGINE"


def evaluate_with_flower(args, data, client_ids, num_clients):
    """Runs :func:`dpauc_tf.flower.evaluate` on the file's clients; returns a
    :class:`~dpauc_tf.experiments.simulation.SimulationResult` (the CLI's common result)."""
    from dpauc_tf.cli.evaluate import release_settings
    from dpauc_tf.cli.main import CommandError
    from dpauc_tf.core.partitions import client_data_from_partition
    from dpauc_tf.experiments.simulation import SimulationResult
    from dpauc_tf.flower.evaluate import evaluate, require_flower

    try:
        require_flower()
    except ImportError as error:
        raise CommandError(str(error)) from None

    out = evaluate(
        client_data_from_partition(data.scores, data.labels, client_ids, num_clients),
        seed=args.seed,
        repeats=args.repeats,
        engine=os.environ.get(ENGINE_VARIABLE, "simulation"),
        **release_settings(args),
    )
    return SimulationResult(out.aucs, out.fpr, out.tpr, out.statement)
