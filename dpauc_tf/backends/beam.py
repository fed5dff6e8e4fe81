"""``beam``: the releases as one Apache Beam pipeline
([`dpauc_tf.beam.pipeline`][]): from the examples held here, or from the files read by
Beam's own IO (the driver holds no row)."""

from __future__ import annotations

from dpauc_tf.backends import Backend, BackendName, EvaluationData


class BeamBackend(Backend):
    """A spec's releases in a Beam pipeline (``options``: Beam's pipeline flags).

    Examples:
        >>> BeamBackend(options="--direct_num_workers=1").options
        '--direct_num_workers=1'
    """

    name = BackendName.BEAM
    reads_files = True
    requires = ("apache_beam", "beam")

    def __init__(self, options: str | None = None):
        self.options = options

    def evaluate(
        self, spec, data: EvaluationData, *, repeats=1, confidence=None, ci_target="population"
    ):
        self.check_installed()
        from dpauc_tf.beam.pipeline import evaluate_with_beam

        examples, client_ids = data.examples_by_client("--backend beam")
        return evaluate_with_beam(
            examples.scores,
            examples.labels,
            client_ids,
            data.num_clients,
            spec,
            repeats=repeats,
            beam_options=self.options,
        )
