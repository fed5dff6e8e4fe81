"""The release a ``dpauc`` command asks for, from its arguments."""

from __future__ import annotations

from typing import Any

from dpauc_tf.cli.errors import CommandError
from dpauc_tf.mechanisms.registry import parse_options


def mechanism_options(args) -> dict[str, Any]:
    """The ``--mechanism-option KEY=VALUE`` pairs as the options of ``get_mechanism``, each
    parsed by its declared type (``public_scores=no`` is ``False``; registry.parse_options)."""
    pairs = getattr(args, "mechanism_options", None) or []
    options = dict(pairs)
    if len(options) != len(pairs):
        raise CommandError("--mechanism-option: an option is given twice")
    if not options:
        return options
    try:
        return parse_options(args.mechanism, options)
    except ValueError as error:
        raise CommandError(f"--mechanism-option: {error}") from None


def release_settings(args) -> dict[str, Any]:
    """What every backend's evaluation function (TFF, Beam, Flower) takes from the
    command line to build the release: the mechanism, its budget, grid and options."""
    return {
        "mechanism": args.mechanism,
        "epsilon": args.epsilon,
        "delta": args.delta,
        "num_thresholds": args.num_thresholds,
        "threshold_grid": args.threshold_grid,
        "mechanism_options": mechanism_options(args),
    }


def release_spec(args):
    """The command's release as the protocol's [`ReleaseSpec`][dpauc_tf.mechanisms.release.ReleaseSpec]
    (mechanism, budget, grid, options and ``--seed``)."""
    from dpauc_tf.mechanisms.release import ReleaseSpec

    options = mechanism_options(args)
    try:
        return ReleaseSpec.make(
            args.mechanism,
            epsilon=args.epsilon,
            num_thresholds=args.num_thresholds,
            threshold_grid=args.threshold_grid,
            delta=args.delta,
            options=options,
            seed=args.seed,
        )
    except (TypeError, ValueError) as error:
        if not options:
            raise
        raise CommandError(f"--mechanism-option: {error}") from None
