"""What ``dpauc evaluate`` releases when ``--mechanism`` is not given (as ``DPAUC``'s default):
the spec's rule ([`ReleaseArguments.named`][dpauc_tf.mechanisms.arguments.ReleaseArguments.named],
the registry's [`dpauc_tf.mechanisms.registry.default_mechanism`][]) for what is asked and for
the deployment the flags describe ([`deployment_of`][]).

Examples:
    >>> resolve_mechanism(None, 1.0, None, needs_curve=False)
    'rank-sum'
    >>> resolve_mechanism(None, 1.0, None, needs_curve=True)
    'histogram'
    >>> resolve_mechanism(None, 1.0, None, needs_curve=False,
    ...                   deployment=deployment_of("simulate", clients=True))
    'rank-sum'
    >>> resolve_mechanism(None, 1.0, None, needs_curve=False,
    ...                   deployment=deployment_of("tff", clients=True))
    'secure-rank-sum'
"""

from __future__ import annotations

from dpauc_tf.backends import REGISTRY, backend_class
from dpauc_tf.cli.errors import CommandError
from dpauc_tf.mechanisms.laws import Deployment
from dpauc_tf.mechanisms.registry import mechanism_spec

# The backends that run a federated protocol, with secure aggregation for the secure
# mechanisms (TFF's secure sum, Flower's SecAgg+): their classes' ``federated``.
FEDERATED_BACKENDS = tuple(str(name) for name in REGISTRY if backend_class(name).federated)


def deployment_of(backend: str, *, clients: bool) -> Deployment:
    """The [`Deployment`][dpauc_tf.mechanisms.laws.Deployment] that ``dpauc evaluate``'s flags
    describe, for the default mechanism.

    * ``--backend tff`` or ``flower``: ``SECURE`` (they sum the clients' reports by secure
      aggregation: TFF's secure sum, Flower's SecAgg+), with or without ``--clients``;
    * ``--clients K`` (K > 1) or ``--client-column`` on ``simulate``, ``beam`` or ``spark``:
      ``FEDERATED``. These backends have no secure aggregation: the honest default is the
      release whose every client report is private on its own (each client adds its own
      noise). Secure aggregation is asked for by naming a secure mechanism
      (``--mechanism secure-rank-sum``), whose simulation draws the secure sum's law;
    * otherwise ``CENTRAL`` (one data holder's file).

    Examples:
        >>> [deployment_of(b, clients=c).value for b, c in
        ...  [("simulate", False), ("simulate", True), ("flower", False), ("spark", True)]]
        ['central', 'federated', 'secure', 'federated']
    """
    if backend in FEDERATED_BACKENDS:
        return Deployment.SECURE
    return Deployment.FEDERATED if clients else Deployment.CENTRAL


def resolve_mechanism(
    mechanism: str | None,
    epsilon: float | None,
    delta: float | None,
    *,
    needs_curve: bool,
    deployment: Deployment | str = Deployment.CENTRAL,
) -> str:
    """``--mechanism``, or the spec's default for what is asked and where
    ([`ReleaseArguments.named`][dpauc_tf.mechanisms.arguments.ReleaseArguments.named]; ``deployment`` from
    [`deployment_of`][]): for the ROC AUC ``rank-sum`` (``auc-only`` with ``--delta``) for
    one data holder, ``rank-sum`` with local noise per client for ``--clients`` /
    ``--client-column``, ``secure-rank-sum`` for ``--backend tff|flower``; where a curve is
    asked for (``needs_curve``: ``--plot``, the evaluation summaries) ``histogram``, or
    ``secure-histogram`` for ``--backend tff|flower``. Without ``--epsilon`` and
    ``--mechanism``: refused."""
    if mechanism is None and epsilon is None:
        raise CommandError(
            "give --epsilon for a private AUC (or --mechanism NAME; --mechanism none is the "
            "exact AUC, NOT private)"
        )
    from dpauc_tf.mechanisms.arguments import ReleaseArguments  # TensorFlow: after refusals

    arguments = ReleaseArguments(epsilon, mechanism, delta=delta)
    return arguments.named(deployment, needs_curve=needs_curve).mechanism


def require_epsilon(mechanism: str, epsilon: float | None) -> None:
    """The command line's one rule for ``--epsilon`` (``evaluate`` and ``multiclass``): a
    private mechanism needs it, and the exact (no noise) result is asked for explicitly with
    ``--mechanism none`` (no epsilon); a missing epsilon never means "no noise"."""
    private = mechanism_spec(mechanism).capabilities.protects != "nothing"
    if not private and epsilon is not None:
        raise CommandError(f"mechanism {mechanism!r} adds no noise: leave --epsilon unset")
    if private and epsilon is None:
        raise CommandError(f"mechanism {mechanism!r} needs --epsilon")
