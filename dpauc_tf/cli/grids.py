"""The grid of ``dpauc evaluate``: ``--num-thresholds auto`` and the warning when the
privacy noise would exceed the sampling error (``docs/small_test_sets.md``)."""

from __future__ import annotations

import sys


def auto_rule(num_thresholds: int, num_examples: int, epsilon: float | None) -> str:
    """What ``--num-thresholds auto`` chose, and why it costs no budget: a quick pass counted
    the examples (public under label DP: the same for every labelling), then the grid that
    suits them ([`dpauc_tf.mechanisms.auto_grid.auto_num_thresholds`][]).

        >>> auto_rule(50, 1000, 1.0).split(" (")[0]
        'auto: 50 thresholds for n = 1000 examples at epsilon 1.0'
    """
    return (
        f"auto: {num_thresholds} thresholds for n = {num_examples} examples at epsilon "
        f"{epsilon} (n is public under label DP: no budget is spent on it)"
    )


def warn_if_noise_dominates(mechanism, thresholds, num_examples) -> None:
    """One warning line when the release's noise would exceed the sampling error of a
    typical test set of ``num_examples`` (public: the warning reads no label)."""
    from dpauc_tf.mechanisms.auto_grid import noise_dominates_warning, predicted_noise_std

    try:
        privacy, sampling = predicted_noise_std(mechanism, thresholds, num_examples)
    except (ValueError, TypeError, NotImplementedError):
        return
    message = noise_dominates_warning(privacy, sampling)
    if message is not None:
        print(f"dpauc: warning: {message}", file=sys.stderr)
