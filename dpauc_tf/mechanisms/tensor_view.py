"""A release's AUC and ROC as tensors: [`private_auc`][] releases counts through a mechanism
and finishes them on the one release path
([`finish_release`][dpauc_tf.mechanisms.release.finish_release]); [`PrivateAUC`][] views the
result. Above the release path in the layers (it calls it), so that the mechanisms below never
import it.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import tensorflow as tf

from dpauc_tf.core.curve import RocCurve
from dpauc_tf.mechanisms.base import CountMechanism
from dpauc_tf.mechanisms.release import finish_release
from dpauc_tf.privacy.statement import PrivacyStatement


@dataclasses.dataclass(frozen=True)
class PrivateAUC:
    """A view of [`AUCResult`][dpauc_tf.mechanisms.release.AUCResult] (``result``, the one
    result type) as tensors: the AUC (``[R]``, or a scalar without ``repeats``), the ROC
    points (``None`` when the mechanism releases only the AUC) and the cost of one release.

    Examples:
        >>> from dpauc_tf.mechanisms import get_mechanism
        >>> m = get_mechanism("none", epsilon=None, num_thresholds=3)
        >>> view = private_auc(m, tf.constant([0., 2., 1., 0.]), tf.constant([0., 1., 2., 0.]))
        >>> round(float(view.auc), 4), view.result.epsilon_total is None
        (0.3333, True)
    """

    result: Any  # AUCResult
    scalar: bool = False

    @property
    def auc(self) -> tf.Tensor:
        aucs = tf.constant(self.result.aucs, tf.float64)
        return aucs[0] if self.scalar else aucs

    @property
    def roc(self) -> RocCurve | None:
        if not self.result.has_curve:
            return None
        fpr, tpr = (tf.constant(v, tf.float64) for v in (self.result.fpr, self.result.tpr))
        return RocCurve(fpr[0], tpr[0]) if self.scalar else RocCurve(fpr, tpr)

    @property
    def statement(self) -> PrivacyStatement:
        return self.result.statement


def private_auc(
    mechanism: CountMechanism,
    pos: tf.Tensor,
    neg: tf.Tensor,
    *,
    seed: int | tf.Tensor | None = None,
    repeats: int | None = None,
) -> PrivateAUC:
    """Releases counts through ``mechanism`` and computes the AUC and ROC of each release
    (the post-processing is [`finish_release`][dpauc_tf.mechanisms.release.finish_release]'s).

    Examples:
        >>> from dpauc_tf.mechanisms import get_mechanism
        >>> m = get_mechanism("histogram", epsilon=1.0, num_thresholds=3)
        >>> out = private_auc(m, tf.constant([0., 50., 30., 0.]), tf.constant([0., 40., 10., 0.]),
        ...                   seed=0, repeats=5)
        >>> out.auc.shape.as_list(), out.result.epsilon_total
        ([5], 5.0)
    """
    release = mechanism.release(pos, neg, seed=seed, repeats=repeats)
    if repeats is None:  # one release: the protocol's repeats axis of length 1
        release = {key: value[tf.newaxis] for key, value in release.items()}
    examples = float(
        tf.reduce_sum(tf.cast(pos, tf.float64)) + tf.reduce_sum(tf.cast(neg, tf.float64))
    )
    result = finish_release(
        None,
        {key: value.numpy() for key, value in release.items()},
        num_examples=examples,
        num_clients=getattr(mechanism, "num_clients", None),
        mechanism=mechanism,
    )
    return PrivateAUC(result=result, scalar=repeats is None)
