"""``PrivateAUC``: one release per slice from Beam, through a mechanism of the registry.

Input: a ``PCollection`` of ``(slice_keys, example)`` pairs, or with ``per_client=True``
``(slice_keys, client_id, example)`` triples. ``example`` is what
:class:`~dpauc_tf.beam.counting.CountBuckets` takes (one example or a batch); ``slice_keys``
is one hashable key (the example is in one slice) or a ``list``/``set`` of keys (the
example is in each of them: overlapping slices).

Per slice (``per_client=False``): the examples are counted in parallel and merged
(``CombinePerKey(CountBuckets)``) and the merged counts are released **once**, at
extraction, by ``mechanism.release`` (central noise); the curve and the AUC are the
mechanism's post-processing (``to_confusion``, ``estimate_auc``), no noise added.

Per client (``per_client=True``): every client's counts in a slice are released by the
mechanism's ``release`` (a local-DP report, or for secure mechanisms the integer counts plus
a noise share sized for the slice's number of clients), and the reports are summed per
slice, as a federated server would (:mod:`dpauc_tf.federated`). A Beam runner sums the
reports in the clear: for secure mechanisms this shows the arithmetic of secure
aggregation, not its cryptography (whoever runs the pipeline sees every report).

Accounting (label DP): every slice's output is ``repeats`` releases; an example in ``k``
slices is in ``k`` of them. Disjoint slices (every example in one slice) compose in
parallel, so the whole output costs what one slice costs; overlapping slices add up: the
whole costs the composition of ``repeats * k_max`` releases, ``k_max`` the largest number
of slices any example is in, composed with dp-accounting
(:meth:`~dpauc_tf.mechanisms.base.CountMechanism.privacy_spent`).

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

import dataclasses
import functools
import hashlib
import math
from collections.abc import Hashable, Sequence
from typing import Any

import apache_beam as beam
import numpy as np

from dpauc_tf.beam.counting import BucketCounts, CountBuckets
from dpauc_tf.core.defaults import DEFAULT_NUM_THRESHOLDS
from dpauc_tf.core.thresholds import Thresholds
from dpauc_tf.mechanisms.registry import check_mechanism_options, mechanism_spec

RELEASE_COUNTER = ("dpauc_tf.beam", "releases")


@dataclasses.dataclass(frozen=True)
class SliceRelease:
    """What one slice's output holds (NumPy arrays; ``R = repeats``).

    Attributes:
      slice_key: the slice. auc: ``[R]`` AUC estimates (NaN where undefined, e.g. a slice
        with one class and no noise). fpr, tpr: ``[R, T]`` ROC points.
      noisy_counts: the (summed) release, e.g. ``{"pos": [R, T + 1], "neg": ...}``.
      num_examples: (weighted) examples in the slice (does not depend on the labels).
      num_clients: clients whose reports were summed (``None`` for central noise).
      mechanism: the mechanism's name. privacy: its statement for one release.
      epsilon, delta: the cost of this slice's ``R`` releases (``None`` = not private).
      epsilon_total, delta_total: the cost of the whole output (every slice, every repeat).
      slices_per_example: the largest number of slices one example is in.
    """

    slice_key: Any
    auc: np.ndarray
    fpr: np.ndarray
    tpr: np.ndarray
    noisy_counts: dict[str, np.ndarray]
    num_examples: float
    num_clients: int | None
    mechanism: str
    privacy: str
    epsilon: float | None
    delta: float
    epsilon_total: float | None
    delta_total: float
    slices_per_example: int

    @property
    def auc_or_none(self) -> float | None:
        """The first release's AUC, ``None`` where it is undefined."""
        value = float(self.auc[0])
        return None if math.isnan(value) else value


@dataclasses.dataclass(frozen=True)
class MechanismConfig:
    """What a worker needs to rebuild the mechanism (plain data, cheap to ship)."""

    name: str
    epsilon: float | None
    num_thresholds: int
    delta: float | None
    options: tuple = ()

    def build(self, num_clients: int | None = None):
        return _build_mechanism(self, 1 if num_clients is None else int(num_clients))


@functools.lru_cache(maxsize=64)
def _build_mechanism(config: MechanismConfig, num_clients: int):
    from dpauc_tf.mechanisms.registry import get_mechanism

    return get_mechanism(
        config.name,
        epsilon=config.epsilon,
        num_thresholds=config.num_thresholds,
        delta=config.delta,
        num_clients=num_clients,
        **dict(config.options),
    )


def _key_hash(*parts: Any) -> int:
    digest = hashlib.blake2b(repr(parts).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def derived_seed(seed: int | None, *keys: Any):
    """A ``[2]`` seed for one release: OS entropy for ``seed=None``; otherwise derived from
    ``(seed, *keys)`` (distinct keys give distinct seeds up to a 2^-64 hash collision)."""
    from dpauc_tf.noise.seeds import make_seed

    if seed is None:
        return make_seed(None)
    return make_seed(_key_hash(int(seed), *keys))


def _slice_keys(keys: Any) -> list:
    if isinstance(keys, (list, set, frozenset)):
        return list(dict.fromkeys(keys))  # an example counts once per slice
    return [keys]


def _check_key(key: Any) -> Any:
    if not isinstance(key, Hashable):
        raise ValueError(f"dpauc_tf.beam: slice and client keys must be hashable, got {key!r}")
    return key


def _release(config: MechanismConfig, counts: BucketCounts, seed, repeats, num_clients=None):
    mechanism = config.build(num_clients)
    release = mechanism.release(counts.pos, counts.neg, seed=seed, repeats=repeats)
    beam.metrics.Metrics.counter(*RELEASE_COUNTER).inc()
    return {key: value.numpy() for key, value in release.items()}


def _finish(
    config: MechanismConfig,
    slice_key,
    release: dict,
    num_examples: float,
    num_clients: int | None,
    repeats: int,
    slices_per_example: int,
) -> SliceRelease:
    """Post-processing of one slice's (summed) release, and its accounting."""
    import tensorflow as tf

    from dpauc_tf.core.curve import roc_from_confusion
    from dpauc_tf.mechanisms.base import finite_or_none

    mechanism = config.build(num_clients)
    tensors = {key: tf.constant(value, tf.float64) for key, value in release.items()}
    roc = roc_from_confusion(mechanism.to_confusion(tensors))
    auc = mechanism.estimate_auc(tensors)
    statement = mechanism.statement()
    whole_releases = repeats * max(int(slices_per_example), 1)
    if config.epsilon is None:
        slice_cost = whole_cost = None
        delta = 0.0
    else:
        slice_cost = mechanism.privacy_spent(repeats)
        whole_cost = mechanism.privacy_spent(whole_releases)
        delta = float(slice_cost.delta)
    return SliceRelease(
        slice_key=slice_key,
        auc=np.atleast_1d(auc.numpy()).astype(np.float64),
        fpr=np.atleast_2d(roc.fpr.numpy()),
        tpr=np.atleast_2d(roc.tpr.numpy()),
        noisy_counts=release,
        num_examples=float(num_examples),
        num_clients=num_clients,
        mechanism=mechanism.name,
        privacy=str(statement),
        epsilon=None if slice_cost is None else finite_or_none(slice_cost.best),
        delta=delta,
        epsilon_total=None if whole_cost is None else finite_or_none(whole_cost.best),
        delta_total=delta if whole_cost is None else float(whole_cost.delta),
        slices_per_example=int(slices_per_example),
    )


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
    """Keyed examples -> one :class:`SliceRelease` per slice (see the module docstring).

    Args:
      mechanism: a registered mechanism (``dpauc_tf.list_mechanisms()``); mechanisms that
        change the examples before counting (``score-noise``) are refused.
      epsilon: epsilon of one release (``None`` = no noise, NOT private).
      num_thresholds: ``T``. threshold_grid: ``"tf"``, ``"reference"`` or an explicit list.
      delta: for mechanisms that take one (``paper-gaussian``, Skellam shares).
      seed: ``None`` (fresh noise for every release) or an int (reproducible).
      repeats: independent releases per slice (each one is accounted).
      per_client: the input is ``(slice_keys, client_id, example)``: sum clients' reports.
      from_logits: the scores are logits.
      mechanism_options: extra constructor options (e.g. ``{"family": "skellam"}``).

    >>> PrivateAUC("histogram", epsilon=1.0, num_thresholds=10).config.name
    'histogram'
    """

    def __init__(
        self,
        mechanism: str = "histogram",
        *,
        epsilon: float | None,
        num_thresholds: int = DEFAULT_NUM_THRESHOLDS,
        threshold_grid: str | Sequence[float] = "tf",
        delta: float | None = None,
        seed: int | None = None,
        repeats: int = 1,
        per_client: bool = False,
        from_logits: bool = False,
        mechanism_options: dict | None = None,
        label: str | None = None,
    ):
        super().__init__(label)
        spec = mechanism_spec(mechanism)
        if spec.capabilities.transforms_data:
            raise ValueError(
                f"mechanism {mechanism!r} changes every example before counting; "
                "dpauc_tf.beam releases bucket counts (use dpauc evaluate --backend simulate)"
            )
        if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
            raise ValueError(f"repeats must be an int >= 1, got {repeats!r}")
        if seed is not None:
            from dpauc_tf.noise.seeds import make_seed

            make_seed(seed)  # refuses negative, too large or non-int seeds now
        self.thresholds = Thresholds.make(num_thresholds, threshold_grid)
        self.config = MechanismConfig(
            mechanism,
            epsilon,
            self.thresholds.num_thresholds,
            delta,
            tuple(
                sorted(
                    check_mechanism_options(
                        mechanism,
                        mechanism_options,
                        entry="dpauc_tf.beam.PrivateAUC",
                        num_clients="the clients of each slice (per_client=True)",
                    ).items()
                )
            ),
        )
        mechanism_object = self.config.build()  # validates epsilon, delta and options now
        self.integer_weights = mechanism_object.capabilities.integer_counts
        self.seed, self.repeats, self.per_client = seed, repeats, per_client
        self.from_logits = from_logits

    def expand(self, examples):
        config, seed, repeats = self.config, self.seed, self.repeats
        counter = CountBuckets(
            self.thresholds, from_logits=self.from_logits, integer_weights=self.integer_weights
        )
        if self.per_client:
            keyed = examples | "KeyBySliceAndClient" >> beam.FlatMap(
                lambda e: [((_check_key(k), _check_key(e[1])), e[2]) for k in _slice_keys(e[0])]
            )
        else:
            keyed = examples | "KeyBySlice" >> beam.FlatMap(
                lambda e: [(_check_key(k), e[1]) for k in _slice_keys(e[0])]
            )
        slices_per_example = (
            examples
            | "SlicesPerExample" >> beam.Map(lambda e: len(_slice_keys(e[0])))
            | "MostSlices" >> beam.CombineGlobally(lambda values: max(values, default=0))
        )
        counts = keyed | "CountPerBucket" >> beam.CombinePerKey(counter)
        most = beam.pvalue.AsSingleton(slices_per_example)
        if not self.per_client:
            return counts | "ReleaseOncePerSlice" >> beam.Map(
                _release_slice, config=config, seed=seed, repeats=repeats, most=most
            )
        clients_per_slice = (
            counts
            | "SliceOfClient" >> beam.Map(lambda kv: (kv[0][0], 1))
            | "ClientsPerSlice" >> beam.CombinePerKey(sum)
        )
        reports = counts | "ClientReports" >> beam.Map(
            _client_report,
            config=config,
            seed=seed,
            repeats=repeats,
            clients=beam.pvalue.AsDict(clients_per_slice),
        )
        return (
            reports
            | "SumReports" >> beam.CombinePerKey(_SumReports())
            | "FinishSlice" >> beam.Map(_finish_reports, config=config, repeats=repeats, most=most)
        )


def _release_slice(item, config, seed, repeats, most) -> SliceRelease:
    key, counts = item
    release = _release(config, counts, derived_seed(seed, key), repeats)
    return _finish(config, key, release, counts.num_examples, None, repeats, most)


def _client_report(item, config, seed, repeats, clients):
    (key, client), counts = item
    release = _release(config, counts, derived_seed(seed, key, client), repeats, clients[key])
    return key, (release, counts.num_examples)


def _finish_reports(item, config, repeats, most) -> SliceRelease:
    key, (release, num_examples, num_clients) = item
    return _finish(config, key, release, num_examples, num_clients, repeats, most)
