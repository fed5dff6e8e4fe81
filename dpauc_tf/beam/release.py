"""``PrivateAUC``: one release per slice from Beam, through a mechanism of the registry.

Input: either **column batches** with ``slicing=`` (``{column: array}`` dicts, as
[`ReadScores`][] reads them; the slices are computed inside the
transform from the examples' own columns, as TFMA's ``SlicingSpec`` does), or a
``PCollection`` of ``(slice_keys, example)`` pairs, or with ``per_client=True``
``(slice_keys, client_id, example)`` triples. ``example`` is what
[`CountBuckets`][] takes (one example or a batch); ``slice_keys``
is one hashable key (the example is in one slice) or a ``list``/``set`` of keys (the
example is in each of them: overlapping slices).

Per slice (``per_client=False``): one ``CombineFn``, [`ReleaseCounts`][] (shared with the
TFMA metric), counts the examples in parallel, merges, and releases the merged counts
**once**, at extraction, by ``mechanism.release`` (central noise); the curve and the AUC are
[`finish_release`][dpauc_tf.mechanisms.release.finish_release]'s post-processing, no noise added.

Per client (``per_client=True``): every client's counts in a slice are released by the
mechanism's ``release`` (a local-DP report, or for secure mechanisms the integer counts plus
a noise share sized for the slice's number of clients), and the reports are summed per
slice, as a federated server would (`dpauc_tf.federated`). A Beam runner sums the
reports in the clear: for secure mechanisms this shows the arithmetic of secure
aggregation, not its cryptography (whoever runs the pipeline sees every report). The rank
sums (``rank-sum``, ``secure-rank-sum``) need the global ranks first: two passes
(`dpauc_tf.beam.rank_sums`).

The release is one [`ReleaseSpec`][dpauc_tf.mechanisms.release.ReleaseSpec]: built once
from the arguments by ``ReleaseArguments.spec`` (the registry's default for the deployment where
no mechanism is named: central per slice, federated per client), or given ready (``spec=``).

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
from dpauc_tf.beam.reports import SumReports, count_release
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

_MISSING = object()  # no epsilon given: refused, never "no noise"
_DEFAULTS = {
    "mechanism": None,
    "num_thresholds": DEFAULT_NUM_THRESHOLDS,
    "threshold_grid": "tf",
    "delta": None,
    "seed": None,
    "mechanism_options": None,
}


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
    count_release()
    return {key: value.numpy() for key, value in release.items()}


class ReleaseCounts(beam.CombineFn):
    """The one release combiner of ``PrivateAUC`` and the TFMA metric: counts the examples
    per bucket ([`CountBuckets`][] on the spec's counting grid), merges by adding, and
    releases the merged counts **once**, at extraction, through the spec's mechanism
    (central noise) and [`finish_release`][dpauc_tf.mechanisms.release.finish_release].

    Args:
      spec: the release.
      repeats: independent releases (each one accounted).
      from_logits: the scores are logits.
      keyed: the inputs are ``(slice_key, example)`` pairs and the release's seed is
        ``spec.seed_for(slice_key)`` (``PrivateAUC``); otherwise ``spec.seed_for()``
        (TFMA: its combiner does not see the slice; a TFMA spec has no fixed seed).
      slices_per_example: the bound the whole output's cost composes (``extract_output``
        also takes it as a keyword, e.g. a side input).
      interval: ``finish_release``'s ``confidence`` and ``ci_target``, if asked.

    Examples:
        >>> spec = ReleaseSpec.make("histogram", epsilon=None, num_thresholds=3)
        >>> fn = ReleaseCounts(spec)
        >>> acc = fn.add_input(fn.create_accumulator(), ([0.9, 0.2, 0.4], [1, 0, 0]))
        >>> fn.extract_output(acc).auc
        1.0
    """

    def __init__(
        self,
        spec: ReleaseSpec,
        *,
        repeats: int = 1,
        from_logits: bool = False,
        keyed: bool = False,
        slices_per_example: int = 1,
        interval: dict | None = None,
    ):
        self.spec, self.repeats, self.keyed = spec, check_repeats(repeats), keyed
        self.slices_per_example = slices_per_example
        self.interval = dict(interval or {})
        self.counter = counter_for(spec, from_logits)

    # the accumulator: ((slice_key,) or (), BucketCounts); Beam passes side inputs to every
    # method as keywords
    def create_accumulator(self, **unused):
        return ((), self.counter.create_accumulator())

    def add_input(self, accumulator, element, **unused):
        key, counts = accumulator
        if self.keyed:
            key, element = (element[0],), element[1]
        return (key, self.counter.add_input(counts, element))

    def merge_accumulators(self, accumulators, **unused):
        accumulators = list(accumulators)
        key = next((key for key, _ in accumulators if key), ())
        return (key, self.counter.merge_accumulators([counts for _, counts in accumulators]))

    def compact(self, accumulator, **unused):
        return (accumulator[0], self.counter.compact(accumulator[1]))

    def extract_output(self, accumulator, slices_per_example=None, **unused) -> AUCResult:
        key, counts = accumulator
        counts = self.counter.extract_output(counts)
        spec = self.spec
        release = _release(spec, counts, spec.seed_for(*key), self.repeats)
        most = self.slices_per_example if slices_per_example is None else slices_per_example
        return finish_release(
            spec,
            release,
            num_examples=counts.num_examples,
            slice_key=key[0] if key else None,
            slices_per_example=most,
            **self.interval,
        )


def counter_for(spec: ReleaseSpec, from_logits: bool = False) -> CountBuckets:
    """The counting every Beam release of ``spec`` does: on the mechanism's own grid where it
    has one (``rank-sum`` and ``auc-only`` count on a fine grid), with its weight rules."""
    return CountBuckets(
        spec.count_grid(),
        from_logits=from_logits,
        integer_weights=spec.capabilities.integer_counts,
        unit_weights=spec.capabilities.unit_weights,
    )


class PrivateAUC(beam.PTransform):
    """Keyed examples -> one `AUCResult` per slice (see the module docstring).

    Args:
      mechanism: a registered mechanism (``dpauc_tf.list_mechanisms()``); mechanisms that
        change the examples before counting (``score-noise``) are refused. Default
        (``None``): the registry's default for the deployment
        ([`dpauc_tf.mechanisms.registry.default_mechanism`][]): central for one holder per
        slice, federated per client. Every result names the mechanism it used
        (``result.mechanism``). The rank sums take clients (two passes).
      epsilon: epsilon of one release (``None`` = no noise, NOT private); required unless
        ``spec`` is given.
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
      spec: a ready [`ReleaseSpec`][dpauc_tf.mechanisms.release.ReleaseSpec] (mechanism,
        epsilon, grid, options and seed); the arguments that describe a release are then
        refused beside it.

    Examples:
        >>> PrivateAUC("histogram", epsilon=1.0, num_thresholds=10).spec.mechanism
        'histogram'
    """

    def __init__(
        self,
        mechanism: str | None = None,
        *,
        epsilon: Any = _MISSING,
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
        spec: ReleaseSpec | None = None,
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
        if self.slicing is not None:
            check_label_free_keys(label_column, self.slicing, client_column, "PrivateAUC")
        if spec is None:  # the one recipe: ReleaseArguments.spec (the default rule where unnamed)
            deployment = Deployment.FEDERATED if per_client else Deployment.CENTRAL
            spec = _make_spec(ReleaseArguments.of(locals()), epsilon, deployment)
        else:
            _check_ready_spec(spec, locals())
        self.spec = spec
        self.spec.check_releases_counts("dpauc_tf.beam")
        self.interval = _interval_options(self.spec, confidence, ci_target)
        # rank sums over clients: two passes (totals, then reports with the global ranks)
        self.rank_sums = per_client and self.spec.build().releases_from_summed_counts
        if per_client and not self.rank_sums:  # before any work: auc-only cannot be summed
            self.spec.check_summable(2, "PrivateAUC(per_client=True)")
        self.thresholds = self.spec.thresholds
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
        if self.per_client:
            keyed = examples | "KeyBySliceAndClient" >> beam.FlatMap(
                _key_by_slice_and_client, declared=declared
            )
            slice_of = lambda kv: kv[0][0]  # noqa: E731
        else:
            keyed = examples | "KeyBySlice" >> beam.FlatMap(_key_by_slice, declared=declared)
            slice_of = lambda kv: kv[0]  # noqa: E731
        if declared is None:  # the worst case: an example may be in every slice
            most = beam.pvalue.AsSingleton(
                keyed
                | "SliceKeys" >> beam.Map(slice_of)
                | "DistinctSlices" >> beam.Distinct()
                | "CountSlices" >> beam.combiners.Count.Globally()
            )
        else:
            most = declared
        if not self.per_client:  # the one release combiner, per slice
            combiner = ReleaseCounts(
                spec,
                repeats=repeats,
                from_logits=self.from_logits,
                keyed=True,
                interval=self.interval,
            )
            return (
                keyed
                | "WithSliceKey" >> beam.Map(lambda kv: (kv[0], kv))
                | "ReleaseOncePerSlice" >> beam.CombinePerKey(combiner, slices_per_example=most)
                | "Results" >> beam.Values()
            )
        counts = keyed | "CountPerBucket" >> beam.CombinePerKey(counter_for(spec, self.from_logits))
        clients_per_slice = beam.pvalue.AsDict(
            counts
            | "SliceOfClient" >> beam.Map(lambda kv: (kv[0][0], 1))
            | "ClientsPerSlice" >> beam.CombinePerKey(sum)
        )
        finish = {"spec": spec, "most": most, "interval": self.interval}
        if self.rank_sums:
            from dpauc_tf.beam.rank_sums import release_rank_sums

            return release_rank_sums(counts, clients_per_slice, repeats=repeats, **finish)
        reports = counts | "ClientReports" >> beam.Map(
            _client_report, spec=spec, repeats=repeats, clients=clients_per_slice
        )
        return (
            reports
            | "SumReports" >> beam.CombinePerKey(SumReports())
            | "FinishSlice" >> beam.Map(_finish_reports, **finish)
        )


def _make_spec(arguments: ReleaseArguments, epsilon: Any, deployment: Deployment) -> ReleaseSpec:
    """``PrivateAUC``'s spec: [`ReleaseArguments.spec`][dpauc_tf.mechanisms.arguments.ReleaseArguments.spec]
    for the ``deployment`` (which validates the mechanism, epsilon, delta, options and seed
    now); a missing ``epsilon`` is refused, never read as "no noise"."""
    if epsilon is _MISSING:
        raise TypeError(
            "PrivateAUC needs epsilon= (one release's budget; None: no noise, NOT private) "
            "or a ready spec="
        )
    return arguments.spec(
        deployment,
        entry="dpauc_tf.beam.PrivateAUC",
        shares_set_by="the clients of each slice (per_client=True)",
    )


def _check_ready_spec(spec: Any, given_arguments: dict) -> None:
    """A ready ``spec=`` is the whole release: the arguments that describe one are refused
    beside it (one would silently lose); ``given_arguments``: ``PrivateAUC``'s arguments."""
    if not isinstance(spec, ReleaseSpec):
        raise TypeError(f"spec must be a ReleaseSpec, got {type(spec).__name__}")
    release = {name: given_arguments[name] for name in ("epsilon", *_DEFAULTS)}
    given = [
        name
        for name, value in release.items()
        if name != "epsilon" and (value or None) != (_DEFAULTS[name] or None)
    ]
    if release["epsilon"] is not _MISSING:
        given.insert(0, "epsilon")
    if given:
        raise ValueError(
            f"PrivateAUC: spec= is the whole release; do not pass {', '.join(given)} with it"
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
        from dpauc_tf.io.errors import column_excerpt

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
        IntervalTarget,
        check_confidence,
        check_interval_support,
    )

    check_interval_support(spec.build())
    return {"confidence": check_confidence(confidence), "ci_target": IntervalTarget(ci_target)}


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
