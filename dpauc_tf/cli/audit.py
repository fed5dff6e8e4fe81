"""``dpauc audit``: the command-line face of [`dpauc_tf.analysis.audit`][].

Building the parser imports neither TensorFlow nor dp-accounting; running it does.

    >>> import argparse
    >>> parser = argparse.ArgumentParser()
    >>> _ = register_cli(parser.add_subparsers(dest="command"))
    >>> parser.parse_args(["audit", "--mechanism", "histogram", "--epsilon", "1"]).samples
    4000000
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from dpauc_tf.cli.arguments import number_between, positive_float
from dpauc_tf.cli.formats import OutputFormat, format_rows
from dpauc_tf.cli.progress import add_progress_flags, show_progress
from dpauc_tf.core.defaults import DEFAULT_AUDIT_NUM_THRESHOLDS, DEFAULT_AUDIT_SAMPLES

# An audit estimated to take longer is refused unless --time-limit is raised; the estimate is
# printed (stderr) from this many seconds on.
DEFAULT_TIME_LIMIT_S = 3600.0
ANNOUNCE_FROM_S = 10.0


def register_cli(subparsers, common=None) -> argparse.ArgumentParser:
    """Adds ``audit`` to an ``argparse`` sub-command set; the handler is ``args.func(args)``.

    ``dpauc audit --mechanism NAME|all --epsilon E [--delta D] [--samples N] [--seed S]
    [--num-thresholds T] [--flip-weight W] [--confidence C] [--time-limit SECONDS]
    [--format table|json|markdown|csv]
    [--progress auto|on|off] [--no-progress] [--debug]``; ``common(parser)`` adds ``--format``/``--debug`` the way the rest of ``dpauc``
    does (plain ``--format`` and ``--debug`` otherwise); the exit
    status is 0, or 3 when a bound exceeds its claim. ``--confidence`` is family-wise: with
    ``m`` audits (``--mechanism all``) each bound is computed at ``1 - (1 - C) / m``
    (Bonferroni), so the chance that any honest mechanism is reported violated stays below
    ``1 - C``.
    """
    parser = subparsers.add_parser(
        "audit",
        help="empirical privacy audit: a lower confidence bound on a mechanism's epsilon",
        description="Empirical privacy audit: a statistical lower bound on a mechanism's epsilon.",
    )
    parser.add_argument(
        "--mechanism", required=True, help="a mechanism name, or 'all' for every registered one"
    )
    parser.add_argument("--epsilon", type=positive_float, required=True)
    parser.add_argument("--delta", type=float, default=None, help="for Gaussian mechanisms")
    parser.add_argument("--samples", type=int, default=DEFAULT_AUDIT_SAMPLES, help="per neighbour")
    parser.add_argument("--seed", type=int, default=None, help="default: OS entropy")
    parser.add_argument("--num-thresholds", type=int, default=DEFAULT_AUDIT_NUM_THRESHOLDS)
    parser.add_argument(
        "--flip-weight",
        type=positive_float,
        default=1.0,
        help="weight of the flipped example (score-noise: the score it moves to from 0); "
        "> 1 is a negative control that must be caught",
    )
    parser.add_argument(
        "--confidence",
        type=number_between(0.5, 1.0),
        default=0.95,
        help="family-wise confidence of all the bounds together (Bonferroni over the audits)",
    )
    parser.add_argument(
        "--time-limit",
        type=positive_float,
        default=DEFAULT_TIME_LIMIT_S,
        metavar="SECONDS",
        help="refuse an audit whose time, estimated from a short timed pilot before it "
        f"starts, exceeds this (default {DEFAULT_TIME_LIMIT_S:g} s); raise it to run a longer one",
    )
    add_progress_flags(parser)
    if common is not None:
        common(parser)
    else:
        parser.add_argument("--format", choices=OutputFormat.values(), default="table")
        parser.add_argument("--debug", action="store_true", help="show tracebacks")
    parser.set_defaults(func=run_cli)
    return parser


def run_cli(args: argparse.Namespace) -> int:
    """Runs the ``audit`` sub-command; returns the exit status (2 for bad arguments).

    Gaussian-type mechanisms get ``delta = 1e-5`` unless ``--delta`` is given; with
    ``--mechanism all``, ``--delta`` applies to those only.
    """
    try:
        from dpauc_tf.analysis.audit import auditable_mechanisms, format_table, run_audit
        from dpauc_tf.analysis.audit_time import estimate_audit_seconds
        from dpauc_tf.mechanisms.registry import mechanism_class

        names = auditable_mechanisms() if args.mechanism == "all" else [args.mechanism]
        deltas = {}
        for name in names:
            needs_delta = mechanism_class(name).requires_delta
            delta = args.delta
            if needs_delta and delta is None:
                delta = 1e-5
            elif not needs_delta and args.mechanism == "all":
                delta = None
            deltas[name] = delta
        common = dict(
            epsilon=args.epsilon,
            num_thresholds=args.num_thresholds,
            samples=args.samples,
            flip_weight=args.flip_weight,
        )
        if isinstance(args.samples, int) and args.samples >= 200:  # else run_audit says why
            estimate = sum(
                estimate_audit_seconds(name, delta=deltas[name], **common) for name in names
            )
            _check_time(args, estimate, len(names))
        results = []
        for name in names:
            results.append(
                run_audit(
                    name,
                    delta=deltas[name],
                    seed=args.seed,
                    confidence=args.confidence,
                    family_size=len(names),
                    progress=show_progress(args),
                    **common,
                )
            )
    except (ValueError, TypeError) as error:
        if getattr(args, "debug", False):
            raise
        print(f"dpauc audit: error: {error}", file=sys.stderr)
        return 2
    if args.format == "json":
        print(json.dumps([r.to_dict() for r in results], indent=1))
    elif args.format == "table":
        print(format_table(results))
    else:
        print(format_rows([r.to_dict() for r in results], args.format))
    return 3 if any(r.violated for r in results) else 0


def format_duration(seconds: float) -> str:
    """``"42 s"``, ``"3.5 min"``, ``"2.1 h"``, ``"6.1 days"``, ``"3.2 years"``.

    Examples:
        >>> format_duration(42), format_duration(210), format_duration(7560), format_duration(5.3e5)
        ('42 s', '3.5 min', '2.1 h', '6.1 days')
    """
    for unit, size in (("years", 365.25 * 86400), ("days", 86400), ("h", 3600), ("min", 60)):
        if seconds >= (2 if unit in ("years", "days") else 1) * size:
            return f"{seconds / size:.1f} {unit}"
    return f"{seconds:.0f} s"


def _check_time(args: argparse.Namespace, estimate: float, num_audits: int) -> None:
    """Says the estimated time on stderr (from `ANNOUNCE_FROM_S`), and refuses past
    ``--time-limit``: a ``ValueError`` naming what to lower or raise."""
    what = (
        f"{num_audits} audit(s) of {args.samples:,} samples per neighbour at "
        f"--num-thresholds {args.num_thresholds:,}"
    )
    if estimate > args.time_limit:
        raise ValueError(
            f"{what} would take about {format_duration(estimate)} on this machine (estimated "
            f"from a timed pilot), over --time-limit {format_duration(args.time_limit)}; lower "
            "--samples or --num-thresholds, or raise --time-limit to run it"
        )
    if estimate >= ANNOUNCE_FROM_S:
        print(
            f"dpauc audit: {what}: about {format_duration(estimate)} (estimated from a timed "
            "pilot)",
            file=sys.stderr,
        )


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m dpauc_tf.cli.audit ...`` (the same options as ``dpauc audit``)."""
    parser = argparse.ArgumentParser(prog="python -m dpauc_tf.cli.audit")
    register_cli(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["audit", *(sys.argv[1:] if argv is None else argv)])
    return args.func(args)


if __name__ == "__main__":
    raise SystemExit(main())
