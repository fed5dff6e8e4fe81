"""The ``dpauc`` command line (also ``python -m dpauc_tf``); see :mod:`dpauc_tf.cli.main`."""

from dpauc_tf.cli.main import main

__all__ = ["main"]
