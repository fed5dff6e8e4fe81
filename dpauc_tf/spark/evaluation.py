"""A private AUC of a Spark DataFrame: count on the executors, release once per slice.

[`private_auc`][] (the whole DataFrame) and [`private_auc_by_slice`][] (one release per
value of a slice column) take a DataFrame with a score and a label column (optional weight,
client and slice columns) and:

1. count per bucket on the executors: ``mapInArrow`` with
   `dpauc_tf.spark.counting.count_partition` on every partition, on the grid
   [`count_grid`][dpauc_tf.mechanisms.release.ReleaseSpec.count_grid] (the mechanism's own where
   it has one, e.g. ``auc-only``);
2. merge: ``groupBy(slice, client, bucket)`` and a sum; what reaches the driver is those
   sums (at most ``T + 1`` numbers per slice and client), never a row;
3. release on the driver through the release protocol
   ([`dpauc_tf.mechanisms.release`][]): without a client column every slice's counts are
   released **once** (central noise, seed ``spec.seed_for(slice)``); with one, every
   client's counts in a slice are released by the mechanism built for the slice's number
   of clients (seed ``spec.seed_for(slice, client)``) and the reports are summed, as
   [`dpauc_tf.beam.PrivateAUC`][] does with ``per_client=True``; then
   [`finish_release`][] gives one
   [`AUCResult`][] per slice.

The rank-sum releases over a client column (``secure-rank-sum``; ``rank-sum`` with local
noise) do not reach step 2: their rounds run on the executors
(`dpauc_tf.spark.rank_sums`): round one's label-free totals and every client's round-two
report (its doubled rank sum, positives and share of the noise; seed
``spec.seed_for(slice, client, first repeat of the chunk)``) are computed by the mechanism's
own functions in Spark's Python workers and summed by Spark's reduce; the driver collects
only each slice's totals (one array of the grid's size) and round two's sums, never a
client's counts. Spark has no secure aggregation: whoever runs the job can read every
client's report on the executors (the law of the release is the protocol's; the trust is
the data holder's).

Accounting, as in Beam: a slice's output is ``repeats`` releases; an example in ``k``
slices costs ``repeats * k`` releases. Spark cannot see which rows hold the same example (a
DataFrame and its subsets unioned with other slice values put one example in several
slices), so ``k`` is the number of slices in the output (the worst case) unless
``max_slices_per_example`` declares a bound (``1``: every example is one row, in one slice).

Refused with a one-line ``ValueError`` before any release: a null in any used column, a
label other than 0/1, a score outside [0, 1] or NaN (with ``from_logits=True``: NaN), a
weight outside [0, 1], a fractional weight for an integer-noise mechanism, an empty
DataFrame, the label column as the slice or client column (each slice's ``num_examples``
would be an exact class count), a mechanism that changes the examples before counting
(``score-noise``) and, per client, a mechanism that releases one data holder's AUC
(``auc-only``). A slice of one class has an undefined AUC without noise
(``AUCResult.auc_or_none`` is ``None``).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from dpauc_tf.core.defaults import DEFAULT_NUM_THRESHOLDS
from dpauc_tf.mechanisms.arguments import ReleaseArguments
from dpauc_tf.mechanisms.laws import Deployment
from dpauc_tf.mechanisms.release import (
    AUCResult,
    ReleaseSpec,
    check_repeats,
    check_slices_bound,
    finish_release,
)
from dpauc_tf.privacy.statement import check_label_free_keys
from dpauc_tf.spark.counting import PROBLEMS, ROWS, BucketRule, count_partition

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

SURFACE = "dpauc_tf.spark"
_NUMERIC = ("byte", "short", "integer", "long", "float", "double", "decimal", "boolean")
_MESSAGES = {
    "null_score": "null scores (drop or fill them first)",
    "null_label": "null labels (drop or fill them first)",
    "null_weight": "null weights (drop or fill them first)",
    "null_key": "null slice or client keys (drop or fill them first)",
    "label": "labels other than 0 or 1",
    "score": "scores that are NaN or outside [0, 1] (logits need from_logits=True)",
    "weight": "weights outside [0, 1] (larger weights break the sensitivity bound)",
    "fractional_weight": "fractional weights; this mechanism adds integer noise and needs "
    "weights of 0 or 1",
    "unit_weight": "weights other than 1; this mechanism publishes totals as label-free and "
    "takes weights of 1 only (a weight that depends on the label would show in them); use "
    "mechanism='histogram' for weights",
}


def _columns(df: DataFrame, score_col, label_col, weight_col, client_col, slice_col):
    """The DataFrame's used columns under the executors' names (checked to exist and to be
    numeric where they must)."""
    from pyspark.sql import functions as F

    types = {field.name: field.dataType.typeName() for field in df.schema.fields}
    wanted = {"score": score_col, "label": label_col, "weight": weight_col}
    keys = {"slice": slice_col, "client": client_col}
    selected = []
    for role, name in {**wanted, **keys}.items():
        if name is None:
            continue
        if name not in types:
            from dpauc_tf.io.errors import column_excerpt

            raise ValueError(
                f"dpauc_tf.spark: no column {name!r} ({role}) in the DataFrame; it has "
                f"{column_excerpt(sorted(types))}"
            )
        if role in wanted:
            if types[name] not in _NUMERIC:
                raise ValueError(
                    f"dpauc_tf.spark: column {name!r} ({role}) must be numeric, not {types[name]}"
                )
            selected.append(F.col(name).cast("double").alias(role))
        else:
            selected.append(F.col(name).alias(role))
    return df.select(*selected), tuple(role for role, name in keys.items() if name)


def _counted(
    df: DataFrame,
    spec: ReleaseSpec,
    *,
    score_col: str,
    label_col: str,
    weight_col: str | None,
    client_col: str | None,
    slice_col: str | None,
    from_logits: bool,
) -> DataFrame:
    """Step 1, lazily: the counting job's rows ``(slice, client, bucket, pos, neg)`` (every
    partition's sums per group and bucket; negative buckets: rows and problems)."""
    from pyspark.sql import types as T

    selected, key_names = _columns(df, score_col, label_col, weight_col, client_col, slice_col)
    key_type = {
        name: selected.schema[name].dataType if name in key_names else T.StringType()
        for name in ("slice", "client")
    }
    schema = T.StructType(
        [
            T.StructField("slice", key_type["slice"]),
            T.StructField("client", key_type["client"]),
            T.StructField("bucket", T.IntegerType()),
            T.StructField("pos", T.DoubleType()),
            T.StructField("neg", T.DoubleType()),
        ]
    )
    counter = functools.partial(
        count_partition,
        rule=BucketRule.from_thresholds(spec.count_grid()),
        key_names=key_names,
        from_logits=from_logits,
        integer_weights=spec.capabilities.integer_counts,
        unit_weights=spec.capabilities.unit_weights,
    )
    return selected.mapInArrow(counter, schema)


def _refuse_problems(problems: dict[str, int], *, columns: dict, keys: tuple) -> None:
    """One line naming the first kind of bad rows counted (``{kind: rows}``), if any;
    ``columns``: the score, label and weight columns' names, ``keys``: the slice and client
    columns'."""
    bad = [(kind, number) for kind, number in problems.items() if number]
    if not bad:
        return
    kind, number = bad[0]
    role = kind.removeprefix("null_").removeprefix("fractional_").removeprefix("unit_")
    where = columns.get(role) or " or ".join(repr(c) for c in keys if c)
    raise ValueError(
        f"dpauc_tf.spark: {number} row(s) of column {where!r} hold {_MESSAGES[kind]}"
        if role in columns
        else f"dpauc_tf.spark: {number} row(s) of column {where} hold {_MESSAGES[kind]}"
    )


def count_buckets(
    df: DataFrame,
    spec: ReleaseSpec,
    *,
    score_col: str = "score",
    label_col: str = "label",
    weight_col: str | None = None,
    client_col: str | None = None,
    slice_col: str | None = None,
    from_logits: bool = False,
) -> dict[tuple[Any, Any], tuple[np.ndarray, np.ndarray, float]]:
    """Steps 1 and 2: ``{(slice, client): (pos, neg, num_examples)}`` on
    ``spec.count_grid()`` (``None`` for an absent key), checked (see the module docstring).
    """
    from pyspark.sql import functions as F

    counted = _counted(
        df,
        spec,
        score_col=score_col,
        label_col=label_col,
        weight_col=weight_col,
        client_col=client_col,
        slice_col=slice_col,
        from_logits=from_logits,
    )
    sums = (  # one Arrow table to the driver (PySpark 4), not a Row object per cell
        counted.groupBy("slice", "client", "bucket")
        .agg(F.sum("pos").alias("pos"), F.sum("neg").alias("neg"))
        .toArrow()
    )
    num_buckets = spec.count_grid().num_thresholds + 1
    keys: dict = {}  # (slice, client) -> its index, in the order met
    group = np.fromiter(
        (
            keys.setdefault(key, len(keys))
            for key in zip(
                sums.column("slice").to_pylist(), sums.column("client").to_pylist(), strict=True
            )
        ),
        np.int64,
        sums.num_rows,
    )
    bucket = np.asarray(sums.column("bucket").to_numpy(), np.int64)
    pos_sum = np.asarray(sums.column("pos").to_numpy(), np.float64)
    neg_sum = np.asarray(sums.column("neg").to_numpy(), np.float64)
    pos = np.zeros((len(keys), num_buckets))
    neg = np.zeros((len(keys), num_buckets))
    cell = bucket >= 0  # one row per (slice, client, bucket) after the groupBy
    pos[group[cell], bucket[cell]] = pos_sum[cell]
    neg[group[cell], bucket[cell]] = neg_sum[cell]
    rows = np.bincount(group[bucket == ROWS], pos_sum[bucket == ROWS], minlength=len(keys))
    problems = {kind: int(pos_sum[bucket == code].sum()) for code, kind in PROBLEMS.items()}
    columns = {"score": score_col, "label": label_col, "weight": weight_col}
    _refuse_problems(problems, columns=columns, keys=(slice_col, client_col))
    if not keys:
        raise ValueError("dpauc_tf.spark: the DataFrame has no rows: nothing to release")
    # num_examples: the rows, not the weights' sum (a weight may depend on the label)
    return {key: (pos[i], neg[i], float(rows[i])) for key, i in keys.items()}


def _rank_sums_over_clients(
    df: DataFrame, spec: ReleaseSpec, *, columns: dict, from_logits: bool, **release: Any
) -> dict[Any, AUCResult]:
    """The rank sums over a client column: the counting job's rows stay on the executors,
    where `dpauc_tf.spark.rank_sums` runs the rounds (the problems refused in one line
    before any noise is drawn)."""
    from dpauc_tf.spark.rank_sums import release_rank_sums

    names = {role: columns[f"{role}_col"] for role in ("score", "label", "weight")}
    keys = (columns["slice_col"], columns["client_col"])
    return release_rank_sums(
        spec,
        _counted(df, spec, **columns, from_logits=from_logits),
        functools.partial(_refuse_problems, columns=names, keys=keys),
        **release,
    )


def _release(spec, pos, neg, seed, repeats, num_clients=None) -> dict[str, np.ndarray]:
    release = spec.build(num_clients).release(pos, neg, seed=seed, repeats=repeats)
    return {key: value.numpy() for key, value in release.items()}


def _summed_release(spec, slice_key, clients: list, repeats: int) -> tuple[dict, Any]:
    """The server's sum of a slice's clients' releases (see the module docstring) and the
    mechanism it was released with (whose ``noise_shares`` rule `finish_release` asks)."""
    num_clients = len(clients)
    reports = [
        _release(spec, pos, neg, spec.seed_for(slice_key, client), repeats, num_clients)
        for client, (pos, neg, _) in clients
    ]
    summed = {key: sum(report[key] for report in reports) for key in reports[0]}
    return summed, spec.build(num_clients)


def release_counts(
    spec: ReleaseSpec,
    counts: dict,
    *,
    per_client: bool,
    repeats: int = 1,
    max_slices_per_example: int | None = None,
    confidence: float | None = None,
    ci_target: str = "population",
) -> dict[Any, AUCResult]:
    """Step 3: ``{slice: AUCResult}`` from [`count_buckets`][]' counts (see the module
    docstring), sorted by slice key. The rank sums over clients are refused here: their two
    rounds run on the executors ([`private_auc_by_slice`][] with a client column), so that
    the driver never holds a client's counts."""
    if per_client and spec.build().releases_from_summed_counts:
        raise ValueError(
            f"dpauc_tf.spark: {spec.mechanism!r} over clients runs its rounds on the "
            "executors: use private_auc_by_slice(df, ..., client_col=...), not release_counts"
        )
    by_slice: dict = {}
    for (slice_key, client), value in counts.items():
        by_slice.setdefault(slice_key, {})[client] = value
    most = max_slices_per_example or len(by_slice)  # the worst case: every slice
    results = {}
    for slice_key in sorted(by_slice, key=repr):
        clients = by_slice[slice_key]
        num_examples = sum(value[2] for value in clients.values())
        if not per_client:
            ((pos, neg, _),) = clients.values()
            summed = _release(spec, pos, neg, spec.seed_for(slice_key), repeats)
            num_clients = mechanism = None
        else:
            num_clients = len(clients)
            ordered = sorted(clients.items(), key=lambda kv: repr(kv[0]))
            summed, mechanism = _summed_release(spec, slice_key, ordered, repeats)
        results[slice_key] = finish_release(
            spec,
            summed,
            num_examples=num_examples,
            num_clients=num_clients,
            mechanism=mechanism,
            slice_key=slice_key,
            slices_per_example=most,
            confidence=confidence,
            ci_target=ci_target,
        )
    return results


_REQUIRED: Any = object()  # epsilon has no default unless a spec is given


def release_spec(arguments: ReleaseArguments, client_col: str | None = None) -> ReleaseSpec:
    """The one spec of a Spark release, checked
    ([`ReleaseArguments.spec`][dpauc_tf.mechanisms.arguments.ReleaseArguments.spec]):
    ``mechanism=None`` takes the registry's default for where the labels are (one holder,
    or clients without secure aggregation with a client column:
    [`Deployment`][dpauc_tf.mechanisms.laws.Deployment]); a mechanism that changes the
    examples before counting is refused."""
    deployment = Deployment.CENTRAL if client_col is None else Deployment.FEDERATED
    spec = arguments.spec(deployment)
    spec.check_releases_counts(SURFACE)
    return spec


def check_clients(spec: ReleaseSpec, surface: str = SURFACE) -> None:
    """Refuses several clients for a mechanism that releases one data holder's AUC and
    has no rounds over clients (``auc-only``); the rank sums run two rounds."""
    if not spec.build().releases_from_summed_counts:
        spec.check_summable(2, f"{surface} with a client column")


def private_auc_by_slice(
    df: DataFrame,
    slice_col: str | None,
    *,
    score_col: str = "score",
    label_col: str = "label",
    weight_col: str | None = None,
    client_col: str | None = None,
    mechanism: str | None = None,
    epsilon: float | None = _REQUIRED,
    num_thresholds: int = DEFAULT_NUM_THRESHOLDS,
    threshold_grid: str | Sequence[float] = "tf",
    delta: float | None = None,
    seed: int | None = None,
    repeats: int = 1,
    max_slices_per_example: int | None = None,
    from_logits: bool = False,
    mechanism_options: dict | None = None,
    confidence: float | None = None,
    ci_target: str = "population",
    spec: ReleaseSpec | None = None,
) -> dict[Any, AUCResult]:
    """One [`AUCResult`][] per value of ``slice_col``
    (``None``: one, keyed ``None``, for the whole DataFrame); see the module docstring.

    Args:
      df: a ``pyspark.sql.DataFrame``.
      slice_col: the column whose values are the slices.
      score_col: scores in [0, 1] (logits with ``from_logits``).
      label_col: labels 0 or 1.
      weight_col: optional weights in [0, 1] (0 or 1 for integer-noise mechanisms).
      client_col: optional client ids: every client of a slice reports, the reports are
        summed.
      mechanism: a registered mechanism (``dpauc_tf.list_mechanisms()``). Default
        (``None``): the rule of ``DPAUC`` and ``dpauc evaluate``
        ([`dpauc_tf.mechanisms.registry.default_mechanism`][]) for one data holder, or for
        clients without secure aggregation with a client column. Every result names the
        mechanism it used (``result.mechanism``).
      epsilon: epsilon of one release, required (``None``: no noise, NOT private; the
        result's mechanism is then ``"none"``).
      num_thresholds: ``T``.
      threshold_grid: ``"tf"``, ``"reference"`` or an explicit list.
      delta: for the mechanisms that take one.
      mechanism_options: extra constructor options (e.g. ``{"family": "skellam"}``).
      from_logits: the scores are logits, mapped onto [0, 1] by
        [`dpauc_tf.core.logit_scale.logit_scores`][] (the map of ``dpauc --from-logits``).
      seed: ``None`` (fresh noise, the only mode for real releases) or an int (reproducible).
      repeats: independent releases per slice from one counting pass (each is accounted).
      max_slices_per_example: a bound on the slices one example is in; ``None``: the
        number of slices (the worst case).
      confidence: e.g. 0.95: every slice's result gets an interval per release
        (``result.interval``; no privacy cost, ``docs/intervals.md``). ci_target:
        ``"population"`` (default) or ``"sample"``.
      spec: the release, built already ([`ReleaseSpec`][], e.g. by ``dpauc evaluate`` or
        [`DPAUCEvaluator`][]); then ``mechanism``, ``epsilon``, ``num_thresholds``,
        ``threshold_grid``, ``delta``, ``mechanism_options`` and ``seed`` are not given.
    """
    check_repeats(repeats)
    check_slices_bound(max_slices_per_example)
    check_label_free_keys(
        label_col, [] if slice_col is None else [[slice_col]], client_col, SURFACE
    )
    from dpauc_tf.tf_startup import import_tensorflow_quietly

    import_tensorflow_quietly()  # the release on the driver; no start-up chatter
    if spec is None:
        if epsilon is _REQUIRED:
            raise TypeError("private_auc_by_slice needs epsilon= (None: no noise) or spec=")
        spec = release_spec(ReleaseArguments.of(locals()), client_col)
    elif epsilon is not _REQUIRED or mechanism is not None:
        raise TypeError("give either spec= or the release's settings (mechanism=, epsilon=...)")
    spec.check_releases_counts(SURFACE)
    if confidence is not None:  # refused before Spark counts anything
        from dpauc_tf.mechanisms.intervals import (
            IntervalTarget,
            check_confidence,
            check_interval_support,
        )

        check_confidence(confidence), IntervalTarget(ci_target)
        check_interval_support(spec.build())
    if client_col is not None:
        check_clients(spec)
        if spec.build().releases_from_summed_counts:  # the rank sums: rounds on the executors
            return _rank_sums_over_clients(
                df,
                spec,
                columns={
                    "score_col": score_col,
                    "label_col": label_col,
                    "weight_col": weight_col,
                    "client_col": client_col,
                    "slice_col": slice_col,
                },
                from_logits=from_logits,
                repeats=repeats,
                max_slices_per_example=max_slices_per_example,
                confidence=confidence,
                ci_target=ci_target,
            )
    counts = count_buckets(
        df,
        spec,
        score_col=score_col,
        label_col=label_col,
        weight_col=weight_col,
        client_col=client_col,
        slice_col=slice_col,
        from_logits=from_logits,
    )
    return release_counts(
        spec,
        counts,
        per_client=client_col is not None,
        repeats=repeats,
        max_slices_per_example=max_slices_per_example,
        confidence=confidence,
        ci_target=ci_target,
    )


def private_auc(df: DataFrame, **options: Any) -> AUCResult:
    """The release of the whole DataFrame: [`private_auc_by_slice`][] without slices
    (the same keyword arguments but ``slice_col`` and ``max_slices_per_example``).

        >>> result = private_auc(df, epsilon=1.0, num_thresholds=100)  # doctest: +SKIP
        >>> result.auc, result.epsilon_total  # doctest: +SKIP
    """
    if "slice_col" in options or "max_slices_per_example" in options:
        raise TypeError("private_auc releases the whole DataFrame: use private_auc_by_slice")
    return private_auc_by_slice(df, None, **options)[None]


# DPAUCEvaluator's params -> private_auc_by_slice's keyword arguments
_EVALUATOR_NAMES = {
    "scoreCol": "score_col",
    "labelCol": "label_col",
    "weightCol": "weight_col",
    "clientCol": "client_col",
    "repeats": "repeats",
    "maxSlicesPerExample": "max_slices_per_example",
    "fromLogits": "from_logits",
}  # the others (mechanism, epsilon, ...) are the evaluator's one spec


class DPAUCEvaluator:
    """``pyspark.ml.evaluation.BinaryClassificationEvaluator``'s shape, with label DP.

    ``evaluate(df)`` returns the AUC (the first repeat's; NaN where it is undefined) of the
    whole DataFrame; [`evaluateResults`][] returns every slice's full
    [`AUCResult`][] (the curve, the epsilon of the slice and
    of the whole output, the counts). Every call is a new release that spends privacy
    budget, so this is deliberately not a ``pyspark.ml`` ``Evaluator``: a
    ``CrossValidator`` would call it once per model and fold, and those releases compose.

    Params (camelCase, as Spark's): ``scoreCol`` (``rawPredictionCol`` is accepted as an
    alias), ``labelCol``, ``weightCol``, ``clientCol``, ``sliceCol``, ``mechanism``,
    ``epsilon``, ``delta``, ``numThresholds``, ``thresholdGrid``, ``seed``, ``repeats``,
    ``maxSlicesPerExample``, ``fromLogits``, ``mechanismOptions``. ``mechanism`` defaults to
    the one rule of ``DPAUC`` and ``dpauc evaluate`` (``getParam("mechanism")`` names it).

        >>> DPAUCEvaluator(epsilon=1.0, numThresholds=100).getMetricName()
        'dpAreaUnderROC'
        >>> DPAUCEvaluator(epsilon=1.0).getParam("mechanism")
        'rank-sum'
    """

    def __init__(
        self,
        *,
        scoreCol: str = "score",
        labelCol: str = "label",
        weightCol: str | None = None,
        clientCol: str | None = None,
        sliceCol: str | None = None,
        mechanism: str | None = None,
        epsilon: float | None,
        delta: float | None = None,
        numThresholds: int = DEFAULT_NUM_THRESHOLDS,
        thresholdGrid: str | Sequence[float] = "tf",
        seed: int | None = None,
        repeats: int = 1,
        maxSlicesPerExample: int | None = None,
        fromLogits: bool = False,
        mechanismOptions: dict | None = None,
        rawPredictionCol: str | None = None,
    ):
        params = dict(locals())
        params.pop("self")
        alias = params.pop("rawPredictionCol")
        if alias is not None:
            params["scoreCol"] = alias
        slices = [] if sliceCol is None else [[sliceCol]]
        check_label_free_keys(labelCol, slices, clientCol, SURFACE)
        # the release, built and checked once now (mechanism, epsilon, delta, options, seed)
        self._spec = release_spec(
            ReleaseArguments(  # Spark ML's camelCase names of the same keywords
                epsilon,
                mechanism,
                num_thresholds=numThresholds,
                threshold_grid=thresholdGrid,
                delta=delta,
                mechanism_options=mechanismOptions,
                seed=seed,
            ),
            clientCol,
        )
        params["mechanism"] = self._spec.mechanism
        self._params = params

    def getMetricName(self) -> str:
        return "dpAreaUnderROC"

    def isLargerBetter(self) -> bool:
        return True

    def getParam(self, name: str) -> Any:
        return self._params[name]

    def evaluateResults(self, df: DataFrame) -> dict[Any, AUCResult]:
        """``{slice: AUCResult}`` (key ``None`` without ``sliceCol``)."""
        options = {
            _EVALUATOR_NAMES[name]: value
            for name, value in self._params.items()
            if name in _EVALUATOR_NAMES
        }
        return private_auc_by_slice(df, self._params["sliceCol"], **options, spec=self._spec)

    def evaluate(self, df: DataFrame) -> float:
        """The AUC of the whole DataFrame (NaN where undefined); with ``sliceCol`` set, use
        [`evaluateResults`][]."""
        if self._params["sliceCol"] is not None:
            raise ValueError(
                "DPAUCEvaluator(sliceCol=...) releases one AUC per slice: use evaluateResults(df)"
            )
        return self.evaluateResults(df)[None].auc
