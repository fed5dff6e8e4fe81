"""Label-DP mechanisms on bucket counts.

Every mechanism turns the per-bucket counts ``pos[b], neg[b]`` of one data holder into a
*release* (a dict of noisy tensors), and turns a release, or the sum of many clients'
releases, into cumulative confusion counts (post-processing, no privacy cost). Releases are
additive, so a federated server may sum clients' releases before :meth:`to_confusion`.

All mechanisms are vectorised over a leading "repeat" axis: ``repeats=R`` draws ``R``
independent releases of the same counts in one call.

Neighbouring relation (all mechanisms here): **label DP** — two test sets are neighbours when
they differ only in the label of one example (same scores, same weights in [0, 1]).

============================  ===================  ======================================  ====================
mechanism                     released             noise                                   sensitivity
============================  ===================  ======================================  ====================
``paper`` (DPAUC_Lap)         TP, FP, TN, FN (4T)  Laplace(4T / eps) per count              L1 = 2T (paper: 4T)
``paper-gaussian``            TP, FP, TN, FN (4T)  Gaussian, sigma for (eps, delta), L2     L2 = sqrt(2T)
``histogram``                 pos, neg (2(T+1))    Laplace(2 / eps) per bucket count        L1 = 2
``histogram-public-scores``   pos (T+1), n exact   Laplace(1 / eps) per positive count      L1 = 1
``none``                      pos, neg             none: NOT private                        -
============================  ===================  ======================================  ====================

Noise on the histogram mechanisms: ``noise="continuous"`` (default) draws floating-point
Laplace noise (:func:`dpauc_tf.noise.laplace`), which, like every floating-point sampler, is
open to Mironov's (2012) low-order-bit attack. ``noise="discrete"`` is the hardened choice:
exact discrete Laplace noise of the same scale (:mod:`dpauc_tf.exact_noise`, integer
arithmetic only), valid for integer counts (no fractional sample weights; checked). It is
sampled with numpy through ``tf.numpy_function``: eager and ``tf.function``, not XLA.

>>> m = get_mechanism("histogram", epsilon=1.0, num_thresholds=3)
>>> m.noise_scale
2.0
>>> release = m.release(tf.constant([0., 5., 3., 0.]), tf.constant([0., 4., 1., 0.]), seed=0)
>>> sorted(release)
['neg', 'pos']
"""

from __future__ import annotations

import abc
import dataclasses
import math
from typing import ClassVar

import dp_accounting
import numpy as np
import tensorflow as tf

from dpauc_tf import exact_noise, noise
from dpauc_tf.accounting import EpsilonSpent, analytic_gaussian_sigma, composed_epsilon
from dpauc_tf.curve import (
    Confusion,
    RocCurve,
    auc_from_roc,
    confusion_from_histogram,
    roc_from_confusion,
)

LABEL_DP = (
    "label DP: neighbouring test sets differ only in the label of one example "
    "(scores and weights in [0, 1] unchanged)"
)

Release = dict[str, tf.Tensor]


def check_epsilon(epsilon: float | None) -> float | None:
    """Validates a total epsilon: ``None`` (no noise) or a finite number > 0."""
    if epsilon is None:
        return None
    if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float)):
        raise TypeError(f"epsilon must be a number or None, got {epsilon!r}")
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise ValueError(
            f"epsilon must be finite and > 0 (or None for no noise, not private), got {epsilon}"
        )
    return float(epsilon)


def check_delta(delta: float | None, *, required: bool) -> float:
    if delta is None:
        if required:
            raise ValueError("this mechanism needs delta in (0, 1), e.g. delta=1e-6")
        return 0.0
    if isinstance(delta, bool) or not isinstance(delta, (int, float)):
        raise TypeError(f"delta must be a number, got {delta!r}")
    if required and not 0.0 < delta < 1.0:
        raise ValueError(f"delta must be in (0, 1), got {delta}")
    if not required and delta != 0.0:
        raise ValueError("this mechanism is pure epsilon-DP; leave delta unset")
    return float(delta)


@dataclasses.dataclass(frozen=True)
class PrivacyStatement:
    """What one release of a mechanism guarantees.

    ``epsilon``/``delta`` are the guarantee this library proves and accounts;
    ``claimed_epsilon`` is what the source (e.g. the paper) claims for the same noise, when
    it differs.
    """

    mechanism: str
    neighbouring: str
    sensitivity: str
    noise: str
    epsilon: float
    delta: float
    claimed_epsilon: float | None = None

    def __str__(self) -> str:
        claim = (
            f" (the paper claims epsilon={self.claimed_epsilon:g})"
            if self.claimed_epsilon is not None and self.claimed_epsilon != self.epsilon
            else ""
        )
        return (
            f"{self.mechanism}: ({self.epsilon:g}, {self.delta:g})-DP{claim}; "
            f"neighbours: {self.neighbouring}; sensitivity: {self.sensitivity}; "
            f"noise: {self.noise}"
        )


class CountMechanism(abc.ABC):
    """A mechanism on bucket counts ``pos, neg`` of shape ``[T + 1]``.

    Subclasses set ``name`` and implement :meth:`_noisy_release`, :meth:`to_confusion`,
    :meth:`dp_event` and :meth:`statement`.
    """

    name: ClassVar[str]
    neighbouring: ClassVar[str] = LABEL_DP
    requires_delta: ClassVar[bool] = False

    def __init__(self, epsilon: float, num_thresholds: int, delta: float | None = None):
        epsilon = check_epsilon(epsilon)
        if epsilon is None:
            raise ValueError(f"{self.name} needs an epsilon; use the 'none' mechanism for no noise")
        if num_thresholds < 2:
            raise ValueError(f"need at least 2 thresholds, got {num_thresholds}")
        self.epsilon = epsilon
        self.delta = check_delta(delta, required=self.requires_delta)
        self.num_thresholds = int(num_thresholds)

    @property
    def num_buckets(self) -> int:
        return self.num_thresholds + 1

    def release(
        self,
        pos: tf.Tensor,
        neg: tf.Tensor,
        seed: int | tf.Tensor | None = None,
        repeats: int | None = None,
    ) -> Release:
        """Noisy release of the counts; with ``repeats=R`` every tensor gets a leading ``R`` axis."""
        pos = tf.convert_to_tensor(pos)
        neg = tf.cast(tf.convert_to_tensor(neg), pos.dtype)
        if not pos.dtype.is_floating:
            pos, neg = tf.cast(pos, tf.float64), tf.cast(neg, tf.float64)
        if repeats is not None:
            if repeats < 1:
                raise ValueError(f"repeats must be >= 1, got {repeats}")
            pos = tf.broadcast_to(pos, tf.concat([[repeats], tf.shape(pos)], 0))
            neg = tf.broadcast_to(neg, tf.concat([[repeats], tf.shape(neg)], 0))
        return self._noisy_release(pos, neg, noise.make_seed(seed))

    @abc.abstractmethod
    def _noisy_release(self, pos: tf.Tensor, neg: tf.Tensor, seed: tf.Tensor) -> Release:
        """Adds noise to counts whose leading axes are already the output's."""

    @abc.abstractmethod
    def to_confusion(self, release: Release) -> Confusion:
        """Cumulative counts at every threshold from a (summed) release; no noise added."""

    @abc.abstractmethod
    def dp_event(self) -> dp_accounting.DpEvent:
        """One release as a dp-accounting event (with the tight sensitivity)."""

    def estimate_auc(self, release: Release) -> tf.Tensor:
        """The AUC of a (summed) release: by default the trapezoid under :meth:`to_confusion`'s
        curve (clipped at 0, sorted by FPR, as in the reference code). Mechanisms with a
        better estimator (the tree histograms) override this. No noise is added."""
        return auc_from_roc(roc_from_confusion(self.to_confusion(release)))

    @abc.abstractmethod
    def statement(self) -> PrivacyStatement:
        """Neighbouring relation, sensitivity, noise and the (epsilon, delta) of one release."""

    @property
    @abc.abstractmethod
    def noise_stddev(self) -> float:
        """Standard deviation of the noise on one released count."""

    def privacy_spent(self, releases: int = 1, delta: float | None = None):
        """Epsilon of ``releases`` releases (see :func:`dpauc_tf.accounting.composed_epsilon`)."""
        return composed_epsilon(self.dp_event(), releases, self.delta if delta is None else delta)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(epsilon={self.epsilon!r}, "
            f"num_thresholds={self.num_thresholds!r}, delta={self.delta!r})"
        )


class PaperLaplace(CountMechanism):
    """DPAUC_Lap exactly as published (Sun et al. 2023).

    Released: the ``4T`` cumulative counts TP, FP, TN, FN at every threshold.
    Noise: independent ``Laplace(1 / eps')`` on each, ``eps' = epsilon / (4T)``.
    Sensitivity: each count changes by at most 1; the paper charges all ``4T`` (L1 = 4T,
    claimed epsilon ``4T eps' = epsilon``). A label flip changes exactly two counts per
    threshold (TP and FP, or FN and TN), so the true L1 sensitivity is ``2T`` and the same
    noise gives ``epsilon / 2``; that tight figure is what :meth:`dp_event` accounts.
    Neighbours: label DP.

    >>> PaperLaplace(epsilon=1.0, num_thresholds=100).noise_scale
    400.0
    """

    name = "paper"

    @property
    def noise_scale(self) -> float:
        return 4.0 * self.num_thresholds / self.epsilon

    @property
    def noise_stddev(self) -> float:
        return math.sqrt(2.0) * self.noise_scale

    def _exact_confusion(self, pos, neg) -> Confusion:
        return confusion_from_histogram(pos, neg)

    def _noisy_release(self, pos, neg, seed):
        exact = self._exact_confusion(pos, neg)
        shape = tf.shape(exact.tp)
        seeds = noise.split_seed(seed, 4)
        return {
            key: value + noise.laplace(shape, self.noise_scale, seeds[i], value.dtype)
            for i, (key, value) in enumerate(exact._asdict().items())
        }

    def to_confusion(self, release):
        return Confusion(release["tp"], release["fp"], release["tn"], release["fn"])

    def dp_event(self):
        tight_l1 = 2.0 * self.num_thresholds
        return dp_accounting.LaplaceDpEvent(noise_multiplier=self.noise_scale / tight_l1)

    def statement(self):
        return PrivacyStatement(
            mechanism=self.name,
            neighbouring=self.neighbouring,
            sensitivity=f"L1 = 2T = {2 * self.num_thresholds} (the paper charges 4T)",
            noise=f"Laplace(scale={self.noise_scale:g}) on each of 4T = "
            f"{4 * self.num_thresholds} cumulative counts",
            epsilon=self.epsilon / 2.0,
            delta=0.0,
            claimed_epsilon=self.epsilon,
        )


class PaperGaussian(PaperLaplace):
    """The paper's ``4T`` cumulative counts with Gaussian noise, for (epsilon, delta).

    Sensitivity: a label flip changes ``2T`` counts by 1, so L2 = ``sqrt(2T)``.
    Noise: ``N(0, sigma^2)`` on each count, ``sigma`` the smallest std that makes one Gaussian
    release of L2 sensitivity ``sqrt(2T)`` (epsilon, delta)-DP (analytic Gaussian mechanism,
    Balle & Wang 2018; the whole vector is one Gaussian mechanism, so no composition over
    thresholds is needed). Neighbours: label DP.
    """

    name = "paper-gaussian"
    requires_delta = True

    @property
    def l2_sensitivity(self) -> float:
        return math.sqrt(2.0 * self.num_thresholds)

    @property
    def noise_stddev(self) -> float:
        return analytic_gaussian_sigma(self.epsilon, self.delta, self.l2_sensitivity)

    @property
    def noise_scale(self) -> float:
        return self.noise_stddev

    def _noisy_release(self, pos, neg, seed):
        exact = self._exact_confusion(pos, neg)
        shape = tf.shape(exact.tp)
        seeds = noise.split_seed(seed, 4)
        return {
            key: value + noise.gaussian(shape, self.noise_stddev, seeds[i], value.dtype)
            for i, (key, value) in enumerate(exact._asdict().items())
        }

    def dp_event(self):
        return dp_accounting.GaussianDpEvent(
            noise_multiplier=self.noise_stddev / self.l2_sensitivity
        )

    def statement(self):
        return PrivacyStatement(
            mechanism=self.name,
            neighbouring=self.neighbouring,
            sensitivity=f"L2 = sqrt(2T) = {self.l2_sensitivity:.4g}",
            noise=f"Gaussian(sigma={self.noise_stddev:.4g}) on each of 4T = "
            f"{4 * self.num_thresholds} cumulative counts",
            epsilon=self.epsilon,
            delta=self.delta,
        )


NOISE_KINDS = ("continuous", "discrete")


class HistogramLaplace(CountMechanism):
    """Laplace noise on the class histograms; the curve is their prefix sums.

    Released: ``pos[b]`` and ``neg[b]`` for all ``T + 1`` buckets.
    Sensitivity: a label flip moves weight ``w <= 1`` from ``pos[b]`` to ``neg[b]``: L1 = 2.
    Noise: ``Laplace(2 / epsilon)`` on each of the ``2 (T + 1)`` counts. Epsilon: ``epsilon``.
    With ``noise="discrete"``: exact discrete Laplace (two-sided geometric) noise
    ``P(k) ~ exp(-|k| epsilon / 2)``, which is epsilon-DP for integer counts (unit weights;
    fractional weights raise). Neighbours: label DP.

    >>> HistogramLaplace(epsilon=0.5, num_thresholds=100).noise_scale
    4.0
    >>> m = HistogramLaplace(epsilon=1.0, num_thresholds=3, noise="discrete")
    >>> r = m.release(tf.constant([0., 5., 3., 0.]), tf.constant([0., 4., 1., 0.]), seed=0)
    >>> bool(tf.reduce_all(r["pos"] == tf.round(r["pos"])))
    True
    """

    name = "histogram"
    l1_sensitivity: ClassVar[float] = 2.0

    def __init__(
        self,
        epsilon: float,
        num_thresholds: int,
        delta: float | None = None,
        noise: str = "continuous",
    ):
        super().__init__(epsilon=epsilon, num_thresholds=num_thresholds, delta=delta)
        if noise not in NOISE_KINDS:
            raise ValueError(f"noise must be one of {NOISE_KINDS}, got {noise!r}")
        self.noise = noise

    def _laplace(self, counts: tf.Tensor, seed: tf.Tensor) -> tf.Tensor:
        """Laplace noise of ``noise_scale`` shaped like ``counts`` (continuous or exact discrete)."""
        if self.noise == "continuous":
            return noise.laplace(tf.shape(counts), self.noise_scale, seed, counts.dtype)
        message = (
            f"{self.name} with noise='discrete' needs integer counts (unit sample weights); "
            "use noise='continuous' for fractional weights"
        )
        if tf.executing_eagerly():
            values = counts.numpy()
            if not (np.all(np.isfinite(values)) and np.all(values == np.round(values))):
                raise ValueError(message)
            check = []
        else:
            check = [tf.debugging.assert_equal(counts, tf.round(counts), message=message)]
        scale = self.noise_scale

        def sample(seed_values, shape):
            draws = exact_noise.discrete_laplace_sample(scale, tuple(shape), seed=seed_values)
            return draws.astype(np.float64)

        with tf.control_dependencies(check):
            draws = tf.numpy_function(sample, [seed, tf.shape(counts)], tf.float64, stateful=False)
        draws.set_shape(counts.shape)
        return tf.cast(draws, counts.dtype)

    def privacy_spent(self, releases: int = 1, delta: float | None = None):
        """As :meth:`CountMechanism.privacy_spent`; exact discrete-Laplace PLD for discrete noise.

        :meth:`dp_event` is a continuous ``LaplaceDpEvent`` either way: its pure epsilon
        (``basic``) is exact for both noises, but its PLD/RDP figures understate the
        discrete mechanism's delta for epsilon above about 1.7 (dp-accounting 0.4.3 has no
        discrete-Laplace event). With ``noise="discrete"`` the PLD figure here is computed
        from the discrete mechanism itself (a flip shifts ``l1_sensitivity`` counts by one
        each) and no RDP figure is given.
        """
        if self.noise == "continuous":
            return super().privacy_spent(releases, delta)
        delta = self.delta if delta is None else delta
        if releases < 0:
            raise ValueError(f"releases must be >= 0, got {releases}")
        basic = releases * self.epsilon
        pld_epsilon = None
        if delta > 0 and releases > 0:
            from dp_accounting.pld import privacy_loss_distribution

            per_count = privacy_loss_distribution.from_discrete_laplace_mechanism(
                1.0 / self.noise_scale, sensitivity=1
            )
            composed = per_count.self_compose(int(self.l1_sensitivity) * releases)
            pld_epsilon = float(composed.get_epsilon_for_delta(delta))
        return EpsilonSpent(basic, pld_epsilon, None, delta, releases)

    def _noise_description(self) -> str:
        if self.noise == "discrete":
            return f"exact discrete Laplace(scale={self.noise_scale:g}) (integer noise)"
        return f"Laplace(scale={self.noise_scale:g})"

    def __repr__(self) -> str:
        return super().__repr__()[:-1] + f", noise={self.noise!r})"

    @property
    def noise_scale(self) -> float:
        return self.l1_sensitivity / self.epsilon

    @property
    def noise_stddev(self) -> float:
        if self.noise == "discrete":
            return math.sqrt(exact_noise.discrete_laplace_variance(self.noise_scale))
        return math.sqrt(2.0) * self.noise_scale

    def _noisy_release(self, pos, neg, seed):
        seeds = noise.split_seed(seed, 2)
        return {
            "pos": pos + self._laplace(pos, seeds[0]),
            "neg": neg + self._laplace(neg, seeds[1]),
        }

    def to_confusion(self, release):
        return confusion_from_histogram(release["pos"], release["neg"])

    def dp_event(self):
        return dp_accounting.LaplaceDpEvent(noise_multiplier=self.noise_scale / self.l1_sensitivity)

    def statement(self):
        return PrivacyStatement(
            mechanism=self.name,
            neighbouring=self.neighbouring,
            sensitivity="L1 = 2 (one unit of weight moves between pos[b] and neg[b])",
            noise=f"{self._noise_description()} on each of 2(T+1) = "
            f"{2 * self.num_buckets} bucket counts",
            epsilon=self.epsilon,
            delta=0.0,
        )


class HistogramPublicScores(HistogramLaplace):
    """Laplace noise on the positive histogram only; bucket totals are released exactly.

    Released: noisy ``pos[b]`` and the exact totals ``n[b] = pos[b] + neg[b]``; the negatives
    follow as ``n[b] - pos[b]``. The totals do not depend on labels, so they cost nothing
    under label DP, **but the score histogram becomes public**: use this only when the
    distribution of scores may be revealed.
    Sensitivity: a label flip changes one ``pos[b]`` by ``w <= 1``: L1 = 1.
    Noise: ``Laplace(1 / epsilon)`` on each of the ``T + 1`` positive counts.
    Neighbours: label DP.
    """

    name = "histogram-public-scores"
    l1_sensitivity: ClassVar[float] = 1.0

    def _noisy_release(self, pos, neg, seed):
        return {"pos": pos + self._laplace(pos, seed), "total": pos + neg}

    def to_confusion(self, release):
        return confusion_from_histogram(release["pos"], release["total"] - release["pos"])

    def statement(self):
        return PrivacyStatement(
            mechanism=self.name,
            neighbouring=self.neighbouring + "; the score histogram is released exactly",
            sensitivity="L1 = 1 (one positive count changes by the example's weight)",
            noise=f"{self._noise_description()} on each of T+1 = "
            f"{self.num_buckets} positive bucket counts; bucket totals exact",
            epsilon=self.epsilon,
            delta=0.0,
        )


class NoNoise(CountMechanism):
    """No noise at all: the exact counts. **Not private**; for ground truth and tests."""

    name = "none"

    def __init__(self, epsilon: float | None = None, num_thresholds: int = 200, delta=None):
        if epsilon is not None:
            raise ValueError("the 'none' mechanism adds no noise; leave epsilon unset (None)")
        if num_thresholds < 2:
            raise ValueError(f"need at least 2 thresholds, got {num_thresholds}")
        self.epsilon = None
        self.delta = 0.0
        self.num_thresholds = int(num_thresholds)

    @property
    def noise_stddev(self) -> float:
        return 0.0

    def _noisy_release(self, pos, neg, seed):
        return {"pos": pos, "neg": neg}

    def to_confusion(self, release):
        return confusion_from_histogram(release["pos"], release["neg"])

    def dp_event(self):
        return dp_accounting.NonPrivateDpEvent()

    def statement(self):
        return PrivacyStatement(
            mechanism=self.name,
            neighbouring="-",
            sensitivity="-",
            noise="none: NOT differentially private",
            epsilon=math.inf,
            delta=0.0,
        )


MECHANISMS: dict[str, type[CountMechanism]] = {
    cls.name: cls
    for cls in (PaperLaplace, PaperGaussian, HistogramLaplace, HistogramPublicScores, NoNoise)
}


def register_mechanism(cls: type[CountMechanism]) -> type[CountMechanism]:
    """Class decorator that makes a mechanism available by its ``name``."""
    MECHANISMS[cls.name] = cls
    return cls


# Modules that register further mechanisms with @register_mechanism (loaded on first lookup,
# so that this module stays free of import cycles).
EXTENSION_MODULES = (
    "dpauc_tf.distributed",
    "dpauc_tf.hierarchical",
    "dpauc_tf.randomized_response",
    "dpauc_tf.score_noise",
)


def _load_extensions() -> None:
    import importlib
    import importlib.util

    for module in EXTENSION_MODULES:
        if importlib.util.find_spec(module) is not None:
            importlib.import_module(module)


def get_mechanism(
    name: str,
    *,
    epsilon: float | None,
    num_thresholds: int,
    delta: float | None = None,
    **kwargs,
) -> CountMechanism:
    """Builds a mechanism by name; ``epsilon=None`` always means no noise (``none``).

    Raises ``ValueError`` for an unknown name: nothing falls back to "no noise".
    """
    if name not in MECHANISMS:
        _load_extensions()
    if name not in MECHANISMS:
        raise ValueError(f"unknown mechanism {name!r}; choose one of {sorted(MECHANISMS)}")
    if check_epsilon(epsilon) is None:
        return NoNoise(None, num_thresholds)
    if name == "none":
        raise ValueError("mechanism 'none' adds no noise: pass epsilon=None with it")
    return MECHANISMS[name](epsilon=epsilon, num_thresholds=num_thresholds, delta=delta, **kwargs)


@dataclasses.dataclass(frozen=True)
class PrivateAUC:
    """The outcome of noisy releases: AUC (``[R]`` or scalar), the ROC points and the cost."""

    auc: tf.Tensor
    roc: RocCurve
    statement: PrivacyStatement


def private_auc(
    mechanism: CountMechanism,
    pos: tf.Tensor,
    neg: tf.Tensor,
    *,
    seed: int | tf.Tensor | None = None,
    repeats: int | None = None,
) -> PrivateAUC:
    """Releases counts through ``mechanism`` and computes the AUC and ROC of each release.

    >>> m = get_mechanism("histogram", epsilon=1.0, num_thresholds=3)
    >>> out = private_auc(m, tf.constant([0., 50., 30., 0.]), tf.constant([0., 40., 10., 0.]),
    ...                   seed=0, repeats=5)
    >>> out.auc.shape.as_list()
    [5]
    """
    release = mechanism.release(pos, neg, seed=seed, repeats=repeats)
    roc = roc_from_confusion(mechanism.to_confusion(release))
    auc = mechanism.estimate_auc(release)
    return PrivateAUC(auc=auc, roc=roc, statement=mechanism.statement())
