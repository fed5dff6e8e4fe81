"""``dpauc evaluate``'s note about a column named ``client`` that ``--client-column`` did not
name: client ids come only from a named column (issue 24), so such a column is read as any
other, and a one-line note on stderr says how to use it as client ids.

Examples:
    >>> _first_file_columns("no-such-file.csv")
    []
"""

from __future__ import annotations

import sys


def hint_client_column(path, client_column: str | None, clients: int | None) -> None:
    """A one-line hint on stderr, after a successful run, when the file at ``path`` has a
    column named ``client`` that ``--client-column`` did not name (it is read as any other
    column: one data holder); nothing with ``--client-column`` or ``--clients``."""
    if client_column is not None or clients is not None:
        return
    if "client" in _first_file_columns(path):
        print(
            "dpauc: note: the file has a column named 'client'; it is not read as client ids "
            "(one data holder's release); pass --client-column client for per-client noise",
            file=sys.stderr,
        )


def _first_file_columns(path) -> list[str]:
    """The column names of the first CSV or Parquet file at ``path`` (a hint only: ``[]``
    where they cannot be read cheaply; the reader reports real errors)."""
    try:
        from dpauc_tf.io.readers import csv_source, file_format, score_files

        first = score_files(path)[0]
        kind = file_format(first)
        if kind == "parquet":
            import pyarrow.parquet as pq

            return list(pq.read_schema(first).names)
        if kind == "csv":
            import pandas as pd

            return [str(c) for c in pd.read_csv(csv_source(first), nrows=0).columns]
    except Exception:
        return []
    return []
