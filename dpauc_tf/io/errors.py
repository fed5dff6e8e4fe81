"""The one-line errors of reading score files, and how they quote a file: the bottom of
``dpauc_tf.io`` (every other module of it imports this one; it imports none of them).

Examples:
    >>> str(ScoreFileError("--scores x.csv: no column 'score'"))
    "--scores x.csv: no column 'score'"
"""

from __future__ import annotations


class ScoreFileError(ValueError):
    """A score file or score set that cannot be evaluated (message fits on one line)."""


EXCERPT_CHARS = 80  # the most of a file's own text that an error message quotes


def excerpt(text: object, limit: int = EXCERPT_CHARS) -> str:
    """``text`` on one line, cut to ``limit`` characters (``...`` marks a cut): what an
    error quotes of a file, never its contents.

        >>> excerpt("a" * 100, 10)
        'aaaaaaa...'
    """
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: max(limit - 3, 0)] + "..."


def column_excerpt(names, limit: int = EXCERPT_CHARS) -> str:
    """A file's column names for an error message, cut to ``limit`` characters: a file read
    in the wrong format (JSON as CSV) has its data where the names should be, so its names
    are not echoed whole (they may hold every score and label).

        >>> column_excerpt(["score", "label"])
        "'score', 'label'"
        >>> column_excerpt(['[{"score": 0.1', '"label": 1}'] * 3000)
        '6000 names that look like data (is it JSON? CSV needs a header row of column names)'
    """
    names = [str(name) for name in names]
    if not names:
        return "none"
    if names[0].lstrip().startswith(("{", "[")):
        return (
            f"{len(names)} names that look like data (is it JSON? CSV needs a header row "
            "of column names)"
        )
    text = excerpt(", ".join(map(repr, names)), limit)
    return text if len(names) <= 5 else f"{text} ({len(names)} columns)"
