"""The argument types, limits and parser of every ``dpauc`` subcommand (pure Python: building
a parser imports neither NumPy's users nor TensorFlow).

An argument type turns the text of one flag into a checked value, or raises
``argparse.ArgumentTypeError`` with a one-line reason; [`OneLineParser`][] prints that line as
``dpauc: error: ...`` (exit status 2).

Examples:
    >>> positive_int("3"), seed_int("0"), num_thresholds_or_auto("AUTO")
    (3, 0, 'auto')
    >>> mechanism_option("public-scores=false")
    ('public_scores', False)
    >>> confidence("1.5")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: must be a number in (0, 1), e.g. 0.95, got '1.5'
"""

from __future__ import annotations

import argparse
import json
import math
from typing import Any

from dpauc_tf.cli.errors import CommandError
from dpauc_tf.cli.formats import OutputFormat

# Mirrors of dpauc_tf.io.streaming's defaults (help imports no numpy; a test checks).
DEFAULT_MAX_ROWS_IN_MEMORY = 2_000_000
DEFAULT_CHUNK_ROWS = 1 << 20
# Mirror of dpauc_tf.flower.evaluate.DEFAULT_ROUND_TIMEOUT (help imports no Flower; a test checks).
DEFAULT_FLOWER_ROUND_TIMEOUT = 600.0
MIN_CHUNK_ROWS = 1000
MAX_NUM_THRESHOLDS = 10**6
MAX_CURVE_VALUES = 5 * 10**7  # repeats x thresholds kept in memory (two float64 arrays)
MAX_SEED = 2**64 - 1
PARTITION_NAMES = {"iid": "iid", "noniid": "non-iid", "non-iid": "non-iid"}


def int_at_least(minimum: int, maximum: int | None = None):
    """An argparse type: an integer in ``[minimum, maximum]``, with a one-line error otherwise."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected an integer >= {minimum}, got {value}")
        if maximum is not None and value > maximum:
            raise argparse.ArgumentTypeError(f"expected an integer <= {maximum}, got {value}")
        return value

    return parse


positive_int = int_at_least(1)
seed_int = int_at_least(0, MAX_SEED)
num_thresholds_int = int_at_least(1, MAX_NUM_THRESHOLDS)


def chunk_rows(text: str) -> int:
    """``--chunk-rows``: at least `MIN_CHUNK_ROWS` examples per chunk."""
    value = positive_int(text)
    if value < MIN_CHUNK_ROWS:
        raise argparse.ArgumentTypeError(
            f"expected at least {MIN_CHUNK_ROWS} examples per chunk, got {value}: each chunk "
            "costs milliseconds whatever its size (a 10-million-row file in chunks of 1 would "
            f"take hours), and {MIN_CHUNK_ROWS} examples take well under 1 MB"
        )
    return value


def num_thresholds_or_auto(text: str) -> int | str:
    """``--num-thresholds``: an integer, or ``auto`` (a grid that suits the number of
    examples: dpauc_tf.mechanisms.auto_grid)."""
    return "auto" if text.strip().lower() == "auto" else num_thresholds_int(text)


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None


def finite_float(text: str) -> float:
    """A finite number."""
    value = _number(text)
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def positive_float(text: str) -> float:
    """A finite number > 0 (an epsilon, a scale)."""
    value = _number(text)
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"must be finite and > 0, got {text}")
    return value


def number_between(low: float, high: float):
    """An argparse type: a number strictly between ``low`` and ``high`` (a rate, a level).

    Examples:
        >>> number_between(0.5, 1)("0.9")
        0.9
    """

    def parse(text: str) -> float:
        value = _number(text)
        if not low < value < high:
            raise argparse.ArgumentTypeError(f"must be in ({low:g}, {high:g}), got {text}")
        return value

    return parse


def positive_seconds(text: str) -> float:
    """A positive, finite number of seconds."""
    value = finite_float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def confidence(text: str) -> float:
    """A confidence level strictly between 0 and 1."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"must be a number in (0, 1), e.g. 0.95, got {text!r}")
    return value


# options that have their own flags
RESERVED_OPTIONS = {
    "epsilon": "--epsilon",
    "delta": "--delta",
    "num_thresholds": "--num-thresholds or --thresholds",
    "num_clients": "--clients",
}


def mechanism_option(text: str) -> tuple[str, Any]:
    """``KEY=VALUE``: VALUE as JSON where it parses (numbers, lists, true/false), else text."""
    key, sep, raw = text.partition("=")
    key = key.strip().replace("-", "_")
    if not sep or not key.isidentifier():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    if key in RESERVED_OPTIONS:
        raise argparse.ArgumentTypeError(f"{key} is set by {RESERVED_OPTIONS[key]}")
    try:
        value = json.loads(raw)
    except ValueError:
        value = raw
    if isinstance(value, float) and not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number for {key}, got {raw!r}")
    return key, value


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Help that shows every meaningful default and keeps the epilog's lines."""

    def _get_help_string(self, action):
        text = action.help or ""
        default = action.default
        if "%(default)" in text or default in (None, False) or default is argparse.SUPPRESS:
            return text
        return f"{text} (default: %(default)s)"


class OneLineParser(argparse.ArgumentParser):
    """argparse with one-line errors (no usage dump), exit status 2."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str):  # type: ignore[override]
        raise CommandError(message)


def add_common_flags(parser: argparse.ArgumentParser, default_format: str = "table") -> None:
    """``--format`` and ``--debug``, the same for every subcommand."""
    parser.add_argument(
        "--format", choices=OutputFormat.values(), default=default_format, help="output format"
    )
    parser.add_argument(
        "--debug", action="store_true", help="show a traceback instead of the one-line error"
    )
