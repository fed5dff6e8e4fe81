"""dpauc_tf: AUC and ROC curves with label differential privacy, for Keras and TFF.

>>> from dpauc_tf import DPAUC
>>> metric = DPAUC(epsilon=1.0, num_thresholds=100, seed=0)
"""

from dpauc_tf.accounting import EpsilonSpent, composed_epsilon
from dpauc_tf.counts import bucket_counts
from dpauc_tf.curve import (
    Confusion,
    RocCurve,
    auc_from_confusion,
    auc_from_histogram,
    auc_from_roc,
    confusion_from_histogram,
    roc_from_confusion,
)
from dpauc_tf.keras_metric import DPAUC
from dpauc_tf.ledger import BudgetExceededError, DPAUCBudgetCallback, PrivacyLedger
from dpauc_tf.mechanisms import (
    MECHANISMS,
    CountMechanism,
    PrivacyStatement,
    get_mechanism,
    private_auc,
)
from dpauc_tf.thresholds import Thresholds

__version__ = "0.1.0"

__all__ = [
    "DPAUC",
    "MECHANISMS",
    "BudgetExceededError",
    "Confusion",
    "CountMechanism",
    "DPAUCBudgetCallback",
    "EpsilonSpent",
    "PrivacyLedger",
    "PrivacyStatement",
    "RocCurve",
    "Thresholds",
    "auc_from_confusion",
    "auc_from_histogram",
    "auc_from_roc",
    "bucket_counts",
    "composed_epsilon",
    "confusion_from_histogram",
    "get_mechanism",
    "private_auc",
    "roc_from_confusion",
]
