"""The backends of ``dpauc evaluate``: how each one releases (step 3), and the engines that
read the files themselves (Beam's IO, Spark's reader: the driver holds no row).

Every backend receives a [`BackendRun`][]: the release's
[`ReleaseSpec`][dpauc_tf.mechanisms.release.ReleaseSpec] (built once, by
[`dpauc_tf.cli.release`][]), the number of releases, the interval asked for, the file's
[`ScoreSource`][dpauc_tf.backends.ScoreSource] and the engines' own settings; never the command's arguments.

Examples:
    >>> sorted(BACKENDS)
    ['beam', 'flower', 'simulate', 'spark', 'tff']
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
from typing import Any

import numpy as np

from dpauc_tf.backends import REGISTRY, EvaluationData, ScoreSource, backend, backend_class
from dpauc_tf.cli.errors import CommandError
from dpauc_tf.core.extras import install_hint
from dpauc_tf.mechanisms.registry import mechanism_spec


@dataclasses.dataclass(frozen=True)
class BackendRun:
    """What every backend receives: the release and how to run it.

    Attributes:
      backend: ``--backend`` (a key of `BACKENDS`).
      spec: the release ([`ReleaseSpec`][dpauc_tf.mechanisms.release.ReleaseSpec]).
      repeats: independent releases.
      confidence: ``--confidence`` (``None``: no interval).
      ci_target: ``--ci-target``.
      source: the file's [`ScoreSource`][dpauc_tf.backends.ScoreSource].
      beam_options: ``--beam-options``.
      spark_master: ``--spark-master``.
      round_timeout: ``--round-timeout`` (Flower).
    """

    backend: str
    spec: Any
    repeats: int = 1
    confidence: float | None = None
    ci_target: str = "population"
    source: ScoreSource | None = None
    beam_options: str | None = None
    spark_master: str = "local[2]"
    round_timeout: float | None = None

    @property
    def mechanism(self) -> str:
        return self.spec.mechanism


def kept_examples(counted, what: str):
    """The examples, when they were kept in memory; a one-line error otherwise."""
    if counted.examples is None:
        raise CommandError(
            f"{what} needs every example in memory, and the file has more than "
            f"--max-rows-in-memory {counted.max_rows_in_memory} rows; raise that limit, or use "
            "a client column (--client-column) and a mechanism that does not transform the data"
        )
    return counted.examples


def release_registered(run: BackendRun, counted, client_ids, num_clients):
    """Step 3 for a backend of the registry ([`dpauc_tf.backends`][]): its ``evaluate`` on
    the command's spec and the counted data (and the file, for a backend that reads files
    itself: ``reads_files``; Spark releases from the file only)."""
    data = EvaluationData.from_counted(counted, client_ids, num_clients)
    if backend_class(run.backend).reads_files:
        data = dataclasses.replace(data, source=run.source)
    return evaluate_registered(run, data)


def evaluate_registered(run: BackendRun, data: EvaluationData):
    """The registered backend ``run.backend`` (with the command's settings) on ``data``,
    its one-line errors as the command's (worded with its flags)."""
    settings = {
        "beam": lambda: {"options": run.beam_options},
        "flower": lambda: flower_settings(run),
        "spark": lambda: {"master": run.spark_master},
    }.get(run.backend, dict)()
    try:
        with _command_wording(run.backend):
            engine = backend(run.backend, **settings)
            engine.check_installed()
            return engine.evaluate(
                run.spec,
                data,
                repeats=run.repeats,
                confidence=run.confidence,
                ci_target=run.ci_target,
            )
    except ImportError as error:
        raise CommandError(str(error)) from None


def _command_wording(name: str):
    """The backend's errors worded with the command's flags (Spark: ``--spark-master``,
    ``--scores``); nothing for the others."""
    if name == "spark":
        from dpauc_tf.cli.spark import spark_wording

        return spark_wording()
    return contextlib.nullcontext()


def flower_settings(run: BackendRun) -> dict:
    """``--backend flower``'s settings: ``--round-timeout`` and the command's warning."""
    from dpauc_tf.cli.flower import warn_left_out

    return {"round_timeout": run.round_timeout, "on_round": warn_left_out}


# ``--backend NAME`` -> a function (run, counted, client_ids, num_clients) -> AUCResult (the
# one result type). A backend starts from the counts of step 1 (or its files: reads_files).
BACKENDS = {str(name): release_registered for name in REGISTRY}
# the backends that read the files with their own IO (their classes' reads_files)
ENGINE_BACKENDS = tuple(str(name) for name in REGISTRY if backend_class(name).reads_files)


def _require_beam() -> None:
    if importlib.util.find_spec("apache_beam") is None:
        raise CommandError(f"--backend beam needs Apache Beam: {install_hint('beam')}")


@dataclasses.dataclass(frozen=True)
class CountedByEngine:
    """What the command line needs of a file that Beam or Spark read and counted."""

    num_examples: int
    num_clients: int
    num_positives: int | None  # only without noise (--mechanism none): exact, not private


def evaluate_files_with_engine(backend: str, run: BackendRun):
    """The release of the files by Beam or Spark (``backend``), and what the command needs
    of them."""
    if backend == "beam":
        _require_beam()
    out = evaluate_registered(run, EvaluationData(source=run.source))
    positives = None
    if mechanism_spec(run.mechanism).capabilities.protects == "nothing":
        positives = round(float(np.sum(out.noisy_counts["pos"][0])))
    counted = CountedByEngine(round(out.num_examples), out.num_clients or 1, positives)
    return counted, out
