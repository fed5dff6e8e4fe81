"""The release path for one-vs-rest multi-class AUC: spec, result, and the simulate backend.

The same three steps as the binary path ([`dpauc_tf.mechanisms.release`][]):
[`MultiClassSpec`][] describes the release (hashable), every client (or the one data
holder) counts ``[C, T + 1]`` positives and negatives per class
([`one_vs_rest_counts`][]) and releases them through
[`OneVsRest`][], and `finish_multiclass` turns the
summed reports into one [`MultiClassResult`][]. [`evaluate_multiclass`][] runs the
whole path in one process: centrally, or as ``K`` simulated clients that each release their
own counts (local noise, or secure shares whose sum carries one draw of the noise).

Examples:
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> scores = rng.dirichlet([1, 1, 1], size=200)
    >>> labels = rng.integers(0, 3, size=200)
    >>> result = evaluate_multiclass(labels, scores, epsilon=None, num_thresholds=50)
    >>> result.average, result.epsilon is None, result.class_aucs.shape
    ('macro', True, (1, 3))
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from typing import Any

import numpy as np

from dpauc_tf.core.defaults import DEFAULT_NUM_THRESHOLDS
from dpauc_tf.core.thresholds import Thresholds
from dpauc_tf.mechanisms.multiclass import (
    OneVsRest,
    check_average,
    check_num_classes,
    one_vs_rest_counts,
)
from dpauc_tf.mechanisms.release import check_repeats, finite_or_none, frozen_options


@dataclasses.dataclass(frozen=True)
class MultiClassSpec:
    """What describes a one-vs-rest release (hashable, picklable).

    Attributes:
      mechanism: the binary mechanism every class is released with.
      epsilon: epsilon of one release of all classes (``None``: no noise, NOT private).
      delta: for mechanisms that take one.
      num_classes: ``C >= 2``.
      thresholds: the grid.
      options: the mechanism's options as sorted ``(name, value)`` pairs.
      seed: ``None`` (OS entropy) or an int (reproducible; experiments only).
      average: ``"macro"``, ``"weighted"`` or ``"micro"`` (the result's headline AUC).

    Examples:
        >>> spec = MultiClassSpec.make(epsilon=1.0, num_classes=3, num_thresholds=10)
        >>> spec.build().class_epsilon
        0.5
    """

    mechanism: str
    epsilon: float | None
    delta: float | None
    num_classes: int
    thresholds: Thresholds
    options: tuple[tuple[str, Any], ...] = ()
    seed: int | None = None
    average: str = "macro"

    @classmethod
    def make(
        cls,
        mechanism: str = "histogram",
        *,
        epsilon: float | None,
        num_classes: int,
        num_thresholds: int = DEFAULT_NUM_THRESHOLDS,
        delta: float | None = None,
        options: Mapping[str, Any] | None = None,
        seed: int | None = None,
        average: str = "macro",
    ) -> MultiClassSpec:
        """A checked spec (the mechanism is built once, so bad arguments fail now)."""
        if seed is not None:
            from dpauc_tf.noise.seeds import make_seed

            make_seed(seed)
        spec = cls(
            mechanism=mechanism,
            epsilon=epsilon,
            delta=delta,
            num_classes=check_num_classes(num_classes),
            thresholds=Thresholds.make(num_thresholds),
            options=frozen_options(options),
            seed=seed,
            average=check_average(average),
        )
        spec.build()
        return spec

    def build(self, num_clients: int | None = None) -> OneVsRest:
        """The [`OneVsRest`][] mechanism for ``num_clients`` shares (cached)."""
        return _build(self, 1 if num_clients is None else int(num_clients))

    def seed_for(self, *keys: Any):
        """The ``[2]`` seed of one release ([`dpauc_tf.noise.seeds.derive_seed`][])."""
        from dpauc_tf.noise.seeds import derive_seed

        return derive_seed(self.seed, "one-vs-rest", *keys)

    @property
    def capabilities(self):
        """The class mechanism's registry entry (as ``ReleaseSpec.capabilities``)."""
        from dpauc_tf.mechanisms.registry import mechanism_spec

        return mechanism_spec(self.mechanism).capabilities

    def check_releases_counts(self, surface: str) -> None:
        """As ``ReleaseSpec``'s; a one-vs-rest spec always releases bucket counts
        ([`OneVsRest`][] refuses every other mechanism when the spec is made)."""
        del surface

    def check_summable(self, num_clients: int, surface: str) -> None:
        """As ``ReleaseSpec``'s; one-vs-rest releases are curves, so they always sum."""
        del num_clients, surface


@functools.lru_cache(maxsize=64)
def _build(spec: MultiClassSpec, num_clients: int) -> OneVsRest:
    return OneVsRest(
        spec.mechanism,
        epsilon=spec.epsilon,
        num_classes=spec.num_classes,
        num_thresholds=spec.thresholds.num_thresholds,
        delta=spec.delta,
        num_clients=num_clients,
        options=dict(spec.options),
    )


@dataclasses.dataclass(frozen=True)
class MultiClassResult:
    """What one multi-class evaluation released (NumPy arrays, ``R`` repeats).

    Attributes:
      average: the headline average (``aucs`` is that one).
      aucs: the headline average of every repeat ``[R]``.
      macro: the macro average ``[R]`` (NaN where a class's AUC is undefined).
      weighted: the average weighted by the released supports ``[R]``.
      micro: the AUC of the counts summed over the classes ``[R]``.
      class_aucs: per-class AUCs ``[R, C]``.
      fpr: per-class false positive rates ``[R, C, T]``.
      tpr: per-class true positive rates ``[R, C, T]``.
      support: released positives per class ``[R, C]`` (the weights of ``weighted``).
      mechanism: ``"one-vs-rest <binary mechanism>"``.
      statement: the guarantee of one release of all classes.
      epsilon: one release's (``None`` without noise).
      delta: one release's (0 without noise).
      epsilon_total: ``R`` releases composed with dp-accounting.
      delta_total: their delta.
      num_examples: examples counted.
      num_classes: ``C``.
      num_clients: as in [`AUCResult`][dpauc_tf.mechanisms.release.AUCResult].
      num_reporting: as in [`AUCResult`][dpauc_tf.mechanisms.release.AUCResult].
      noisy_counts: the (summed) release, arrays ``[R, C, ...]``.
    """

    average: str
    aucs: np.ndarray
    macro: np.ndarray
    weighted: np.ndarray
    micro: np.ndarray
    class_aucs: np.ndarray
    fpr: np.ndarray
    tpr: np.ndarray
    support: np.ndarray
    mechanism: str
    statement: Any
    epsilon: float | None
    delta: float
    epsilon_total: float | None
    delta_total: float
    num_examples: float | None
    num_classes: int
    num_clients: int | None
    num_reporting: int | None
    noisy_counts: dict[str, np.ndarray]

    @property
    def auc(self) -> float:
        """The first repeat's headline average (NaN where undefined)."""
        return float(self.aucs[0])

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready values (``None`` for NaN; the first repeat's curves)."""
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
            ],
            "epsilon": self.epsilon,
            "delta": self.delta,
            "epsilon_total": self.epsilon_total,
            "delta_total": self.delta_total,
            "privacy": None if self.statement is None else str(self.statement),
            "num_examples": self.num_examples,
            "num_classes": self.num_classes,
            "num_clients": self.num_clients,
            "num_reporting": self.num_reporting,
        }


def finish_multiclass(
    spec: MultiClassSpec,
    summed: Mapping[str, Any],
    *,
    num_examples: float | None,
    num_clients: int | None = None,
    num_reporting: int | None = None,
) -> MultiClassResult:
    """Post-processing of a (summed) release ``[R, C, ...]`` and its accounting."""
    mechanism = spec.build(num_clients)
    estimate = mechanism.estimate(summed)
    class_aucs = np.atleast_2d(estimate["class_aucs"])
    repeats = class_aucs.shape[0]
    reporting = num_clients if num_reporting is None else int(num_reporting)
    short = reporting is not None and reporting < mechanism.num_clients
    statement = mechanism.statement(reporting if short else None)
    if spec.epsilon is None:
        epsilon = epsilon_total = None
        delta = delta_total = 0.0
    else:
        epsilon, delta = finite_or_none(float(statement.epsilon)), float(statement.delta)
        if short:  # basic composition of the achieved releases (a valid bound)
            epsilon_total = finite_or_none(repeats * float(statement.epsilon))
            delta_total = min(1.0, repeats * delta)
        else:
            whole = mechanism.privacy_spent(repeats)
            epsilon_total, delta_total = finite_or_none(whole.best), float(whole.delta)
    averages = {key: np.atleast_1d(estimate[key]) for key in ("macro", "weighted", "micro")}
    return MultiClassResult(
        average=spec.average,
        aucs=averages[spec.average],
        class_aucs=class_aucs,
        fpr=estimate["fpr"].reshape(repeats, spec.num_classes, -1),
        tpr=estimate["tpr"].reshape(repeats, spec.num_classes, -1),
        support=np.atleast_2d(estimate["support"]),
        mechanism=mechanism.name,
        statement=statement,
        epsilon=epsilon,
        delta=delta,
        epsilon_total=epsilon_total,
        delta_total=delta_total,
        num_examples=None if num_examples is None else float(num_examples),
        num_classes=spec.num_classes,
        num_clients=num_clients,
        num_reporting=reporting,
        noisy_counts={key: np.asarray(value) for key, value in summed.items()},
        **averages,
    )


def evaluate_multiclass(
    labels: Any,
    scores: Any,
    *,
    epsilon: float | None,
    mechanism: str = "histogram",
    num_thresholds: int = DEFAULT_NUM_THRESHOLDS,
    delta: float | None = None,
    average: str = "macro",
    options: Mapping[str, Any] | None = None,
    num_clients: int | None = None,
    client_ids: Any = None,
    repeats: int = 1,
    seed: int | None = None,
    sample_weight: Any = None,
    from_logits: bool = False,
) -> MultiClassResult:
    """One-vs-rest private AUC of ``scores [N, C]`` and ``labels`` (the simulate backend).

    Without ``num_clients`` one data holder counts and releases once (central noise). With
    ``num_clients=K`` the examples go to ``K`` clients (``client_ids`` in ``[0, K)``, or
    uniformly at random: IID), every client releases its own ``[C, T + 1]`` counts through
    the mechanism built for ``K`` (a secure mechanism: one noise share each, and only the
    sum carries the stated noise; a local one: every report private on its own), and the
    reports are summed.

    Args:
      labels: class ids ``[N]`` or one-hot ``[N, C]``.
      scores: ``[N, C]`` class probabilities (logits with ``from_logits``).
      epsilon: of one release of all classes (``None``: no noise, NOT private).
      mechanism: the binary curve mechanism of every class.
      num_thresholds: the grid's thresholds.
      delta: for mechanisms with a delta (of the whole release).
      options: the mechanism's options.
      average: the headline average.
      num_clients: simulated clients (``None``: central).
      client_ids: each example's client (default: IID, drawn from ``seed``).
      repeats: independent releases (the cost composes).
      seed: ``None`` (OS entropy) or an int (reproducible).
      sample_weight: weights ``[N]`` in [0, 1].
      from_logits: the scores are logits (softmax first).
    """
    scores = np.asarray(scores, np.float64)
    if scores.ndim != 2:
        raise ValueError(
            f"scores must have shape [N, C] (one column per class), got {scores.shape}"
        )
    spec = MultiClassSpec.make(
        mechanism,
        epsilon=epsilon,
        num_classes=scores.shape[1],
        num_thresholds=num_thresholds,
        delta=delta,
        options=options,
        seed=seed,
        average=average,
    )
    repeats = check_repeats(repeats)
    built = spec.build(num_clients)
    integer = bool(built.capabilities.integer_counts)
    grid = spec.thresholds
    if num_clients is None:
        pos, neg = one_vs_rest_counts(
            labels,
            scores,
            grid,
            sample_weight=sample_weight,
            from_logits=from_logits,
            integer_weights=integer,
            unit_weights=built.epsilon is not None,
        )
        release = built.release(pos, neg, seed=spec.seed_for("central"), repeats=repeats)
        summed = {key: value.numpy() for key, value in release.items()}
        return finish_multiclass(spec, summed, num_examples=_total(sample_weight, scores))
    if isinstance(num_clients, bool) or not isinstance(num_clients, int) or num_clients < 1:
        raise ValueError(f"num_clients must be an int >= 1, got {num_clients!r}")
    clients = _client_ids(client_ids, num_clients, scores.shape[0], seed)
    weights = None if sample_weight is None else np.asarray(sample_weight, np.float64).ravel()
    summed: dict[str, np.ndarray] | None = None
    for client in range(num_clients):
        rows = clients == client
        if rows.any():
            pos, neg = one_vs_rest_counts(
                np.asarray(labels)[rows],
                scores[rows],
                grid,
                sample_weight=None if weights is None else weights[rows],
                from_logits=from_logits,
                integer_weights=integer,
                unit_weights=built.epsilon is not None,
            )
        else:  # a client with no examples still sends its share of the noise
            pos = neg = np.zeros((spec.num_classes, grid.num_buckets))
        release = built.release(pos, neg, seed=spec.seed_for("client", client), repeats=repeats)
        report = {key: value.numpy() for key, value in release.items()}
        summed = report if summed is None else {k: summed[k] + report[k] for k in summed}
    return finish_multiclass(
        spec, summed, num_examples=_total(sample_weight, scores), num_clients=num_clients
    )


def _total(sample_weight: Any, scores: np.ndarray) -> float:
    if sample_weight is None:
        return float(scores.shape[0])
    return float(np.sum(sample_weight))


def _client_ids(client_ids: Any, num_clients: int, rows: int, seed: int | None) -> np.ndarray:
    if client_ids is None:
        return np.random.default_rng(seed).integers(0, num_clients, size=rows)
    ids = np.asarray(client_ids).ravel()
    if ids.shape[0] != rows:
        raise ValueError(f"{ids.shape[0]} client ids for {rows} examples")
    if not np.issubdtype(ids.dtype, np.integer) or ids.min() < 0 or ids.max() >= num_clients:
        raise ValueError(f"client ids must be integers in [0, num_clients={num_clients})")
    return ids
