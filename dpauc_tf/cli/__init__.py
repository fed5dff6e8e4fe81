"""The ``dpauc`` command line (also ``python -m dpauc_tf``); see [`dpauc_tf.cli.main`][]."""

from dpauc_tf.cli.main import main

__all__ = ["main"]
