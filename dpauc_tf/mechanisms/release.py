"""The one release path: a release described once, built per number of clients, finished once.

Every backend (the simulation, TFF, Flower, Beam, Spark) does the same three things around
its own engine:

1. [`ReleaseSpec`][] describes the release: mechanism, epsilon, delta, thresholds,
   mechanism options and the seed policy. It is plain, hashable data (cheap to ship to a
   worker) and [`ReleaseSpec.build`][] makes the mechanism for a number of clients
   (cached). [`ReleaseSpec.seed_for`][] gives every client's, slice's and repeat's seed
   from one derivation ([`dpauc_tf.noise.seeds.derive_seed`][]).
2. The engine counts per bucket on [`ReleaseSpec.count_grid`][] (the mechanism's own grid
   where it has one), every client (or the one data holder) calls ``mechanism.release``,
   and the engine sums the reports.
3. [`finish_release`][] turns the summed reports (and how many clients reported) into one
   [`AUCResult`][]: AUC and curve of every repeat, the guarantee achieved by the reports
   that arrived, the cost of the whole output, the counts; ``to_dict()`` is what the command
   line prints as JSON.

Examples:
    >>> import numpy as np
    >>> spec = ReleaseSpec.make("histogram", epsilon=None, num_thresholds=3)
    >>> mechanism = spec.build()
    >>> release = mechanism.release(np.array([0., 2., 1., 0.]), np.array([0., 1., 2., 0.]), repeats=1)
    >>> result = finish_release(spec, release, num_examples=6.0)
    >>> round(result.auc, 4), result.epsilon is None
    (0.3333, True)
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from dpauc_tf.core.defaults import DEFAULT_NUM_THRESHOLDS
from dpauc_tf.core.thresholds import Thresholds
from dpauc_tf.core.vocabulary import ThresholdGrid
from dpauc_tf.mechanisms.comparison import PAIRED_COMPARISON
from dpauc_tf.mechanisms.comparison_rank_sum import RANK_SUM_COMPARISON
from dpauc_tf.mechanisms.laws import Average, Deployment
from dpauc_tf.mechanisms.option_types import frozen_options
from dpauc_tf.mechanisms.registry import mechanism_spec
from dpauc_tf.mechanisms.weight_bound import bound_weights, check_max_weight

if TYPE_CHECKING:
    from dpauc_tf.mechanisms.comparison import ComparisonResult


def check_repeats(repeats: int) -> int:
    """Refuses anything but an int >= 1 as a number of repeated releases."""
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats must be an int >= 1, got {repeats!r}")
    return repeats


def check_slices_bound(value: int | None, name: str = "max_slices_per_example") -> int | None:
    """Refuses a declared bound on the slices one example is in unless ``None`` or an
    int >= 1 (``name`` is the argument as the caller spells it)."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ValueError(f"{name} must be None or an int >= 1, got {value!r}")
    return value


@dataclasses.dataclass(frozen=True)
class ReleaseSpec:
    """What describes a release, as every backend needs it (hashable, picklable).

    Attributes:
      mechanism: a registered mechanism's name (``dpauc_tf.list_mechanisms()``); with
        ``num_classes`` the binary curve mechanism every class is released with.
      epsilon: epsilon of one release (``None``: no noise, NOT private); with
        ``num_classes``, of one release of all classes.
      delta: for the mechanisms that take one.
      thresholds: the grid of the release ([`Thresholds`][]).
      options: the mechanism's constructor options as sorted ``(name, value)`` pairs.
      seed: ``None`` (every release draws fresh operating-system entropy) or an int (every
        seed is derived from it and the release's keys: reproducible, for experiments).
      num_classes: ``None`` (a binary release) or ``C >= 2``: a one-vs-rest release, whose
        mechanism ([`OneVsRest`][dpauc_tf.mechanisms.multiclass.OneVsRest]) releases every
        class's ``[C, T + 1]`` counts through ``mechanism``.
      average: the headline average of a one-vs-rest release (``"macro"``, ``"weighted"``
        or ``"micro"``; ignored without ``num_classes``).
      max_weight: the declared bound ``W`` of the sample weights (default 1): the mechanism
        is built for weights in ``[0, W]`` (its counts divided by ``W``, its law scaled:
        ``dpauc_tf.mechanisms.weight_bound.bound_weights``).

    Examples:
        >>> spec = ReleaseSpec.make("histogram", epsilon=1.0, num_thresholds=10, seed=0)
        >>> spec.build().name, spec.count_grid().num_thresholds
        ('histogram', 10)
        >>> spec.seed_for("slice-a").numpy().tolist() == spec.seed_for("slice-a").numpy().tolist()
        True
        >>> multi = ReleaseSpec.make(None, epsilon=1.0, num_classes=3, num_thresholds=10)
        >>> multi.mechanism, multi.build().class_epsilon
        ('histogram', 0.5)
    """

    mechanism: str
    epsilon: float | None
    delta: float | None
    thresholds: Thresholds
    options: tuple[tuple[str, Any], ...] = ()
    seed: int | None = None
    num_classes: int | None = None
    average: str = "macro"
    max_weight: float = 1.0

    @classmethod
    def make(
        cls,
        mechanism: str | None = "histogram",
        *,
        epsilon: float | None,
        num_thresholds: int | str = DEFAULT_NUM_THRESHOLDS,
        threshold_grid: str | Sequence[float] = "tf",
        delta: float | None = None,
        options: Mapping[str, Any] | None = None,
        seed: int | None = None,
        num_examples: float | None = None,
        num_classes: int | None = None,
        average: str = "macro",
        needs_curve: bool = False,
        deployment: Deployment | str = Deployment.CENTRAL,
        max_weight: float = 1.0,
    ) -> ReleaseSpec:
        """A checked spec: the mechanism is built once here, so that a bad name, epsilon,
        delta or option fails before any work, with the registry's one-line message.
        ``num_thresholds="auto"`` picks the grid from ``num_examples`` (public under label
        DP: `dpauc_tf.mechanisms.auto_grid`). ``mechanism=None`` takes the registry's
        default for what is asked
        ([`default_mechanism`][dpauc_tf.mechanisms.registry.default_mechanism]: a curve
        mechanism for ``needs_curve`` or a one-vs-rest release). ``num_classes`` makes
        the release one-vs-rest (``average`` its headline average). ``max_weight``: the
        sample weights' declared bound (binary releases)."""
        max_weight = check_max_weight(max_weight)
        if num_classes is not None:
            from dpauc_tf.mechanisms.multiclass import check_num_classes

            num_classes = check_num_classes(num_classes)
            average = Average(average).value
        mechanism = cls.mechanism_for(
            mechanism,
            delta=delta,
            needs_curve=needs_curve,
            deployment=deployment,
            num_classes=num_classes,
        )
        if num_thresholds == "auto":
            from dpauc_tf.mechanisms.auto_grid import resolve_num_thresholds

            num_thresholds = resolve_num_thresholds(
                num_thresholds, num_examples=num_examples, epsilon=epsilon, mechanism=mechanism
            )
        if seed is not None:
            from dpauc_tf.noise.seeds import make_seed

            make_seed(seed)  # refuses negative, too large or non-int seeds now
        spec = cls(
            mechanism=mechanism,
            epsilon=epsilon,
            delta=delta,
            thresholds=Thresholds.make(num_thresholds, threshold_grid),
            options=frozen_options(options),
            seed=seed,
            num_classes=num_classes,
            average=average,
            max_weight=max_weight,
        )
        spec.build()
        return spec

    @staticmethod
    def mechanism_for(
        mechanism: str | None,
        *,
        delta: float | None = None,
        needs_curve: bool = False,
        deployment: Deployment | str = Deployment.CENTRAL,
        num_classes: int | None = None,
    ) -> str:
        """The mechanism a spec releases with: ``mechanism`` when named, else the registry's
        default for what is asked and where the labels are
        ([`default_mechanism`][dpauc_tf.mechanisms.registry.default_mechanism]; a one-vs-rest
        release, ``num_classes``, asks for curves). The one place every face's default is
        taken ([`make`][], and [`ReleaseArguments.named`][dpauc_tf.mechanisms.arguments.ReleaseArguments.named]
        for the faces that need the name before the spec).

            >>> ReleaseSpec.mechanism_for(None), ReleaseSpec.mechanism_for(None, num_classes=3)
            ('rank-sum', 'histogram')
            >>> ReleaseSpec.mechanism_for(None, deployment="secure"), ReleaseSpec.mechanism_for("rr")
            ('secure-rank-sum', 'rr')
        """
        if mechanism is not None:
            return mechanism
        from dpauc_tf.mechanisms.registry import default_mechanism

        return default_mechanism(
            delta=delta,
            needs_curve=needs_curve or num_classes is not None,
            deployment=deployment,
        )

    def to_fields(self) -> dict[str, Any]:
        """The release as JSON-ready fields, without the seed (e.g. a Flower message's
        config; the clients derive nothing from it): [`from_fields`][] reads them back.

            >>> spec = ReleaseSpec.make("tree-histogram", epsilon=1.0, num_thresholds=15,
            ...                         options={"budget": [1, 2, 3]}, seed=5)
            >>> ReleaseSpec.from_fields(spec.to_fields()) == dataclasses.replace(spec, seed=None)
            True
        """
        fields = {
            "mechanism": self.mechanism,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "thresholds": list(self.thresholds.values),
            "inclusive": self.thresholds.inclusive,
            "grid": self.thresholds.grid,
            "options": [[key, _listed(value)] for key, value in self.options],
        }
        if self.one_vs_rest:
            fields.update(num_classes=self.num_classes, average=self.average)
        if self.max_weight != 1.0:
            fields["max_weight"] = self.max_weight
        return fields

    @classmethod
    def from_fields(cls, fields: Mapping[str, Any]) -> ReleaseSpec:
        """The spec of [`to_fields`][]' output (no seed); ``KeyError``/``TypeError`` where a
        field is missing or malformed, a bad name, epsilon or option when built."""
        thresholds = Thresholds(
            tuple(float(v) for v in fields["thresholds"]),
            bool(fields["inclusive"]),
            fields["grid"],
        )
        one_vs_rest = fields.get("num_classes") is not None
        return cls(
            mechanism=str(fields["mechanism"]),
            epsilon=fields["epsilon"],
            delta=fields["delta"],
            thresholds=thresholds,
            options=frozen_options(dict((str(k), v) for k, v in fields["options"])),
            seed=None,
            num_classes=int(fields["num_classes"]) if one_vs_rest else None,
            average=str(fields["average"]) if one_vs_rest else "macro",
            max_weight=float(fields.get("max_weight", 1.0)),
        )

    @property
    def one_vs_rest(self) -> bool:
        """Whether the release is one-vs-rest (a class count)."""
        return self.num_classes is not None

    @property
    def num_thresholds(self) -> int:
        return self.thresholds.num_thresholds

    @property
    def threshold_grid(self) -> str | list[float]:
        """The ``threshold_grid`` argument that makes this grid (the inner thresholds of
        an explicit grid as a list)."""
        if self.thresholds.grid in ThresholdGrid.values():
            return self.thresholds.grid
        return list(self.thresholds.values[1:-1])

    def settings(self) -> dict[str, Any]:
        """The keyword arguments of the backends' evaluation functions (``mechanism``,
        ``epsilon``, ``delta``, ``num_thresholds``, ``threshold_grid``,
        ``mechanism_options``) that describe this release."""
        settings = {
            "mechanism": self.mechanism,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "num_thresholds": self.num_thresholds,
            "threshold_grid": self.threshold_grid,
            "mechanism_options": {key: value for key, value in self.options},
        }
        if self.one_vs_rest:  # the one-vs-rest evaluations also take the class axis
            settings.update(num_classes=self.num_classes, average=self.average)
        return settings

    @property
    def capabilities(self):
        """The registry's [`Capabilities`][dpauc_tf.mechanisms.capabilities.Capabilities] entry,
        with the built mechanism's ``unit_weights`` (an option such as ``public_scores`` sets
        it; no noise, no weight rule); a one-vs-rest spec's is its class mechanism's."""
        if self.one_vs_rest or self.mechanism in (PAIRED_COMPARISON, RANK_SUM_COMPARISON):
            return self.build().capabilities  # the built release's own (not a registry name)
        built = self.build().capabilities
        return dataclasses.replace(
            mechanism_spec(self.mechanism).capabilities, unit_weights=built.unit_weights
        )

    def build(self, num_clients: int | None = None):
        """The mechanism for ``num_clients`` clients (the number of shares for secure
        mechanisms; ignored by the others; default: the ``num_clients`` option where the
        spec has one, else 1); cached per spec and number. A one-vs-rest spec builds a
        [`OneVsRest`][dpauc_tf.mechanisms.multiclass.OneVsRest]."""
        if num_clients is None:
            num_clients = dict(self.options).get("num_clients", 1)
        return _build(self, int(num_clients))

    def count_grid(self) -> Thresholds:
        """The grid every client counts on: the mechanism's own where it has one (a
        one-vs-rest release's: its class mechanism's; the paired comparison counts on its
        own per-model buckets: the spec's grid)."""
        built = self.build()
        if not hasattr(built, "count_thresholds"):
            return self.thresholds
        return built.count_thresholds(self.thresholds)

    def seed_for(self, *keys: Any):
        """The ``[2]`` seed of one release, from the spec's seed and the release's keys
        (slice, client, repeat chunk, ...): see [`dpauc_tf.noise.seeds.derive_seed`][]."""
        from dpauc_tf.noise.seeds import derive_seed

        if self.one_vs_rest:
            keys = ("one-vs-rest", *keys)
        return derive_seed(self.seed, *keys)

    def check_releases_counts(self, surface: str) -> None:
        """Refuses a mechanism whose release needs more than bucket counts: ``score-noise``
        changes every example before counting (releasing counts of the exact scores would
        publish an AUC with no noise at all)."""
        if self.capabilities.transforms_data:
            raise ValueError(
                f"mechanism {self.mechanism!r} changes every example before counting; "
                f"{surface} releases bucket counts (use dpauc evaluate --backend simulate)"
            )

    def check_summable(self, num_clients: int, surface: str) -> None:
        """Refuses several clients for a mechanism that releases one holder's AUC from its
        counts (``auc-only``): the built mechanism's law decides (the rank sums release over
        clients, ``releases_from_summed_counts``; with ``epsilon=None`` nothing is noised)."""
        built = self.build()
        if built.releases_from_summed_counts:
            return
        if getattr(built, "capabilities", self.capabilities).releases == "curve":
            return
        if num_clients > 1:
            raise ValueError(
                f"mechanism {self.mechanism!r} releases one AUC from one data holder's "
                f"counts: {surface} cannot sum its releases over {num_clients} clients"
            )


@functools.lru_cache(maxsize=128)
def _build(spec: ReleaseSpec, num_clients: int):
    if spec.max_weight == 1.0:
        return _build_unit_weights(spec, num_clients)
    if spec.one_vs_rest or spec.mechanism in (PAIRED_COMPARISON, RANK_SUM_COMPARISON):
        raise ValueError(
            f"max_weight={spec.max_weight:g}: weights above 1 are bounded for a binary release only"
        )
    return bound_weights(_build_unit_weights(spec, num_clients), spec.max_weight)


def _build_unit_weights(spec: ReleaseSpec, num_clients: int):
    options = {key: value for key, value in spec.options if key != "num_clients"}
    if spec.mechanism == PAIRED_COMPARISON:
        from dpauc_tf.mechanisms.comparison import PairedComparison

        return PairedComparison(spec.epsilon, **options)
    if spec.mechanism == RANK_SUM_COMPARISON:
        from dpauc_tf.mechanisms.comparison_rank_sum import RankSumComparison

        return RankSumComparison(spec.epsilon, num_clients=num_clients, **options)
    if spec.one_vs_rest:
        from dpauc_tf.mechanisms.multiclass_rank_sum import build_one_vs_rest

        return build_one_vs_rest(
            spec.mechanism,
            epsilon=spec.epsilon,
            num_classes=spec.num_classes,
            num_thresholds=spec.num_thresholds,
            delta=spec.delta,
            num_clients=num_clients,
            options=options,
            average=spec.average,
        )
    from dpauc_tf.mechanisms.registry import get_mechanism

    return get_mechanism(
        spec.mechanism,
        epsilon=spec.epsilon,
        num_thresholds=spec.num_thresholds,
        delta=spec.delta,
        num_clients=num_clients,
        **options,
    )


@dataclasses.dataclass(frozen=True)
class AUCResult:
    """What one evaluation released, as every backend returns it (NumPy arrays, ``R``
    repeats).

    Attributes:
      aucs: the AUC estimate of every repeat ``[R]`` (NaN where undefined, e.g. one class).
      fpr: the ROC points of every repeat ``[R, T]`` (``[R, 0]`` for a mechanism that
        releases only the AUC).
      tpr: as ``fpr``.
      mechanism: the mechanism's name (``"none"`` without noise).
      statement: the guarantee of one release, achieved by the reports that arrived.
      epsilon: one release's (``None``, 0 without noise).
      delta: as ``epsilon``.
      epsilon_total: the whole output's: ``R * slices_per_example`` releases,
        composed with dp-accounting.
      delta_total: as ``epsilon_total``.
      num_examples: the number of counted examples (rows, not weights: a weight may depend
        on the label).
      num_clients: clients asked to report (``None``: one data holder, central noise).
      num_reporting: clients whose reports were summed.
      noisy_counts: the (summed) release, e.g. ``{"pos": [R, T + 1], "neg": ...}``.
      slice_key: the slice (``None`` for the whole data).
      slices_per_example: the bound on the number of slices one example is in that
        ``epsilon_total`` uses.
      interval: the [`AUCInterval`][dpauc_tf.mechanisms.intervals.AUCInterval] of every release
        (``finish_release(..., confidence=0.95)``; ``None`` when none was asked), computed
        from the release alone (no privacy cost).
      num_classes: ``None`` for a binary release; ``C`` for a one-vs-rest one, whose
        ``aucs`` are the headline ``average`` of every repeat, ``fpr``/``tpr`` are per
        class ``[R, C, T]`` and the class axis is below.
      average: the headline average of a one-vs-rest release (``"macro"``, ``"weighted"``
        or ``"micro"``).
      class_aucs: per-class AUCs ``[R, C]`` (one-vs-rest).
      support: released positives per class ``[R, C]`` (the weights of ``weighted``).
      macro: the mean of the class AUCs ``[R]`` (NaN where a class's AUC is undefined).
      weighted: their mean weighted by the released supports ``[R]``.
      micro: the AUC of the counts summed over the classes ``[R]``.
      round_report: what a federated backend's server saw of the round besides the release,
        as that backend's own frozen record (Flower's
        [`FlowerRoundReport`][dpauc_tf.flower.strategy.FlowerRoundReport]: SecAgg+'s
        settings, the unmasked groups, who did not answer or failed); ``None`` elsewhere.
        Not part of ``to_dict()``.
    """

    aucs: np.ndarray
    fpr: np.ndarray
    tpr: np.ndarray
    mechanism: str
    statement: Any
    epsilon: float | None
    delta: float
    epsilon_total: float | None
    delta_total: float
    num_examples: float | None
    num_clients: int | None
    num_reporting: int | None
    noisy_counts: dict[str, np.ndarray]
    slice_key: Any = None
    slices_per_example: int = 1
    interval: Any = None
    num_classes: int | None = None
    average: str | None = None
    class_aucs: np.ndarray | None = None
    support: np.ndarray | None = None
    macro: np.ndarray | None = None
    weighted: np.ndarray | None = None
    micro: np.ndarray | None = None
    round_report: Any = None

    @property
    def ci_low(self) -> np.ndarray | None:
        """The lower bound of every release's interval ``[R]`` (``None`` without one)."""
        return None if self.interval is None else self.interval.low

    @property
    def ci_high(self) -> np.ndarray | None:
        """The upper bound of every release's interval ``[R]`` (``None`` without one)."""
        return None if self.interval is None else self.interval.high

    @property
    def auc(self) -> float:
        """The first repeat's AUC (NaN where undefined)."""
        return float(self.aucs[0])

    @property
    def auc_or_none(self) -> float | None:
        """The first repeat's AUC, ``None`` where it is undefined."""
        value = self.auc
        return None if math.isnan(value) else value

    @property
    def repeats(self) -> int:
        return int(self.aucs.size)

    @property
    def num_undefined(self) -> int:
        """Releases whose AUC estimate is undefined."""
        return int(np.isnan(self.aucs).sum())

    @property
    def mean(self) -> float:
        """Mean over the releases whose AUC is defined (NaN if none is)."""
        defined = self.aucs[~np.isnan(self.aucs)]
        return float(defined.mean()) if defined.size else float("nan")

    @property
    def std(self) -> float:
        """Standard deviation over the releases whose AUC is defined."""
        defined = self.aucs[~np.isnan(self.aucs)]
        return float(defined.std()) if defined.size else float("nan")

    @property
    def has_curve(self) -> bool:
        return self.fpr.shape[-1] > 0

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready values (``None`` for NaN and infinity; the first repeat's curve,
        one per class for a one-vs-rest release)."""
        if self.num_classes is not None:
            return self._class_dict()
        return {
            "slice_key": _plain(self.slice_key),
            "mechanism": self.mechanism,
            "aucs": [finite_or_none(value) for value in self.aucs.tolist()],
            "auc_mean": finite_or_none(self.mean),
            "auc_std": finite_or_none(self.std),
            "num_undefined": self.num_undefined,
            "roc": {"fpr": self.fpr[0].tolist(), "tpr": self.tpr[0].tolist()}
            if self.has_curve
            else None,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "epsilon_total": self.epsilon_total,
            "delta_total": self.delta_total,
            "privacy": None if self.statement is None else str(self.statement),
            "num_examples": self.num_examples,
            "num_clients": self.num_clients,
            "num_reporting": self.num_reporting,
            "slices_per_example": self.slices_per_example,
            **self._interval_dict(),
        }

    def _class_dict(self) -> dict[str, Any]:
        """A one-vs-rest release's ``to_dict()``: the headline average, the three
        averages, every class's AUC, support and curve (first repeat)."""
        return {
            "mechanism": self.mechanism,
            "average": self.average,
            "auc": finite_or_none(self.auc),
            "aucs": [finite_or_none(v) for v in self.aucs.tolist()],
            "macro": finite_or_none(float(self.macro[0])),
            "weighted": finite_or_none(float(self.weighted[0])),
            "micro": finite_or_none(float(self.micro[0])),
            "class_aucs": [finite_or_none(v) for v in self.class_aucs[0].tolist()],
            "class_support": self.support[0].tolist(),
            "roc": [
                {"fpr": fpr.tolist(), "tpr": tpr.tolist()}
                for fpr, tpr in zip(self.fpr[0], self.tpr[0], strict=True)
            ]
            if self.has_curve
            else None,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "epsilon_total": self.epsilon_total,
            "delta_total": self.delta_total,
            "privacy": None if self.statement is None else str(self.statement),
            "num_examples": self.num_examples,
            "num_classes": self.num_classes,
            "num_clients": self.num_clients,
            "num_reporting": self.num_reporting,
            **self._class_interval_dict(),
        }

    def _class_interval_dict(self) -> dict[str, Any]:
        """Every class's interval (first release) when one was asked; nothing otherwise."""
        if self.interval is None:
            return {}
        ci = self.interval
        return {
            "confidence": ci.confidence,
            "ci_target": ci.target,
            "class_intervals": [
                {"ci_low": finite_or_none(float(low)), "ci_high": finite_or_none(float(high))}
                for low, high in zip(
                    np.atleast_2d(ci.low)[0], np.atleast_2d(ci.high)[0], strict=True
                )
            ],
        }

    def _interval_dict(self) -> dict[str, Any]:
        """``confidence``, ``ci_target`` and ``releases`` (one object per release) when an
        interval was asked; nothing otherwise."""
        if self.interval is None:
            return {}
        ci = self.interval
        releases = interval_releases(self.aucs, ci)
        return {"confidence": ci.confidence, "ci_target": ci.target, "releases": releases}


def interval_releases(aucs: np.ndarray, interval: Any) -> list[dict[str, Any]]:
    """One JSON-ready object per release: ``auc``, ``ci_low``, ``ci_high``, ``ci_target``,
    ``privacy_share`` (of the variance), ``privacy_std``, ``sampling_se`` and
    ``privacy_ratio`` (``privacy_std / sampling_se``); ``None`` where undefined."""
    ci = interval
    ratio = ci.privacy_ratio
    return [
        {
            "auc": finite_or_none(float(aucs[r])),
            "ci_low": finite_or_none(float(ci.low[r])),
            "ci_high": finite_or_none(float(ci.high[r])),
            "ci_target": ci.target,
            "privacy_share": finite_or_none(float(ci.privacy_share[r])),
            "privacy_std": finite_or_none(float(np.sqrt(ci.privacy_variance[r]))),
            "sampling_se": finite_or_none(float(np.sqrt(ci.sampling_variance[r]))),
            "privacy_ratio": finite_or_none(float(ratio[r])),
        }
        for r in range(int(np.size(aucs)))
    ]


def finite_or_none(value: float | None) -> float | None:
    """``value``, or ``None`` for ``None``, NaN and infinity (JSON has neither)."""
    return value if value is not None and math.isfinite(value) else None


def _listed(value: Any) -> Any:
    """An option value as JSON writes it (tuples as lists)."""
    return [_listed(v) for v in value] if isinstance(value, tuple) else value


def _plain(key: Any) -> Any:
    if key is None or isinstance(key, (str, int, float, bool)):
        return key
    if isinstance(key, tuple):
        return [_plain(part) for part in key]
    return str(key)


def _interval(mechanism, summed, aucs, confidence, target, num_examples, clients, reporting):
    """The interval of every release: the noise of the ``reporting`` shares that arrived."""
    from dpauc_tf.mechanisms.intervals import noise_copies, release_interval

    return release_interval(
        mechanism,
        {key: np.asarray(value) for key, value in summed.items()},
        confidence=confidence,
        target=target,
        num_examples=num_examples,
        copies=noise_copies(mechanism, clients, reporting),
        estimate=aucs,
    )


def with_interval(
    result: AUCResult,
    mechanism,
    *,
    confidence: float,
    ci_target: str = "population",
    num_examples: float | None = None,
) -> AUCResult:
    """``result`` with the interval of every release at ``confidence`` for ``ci_target``,
    computed as [`finish_release`][] computes it: from the release's own counts, number of
    examples and reports that arrived (a dropout's missing noise shares are not counted).
    ``mechanism`` is the one the release was built with; ``num_examples`` (public under
    label DP) is used where the result states none. Post-processing: no privacy cost."""
    from dpauc_tf.mechanisms.intervals import IntervalTarget, check_confidence

    if result.interval is not None and (result.interval.confidence, result.interval.target) == (
        confidence,
        ci_target,
    ):
        return result
    if not result.noisy_counts:
        raise ValueError("the result carries no release counts to compute an interval from")
    check_confidence(confidence)
    ci_target = IntervalTarget(ci_target)
    if result.num_examples is not None or num_examples is None:
        num_examples = result.num_examples
    interval = _interval(
        mechanism,
        result.noisy_counts,
        result.aucs,
        confidence,
        ci_target,
        num_examples,
        result.num_clients,
        result.num_reporting,
    )
    return dataclasses.replace(
        result,
        interval=interval,
        num_examples=None if num_examples is None else float(num_examples),
    )


def finish_release(
    spec: ReleaseSpec | None,
    summed: Mapping[str, Any],
    *,
    num_examples: float | None,
    num_clients: int | None = None,
    num_reporting: int | None = None,
    shares: int | None = None,
    shares_arrived: int | None = None,
    unmasked_groups: Sequence[int] = (),
    slice_key: Any = None,
    slices_per_example: int = 1,
    mechanism=None,
    confidence: float | None = None,
    ci_target: str = "population",
    round_report: Any = None,
) -> AUCResult | ComparisonResult:
    """Post-processing of a (summed) release with a leading repeats axis, and its accounting.

    Args:
      spec: the release's description (binary, or one-vs-rest with ``num_classes``: the
        result then has a class axis; the paired comparison: a
        [`ComparisonResult`][dpauc_tf.mechanisms.comparison.ComparisonResult] of one
        release ``{"pos", "neg"}`` of joint counts, at ``confidence``, 0.95 by default).
      summed: the release, or the sum of the clients' reports (arrays ``[R, ...]``).
      num_examples: the number of examples counted (rows, not weights).
      num_clients: clients asked to report, as the result states it (``None``: one data
        holder, central noise).
      num_reporting: clients whose reports were summed, as the result states it (default:
        ``num_clients``).
      shares: noise shares the mechanism was built for (default: the mechanism's own
        ``noise_shares(num_clients)``: the shares a secure mechanism was built for, one per
        client otherwise; ``None`` for one data holder).
      shares_arrived: shares whose reports were summed (default: ``num_reporting``, else
        ``shares``); the statement is the guarantee they achieve.
      unmasked_groups: when dropouts split a secure sum's neighbourhoods (SecAgg+), the
        sizes of the groups whose sums the server can unmask separately: the guarantee is
        the one the smallest group's shares achieve (basic composition over the repeats).
      slice_key: the slice this release is of.
      slices_per_example: a bound on the slices one example is in (whole-output cost).
      mechanism: the mechanism the caller built and released with (default:
        ``spec.build(shares)``; ``spec`` may then be ``None``).
      confidence: e.g. 0.95: also an interval for every release
        (`dpauc_tf.mechanisms.intervals.release_interval`, post-processing of the
        release: no privacy cost); ``ValueError`` where the mechanism has no valid one.
      ci_target: ``"population"`` (default: privacy noise and sampling error) or
        ``"sample"`` (this test set's AUC: privacy noise only).
      round_report: the backend's record of the round, carried by the result as
        ``AUCResult.round_report``.
    """
    if mechanism is None:
        mechanism = spec.build(num_clients if shares is None else shares)
    if shares is not None:
        shares = int(shares)
    elif num_clients is not None:  # the mechanism's own rule for a complete arrival
        sized = getattr(mechanism, "noise_shares", None)
        shares = int(num_clients) if sized is None else int(sized(int(num_clients)))
    if hasattr(mechanism, "comparison_result"):  # a paired comparison's own result
        from dpauc_tf.mechanisms.comparison import DEFAULT_CONFIDENCE

        return mechanism.comparison_result(
            summed,
            DEFAULT_CONFIDENCE if confidence is None else confidence,
            None if num_examples is None else int(num_examples),
        )
    one_vs_rest = getattr(mechanism, "num_classes", None) is not None
    private = (mechanism.epsilon if spec is None else spec.epsilon) is not None
    if confidence is not None:  # refuse before any work, with the one-line reason
        from dpauc_tf.mechanisms.intervals import (
            IntervalTarget,
            check_confidence,
            check_interval_support,
        )

        check_confidence(confidence)
        ci_target = IntervalTarget(ci_target)
        if one_vs_rest and not hasattr(mechanism, "class_intervals"):
            raise ValueError("no interval is given for a one-vs-rest release of curves")
        if not one_vs_rest:
            check_interval_support(mechanism)
    reporting = num_clients if num_reporting is None else int(num_reporting)
    if shares_arrived is None:
        shares_arrived = shares if num_reporting is None else int(num_reporting)
    groups = tuple(int(g) for g in unmasked_groups)
    split = len(groups) > 1 and private
    achieved = min(groups) if split else shares_arrived
    if one_vs_rest:
        estimates = _class_estimates(mechanism, summed, "macro" if spec is None else spec.average)
        statement, short = mechanism.achieved(achieved)
    else:
        estimates = _estimates(mechanism, summed)
        statement = achieved_statement_of(mechanism, 1 if achieved is None else achieved)
        short = private and statement.epsilon > mechanism.statement().epsilon
    if split:
        statement = _split_statement(mechanism, statement, groups)
    repeats = int(estimates["aucs"].size)
    k = max(int(slices_per_example), 1)
    if not private:
        epsilon = epsilon_total = None
        delta = delta_total = 0.0
    else:
        epsilon, delta = finite_or_none(float(statement.epsilon)), float(statement.delta)
        if short or split:
            # fewer shares arrived (or could be unmasked together) than the noise was sized
            # for: the composition of the achieved releases (basic, a valid bound) where the
            # full-noise event would understate it
            epsilon_total = finite_or_none(repeats * k * float(statement.epsilon))
            delta_total = min(1.0, repeats * k * delta)
        else:
            whole = mechanism.privacy_spent(repeats * k)
            epsilon_total, delta_total = finite_or_none(whole.best), float(whole.delta)
    interval = None
    if confidence is not None and one_vs_rest:  # every class's interval [R, C]
        interval = mechanism.class_intervals(summed, confidence, ci_target)
    elif confidence is not None:
        interval = _interval(
            mechanism,
            summed,
            estimates["aucs"],
            confidence,
            ci_target,
            num_examples,
            shares,
            shares_arrived,
        )
    return AUCResult(
        **estimates,
        mechanism=mechanism.name,
        statement=statement,
        epsilon=epsilon,
        delta=delta,
        epsilon_total=epsilon_total,
        delta_total=delta_total,
        num_examples=None if num_examples is None else float(num_examples),
        num_clients=num_clients,
        num_reporting=reporting,
        noisy_counts={key: np.asarray(value) for key, value in summed.items()},
        slice_key=slice_key,
        slices_per_example=k,
        interval=interval,
        round_report=round_report,
    )


def achieved_statement_of(mechanism, num_reporting: int):
    """The binary mechanism's statement achieved by ``num_reporting`` reports
    ([`dpauc_tf.mechanisms.base.achieved_statement`][])."""
    from dpauc_tf.mechanisms.base import achieved_statement

    return achieved_statement(mechanism, num_reporting)


def _estimates(mechanism, summed: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """A binary release's AUC ``[R]`` and ROC ``[R, T]`` (``[R, 0]`` for an AUC-only one)."""
    import tensorflow as tf

    from dpauc_tf.core.curve import roc_from_confusion

    tensors = {key: tf.constant(np.asarray(value), tf.float64) for key, value in summed.items()}
    aucs = np.atleast_1d(mechanism.estimate_auc(tensors).numpy()).astype(np.float64)
    if mechanism.capabilities.releases == "curve":
        roc = roc_from_confusion(mechanism.to_confusion(tensors))
        fpr, tpr = np.atleast_2d(roc.fpr.numpy()), np.atleast_2d(roc.tpr.numpy())
    else:  # the mechanism releases only the AUC
        fpr = tpr = np.zeros((int(aucs.size), 0))
    return {"aucs": aucs, "fpr": fpr, "tpr": tpr}


def _class_estimates(mechanism, summed: Mapping[str, Any], average: str) -> dict[str, Any]:
    """A one-vs-rest release's class axis: per-class AUCs, supports and curves, the three
    averages, and the headline ``average`` as ``aucs``."""
    estimate = mechanism.estimate(summed)
    class_aucs = np.atleast_2d(estimate["class_aucs"])
    repeats = class_aucs.shape[0]
    averages = {key: np.atleast_1d(estimate[key]) for key in Average.values()}
    return {
        "aucs": averages[average],
        "fpr": estimate["fpr"].reshape(repeats, mechanism.num_classes, estimate["fpr"].shape[-1]),
        "tpr": estimate["tpr"].reshape(repeats, mechanism.num_classes, estimate["tpr"].shape[-1]),
        "num_classes": mechanism.num_classes,
        "average": average,
        "class_aucs": class_aucs,
        "support": np.atleast_2d(estimate["support"]),
        **averages,
    }


def _split_statement(mechanism, statement, groups: tuple[int, ...]):
    """The statement when dropouts split a secure sum's neighbourhoods into ``groups``."""
    smallest = min(groups)
    return dataclasses.replace(
        statement,
        noise=f"{mechanism.statement().noise}; dropouts split SecAgg+'s neighbourhoods into "
        f"groups of {sorted(groups, reverse=True)} clients whose sums the server can unmask "
        f"separately, so epsilon is the one achieved by the smallest group's {smallest} shares: "
        f"{statement.epsilon:g}",
    )
