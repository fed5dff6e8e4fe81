"""The grid of ``dpauc evaluate``: ``--num-thresholds auto`` and the warning when the
privacy noise would exceed the sampling error (``docs/small_test_sets.md``)."""

from __future__ import annotations

import sys


def resolve_auto_thresholds(args, count_scores) -> str | None:
    """``--num-thresholds auto``: one quick pass counts the examples (public under label
    DP: the same for every labelling), then the grid that suits them
    ([`dpauc_tf.mechanisms.auto_grid.auto_num_thresholds`][])."""
    if args.num_thresholds != "auto":
        return None
    from dpauc_tf.core.thresholds import Thresholds
    from dpauc_tf.mechanisms.auto_grid import auto_num_thresholds

    plot, args.plot, args.num_thresholds = args.plot, None, 2
    try:
        counted = count_scores(args, Thresholds.make(2))
    finally:
        args.plot = plot
    n = counted.num_examples
    args.num_thresholds = auto_num_thresholds(n, args.epsilon, args.mechanism)
    return (
        f"auto: {args.num_thresholds} thresholds for n = {n} examples at epsilon "
        f"{args.epsilon} (n is public under label DP: no budget is spent on it)"
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
