"""``--confidence`` of ``dpauc evaluate``: the interval of every release and its lines.

The interval is post-processing of the release (no privacy cost):
[`dpauc_tf.mechanisms.intervals.release_interval`][]; ``docs/intervals.md``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpauc_tf.cli.main import CommandError


def check_confidence(args, mechanism) -> None:
    """Refuses ``--confidence`` before any work where the mechanism has no valid interval."""
    if getattr(args, "confidence", None) is None:
        return
    from dpauc_tf.mechanisms.intervals import check_interval_support

    try:
        check_interval_support(mechanism)
    except ValueError as error:
        raise CommandError(f"--confidence: {error}") from None


def interval_fields(args, mechanism, result, num_examples, num_clients) -> dict[str, Any]:
    """``confidence``, ``ci_target`` and ``releases`` (one object per release: auc, ci_low,
    ci_high, ci_target, privacy_share, ...) with ``--confidence``; nothing otherwise.

    The interval is the release's own ([`dpauc_tf.mechanisms.release.with_interval`][]):
    computed from its counts and the reports that arrived, never from the number of
    clients asked (after a dropout, fewer noise shares)."""
    del num_clients  # the release's own: clients asked and reports that arrived
    confidence = getattr(args, "confidence", None)
    if confidence is None or result is None:
        return {}
    from dpauc_tf.mechanisms.release import interval_releases, with_interval

    if not getattr(result, "noisy_counts", None) and result.interval is None:
        raise CommandError(
            f"--confidence: --backend {args.backend} returns no release counts here yet; "
            "use --backend simulate, beam or spark"
        )
    try:  # num_examples: public under label DP, the counted file's
        interval = with_interval(
            result,
            mechanism,
            confidence=confidence,
            ci_target=args.ci_target,
            num_examples=num_examples,
        ).interval
    except ValueError as error:
        raise CommandError(f"--confidence: {error}") from None
    return {  # the same objects as AUCResult.to_dict()
        "confidence": interval.confidence,
        "ci_target": interval.target,
        "releases": interval_releases(np.asarray(result.aucs), interval),
    }


def interval_lines(result: dict[str, Any]) -> list[str]:
    """The interval of the first release (and how many releases have one) for the table."""
    first = result["releases"][0]
    level = f"{100 * result['confidence']:g}%"
    if first["ci_low"] is None:
        several = len(result["releases"]) > 1
        text = (
            ("undefined (the first release's AUC is undefined)" if several else "undefined")
            if first["auc"] is None
            else "undefined (its variance could not be estimated from the release)"
        )
    else:
        text = f"[{first['ci_low']:.6f}, {first['ci_high']:.6f}] ({level}, {first['ci_target']} AUC"
        text += ", first release)" if len(result["releases"]) > 1 else ")"
    lines = [f"interval         {text}"]
    if first["privacy_share"] is not None:
        lines.append(
            f"privacy share    {100 * first['privacy_share']:.1f}% of the variance (privacy std "
            f"{first['privacy_std']:.2g}, sampling SE {first['sampling_se']:.2g})"
        )
    return lines
