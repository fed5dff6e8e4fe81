"""Which noise family gives the smaller AUC error for a given number of evaluations.

A user who evaluates ``n`` times under one total budget ``(epsilon_total, delta)`` must
split it over the evaluations. The two families of
[`dpauc_tf.mechanisms.tree.SecureTreeHistogram`][] compose differently:

* ``"discrete-laplace"`` (pure DP per evaluation): ``n`` releases of epsilon ``e`` cost
  ``n e`` by basic composition; with ``delta > 0`` the PLD accountant of dp-accounting
  (``composed_epsilon``, which also tries RDP) certifies a smaller total, so ``e`` can be
  larger than ``epsilon_total / n``. Here ``e`` is the largest per-evaluation epsilon whose
  ``n``-fold composition is at most ``epsilon_total`` by the best of basic / PLD / RDP.
* ``"skellam"`` (Gaussian family): Renyi-DP bounds add over evaluations
  (`dpauc_tf.privacy.skellam.skellam_tree_rdp`); the noise grows like ``sqrt(n)``
  instead of ``n``. dp-accounting has no Skellam event, so the Renyi bound of Agarwal,
  Kairouz & Liu (2021) is used ([`dpauc_tf.privacy.skellam`][]).

Both are compared by the exact (linearised) AUC standard deviation of one evaluation on the
user's bucket counts ([`dpauc_tf.analysis.tree_design.mechanism_auc_variance`][]), with the
secure-aggregation (central) noise. Few evaluations favour Laplace (pure DP, no delta
spent on tails); many favour Skellam (``python benchmarks/bench_utility.py --families``
prints the comparison on the paper-sized score set; ``docs/tree_histograms.md``).

    >>> import numpy as np
    >>> pos = np.array([0., 10., 30., 60., 100., 0.]) * 100
    >>> neg = np.array([0., 100., 60., 30., 10., 0.]) * 100
    >>> one = compare_noise_families(1, 1.0, 1e-6, pos, neg, branching=2)
    >>> many = compare_noise_families(100, 1.0, 1e-6, pos, neg, branching=2)
    >>> one.better, many.better
    ('discrete-laplace', 'skellam')
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np

from dpauc_tf.analysis.tree_design import mechanism_auc_variance
from dpauc_tf.core.tree import DEFAULT_BRANCHING
from dpauc_tf.mechanisms.tree import SecureTreeHistogram
from dpauc_tf.privacy.calibration import largest_parameter
from dpauc_tf.privacy.skellam import skellam_precision_shares, skellam_tree_mus

RELATIVE_TOLERANCE = 1e-3


@dataclasses.dataclass(frozen=True)
class FamilyComparison:
    """Per-evaluation noise and AUC error of both families under one total budget.

    Attributes:
      num_evaluations: the total budget and how often it is spent.
      epsilon_total: as ``num_evaluations``.
      delta: as ``num_evaluations``.
      laplace_epsilon: per-evaluation epsilon of the discrete Laplace tree.
      laplace_accountant: which composition certified it (``"basic"``, ``"pld"``, ``"rdp"``).
      laplace_auc_std: AUC standard deviation of one discrete Laplace evaluation.
      skellam_mus: total Skellam parameter per level (root first) of one evaluation.
      skellam_auc_std: AUC standard deviation of one Skellam evaluation.
      better: the family with the smaller AUC error.
    """

    num_evaluations: int
    epsilon_total: float
    delta: float
    laplace_epsilon: float
    laplace_accountant: str
    laplace_auc_std: float
    skellam_mus: tuple[float, ...]
    skellam_auc_std: float
    better: str

    def __str__(self) -> str:
        return (
            f"{self.num_evaluations} evaluations within (epsilon={self.epsilon_total:g}, "
            f"delta={self.delta:g}): discrete Laplace eps {self.laplace_epsilon:.4g} each "
            f"({self.laplace_accountant}), AUC std {self.laplace_auc_std:.3g}; Skellam (RDP) "
            f"AUC std {self.skellam_auc_std:.3g}; better: {self.better}"
        )


def _laplace_epsilon(
    num_evaluations: int, epsilon_total: float, delta: float, make
) -> tuple[float, str]:
    """Largest per-evaluation epsilon whose composition fits, and the accountant that
    certified it ([`dpauc_tf.privacy.calibration.largest_parameter`][])."""

    def figures(eps: float) -> dict[str, float]:
        spent = make(eps).privacy_spent(num_evaluations, delta)
        values = {"basic": spent.basic, "pld": spent.pld, "rdp": spent.rdp}
        return {k: v for k, v in values.items() if v is not None}

    def total(eps: float) -> float:
        return min(figures(eps).values())

    eps = largest_parameter(
        total,
        epsilon_total,
        start=epsilon_total / num_evaluations,
        relative_tolerance=RELATIVE_TOLERANCE,
    )
    eps = min(eps, epsilon_total)
    chosen = figures(eps)
    return eps, min(chosen, key=chosen.get)


def compare_noise_families(
    num_evaluations: int,
    epsilon_total: float,
    delta: float,
    pos: Sequence[float],
    neg: Sequence[float],
    *,
    branching: int = DEFAULT_BRANCHING,
    budget: str | Sequence[float] = "auc",
    public_scores: bool = False,
) -> FamilyComparison:
    """Which family of ``secure-tree-histogram`` gives the smaller AUC error.

    Args:
      num_evaluations: how many times the AUC will be released under this budget.
      epsilon_total: the total label-DP epsilon of all evaluations.
      delta: the total delta of all evaluations (``delta > 0``: Skellam needs it; Laplace
        uses it only for tighter composition).
      pos: representative bucket counts of the positives, ``[T + 1]`` (for instance from a
        public or earlier data set); the tree has ``T = len(pos) - 1`` thresholds.
      neg: the same for the negatives.
      branching: the tree's branching factor.
      budget: the tree's split of epsilon over its levels.
      public_scores: the tree's option of that name (for all three, see [`SecureTreeHistogram`][]).

    Returns:
      A [`FamilyComparison`][].
    """
    if isinstance(num_evaluations, bool) or not isinstance(num_evaluations, (int, np.integer)):
        raise TypeError(f"num_evaluations must be an int, got {num_evaluations!r}")
    if num_evaluations < 1:
        raise ValueError(f"num_evaluations must be >= 1, got {num_evaluations}")
    if not (math.isfinite(epsilon_total) and epsilon_total > 0):
        raise ValueError(f"epsilon_total must be finite and > 0, got {epsilon_total}")
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta must be in (0, 1), got {delta}")
    pos = np.asarray(pos, np.float64)
    neg = np.asarray(neg, np.float64)
    if pos.ndim != 1 or pos.shape != neg.shape or pos.size < 3:
        raise ValueError("pos and neg must be 1-D bucket counts of the same length (>= 3)")
    if pos.sum() <= 0 or neg.sum() <= 0:
        raise ValueError("pos and neg need both classes present")
    num_thresholds = pos.size - 1
    tree = {"branching": branching, "budget": budget, "public_scores": public_scores}

    def laplace(eps: float) -> SecureTreeHistogram:
        return SecureTreeHistogram(eps, num_thresholds, **tree)

    eps_each, accountant = _laplace_epsilon(num_evaluations, epsilon_total, delta, laplace)
    laplace_std = math.sqrt(mechanism_auc_variance(pos, neg, laplace(eps_each)))
    # Skellam: per-evaluation mus such that n releases compose (Renyi) to the total.
    skellam = SecureTreeHistogram(epsilon_total, num_thresholds, delta, family="skellam", **tree)
    mus = skellam_tree_mus(
        epsilon_total,
        delta,
        skellam_precision_shares(skellam.level_shares),
        skellam.l1_per_level,
        releases=int(num_evaluations),
    )
    variances = [2.0 * mu for mu in mus]
    skellam_std = math.sqrt(mechanism_auc_variance(pos, neg, skellam, variances))
    return FamilyComparison(
        num_evaluations=int(num_evaluations),
        epsilon_total=float(epsilon_total),
        delta=float(delta),
        laplace_epsilon=eps_each,
        laplace_accountant=accountant,
        laplace_auc_std=laplace_std,
        skellam_mus=tuple(mus),
        skellam_auc_std=skellam_std,
        better="skellam" if skellam_std < laplace_std else "discrete-laplace",
    )
