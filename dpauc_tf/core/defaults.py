"""Defaults shared by every entry point (pure Python: the command line reads them for --help).

Examples:
    >>> DEFAULT_NUM_THRESHOLDS
    200
"""

# As tf.keras.metrics.AUC: DPAUC, `dpauc evaluate` and dpauc_tf.federated.evaluate use it.
DEFAULT_NUM_THRESHOLDS = 200

# The empirical audit (dpauc audit, dpauc_tf.analysis.audit.run_audit): releases per
# neighbour, and the grid of its worst-case pair (its own default, not the metric's).
DEFAULT_AUDIT_SAMPLES = 4_000_000
DEFAULT_AUDIT_NUM_THRESHOLDS = 2
