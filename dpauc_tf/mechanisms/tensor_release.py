"""A release of tensor counts: [`private_auc`][] releases bucket counts through a mechanism
and finishes them on the one release path
([`finish_release`][dpauc_tf.mechanisms.release.finish_release]) into the one result type,
[`AUCResult`][dpauc_tf.mechanisms.release.AUCResult]. Above the release path in the layers
(it calls it), so that the mechanisms below never import it.

Examples:
    >>> from dpauc_tf.mechanisms import get_mechanism
    >>> m = get_mechanism("none", epsilon=None, num_thresholds=3)
    >>> out = private_auc(m, tf.constant([0., 2., 1., 0.]), tf.constant([0., 1., 2., 0.]))
    >>> round(out.auc, 4), out.epsilon_total is None
    (0.3333, True)
"""

from __future__ import annotations

import tensorflow as tf

from dpauc_tf.mechanisms.base import CountMechanism
from dpauc_tf.mechanisms.release import AUCResult, finish_release


def private_auc(
    mechanism: CountMechanism,
    pos: tf.Tensor,
    neg: tf.Tensor,
    *,
    seed: int | tf.Tensor | None = None,
    repeats: int | None = None,
) -> AUCResult:
    """Releases counts through ``mechanism`` and computes the AUC and ROC of each release
    (the post-processing is [`finish_release`][dpauc_tf.mechanisms.release.finish_release]'s):
    an [`AUCResult`][dpauc_tf.mechanisms.release.AUCResult] of ``repeats`` releases (one
    without ``repeats``; NumPy arrays: ``aucs [R]``, ``fpr``/``tpr [R, T]``).

    Examples:
        >>> from dpauc_tf.mechanisms import get_mechanism
        >>> m = get_mechanism("histogram", epsilon=1.0, num_thresholds=3)
        >>> out = private_auc(m, tf.constant([0., 50., 30., 0.]), tf.constant([0., 40., 10., 0.]),
        ...                   seed=0, repeats=5)
        >>> out.aucs.shape, out.epsilon_total
        ((5,), 5.0)
    """
    release = mechanism.release(pos, neg, seed=seed, repeats=repeats)
    if repeats is None:  # one release: the protocol's repeats axis of length 1
        release = {key: value[tf.newaxis] for key, value in release.items()}
    examples = float(
        tf.reduce_sum(tf.cast(pos, tf.float64)) + tf.reduce_sum(tf.cast(neg, tf.float64))
    )
    return finish_release(
        None,
        {key: value.numpy() for key, value in release.items()},
        num_examples=examples,
        num_clients=getattr(mechanism, "num_clients", None),
        mechanism=mechanism,
    )
