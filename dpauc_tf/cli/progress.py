"""The progress flags, the same on every ``dpauc`` subcommand.

``--progress auto|on|off`` (default ``auto``: a bar on stderr when stderr is a terminal) and
``--no-progress`` (the same as ``--progress off``). Pure Python: no TensorFlow.

Examples:
    >>> import argparse
    >>> parser = argparse.ArgumentParser()
    >>> add_progress_flags(parser)
    >>> [show_progress(parser.parse_args(a)) for a in (["--progress", "on"], ["--no-progress"])]
    [True, False]
"""

from __future__ import annotations

import argparse
import sys

from dpauc_tf.core.vocabulary import Vocabulary


class Progress(Vocabulary):
    """When the commands draw a progress bar (``--progress``)."""

    AUTO = "auto"  # when stderr is a terminal
    ON = "on"
    OFF = "off"


def add_progress_flags(parser: argparse.ArgumentParser) -> None:
    """Adds ``--progress auto|on|off`` and ``--no-progress`` to ``parser``."""
    parser.add_argument(
        "--progress",
        choices=Progress.values(),
        default="auto",
        help="progress bar on stderr (auto: when stderr is a terminal)",
    )
    parser.add_argument(
        "--no-progress",
        dest="progress",
        action="store_const",
        const="off",
        help="no progress bar (the same as --progress off)",
    )


def show_progress(args: argparse.Namespace) -> bool:
    """Whether to draw a progress bar: ``on``, or ``auto`` with stderr a terminal."""
    setting = getattr(args, "progress", "auto")
    if setting == "auto":
        return bool(getattr(sys.stderr, "isatty", lambda: False)())
    return setting == "on"
