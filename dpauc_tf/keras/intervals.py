"""The interval and the summaries (partial AUC, operating points, average precision) of a
Keras metric's last release, and a callback that logs the interval's bounds.

Post-processing of the last release and the mechanism's noise law (no new release, no
privacy cost): `dpauc_tf.mechanisms.intervals.release_interval`, ``docs/intervals.md``;
[`dpauc_tf.mechanisms.release_summaries.summarize_release`][], ``docs/evaluation_metrics.md``.

Examples:
    >>> import numpy as np
    >>> from dpauc_tf.keras.metric import DPAUC
    >>> m = DPAUC(epsilon=1.0, num_thresholds=50, seed=0)
    >>> rng = np.random.default_rng(0)
    >>> labels = (rng.random(4000) < 0.3).astype("float32")
    >>> m.update_state(labels, 1 / (1 + np.exp(-rng.normal(labels, 1.0))).astype("float32"))
    >>> value = float(m.result())
    >>> ci = m.release_interval(0.95)
    >>> bool(ci.low[0] < value < ci.high[0]), ci.target
    (True, 'population')
"""

from __future__ import annotations

from typing import Any

import numpy as np
import tensorflow as tf

from dpauc_tf.mechanisms.intervals import AUCInterval, release_interval
from dpauc_tf.mechanisms.release import finish_release
from dpauc_tf.mechanisms.release_summaries import (
    ReleaseSummaries,
    check_summarizable,
    summarize_release,
)


def last_release_interval(
    metric, confidence: float = 0.95, target: str = "population"
) -> AUCInterval:
    """The [`AUCInterval`][] of ``metric``'s last release
    (``.low[0]``, ``.high[0]``, ``.privacy_share[0]``).

    ``target="population"``: the AUC of the population the data were drawn from (privacy
    noise and sampling error); ``"sample"``: this data's AUC (privacy noise only).

    Raises:
      ValueError: before the first release since the counts were last reset, for ``multi_label`` or a curve other than the
        ROC AUC, or where the mechanism has no valid interval.
    """
    release = getattr(metric, "_last_release_counts", None)
    if release is None:
        raise ValueError(
            "no release yet since the counts were last reset (reset_state() forgets the last "
            "release): call result() (or release()) first"
        )
    if metric.multi_label or metric.curve != "ROC" or metric.summation_method != "interpolation":
        raise ValueError("release_interval is for the ROC AUC of one label (multi_label=False)")
    counts = {key: np.asarray(value, np.float64) for key, value in release.items()}
    pos, neg = metric._counts()
    total = float(tf.reduce_sum(pos) + tf.reduce_sum(neg))  # public: it holds no label
    return release_interval(
        metric.mechanism, counts, confidence=confidence, target=target, num_examples=total
    )


def last_release_summaries(
    metric,
    *,
    max_fpr: float | None = None,
    tpr_at_fpr: float | None = None,
    fpr_at_tpr: float | None = None,
    average_precision: bool = True,
    calibration_bins: int | None = None,
    bucket_scores=None,
    confidence: float | None = 0.95,
    target: str = "population",
) -> ReleaseSummaries:
    """Partial AUC, operating points, average precision (and, given the label-free
    ``bucket_scores``, calibration) of ``metric``'s last release, with intervals:
    [`summarize_release`][dpauc_tf.mechanisms.release_summaries.summarize_release] of the
    release that ``result()`` drew (the same release as the AUC: no new release, no extra
    epsilon). With ``epsilon=None`` (NOT private) of the exact counts so far.

    Raises:
      ValueError: one line: ``multi_label``, a mechanism that releases no curve (say which
        to pass), no release since the counts were last reset, a bad rate.
    """
    if metric.multi_label:
        raise ValueError("summaries are of one label's release (multi_label=False)")
    mechanism = metric.mechanism
    if metric.epsilon is None:  # no noise: the exact counts are the "release" (NOT private)
        pos, neg = metric.counts()
        release = {"pos": pos, "neg": neg}
    else:
        check_summarizable(
            mechanism,
            "partial AUC, operating points and average precision",
            hint="mechanism='histogram'; the default ROC mechanism, rank-sum, releases two numbers",
        )
        release = getattr(metric, "_last_release_counts", None)
        if release is None:
            raise ValueError(
                "no release yet since the counts were last reset (reset_state() forgets the "
                "last release): call result() (or release()) first"
            )
    summed = {key: np.asarray(value, np.float64)[None] for key, value in release.items()}
    result = finish_release(None, summed, num_examples=None, mechanism=mechanism)
    return summarize_release(
        result,
        mechanism,
        metric._count_grid,
        max_fpr=max_fpr,
        tpr_at_fpr=tpr_at_fpr,
        fpr_at_tpr=fpr_at_tpr,
        average_precision=average_precision,
        calibration_bins=calibration_bins,
        bucket_scores=bucket_scores,
        confidence=confidence,
        target=target,
    )


def summaries_dict(metric, summaries: ReleaseSummaries) -> dict[str, Any]:
    """``summaries`` as plain values (``None`` for undefined), with the privacy sentence."""
    if metric.epsilon is None:
        privacy = "no noise (epsilon=None): exact values of the counts, NOT private"
    else:
        privacy = (
            f"post-processing of the last release ({metric.mechanism.name}, epsilon "
            f"{metric.privacy_statement().epsilon:g}, spent by result()): no extra epsilon"
        )
    return {**summaries.to_dict(0), "privacy": privacy}


def _callback_base():
    import keras

    return keras.callbacks.Callback


class DPAUCIntervalLogger(_callback_base()):
    """Logs ``dp_auc_lower`` and ``dp_auc_upper`` (the interval of a ``DPAUC`` metric's last
    release) after every epoch and evaluation; no release is drawn.

    Args:
      metric: the ``DPAUC`` instance compiled into the model.
      confidence: e.g. 0.95.
      target: ``"population"`` (default) or ``"sample"``.
      prefix: the names logged are ``{prefix}_lower`` and ``{prefix}_upper`` (``val_`` in
        front after an epoch with validation data, where the last release is the
        validation one).

    Example::

        metric = DPAUC(epsilon=1.0)
        model.compile(optimizer="adam", loss="binary_crossentropy", metrics=[metric])
        model.fit(x, y, validation_data=(xv, yv), callbacks=[DPAUCIntervalLogger(metric)])
    """

    def __init__(
        self, metric, confidence: float = 0.95, target: str = "population", prefix: str = "dp_auc"
    ):
        super().__init__()
        self.metric, self.confidence, self.target, self.prefix = metric, confidence, target, prefix

    def _bounds(self, logs, prefix: str) -> None:
        if logs is None or getattr(self.metric, "_last_release_counts", None) is None:
            return
        ci = self.metric.release_interval(self.confidence, self.target)  # DPECE: the ECE's
        logs[f"{prefix}{self.prefix}_lower"] = float(ci.low[0])
        logs[f"{prefix}{self.prefix}_upper"] = float(ci.high[0])

    def on_epoch_end(self, epoch, logs=None):
        has_validation = logs is not None and any(key.startswith("val_") for key in logs)
        self._bounds(logs, "val_" if has_validation else "")

    def on_test_end(self, logs=None):
        self._bounds(logs, "")
