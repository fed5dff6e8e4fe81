"""The Keras adapter: the ``DPAUC`` metric, the budget callback and the interval logger."""

from dpauc_tf.keras.callbacks import DPAUCBudgetCallback
from dpauc_tf.keras.intervals import DPAUCIntervalLogger
from dpauc_tf.keras.metric import DPAUC
from dpauc_tf.keras.multiclass import DPMultiClassAUC

__all__ = ["DPAUC", "DPAUCBudgetCallback", "DPAUCIntervalLogger", "DPMultiClassAUC"]
