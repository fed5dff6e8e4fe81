"""What ``dpauc evaluate`` releases when ``--mechanism`` is not given (as ``DPAUC``'s default).

Examples:
    >>> resolve_mechanism(None, 1.0, None, needs_curve=False)
    'rank-sum'
    >>> resolve_mechanism(None, 1.0, None, needs_curve=True)
    'histogram'
"""

from __future__ import annotations

from dpauc_tf.cli.errors import CommandError
from dpauc_tf.mechanisms.registry import default_mechanism, mechanism_spec

FEDERATED_BACKENDS = ("tff", "flower")


def resolve_mechanism(
    mechanism: str | None, epsilon: float | None, delta: float | None, *, needs_curve: bool
) -> str:
    """``--mechanism``, or the registry's default for what is asked (as ``DPAUC``'s,
    [`dpauc_tf.mechanisms.registry.default_mechanism`][]):
    ``rank-sum`` (``auc-only`` with ``--delta``) for one data holder's AUC; ``histogram`` when
    a curve or clients are asked for (``needs_curve``: ``--plot``, ``--clients``,
    ``--client-column``, a federated backend). Without ``--epsilon`` and ``--mechanism``:
    refused."""
    if mechanism is not None:
        return mechanism
    if epsilon is None:
        raise CommandError(
            "give --epsilon for a private AUC (or --mechanism NAME; --mechanism none is the "
            "exact AUC, NOT private)"
        )
    return default_mechanism(delta=delta, needs_curve=needs_curve)


def require_epsilon(mechanism: str, epsilon: float | None) -> None:
    """The command line's one rule for ``--epsilon`` (``evaluate`` and ``multiclass``): a
    private mechanism needs it, and the exact (no noise) result is asked for explicitly with
    ``--mechanism none`` (no epsilon); a missing epsilon never means "no noise"."""
    private = mechanism_spec(mechanism).capabilities.protects != "nothing"
    if not private and epsilon is not None:
        raise CommandError(f"mechanism {mechanism!r} adds no noise: leave --epsilon unset")
    if private and epsilon is None:
        raise CommandError(f"mechanism {mechanism!r} needs --epsilon")
