"""The Keras adapter: the ``DPAUC`` and ``DPECE`` metrics, the budget callback and the interval
logger."""

from dpauc_tf.keras.calibration import DPECE
from dpauc_tf.keras.callbacks import DPAUCBudgetCallback
from dpauc_tf.keras.intervals import DPAUCIntervalLogger
from dpauc_tf.keras.metric import DPAUC
from dpauc_tf.keras.multiclass import DPMultiClassAUC

__all__ = ["DPAUC", "DPECE", "DPAUCBudgetCallback", "DPAUCIntervalLogger", "DPMultiClassAUC"]
