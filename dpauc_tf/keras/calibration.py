"""``DPECE``: a Keras metric whose value is the label-differentially-private expected
calibration error (ECE) of a binary classifier.

It is a [`DPAUC`][dpauc_tf.keras.metric.DPAUC] on a grid whose buckets make up the ECE's
equal-width bins: the same per-bucket positive/negative counts, the same releases (drawn
eagerly at ``result()``, asked of the release guards first, so
[`DPAUCBudgetCallback`][dpauc_tf.keras.callbacks.DPAUCBudgetCallback] charges every one of
them to its ledger, one mechanism epsilon per release), plus two **label-free** per-bucket
statistics of the scores (the number of examples and the sum of their scores). The value is
post-processing of one release: its bucket counts before the projection to non-negative
counts (an unbiased sum per bin; ``released_bucket_counts``) and the label-free statistics go to
[`dpauc_tf.core.calibration.reliability`][] (the ECE's only implementation).

**Weights.** The score statistics are label-free only when no weight depends on the label.
With noise, sample weights must be 1 (as for DPAUC's unit-weight mechanisms): Keras'
``class_weight``, which moves the weight with the label, is refused in one line. Without
noise (``epsilon=None``, NOT private) any weights ``tf.keras.metrics.AUC`` takes are
counted, and the value is the weighted ECE.

**Graphs.** Eagerly (where Keras computes the values it publishes) ``result()`` is a
release, as DPAUC's. In a ``tf.function`` with noise it shows the last release (NaN before
one); without noise it computes the exact ECE through a host call (``tf.numpy_function``),
except under XLA, which cannot call the host: there it shows the last eager value (NaN
before one). TensorFlow backend only (Keras 2 and Keras 3); JAX is refused.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import numpy as np
import tensorflow as tf

from dpauc_tf.core import calibration
from dpauc_tf.keras import checks
from dpauc_tf.keras.metric import DPAUC
from dpauc_tf.mechanisms import CountMechanism
from dpauc_tf.mechanisms.release_summaries import check_summarizable, released_bucket_counts


def _in_xla_context() -> bool:
    """Whether the graph being built is compiled by XLA (which has no host calls)."""
    try:
        from tensorflow.python.ops import control_flow_util
    except ImportError:  # pragma: no cover - the module exists in every supported TensorFlow
        return False
    return bool(control_flow_util.GraphOrParentsInXlaContext(tf.compat.v1.get_default_graph()))


def _summarized(error: tf.errors.InvalidArgumentError) -> str:
    """The message of a failed ``tf.debugging.Assert`` (its summarized data), one line."""
    message = error.message
    match = re.search(r"Summarized data: b?['\"](.*?)['\"]", message)
    return match.group(1) if match else message.strip().splitlines()[-1]


@tf.keras.utils.register_keras_serializable(package="dpauc_tf")
class DPECE(DPAUC):
    """Expected calibration error of a binary classifier with label differential privacy.

    ``ECE = sum_k (m_k / n) |mean score_k - positive rate_k|`` over ``num_bins`` equal-width
    score bins (``docs/evaluation_metrics.md``); the positive rates come from one noisy
    release of the per-bucket counts, the bins' sizes and mean scores from label-free
    statistics of the scores.

    Args:
      epsilon: privacy budget of **one** release (one eagerly computed ``result()``).
        ``None`` switches noise off (the exact ECE; NOT private).
      num_bins: the number of equal-width bins over ``[0, 1]`` (an int >= 1).
      num_thresholds: thresholds ``T`` of the count grid (TensorFlow's grid): ``None``
        (default) gives ``num_bins + 1``, one bucket per bin (the least noise). Otherwise
        every bin edge ``k / num_bins`` must be a threshold (``num_bins`` divides
        ``T - 1``), or the bins would split buckets: refused in one line.
      mechanism: a curve mechanism that can be a Keras metric (default ``"histogram"``:
        Laplace(2/epsilon) per count); mechanisms that release only the AUC or count noisy
        scores are refused.
      delta: for (epsilon, delta) mechanisms.
      from_logits: apply a sigmoid to the predictions first.
      seed: ``None`` (operating-system entropy) or an int (reproducible; experiments only).
      mechanism_options: further keyword arguments of the mechanism's constructor.
      name: metric name.
      dtype: the dtype of ``result()``.
      release_on_train: ``False``: ``fit``'s epoch-end training value is no release (NaN).

    Examples:
        >>> m = DPECE(epsilon=None, num_bins=2)
        >>> m.update_state([0, 0, 1, 0], [0.1, 0.2, 0.7, 0.9])
        >>> round(float(m.result()), 6)  # (2/4) |0.15 - 0| + (2/4) |0.8 - 0.5|
        0.225
        >>> noisy = DPECE(epsilon=1.0, num_bins=10, seed=0)
        >>> noisy.privacy_statement().epsilon, noisy.num_thresholds
        (1.0, 11)

    With ``compile()``:

    ```python
    model.compile(optimizer="adam", loss="binary_crossentropy",
                  metrics=[DPECE(epsilon=1.0, num_bins=10)])
    ```
    """

    def __init__(
        self,
        epsilon: float | None = 1.0,
        num_bins: int = 10,
        num_thresholds: int | None = None,
        mechanism: str = "histogram",
        delta: float | None = None,
        from_logits: bool = False,
        seed: int | None = None,
        mechanism_options: Mapping | None = None,
        name: str = "dp_ece",
        dtype=None,
        release_on_train: bool = True,
    ):
        num_bins = calibration.check_num_bins(num_bins)
        if checks.check_backend() == "jax":
            raise ValueError(
                "DPECE runs on Keras' TensorFlow backend only (not JAX yet); "
                "use KERAS_BACKEND=tensorflow"
            )
        super().__init__(
            epsilon=epsilon,
            num_thresholds=num_bins + 1 if num_thresholds is None else num_thresholds,
            mechanism=mechanism,
            delta=delta,
            from_logits=from_logits,
            seed=seed,
            mechanism_options=dict(mechanism_options) if mechanism_options else None,
            name=name,
            dtype=dtype,
            release_on_train=release_on_train,
        )
        check_summarizable(self._mechanism, "calibration (DPECE)")
        # One line where a bin would split a bucket (the release could not tell its positives).
        object.__setattr__(self, "_bins", calibration.calibration_bins(self._count_grid, num_bins))
        # Label-free score statistics: weights of 1 only with noise (class_weight would move
        # a weight, and so the examples and score sums, with the label).
        self._unit_weights = epsilon is not None
        object.__setattr__(
            self,
            "_ece_config",
            {
                "epsilon": epsilon,
                "num_bins": num_bins,
                "num_thresholds": num_thresholds,
                "mechanism": mechanism,
                "delta": delta,
                "from_logits": bool(from_logits),
                "seed": seed,
                "mechanism_options": dict(mechanism_options) if mechanism_options else None,
                "release_on_train": bool(release_on_train),
            },
        )

    def _build_counts(self, num_labels: int, lift: bool = False) -> None:
        super()._build_counts(num_labels, lift)
        shape = (self._count_grid.num_buckets,)
        self.bucket_examples = self.add_weight(
            name="bucket_examples", shape=shape, initializer="zeros", dtype="float64"
        )
        self.score_sums = self.add_weight(
            name="score_sums", shape=shape, initializer="zeros", dtype="float64"
        )

    @property
    def num_bins(self) -> int:
        """The number of equal-width calibration bins."""
        return self._ece_config["num_bins"]

    def update_state(self, y_true, y_pred, sample_weight=None):
        try:  # validates the batch, or refuses it
            super().update_state(y_true, y_pred, sample_weight)
        except tf.errors.InvalidArgumentError as error:  # eagerly: one line, not a traceback
            raise checks.as_it_is(ValueError(_summarized(error))) from None
        try:
            self._add_scores(y_true, y_pred, sample_weight)
        except ValueError as error:
            raise checks.as_it_is(error) from None

    def _add_scores(self, y_true, y_pred, sample_weight) -> None:
        """The batch's label-free per-bucket examples and score sums (weights of 1 with
        noise; without noise the weights ``tf.keras.metrics.AUC`` counts)."""
        y_true, y_pred = tf.convert_to_tensor(y_true), tf.convert_to_tensor(y_pred)
        if self.epsilon is None:
            if sample_weight is not None:
                sample_weight = tf.cast(tf.convert_to_tensor(sample_weight), tf.float32)
            _, y_pred, sample_weight = checks.keras_flatten(tf, y_true, y_pred, sample_weight)
        scores = tf.reshape(y_pred, [-1])
        if self._config["from_logits"]:
            scores = tf.sigmoid(scores)
        buckets = self._count_grid.bucketize(scores)
        if sample_weight is None or self.epsilon is not None:  # noise: every weight is 1
            weights = tf.ones_like(scores, tf.float64)
        else:
            weights = tf.reshape(tf.cast(sample_weight, tf.float64), [-1])
        size = self._count_grid.num_buckets
        self.bucket_examples.assign_add(tf.math.unsorted_segment_sum(weights, buckets, size))
        self.score_sums.assign_add(
            tf.math.unsorted_segment_sum(weights * tf.cast(scores, tf.float64), buckets, size)
        )

    def bucket_scores(self) -> calibration.BucketScores:
        """The label-free per-bucket statistics so far (numpy; not a release)."""
        return calibration.BucketScores(
            counts=np.asarray(self.bucket_examples.numpy(), np.float64),
            score_sums=np.asarray(self.score_sums.numpy(), np.float64),
        )

    def _table(
        self, mechanism, release: Mapping, examples, score_sums
    ) -> calibration.ReliabilityTable:
        """The reliability table of a release: its bucket counts before the projection
        (`released_bucket_counts`, as ``dpauc evaluate --calibration-bins`` reads them) and
        the label-free score statistics, through ``core.calibration``."""
        release = {key: np.asarray(value, np.float64) for key, value in release.items()}
        pos, _ = released_bucket_counts(mechanism, release)
        scores = calibration.BucketScores(
            counts=np.asarray(examples, np.float64), score_sums=np.asarray(score_sums, np.float64)
        )
        return calibration.reliability(pos, scores, self._bins, self.num_bins)

    def _ece_of(self, mechanism, release: Mapping, examples, score_sums) -> np.float64:
        table = self._table(mechanism, release, examples, score_sums)
        return np.float64(np.reshape(table.ece, [-1])[0])

    def reliability_from_release(
        self, release: Mapping, mechanism: CountMechanism | None = None
    ) -> calibration.ReliabilityTable:
        """The reliability table of a release (eagerly; post-processing, no release counted)."""
        mechanism = self._mechanism if mechanism is None else mechanism
        scores = self.bucket_scores()
        return self._table(mechanism, release, scores.counts, scores.score_sums)

    def value_from_release(self, release, mechanism: CountMechanism | None = None) -> tf.Tensor:
        """The ECE of a release with this metric's label-free score statistics:
        post-processing, no noise, no release counted.

        Examples:
            >>> m = DPECE(epsilon=None, num_bins=2)
            >>> m.update_state([0, 0, 1, 0], [0.1, 0.2, 0.7, 0.9])
            >>> release = {"pos": [0., 0., 1., 0.], "neg": [0., 2., 1., 0.]}
            >>> round(float(m.value_from_release(release)), 6)
            0.225
        """
        mechanism = self._mechanism if mechanism is None else mechanism
        keys = sorted(release)
        if tf.executing_eagerly():
            value = self._ece_of(
                mechanism,
                {k: np.asarray(release[k]) for k in keys},
                self.bucket_examples.numpy(),
                self.score_sums.numpy(),
            )
            return tf.constant(value, tf.float64)
        if _in_xla_context():  # no host calls under XLA: the last eager value
            return tf.convert_to_tensor(self._last_release)

        def host(examples, score_sums, *values):
            return self._ece_of(
                mechanism, dict(zip(keys, values, strict=True)), examples, score_sums
            )

        tensors = [tf.cast(release[k], tf.float64) for k in keys]
        examples = tf.convert_to_tensor(self.bucket_examples)
        score_sums = tf.convert_to_tensor(self.score_sums)
        value = tf.numpy_function(
            host, [examples, score_sums, *tensors], tf.float64, stateful=False
        )
        return tf.reshape(value, [])

    def _result(self):
        value = super()._result()
        if self.epsilon is None and tf.executing_eagerly():  # shown under XLA (see module)
            self._last_release.assign(tf.cast(value, tf.float64))
        return value

    def _summaries(self, confidence, target, **numbers):
        if not tf.executing_eagerly():
            raise ValueError("DPECE's interval and summaries run eagerly, after result()")
        from dpauc_tf.keras.intervals import last_release_summaries

        return last_release_summaries(
            self,
            calibration_bins=self.num_bins,
            bucket_scores=self.bucket_scores(),
            confidence=confidence,
            target=target,
            **numbers,
        )

    def release_interval(self, confidence: float = 0.95, target: str = "population"):
        """The ECE's interval of the last release (the one ``result()`` drew): the same law
        as ``dpauc evaluate --calibration-bins`` (privacy noise by the delta method through
        the release, each bin's binomial sampling variance; ``docs/evaluation_metrics.md``).
        No new release, no privacy cost. With ``epsilon=None`` of the exact counts so far.

        Returns:
          a [`SummaryInterval`][dpauc_tf.mechanisms.release_summaries.SummaryInterval]:
          ``.value[0]``, ``.low[0]``, ``.high[0]``.

        Raises:
          ValueError: before the first release since the counts were last reset.

        Examples:
            >>> m = DPECE(epsilon=None, num_bins=2)
            >>> m.update_state([0, 0, 1, 0] * 25, [0.1, 0.2, 0.7, 0.9] * 25)
            >>> ci = m.release_interval(0.95)
            >>> bool(ci.low[0] < 0.225 < ci.high[0])
            True
        """
        return self._summaries(confidence, target, average_precision=False).calibration.ece

    def summaries(
        self,
        max_fpr: float | None = None,
        tpr_at_fpr: float | None = None,
        fpr_at_tpr: float | None = None,
        average_precision: bool = True,
        confidence: float | None = 0.95,
        target: str = "population",
    ) -> dict:
        """[`DPAUC.summaries`][dpauc_tf.keras.metric.DPAUC.summaries] of the last release,
        plus ``"ece"`` (with its interval) and ``"reliability"`` (one object per bin: mean
        score, private positive rate and its interval): no new release, no extra epsilon."""
        from dpauc_tf.keras.intervals import summaries_dict

        summary = self._summaries(
            confidence,
            target,
            max_fpr=max_fpr,
            tpr_at_fpr=tpr_at_fpr,
            fpr_at_tpr=fpr_at_tpr,
            average_precision=average_precision,
        )
        return summaries_dict(self, summary)

    def roc_curve(self):
        """Not a calibration output: DPECE releases the ECE (use DPAUC for the curve)."""
        raise ValueError("DPECE releases the expected calibration error; use DPAUC for a curve")

    def reset_state(self):
        super().reset_state()
        if self._counts_built:
            for variable in (self.bucket_examples, self.score_sums):
                variable.assign(tf.zeros_like(variable))

    def get_config(self):
        base = tf.keras.metrics.Metric.get_config(self)
        return {**base, **self._ece_config}
