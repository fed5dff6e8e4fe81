"""Defaults shared by every entry point (pure Python: the command line reads them for --help).

>>> DEFAULT_NUM_THRESHOLDS
200
"""

# As tf.keras.metrics.AUC: DPAUC, `dpauc evaluate` and dpauc_tf.federated.evaluate use it.
DEFAULT_NUM_THRESHOLDS = 200
