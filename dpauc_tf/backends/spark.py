"""``spark``: the files read by Spark's own reader, counted on the executors, released on
the driver ([`dpauc_tf.spark.evaluation`][]): the driver holds no row."""

from __future__ import annotations

from dpauc_tf.backends import Backend, BackendName, EvaluationData


class SparkBackend(Backend):
    """A spec's releases of ``data.source`` through Spark (``master``: Spark's master URL;
    an active SparkSession is used as it is).

    The file's client column (``ScoreSource.client_column``) makes every client report (the
    reports summed; the rank sums in two rounds); clients drawn in memory (``--clients``)
    are refused: Spark reads the files, not the driver's examples.

    Examples:
        >>> SparkBackend(master="local[4]").master, SparkBackend.reads_files
        ('local[4]', True)
    """

    name = BackendName.SPARK
    reads_files = True
    requires = ("pyspark", "spark")

    def __init__(self, master: str | None = None):
        from dpauc_tf.spark.session import DEFAULT_MASTER, check_master

        self.master = check_master(DEFAULT_MASTER if master is None else master)

    def evaluate(
        self, spec, data: EvaluationData, *, repeats=1, confidence=None, ci_target="population"
    ):
        self.check_installed()
        if data.client_ids is not None:
            raise ValueError(
                "--backend spark takes its clients from the file's client column "
                "(--client-column); --clients partitions the examples in memory: use "
                "--backend simulate"
            )
        if data.source is None:
            raise ValueError("--backend spark reads score files: EvaluationData.source is unset")
        from dpauc_tf.spark.evaluation import private_auc
        from dpauc_tf.spark.session import read_scores, spark_session

        source = data.source
        with spark_session(self.master, app_name="dpauc evaluate") as session:
            return private_auc(
                read_scores(session, source),
                score_col=source.score_column,
                label_col=source.label_column,
                client_col=source.client_column,
                from_logits=source.from_logits,
                spec=spec,
                repeats=repeats,
                confidence=confidence,
                ci_target=ci_target,
            )
