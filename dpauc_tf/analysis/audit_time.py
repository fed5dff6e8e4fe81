"""How long [`dpauc_tf.analysis.audit.run_audit`][] will take, estimated before it starts.

``dpauc audit`` states the estimate and refuses past ``--time-limit``: an audit's time grows
with ``samples`` and with the released coordinates (``--num-thresholds``), and at
``--num-thresholds 1000000`` the default 4,000,000 samples would run for weeks.
"""

from __future__ import annotations

import time

from dpauc_tf.analysis.audit import (
    _DIRECTION_REPEATS,
    _num_coordinates,
    _release_matrix,
    _ScoreAudit,
    chunk_rows,
)
from dpauc_tf.analysis.audit_pairs import pair_for
from dpauc_tf.core.defaults import DEFAULT_AUDIT_NUM_THRESHOLDS, DEFAULT_AUDIT_SAMPLES
from dpauc_tf.mechanisms.arguments import ReleaseArguments
from dpauc_tf.mechanisms.base import CountMechanism


def estimate_audit_seconds(
    mechanism: str | CountMechanism,
    epsilon: float | None = None,
    *,
    delta: float | None = None,
    num_thresholds: int = DEFAULT_AUDIT_NUM_THRESHOLDS,
    samples: int = DEFAULT_AUDIT_SAMPLES,
    flip_weight: float = 1.0,
    **mechanism_kwargs,
) -> float:
    """The seconds [`run_audit`][dpauc_tf.analysis.audit.run_audit] with these arguments would take on this machine, from a
    timed pilot: one chunk of releases ([`chunk_rows`][dpauc_tf.analysis.audit.chunk_rows], at most 1,000 releases, after one
    release that warms the mechanism up) times the releases the audit draws (both neighbours'
    ``samples``, and the direction's repeats for label DP). An estimate, to warn or refuse
    before a run of days; the pilot takes about two chunks' time."""
    if isinstance(mechanism, str):
        mechanism = ReleaseArguments(
            epsilon,
            mechanism,
            num_thresholds=num_thresholds,
            delta=delta,
            mechanism_options=mechanism_kwargs,
        ).build()
    if mechanism.epsilon is None:
        return 0.0  # run_audit refuses it at once
    if mechanism.capabilities.protects == "scores":
        audit = _ScoreAudit(mechanism, flip_weight, _NoBar())  # checks the release first
        rows = 1_000

        def draw(seed, size):
            for _ in audit._statistic(0, [(seed, size)]):
                pass

        direction = 0
    else:
        pair = pair_for(mechanism, flip_weight)
        rows = min(chunk_rows(_num_coordinates(mechanism, pair)), 1_000)  # and a warm-up

        def draw(seed, size):
            _release_matrix(mechanism, pair.pos, pair.neg, seed, size)

        direction = 2 * _DIRECTION_REPEATS
    draw(0, 1)
    start = time.perf_counter()
    draw(1, rows)
    per_release = (time.perf_counter() - start) / rows
    return per_release * (direction + 2 * samples)


class _NoBar:
    def update(self, size: int) -> None:
        pass
