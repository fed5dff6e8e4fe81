"""``PrivateAUC``: one release per slice from Beam, through a mechanism of the registry.

Input: either **column batches** with ``slicing=`` (``{column: array}`` dicts, as
[`ReadScores`][] reads them; the slices are computed inside the
transform from the examples' own columns, as TFMA's ``SlicingSpec`` does), or a
``PCollection`` of ``(slice_keys, example)`` pairs, or with ``per_client=True``
``(slice_keys, client_id, example)`` triples. ``example`` is what
[`CountBuckets`][] takes (one example or a batch); ``slice_keys``
is one hashable key (the example is in one slice) or a ``list``/``set`` of keys (the
example is in each of them: overlapping slices).

Per slice (``per_client=False``): the examples are counted in parallel and merged
(``CombinePerKey(CountBuckets)``) and the merged counts are released **once**, at
extraction, by ``mechanism.release`` (central noise); the curve and the AUC are the
mechanism's post-processing (``to_confusion``, ``estimate_auc``), no noise added.

Per client (``per_client=True``): every client's counts in a slice are released by the
mechanism's ``release`` (a local-DP report, or for secure mechanisms the integer counts plus
a noise share sized for the slice's number of clients), and the reports are summed per
slice, as a federated server would (`dpauc_tf.federated`). A Beam runner sums the
reports in the clear: for secure mechanisms this shows the arithmetic of secure
aggregation, not its cryptography (whoever runs the pipeline sees every report).

Accounting (label DP): every slice's output is ``repeats`` releases; an example in ``k``
slices is in ``k`` of them. Disjoint slices (every example in one slice) compose in
parallel, so the whole output costs what one slice costs; overlapping slices add up: the
whole costs the composition of ``repeats * k`` releases, composed with dp-accounting
([`privacy_spent`][dpauc_tf.mechanisms.base.CountMechanism.privacy_spent]), ``k`` a bound on the
number of slices any example is in. With ``slicing=``, ``k`` is the number of slicing specs
(every example is in one slice of each spec, at most), whatever the batching. With keyed
elements, the transform cannot see which elements hold the same
example (a batch keyed ``"all"`` and its subsets keyed by group, sent as separate
elements, put every example in two slices while every element names one), so ``k`` is
the number of slices in the output (the worst case: an example in every slice) unless
``max_slices_per_example`` declares a smaller bound; an element that names more slices
than the declared bound is refused.

Seeds: ``seed=None`` draws every release's seed from the operating system (fresh noise);
an integer seed makes the output reproducible, with a different seed for every slice (and
client) derived from ``(seed, slice key, client id)``: no two slices share noise.

Every release increments the Beam counter ``dpauc_tf.beam/releases``.

    >>> import apache_beam as beam
    >>> from apache_beam.testing.util import assert_that, equal_to
    >>> with beam.Pipeline() as p:  # doctest: +SKIP
    ...     out = (p | beam.Create([("all", (0.9, 1)), ("all", (0.2, 0))])
    ...              | PrivateAUC("histogram", epsilon=None, num_thresholds=10)
    ...              | beam.Map(lambda r: (r.slice_key, r.auc_or_none)))
    ...     assert_that(out, equal_to([("all", 1.0)]))
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import apache_beam as beam
import numpy as np

from dpauc_tf.beam.counting import BucketCounts, CountBuckets
from dpauc_tf.core.defaults import DEFAULT_NUM_THRESHOLDS
from dpauc_tf.mechanisms.registry import check_mechanism_options, default_mechanism
from dpauc_tf.mechanisms.release import (
    AUCResult,
    ReleaseSpec,
    check_label_free_keys,
    check_repeats,
    check_slices_bound,
    finish_release,
)

RELEASE_COUNTER = ("dpauc_tf.beam", "releases")


def _slice_keys(keys: Any) -> list:
    if isinstance(keys, (list, set, frozenset)):
        return list(dict.fromkeys(keys))  # an example counts once per slice
    return [keys]


def _check_key(key: Any) -> Any:
    if not isinstance(key, Hashable):
        raise ValueError(f"dpauc_tf.beam: slice and client keys must be hashable, got {key!r}")
    return key


def _release(spec: ReleaseSpec, counts: BucketCounts, seed, repeats, num_clients=None):
    mechanism = spec.build(num_clients)
    release = mechanism.release(counts.pos, counts.neg, seed=seed, repeats=repeats)
    beam.metrics.Metrics.counter(*RELEASE_COUNTER).inc()
    return {key: value.numpy() for key, value in release.items()}


class _SumReports(beam.CombineFn):
    """Sums clients' reports ``(release, num_examples)`` of one slice, and counts them."""

    def create_accumulator(self):
        return (None, 0.0, 0)

    def add_input(self, accumulator, report):
        total, examples, clients = accumulator
        release, num_examples = report
        if total is None:
            total = {key: np.array(value, np.float64) for key, value in release.items()}
        else:
            total = {key: total[key] + value for key, value in release.items()}
        return (total, examples + num_examples, clients + 1)

    def merge_accumulators(self, accumulators):
        merged = self.create_accumulator()
        for total, examples, clients in accumulators:
            if total is None:
                merged = (merged[0], merged[1] + examples, merged[2] + clients)
                continue
            summed = total if merged[0] is None else {k: merged[0][k] + total[k] for k in total}
            merged = (summed, merged[1] + examples, merged[2] + clients)
        return merged

    def extract_output(self, accumulator):
        return accumulator


class PrivateAUC(beam.PTransform):
    """Keyed examples -> one `AUCResult` per slice (see the module docstring).

    Args:
      mechanism: a registered mechanism (``dpauc_tf.list_mechanisms()``); mechanisms that
        change the examples before counting (``score-noise``) are refused. Default
        (``None``): the rule of ``DPAUC`` and ``dpauc evaluate``
        ([`dpauc_tf.mechanisms.registry.default_mechanism`][]): ``"rank-sum"`` (``"auc-only"``
        with a ``delta``) for one holder per slice, ``"histogram"`` per client. Every
        result names the mechanism it used (``result.mechanism``).
      epsilon: epsilon of one release (``None`` = no noise, NOT private).
      num_thresholds: ``T``.
      threshold_grid: ``"tf"``, ``"reference"`` or an explicit list.
      delta: for mechanisms that take one (``paper-gaussian``, Skellam shares).
      seed: ``None`` (fresh noise for every release) or an int (reproducible).
      repeats: independent releases per slice (each one is accounted).
      per_client: the input is ``(slice_keys, client_id, example)``: sum clients' reports.
      max_slices_per_example: a bound on the number of slices any one example is in
        (``1``: disjoint slices), however the examples are split into elements; ``None``
        (default) takes the number of slices in the output, which is always a bound.
        An element that names more slice keys than the bound is refused.
      slicing: the input is column batches (``{column: array}``); one slice per value (or
        tuple of values) of each spec's columns, ``()`` being the overall slice, e.g.
        ``[(), ("country",), ("country", "device")]``; a slice key is the tuple of
        ``(column, value)`` pairs (``()`` for the overall slice). Rows with a missing value
        in a spec's columns are in none of its slices (as in TFMA).
      score_column: the score column of the batches (with ``slicing``).
      label_column: the label column (with ``slicing``).
      weight_column: the weight column, if any (with ``slicing``).
      client_column: the client column, if any (with ``slicing``); it sums every client's
        report (``per_client``).
      from_logits: the scores are logits.
      mechanism_options: extra constructor options (e.g. ``{"family": "skellam"}``).
      confidence: e.g. 0.95: every slice's result gets an interval per release
        (``result.interval``, ``to_dict()["releases"]``; no privacy cost,
        ``docs/intervals.md``). ci_target: ``"population"`` (default) or ``"sample"``.

    Examples:
        >>> PrivateAUC("histogram", epsilon=1.0, num_thresholds=10).spec.mechanism
        'histogram'
    """

    def __init__(
        self,
        mechanism: str | None = None,
        *,
        epsilon: float | None,
        num_thresholds: int = DEFAULT_NUM_THRESHOLDS,
        threshold_grid: str | Sequence[float] = "tf",
        delta: float | None = None,
        seed: int | None = None,
        repeats: int = 1,
        per_client: bool = False,
        max_slices_per_example: int | None = None,
        slicing: Sequence[Sequence[str] | str] | None = None,
        score_column: str = "score",
        label_column: str = "label",
        weight_column: str | None = None,
        client_column: str | None = None,
        from_logits: bool = False,
        mechanism_options: dict | None = None,
        label: str | None = None,
        confidence: float | None = None,
        ci_target: str = "population",
    ):
        super().__init__(label)
        check_repeats(repeats)
        check_slices_bound(max_slices_per_example)
        self.slicing = _slicing_specs(slicing)
        if self.slicing is not None:
            if max_slices_per_example not in (None, len(self.slicing)):
                raise ValueError(
                    f"with slicing, every example is in at most {len(self.slicing)} slices "
                    f"(one per spec): max_slices_per_example={max_slices_per_example} "
                    "does not apply"
                )
            max_slices_per_example = len(self.slicing)
            if per_client and client_column is None:
                raise ValueError("per_client=True with slicing needs client_column")
            per_client = client_column is not None
        elif client_column is not None or weight_column is not None:
            raise ValueError("weight_column and client_column name columns of slicing's input")
        self.columns = (score_column, label_column, weight_column, client_column)
        if mechanism is None:  # the one default rule (DPAUC's, dpauc evaluate's)
            mechanism = default_mechanism(delta=delta, needs_curve=per_client)
        if self.slicing is not None:
            check_label_free_keys(label_column, self.slicing, client_column, "PrivateAUC")
        # validates the mechanism, epsilon, delta, options and seed now
        self.spec = ReleaseSpec.make(
            mechanism,
            epsilon=epsilon,
            num_thresholds=num_thresholds,
            threshold_grid=threshold_grid,
            delta=delta,
            options=check_mechanism_options(
                mechanism,
                mechanism_options,
                entry="dpauc_tf.beam.PrivateAUC",
                num_clients="the clients of each slice (per_client=True)",
            ),
            seed=seed,
        )
        self.spec.check_releases_counts("dpauc_tf.beam")
        self.interval = _interval_options(self.spec, confidence, ci_target)
        if per_client:  # before any work: auc-only's releases cannot be summed
            self.spec.check_summable(2, "PrivateAUC(per_client=True)")
        self.thresholds = self.spec.thresholds
        self.integer_weights = self.spec.capabilities.integer_counts
        # the grid the examples are counted on: the mechanism's own where it has one
        # (auc-only counts on a fine grid of its own)
        self.count_grid = self.spec.count_grid()
        self.repeats, self.per_client = repeats, per_client
        self.max_slices_per_example = max_slices_per_example
        self.from_logits = from_logits

    def expand(self, examples):
        spec, repeats = self.spec, self.repeats
        declared = self.max_slices_per_example
        if self.slicing is not None:
            examples = examples | "SliceColumns" >> beam.FlatMap(
                _slice_columns, specs=self.slicing, columns=self.columns
            )
        counter = CountBuckets(
            self.count_grid,
            from_logits=self.from_logits,
            integer_weights=self.integer_weights,
            unit_weights=spec.capabilities.unit_weights,
        )
        if self.per_client:
            keyed = examples | "KeyBySliceAndClient" >> beam.FlatMap(
                _key_by_slice_and_client, declared=declared
            )
            slice_of = lambda kv: kv[0][0]  # noqa: E731
        else:
            keyed = examples | "KeyBySlice" >> beam.FlatMap(_key_by_slice, declared=declared)
            slice_of = lambda kv: kv[0]  # noqa: E731
        if declared is None:  # the worst case: an example may be in every slice
            bound = (
                keyed
                | "SliceKeys" >> beam.Map(slice_of)
                | "DistinctSlices" >> beam.Distinct()
                | "CountSlices" >> beam.combiners.Count.Globally()
            )
        else:
            bound = keyed.pipeline | "DeclaredBound" >> beam.Create([declared])
        counts = keyed | "CountPerBucket" >> beam.CombinePerKey(counter)
        most = beam.pvalue.AsSingleton(bound)
        if not self.per_client:
            return counts | "ReleaseOncePerSlice" >> beam.Map(
                _release_slice, spec=spec, repeats=repeats, most=most, interval=self.interval
            )
        clients_per_slice = (
            counts
            | "SliceOfClient" >> beam.Map(lambda kv: (kv[0][0], 1))
            | "ClientsPerSlice" >> beam.CombinePerKey(sum)
        )
        reports = counts | "ClientReports" >> beam.Map(
            _client_report,
            spec=spec,
            repeats=repeats,
            clients=beam.pvalue.AsDict(clients_per_slice),
        )
        return (
            reports
            | "SumReports" >> beam.CombinePerKey(_SumReports())
            | "FinishSlice"
            >> beam.Map(_finish_reports, spec=spec, most=most, interval=self.interval)
        )


def _element_slices(element: Any, size: int, declared: int | None) -> list:
    if not isinstance(element, (tuple, list)) or len(element) != size:
        form = "(slice_keys, client_id, example)" if size == 3 else "(slice_keys, example)"
        raise ValueError(
            f"dpauc_tf.beam: PrivateAUC(per_client={size == 3}) takes {form} elements, "
            f"got {_describe(element)}"
        )
    keys = [_check_key(key) for key in _slice_keys(element[0])]
    if declared is not None and len(keys) > declared:
        raise ValueError(
            f"dpauc_tf.beam: an element names {len(keys)} slices but "
            f"max_slices_per_example={declared}"
        )
    return keys


def _describe(element: Any) -> str:
    if isinstance(element, (tuple, list)):
        return f"a {type(element).__name__} of {len(element)}"
    return type(element).__name__


def _key_by_slice(element, declared):
    return [(key, element[1]) for key in _element_slices(element, 2, declared)]


def _key_by_slice_and_client(element, declared):
    keys = _element_slices(element, 3, declared)
    client = _check_key(element[1])
    return [((key, client), element[2]) for key in keys]


def _slicing_specs(slicing) -> tuple[tuple[str, ...], ...] | None:
    if slicing is None:
        return None
    if isinstance(slicing, str) or not isinstance(slicing, Sequence) or not slicing:
        raise ValueError(
            f"slicing must be a non-empty list of column tuples, e.g. [(), ('group',)], "
            f"got {slicing!r}"
        )
    specs = []
    for spec in slicing:
        spec = (spec,) if isinstance(spec, str) else tuple(spec)
        if not all(isinstance(column, str) and column for column in spec):
            raise ValueError(f"a slicing spec is a tuple of column names, got {spec!r}")
        specs.append(spec)
    if len(set(specs)) != len(specs):
        raise ValueError(f"slicing lists a spec twice: {slicing!r}")
    return tuple(specs)


def _plain_value(value: Any) -> Any:
    """A slice or client value as plain Python (the same key from every file format)."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _slice_columns(batch, specs, columns) -> list:
    """One column batch -> ``(slice_key, example)`` (or ``(slice_key, client, example)``)
    elements, one per slice of every spec (and client) that the batch's rows are in."""
    import pandas as pd

    if not isinstance(batch, dict):
        raise ValueError(
            "dpauc_tf.beam: PrivateAUC(slicing=...) takes column batches ({column: array}, "
            f"e.g. from dpauc_tf.beam.ReadScores), got {_describe(batch)}"
        )
    score, label, weight, client = columns
    names = [name for name in (score, label, weight, client) if name is not None]
    names += [column for spec in specs for column in spec]
    missing = [name for name in dict.fromkeys(names) if name not in batch]
    if missing:
        from dpauc_tf.io.scores import column_excerpt

        raise ValueError(
            f"dpauc_tf.beam: the batch has no column {missing[0]!r} (its columns: "
            f"{column_excerpt(batch)})"
        )
    scores, labels = np.asarray(batch[score]), np.asarray(batch[label])
    weights = None if weight is None else np.asarray(batch[weight])
    if scores.size == 0:
        return []
    out = []
    for spec in specs:
        if not spec:
            groups = {(): np.arange(scores.size)}
        else:
            frame = pd.DataFrame({column: np.asarray(batch[column]) for column in spec})
            groups = frame.groupby(list(spec), sort=False, dropna=True).indices
        for values, rows in groups.items():
            values = values if isinstance(values, tuple) else (values,)
            key = tuple((column, _plain_value(v)) for column, v in zip(spec, values, strict=True))
            out += _examples_of(key, rows, scores, labels, weights, client, batch)
    return out


def _examples_of(key, rows, scores, labels, weights, client, batch) -> list:
    def example(part):
        found = (scores[part], labels[part])
        return found if weights is None else (*found, weights[part])

    if client is None:
        return [(key, example(rows))]
    ids = np.asarray(batch[client])[rows]
    clients, inverse = np.unique(ids, return_inverse=True)
    return [
        (key, _plain_value(value), example(rows[inverse == index]))
        for index, value in enumerate(clients)
    ]


def _interval_options(spec: ReleaseSpec, confidence, ci_target) -> dict:
    """``finish_release``'s interval arguments, checked before any work."""
    if confidence is None:
        return {}
    from dpauc_tf.mechanisms.intervals import (
        check_confidence,
        check_interval_support,
        check_target,
    )

    check_interval_support(spec.build())
    return {"confidence": check_confidence(confidence), "ci_target": check_target(ci_target)}


def _release_slice(item, spec: ReleaseSpec, repeats, most, interval=None) -> AUCResult:
    key, counts = item
    release = _release(spec, counts, spec.seed_for(key), repeats)
    return finish_release(
        spec,
        release,
        num_examples=counts.num_examples,
        slice_key=key,
        slices_per_example=most,
        **(interval or {}),
    )


def _client_report(item, spec: ReleaseSpec, repeats, clients):
    (key, client), counts = item
    release = _release(spec, counts, spec.seed_for(key, client), repeats, clients[key])
    return key, (release, counts.num_examples)


def _finish_reports(item, spec: ReleaseSpec, most, interval=None) -> AUCResult:
    key, (release, num_examples, num_clients) = item
    return finish_release(
        spec,
        release,
        num_examples=num_examples,
        num_clients=num_clients,
        slice_key=key,
        slices_per_example=most,
        **(interval or {}),
    )
