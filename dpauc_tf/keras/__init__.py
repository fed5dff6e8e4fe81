"""The Keras adapter: the ``DPAUC`` metric and the budget callback."""

from dpauc_tf.keras.callbacks import DPAUCBudgetCallback
from dpauc_tf.keras.metric import DPAUC
from dpauc_tf.keras.multiclass import DPMultiClassAUC

__all__ = ["DPAUC", "DPAUCBudgetCallback", "DPMultiClassAUC"]
