"""The user error of every ``dpauc`` subcommand: one line on stderr, exit status 2.

The bottom of ``dpauc_tf.cli``: every other module of it may raise it; it imports none of
them.

    >>> str(CommandError("--clients 5 exceeds the number of examples (3)"))
    '--clients 5 exceeds the number of examples (3)'
"""

from __future__ import annotations


class CommandError(Exception):
    """A user error: printed as one line, exit status 2."""
