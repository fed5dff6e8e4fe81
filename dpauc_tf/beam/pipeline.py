"""The pipeline behind ``dpauc evaluate --backend beam``, and Beam's runner options.

[`evaluate_with_beam`][] ships the scores of a file (read by the command line) to a Beam
pipeline in batches keyed by client, runs [`PrivateAUC`][] on
them, and reads the slice's result back. Without runner flags it runs on the local
``DirectRunner`` with `LOCAL_WORKERS` worker processes; any other Beam pipeline
options (``--runner=FlinkRunner --flink_master=...``, ``--runner=DataflowRunner
--project=... --region=... --temp_location=gs://...``) are passed through unchanged (see
``docs/beam.md``). Results are written to ``--temp_location`` when it is given (a shared
file system, which remote runners need), else to a local temporary directory.

Examples:
    >>> pipeline_options([]).get_all_options()["direct_num_workers"]
    2
"""

from __future__ import annotations

import base64
import pickle
import shlex
import tempfile
import uuid
from collections.abc import Sequence

import apache_beam as beam
import numpy as np
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions

from dpauc_tf.beam.release import PrivateAUC
from dpauc_tf.beam.reports import RELEASE_COUNTER
from dpauc_tf.mechanisms.release import AUCResult, ReleaseSpec

LOCAL_WORKERS = 2
BATCH_SIZE = 65_536  # examples per element shipped to the pipeline
LOCAL_OPTIONS = (
    "--runner=DirectRunner",
    f"--direct_num_workers={LOCAL_WORKERS}",
    "--direct_running_mode=multi_processing",
)


def pipeline_options(flags: Sequence[str] | str | None) -> PipelineOptions:
    """Beam options from flags (a list or one shell-quoted string); local 2-process runner
    when no ``--runner`` is given."""
    if isinstance(flags, str):
        flags = shlex.split(flags)
    flags = list(flags or [])
    if not any(flag.startswith("--runner") for flag in flags):
        flags = [*LOCAL_OPTIONS, *flags]
    return PipelineOptions(flags)


def _encode(value) -> str:
    return base64.b64encode(pickle.dumps(value)).decode("ascii")


def run_and_collect(
    build, options: PipelineOptions | None = None, directory: str | None = None
) -> tuple[list[AUCResult], int | None]:
    """Runs ``build(pipeline) -> PCollection`` (of `AUCResult` or any picklable
    values) and returns its elements read back from files, with the number of releases Beam
    counted (``None`` if the runner reports no metrics)."""
    options = options or PipelineOptions([])
    if directory is None:
        directory = options.get_all_options().get("temp_location") or tempfile.mkdtemp(
            prefix="dpauc-beam-"
        )
    prefix = FileSystems.join(directory, f"dpauc-{uuid.uuid4().hex}")
    pipeline = beam.Pipeline(options=options)
    (
        build(pipeline)
        | "Encode" >> beam.Map(_encode)
        | "Write" >> beam.io.WriteToText(prefix, file_name_suffix=".txt")
    )
    result = pipeline.run()
    result.wait_until_finish()
    releases = []
    for match in FileSystems.match([prefix + "*"])[0].metadata_list:
        with FileSystems.open(match.path) as handle:
            releases += [pickle.loads(base64.b64decode(line)) for line in handle if line.strip()]
        FileSystems.delete([match.path])
    return releases, _release_count(result)


def _release_count(result) -> int | None:
    from apache_beam.metrics.metric import MetricsFilter

    try:
        found = result.metrics().query(MetricsFilter().with_name(RELEASE_COUNTER[1]))
    except Exception:  # runners without metrics support
        return None
    counters = [c for c in found["counters"] if c.key.metric.namespace == RELEASE_COUNTER[0]]
    if not counters:
        return 0
    return int(sum(c.committed or 0 for c in counters))


def client_batches(scores, labels, client_ids, num_clients: int, batch_size: int = BATCH_SIZE):
    """``(None, client, (scores, labels))`` elements, at most ``batch_size`` examples each."""
    scores = np.asarray(scores, np.float64).ravel()
    labels = np.asarray(labels, np.float64).ravel()
    client_ids = np.asarray(client_ids, np.int64).ravel()
    order = np.argsort(client_ids, kind="stable")
    bounds = np.searchsorted(client_ids[order], np.arange(num_clients + 1))
    for client in range(num_clients):
        rows = order[bounds[client] : bounds[client + 1]]
        for start in range(0, rows.size, batch_size):
            part = rows[start : start + batch_size]
            yield None, client, (scores[part], labels[part])


def _transform(spec: ReleaseSpec, repeats: int, **columns) -> PrivateAUC:
    """``PrivateAUC`` of the ready ``spec`` (the release: mechanism, epsilon, grid, seed;
    ``columns``: its other arguments, the interval's ``confidence`` and ``ci_target``)."""
    if not isinstance(spec, ReleaseSpec):
        raise TypeError(f"pass the release as a ReleaseSpec, got {type(spec).__name__}")
    return PrivateAUC(spec=spec, repeats=repeats, **columns)


def evaluate_with_beam(
    scores,
    labels,
    client_ids,
    num_clients: int,
    spec: ReleaseSpec,
    *,
    repeats: int = 1,
    beam_options: Sequence[str] | str | None = None,
    confidence: float | None = None,
    ci_target: str = "population",
) -> AUCResult:
    """One evaluation of the whole file in a Beam pipeline (the ``--backend beam`` path).

    The release is ``spec`` (a [`ReleaseSpec`][], its seed included). With one client the counts are
    released once with central noise; with several, every client reports through the
    mechanism and the reports are summed (as ``--backend simulate`` does). Returns the one
    slice's [`AUCResult`][dpauc_tf.mechanisms.release.AUCResult] (with the interval of
    every release at ``confidence``, as ``PrivateAUC`` finishes it).
    """
    per_client = num_clients > 1
    transform = _transform(
        spec, repeats, per_client=per_client, confidence=confidence, ci_target=ci_target
    )
    elements = list(client_batches(scores, labels, client_ids, num_clients))
    if not per_client:
        elements = [(key, example) for key, _, example in elements]

    def build(pipeline):
        return pipeline | "Examples" >> beam.Create(elements, reshuffle=False) | transform

    releases, _ = run_and_collect(build, pipeline_options(beam_options))
    if len(releases) != 1:
        raise RuntimeError(f"the Beam pipeline returned {len(releases)} results, expected 1")
    return releases[0]


def evaluate_files_with_beam(
    file_pattern: str | Sequence[str],
    spec: ReleaseSpec,
    *,
    repeats: int = 1,
    score_column: str = "score",
    label_column: str = "label",
    client_column: str | None = None,
    from_logits: bool = False,
    beam_options: Sequence[str] | str | None = None,
    confidence: float | None = None,
    ci_target: str = "population",
) -> AUCResult:
    """One evaluation of score files read by Beam's own IO (``--backend beam``): the
    driver reads only the files' metadata, never a row.

    The release is ``spec`` (and the interval ``confidence``), as in [`evaluate_with_beam`][].

    ``client_column`` names the clients' column (each client's counts are a report, and the
    reports are summed); ``None`` releases the counts once, with central noise. Returns the
    overall slice's [`AUCResult`][dpauc_tf.mechanisms.release.AUCResult].
    """
    from dpauc_tf.beam.io import ReadScores

    columns = [score_column, label_column] + ([client_column] if client_column else [])
    transform = _transform(
        spec,
        repeats,
        slicing=[()],
        score_column=score_column,
        label_column=label_column,
        client_column=client_column,
        from_logits=from_logits,
        confidence=confidence,
        ci_target=ci_target,
    )

    def build(pipeline):
        return pipeline | "ReadScores" >> ReadScores(file_pattern, columns) | transform

    releases, _ = run_and_collect(build, pipeline_options(beam_options))
    if len(releases) != 1:
        where = file_pattern if isinstance(file_pattern, str) else ", ".join(file_pattern)
        raise ValueError(f"{where}: no example to evaluate (the files hold no rows)")
    return releases[0]
