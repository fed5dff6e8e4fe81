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
from typing import Any

import numpy as np

from dpauc_tf.core.defaults import DEFAULT_NUM_THRESHOLDS
from dpauc_tf.core.thresholds import Thresholds
from dpauc_tf.mechanisms.registry import mechanism_spec


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


def check_label_free_keys(
    label: str, slicing: Sequence[Sequence[str]], client: str | None, surface: str
) -> None:
    """Refuses the label column as a slice (or client) column: each slice would hold one
    class, and its ``num_examples`` would be an exact class count. The check is by name
    only: testing whether a column's values follow the labels would itself publish
    something about the labels. Slice columns must be chosen without looking at the labels
    (their sizes are then label-free: scores and slice membership are public under label
    DP)."""
    for spec in slicing:
        if label in spec:
            raise ValueError(
                f"{surface}: the slicing spec {tuple(spec)!r} slices on the label column "
                f"{label!r}: each slice's num_examples would be an exact class count"
            )
    if client is not None and client == label:
        raise ValueError(
            f"{surface}: the client column is the label column {label!r}: each client "
            "would hold one class"
        )


@dataclasses.dataclass(frozen=True)
class ReleaseSpec:
    """What describes a release, as every backend needs it (hashable, picklable).

    Attributes:
      mechanism: a registered mechanism's name (``dpauc_tf.list_mechanisms()``).
      epsilon: epsilon of one release (``None``: no noise, NOT private).
      delta: for the mechanisms that take one.
      thresholds: the grid of the release ([`Thresholds`][]).
      options: the mechanism's constructor options as sorted ``(name, value)`` pairs.
      seed: ``None`` (every release draws fresh operating-system entropy) or an int (every
        seed is derived from it and the release's keys: reproducible, for experiments).

    Examples:
        >>> spec = ReleaseSpec.make("histogram", epsilon=1.0, num_thresholds=10, seed=0)
        >>> spec.build().name, spec.count_grid().num_thresholds
        ('histogram', 10)
        >>> spec.seed_for("slice-a").numpy().tolist() == spec.seed_for("slice-a").numpy().tolist()
        True
    """

    mechanism: str
    epsilon: float | None
    delta: float | None
    thresholds: Thresholds
    options: tuple[tuple[str, Any], ...] = ()
    seed: int | None = None

    @classmethod
    def make(
        cls,
        mechanism: str = "histogram",
        *,
        epsilon: float | None,
        num_thresholds: int | str = DEFAULT_NUM_THRESHOLDS,
        threshold_grid: str | Sequence[float] = "tf",
        delta: float | None = None,
        options: Mapping[str, Any] | None = None,
        seed: int | None = None,
        num_examples: float | None = None,
    ) -> ReleaseSpec:
        """A checked spec: the mechanism is built once here, so that a bad name, epsilon,
        delta or option fails before any work, with the registry's one-line message.
        ``num_thresholds="auto"`` picks the grid from ``num_examples`` (public under label
        DP: `dpauc_tf.mechanisms.auto_grid`)."""
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
        )
        spec.build()
        return spec

    @property
    def num_thresholds(self) -> int:
        return self.thresholds.num_thresholds

    @property
    def threshold_grid(self) -> str | list[float]:
        """The ``threshold_grid`` argument that makes this grid (the inner thresholds of
        an explicit grid as a list)."""
        if self.thresholds.grid in ("tf", "reference"):
            return self.thresholds.grid
        return list(self.thresholds.values[1:-1])

    def settings(self) -> dict[str, Any]:
        """The keyword arguments of the backends' evaluation functions (``mechanism``,
        ``epsilon``, ``delta``, ``num_thresholds``, ``threshold_grid``,
        ``mechanism_options``) that describe this release."""
        return {
            "mechanism": self.mechanism,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "num_thresholds": self.num_thresholds,
            "threshold_grid": self.threshold_grid,
            "mechanism_options": {key: value for key, value in self.options},
        }

    @property
    def capabilities(self):
        """The registry's [`Capabilities`][dpauc_tf.mechanisms.capabilities.Capabilities] entry,
        with the built mechanism's ``unit_weights`` (an option such as ``public_scores`` sets
        it; no noise, no weight rule)."""
        built = self.build().capabilities
        return dataclasses.replace(
            mechanism_spec(self.mechanism).capabilities, unit_weights=built.unit_weights
        )

    def build(self, num_clients: int | None = None):
        """The mechanism for ``num_clients`` clients (the number of shares for secure
        mechanisms; ignored by the others); cached per spec and number."""
        return _build(self, 1 if num_clients is None else int(num_clients))

    def count_grid(self) -> Thresholds:
        """The grid every client counts on: the mechanism's own where it has one."""
        return self.build().count_thresholds(self.thresholds)

    def seed_for(self, *keys: Any):
        """The ``[2]`` seed of one release, from the spec's seed and the release's keys
        (slice, client, repeat chunk, ...): see [`dpauc_tf.noise.seeds.derive_seed`][]."""
        from dpauc_tf.noise.seeds import derive_seed

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
        """Refuses several clients for a mechanism that releases one holder's AUC."""
        if num_clients > 1 and self.capabilities.releases != "curve":
            raise ValueError(
                f"mechanism {self.mechanism!r} releases one AUC from one data holder's "
                f"counts: {surface} cannot sum its releases over {num_clients} clients"
            )


def frozen_options(options: Mapping[str, Any] | None) -> tuple[tuple[str, Any], ...]:
    """A mechanism's options as sorted, hashable ``(name, value)`` pairs (lists and arrays,
    e.g. a tree's budget per level, as tuples): the one normalisation of every spec
    ([`ReleaseSpec`][], the multi-class spec and its per-class budget).

        >>> frozen_options({"budget": [1, 2, 3], "branching": 4})
        (('branching', 4), ('budget', (1, 2, 3)))
    """
    return tuple(sorted((str(key), _frozen(value)) for key, value in (options or {}).items()))


def _frozen(value: Any) -> Any:
    """An option value as a hashable one (lists, e.g. a tree's budget per level, as tuples)."""
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(part) for part in value)
    if isinstance(value, np.ndarray):
        return tuple(value.tolist())
    return value


@functools.lru_cache(maxsize=128)
def _build(spec: ReleaseSpec, num_clients: int):
    from dpauc_tf.mechanisms.registry import get_mechanism

    return get_mechanism(
        spec.mechanism,
        epsilon=spec.epsilon,
        num_thresholds=spec.num_thresholds,
        delta=spec.delta,
        num_clients=num_clients,
        **dict(spec.options),
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
        """Plain JSON-ready values (``None`` for NaN and infinity; the first repeat's curve)."""
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
    result: AUCResult, mechanism, *, confidence: float, ci_target: str = "population"
) -> AUCResult:
    """``result`` with the interval of every release at ``confidence`` for ``ci_target``,
    computed as [`finish_release`][] computes it: from the release's own counts, number of
    examples and reports that arrived (a dropout's missing noise shares are not counted).
    ``mechanism`` is the one the release was built with. Post-processing: no privacy cost."""
    from dpauc_tf.mechanisms.intervals import check_confidence, check_target

    if result.interval is not None and (result.interval.confidence, result.interval.target) == (
        confidence,
        ci_target,
    ):
        return result
    if not result.noisy_counts:
        raise ValueError("the result carries no release counts to compute an interval from")
    check_confidence(confidence)
    check_target(ci_target)
    interval = _interval(
        mechanism,
        result.noisy_counts,
        result.aucs,
        confidence,
        ci_target,
        result.num_examples,
        result.num_clients,
        result.num_reporting,
    )
    return dataclasses.replace(result, interval=interval)


def finish_release(
    spec: ReleaseSpec | None,
    summed: Mapping[str, Any],
    *,
    num_examples: float | None,
    num_clients: int | None = None,
    num_reporting: int | None = None,
    slice_key: Any = None,
    slices_per_example: int = 1,
    mechanism=None,
    confidence: float | None = None,
    ci_target: str = "population",
) -> AUCResult:
    """Post-processing of a (summed) release with a leading repeats axis, and its accounting.

    Args:
      spec: the release's description.
      summed: the release, or the sum of the clients' reports (arrays ``[R, ...]``).
      num_examples: the number of examples counted (rows, not weights).
      num_clients: clients whose shares the mechanism was built for (``None``: central).
      num_reporting: clients whose reports were summed (default: ``num_clients``); the
        statement is the guarantee that many reports achieve.
      slice_key: the slice this release is of.
      slices_per_example: a bound on the slices one example is in (whole-output cost).
      mechanism: the mechanism the caller built and released with (default:
        ``spec.build(num_clients)``; ``spec`` may then be ``None``).
      confidence: e.g. 0.95: also an interval for every release
        (`dpauc_tf.mechanisms.intervals.release_interval`, post-processing of the
        release: no privacy cost); ``ValueError`` where the mechanism has no valid one.
      ci_target: ``"population"`` (default: privacy noise and sampling error) or
        ``"sample"`` (this test set's AUC: privacy noise only).
    """
    import tensorflow as tf

    from dpauc_tf.core.curve import roc_from_confusion
    from dpauc_tf.mechanisms.base import achieved_statement

    if mechanism is None:
        mechanism = spec.build(num_clients)
    private = (mechanism.epsilon if spec is None else spec.epsilon) is not None
    if confidence is not None:  # refuse before any work, with the one-line reason
        from dpauc_tf.mechanisms.intervals import (
            check_confidence,
            check_interval_support,
            check_target,
        )

        check_confidence(confidence)
        check_target(ci_target)
        check_interval_support(mechanism)
    tensors = {key: tf.constant(np.asarray(value), tf.float64) for key, value in summed.items()}
    aucs = np.atleast_1d(mechanism.estimate_auc(tensors).numpy()).astype(np.float64)
    repeats = int(aucs.size)
    if mechanism.capabilities.releases == "curve":
        roc = roc_from_confusion(mechanism.to_confusion(tensors))
        fpr, tpr = np.atleast_2d(roc.fpr.numpy()), np.atleast_2d(roc.tpr.numpy())
    else:  # the mechanism releases only the AUC
        fpr = tpr = np.zeros((repeats, 0))
    reporting = num_clients if num_reporting is None else int(num_reporting)
    statement = achieved_statement(mechanism, 1 if reporting is None else reporting)
    k = max(int(slices_per_example), 1)
    if not private:
        epsilon = epsilon_total = None
        delta = delta_total = 0.0
    else:
        epsilon, delta = finite_or_none(float(statement.epsilon)), float(statement.delta)
        whole = mechanism.privacy_spent(repeats * k)
        full = mechanism.statement().epsilon
        epsilon_total = finite_or_none(whole.best)
        if epsilon_total is not None and statement.epsilon > full:
            # fewer shares arrived than the noise was sized for: the composition of the
            # achieved releases (basic, a valid bound) where the full-noise event would
            # understate it
            epsilon_total = finite_or_none(repeats * k * float(statement.epsilon))
            delta_total = min(1.0, repeats * k * delta)
        else:
            delta_total = float(whole.delta)
    interval = None
    if confidence is not None:
        interval = _interval(
            mechanism, summed, aucs, confidence, ci_target, num_examples, num_clients, reporting
        )
    return AUCResult(
        aucs=aucs,
        fpr=fpr,
        tpr=tpr,
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
    )
