"""The one spec builder of the command line: a subcommand's arguments -> the release it asks
for, checked once -> the protocol's [`ReleaseSpec`][dpauc_tf.mechanisms.release.ReleaseSpec].

Two steps, so that every refusal that needs no TensorFlow comes before its import:

1. [`release_request`][] (pure Python): the mechanism (``--mechanism``, or the registry's
   default for what is asked), the ``--epsilon`` rule, ``--delta``, the grid
   (``--num-thresholds``, ``--threshold-grid`` or a ``--thresholds`` file), the
   ``--mechanism-option`` pairs parsed by their declared types, and ``--seed``: a
   [`ReleaseRequest`][] of typed values.
2. [`ReleaseRequest.spec`][]: the one
   [`ReleaseArguments.spec`][dpauc_tf.mechanisms.arguments.ReleaseArguments.spec] (which builds the mechanism once,
   with the registry's one-line refusals); ``num_thresholds="auto"`` is resolved there from
   the number of examples.

Backends receive the spec (or values read off it), never the arguments.

Examples:
    >>> import argparse
    >>> args = argparse.Namespace(mechanism=None, epsilon=1.0, delta=None, num_thresholds=100,
    ...                           threshold_grid="tf", thresholds=None, mechanism_options=[],
    ...                           seed=0)
    >>> request = release_request(args, needs_curve=False)
    >>> request.mechanism, request.epsilon, request.num_thresholds
    ('rank-sum', 1.0, 100)
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from dpauc_tf.cli.arguments import MAX_NUM_THRESHOLDS
from dpauc_tf.cli.default_mechanism import require_epsilon, resolve_mechanism
from dpauc_tf.cli.errors import CommandError
from dpauc_tf.mechanisms.laws import Deployment
from dpauc_tf.mechanisms.registry import parse_options


@dataclasses.dataclass(frozen=True)
class ReleaseRequest:
    """The release a command asks for, checked: typed values, no TensorFlow.

    Attributes:
      mechanism: the registered mechanism's name (the default rule already applied).
      epsilon: ``--epsilon`` (``None`` only for a mechanism without noise).
      delta: ``--delta``.
      num_thresholds: ``T``, or ``"auto"`` until the number of examples is known.
      threshold_grid: ``"tf"``, ``"reference"`` or the inner thresholds of a file.
      thresholds_file: the ``--thresholds`` file the grid was read from, if any.
      option_pairs: the ``--mechanism-option`` pairs as given (each key once; parsed by
        their declared types in ``options()``, which needs the
        mechanism classes, so TensorFlow).
      seed: ``--seed``.

    Examples:
        >>> request = ReleaseRequest("histogram", 1.0, None, 10, "tf", None, (), 0)
        >>> request.spec().build().name
        'histogram'
    """

    mechanism: str
    epsilon: float | None
    delta: float | None
    num_thresholds: int | str
    threshold_grid: str | tuple[float, ...]
    thresholds_file: str | None
    option_pairs: tuple[tuple[str, Any], ...]
    seed: int | None

    @property
    def grid_name(self) -> str:
        """``"tf"``, ``"reference"`` or ``"explicit"`` (a ``--thresholds`` file)."""
        return self.threshold_grid if isinstance(self.threshold_grid, str) else "explicit"

    def options(self) -> dict[str, Any]:
        """The ``--mechanism-option`` pairs as the options of ``get_mechanism``, each parsed by
        its declared type (``public_scores=no`` is ``False``; registry.parse_options), in the
        order given; one line naming ``--mechanism-option`` otherwise."""
        options = dict(self.option_pairs)
        if not options:
            return options
        try:
            return parse_options(self.mechanism, options)
        except ValueError as error:
            raise CommandError(f"--mechanism-option: {error}") from None

    def spec(self, options: dict[str, Any] | None = None, num_examples: float | None = None):
        """The [`ReleaseSpec`][dpauc_tf.mechanisms.release.ReleaseSpec] with ``options`` (the
        parsed ``options()``, parsed here when not given): the
        mechanism is built once there, and refused in one line (an option's error names
        ``--mechanism-option``). ``num_examples`` resolves ``--num-thresholds auto``."""
        from dpauc_tf.mechanisms.arguments import ReleaseArguments

        options = self.options() if options is None else options
        arguments = ReleaseArguments(
            self.epsilon,
            self.mechanism,
            num_thresholds=self.num_thresholds,
            threshold_grid=self.threshold_grid,
            delta=self.delta,
            mechanism_options=options,
            seed=self.seed,
        )
        try:
            return arguments.spec(num_examples=num_examples)  # options parsed: as given
        except (TypeError, ValueError) as error:
            if not options:
                raise
            raise CommandError(f"--mechanism-option: {error}") from None


def release_request(
    args, *, needs_curve: bool, deployment: Deployment | str = Deployment.CENTRAL
) -> ReleaseRequest:
    """The checked [`ReleaseRequest`][] of a subcommand's arguments (``mechanism``,
    ``epsilon``, ``delta``, ``num_thresholds``, ``threshold_grid``, ``thresholds``,
    ``mechanism_options`` and ``seed``); ``needs_curve`` (a curve is asked for) and
    ``deployment`` (where the labels are) select the default mechanism. Every check of these
    arguments is made here, once."""
    mechanism = resolve_mechanism(
        args.mechanism, args.epsilon, args.delta, needs_curve=needs_curve, deployment=deployment
    )
    require_epsilon(mechanism, args.epsilon)
    pairs = list(getattr(args, "mechanism_options", None) or [])
    if len(dict(pairs)) != len(pairs):
        raise CommandError("--mechanism-option: an option is given twice")
    thresholds_file = getattr(args, "thresholds", None) or None
    num_thresholds, grid = args.num_thresholds, args.threshold_grid
    if thresholds_file:  # as tf.keras.metrics.AUC(thresholds=...) takes them: both ends added
        grid = tuple(read_thresholds(thresholds_file))
        num_thresholds = len(grid) + 2
    return ReleaseRequest(
        mechanism=mechanism,
        epsilon=args.epsilon,
        delta=args.delta,
        num_thresholds=num_thresholds,
        threshold_grid=grid,
        thresholds_file=thresholds_file,
        option_pairs=tuple(pairs),
        seed=args.seed,
    )


def read_thresholds(path: str) -> list[float]:
    """The numbers in ``path`` (separated by newlines, commas or spaces): finite, at most
    `MAX_NUM_THRESHOLDS` of them, at least one."""
    text = _read_text(path)
    values = []
    for token in text.replace(",", " ").split():
        try:
            value = float(token)
        except ValueError:
            raise CommandError(
                f"--thresholds {path}: not a number: {token!r}{_invisible(token)}"
            ) from None
        if not math.isfinite(value):
            raise CommandError(f"--thresholds {path}: not a finite number: {token!r}")
        values.append(value)
    if not values:
        raise CommandError(f"--thresholds {path}: no thresholds in the file")
    if len(values) + 2 > MAX_NUM_THRESHOLDS:
        raise CommandError(
            f"--thresholds {path}: {len(values)} thresholds; at most {MAX_NUM_THRESHOLDS - 2}"
        )
    return values


def _read_text(path: str) -> str:
    """The text of a thresholds file: UTF-8 (a byte-order mark, as editors on Windows write,
    is dropped), or UTF-16 where its byte-order mark says so."""
    import codecs

    from dpauc_tf.io.errors import ScoreFileError
    from dpauc_tf.io.paths import read_regular_bytes

    try:  # room for every allowed threshold in full (24 characters, twice in UTF-16)
        raw = read_regular_bytes(path, 64 * MAX_NUM_THRESHOLDS, "--thresholds")
    except ScoreFileError as error:  # a pipe, a device, a directory, too large, missing
        raise CommandError(str(error)) from None
    utf16 = raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE))
    try:
        return raw.decode("utf-16" if utf16 else "utf-8-sig")
    except UnicodeDecodeError as error:
        raise CommandError(
            f"--thresholds {path}: cannot read it: not {'UTF-16' if utf16 else 'UTF-8'} text "
            f"(byte {error.object[error.start]:#04x} at offset {error.start}); save it as UTF-8 "
            "text, numbers separated by commas, spaces or newlines"
        ) from None


def _invisible(token: str) -> str:
    """`` (it holds U+200B ZERO WIDTH SPACE, ...)`` for characters one cannot see, else ``""``."""
    import unicodedata

    hidden = sorted(
        {c for c in token if unicodedata.category(c) in ("Cc", "Cf", "Co", "Cn", "Zs", "Zl")}
    )
    if not hidden:
        return ""
    names = ", ".join(f"U+{ord(c):04X} {unicodedata.name(c, 'unnamed')}" for c in hidden)
    return f" (it holds {names}: characters that do not show; remove them)"
