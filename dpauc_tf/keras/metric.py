"""``DPAUC``: a Keras metric whose value is a label-differentially-private AUC.

The metric keeps per-bucket positive/negative counts in its weights (``update_state``) and
adds fresh noise to them every time ``result()`` is called (central DP: whoever runs Keras
holds the labels and publishes the value). It runs unchanged in Keras 2 (TensorFlow 2.14) and
Keras 3 (TensorFlow >= 2.16).

What counts as a release: every ``result()`` call draws new noise, and Keras calls it after
every batch for the progress bar. Only values that leave the data holder are published — in
practice the epoch-end values that go into ``History``, TensorBoard or a log, and the value
``model.evaluate`` returns. :class:`dpauc_tf.keras.callbacks.DPAUCBudgetCallback` records those releases
in a :class:`dpauc_tf.privacy.ledger.PrivacyLedger` and refuses to go past a budget. Use
``verbose=2`` (one line per epoch) or ``verbose=0`` so that per-batch values are not printed.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence

import tensorflow as tf

from dpauc_tf.core.counts import bucket_counts
from dpauc_tf.core.curve import RocCurve, roc_from_confusion
from dpauc_tf.core.thresholds import Thresholds
from dpauc_tf.mechanisms import CountMechanism, get_mechanism, require
from dpauc_tf.privacy.statement import PrivacyStatement

KERAS_MAJOR = int(getattr(tf.keras, "__version__", getattr(tf, "__version__", "2")).split(".")[0])


@tf.keras.utils.register_keras_serializable(package="dpauc_tf")
class DPAUC(tf.keras.metrics.Metric):
    """Area under the ROC curve with label differential privacy.

    Args:
      epsilon: total privacy budget of **one** release (one ``result()`` value). ``None``
        switches noise off: the value then equals ``tf.keras.metrics.AUC`` and is NOT private.
      num_thresholds: number of thresholds ``T`` (the grid of ``tf.keras.metrics.AUC`` by
        default). Ignored when ``thresholds`` is given.
      mechanism: ``"histogram"`` (default: Laplace(2/eps) on the class histograms),
        ``"histogram-public-scores"`` (Laplace(1/eps) on positives, exact score histogram),
        ``"paper"`` (DPAUC_Lap of Sun et al. 2023), ``"paper-gaussian"`` (needs ``delta``),
        ``"tree-histogram"`` (hierarchical histogram: fine buckets at almost no extra noise,
        e.g. ``num_thresholds=1023``). See :mod:`dpauc_tf.mechanisms` and
        :mod:`dpauc_tf.mechanisms.tree`.
      delta: delta for Gaussian mechanisms; must be unset for Laplace ones.
      thresholds: an explicit ascending list of thresholds (``score > theta`` is positive).
      threshold_grid: ``"tf"`` (TensorFlow's list, ``>``) or ``"reference"`` (the paper's
        reference-code grid, ``>=``).
      from_logits: apply a sigmoid to predictions first.
      seed: ``None`` (default) draws the noise from operating-system entropy; an integer makes
        the sequence of noisy results reproducible (experiments only: the seed reveals the
        noise).
      mechanism_options: further keyword arguments of the mechanism's constructor (for
        example the branching factor of a tree mechanism), kept in the config.
      name: metric name. dtype: the dtype of ``result()``; the counts are always float64
        (exact integers up to 2^53, where float32 stops counting at 2^24).

    Standalone:

    >>> m = DPAUC(epsilon=None, num_thresholds=5)
    >>> m.update_state([0, 0, 1, 1], [0.1, 0.6, 0.4, 0.9])
    >>> round(float(m.result()), 4)
    0.75
    >>> noisy = DPAUC(epsilon=1.0, num_thresholds=100, seed=0)
    >>> noisy.update_state([0, 0, 1, 1] * 500, [0.1, 0.6, 0.4, 0.9] * 500)
    >>> 0.6 < float(noisy.result()) < 0.9
    True

    With ``compile()``:

    ```python
    model.compile(optimizer="adam", loss="binary_crossentropy",
                  metrics=[tf.keras.metrics.AUC(num_thresholds=1000, name="auc"),
                           DPAUC(epsilon=1.0, num_thresholds=100, mechanism="paper", seed=0)])
    ```
    """

    def __init__(
        self,
        epsilon: float | None = 1.0,
        num_thresholds: int = 200,
        mechanism: str = "histogram",
        delta: float | None = None,
        thresholds: Sequence[float] | None = None,
        threshold_grid: str = "tf",
        from_logits: bool = False,
        seed: int | None = None,
        mechanism_options: dict | None = None,
        name: str = "dp_auc",
        dtype=None,
    ):
        super().__init__(name=name, dtype=dtype)
        self._thresholds = Thresholds.make(num_thresholds, threshold_grid, thresholds)
        self._mechanism = get_mechanism(
            mechanism,
            epsilon=epsilon,
            num_thresholds=self._thresholds.num_thresholds,
            delta=delta,
            **(mechanism_options or {}),
        )
        require(self._mechanism, "keras_metric")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
            raise ValueError(f"seed must be None or a non-negative int, got {seed!r}")
        self._config = {
            "epsilon": epsilon,
            "num_thresholds": self._thresholds.num_thresholds,
            "mechanism": mechanism,
            "delta": delta,
            "thresholds": list(thresholds) if thresholds is not None else None,
            "threshold_grid": threshold_grid,
            "from_logits": bool(from_logits),
            "seed": seed,
            "mechanism_options": dict(mechanism_options) if mechanism_options else None,
        }
        num_buckets = self._thresholds.num_buckets
        self.positives = self.add_weight(
            name="positives", shape=(num_buckets,), initializer="zeros", dtype="float64"
        )
        self.negatives = self.add_weight(
            name="negatives", shape=(num_buckets,), initializer="zeros", dtype="float64"
        )
        # The noise generator is deliberately not tracked: it must not become a metric
        # variable (TFF sums metric variables across clients, and checkpoints would save it).
        object.__setattr__(self, "_noise_generator", self._make_generator(seed))

    @staticmethod
    def _make_generator(seed: int | None) -> tf.random.Generator:
        with tf.init_scope():
            if seed is None:
                state = [secrets.randbits(63) for _ in range(3)]
                return tf.random.Generator.from_state(state, alg="philox")
            return tf.random.Generator.from_seed(seed, alg="philox")

    # -- properties ---------------------------------------------------------------------
    @property
    def epsilon(self) -> float | None:
        return self._config["epsilon"]

    @property
    def mechanism(self) -> CountMechanism:
        """The mechanism applied to the counts at every ``result()``."""
        return self._mechanism

    @property
    def thresholds(self) -> list[float]:
        return list(self._thresholds.values)

    def privacy_statement(self) -> PrivacyStatement:
        """Neighbouring relation, sensitivity, noise and (epsilon, delta) of one result()."""
        return self._mechanism.statement()

    # -- Metric API ---------------------------------------------------------------------
    def update_state(self, y_true, y_pred, sample_weight=None):
        pos, neg = bucket_counts(
            y_true,
            y_pred,
            self._thresholds,
            sample_weight,
            from_logits=self._config["from_logits"],
            dtype=tf.float64,
            integer_weights=self._mechanism.capabilities.integer_counts,
        )
        self.positives.assign_add(pos)
        self.negatives.assign_add(neg)

    def _next_seed(self) -> tf.Tensor:
        return self._noise_generator.make_seeds(1)[:, 0]

    def _release(self):
        pos = tf.convert_to_tensor(self.positives)
        neg = tf.convert_to_tensor(self.negatives)
        if self._config["epsilon"] is None:
            return {"pos": pos, "neg": neg}
        return self._mechanism.release(pos, neg, seed=self._next_seed())

    def roc_curve(self) -> RocCurve:
        """One noisy release as ROC points (sorted by FPR). Each call is a release."""
        return roc_from_confusion(self._mechanism.to_confusion(self._release()))

    def result(self):
        """One noisy release's AUC (the mechanism's estimator). Each call is a release."""
        return tf.cast(self._mechanism.estimate_auc(self._release()), self.dtype)

    def reset_state(self):
        for variable in (self.positives, self.negatives):
            variable.assign(tf.zeros_like(variable))

    def reset_states(self):  # Keras 2 alias
        self.reset_state()

    def get_config(self):
        base = super().get_config()
        return {**base, **self._config}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        dtype = config.pop("dtype", None)
        if isinstance(dtype, dict):  # Keras 3 may serialise a DTypePolicy
            dtype = dtype.get("config", {}).get("name")
        return cls(dtype=dtype, **config)
