"""``dpauc evaluate --backend flower``: one Flower evaluate round for all ``--repeats``, on
the same client and server pieces as a ``flwr run`` app ([`dpauc_tf.flower.evaluate`][]).

The engine is Flower's simulation engine (``run_simulation`` on local Ray: the only
in-process entry Flower 1.42 has, which it marks deprecated in favour of ``flwr run``, whose
input is an app directory, not the file's scores held here; its warning is left as Flower
prints it) unless the
environment variable ``DPAUC_FLOWER_ENGINE=in-process`` selects the in-process grid
([`dpauc_tf.flower.local`][]; no Ray, for small or busy machines and tests).
``--round-timeout SECONDS`` bounds each exchange of the round
(`dpauc_tf.flower.evaluate.DEFAULT_ROUND_TIMEOUT` by default).
"""

from __future__ import annotations

import os
import sys

from dpauc_tf.cli.errors import CommandError

ENGINE_VARIABLE = "DPAUC_FLOWER_ENGINE"


def evaluate_with_flower(run, data, client_ids, num_clients):
    """Runs [`dpauc_tf.flower.evaluate`][] on the file's clients with ``run.spec``'s release;
    returns a [`AUCResult`][dpauc_tf.mechanisms.release.AUCResult] (the CLI's common result).

    Clients left out (no answer in time, or an error) are named in one warning on stderr:
    the AUC then covers only the other clients' examples, and the stated epsilon is the one
    the arrived reports achieve."""
    import dpauc_tf.flower.evaluate  # noqa: F401 - the module, not the function
    from dpauc_tf.core.partitions import client_data_from_partition

    flower_evaluate = sys.modules["dpauc_tf.flower.evaluate"]

    try:
        flower_evaluate.require_flower()
    except ImportError as error:
        raise CommandError(str(error)) from None

    spec, timeout = run.spec, run.round_timeout
    out = flower_evaluate.evaluate(
        client_data_from_partition(data.scores, data.labels, client_ids, num_clients),
        **spec.settings(),
        seed=spec.seed,
        repeats=run.repeats,
        engine=os.environ.get(ENGINE_VARIABLE, "simulation"),
        round_timeout=flower_evaluate.DEFAULT_ROUND_TIMEOUT if timeout is None else timeout,
    )
    if out.num_reporting < out.num_clients:
        left_out = []
        if out.unanswered:
            left_out.append(
                f"client(s) {list(out.unanswered)} did not answer within --round-timeout"
            )
        if out.failed:
            left_out.append(f"client(s) {sorted(out.failed, key=str)} failed")
        print(
            f"dpauc: warning: {out.num_reporting} of {out.num_clients} clients reported"
            + (f" ({'; '.join(left_out)})" if left_out else "")
            + ": the AUC covers only their examples; the stated epsilon is the one their "
            "reports achieve",
            file=sys.stderr,
        )
    return out.result
