"""``--confidence`` of ``dpauc evaluate``: refused before any work where no interval exists,
and the lines of the interval every backend's result carries.

The interval is post-processing of the release (no privacy cost), computed by the release's
finish ([`dpauc_tf.mechanisms.release.finish_release`][], every backend's ``evaluate`` takes
the confidence); ``docs/intervals.md``.
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
