"""The mechanism protocol: what every label-DP (or score-DP) release of a curve implements.

A mechanism turns the per-bucket counts ``pos[b], neg[b]`` of one data holder (or one
client) into a *release* (a dict of tensors), and turns a release, or the sum of many
clients' releases, into cumulative confusion counts and an AUC estimate (post-processing,
no privacy cost). Releases are additive, so a federated server may sum clients' releases.

The client-side step is ``transform`` (labels and scores before counting; the identity
except for ``score-noise``), counting on ``count_thresholds`` (the metric's grid except for
``score-noise``), then ``release``. Every mechanism is vectorised over a leading "repeat"
axis: ``release(..., repeats=R)`` draws ``R`` independent releases of the same counts.

What a mechanism can take is stated once, on its class: its [`Capabilities`][], the
estimators it accepts, its grid rule and its option types (class attributes); callers (the
Keras metric, the command line, the simulation, TFF, the audit) find the class by name in the
registry ([`dpauc_tf.mechanisms.registry`][]), which refuses what a mechanism cannot do.

Examples:
    >>> from dpauc_tf.mechanisms import get_mechanism
    >>> m = get_mechanism("histogram", epsilon=1.0, num_thresholds=3)
    >>> m.capabilities.integer_counts, m.capabilities.releases
    (False, 'curve')
    >>> release = m.release(tf.constant([0., 5., 3., 0.]), tf.constant([0., 4., 1., 0.]), seed=0)
    >>> sorted(release)
    ['neg', 'pos']
"""

from __future__ import annotations

import abc
import dataclasses
import math
from collections.abc import Mapping
from typing import Any, ClassVar

import dp_accounting
import numpy as np
import tensorflow as tf

from dpauc_tf.core.curve import Confusion, auc_from_confusion
from dpauc_tf.core.postprocessing import (
    least_squares_confusion,
    mann_whitney_auc,
    within_bucket_correction,
)
from dpauc_tf.core.sampling_variance import delong_variance
from dpauc_tf.core.thresholds import Thresholds
from dpauc_tf.mechanisms.capabilities import Capabilities
from dpauc_tf.mechanisms.estimators import AUCEstimator
from dpauc_tf.mechanisms.laws import GridRule, IntervalLaw
from dpauc_tf.mechanisms.option_types import OptionType
from dpauc_tf.noise.seeds import make_seed
from dpauc_tf.privacy.accounting import EpsilonSpent, composed_epsilon
from dpauc_tf.privacy.statement import LABEL_DP, PrivacyStatement, check_delta, check_epsilon

Release = dict[str, tf.Tensor]


class CountMechanism(abc.ABC):
    """A mechanism on bucket counts ``pos, neg`` of shape ``[..., T + 1]``.

    Subclasses set ``name`` and implement `_noisy_release`, [`to_confusion`][],
    [`dp_event`][], [`statement`][] and [`noise_stddev`][]. What a family can take is a
    class attribute: ``capabilities`` ([`Capabilities`][]), ``accepted_estimators``,
    ``grid_rule`` ([`GridRule`][dpauc_tf.mechanisms.laws.GridRule]) and ``option_types``
    (the declared types of options not in
    ``OPTION_TYPES`` of [`dpauc_tf.mechanisms.option_types`][]); the registry holds only
    the name and a one-line summary ([`dpauc_tf.mechanisms.registry`][]). An option that
    changes a capability (for example exact integer noise) sets ``self.capabilities`` on the
    instance. Construction validates ``epsilon``, ``delta`` and ``estimator``.

    **Estimators** (``estimator=``): ``"mann-whitney"`` (default) is
    [`dpauc_tf.core.postprocessing.mann_whitney_auc`][] of [`released_confusion`][]:
    consistent (it converges to TensorFlow's AUC as epsilon grows, on any data), NaN where
    the estimated number of positives or negatives is not positive (the AUC is undefined).
    ``"mann-whitney-smooth"`` (opt-in) adds
    `dpauc_tf.core.postprocessing.within_bucket_correction`: the pairs inside a bucket
    count ``1/2 + `` the slope of the log density ratio ``/ 12`` instead of 1/2, which
    removes most of the grid's bias on **continuous, smoothly distributed** scores (so
    coarser grids, with less noise, can be used); on tied scores (point masses) it moves
    the estimate away from the exact AUC (``docs/epsilon_split.md``). Post-processing:
    the guarantee is unchanged.
    ``"reference"`` is the DPAUC reference code's rule (clip the released counts at 0, sort
    the ROC points by FPR, trapezoid), kept only to reproduce the paper's tables: it is not
    consistent where buckets hold one class.
    """

    name: ClassVar[str]
    # What the family can take (an option that changes it sets ``self.capabilities``).
    capabilities: ClassVar[Capabilities] = Capabilities()
    # The AUC estimators its releases support (others are refused at construction).
    accepted_estimators: ClassVar[frozenset[AUCEstimator]] = frozenset(AUCEstimator)
    # How ``num_thresholds="auto"`` sizes its grid (auto_grid).
    grid_rule: ClassVar[GridRule] = GridRule.NOISE_PER_BUCKET
    # The declared types of its constructor options that OPTION_TYPES does not declare.
    option_types: ClassVar[Mapping[str, OptionType]] = {}
    # Which law the interval of a release follows (see "the noise law" below); NONE: no
    # interval. A family with independent noise on released entries sets DELTA_METHOD and
    # defines noise_variances.
    interval_law: ClassVar[IntervalLaw] = IntervalLaw.NONE
    neighbouring: ClassVar[str] = LABEL_DP
    requires_delta: ClassVar[bool] = False
    # False only for the mechanism that adds no noise (``none``): it refuses an epsilon.
    adds_noise: ClassVar[bool] = True
    # What the released ROC curve is, when it is not the curve of the true labels.
    roc_note: ClassVar[str] = ""
    # Why some estimators are not accepted (the refusal's reason), when some are not.
    estimator_note: ClassVar[str] = "does not support that estimator"
    # Why a release's AUC estimate can be undefined (NaN), as the CLI and reports say it.
    undefined_note: ClassVar[str] = "noise left no positive or negative"

    def __init__(
        self,
        epsilon: float,
        num_thresholds: int,
        delta: float | None = None,
        estimator: str = "mann-whitney",
    ):
        self.auc_estimator = AUCEstimator.from_str(estimator)
        if self.auc_estimator not in self.accepted_estimators:
            accepted = [e.value for e in AUCEstimator if e in self.accepted_estimators]
            raise ValueError(
                f"{self.name} {self.estimator_note}: estimator must be "
                f"{' or '.join(map(repr, accepted))}, got {self.auc_estimator.value!r}"
            )
        self.estimator = self.auc_estimator.value
        epsilon = check_epsilon(epsilon)
        if epsilon is None and self.adds_noise:
            raise ValueError(f"{self.name} needs an epsilon; use the 'none' mechanism for no noise")
        if epsilon is not None and not self.adds_noise:
            raise ValueError(
                f"the {self.name!r} mechanism adds no noise; leave epsilon unset (None)"
            )
        _check_num_thresholds(num_thresholds)
        self.epsilon = epsilon
        self.delta = check_delta(delta, required=self.requires_delta)
        self.num_thresholds = int(num_thresholds)

    @property
    def num_buckets(self) -> int:
        return self.num_thresholds + 1

    # -- the client-side step -------------------------------------------------------------
    def count_thresholds(self, thresholds: Thresholds) -> Thresholds:
        """The grid the client counts on (the caller's, except for score-noise)."""
        return thresholds

    def transform(self, labels: tf.Tensor, scores: tf.Tensor, seed: tf.Tensor):
        """Labels and scores as the client counts them (identity unless transforms_data)."""
        del seed
        return labels, scores

    def release(
        self,
        pos: tf.Tensor,
        neg: tf.Tensor,
        seed: int | tf.Tensor | None = None,
        repeats: int | None = None,
    ) -> Release:
        """Noisy release of the counts; with ``repeats=R`` every tensor gets a leading ``R`` axis.

        A mechanism with integer noise (``capabilities.integer_counts``), or that takes
        weights of 1 only (``capabilities.unit_weights``), refuses counts that
        are not integers, in every mode, before any noise is drawn (integer noise would not
        hide a fraction: ``2.5 + k`` reveals the ``.5``): eagerly ``ValueError``; inside
        ``tf.function`` (and TFF) ``tf.errors.InvalidArgumentError`` with the same message;
        under XLA, which drops assertions, the counts become NaN, so nothing of them is
        released (the built-in integer mechanisms do not compile under XLA at all: their
        samplers have no XLA kernel).
        """
        pos, neg = float_counts(pos, neg)
        if self._takes_integer_counts():
            pos, neg = self._require_integer_counts(pos, neg)
        counts = with_repeats({"pos": pos, "neg": neg}, repeats)
        return self._noisy_release(counts["pos"], counts["neg"], make_seed(seed))

    def _takes_integer_counts(self) -> bool:
        """Integer noise, or weights of 1 only (whose counts are whole numbers: a fraction
        means a weight other than 1, which could move the released totals with the label)."""
        return bool(self.capabilities.integer_counts or self.capabilities.unit_weights)

    def _integer_counts_message(self) -> str:
        if self.capabilities.unit_weights:
            return (
                f"{self.name} needs integer counts (sample weights of 1 only): it releases "
                "totals as label-free, which a weight that depends on the label (Keras "
                "class_weight) would break; use mechanism='histogram' for weights"
            )
        return (
            f"{self.name} needs integer counts (unit sample weights): its integer noise "
            "would not hide a fraction"
        )

    def _require_integer_counts(self, pos: tf.Tensor, neg: tf.Tensor):
        """``pos, neg`` if every count is a finite integer; refused otherwise (see release)."""
        message = self._integer_counts_message()
        if tf.executing_eagerly():
            for counts in (pos, neg):
                values = counts.numpy()
                if np.any(np.isnan(values)):
                    raise ValueError(
                        f"{self.name}: the counts are NaN, so nothing is released: a batch "
                        "broke an input rule under XLA (jit_compile), which drops the "
                        f"assertions that name it ({message}); run without XLA to see which"
                    )
                if not (np.all(np.isfinite(values)) and np.all(values == np.round(values))):
                    raise ValueError(message)
            return pos, neg

        def integer(counts):
            return tf.reduce_all(tf.math.is_finite(counts) & tf.equal(counts, tf.round(counts)))

        ok = integer(pos) & integer(neg)
        check = tf.debugging.Assert(ok, [message])
        with tf.control_dependencies([check]):
            nan = tf.constant(float("nan"), pos.dtype)
            return tf.where(ok, pos, nan), tf.where(ok, neg, nan)

    @abc.abstractmethod
    def _noisy_release(self, pos: tf.Tensor, neg: tf.Tensor, seed: tf.Tensor) -> Release:
        """Adds noise to counts whose leading axes are already the output's."""

    # -- the server-side step (post-processing) -------------------------------------------
    def aggregate(self) -> CountMechanism:
        """The mechanism whose release of *summed* counts is distributed as the server's sum
        of all clients' releases: itself, except for secure mechanisms (one full share)."""
        return self

    @abc.abstractmethod
    def to_confusion(self, release: Release) -> Confusion:
        """Cumulative counts at every threshold from a (summed) release, for the ROC curve
        (monotone where the mechanism is noisy); no noise added."""

    def released_confusion(self, release: Release) -> Confusion:
        """The cumulative counts as released (no projection): what the AUC is estimated
        from. Defaults to [`to_confusion`][]."""
        return self.to_confusion(release)

    def estimate_auc(self, release: Release) -> tf.Tensor:
        """The AUC estimate ``[...]`` of a (summed) release (see the class docstring's
        estimators); post-processing, no noise is added."""
        confusion = self.released_confusion(release)
        if self.auc_estimator is AUCEstimator.REFERENCE:
            return auc_from_confusion(confusion)
        return mann_whitney_auc(confusion, within_bucket=self.within_bucket)

    @property
    def within_bucket(self) -> str:
        """How the estimate counts the pairs inside a bucket (``"half"`` or ``"linear"``;
        ``"half"`` for the reference rule's callers that need a Mann-Whitney rule)."""
        return self.auc_estimator.within_bucket or "half"

    # -- the guarantee --------------------------------------------------------------------
    @abc.abstractmethod
    def dp_event(self) -> dp_accounting.DpEvent:
        """One release as a dp-accounting event (with the tight sensitivity)."""

    @abc.abstractmethod
    def statement(self) -> PrivacyStatement:
        """Neighbouring relation, sensitivity, noise and the (epsilon, delta) of one release."""

    @property
    @abc.abstractmethod
    def noise_stddev(self) -> float:
        """Standard deviation of the noise on one released count."""

    # -- the noise law (read by intervals, the simulation and auto_grid) ---------------------
    # A family states here, and only here, how its noise reaches a release: the generic code
    # ([`dpauc_tf.mechanisms.intervals`][], [`dpauc_tf.simulation`][]) calls these methods
    # and never asks which family a mechanism is. A new family overrides what differs.

    def noise_variances(self, release: Mapping[str, Any]) -> dict[str, np.ndarray]:
        """The variance of the noise on every released entry of one full release, keyed
        like the release and broadcastable to its entries (``{"pos": var, "neg": var}`` for
        independent noise of one variance per class). Only the entries named here are
        noisy; the others are exact (e.g. label-free totals). Needed by the
        ``DELTA_METHOD`` and ``FLIPS`` interval laws.

        Raises:
          ValueError: the family states no noise law (``interval_law`` is ``NONE``).
        """
        del release
        raise ValueError(
            f"mechanism {self.name!r} states no noise law for intervals (set interval_law "
            "and define noise_variances(release) on it)"
        )

    def with_noisy_entries(
        self, release: Mapping[str, tf.Tensor], noisy: Mapping[str, tf.Tensor]
    ) -> dict[str, tf.Tensor]:
        """``release`` with the entries that [`noise_variances`][] names replaced by
        ``noisy`` (the delta method differentiates the estimate through them); a family
        whose exact entries depend on the noisy ones (``rr``: negatives = released totals
        minus positives) overrides this."""
        return dict(release, **noisy)

    def unclipped_estimate(self, release: Mapping[str, tf.Tensor]) -> tf.Tensor:
        """The mechanism's AUC estimate ``[...]`` before its final clip to [0, 1] and without
        its NaN (differentiable in the noisy entries: the delta method's function).
        Default: the Mann-Whitney area of [`released_confusion`][]."""
        return area_over_pairs(self.released_confusion(release), self.within_bucket)

    def projected_counts(self, release: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        """Non-negative bucket counts ``pos, neg [..., T + 1]`` estimated from a release (the
        monotone projection of its counts): what the sampling variance (DeLong) is
        estimated from. Default: the bucket differences of [`to_confusion`][]."""
        tensors = {key: tf.constant(np.asarray(v, np.float64)) for key, v in release.items()}
        return histogram_of(self.to_confusion(tensors))

    def sampling_variance(
        self, release: Mapping[str, Any], auc: np.ndarray, num_examples: float | None
    ) -> np.ndarray:
        """The estimated sampling variance of the test set's AUC ``[...]`` (the population
        target's share): DeLong's of [`projected_counts`][] by default; a family that
        releases no counts estimates it from what it releases."""
        del auc, num_examples
        return delong_variance(*self.projected_counts(release))

    def client_noise_copies(self, num_clients: int | None, num_reporting: int | None) -> float:
        """How many of the mechanism's stated noise draws a (summed) release carries: 1 for
        one data holder; the number of reports summed for a local mechanism (each client
        adds its own noise); ``num_reporting / num_clients`` for a secure one (its
        statement is of all ``num_clients`` shares, of which only the reporting ones
        arrived)."""
        if num_clients is None:
            return 1.0
        reporting = num_clients if num_reporting is None else int(num_reporting)
        if self.capabilities.secure:
            return reporting / self.noise_shares(num_clients)
        return float(max(reporting, 1))

    def sums_client_noise(self) -> bool:
        """Whether [`summed_client_release`][] can draw the server's sum of ``K`` clients'
        releases at once (a closed form for the sum of their noise). Default: no."""
        return False

    def summed_client_release(
        self, pos: tf.Tensor, neg: tf.Tensor, num_clients: int, seed: tf.Tensor, repeats: int
    ) -> Release:
        """The server's sum of ``num_clients`` clients' releases of the counts ``pos, neg
        [K, T + 1]``, drawn at once: ``[repeats, 1, ...]`` tensors with the distribution of
        the sum of ``K`` per-client releases (the counts' sum is exact, the noise is one
        draw of the sum of ``K`` clients' noise). Only where [`sums_client_noise`][]."""
        raise NotImplementedError(f"{self.name} draws its clients' noise client by client")

    # Whether a release over clients needs only the clients' summed counts (rank sums: the
    # ranks come from round one's global totals), drawn by `release_over_clients`.
    releases_from_summed_counts: ClassVar[bool] = False

    def release_over_clients(
        self, pos: tf.Tensor, neg: tf.Tensor, num_clients: int, seed: tf.Tensor, repeats: int
    ) -> Release:
        """The server's release from ``num_clients`` clients whose counts sum to ``pos, neg
        [B]`` (``[repeats, ...]`` tensors), where `releases_from_summed_counts`."""
        raise NotImplementedError(f"{self.name} releases client by client")

    def noise_shares(self, num_clients: int) -> int:
        """The noise draws a release over ``num_clients`` clients was sized for (one per
        client; a secure mechanism: the shares it was built for)."""
        return (
            int(getattr(self, "num_clients", num_clients))
            if self.capabilities.secure
            else num_clients
        )

    def examples_in_release_units(self, num_examples: float | None) -> float | None:
        """The number of examples in the units of the released counts (itself; a
        weight-bounded mechanism releases counts divided by its bound)."""
        return num_examples

    def privacy_spent(self, releases: int = 1, delta: float | None = None) -> EpsilonSpent:
        """Epsilon of ``releases`` releases (see [`dpauc_tf.privacy.accounting.composed_epsilon`][])."""
        return composed_epsilon(self.dp_event(), releases, self.delta if delta is None else delta)

    def achieved_epsilon(self, num_reporting: int) -> float:
        """Epsilon of one release when ``num_reporting`` clients reported: the statement's
        (each local report is private on its own); secure mechanisms override it."""
        del num_reporting
        return float(self.statement().epsilon)

    def colluding_epsilon(
        self,
        num_colluding: int,
        num_reporting: int | None = None,
        *,
        threshold: int | None = None,
    ) -> float:
        """Epsilon left against ``num_colluding`` reporting clients who pool their own shares.

        Colluders (possibly with the server) know their own noise shares and can subtract
        them from a secure sum: only the ``num_reporting - num_colluding`` other shares
        protect the labels, exactly as if those clients had dropped out, so this is
        [`achieved_epsilon`][] of that many shares (``inf`` when no honest share is left).
        For local mechanisms every report is private on its own: collusion changes nothing.

        **Valid only below the secure aggregation's reconstruction threshold.** The figure
        assumes that the colluders cannot unmask anyone: fewer than the threshold ``t`` of
        SecAgg+ (Bell et al. 2020; Flower's ``reconstruction_threshold``) and the honest
        survivors summed in one group. At ``c >= t`` colluders in a client's neighbourhood
        can rebuild its secrets and read its report alone, which carries only its own
        share: pass ``threshold`` and such a ``c`` gets that figure, [`achieved_epsilon`][]
        of one share (``inf`` if no honest client is left). Without ``threshold`` the caller
        asserts ``c < t``.

        Args:
          num_colluding: colluding clients among those that report (>= 0).
          num_reporting: clients whose reports were summed (default: ``num_clients``).
          threshold: the reconstruction threshold ``t`` of the secure aggregation (>= 1),
            if known.
        """
        if num_reporting is None:
            num_reporting = int(getattr(self, "num_clients", 1))
        num_reporting = int(num_reporting)
        if num_colluding < 0 or num_reporting < 0:
            raise ValueError(
                f"num_colluding and num_reporting must be >= 0, got {num_colluding}, {num_reporting}"
            )
        if threshold is not None and (
            isinstance(threshold, bool) or int(threshold) != threshold or threshold < 1
        ):
            raise ValueError(f"threshold must be an integer >= 1, got {threshold!r}")
        honest = max(num_reporting - int(num_colluding), 0)
        if threshold is not None and num_colluding >= threshold and honest > 0:
            # an honest client's report can be unmasked: its own share alone protects it
            return max(self.achieved_epsilon(1), self.achieved_epsilon(honest))
        return self.achieved_epsilon(honest)

    def options(self) -> dict:
        """Constructor options beyond ``epsilon``, ``num_thresholds`` and ``delta``."""
        if self.auc_estimator is AUCEstimator.MANN_WHITNEY:
            return {}
        return {"estimator": self.estimator}

    def __repr__(self) -> str:
        extra = "".join(f", {key}={value!r}" for key, value in self.options().items())
        return (
            f"{type(self).__name__}(epsilon={self.epsilon!r}, "
            f"num_thresholds={self.num_thresholds!r}, delta={self.delta or None!r}{extra})"
        )


def float_counts(pos, neg) -> tuple[tf.Tensor, tf.Tensor]:
    """``pos, neg`` as tensors of one floating dtype (float64 unless they are floating)."""
    pos = tf.convert_to_tensor(pos)
    if not pos.dtype.is_floating:
        pos = tf.cast(pos, tf.float64)
    return pos, tf.cast(tf.convert_to_tensor(neg), pos.dtype)


def with_repeats(tensors: dict[str, tf.Tensor], repeats: int | None) -> dict[str, tf.Tensor]:
    """``tensors`` with a leading ``repeats`` axis (broadcast; as they are for ``None``).

    Examples:
        >>> with_repeats({"a": tf.constant([1.0, 2.0])}, 3)["a"].shape.as_list()
        [3, 2]
    """
    if repeats is None:
        return tensors
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    return {
        key: tf.broadcast_to(value, tf.concat([[repeats], tf.shape(value)], 0))
        for key, value in tensors.items()
    }


def area_over_pairs(confusion: Confusion, within_bucket: str) -> tf.Tensor:
    """[`mann_whitney_auc`][dpauc_tf.core.postprocessing.mann_whitney_auc] without its clip
    and NaN (so that its gradient exists where the clip binds)."""
    tp, fp, tn, fn = least_squares_confusion(
        Confusion(*(tf.cast(c, tf.float64) for c in confusion))
    )
    num_pos = tp[..., :1] + fn[..., :1]
    num_neg = fp[..., :1] + tn[..., :1]
    zero = tf.zeros_like(num_pos)
    tp = tf.concat([num_pos, tp, zero], axis=-1)
    fp = tf.concat([num_neg, fp, zero], axis=-1)
    area = tf.reduce_sum((fp[..., :-1] - fp[..., 1:]) * (tp[..., :-1] + tp[..., 1:]) / 2, axis=-1)
    if within_bucket == "linear":
        area += within_bucket_correction(tp[..., :-1] - tp[..., 1:], fp[..., :-1] - fp[..., 1:])
    product = num_pos[..., 0] * num_neg[..., 0]
    return area / tf.where(product > 0, product, tf.ones_like(product))


def histogram_of(confusion: Confusion) -> tuple[np.ndarray, np.ndarray]:
    """Non-negative bucket counts ``pos, neg [..., T + 1]`` of cumulative counts (the
    differences of consecutive thresholds, negative ones set to 0)."""
    tp, fp, tn, fn = (np.asarray(c, np.float64) for c in confusion)
    out = []
    for above, below in ((tp, fn), (fp, tn)):
        total = above[..., :1] + below[..., :1]
        padded = np.concatenate([total, above, np.zeros_like(total)], -1)
        out.append(np.maximum(padded[..., :-1] - padded[..., 1:], 0.0))
    return out[0], out[1]


def summed_laplace_counts(
    counts: tf.Tensor, scale: float, num_clients: int, seed, repeats: int
) -> tf.Tensor:
    """``counts [1, ...]`` plus one draw of the sum of ``num_clients`` clients' Laplace(scale)
    noise per value, for ``repeats`` releases: ``[repeats, 1, ...]``."""
    shape = tf.concat([[repeats], tf.shape(counts)], 0)
    return counts[None] + sum_of_laplace(shape, scale, num_clients, seed, counts.dtype)


def sum_of_laplace(shape, scale: float, num_clients: int, seed, dtype) -> tf.Tensor:
    """One draw of the sum of ``num_clients`` independent Laplace(scale) variables.

    ``Laplace(b) = b (E1 - E2)`` with standard exponentials, and a sum of ``K`` of them is
    ``Gamma(K, 1)``: the sum is ``b (G1 - G2)``, ``G ~ Gamma(K, 1)``, exactly in
    distribution (``tests/simulation/test_summed_client_noise.py`` checks it against the
    sum of per-client draws).

    Examples:
        >>> from dpauc_tf.noise.seeds import make_seed
        >>> sum_of_laplace([3], 2.0, 10, make_seed(0), tf.float64).shape.as_list()
        [3]
    """
    gammas = tf.random.stateless_gamma(
        tf.concat([[2], shape], 0),
        seed=seed,
        alpha=tf.constant(float(num_clients), tf.float64),
        dtype=tf.float64,
    )
    return tf.cast(scale * (gammas[0] - gammas[1]), dtype)


def _check_num_thresholds(num_thresholds: int) -> None:
    if isinstance(num_thresholds, bool) or not isinstance(num_thresholds, int):
        try:
            import numpy as np

            if isinstance(num_thresholds, np.integer):
                return _check_num_thresholds(int(num_thresholds))
        except ImportError:  # pragma: no cover
            pass
        raise TypeError(f"num_thresholds must be an int, got {num_thresholds!r}")
    if num_thresholds < 2:
        raise ValueError(f"need at least 2 thresholds, got {num_thresholds}")
    return None


def achieved_statement(mechanism: CountMechanism, num_reporting: int) -> PrivacyStatement:
    """The mechanism's statement with the epsilon achieved when ``num_reporting`` reported
    (every federated backend states its result with this).

    Local mechanisms: their statement (each report is private on its own). Secure
    mechanisms whose shares were sized for more reports than arrived: epsilon is
    `achieved_epsilon` and the noise text says how many shares arrived.
    """
    statement = mechanism.statement()
    achieved = float(mechanism.achieved_epsilon(num_reporting))
    local = not mechanism.capabilities.secure and mechanism.releases_from_summed_counts
    if local and num_reporting > 1:  # rank-sum over clients without secure aggregation
        statement = dataclasses.replace(
            statement,
            noise=f"{statement.noise}; over {num_reporting} clients without secure aggregation "
            "every client adds this noise to its own S_k and P_k (ranked by the global bucket "
            "totals), and the server sees every client's bucket totals (round one, in the clear: its "
            "score histogram, label-free) and noisy reports",
        )
    if achieved == statement.epsilon:
        return statement
    shares = getattr(mechanism, "num_clients", None)
    return dataclasses.replace(
        statement,
        epsilon=achieved,
        noise=f"{statement.noise}; only {num_reporting} of {shares} shares reported, so the "
        f"total noise is smaller and epsilon is the achieved {achieved:g}, not the target "
        f"{statement.epsilon:g}",
    )


def finite_or_none(value: float | None) -> float | None:
    """JSON has no infinity: a non-private epsilon becomes ``None``."""
    return value if value is not None and math.isfinite(value) else None
