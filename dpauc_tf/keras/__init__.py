"""The Keras adapter: the ``DPAUC`` metric and the budget callback."""

from dpauc_tf.keras.callbacks import DPAUCBudgetCallback
from dpauc_tf.keras.metric import DPAUC

__all__ = ["DPAUC", "DPAUCBudgetCallback"]
