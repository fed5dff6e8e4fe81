"""How every privacy-loss-distribution (PLD) figure of the library is read.

dp-accounting composes PLDs by FFT, whose round-off can move a tail mass by about 1e-14
either way: enough to put a figure a hair below the true epsilon (591.5657804 for an exact
591.5657806 over 1,000 ``auc-only`` releases, docs/accounting.md). Every PLD is therefore
read at ``delta (1 - PLD_DELTA_MARGIN)``, so that the stated epsilon bounds the truth.

    >>> from dp_accounting.pld import privacy_loss_distribution
    >>> pld = privacy_loss_distribution.from_laplace_mechanism(1.0)
    >>> upper_epsilon(pld, 1e-6) >= pld.get_epsilon_for_delta(1e-6)
    True
"""

from __future__ import annotations

PLD_DELTA_MARGIN = 1e-3


def upper_epsilon(pld, delta: float) -> float:
    """Epsilon of ``pld`` (a dp-accounting ``PrivacyLossDistribution``) at ``delta``, read
    past the FFT's round-off."""
    return float(pld.get_epsilon_for_delta(delta * (1.0 - PLD_DELTA_MARGIN)))
