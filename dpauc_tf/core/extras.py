"""How to install an optional extra, in one sentence that works before the package is on a
registry (README.md, "Install")."""

from __future__ import annotations


def install_hint(extra: str) -> str:
    """The install line of the package's optional ``extra``, for error messages.

    Examples:
        >>> install_hint("beam")
        'pip install ".[beam]" in a clone, or "dpauc_tf-VERSION-py3-none-any.whl[beam]"'
    """
    return f'pip install ".[{extra}]" in a clone, or "dpauc_tf-VERSION-py3-none-any.whl[{extra}]"'
