"""``flower``: every client's examples through one Flower evaluate round
([`dpauc_tf.flower.evaluate.evaluate_spec`][], the same ``ServerApp`` and ``ClientApp`` pieces
as a ``flwr run`` app; all repeats in that round; ``secure-rank-sum`` in two exchanges).

The engine is Flower's simulation engine (``run_simulation`` on local Ray) unless the
environment variable `ENGINE_VARIABLE` (``DPAUC_FLOWER_ENGINE=in-process``) or the
``engine`` setting selects the in-process grid (`dpauc_tf.flower.local`; no Ray).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from dpauc_tf.backends import Backend, BackendName, EvaluationData

ENGINE_VARIABLE = "DPAUC_FLOWER_ENGINE"


class FlowerBackend(Backend):
    """A spec's releases in one Flower evaluate round over the clients' examples.

    Args:
      round_timeout: seconds the server waits for each exchange (``None``: the library's
        default, `dpauc_tf.flower.evaluate.DEFAULT_ROUND_TIMEOUT`).
      engine: ``"simulation"`` (Ray) or ``"in-process"``; ``None``: `ENGINE_VARIABLE`,
        else ``"simulation"``.
      on_round: called with the round's result (its ``round_report``: who did not answer
        or failed) before it is returned.

    Examples:
        >>> FlowerBackend.federated, FlowerBackend.requires
        (True, ('flwr', 'flower'))
        >>> FlowerBackend(engine="in-process").engine
        'in-process'
    """

    name = BackendName.FLOWER
    federated = True
    requires = ("flwr", "flower")

    def __init__(
        self,
        round_timeout: float | None = None,
        engine: str | None = None,
        on_round: Callable[[Any], None] | None = None,
    ) -> None:
        self.round_timeout = round_timeout
        self.engine = engine or os.environ.get(ENGINE_VARIABLE) or "simulation"
        self.on_round = on_round

    @classmethod
    def check_installed(cls) -> None:
        """Flower and Ray (its simulation engine), or the one line naming the extra."""
        super().check_installed()
        from dpauc_tf.flower.evaluate import require_flower

        require_flower()

    def evaluate(
        self, spec, data: EvaluationData, *, repeats=1, confidence=None, ci_target="population"
    ):
        self.check_installed()
        from dpauc_tf.flower.evaluate import DEFAULT_ROUND_TIMEOUT, evaluate_spec

        out = evaluate_spec(
            spec,
            data.client_partition("--backend flower"),
            repeats=repeats,
            engine=self.engine,
            round_timeout=DEFAULT_ROUND_TIMEOUT
            if self.round_timeout is None
            else self.round_timeout,
            confidence=confidence,
            ci_target=ci_target,
        )
        if self.on_round is not None:
            self.on_round(out)
        return out
