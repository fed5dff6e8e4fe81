"""What ``dpauc evaluate`` releases when ``--mechanism`` is not given (as ``DPAUC``'s default).

Examples:
    >>> import argparse
    >>> args = argparse.Namespace(mechanism=None, epsilon=1.0, delta=None, clients=None,
    ...                           client_column=None, backend="simulate", plot=None)
    >>> resolve_mechanism(args)
    'rank-sum'
"""

from __future__ import annotations

from dpauc_tf.cli.errors import CommandError
from dpauc_tf.mechanisms.registry import default_mechanism, mechanism_spec

FEDERATED_BACKENDS = ("tff", "flower")


def resolve_mechanism(args) -> str:
    """``--mechanism``, or the registry's default for what is asked (as ``DPAUC``'s,
    [`dpauc_tf.mechanisms.registry.default_mechanism`][]):
    ``rank-sum`` (``auc-only`` with ``--delta``) for one data holder's AUC; ``histogram`` when
    a curve (``--plot``) or clients (``--clients``, ``--client-column``, a federated
    backend) are asked for. Without ``--epsilon`` and ``--mechanism``: refused."""
    if args.mechanism is not None:
        return args.mechanism
    if args.epsilon is None:
        raise CommandError(
            "give --epsilon for a private AUC (or --mechanism NAME; --mechanism none is the "
            "exact AUC, NOT private)"
        )
    clients = (args.clients or 1) > 1 or bool(getattr(args, "client_column", None))
    federated = getattr(args, "backend", None) in FEDERATED_BACKENDS
    needs_curve = clients or federated or bool(getattr(args, "plot", None))
    return default_mechanism(delta=args.delta, needs_curve=needs_curve)


def require_epsilon(mechanism: str, epsilon: float | None) -> None:
    """The command line's one rule for ``--epsilon`` (``evaluate`` and ``multiclass``): a
    private mechanism needs it, and the exact (no noise) result is asked for explicitly with
    ``--mechanism none`` (no epsilon); a missing epsilon never means "no noise"."""
    private = mechanism_spec(mechanism).capabilities.protects != "nothing"
    if not private and epsilon is not None:
        raise CommandError(f"mechanism {mechanism!r} adds no noise: leave --epsilon unset")
    if private and epsilon is None:
        raise CommandError(f"mechanism {mechanism!r} needs --epsilon")
