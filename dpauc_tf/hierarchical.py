"""Hierarchical (tree) histograms of positives and negatives, with least-squares consistency.

The ``T + 1`` score buckets are the leaves of a complete ``b``-ary tree of depth
``h = ceil(log_b(T + 1))`` (padded on the right with empty leaves when ``T + 1 < b^h``); every
node counts the positives (and, separately, the negatives) of the leaves below it. The root
holds ``P`` and ``N``. Each level ``l = 0 (root) .. h (leaves)`` gets a share ``eps_l`` of the
budget (``sum eps_l = epsilon``) and Laplace noise of scale ``2 / eps_l`` on each of its
nodes' two counts. The server then

1. computes the least-squares (best linear unbiased) estimate of the leaves from all noisy
   nodes (Hay et al. 2010; Honaker 2015): one upward and one downward pass over the levels,
   closed form for a complete tree with one noise variance per level
   (:func:`least_squares_leaves`), vectorised over any leading axes;
2. estimates the AUC directly from those leaves (:meth:`TreeHistogram.estimate_auc`: the
   Mann-Whitney statistic ``sum_b neg[b] (TP_above[b] + pos[b] / 2) / (P N)`` with ``P`` and
   ``N`` the estimated roots, no projection; only the final value is clipped to [0, 1]);
3. for the curve (plots, ROC points: ``to_confusion``) makes the cumulative counts monotone
   and the totals consistent (:func:`dpauc_tf.postprocessing.monotone_confusion`).

**Bias of the AUC estimate.** The numerator is bilinear in the two classes' leaves; with
both classes noisy their noises are independent and it is unbiased; with public scores it
is biased by ``-Var(P^) / 2`` (relative ``-Var(P^) / (2 P N)``, about ``-3e-7`` for 1,000
local clients on the set below). Dividing by the noisy ``P^ N^`` adds terms of relative
order ``Var(P^) / P^2``. So the estimate is unbiased to first order at any noise level.
The monotone curve's trapezoid AUC is not: at high noise the projection pools thresholds
and clips near the ends, which pulls it down. Measured on the paper-sized synthetic score
set (458,407 examples, AUC 0.7494, 1,023 quantile thresholds, epsilon = 1, 100 seeds,
IID; ``python benchmarks/bench_utility.py``), bias / std of ``estimate_auc`` (of the
monotone curve's AUC in brackets):

=====================================  ======================  =========================
mechanism                              K = 10                  K = 1,000
=====================================  ======================  =========================
secure tree (any K)                    +5.0e-6 / 8.3e-5        (-3.5e-5 / 1.08e-4)
secure tree, public scores (any K)     +7.4e-6 / 4.9e-5        (-9.2e-6 / 5.5e-5)
local tree                             +1.7e-5 / 2.5e-4        -3.5e-5 / 2.5e-3
                                       (-7.4e-5 / 3.0e-4)      (-1.2e-3 / 3.0e-3)
local tree, public scores              +5.6e-6 / 1.5e-4        -1.9e-5 / 1.5e-3
                                       (-4.4e-5 / 1.7e-4)      (-5.2e-4 / 1.7e-3)
=====================================  ======================  =========================

(The paper's mechanism at K = 1,000: bias -2.1e-2, std 1.5e-2.) The spread matches the
linearised variance :func:`mechanism_auc_variance` (checked in
``tests/utility/test_tree_estimators.py``).

**Why a tree.** With ``B`` fine buckets a flat histogram's AUC error grows like ``sqrt(B)``;
the AUC is a smooth linear functional of the counts, and a tree with geometrically
decreasing budgets puts most of the budget where that functional's weight is (the coarse
levels), so the error stays nearly constant as ``B`` grows and fine buckets (1,024) cost
almost nothing. That removes the discretisation bias without paying in noise.

**Defaults and how they were chosen.** ``branching=4`` and ``budget="auc"``: level ``l``
gets a share proportional to ``BUDGET_RATIO ** l`` (``BUDGET_RATIO = 0.8``, so the root gets
the largest share and the leaves about a third of it at depth 5). They minimise the exact
variance of the linearised least-squares AUC (:func:`auc_variance`) on the paper-sized
synthetic score set (458,407 examples, AUC 0.7494) with 1,024 buckets, epsilon = 1, central
noise, both classes noisy. AUC std for branching / ratio (quantile buckets):
b=2: 9.2e-5 at 0.8, 1.1e-4 at 1.0; b=4: 1.06e-4 at 0.55, **8.1e-5 at 0.8**, 9.1e-5 at 1.0,
1.2e-4 at 1.25; b=8: 9.4e-5 at 0.8, 8.9e-5 at 1.0; b=16: 8.5e-5 at 1.0; the flat histogram
with the same 1,024 buckets: 2.8e-4. On TensorFlow's even grid (1,024 buckets) b=4, 0.8 is
best as well (9.6e-5). The optimum is flat (ratios 0.8-1.0, branching 4-16 within 10 %).
Rerun with ``python benchmarks/bench_utility.py --design``. ``budget="uniform"`` (Hay et
al.'s equal split) and an explicit list of weights are accepted too. Choose
``num_thresholds = b^h - 1`` (e.g. 1,023 with ``b = 4``) so that no leaf is padding.

**Public scores.** With ``public_scores=True`` only the positive tree is noisy and the bucket
totals ``n[b] = pos[b] + neg[b]`` are released exactly (as ``histogram-public-scores``).
Under label DP the totals do not depend on any label, so this is the *same* epsilon-label-DP
guarantee, with sensitivity 1 per level instead of 2, and about 1.7 times smaller AUC error;
but it publishes the score histogram, which label DP does not protect. Use it when the
score distribution may be revealed (for instance with quantile thresholds, which reveal
it anyway: :mod:`dpauc_tf.adaptive_thresholds`).

**Noise families.** The secure tree takes ``family="skellam"`` (with ``delta``): Skellam
shares whose sum is ``Skellam(mu_l, mu_l)`` per node, calibrated by the levels' Renyi
bounds added up; for one evaluation at ``(1, 1e-6)`` its AUC error is about that of the
discrete Laplace tree, and it composes far better over many evaluations
(:func:`dpauc_tf.noise_families.compare_noise_families`).

Two mechanisms (registered for :func:`dpauc_tf.mechanisms.get_mechanism`):

=========================  ====================================================================
``tree-histogram``         every node of one data holder (or every client: *local* mode, each
                           client's report is private on its own) gets ``Laplace(2 / eps_l)``
``secure-tree-histogram``  integer shares (Polya differences) whose sum over ``num_clients``
                           clients is one discrete Laplace ``(2 / eps_l)`` draw per node; the
                           server sees only the secure sum
=========================  ====================================================================

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

from dpauc_tf import noise
from dpauc_tf.accounting import EpsilonSpent
from dpauc_tf.curve import Confusion, confusion_from_histogram
from dpauc_tf.distributed import (
    _RDP_ORDERS,
    check_shares,
    rdp_to_epsilon,
    shortfall_unit_epsilon,
    skellam_rdp,
    skellam_share,
)
from dpauc_tf.mechanisms import (
    CountMechanism,
    PrivacyStatement,
    Release,
    register_mechanism,
)
from dpauc_tf.postprocessing import auc_estimate, monotone_confusion

DEFAULT_BRANCHING = 4
BUDGET_RATIO = 0.8
L1_PER_LEVEL = 2.0  # a label flip moves one unit from pos to neg in one node per level
L1_PER_LEVEL_PUBLIC_SCORES = 1.0  # only the positive tree is noisy


@dataclasses.dataclass(frozen=True)
class TreeLayout:
    """Shape of a complete ``branching``-ary tree over ``num_buckets`` leaves.

    Nodes are stored level by level, root first (breadth-first order), ``level_sizes[l] =
    branching ** l`` nodes at level ``l``. Leaves beyond ``num_buckets`` are padding: always
    empty and public, so nodes whose leaves are all padding are released as exact zeros.

    >>> layout = TreeLayout.for_buckets(10, branching=2)
    >>> layout.depth, layout.num_nodes, int(layout.real_nodes.sum())
    (4, 31, 21)
    """

    num_buckets: int
    branching: int
    depth: int

    @classmethod
    def for_buckets(cls, num_buckets: int, branching: int = DEFAULT_BRANCHING) -> TreeLayout:
        if isinstance(branching, bool) or not isinstance(branching, (int, np.integer)):
            raise TypeError(f"branching must be an int, got {branching!r}")
        if branching < 2:
            raise ValueError(f"branching must be >= 2, got {branching}")
        if num_buckets < 2:
            raise ValueError(f"need at least 2 buckets, got {num_buckets}")
        depth = 0
        while branching**depth < num_buckets:
            depth += 1
        return cls(int(num_buckets), int(branching), depth)

    @property
    def num_leaves(self) -> int:
        return self.branching**self.depth

    @property
    def level_sizes(self) -> tuple[int, ...]:
        return tuple(self.branching**level for level in range(self.depth + 1))

    @property
    def num_nodes(self) -> int:
        return sum(self.level_sizes)

    @property
    def offsets(self) -> tuple[int, ...]:
        return tuple(int(x) for x in np.cumsum((0, *self.level_sizes)))

    @property
    def real_nodes(self) -> np.ndarray:
        """Bool ``[num_nodes]``: True for nodes with at least one real (non-padding) leaf."""
        parts = []
        for level, size in enumerate(self.level_sizes):
            width = self.branching ** (self.depth - level)  # leaves under one node
            parts.append(np.arange(size) * width < self.num_buckets)
        return np.concatenate(parts)

    def node_levels(self) -> np.ndarray:
        """Int ``[num_nodes]``: the level of every node."""
        return np.repeat(np.arange(self.depth + 1), self.level_sizes)

    def node_counts(self, leaves: tf.Tensor) -> tf.Tensor:
        """All node counts ``[..., num_nodes]`` from bucket counts ``[..., num_buckets]``."""
        leaves = tf.convert_to_tensor(leaves)
        pad = self.num_leaves - self.num_buckets
        level = leaves
        if pad:
            zeros = tf.zeros(tf.concat([tf.shape(leaves)[:-1], [pad]], 0), leaves.dtype)
            level = tf.concat([leaves, zeros], axis=-1)
        levels = [level]
        batch = tf.shape(leaves)[:-1]
        for size in reversed(self.level_sizes[:-1]):
            level = tf.reduce_sum(
                tf.reshape(level, tf.concat([batch, [size, self.branching]], 0)), axis=-1
            )
            levels.append(level)
        return tf.concat(levels[::-1], axis=-1)


def level_weights(depth: int, budget: str | Sequence[float] = "auc") -> np.ndarray:
    """Budget shares of levels ``0 (root) .. depth (leaves)``, positive and summing to 1.

    ``"auc"``: proportional to ``BUDGET_RATIO ** level`` (the default; see the module
    docstring); ``"uniform"``: equal shares; a sequence: ``depth + 1`` positive weights.

    >>> level_weights(2, "uniform").round(3).tolist()
    [0.333, 0.333, 0.333]
    """
    if isinstance(budget, str):
        if budget == "auc":
            weights = BUDGET_RATIO ** np.arange(depth + 1, dtype=np.float64)
        elif budget == "uniform":
            weights = np.ones(depth + 1)
        else:
            raise ValueError(f"unknown budget {budget!r}; use 'auc', 'uniform' or a list")
    else:
        weights = np.asarray(budget, dtype=np.float64).ravel()
        if weights.size != depth + 1:
            raise ValueError(
                f"budget needs one weight per level, {depth + 1} (root to leaves), "
                f"got {weights.size}"
            )
        if not np.all(np.isfinite(weights)) or np.any(weights <= 0):
            raise ValueError("budget weights must be finite and > 0")
    return weights / weights.sum()


@dataclasses.dataclass(frozen=True)
class _Smoother:
    """Constants of the two-pass least-squares estimator (data-independent)."""

    own_weight: tuple[np.ndarray, ...]  # per level [size]: weight of the node's own count
    child_share: tuple[np.ndarray, ...]  # per level [size]: share of the parent's correction


def _smoother(layout: TreeLayout, level_variances: np.ndarray) -> _Smoother:
    real = layout.real_nodes
    offsets = layout.offsets
    b = layout.branching
    # Upward: variance of the subtree estimate of every node (0 for padding: known exactly).
    subtree_var = [None] * (layout.depth + 1)
    own_weight = [None] * (layout.depth + 1)
    leaf_real = real[offsets[-2] : offsets[-1]]
    subtree_var[-1] = np.where(leaf_real, level_variances[-1], 0.0)
    own_weight[-1] = leaf_real.astype(np.float64)
    for level in range(layout.depth - 1, -1, -1):
        node_real = real[offsets[level] : offsets[level + 1]]
        children_var = subtree_var[level + 1].reshape(-1, b).sum(axis=1)
        var = level_variances[level]
        with np.errstate(divide="ignore", invalid="ignore"):
            # z = a y + (1 - a) s with a = Vs / (Vs + var), the inverse-variance weighting.
            weight = np.where(children_var > 0, children_var / (children_var + var), 0.0)
            combined = np.where(children_var > 0, var * children_var / (var + children_var), 0.0)
        own_weight[level] = np.where(node_real, weight, 0.0)
        subtree_var[level] = np.where(node_real, combined, 0.0)
    # Downward: a parent's correction is shared among children in proportion to their variance.
    child_share = [np.ones(1)]
    for level in range(1, layout.depth + 1):
        var = subtree_var[level].reshape(-1, b)
        total = var.sum(axis=1, keepdims=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where(total > 0, var / total, 0.0)
        child_share.append(share.ravel())
    return _Smoother(tuple(own_weight), tuple(child_share))


def least_squares_leaves(
    nodes: tf.Tensor, layout: TreeLayout, level_variances: Sequence[float]
) -> tf.Tensor:
    """Best linear unbiased estimate of the leaves from noisy node counts.

    Args:
      nodes: ``[..., num_nodes]`` noisy counts, root first (as :meth:`TreeLayout.node_counts`).
      layout: the tree.
      level_variances: noise variance of one node at each level ``0 .. depth`` (only their
        ratios matter).

    Returns:
      ``[..., num_buckets]`` leaf estimates; padding leaves are dropped (they are exactly 0),
      so the leaves sum to the estimated root. Upward pass: every node's subtree estimate
      ``z = a y + (1 - a) sum(z_children)`` with inverse-variance weight ``a``; downward pass:
      ``x_child = z_child + share * (x_parent - sum z_children)``, shares proportional to
      the children's subtree variances (Hay et al. 2010, Honaker 2015).
    """
    nodes = tf.convert_to_tensor(nodes)
    variances = np.asarray(level_variances, dtype=np.float64)
    if variances.shape != (layout.depth + 1,) or np.any(variances <= 0):
        raise ValueError(f"need {layout.depth + 1} positive level variances, got {variances}")
    smoother = _smoother(layout, variances)
    dtype = nodes.dtype
    batch = tf.shape(nodes)[:-1]
    b = layout.branching
    offsets = layout.offsets
    observed = [
        nodes[..., offsets[level] : offsets[level + 1]] for level in range(len(offsets) - 1)
    ]

    def group(x, size):  # [..., size * b] -> [..., size, b]
        return tf.reshape(x, tf.concat([batch, [size, b]], 0))

    subtree = [None] * (layout.depth + 1)
    children_sum = [None] * (layout.depth + 1)
    subtree[-1] = observed[-1] * tf.constant(smoother.own_weight[-1], dtype)
    for level in range(layout.depth - 1, -1, -1):
        size = layout.level_sizes[level]
        children_sum[level] = tf.reduce_sum(group(subtree[level + 1], size), axis=-1)
        weight = tf.constant(smoother.own_weight[level], dtype)
        subtree[level] = weight * observed[level] + (1.0 - weight) * children_sum[level]
        # padding-only nodes: weight 0 and an exact-zero children sum, so 0 as they must be
    estimate = subtree[0]
    for level in range(1, layout.depth + 1):
        size = layout.level_sizes[level - 1]
        correction = estimate - children_sum[level - 1]  # [..., size]
        share = tf.reshape(tf.constant(smoother.child_share[level], dtype), [size, b])
        estimate = subtree[level] + tf.reshape(
            correction[..., None] * share, tf.concat([batch, [size * b]], 0)
        )
    return estimate[..., : layout.num_buckets]


def auc_gradient(pos: np.ndarray, neg: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Derivatives of the bucketed AUC with respect to every ``pos[b]`` and ``neg[b]``.

    With ``AUC = sum_b neg[b] (TP_above[b] + pos[b] / 2) / (P N)``:
    ``dAUC/dpos[b] = (F_neg(b) - AUC) / P`` and ``dAUC/dneg[b] = (1 - F_pos(b) - AUC) / N``,
    where ``F(b)`` counts the class below bucket ``b`` plus half of bucket ``b``.
    """
    pos = np.asarray(pos, np.float64)
    neg = np.asarray(neg, np.float64)
    num_pos, num_neg = pos.sum(), neg.sum()
    neg_below = (np.cumsum(neg) - neg / 2) / num_neg
    pos_below = (np.cumsum(pos) - pos / 2) / num_pos
    auc = float(np.sum(neg * (num_pos - np.cumsum(pos) + pos / 2)) / (num_pos * num_neg))
    return (neg_below - auc) / num_pos, (1.0 - pos_below - auc) / num_neg


def auc_variance(
    pos: np.ndarray,
    neg: np.ndarray,
    epsilon: float,
    branching: int = DEFAULT_BRANCHING,
    budget: str | Sequence[float] = "auc",
    public_scores: bool = False,
) -> float:
    """Variance of the least-squares tree AUC of one central Laplace release (linearised).

    :func:`mechanism_auc_variance` of ``TreeHistogram(epsilon, len(pos) - 1, ...)``;
    ``K`` clients in local mode multiply it by ``K``. Used to choose the defaults.
    """
    mechanism = TreeHistogram(
        epsilon, len(pos) - 1, branching=branching, budget=budget, public_scores=public_scores
    )
    return mechanism_auc_variance(pos, neg, mechanism)


def mechanism_auc_variance(
    pos: np.ndarray,
    neg: np.ndarray,
    mechanism: TreeHistogram,
    level_variances: Sequence[float] | None = None,
) -> float:
    """Variance of :meth:`TreeHistogram.estimate_auc` for one (summed) release (linearised).

    Exact for the linear estimator: ``sum_nodes (L^T g)_n^2 var_n``, with ``g`` the AUC
    gradient (:func:`auc_gradient`), ``L`` the estimator of :func:`least_squares_leaves`
    (applied to the basis vectors of the node space) and ``var_n`` the mechanism's node
    variances (``level_variances``, the mechanism's own unless given). Second-order terms
    are of relative order ``Var(P^) / P^2``.
    """
    layout = mechanism.layout
    if level_variances is None:
        level_variances = mechanism.level_variances
    level_var = np.asarray(level_variances, np.float64)
    node_var = level_var[layout.node_levels()] * layout.real_nodes
    basis = tf.eye(layout.num_nodes, dtype=tf.float64)
    operator = least_squares_leaves(basis, layout, level_var).numpy()  # [nodes, buckets]
    grad_pos, grad_neg = auc_gradient(pos, neg)
    # with public bucket totals, neg = total - pos: one noisy tree with gradient g_pos - g_neg
    gradients = [grad_pos - grad_neg] if mechanism.public_scores else [grad_pos, grad_neg]
    return sum(float(np.sum((operator @ g) ** 2 * node_var)) for g in gradients)


@register_mechanism
class TreeHistogram(CountMechanism):
    """Laplace noise on every node of a tree over the class histograms (central or local).

    Released: for each of positives and negatives, every node count of a complete
    ``branching``-ary tree over the ``T + 1`` buckets (:class:`TreeLayout`), ``"pos_tree"``
    and ``"neg_tree"`` of shape ``[..., num_nodes]``, root first. Releases are additive, so
    a server may sum many clients' releases (local mode: each client's report is
    ``epsilon``-DP on its own; the error grows like ``sqrt(K)``).

    * Neighbouring relation: label DP (one example's label differs; scores and weights in
      [0, 1] unchanged).
    * Sensitivity: a flip moves weight ``w <= 1`` from ``pos`` to ``neg`` at one leaf and at
      every ancestor: L1 = 2 per level, ``2 (h + 1)`` in all.
    * Noise: ``Laplace(2 / eps_l)`` on each node count of level ``l``; ``eps_l = epsilon *
      share_l`` (:func:`level_weights`). Nodes that cover only padding are public zeros.
    * Epsilon: ``sum_l 2 / (2 / eps_l) = epsilon`` (pure DP).

    Args:
      epsilon: total budget of one release.
      num_thresholds: ``T``; the tree has ``T + 1`` real leaves.
      delta: must be unset (pure DP).
      branching: children per node (default 4).
      budget: ``"auc"`` (default), ``"uniform"`` or one weight per level (root first).
      public_scores: release the bucket totals exactly and noise only the positive tree
        (L1 = 1 per level, ``Laplace(1 / eps_l)``); see the module docstring.

    >>> m = TreeHistogram(epsilon=1.0, num_thresholds=15)
    >>> [round(s, 3) for s in m.level_scales]
    [4.88, 6.1, 7.625]
    >>> print(m.statement().sensitivity)
    L1 = 2 per level x 3 levels = 6 (one leaf and its ancestors, pos and neg)
    """

    name = "tree-histogram"

    def __init__(
        self,
        epsilon: float,
        num_thresholds: int,
        delta: float | None = None,
        branching: int = DEFAULT_BRANCHING,
        budget: str | Sequence[float] = "auc",
        public_scores: bool = False,
    ):
        super().__init__(epsilon=epsilon, num_thresholds=num_thresholds, delta=delta)
        self.public_scores = bool(public_scores)
        self.l1_per_level = L1_PER_LEVEL_PUBLIC_SCORES if public_scores else L1_PER_LEVEL
        self.layout = TreeLayout.for_buckets(self.num_buckets, branching)
        self.branching = self.layout.branching
        self.budget = budget if isinstance(budget, str) else tuple(float(x) for x in budget)
        self.level_shares = level_weights(self.layout.depth, budget)

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
    def level_variances(self) -> list[float]:
        """Noise variance of one node count at every level (of one release)."""
        return [2.0 * s**2 for s in self.level_scales]

    @property
    def noise_stddev(self) -> float:
        """Standard deviation of the noise on one leaf count (the noisiest level)."""
        return math.sqrt(self.level_variances[-1])

    def node_scales(self) -> np.ndarray:
        """Noise scale of every node ``[num_nodes]`` (0 for padding-only nodes)."""
        scales = np.asarray(self.level_scales)[self.layout.node_levels()]
        return scales * self.layout.real_nodes

    # -- release and post-processing ---------------------------------------------------
    def _node_noise(self, shape, seed, dtype) -> tf.Tensor:
        return noise.laplace(shape, tf.constant(self.node_scales(), dtype), seed, dtype)

    def _noisy_release(self, pos, neg, seed):
        pos_nodes = self.layout.node_counts(pos)
        seeds = noise.split_seed(seed, 2)
        shape = tf.shape(pos_nodes)
        if self.public_scores:
            return {
                "pos_tree": pos_nodes + self._node_noise(shape, seeds[0], pos_nodes.dtype),
                "total": pos + neg,
            }
        neg_nodes = self.layout.node_counts(neg)
        return {
            "pos_tree": pos_nodes + self._node_noise(shape, seeds[0], pos_nodes.dtype),
            "neg_tree": neg_nodes + self._node_noise(shape, seeds[1], neg_nodes.dtype),
        }

    def leaves(self, release: Release) -> tuple[tf.Tensor, tf.Tensor]:
        """Least-squares bucket counts ``pos, neg [..., T + 1]`` from a (summed) release."""
        out = []
        # Discrete noise at a huge epsilon has variance 0 (the counts are exact): any tiny
        # positive variance then gives the same leaves.
        variances = np.asarray(self.level_variances, np.float64)
        variances = np.maximum(variances, 1e-12 * max(float(variances.max()), 1.0))
        for key in ("pos_tree",) if self.public_scores else ("pos_tree", "neg_tree"):
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
        ``N = sum neg`` (the estimated roots), i.e. :func:`dpauc_tf.postprocessing.auc_estimate`
        of the unprojected counts. The numerator is bilinear in the two classes' leaves: with
        both classes noisy their noises are independent, so it is unbiased; with public scores
        (``neg = total - pos``) its bias is ``-Var(P^) / 2`` exactly (``pos``'s noise ``e``
        enters as ``-e^T M e = -(sum e)^2 / 2``). The ratio adds terms of relative order
        ``Var(P^) / P^2``. Measured bias on the paper-sized score set: see the module
        docstring. :meth:`to_confusion`'s monotone curve is for plotting; its trapezoid AUC
        has lower variance but is biased low at high noise.
        """
        if "pos" in release and "pos_tree" not in release:  # exact counts (no noise)
            pos, neg = release["pos"], release["neg"]
        else:
            pos, neg = self.leaves(release)
        dtype = pos.dtype
        # An empty bucket at each end: thresholds below and above every score, so the
        # trapezoid runs from (1, 1) to (0, 0) and covers every bucket (the first and the
        # last bucket's noise enters the numerator as well as P and N).
        ends = [[0, 0]] * (pos.shape.rank - 1) + [[1, 1]]
        pos, neg = (tf.pad(tf.cast(c, tf.float64), ends) for c in (pos, neg))
        auc = auc_estimate(confusion_from_histogram(pos, neg))
        # Post-processing into [0, 1]: only binds when noise swamps the counts (tiny or
        # one-class test sets); at the AUCs and noise levels measured above it never does.
        return tf.cast(tf.clip_by_value(auc, 0.0, 1.0), dtype)

    # -- accounting ----------------------------------------------------------------------
    def dp_event(self) -> dp_accounting.DpEvent:
        return dp_accounting.ComposedDpEvent(
            [
                dp_accounting.LaplaceDpEvent(noise_multiplier=scale / self.l1_per_level)
                for scale in self.level_scales
            ]
        )

    def _noise_text(self) -> str:
        scales = ", ".join(f"{s:.4g}" for s in self.level_scales)
        return (
            f"Laplace(scale {self.l1_per_level:g}/eps_l) on every node count of a {self.branching}-ary tree, "
            f"{self.layout.depth + 1} levels, scales (root first) [{scales}]"
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
            )
        return PrivacyStatement(
            mechanism=self.name,
            neighbouring=self.neighbouring,
            sensitivity=f"L1 = 2 per level x {levels} levels = {2 * levels} "
            "(one leaf and its ancestors, pos and neg)",
            noise=self._noise_text(),
            epsilon=self.epsilon,
            delta=0.0,
        )

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(epsilon={self.epsilon!r}, num_thresholds="
            f"{self.num_thresholds!r}, branching={self.branching!r}, budget={self.budget!r}, "
            f"public_scores={self.public_scores!r})"
        )


FAMILIES = ("discrete-laplace", "skellam")
SKELLAM_PRECISION_POWER = 1.5


def skellam_precision_shares(level_shares: Sequence[float]) -> np.ndarray:
    """Shares of the Renyi budget (``1 / mu_l``) per level for the Skellam family.

    Laplace shares ``s_l`` give level variances ``~ 1 / s_l^2`` under the constraint
    ``sum eps_l = epsilon``; Gaussian-type noise is constrained by ``sum L2^2 / mu_l``
    (zCDP, the leading Renyi term) instead, and the same weighting of the AUC's variance
    is then optimal with precision ``1 / mu_l ~ s_l^1.5`` (Lagrange: minimise
    ``sum c_l v_l`` under ``sum eps_l = const`` gives ``eps_l ~ c_l^(1/3)``, under
    ``sum 1 / v_l = const`` gives ``1 / v_l ~ c_l^(1/2)``).

    >>> skellam_precision_shares([0.5, 0.5]).tolist()
    [0.5, 0.5]
    """
    weights = np.asarray(level_shares, np.float64) ** SKELLAM_PRECISION_POWER
    return weights / weights.sum()


def skellam_tree_rdp(
    orders: np.ndarray, mus: Sequence[float], l1_per_level: float, releases: int = 1
) -> np.ndarray:
    """Renyi DP of ``releases`` Skellam tree releases: the levels' bounds added up.

    Each level is one Skellam(mu_l, mu_l) release of a vector whose label-flip sensitivity
    is ``L1 = l1_per_level`` and ``L2^2 = l1_per_level`` (unit changes):
    :func:`dpauc_tf.distributed.skellam_rdp` (Agarwal, Kairouz & Liu 2021); levels and
    releases compose by adding Renyi divergences.
    """
    rdp = sum(skellam_rdp(orders, mu, l1_per_level, l1_per_level) for mu in mus)
    return releases * rdp


def skellam_tree_mus(
    epsilon: float,
    delta: float,
    precision_shares: Sequence[float],
    l1_per_level: float,
    releases: int = 1,
) -> list[float]:
    """Smallest Skellam parameters ``mu_l = m / precision_l`` (one ``m``, to 1e-9 relative)
    such that ``releases`` tree releases are ``(epsilon, delta)``-DP by the Renyi bound.

    >>> mus = skellam_tree_mus(1.0, 1e-6, [0.5, 0.5], 2.0)
    >>> mus[0] == mus[1]
    True
    """
    shares = np.asarray(precision_shares, np.float64)
    orders = np.asarray(_RDP_ORDERS, np.float64)

    def spent(m: float) -> float:
        return rdp_to_epsilon(
            orders, skellam_tree_rdp(orders, m / shares, l1_per_level, releases), delta
        )

    low, high = 1e-6, 1.0
    while spent(high) > epsilon:
        high *= 2.0
    for _ in range(200):
        mid = math.sqrt(low * high)
        if spent(mid) > epsilon:
            low = mid
        else:
            high = mid
        if high / low < 1.0 + 1e-9:
            break
    return [float(high / p) for p in shares]


@register_mechanism
class SecureTreeHistogram(TreeHistogram):
    """Tree histograms with distributed integer noise, for secure aggregation.

    :meth:`release` is **one client's** report: its integer node counts plus its share of
    the noise; the sum of ``num_clients`` shares is exactly one draw of the total noise per
    node. Two noise families:

    * ``"discrete-laplace"`` (default, pure DP): share ``X - Y`` with ``X, Y ~ Polya(1 /
      num_clients, exp(-1 / s_l))`` (:func:`dpauc_tf.noise.polya_difference`); the sum is
      discrete Laplace ``P(k) ~ exp(-|k| / s_l)``, ``s_l = 2 / eps_l`` (``1 / eps_l`` with
      public scores).
    * ``"skellam"`` (Gaussian family, needs ``delta``): share ``Poisson(mu_l / K) -
      Poisson(mu_l / K)``; the sum is ``Skellam(mu_l, mu_l)`` (variance ``2 mu_l``) per node.
      ``mu_l = m / p_l`` with Renyi shares ``p_l`` (:func:`skellam_precision_shares`) and the
      smallest ``m`` for which the levels' Renyi bounds, added up, give ``(epsilon,
      delta)`` (:func:`skellam_tree_mus`). Many evaluations compose by Renyi DP
      (:meth:`privacy_spent`), which is where this family wins
      (:func:`dpauc_tf.noise_families.compare_noise_families`).

    * Neighbouring relation: label DP, integer counts (unit weights).
    * Sensitivity: per level L1 = 2, L2^2 = 2 (one node of each class moves by 1); with
      public scores L1 = L2^2 = 1 (positive tree only).
    * Noise of the sum: as above, per node of level ``l``.
    * Epsilon: ``sum_l eps_l = epsilon`` (pure DP) or ``(epsilon, delta)`` (Skellam),
      against a server that sees only the secure sum of all ``num_clients`` reports.
      **Trust**: individual reports carry only ``1 / num_clients`` of the noise variance and
      must stay hidden (secure aggregation); if fewer clients report than the shares are
      sized for, the noise is smaller than stated: :meth:`achieved_epsilon`.

    >>> m = SecureTreeHistogram(epsilon=1.0, num_thresholds=15, num_clients=10)
    >>> r = m.release(tf.ones(16) * 3, tf.ones(16), seed=0)
    >>> bool(tf.reduce_all(r["pos_tree"] == tf.round(r["pos_tree"])))
    True
    >>> s = SecureTreeHistogram(1.0, 15, delta=1e-6, num_clients=10, family="skellam")
    >>> [round(mu) for mu in s.level_mus]
    [46, 65, 90]
    """

    name = "secure-tree-histogram"
    integer_release: ClassVar[bool] = True

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
    ):
        self.num_clients = check_shares(num_clients, family)
        self.family = family
        self.requires_delta = family == "skellam"
        super().__init__(epsilon, num_thresholds, delta, branching, budget, public_scores)
        if family == "skellam":
            self.level_mus = skellam_tree_mus(
                self.epsilon,
                self.delta,
                skellam_precision_shares(self.level_shares),
                self.l1_per_level,
            )

    @property
    def level_variances(self) -> list[float]:
        if self.family == "skellam":
            return [2.0 * mu for mu in self.level_mus]
        return [noise.discrete_laplace_variance(s) for s in self.level_scales]

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
        )

    def _node_noise(self, shape, seed, dtype) -> tf.Tensor:
        offsets = self.layout.offsets
        seeds = noise.split_seed(seed, self.layout.depth + 1)
        batch = shape[:-1]
        parts = []
        for level, size in enumerate(self.layout.level_sizes):
            level_shape = tf.concat([batch, [size]], 0)
            if self.family == "skellam":
                mu = self.level_mus[level] / self.num_clients
                parts.append(skellam_share(level_shape, mu, seeds[level], dtype))
            else:
                parts.append(
                    noise.polya_difference(
                        level_shape, self.level_scales[level], self.num_clients, seeds[level], dtype
                    )
                )
        real = tf.constant(self.layout.real_nodes[: offsets[-1]], dtype)
        return tf.concat(parts, axis=-1) * real

    def _noisy_release(self, pos, neg, seed):
        message = (
            f"{self.name} needs integer counts (unit sample weights): secure aggregation sums "
            "integers"
        )
        if tf.executing_eagerly():
            for counts in (pos, neg):
                values = counts.numpy()
                if not (np.all(np.isfinite(values)) and np.all(values == np.round(values))):
                    raise ValueError(message)
        return super()._noisy_release(pos, neg, seed)

    # -- accounting ----------------------------------------------------------------------
    def dp_event(self) -> dp_accounting.DpEvent:
        if self.family == "skellam":
            return dp_accounting.UnsupportedDpEvent()
        return super().dp_event()

    def privacy_spent(self, releases: int = 1, delta: float | None = None) -> EpsilonSpent:
        """Epsilon of ``releases`` evaluations; Skellam composes by its Renyi bound."""
        if self.family != "skellam":
            return super().privacy_spent(releases, delta)
        delta = self.delta if delta is None else delta
        orders = np.asarray(_RDP_ORDERS, np.float64)
        rdp = skellam_tree_rdp(orders, self.level_mus, self.l1_per_level, releases)
        eps = rdp_to_epsilon(orders, rdp, delta) if releases else 0.0
        return EpsilonSpent(basic=eps, pld=None, rdp=eps, delta=delta, count=releases)

    def achieved_epsilon(self, num_reporting: int) -> float:
        """Epsilon actually provided when ``num_reporting`` of the ``num_clients`` shares
        arrive: ``epsilon`` if all do (extra shares only add noise), larger otherwise,
        ``inf`` when nobody reports."""
        if num_reporting >= self.num_clients:
            return self.epsilon
        if num_reporting <= 0:
            return math.inf
        fraction = num_reporting / self.num_clients
        if self.family == "skellam":
            orders = np.asarray(_RDP_ORDERS, np.float64)
            mus = [mu * fraction for mu in self.level_mus]
            return rdp_to_epsilon(
                orders, skellam_tree_rdp(orders, mus, self.l1_per_level), self.delta
            )
        return sum(
            self.l1_per_level * shortfall_unit_epsilon(scale, fraction)
            for scale in self.level_scales
        )

    def _noise_text(self) -> str:
        if self.family == "skellam":
            mus = ", ".join(f"{mu:.4g}" for mu in self.level_mus)
            return (
                f"Skellam(mu_l, mu_l) in total on every node count of a {self.branching}-ary "
                f"tree, {self.layout.depth + 1} levels, mu_l (root first) [{mus}], split into "
                f"{self.num_clients} client shares Poisson(mu_l/K) - Poisson(mu_l/K)"
            )
        scales = ", ".join(f"{s:.4g}" for s in self.level_scales)
        return (
            f"discrete Laplace(scale {self.l1_per_level:g}/eps_l) in total on every node count of a "
            f"{self.branching}-ary tree, {self.layout.depth + 1} levels, scales (root first) "
            f"[{scales}], split into {self.num_clients} client shares (Polya differences)"
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
            )
        return replaced

    def __repr__(self) -> str:
        return super().__repr__()[:-1] + (
            f", num_clients={self.num_clients!r}, family={self.family!r}, "
            f"delta={self.delta or None!r})"
        )
