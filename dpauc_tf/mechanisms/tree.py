"""``tree-histogram`` and ``secure-tree-histogram``: noise on every node of a tree of counts.

The ``T + 1`` score buckets are the leaves of a complete ``b``-ary tree
([`dpauc_tf.core.tree.TreeLayout`][]); every node counts the positives (and, separately,
the negatives) of the leaves below it. Each level ``l = 0 (root) .. h (leaves)`` gets a share
``eps_l`` of the budget (``sum eps_l = epsilon``) and noise of scale ``2 / eps_l`` on each of
its nodes' two counts. The server then

1. computes the least-squares leaves (`dpauc_tf.core.tree.least_squares_leaves`);
2. estimates the AUC directly from those leaves ([`TreeHistogram.estimate_auc`][]: the
   Mann-Whitney statistic, no projection; only the final value is clipped to [0, 1]), which
   is unbiased to first order at any noise level;
3. for the curve (plots, ROC points: ``to_confusion``) makes the cumulative counts monotone
   and the totals consistent ([`dpauc_tf.core.postprocessing.monotone_confusion`][]).

**Why a tree.** With ``B`` fine buckets a flat histogram's AUC error grows like ``sqrt(B)``;
the AUC is a smooth linear functional of the counts, and a tree with geometrically
decreasing budgets puts most of the budget where that functional's weight is (the coarse
levels), so fine buckets (1,024) cost almost nothing. Defaults (``branching=4``,
``budget="auc"``: level shares ``0.8 ** l``) and the measurements behind them:
``docs/tree_histograms.md``. Choose ``num_thresholds = b^h - 1`` (e.g. 1,023) so that no
leaf is padding.

**Public scores.** With ``public_scores=True`` only the positive tree is noisy and the bucket
totals are released exactly (as ``histogram-public-scores``): the same label-DP guarantee
with sensitivity 1 per level, but the score histogram is published.

**Class split.** ``positive_share`` (or a public prior ``positive_rate``;
`dpauc_tf.mechanisms.class_split`) gives the positive tree the share ``s`` of every
level's budget and the negative tree ``1 - s``: scales ``1 / (s eps_l)`` and ``1 / ((1 - s)
eps_l)`` (Skellam: Renyi precisions in the ratio ``s : 1 - s``). A flip moves one unit in
one node of each class per level, so epsilon is unchanged; the default ``s = 0.5`` is the
equal split.

**Noise families.** The secure tree takes ``family="skellam"`` (with ``delta``): Skellam
shares whose sum is ``Skellam(mu_l, mu_l)`` per node, calibrated by the levels' Renyi bounds
added up ([`dpauc_tf.privacy.skellam`][]); it composes far better over many evaluations
([`dpauc_tf.analysis.noise_families.compare_noise_families`][]).

    >>> m = TreeHistogram(epsilon=1.0, num_thresholds=15, branching=4)
    >>> m.layout.level_sizes
    (1, 4, 16)
    >>> release = m.release(tf.ones(16) * 10, tf.ones(16) * 30, seed=0)
    >>> sorted(release), release["pos_tree"].shape.as_list()
    (['neg_tree', 'pos_tree'], [21])
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import ClassVar

import dp_accounting
import numpy as np
import tensorflow as tf

from dpauc_tf.core.curve import Confusion, confusion_from_histogram
from dpauc_tf.core.postprocessing import mann_whitney_auc, monotone_confusion
from dpauc_tf.core.tree import DEFAULT_BRANCHING, TreeLayout, least_squares_leaves, level_weights
from dpauc_tf.mechanisms.base import CountMechanism, Release, area_over_pairs, histogram_of
from dpauc_tf.mechanisms.capabilities import Capabilities
from dpauc_tf.mechanisms.class_split import EQUAL_SHARE, resolve_positive_share, split_options
from dpauc_tf.mechanisms.estimators import AUCEstimator
from dpauc_tf.mechanisms.laws import IntervalLaw
from dpauc_tf.noise import samplers
from dpauc_tf.noise.exact import discrete_laplace_variance
from dpauc_tf.noise.seeds import split_seed
from dpauc_tf.noise.shares import (
    check_shares,
    polya_difference,
    shortfall_unit_epsilon,
    skellam_share,
)
from dpauc_tf.privacy.events import (
    SkellamDpEvent,
    class_pair_event,
    discrete_laplace_event,
    laplace_event,
)
from dpauc_tf.privacy.skellam import (
    skellam_precision_shares,
    skellam_tree_epsilon,
    skellam_tree_mus,
)
from dpauc_tf.privacy.statement import PrivacyStatement

L1_PER_LEVEL = 2.0  # a label flip moves one unit from pos to neg in one node per level
L1_PER_LEVEL_PUBLIC_SCORES = 1.0  # only the positive tree is noisy


class TreeHistogram(CountMechanism):
    """Laplace noise on every node of a tree over the class histograms (central or local).

    Released: for each of positives and negatives, every node count of a complete
    ``branching``-ary tree over the ``T + 1`` buckets ([`TreeLayout`][]), ``"pos_tree"``
    and ``"neg_tree"`` of shape ``[..., num_nodes]``, root first. Releases are additive, so
    a server may sum many clients' releases (local mode: each client's report is
    ``epsilon``-DP on its own; the error grows like ``sqrt(K)``).

    * Neighbouring relation: label DP (one example's label differs; scores and weights in
      [0, 1] unchanged).
    * Sensitivity: a flip moves weight ``w <= 1`` from ``pos`` to ``neg`` at one leaf and at
      every ancestor: L1 = 2 per level, ``2 (h + 1)`` in all.
    * Noise: ``Laplace(2 / eps_l)`` on each node count of level ``l``; ``eps_l = epsilon *
      share_l`` (`level_weights`). Nodes that cover only padding are public zeros.
    * Epsilon: ``sum_l 2 / (2 / eps_l) = epsilon`` (pure DP).

    Args:
      epsilon: total budget of one release.
      num_thresholds: ``T``; the tree has ``T + 1`` real leaves.
      delta: must be unset (pure DP).
      branching: children per node (default 4).
      budget: ``"auc"`` (default), ``"uniform"`` or one weight per level (root first).
      public_scores: release the bucket totals exactly and noise only the positive tree
        (L1 = 1 per level, ``Laplace(1 / eps_l)``); see the module docstring.
      positive_share: the positive tree's share of every level's budget (default 0.5; not
        with public scores).
      positive_rate: a public prior of the fraction of positives; sets the share that
        minimises the AUC's variance (`dpauc_tf.mechanisms.class_split`).
      estimator: ``"mann-whitney"`` (default) or ``"mann-whitney-smooth"`` (the within-bucket
        correction for smooth continuous scores, [`estimate_auc`][]); post-processing.

    Examples:
        >>> m = TreeHistogram(epsilon=1.0, num_thresholds=15)
        >>> [round(s, 3) for s in m.level_scales]
        [4.88, 6.1, 7.625]
        >>> print(m.statement().sensitivity)
        L1 = 2 per level x 3 levels = 6 (one leaf and its ancestors, pos and neg)
    """

    name = "tree-histogram"
    capabilities: ClassVar[Capabilities] = Capabilities()
    accepted_estimators: ClassVar[frozenset[AUCEstimator]] = frozenset(
        {AUCEstimator.MANN_WHITNEY, AUCEstimator.MANN_WHITNEY_SMOOTH}
    )
    estimator_note: ClassVar[str] = "estimates the AUC from its least-squares leaves"
    interval_law: ClassVar[IntervalLaw] = IntervalLaw.DELTA_METHOD

    def __init__(
        self,
        epsilon: float,
        num_thresholds: int,
        delta: float | None = None,
        branching: int = DEFAULT_BRANCHING,
        budget: str | Sequence[float] = "auc",
        public_scores: bool = False,
        positive_share: float | None = None,
        positive_rate: float | None = None,
        estimator: str = "mann-whitney",
    ):
        super().__init__(
            epsilon=epsilon, num_thresholds=num_thresholds, delta=delta, estimator=estimator
        )
        if not isinstance(public_scores, (bool, np.bool_)):
            # bool("False") is True: a string here would publish the score histogram
            raise TypeError(
                f"public_scores must be True or False, got {public_scores!r} (get_mechanism "
                "and the command line parse 'false'/'no'/'0')"
            )
        self.public_scores = bool(public_scores)
        if self.public_scores and (positive_share, positive_rate) != (None, None):
            raise ValueError("public_scores noises the positive tree only: no class split")
        if self.public_scores:  # the exact bucket totals are label-free for unit weights only
            self.capabilities = dataclasses.replace(type(self).capabilities, unit_weights=True)
        self.positive_rate = positive_rate
        family = "skellam" if getattr(self, "family", "") == "skellam" else "laplace"
        self.positive_share = resolve_positive_share(positive_share, positive_rate, family)
        self.l1_per_level = L1_PER_LEVEL_PUBLIC_SCORES if public_scores else L1_PER_LEVEL
        self.layout = TreeLayout.for_buckets(self.num_buckets, branching)
        self.branching = self.layout.branching
        self.level_shares = level_weights(self.layout.depth, budget)  # checks it first
        self.budget = budget if isinstance(budget, str) else tuple(float(x) for x in budget)

    # -- noise parameters ----------------------------------------------------------------
    @property
    def level_epsilons(self) -> list[float]:
        """Budget of every level, root first (sums to ``epsilon``)."""
        return [float(x) for x in self.epsilon * self.level_shares]

    @property
    def level_scales(self) -> list[float]:
        """Laplace scale ``2 / eps_l`` (``1 / eps_l`` with public scores) per level, root first."""
        return [self.l1_per_level / e for e in self.level_epsilons]

    @property
    def class_level_scales(self) -> tuple[list[float], ...]:
        """Per noisy class (positive first), the noise scale of every level, root first:
        ``level_scales`` times ``0.5 / s`` and ``0.5 / (1 - s)`` (``s`` the positive share)."""
        if self.public_scores:
            return (self.level_scales,)
        share = self.positive_share
        factors = (EQUAL_SHARE / share, EQUAL_SHARE / (1.0 - share))
        return tuple([scale * f for scale in self.level_scales] for f in factors)

    @property
    def level_variances(self) -> list[float]:
        """Noise variance of one node count at every level (of one release, equal split)."""
        return [2.0 * s**2 for s in self.level_scales]

    @property
    def class_level_variances(self) -> tuple[list[float], ...]:
        """Per noisy class (positive first), the noise variance of a node at every level."""
        return tuple([2.0 * s**2 for s in scales] for scales in self.class_level_scales)

    @property
    def noise_stddev(self) -> float:
        """Standard deviation of the noise on one leaf count (the noisiest level and class)."""
        return math.sqrt(max(v[-1] for v in self.class_level_variances))

    def node_scales(self, noisy_class: int = 0) -> np.ndarray:
        """Noise scale of every node ``[num_nodes]`` of a class's tree (0 for padding)."""
        scales = np.asarray(self.class_level_scales[noisy_class])[self.layout.node_levels()]
        return scales * self.layout.real_nodes

    # -- release and post-processing ---------------------------------------------------
    def _node_noise(self, shape, seed, dtype, noisy_class: int = 0) -> tf.Tensor:
        scales = tf.constant(self.node_scales(noisy_class), dtype)
        return samplers.laplace(shape, scales, seed, dtype)

    def _noisy_release(self, pos, neg, seed):
        pos_nodes = self.layout.node_counts(pos)
        seeds = split_seed(seed, 2)
        shape = tf.shape(pos_nodes)
        if self.public_scores:
            return {
                "pos_tree": pos_nodes + self._node_noise(shape, seeds[0], pos_nodes.dtype),
                "total": pos + neg,
            }
        neg_nodes = self.layout.node_counts(neg)
        return {
            "pos_tree": pos_nodes + self._node_noise(shape, seeds[0], pos_nodes.dtype),
            "neg_tree": neg_nodes + self._node_noise(shape, seeds[1], neg_nodes.dtype, 1),
        }

    def leaves(self, release: Release) -> tuple[tf.Tensor, tf.Tensor]:
        """Least-squares bucket counts ``pos, neg [..., T + 1]`` from a (summed) release."""
        out = []
        # Discrete noise at a huge epsilon has variance 0 (the counts are exact): any tiny
        # positive variance then gives the same leaves.
        keys = ("pos_tree",) if self.public_scores else ("pos_tree", "neg_tree")
        for key, class_variances in zip(keys, self.class_level_variances, strict=True):
            variances = np.asarray(class_variances, np.float64)
            variances = np.maximum(variances, 1e-12 * max(float(variances.max()), 1.0))
            nodes = tf.convert_to_tensor(release[key])
            if nodes.shape[-1] != self.layout.num_nodes:
                raise ValueError(
                    f"{key} has {nodes.shape[-1]} nodes, the tree has {self.layout.num_nodes}"
                )
            leaves = least_squares_leaves(tf.cast(nodes, tf.float64), self.layout, variances)
            out.append(tf.cast(leaves, nodes.dtype))
        if self.public_scores:
            out.append(tf.cast(release["total"], out[0].dtype) - out[0])
        return out[0], out[1]

    # -- the noise law -------------------------------------------------------------------
    def noise_variances(self, release):
        """Independent noise on every real node, of its level's variance per class; the
        public totals are exact."""
        levels = self.layout.node_levels()
        real = np.asarray(self.layout.real_nodes, np.float64)
        per_class = [np.asarray(v, np.float64)[levels] * real for v in self.class_level_variances]
        if self.public_scores:
            return {"pos_tree": per_class[0], "total": np.zeros(())}
        return {"pos_tree": per_class[0], "neg_tree": per_class[1]}

    def unclipped_estimate(self, release):
        """The Mann-Whitney area of the least-squares leaves (before the clip)."""
        return area_over_pairs(confusion_from_histogram(*self.leaves(release)), self.within_bucket)

    def projected_counts(self, release):
        """The monotone projection of the least-squares leaves."""
        tensors = {key: tf.constant(np.asarray(v, np.float64)) for key, v in release.items()}
        return histogram_of(monotone_confusion(*self.leaves(tensors)))

    def to_confusion(self, release: Release) -> Confusion:
        """Least-squares leaves, then consistent totals and monotone cumulative counts."""
        if "pos" in release and "pos_tree" not in release:  # exact counts (no noise)
            pos, neg = release["pos"], release["neg"]
        else:
            pos, neg = self.leaves(release)
        dtype = pos.dtype
        confusion = monotone_confusion(tf.cast(pos, tf.float64), tf.cast(neg, tf.float64))
        return Confusion(*(tf.cast(c, dtype) for c in confusion))

    def estimate_auc(self, release: Release) -> tf.Tensor:
        """The AUC estimate ``[...]`` of a (summed) release: nearly unbiased at any noise level.

        The Mann-Whitney statistic of the least-squares leaves, **without** the monotone
        projection: ``sum_b neg[b] (TP_above[b] + pos[b] / 2) / (P N)`` with ``P = sum pos``,
        ``N = sum neg`` (the estimated roots), i.e.
        [`dpauc_tf.core.postprocessing.mann_whitney_auc`][] of the unprojected counts (NaN
        where ``P`` or ``N`` is not positive; ``estimator="mann-whitney-smooth"`` adds the
        within-bucket correction, also bilinear). The numerator is bilinear in the two classes'
        leaves: with both classes noisy their noises are independent, so it is unbiased; with
        public scores (``neg = total - pos``) its bias is ``-Var(P^) / 2`` exactly (``pos``'s noise ``e``
        enters as ``-e^T M e = -(sum e)^2 / 2``). The ratio adds terms of relative order
        ``Var(P^) / P^2``. Measured bias on the paper-sized score set: see the module
        docstring. [`to_confusion`][]'s monotone curve is for plotting; its trapezoid AUC
        has lower variance but is biased low at high noise.
        """
        if "pos" in release and "pos_tree" not in release:  # exact counts (no noise)
            pos, neg = release["pos"], release["neg"]
        else:
            pos, neg = self.leaves(release)
        # The shared estimator (an empty bucket padded at each end, the Mann-Whitney
        # statistic, clipped to [0, 1]; NaN where the estimated P or N is not positive).
        confusion = confusion_from_histogram(pos, neg)
        return mann_whitney_auc(confusion, within_bucket=self.within_bucket)

    # -- accounting ----------------------------------------------------------------------
    def dp_event(self) -> dp_accounting.DpEvent:
        """Per level, the level's unit changes composed (`laplace_event`; equal split)
        or the two classes' (`class_pair_event`); composed over the levels."""
        if self.positive_share != EQUAL_SHARE:
            return dp_accounting.ComposedDpEvent(
                [
                    class_pair_event(pos, neg, discrete=False)
                    for pos, neg in zip(*self.class_level_scales, strict=True)
                ]
            )
        return dp_accounting.ComposedDpEvent(
            [laplace_event(scale, int(self.l1_per_level)) for scale in self.level_scales]
        )

    def _split_text(self) -> str:
        if self.positive_share == EQUAL_SHARE:
            return ""
        scales = ", ".join(f"{s:.4g}" for s in self.class_level_scales[1])
        return (
            f"; positive share {self.positive_share:.4g} of every level: positive scales as "
            f"above, negative scales [{scales}]"
        )

    def _noise_text(self) -> str:
        scales = ", ".join(f"{s:.4g}" for s in self.class_level_scales[0])
        return (
            f"Laplace(scale {self.l1_per_level:g}/eps_l) on every node count of a {self.branching}-ary tree, "
            f"{self.layout.depth + 1} levels, scales (root first) [{scales}]" + self._split_text()
        )

    def statement(self) -> PrivacyStatement:
        levels = self.layout.depth + 1
        if self.public_scores:
            return PrivacyStatement(
                mechanism=self.name,
                neighbouring=self.neighbouring + "; the score histogram is released exactly",
                sensitivity=f"L1 = 1 per level x {levels} levels = {levels} "
                "(one leaf and its ancestors, positive tree only)",
                noise=self._noise_text() + "; positive tree only, bucket totals exact",
                epsilon=self.epsilon,
                delta=0.0,
                sensitivity_value=float(levels),
                noise_scale=self._largest_scale(),
            )
        return PrivacyStatement(
            mechanism=self.name,
            neighbouring=self.neighbouring,
            sensitivity=f"L1 = 2 per level x {levels} levels = {2 * levels} "
            "(one leaf and its ancestors, pos and neg)",
            noise=self._noise_text(),
            epsilon=self.epsilon,
            delta=0.0,
            sensitivity_value=float(2 * levels),
            noise_scale=self._largest_scale(),
        )

    def _largest_scale(self) -> float:
        """The largest Laplace scale of any node (levels and classes differ)."""
        return float(max(max(scales) for scales in self.class_level_scales))

    def options(self) -> dict:
        return {
            "branching": self.branching,
            "budget": self.budget,
            "public_scores": self.public_scores,
            **split_options(self.positive_share, self.positive_rate),
            **super().options(),  # the estimator, when not the default
        }


class SecureTreeHistogram(TreeHistogram):
    """Tree histograms with distributed integer noise, for secure aggregation.

    [`release`][] is **one client's** report: its integer node counts plus its share of
    the noise; the sum of ``num_clients`` shares is exactly one draw of the total noise per
    node. Two noise families:

    * ``"discrete-laplace"`` (default, pure DP): share ``X - Y`` with ``X, Y ~ Polya(1 /
      num_clients, exp(-1 / s_l))`` (`dpauc_tf.polya_difference`); the sum is
      discrete Laplace ``P(k) ~ exp(-|k| / s_l)``, ``s_l = 2 / eps_l`` (``1 / eps_l`` with
      public scores).
    * ``"skellam"`` (Gaussian family, needs ``delta``): share ``Poisson(mu_l / K) -
      Poisson(mu_l / K)``; the sum is ``Skellam(mu_l, mu_l)`` (variance ``2 mu_l``) per node.
      ``mu_l = m / p_l`` with Renyi shares ``p_l`` (`skellam_precision_shares`) and the
      smallest ``m`` for which the levels' Renyi bounds, added up, give ``(epsilon,
      delta)`` (`skellam_tree_mus`). Many evaluations compose by Renyi DP
      ([`privacy_spent`][dpauc_tf.mechanisms.base.CountMechanism.privacy_spent]), which is where this family wins
      ([`dpauc_tf.analysis.noise_families.compare_noise_families`][]).

    * Neighbouring relation: label DP, integer counts (unit weights).
    * Sensitivity: per level L1 = 2, L2^2 = 2 (one node of each class moves by 1); with
      public scores L1 = L2^2 = 1 (positive tree only).
    * Noise of the sum: as above, per node of level ``l``.
    * Epsilon: ``sum_l eps_l = epsilon`` (pure DP) or ``(epsilon, delta)`` (Skellam),
      against a server that sees only the secure sum of all ``num_clients`` reports.
      **Trust**: individual reports carry only ``1 / num_clients`` of the noise variance and
      must stay hidden (secure aggregation); if fewer clients report than the shares are
      sized for, the noise is smaller than stated: [`achieved_epsilon`][].

    Examples:
        >>> m = SecureTreeHistogram(epsilon=1.0, num_thresholds=15, num_clients=10)
        >>> r = m.release(tf.ones(16) * 3, tf.ones(16), seed=0)
        >>> bool(tf.reduce_all(r["pos_tree"] == tf.round(r["pos_tree"])))
        True
        >>> s = SecureTreeHistogram(1.0, 15, delta=1e-6, num_clients=10, family="skellam")
        >>> [round(mu) for mu in s.level_mus]
        [46, 65, 90]
    """

    name = "secure-tree-histogram"
    capabilities: ClassVar[Capabilities] = Capabilities(
        secure=True, integer_counts=True, xla=False, fed_eval=True
    )

    def __init__(
        self,
        epsilon: float,
        num_thresholds: int,
        delta: float | None = None,
        branching: int = DEFAULT_BRANCHING,
        budget: str | Sequence[float] = "auc",
        public_scores: bool = False,
        num_clients: int = 1,
        family: str = "discrete-laplace",
        positive_share: float | None = None,
        positive_rate: float | None = None,
        estimator: str = "mann-whitney",
    ):
        self.num_clients = check_shares(num_clients, family)
        self.family = family
        self.requires_delta = family == "skellam"
        super().__init__(
            epsilon,
            num_thresholds,
            delta,
            branching,
            budget,
            public_scores,
            positive_share,
            positive_rate,
            estimator,
        )
        if family == "skellam":
            precision = skellam_precision_shares(self.level_shares)
            if self.positive_share == EQUAL_SHARE:
                self.level_mus = skellam_tree_mus(
                    self.epsilon, self.delta, precision, self.l1_per_level
                )
                self.class_level_mus = (self.level_mus,) * (1 if public_scores else 2)
            else:  # one Renyi calibration over both classes' levels, unit change in each
                share = self.positive_share
                shares = np.concatenate([share * precision, (1.0 - share) * precision])
                mus = skellam_tree_mus(self.epsilon, self.delta, shares, 1.0)
                levels = len(precision)
                self.class_level_mus = (mus[:levels], mus[levels:])
                self.level_mus = mus[:levels]

    @property
    def level_variances(self) -> list[float]:
        if self.family == "skellam":
            return [2.0 * mu for mu in self.level_mus]
        return [discrete_laplace_variance(s) for s in self.level_scales]

    @property
    def class_level_variances(self) -> tuple[list[float], ...]:
        if self.family == "skellam":
            return tuple([2.0 * mu for mu in mus] for mus in self.class_level_mus)
        return tuple(
            [discrete_laplace_variance(s) for s in scales] for scales in self.class_level_scales
        )

    def aggregate(self) -> SecureTreeHistogram:
        """The same mechanism with one share: its release of summed counts is distributed
        exactly as the secure sum of ``num_clients`` clients' releases (for simulation)."""
        return SecureTreeHistogram(
            self.epsilon,
            self.num_thresholds,
            self.delta or None,
            self.branching,
            self.budget,
            self.public_scores,
            1,
            self.family,
            **split_options(self.positive_share, self.positive_rate),
            estimator=self.estimator,
        )

    def _node_noise(self, shape, seed, dtype, noisy_class: int = 0) -> tf.Tensor:
        offsets = self.layout.offsets
        seeds = split_seed(seed, self.layout.depth + 1)
        batch = shape[:-1]
        parts = []
        for level, size in enumerate(self.layout.level_sizes):
            level_shape = tf.concat([batch, [size]], 0)
            if self.family == "skellam":
                mu = self.class_level_mus[noisy_class][level] / self.num_clients
                parts.append(skellam_share(level_shape, mu, seeds[level], dtype))
            else:
                scale = self.class_level_scales[noisy_class][level]
                parts.append(
                    polya_difference(level_shape, scale, self.num_clients, seeds[level], dtype)
                )
        real = tf.constant(self.layout.real_nodes[: offsets[-1]], dtype)
        return tf.concat(parts, axis=-1) * real

    def _integer_counts_message(self) -> str:
        return (
            f"{self.name} needs integer counts (unit sample weights): secure aggregation sums "
            "integers"
        )

    # -- accounting ----------------------------------------------------------------------
    def dp_event(self) -> dp_accounting.DpEvent:
        """Per level, exact discrete Laplace (a flip moves one node count of each noisy class
        by one), composed over the levels; or one
        [`SkellamDpEvent`][] over the levels' ``mu_l`` (Renyi
        bounds added up, as in the calibration)."""
        if self.family == "skellam" and self.positive_share != EQUAL_SHARE:
            mus = [mu for mus in self.class_level_mus for mu in mus]
            return SkellamDpEvent(mus, 1.0, 1.0)
        if self.family == "skellam":
            return SkellamDpEvent(self.level_mus, self.l1_per_level, self.l1_per_level)
        if self.positive_share != EQUAL_SHARE:
            return dp_accounting.ComposedDpEvent(
                [
                    class_pair_event(pos, neg, discrete=True)
                    for pos, neg in zip(*self.class_level_scales, strict=True)
                ]
            )
        return dp_accounting.ComposedDpEvent(
            [discrete_laplace_event(scale, int(self.l1_per_level)) for scale in self.level_scales]
        )

    def achieved_epsilon(self, num_reporting: int) -> float:
        """Epsilon actually provided when ``num_reporting`` of the ``num_clients`` shares
        arrive: ``epsilon`` if all do (extra shares only add noise), larger otherwise,
        ``inf`` when nobody reports."""
        if num_reporting >= self.num_clients:
            return self.epsilon
        if num_reporting <= 0:
            return math.inf
        fraction = num_reporting / self.num_clients
        if self.family == "skellam" and self.positive_share != EQUAL_SHARE:
            mus = [mu * fraction for mus in self.class_level_mus for mu in mus]
            return skellam_tree_epsilon(mus, 1.0, self.delta)
        if self.family == "skellam":
            mus = [mu * fraction for mu in self.level_mus]
            return skellam_tree_epsilon(mus, self.l1_per_level, self.delta)
        # one unit change per level in each noisy class's tree
        return sum(
            shortfall_unit_epsilon(scale, fraction)
            for scales in self.class_level_scales
            for scale in scales
        )

    def _noise_text(self) -> str:
        if self.family == "skellam":
            mus = ", ".join(f"{mu:.4g}" for mu in self.level_mus)
            split = ""
            if self.positive_share != EQUAL_SHARE:
                negative = ", ".join(f"{mu:.4g}" for mu in self.class_level_mus[1])
                split = (
                    f"; positive share {self.positive_share:.4g} of the Renyi precision: "
                    f"positive mu_l as above, negative mu_l [{negative}]"
                )
            return (
                f"Skellam(mu_l, mu_l) in total on every node count of a {self.branching}-ary "
                f"tree, {self.layout.depth + 1} levels, mu_l (root first) [{mus}], split into "
                f"{self.num_clients} client shares Poisson(mu_l/K) - Poisson(mu_l/K)" + split
            )
        scales = ", ".join(f"{s:.4g}" for s in self.class_level_scales[0])
        return (
            f"discrete Laplace(scale {self.l1_per_level:g}/eps_l) in total on every node count of a "
            f"{self.branching}-ary tree, {self.layout.depth + 1} levels, scales (root first) "
            f"[{scales}], split into {self.num_clients} client shares (Polya differences)"
            + self._split_text()
        )

    def statement(self) -> PrivacyStatement:
        base = super().statement()
        replaced = dataclasses.replace(
            base,
            neighbouring=base.neighbouring
            + "; integer counts; trust: the server sees only the secure sum of all reports",
        )
        if self.family == "skellam":
            l1 = self.l1_per_level
            replaced = dataclasses.replace(
                replaced,
                sensitivity=replaced.sensitivity + f"; L2^2 = {l1:g} per level",
                delta=self.delta,
                noise_scale=None,  # Skellam: a variance per level, no Laplace scale
            )
        return replaced

    def options(self) -> dict:
        return {**super().options(), "num_clients": self.num_clients, "family": self.family}
