"""``dpauc evaluate --backend flower``: the command's own part, the warning naming the clients
a round left out. The round itself is the library's ([`dpauc_tf.backends.flower`][]:
Flower's simulation engine on local Ray, or the in-process grid with
``DPAUC_FLOWER_ENGINE=in-process``); ``--round-timeout SECONDS`` bounds each exchange of the
round (`dpauc_tf.flower.evaluate.DEFAULT_ROUND_TIMEOUT` by default).
"""

from __future__ import annotations

import sys

from dpauc_tf.backends.flower import ENGINE_VARIABLE

__all__ = ["ENGINE_VARIABLE", "warn_left_out"]


def warn_left_out(out) -> None:
    """One warning on stderr naming the clients the round of ``out`` (an ``AUCResult``
    whose ``round_report`` is a
    [`FlowerRoundReport`][dpauc_tf.flower.strategy.FlowerRoundReport]) left out (no answer in
    time, or an error): the AUC then covers only the other clients' examples, and the
    stated epsilon is the one the arrived reports achieve. Nothing when every client
    reported."""
    if out.num_reporting >= out.num_clients:
        return
    left_out, report = [], out.round_report
    if report is not None and report.unanswered:
        left_out.append(
            f"client(s) {list(report.unanswered)} did not answer within --round-timeout"
        )
    if report is not None and report.failed:
        left_out.append(f"client(s) {sorted(report.failed, key=str)} failed")
    print(
        f"dpauc: warning: {out.num_reporting} of {out.num_clients} clients reported"
        + (f" ({'; '.join(left_out)})" if left_out else "")
        + ": the AUC covers only their examples; the stated epsilon is the one their "
        "reports achieve",
        file=sys.stderr,
    )
