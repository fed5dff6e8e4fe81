"""``python -m dpauc_tf``: the ``dpauc`` command line (see `dpauc_tf.cli`)."""

import sys

from dpauc_tf.cli import main

sys.exit(main())
