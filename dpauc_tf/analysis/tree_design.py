"""Design tools for the tree mechanisms: the linearised variance of their AUC estimate.

Used to choose the tree defaults (branching 4, budget ratio 0.8; ``docs/tree_histograms.md``
records the measurement and the command) and by [`dpauc_tf.analysis.noise_families`][].

    >>> import numpy as np
    >>> pos = np.array([0., 10., 30., 60., 100., 0.]) * 100
    >>> neg = np.array([0., 100., 60., 30., 10., 0.]) * 100
    >>> auc_variance(pos, neg, epsilon=1.0, branching=2) > 0
    True
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import tensorflow as tf

from dpauc_tf.core.tree import DEFAULT_BRANCHING, auc_gradient, least_squares_leaves
from dpauc_tf.mechanisms.tree import TreeHistogram


def auc_variance(
    pos: np.ndarray,
    neg: np.ndarray,
    epsilon: float,
    branching: int = DEFAULT_BRANCHING,
    budget: str | Sequence[float] = "auc",
    public_scores: bool = False,
) -> float:
    """Variance of the least-squares tree AUC of one central Laplace release (linearised).

    [`mechanism_auc_variance`][] of ``TreeHistogram(epsilon, len(pos) - 1, ...)``;
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
    """Variance of [`TreeHistogram.estimate_auc`][] for one (summed) release (linearised).

    Exact for the linear estimator: ``sum_nodes (L^T g)_n^2 var_n``, with ``g`` the AUC
    gradient (`auc_gradient`, of the mechanism's estimator), ``L`` the estimator of `least_squares_leaves`
    (applied to the basis vectors of the node space) and ``var_n`` the mechanism's node
    variances (per class, ``class_level_variances``: the mechanism's own unless
    ``level_variances`` is given for both classes). Second-order terms are of relative
    order ``Var(P^) / P^2``.
    """
    layout = mechanism.layout
    classes = mechanism.class_level_variances
    if level_variances is not None:
        classes = (level_variances,) * len(classes)
    grad_pos, grad_neg = auc_gradient(pos, neg, mechanism.within_bucket)
    # with public bucket totals, neg = total - pos: one noisy tree with gradient g_pos - g_neg
    gradients = [grad_pos - grad_neg] if mechanism.public_scores else [grad_pos, grad_neg]
    basis = tf.eye(layout.num_nodes, dtype=tf.float64)
    total = 0.0
    for g, variances in zip(gradients, classes, strict=True):
        level_var = np.asarray(variances, np.float64)
        node_var = level_var[layout.node_levels()] * layout.real_nodes
        operator = least_squares_leaves(basis, layout, level_var).numpy()  # [nodes, buckets]
        total += float(np.sum((operator @ g) ** 2 * node_var))
    return total
