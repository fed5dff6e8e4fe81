"""Splitting a release's budget unequally between the positive and the negative histogram.

A label flip moves one unit from one class's histogram to the other's, so a release that
puts Laplace noise of scale ``1 / eps_pos`` on the positive counts and ``1 / eps_neg`` on the
negative counts (per level, for a tree) is ``eps_pos + eps_neg``-DP: any split of ``epsilon``
between the classes gives the same guarantee. The split changes only the error.

**The optimum.** The AUC estimate is, to first order, ``g_pos . e_pos + g_neg . e_neg`` with
gradients ``dAUC/dpos[b] = (F_neg(b) - AUC) / P`` and ``dAUC/dneg[b] = (1 - F_pos(b) - AUC) /
N`` ([`dpauc_tf.core.tree.auc_gradient`][]). Its variance is ``c_pos / eps_pos^2 + c_neg /
eps_neg^2`` with ``c_class`` the variance at budget 1. Minimising it under ``eps_pos + eps_neg =
epsilon`` (Lagrange) gives ``eps_pos / eps_neg = (c_pos / c_neg)^(1/3)`` and the variance
``(c_pos^(1/3) + c_neg^(1/3))^3 / epsilon^2`` (equal split: ``4 (c_pos + c_neg) / epsilon^2``).
On quantile buckets ``F_neg`` and ``1 - F_pos`` sweep [0, 1] alike, so ``c_pos / c_neg`` is
close to ``(N / P)^2`` (8.6 against 8.45 on the paper-sized score set): the split depends on
the class counts only, ``eps_pos / eps_neg = (N / P)^(2/3)``.

For Gaussian-type noise (Skellam) the constraint is on the Renyi divergence, whose leading
term ``alpha / (4 mu)`` adds up over the classes: minimising ``c_pos mu_pos + c_neg mu_neg``
under ``1 / mu_pos + 1 / mu_neg = const`` gives precisions ``1 / mu_pos : 1 / mu_neg =
sqrt(c_pos / c_neg) = N / P``.

**Privacy of the split.** ``P`` and ``N`` are private (they are label counts). The split must
therefore come from a **public prior** of the positive rate (``positive_rate``, e.g. last
month's click-through rate or the training set's rate) or be given directly
(``positive_share``); neither reads the data, so the guarantee is exactly that of the equal
split. A wrong prior costs accuracy, never privacy. (A noisy class count bought with part of
the budget would be valid by sequential composition, but needs a round before the clients
add noise; it is not provided.)

    >>> round(positive_share_for_rate(0.256, "laplace"), 3)
    0.671
    >>> round(positive_share_for_rate(0.256, "skellam"), 3)
    0.744
    >>> positive_share_for_rate(0.5, "laplace")
    0.5
    >>> resolve_positive_share(None, None)
    0.5
"""

from __future__ import annotations

import math

FAMILIES = ("laplace", "skellam")
EQUAL_SHARE = 0.5
# The range of a share or a rate: beyond it one class gets less than a millionth of the
# budget (its counts are noise), and near 0 the scales overflow (1e-300 divided by zero).
MIN_FRACTION = 1e-6
MAX_FRACTION = 1.0 - MIN_FRACTION


def positive_share_for_rate(positive_rate: float, family: str = "laplace") -> float:
    """The positive histogram's share of the budget that minimises the AUC's variance.

    ``family="laplace"`` (continuous or discrete Laplace, pure DP): the share of epsilon,
    ``r / (1 + r)`` with ``r = ((1 - pi) / pi)^(2/3)``. ``family="skellam"``: the share of the
    Renyi precision ``1 / mu``, ``r / (1 + r)`` with ``r = (1 - pi) / pi``. ``positive_rate``
    (``pi``) must be a *public* prior of the fraction of positives, in
    ``[MIN_FRACTION, MAX_FRACTION]`` (``[1e-6, 1 - 1e-6]``).
    """
    if family not in FAMILIES:
        raise ValueError(f"family must be one of {FAMILIES}, got {family!r}")
    rate = _check_fraction(positive_rate, "positive_rate")
    ratio = (1.0 - rate) / rate
    if family == "laplace":
        ratio = ratio ** (2.0 / 3.0)
    return ratio / (1.0 + ratio)


def resolve_positive_share(
    positive_share: float | None, positive_rate: float | None, family: str = "laplace"
) -> float:
    """The share to use: ``positive_share`` as given, or the optimum for a public
    ``positive_rate``, or the equal split (0.5) when neither is given; not both."""
    if positive_share is not None and positive_rate is not None:
        raise ValueError("give positive_share or positive_rate, not both")
    if positive_rate is not None:
        return positive_share_for_rate(positive_rate, family)
    if positive_share is None:
        return EQUAL_SHARE
    return _check_fraction(positive_share, "positive_share")


def split_options(positive_share: float, positive_rate: float | None) -> dict:
    """The constructor options that reproduce a split (empty for the equal split)."""
    if positive_rate is not None:
        return {"positive_rate": positive_rate}
    return {} if positive_share == EQUAL_SHARE else {"positive_share": positive_share}


def _check_fraction(value: float, name: str) -> float:
    accepted = f"a number in [{MIN_FRACTION:g}, {MAX_FRACTION:g}]"
    if isinstance(value, (bool, str)):
        raise TypeError(f"{name} must be {accepted}, got {value!r}")
    try:
        value = float(value)
    except (TypeError, ValueError) as error:
        raise TypeError(f"{name} must be {accepted}, got {value!r}") from error
    if not (math.isfinite(value) and MIN_FRACTION <= value <= MAX_FRACTION):
        raise ValueError(
            f"{name} must be in [{MIN_FRACTION:g}, {MAX_FRACTION:g}] (beyond it one class "
            f"gets less than a millionth of the budget), got {value:g}"
        )
    return value
