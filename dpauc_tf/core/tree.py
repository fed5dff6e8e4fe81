"""Tree layout over score buckets and the least-squares (BLUE) leaf estimator.

The ``T + 1`` score buckets are the leaves of a ``b``-ary tree of depth
``h = ceil(log_b(T + 1))`` (padded on the right with empty leaves when ``T + 1 < b^h``;
one level less, with up to ``2 b - 1`` children per node on the last level, where that
covers the buckets: [`TreeLayout`][]);
every node counts the leaves below it. `least_squares_leaves` computes the best linear
unbiased estimate of the leaves from all noisy nodes (Hay et al. 2010; Honaker 2015): one
upward and one downward pass over the levels, closed form for a complete tree with one noise
variance per level, vectorised over any leading axes. `level_weights` splits a budget
over the levels. Mechanisms on top of this: [`dpauc_tf.mechanisms.tree`][].

Examples:
    >>> layout = TreeLayout.for_buckets(16, branching=4)
    >>> layout.level_sizes
    (1, 4, 16)
    >>> level_weights(2, "uniform").round(3).tolist()
    [0.333, 0.333, 0.333]
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
import tensorflow as tf

DEFAULT_BRANCHING = 4
BUDGET_RATIO = 0.8


@dataclasses.dataclass(frozen=True)
class TreeLayout:
    """Shape of a ``branching``-ary tree over ``num_buckets`` leaves.

    Nodes are stored level by level, root first (breadth-first order). Every node of level
    ``l`` has ``arities[l]`` children: ``branching`` at every level, except that the last
    level may take up to ``2 branching - 1`` children per node when that saves a whole
    level (66 buckets at branching 4: arities ``(4, 4, 5)``, 3 levels below the root,
    instead of a fourth level for two buckets). Leaves beyond ``num_buckets`` are padding:
    always empty and public, so nodes whose leaves are all padding are released as exact
    zeros. The sensitivity (one node per level) depends only on the number of levels.

    Examples:
        >>> layout = TreeLayout.for_buckets(10, branching=2)
        >>> layout.depth, layout.arities, layout.num_nodes, int(layout.real_nodes.sum())
        (3, (2, 2, 3), 19, 17)
        >>> TreeLayout.for_buckets(66, branching=4).level_sizes
        (1, 4, 16, 80)
        >>> TreeLayout.for_buckets(64, branching=4).arities
        (4, 4, 4)
    """

    num_buckets: int
    branching: int
    depth: int
    arities: tuple[int, ...] = ()

    def __post_init__(self):
        if not self.arities:
            object.__setattr__(self, "arities", (self.branching,) * self.depth)
        if len(self.arities) != self.depth:
            raise ValueError(f"need {self.depth} arities, got {self.arities}")

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
        arities = (int(branching),) * depth
        if depth >= 2 and branching ** (depth - 1) < num_buckets:
            # a wider last level instead of a level for a few buckets
            last = -(-num_buckets // branching ** (depth - 2))  # ceil
            if last <= 2 * branching - 1:
                depth -= 1
                arities = (int(branching),) * (depth - 1) + (int(last),)
        return cls(int(num_buckets), int(branching), depth, arities)

    @property
    def num_leaves(self) -> int:
        return int(np.prod(self.arities, dtype=np.int64))

    @property
    def level_sizes(self) -> tuple[int, ...]:
        sizes = [1]
        for arity in self.arities:
            sizes.append(sizes[-1] * arity)
        return tuple(sizes)

    @property
    def num_nodes(self) -> int:
        return sum(self.level_sizes)

    @property
    def offsets(self) -> tuple[int, ...]:
        return tuple(int(x) for x in np.cumsum((0, *self.level_sizes)))

    def leaves_under(self, level: int) -> int:
        """Leaves under one node of ``level``."""
        return int(np.prod(self.arities[level:], dtype=np.int64))

    @property
    def real_nodes(self) -> np.ndarray:
        """Bool ``[num_nodes]``: True for nodes with at least one real (non-padding) leaf."""
        parts = []
        for level, size in enumerate(self.level_sizes):
            parts.append(np.arange(size) * self.leaves_under(level) < self.num_buckets)
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
        for size, arity in reversed(list(zip(self.level_sizes[:-1], self.arities, strict=True))):
            level = tf.reduce_sum(tf.reshape(level, tf.concat([batch, [size, arity]], 0)), axis=-1)
            levels.append(level)
        return tf.concat(levels[::-1], axis=-1)


def level_weights(depth: int, budget: str | Sequence[float] = "auc") -> np.ndarray:
    """Budget shares of levels ``0 (root) .. depth (leaves)``, positive and summing to 1.

    ``"auc"``: proportional to ``BUDGET_RATIO ** level`` (the default; see the module
    docstring); ``"uniform"``: equal shares; a sequence: ``depth + 1`` positive weights.

    Examples:
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
    # Upward: variance of the subtree estimate of every node (0 for padding: known exactly).
    subtree_var = [None] * (layout.depth + 1)
    own_weight = [None] * (layout.depth + 1)
    leaf_real = real[offsets[-2] : offsets[-1]]
    subtree_var[-1] = np.where(leaf_real, level_variances[-1], 0.0)
    own_weight[-1] = leaf_real.astype(np.float64)
    for level in range(layout.depth - 1, -1, -1):
        node_real = real[offsets[level] : offsets[level + 1]]
        children_var = subtree_var[level + 1].reshape(-1, layout.arities[level]).sum(axis=1)
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
        var = subtree_var[level].reshape(-1, layout.arities[level - 1])
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
      nodes: ``[..., num_nodes]`` noisy counts, root first (as [`TreeLayout.node_counts`][]).
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
    offsets = layout.offsets
    observed = [
        nodes[..., offsets[level] : offsets[level + 1]] for level in range(len(offsets) - 1)
    ]

    def group(x, size, arity):  # [..., size * arity] -> [..., size, arity]
        return tf.reshape(x, tf.concat([batch, [size, arity]], 0))

    subtree = [None] * (layout.depth + 1)
    children_sum = [None] * (layout.depth + 1)
    subtree[-1] = observed[-1] * tf.constant(smoother.own_weight[-1], dtype)
    for level in range(layout.depth - 1, -1, -1):
        size = layout.level_sizes[level]
        arity = layout.arities[level]
        children_sum[level] = tf.reduce_sum(group(subtree[level + 1], size, arity), axis=-1)
        weight = tf.constant(smoother.own_weight[level], dtype)
        subtree[level] = weight * observed[level] + (1.0 - weight) * children_sum[level]
        # padding-only nodes: weight 0 and an exact-zero children sum, so 0 as they must be
    estimate = subtree[0]
    for level in range(1, layout.depth + 1):
        size = layout.level_sizes[level - 1]
        correction = estimate - children_sum[level - 1]  # [..., size]
        arity = layout.arities[level - 1]
        share = tf.reshape(tf.constant(smoother.child_share[level], dtype), [size, arity])
        estimate = subtree[level] + tf.reshape(
            correction[..., None] * share, tf.concat([batch, [size * arity]], 0)
        )
    return estimate[..., : layout.num_buckets]


def auc_gradient(
    pos: np.ndarray, neg: np.ndarray, within_bucket: str = "half"
) -> tuple[np.ndarray, np.ndarray]:
    """Derivatives of the bucketed AUC with respect to every ``pos[b]`` and ``neg[b]``.

    With ``AUC = sum_b neg[b] (TP_above[b] + pos[b] / 2) / (P N)``:
    ``dAUC/dpos[b] = (F_neg(b) - AUC) / P`` and ``dAUC/dneg[b] = (1 - F_pos(b) - AUC) / N``,
    where ``F(b)`` counts the class below bucket ``b`` plus half of bucket ``b``. With
    ``within_bucket="linear"`` the AUC also holds
    [`dpauc_tf.core.postprocessing.within_bucket_correction`][] ``C / (P N)``, ``C = sum_b
    w_b (neg[b] pos[b+1] - pos[b] neg[b+1]) / 12``, whose derivatives are added, and ``AUC``
    above includes it.
    """
    if within_bucket not in ("half", "linear"):
        raise ValueError(f"within_bucket must be 'half' or 'linear', got {within_bucket!r}")
    pos = np.asarray(pos, np.float64)
    neg = np.asarray(neg, np.float64)
    num_pos, num_neg = pos.sum(), neg.sum()
    neg_below = (np.cumsum(neg) - neg / 2) / num_neg
    pos_below = (np.cumsum(pos) - pos / 2) / num_pos
    auc = float(np.sum(neg * (num_pos - np.cumsum(pos) + pos / 2)) / (num_pos * num_neg))
    if within_bucket == "half":
        return (neg_below - auc) / num_pos, (1.0 - pos_below - auc) / num_neg
    weights = np.ones(pos.size - 1)
    weights[0] += 0.5  # one-sided slopes in the end buckets
    weights[-1] += 0.5
    scale = 12.0 * num_pos * num_neg
    auc += float(np.sum(weights * (neg[:-1] * pos[1:] - pos[:-1] * neg[1:]))) / scale
    w_neg, w_pos = np.pad(weights * neg[:-1], (1, 0)), np.pad(weights * neg[1:], (0, 1))
    grad_pos = (neg_below - auc) / num_pos + (w_neg - w_pos) / scale
    w_pos_next, w_pos_prev = np.pad(weights * pos[1:], (0, 1)), np.pad(weights * pos[:-1], (1, 0))
    grad_neg = (1.0 - pos_below - auc) / num_neg + (w_pos_next - w_pos_prev) / scale
    return grad_pos, grad_neg
