"""``beam``: the releases as one Apache Beam pipeline
([`dpauc_tf.beam.pipeline`][]): from the examples held here, or from the files read by
Beam's own IO (``EvaluationData.source``: the driver holds no row)."""

from __future__ import annotations

from dpauc_tf.backends import Backend, BackendName, EvaluationData, ScoreSource


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
        """From the examples held here (``data.examples``), else, where nothing was counted
        here (``data.pos`` unset), from the files (``data.source``) read by Beam's own IO."""
        self.check_installed()
        from dpauc_tf.beam.pipeline import evaluate_with_beam

        interval = {"confidence": confidence, "ci_target": ci_target}
        if data.examples is None and data.pos is None and data.source is not None:
            return self.evaluate_files(spec, data.source, repeats=repeats, **interval)

        examples, client_ids = data.examples_by_client("--backend beam")
        return evaluate_with_beam(
            examples.scores,
            examples.labels,
            client_ids,
            data.num_clients,
            spec,
            repeats=repeats,
            beam_options=self.options,
            **interval,
        )

    def evaluate_files(
        self,
        spec,
        source: ScoreSource,
        *,
        repeats: int = 1,
        confidence: float | None = None,
        ci_target: str = "population",
    ):
        """The release of ``source``'s files, read by Beam's sources (``ReadScores``) in the
        pipeline of [`evaluate_files_with_beam`][dpauc_tf.beam.pipeline.evaluate_files_with_beam];
        the files and their columns are checked first, from their metadata (one-line
        ``ValueError`` naming the flag)."""
        from dpauc_tf.beam.io import available_columns, input_files
        from dpauc_tf.beam.pipeline import evaluate_files_with_beam
        from dpauc_tf.io.errors import column_excerpt

        try:  # the one path rule (dpauc_tf.io.paths): the files every backend reads
            files = [str(f.path) for f in input_files(str(source.path))]
            columns = available_columns(files)
        except (OSError, ValueError) as error:
            text = str(error).removeprefix("ReadScores: ")
            raise ValueError(
                text if text.startswith(str(source.path)) else f"--scores {text}"
            ) from None
        for flag, name in (
            ("--score-column", source.score_column),
            ("--label-column", source.label_column),
        ):
            if name not in columns:
                raise ValueError(
                    f"--scores {source.path}: no column {name!r} ({flag}); its columns: "
                    f"{column_excerpt(columns)}"
                )
        client = source.client_column
        if client is not None and client not in columns:
            raise ValueError(f"--scores {source.path}: no client column {client!r}")
        return evaluate_files_with_beam(
            files,
            spec,
            repeats=repeats,
            score_column=source.score_column,
            label_column=source.label_column,
            client_column=client,
            from_logits=source.from_logits,
            beam_options=self.options,
            confidence=confidence,
            ci_target=ci_target,
        )
