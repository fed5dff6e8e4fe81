"""``--confidence`` of ``dpauc evaluate``: the interval of every release and its lines.

The interval is post-processing of the release (no privacy cost):
[`dpauc_tf.mechanisms.intervals.release_interval`][]; ``docs/intervals.md``.
"""

from __future__ import annotations

from typing import Any

from dpauc_tf.cli.errors import CommandError


def check_confidence(confidence: float | None, mechanism) -> None:
    """Refuses ``--confidence`` before any work where the mechanism has no valid interval."""
    if confidence is None:
        return
    from dpauc_tf.mechanisms.intervals import check_interval_support

    try:
        check_interval_support(mechanism)
    except ValueError as error:
        raise CommandError(f"--confidence: {error}") from None


def with_confidence(run, result, mechanism, num_examples: int):
    """``result`` with the interval of every release at ``run.confidence`` (``result``
    itself without ``--confidence``): the backend's own where it computed one (it takes
    the confidence: `Backend.takes_confidence`), else the release's own
    ([`dpauc_tf.mechanisms.release.with_interval`][], the finish's interval): from its counts
    and the reports that arrived, never from the number of clients asked (after a dropout,
    fewer noise shares). ``mechanism`` is the one the release was built with."""
    if run.confidence is None or result is None:
        return result
    from dpauc_tf.mechanisms.release import with_interval

    if not getattr(result, "noisy_counts", None) and result.interval is None:
        raise CommandError(
            f"--confidence: --backend {run.backend} returns no release counts here yet; "
            "use --backend simulate, beam or spark"
        )
    try:  # num_examples: public under label DP, the counted file's
        return with_interval(
            result,
            mechanism,
            confidence=run.confidence,
            ci_target=run.ci_target,
            num_examples=num_examples,
        )
    except ValueError as error:
        raise CommandError(f"--confidence: {error}") from None


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
