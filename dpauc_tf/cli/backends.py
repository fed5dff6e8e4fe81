"""The backends of ``dpauc evaluate``: how each one releases (step 3), and the engines that
read the files themselves (Beam's IO, Spark's reader: the driver holds no row).

Examples:
    >>> sorted(BACKENDS)
    ['beam', 'flower', 'simulate', 'spark', 'tff']
"""

from __future__ import annotations

import dataclasses
import importlib.util
from typing import Any

import numpy as np

from dpauc_tf.cli.errors import CommandError
from dpauc_tf.cli.release import release_settings, release_spec
from dpauc_tf.core.extras import install_hint
from dpauc_tf.mechanisms.registry import mechanism_spec


def _kept_examples(counted, what: str):
    """The examples, when they were kept in memory; a one-line error otherwise."""
    if counted.examples is None:
        raise CommandError(
            f"{what} needs every example in memory, and the file has more than "
            f"--max-rows-in-memory {counted.max_rows_in_memory} rows; raise that limit, or use "
            "a client column (--client-column) and a mechanism that does not transform the data"
        )
    return counted.examples


def release_simulate(args, mechanism, counted, client_ids, num_clients, thresholds):
    """Step 3 for ``--backend simulate``: releases from the counts (or the kept examples),
    [`dpauc_tf.simulation`][] on the command's `ReleaseSpec`."""
    from dpauc_tf.simulation import simulate, simulate_examples

    spec = release_spec(args)
    if client_ids is not None or mechanism.capabilities.transforms_data:
        what = (
            f"mechanism {args.mechanism!r} (it transforms every example)"
            if mechanism.capabilities.transforms_data
            else "--clients"
        )
        data = _kept_examples(counted, what)
        return simulate_examples(
            spec,
            data.labels,
            data.scores,
            thresholds,
            data.clients if client_ids is None else client_ids,
            num_clients,
            repeats=args.repeats,
        )
    return simulate(spec, counted.pos, counted.neg, repeats=args.repeats)


def _examples_by_client(counted, client_ids, what: str):
    """The kept examples and each one's client id (the file's, else one client) for a
    backend that starts from the examples rather than the counts."""
    data = _kept_examples(counted, what)
    if client_ids is None:
        client_ids = (
            data.clients if data.clients is not None else np.zeros(data.num_examples, np.int64)
        )
    return data, client_ids


def release_tff(args, mechanism, counted, client_ids, num_clients, thresholds):
    """Step 3 for ``--backend tff``: every client's examples through TFF."""
    data, client_ids = _examples_by_client(counted, client_ids, "--backend tff")
    return _evaluate_with_tff(args, data, client_ids, num_clients)


def release_beam(args, mechanism, counted, client_ids, num_clients, thresholds):
    """Step 3 for ``--backend beam``: the kept examples through a Beam pipeline."""
    data, client_ids = _examples_by_client(counted, client_ids, "--backend beam")
    return _evaluate_with_beam(args, data, client_ids, num_clients)


def release_flower(args, mechanism, counted, client_ids, num_clients, thresholds):
    """Step 3 for ``--backend flower``: every client's examples through one Flower round."""
    from dpauc_tf.cli.flower import evaluate_with_flower

    data, client_ids = _examples_by_client(counted, client_ids, "--backend flower")
    return evaluate_with_flower(args, data, client_ids, num_clients)


def release_spark(args, mechanism, counted, client_ids, num_clients, thresholds):
    """Step 3 for ``--backend spark``: the file read again by Spark, counted on executors."""
    from dpauc_tf.cli.spark import evaluate_with_spark

    return evaluate_with_spark(args, client_ids, num_clients)


# ``--backend NAME`` -> a function (args, mechanism, counted, client_ids, num_clients,
# thresholds) -> AUCResult (the one result type). A backend starts from the counts of step 1.
BACKENDS = {
    "simulate": release_simulate,
    "tff": release_tff,
    "beam": release_beam,
    "flower": release_flower,
    "spark": release_spark,
}


def _evaluate_with_tff(args, data, client_ids, num_clients):
    """``--backend tff``: [`dpauc_tf.federated.evaluate`][], every repeat a TFF round;
    its [`AUCResult`][dpauc_tf.mechanisms.release.AUCResult]."""
    if importlib.util.find_spec("tensorflow_federated") is None:
        raise CommandError(
            "--backend tff needs TensorFlow Federated, which runs on Python 3.11 with "
            f"TensorFlow 2.14: {install_hint('federated')} in a Python 3.11 environment "
            "of its own (it does not go with the keras3, beam, flower or spark extras)"
        )
    from dpauc_tf import federated
    from dpauc_tf.core.partitions import client_data_from_partition

    evaluate = getattr(federated, "evaluate", None)
    if evaluate is None:
        raise CommandError("--backend tff: dpauc_tf.federated.evaluate is not available")
    clients = client_data_from_partition(data.scores, data.labels, client_ids, num_clients)
    out = evaluate(clients, seed=args.seed, repeats=args.repeats, **release_settings(args))
    return out.result


def _evaluate_with_beam(args, data, client_ids, num_clients):
    """``--backend beam``: [`dpauc_tf.beam.pipeline.evaluate_with_beam`][], all repeats."""
    if importlib.util.find_spec("apache_beam") is None:
        raise CommandError(f"--backend beam needs Apache Beam: {install_hint('beam')}")
    from dpauc_tf.beam.pipeline import evaluate_with_beam

    return evaluate_with_beam(
        data.scores,
        data.labels,
        client_ids,
        num_clients,
        release_spec(args),
        repeats=args.repeats,
        beam_options=args.beam_options,
    )


@dataclasses.dataclass(frozen=True)
class _CountedByEngine:
    """What the command line needs of a file that Beam or Spark read and counted."""

    num_examples: int
    num_clients: int
    num_positives: int | None  # only without noise (--mechanism none): exact, not private


def _reads_with_engine(args, show_exact: bool) -> bool:
    """``--backend beam`` and ``--backend spark`` read the files with the engine's own IO
    (the driver holds no row), except where the command needs the examples on the driver: a
    partition (``--clients``), the exact values (``--show-exact``) or the plot's exact curve
    (``--plot``)."""
    engine = args.backend in ("beam", "spark")
    return engine and args.clients is None and not show_exact and not args.plot


def _evaluate_files_with_engine(args):
    """The release of the files by Beam or Spark, and what the command needs of them."""
    if args.backend == "spark":
        from dpauc_tf.cli.spark import evaluate_file_with_spark

        return _counted(args, evaluate_file_with_spark(args))
    return _counted(args, _evaluate_files_with_beam(args))


def _counted(args, out) -> tuple[_CountedByEngine, Any]:
    positives = None
    if mechanism_spec(args.mechanism).capabilities.protects == "nothing":
        positives = round(float(np.sum(out.noisy_counts["pos"][0])))
    counted = _CountedByEngine(round(out.num_examples), out.num_clients or 1, positives)
    return counted, out


def _evaluate_files_with_beam(args):
    """``--backend beam`` on the files themselves: ``ReadScores`` and ``PrivateAUC`` in one
    pipeline ([`dpauc_tf.beam.pipeline.evaluate_files_with_beam`][])."""
    if importlib.util.find_spec("apache_beam") is None:
        raise CommandError(f"--backend beam needs Apache Beam: {install_hint('beam')}")
    from dpauc_tf.beam.io import available_columns, input_files
    from dpauc_tf.beam.pipeline import evaluate_files_with_beam
    from dpauc_tf.io.scores import column_excerpt

    try:  # the one path rule (dpauc_tf.io.paths): the files every backend reads
        files = [str(f.path) for f in input_files(str(args.scores))]
        columns = available_columns(files)
    except (OSError, ValueError) as error:
        text = str(error).removeprefix("ReadScores: ")
        raise CommandError(
            text if text.startswith(str(args.scores)) else f"--scores {text}"
        ) from None
    for flag, name in (
        ("--score-column", args.score_column),
        ("--label-column", args.label_column),
    ):
        if name not in columns:
            raise CommandError(
                f"--scores {args.scores}: no column {name!r} ({flag}); its columns: "
                f"{column_excerpt(columns)}"
            )
    client = args.client_column  # client ids only from a named column (--client-column)
    if client is not None and client not in columns:
        raise CommandError(f"--scores {args.scores}: no client column {client!r}")
    return evaluate_files_with_beam(
        files,
        release_spec(args),
        repeats=args.repeats,
        score_column=args.score_column,
        label_column=args.label_column,
        client_column=client,
        from_logits=args.from_logits,
        beam_options=args.beam_options,
    )
