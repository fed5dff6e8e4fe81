"""``DPAUC``: a Keras metric whose value is a label-differentially-private AUC.

The metric keeps per-bucket positive/negative counts in its weights (``update_state``;
float64 on TensorFlow, exact up to 2^53 examples per bucket; two float32 halves on JAX, exact
up to 2^47) and releases a noisy AUC from them (central
DP: whoever runs Keras holds the labels and publishes the value). It runs unchanged in
Keras 2 (TensorFlow 2.14) and Keras 3 (TensorFlow >= 2.16) on the TensorFlow and the JAX
backends (on JAX it counts with ``keras.ops`` and releases on the host:
`dpauc_tf.keras.ops_counts`, ``docs/keras_backends.md``). PyTorch is refused (not
supported yet).

**Which values are releases.** A release draws fresh noise and costs its epsilon. It
happens when ``result()`` runs *eagerly*: that is where Keras computes the values it
publishes (the epoch-end training and validation values that go into ``History``,
TensorBoard and the epoch's progress line, and the values ``model.evaluate`` returns), and
where user code calls it. Inside a compiled step (the per-batch progress bar, a
``tf.function``, XLA; on JAX every train or test step, jitted or not) ``result()`` draws
nothing: it shows the last release of the current counts, and ``reset_state`` (which Keras
calls at the start of every epoch and of every validation or evaluation) forgets it, so
during ``fit`` every per-batch value is NaN ("not released yet"): never a value of another
data set or of an earlier epoch, and no release that no ledger counts. The epoch's line
ends with its releases (``docs/keras_options.md``). ``releases_drawn`` counts the releases.

**Training labels.** ``release_on_train=False`` draws no release at ``fit``'s epoch-end
training value (it is NaN): only validation and ``evaluate`` releases spend budget.

**Charged before drawn.** Every release first asks the release guards (`add_release_guard`)
for permission, before any noise is drawn or any count is read: a guard that refuses raises,
and the release never exists, so no callback, log, file or later step can show it.
[`dpauc_tf.keras.callbacks.DPAUCBudgetCallback`][] is such a guard: during ``fit`` and
``evaluate`` it charges each release of its model's metrics to a
[`dpauc_tf.privacy.ledger.PrivacyLedger`][], or refuses it past the budget.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Sequence

import dp_accounting
import numpy as np
import tensorflow as tf

from dpauc_tf.core.curve import RocCurve, confusion_from_histogram, roc_from_confusion
from dpauc_tf.core.defaults import DEFAULT_NUM_THRESHOLDS
from dpauc_tf.core.summation import keras_auc
from dpauc_tf.core.thresholds import Thresholds
from dpauc_tf.core.vocabulary import Curve, SummationMethod, is_roc_auc
from dpauc_tf.keras import checks, ops_counts, tf_counts
from dpauc_tf.mechanisms import CountMechanism, require
from dpauc_tf.mechanisms.weight_bound import check_max_weight
from dpauc_tf.privacy.ledger import BudgetExceededError
from dpauc_tf.privacy.statement import PrivacyStatement

# Callables ``guard(metric)`` asked before every release (see the module docstring).
_RELEASE_GUARDS: list = []


def add_release_guard(guard) -> None:
    """Asks ``guard(metric)`` before every release any [`DPAUC`][] draws, before the draw:
    to refuse it, the guard raises (the exception reaches ``result()``'s caller and nothing
    is drawn). Added once however often it is called."""
    if all(guard != known for known in _RELEASE_GUARDS):
        _RELEASE_GUARDS.append(guard)


class ReleaseWithheld(BudgetExceededError):
    """Raised by a release guard to withhold a release without stopping the caller:
    ``result()`` then returns NaN ("not released") and nothing is drawn."""


def remove_release_guard(guard) -> None:
    """Stops asking ``guard`` (nothing happens if it was not asked)."""
    _RELEASE_GUARDS[:] = [known for known in _RELEASE_GUARDS if known != guard]


KERAS_MAJOR = checks.KERAS_MAJOR
SUPPORTED_BACKENDS = checks.SUPPORTED_BACKENDS
_check_backend = checks.check_backend


@tf.keras.utils.register_keras_serializable(package="dpauc_tf")
class DPAUC(tf.keras.metrics.Metric):
    """Area under the ROC (or PR) curve with label differential privacy.

    The arguments follow ``tf.keras.metrics.AUC`` where they make sense.

    Args:
      epsilon: privacy budget of **one** release (one eagerly computed ``result()``). ``None``
        switches noise off: ``DPAUC`` then takes every argument and input of
        ``tf.keras.metrics.AUC`` (any weights >= 0, extra dimensions flattened, ``num_labels``
        inferred) and equals it; NOT private.
      num_thresholds: number of thresholds ``T`` (the grid of ``tf.keras.metrics.AUC`` by
        default). Ignored when ``thresholds`` is given.
      mechanism: a registered name that can be a Keras metric
        (``dpauc_tf.list_mechanisms(keras_metric=True)``). Default (``None``): the
        lowest-error mechanism for what is asked (``docs/rank_sum.md``): for the ROC AUC
        with interpolation ``"rank-sum"`` (noisy centred rank sum and positive count; pure
        epsilon), or ``"auc-only"`` with a ``delta``; else ``"histogram"`` (Laplace(2/eps)
        per count). ``"rank-sum"`` and ``"auc-only"`` release no curve
        ([`roc_curve`][] refuses). Others: ``"histogram-public-scores"``,
        ``"tree-histogram"`` (fine buckets at almost no extra noise, e.g.
        ``num_thresholds=1023``), ``"paper"``, ``"paper-gaussian"`` (needs ``delta``),
        ``"rr"``, the secure mechanisms (integer noise; one data holder is one share). See
        ``docs/mechanisms.md``.
      delta: delta for (epsilon, delta) mechanisms (Gaussian, ``"auc-only"``); must be unset
        for pure-epsilon ones.
      thresholds: an explicit list of thresholds, as ``tf.keras.metrics.AUC(thresholds=...)``.
      threshold_grid: ``"tf"`` (TensorFlow's list, ``>``) or ``"reference"`` (the paper's
        reference-code grid, ``>=``).
      curve: ``"ROC"`` (default), ``"PR"`` or ``"PRGAIN"`` (Keras 3's precision-recall-gain
        curve): all come from the same noisy counts, so the PR-AUC costs no extra epsilon.
      summation_method: ``"interpolation"`` (default), ``"minoring"`` or ``"majoring"``.
        With ROC and interpolation the value is the mechanism's AUC estimate; otherwise
        Keras' formula on the released curve.
      multi_label: one AUC per label (``y_true``/``y_pred`` of shape ``[N, num_labels]``),
        averaged with ``label_weights``. Each label's counts are a release: one value costs
        ``num_labels`` releases (``privacy_statement`` and ``dp_event`` say so). Without
        ``multi_label`` inputs must hold one label per example.
      num_labels: the number of labels; with noise required with ``multi_label`` (it sets
        the cost), without noise inferred at the first ``update_state`` as Keras does.
      label_weights: non-negative weights of the labels' AUCs in the average (without
        ``multi_label`` and without noise: weights of the flattened labels, as Keras).
      from_logits: apply a sigmoid to predictions first.
      seed: ``None`` (default) draws the noise from operating-system entropy; an integer makes
        the sequence of noisy results reproducible (experiments only: the seed reveals the
        noise).
      mechanism_options: further keyword arguments of the mechanism's constructor (for
        example the branching factor of a tree mechanism), kept in the config.
      name: metric name.
      dtype: the dtype of ``result()``.
      max_weight: the declared bound of the sample weights (default 1): with noise, weights
        must lie in ``[0, max_weight]``; one label change then moves up to ``max_weight``,
        and the noise (in weighted counts) and the statement scale with it
        (`dpauc_tf.mechanisms.weight_bound`; integer-noise mechanisms take 1 only).
      release_on_train: ``False``: ``fit``'s epoch-end training value is no release (NaN)
        and spends nothing; validation and ``evaluate`` still release.

    Standalone:

        >>> m = DPAUC(epsilon=None, num_thresholds=5)
        >>> m.update_state([0, 0, 1, 1], [0.1, 0.6, 0.4, 0.9])
        >>> round(float(m.result()), 4)
        0.75
        >>> noisy = DPAUC(epsilon=1.0, num_thresholds=100, seed=0)
        >>> noisy.update_state([0, 0, 1, 1] * 500, [0.1, 0.6, 0.4, 0.9] * 500)
        >>> 0.6 < float(noisy.result()) < 0.9, noisy.releases_drawn
        (True, 1)

    With ``compile()``:

    ```python
    model.compile(optimizer="adam", loss="binary_crossentropy",
                  metrics=[tf.keras.metrics.AUC(num_thresholds=1000, name="auc"),
                           DPAUC(epsilon=1.0, num_thresholds=100, seed=0)])
    ```
    """

    # A subclass whose privacy cost does not depend on the number of labels may infer it at
    # the first update with noise too (DPMultiClassAUC: L1 = 4 whatever C).
    _labels_inferred_with_noise = False

    def __init__(
        self,
        epsilon: float | None = 1.0,
        num_thresholds: int = DEFAULT_NUM_THRESHOLDS,
        mechanism: str | None = None,
        delta: float | None = None,
        thresholds: Sequence[float] | None = None,
        threshold_grid: str = "tf",
        curve: str = "ROC",
        summation_method: str = "interpolation",
        multi_label: bool = False,
        num_labels: int | None = None,
        label_weights: Sequence[float] | None = None,
        from_logits: bool = False,
        seed: int | None = None,
        mechanism_options: dict | None = None,
        name: str = "dp_auc",
        dtype=None,
        max_weight: float = 1.0,
        release_on_train: bool = True,
    ):
        on_jax = _check_backend() == "jax"
        super().__init__(name=name, dtype=dtype)
        object.__setattr__(self, "_on_jax", on_jax)
        curve, summation_method = Curve(curve).value, SummationMethod(summation_method).value
        checks.check_num_thresholds(num_thresholds, thresholds)
        max_weight = check_max_weight(max_weight)
        self._thresholds = Thresholds.make(num_thresholds, threshold_grid, thresholds)
        from dpauc_tf.mechanisms.arguments import ReleaseArguments  # after Keras' registration

        spec = ReleaseArguments(  # the one spec: its default for what is asked, checked once
            epsilon,
            mechanism,
            num_thresholds=self._thresholds.num_thresholds,
            delta=delta,
            mechanism_options=mechanism_options,
            max_weight=max_weight,  # the spec builds the weight-bounded mechanism
        ).spec(needs_curve=not is_roc_auc(curve, summation_method))
        mechanism, self._mechanism = spec.mechanism, spec.build()
        require(self._mechanism, "keras_metric")
        # The weights a batch may carry: any (noise off) or [0, max_weight] (the guarantee's).
        self._weight_bound = None if epsilon is None else max_weight
        # Weights of 1 only where the release calls totals label-free (class_weight would
        # move them with the label): Capabilities.unit_weights, docs/mechanisms.md.
        self._unit_weights = bool(epsilon is not None and self._mechanism.capabilities.unit_weights)
        if self._mechanism.capabilities.releases != "curve" and not is_roc_auc(
            curve, summation_method
        ):
            raise ValueError(
                f"mechanism {mechanism!r} releases only the ROC AUC, not a curve: it cannot give "
                f"curve={curve!r} with summation_method={summation_method!r}; use a curve "
                "mechanism such as 'histogram'"
            )
        # The grid the counts are kept on (the mechanism's own for auc-only).
        self._count_grid = self._mechanism.count_thresholds(self._thresholds)
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
            raise ValueError(f"seed must be None or a non-negative int, got {seed!r}")
        private = epsilon is not None and not self._labels_inferred_with_noise
        self._num_labels = checks.check_labels(multi_label, num_labels, label_weights, private)
        self._label_weights = None if label_weights is None else [float(w) for w in label_weights]
        self._config = {
            "epsilon": epsilon,
            "num_thresholds": self._thresholds.num_thresholds,
            "mechanism": mechanism,
            "delta": delta,
            "thresholds": list(thresholds) if thresholds is not None else None,
            "threshold_grid": threshold_grid,
            "curve": curve,
            "summation_method": summation_method,
            "multi_label": bool(multi_label),
            "num_labels": num_labels,
            "label_weights": self._label_weights,
            "from_logits": bool(from_logits),
            "seed": seed,
            "mechanism_options": dict(mechanism_options) if mechanism_options else None,
            "max_weight": max_weight,
            "release_on_train": bool(release_on_train),
        }
        object.__setattr__(self, "_noise_generator", self._make_generator(seed))
        object.__setattr__(self, "_releases_drawn", 0)
        object.__setattr__(self, "_counts_built", False)
        if not on_jax:
            # Neither the noise generator nor the last release may become metric variables
            # (TFF sums metric variables across clients, and checkpoints would save them).
            with tf.init_scope():
                last = tf.Variable(float("nan"), dtype=tf.float64, trainable=False)
            object.__setattr__(self, "_last_release", last)
        if self._num_labels is not None:  # else at the first update_state, as Keras' AUC
            self._build_counts(self._num_labels)

    def _build_counts(self, num_labels: int, lift: bool = False) -> None:
        """The count variables, once the number of labels is known; ``lift``: built inside
        a traced ``update_state``, so out of the graph (as Keras' AUC builds lazily)."""
        if self._label_weights is not None and self.multi_label:
            checks.check_labels(True, num_labels, self._label_weights)
        self._num_labels = num_labels
        shape = (self._count_grid.num_buckets,)
        if self.multi_label:
            shape = (num_labels, *shape)
        object.__setattr__(self, "_counts_built", True)
        if self._on_jax:
            ops_counts.add_variables(self, shape)
            return
        # At construction in the caller's context (TFF builds metrics in its own graphs).
        with tf.init_scope() if lift else contextlib.nullcontext():
            self.positives = self.add_weight(
                name="positives", shape=shape, initializer="zeros", dtype="float64"
            )
            self.negatives = self.add_weight(
                name="negatives", shape=shape, initializer="zeros", dtype="float64"
            )

    def _build_from(self, y_pred) -> None:
        """Keras' rule: with ``multi_label`` and no ``num_labels``, ``y_pred`` of rank 2
        gives the number of labels."""
        shape = tuple(y_pred.shape)
        if len(shape) != 2 or shape[1] is None:
            raise ValueError(
                "`y_pred` must have rank 2 when `multi_label=True`. "
                f"Found rank {len(shape)}. Full shape received for `y_pred`: {shape}"
            )
        self._build_counts(int(shape[1]), lift=True)

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
        """The mechanism applied to the counts at every release."""
        return self._mechanism

    @property
    def thresholds(self) -> list[float]:
        """The thresholds, ascending (as ``tf.keras.metrics.AUC.thresholds``)."""
        return list(self._thresholds.values)

    @property
    def num_thresholds(self) -> int:
        return self._thresholds.num_thresholds

    @property
    def curve(self) -> str:
        return self._config["curve"]

    @property
    def summation_method(self) -> str:
        return self._config["summation_method"]

    @property
    def multi_label(self) -> bool:
        return self._config["multi_label"]

    @property
    def num_labels(self) -> int | None:
        """The number of labels given, or inferred at the first ``update_state``."""
        return self._config["num_labels"] if self._num_labels is None else self._num_labels

    @property
    def max_weight(self) -> float:
        """The declared bound of the sample weights (with noise; ignored without)."""
        return self._config["max_weight"]

    @property
    def release_on_train(self) -> bool:
        """Whether ``fit``'s epoch-end training value is a release (see the module)."""
        return self._config["release_on_train"]

    @property
    def label_weights(self) -> list[float] | None:
        return self._label_weights

    @property
    def releases_drawn(self) -> int:
        """How many releases this metric has drawn (each costs [`dp_event`][])."""
        return self._releases_drawn

    @property
    def released_value(self) -> float:
        """The last release's value since the counts were reset (NaN before it); reading it
        is not a release."""
        if self._on_jax:
            return self._last_release_host
        return float(self._last_release.numpy())

    def privacy_statement(self) -> PrivacyStatement:
        """Neighbouring relation, sensitivity, noise and (epsilon, delta) of one release."""
        statement = self._mechanism.statement()
        if not self.multi_label or self._num_labels in (None, 1):  # None: noise off, not built
            return statement
        labels = self._num_labels
        return PrivacyStatement(
            mechanism=statement.mechanism,
            neighbouring=statement.neighbouring + f"; {labels} labels per example",
            sensitivity=statement.sensitivity + f", for each of {labels} labels",
            noise=statement.noise + f", for each of {labels} labels",
            epsilon=statement.epsilon * labels,  # basic composition over the labels
            delta=statement.delta * labels,
            claimed_epsilon=statement.claimed_epsilon,
        )

    def dp_event(self) -> dp_accounting.DpEvent:
        """One release (one value) as a dp-accounting event: one per label."""
        event = self._mechanism.dp_event()
        if self.multi_label and (self._num_labels or 1) > 1:
            return dp_accounting.SelfComposedDpEvent(event, self._num_labels)
        return event

    # -- Metric API ---------------------------------------------------------------------
    def update_state(self, y_true, y_pred, sample_weight=None):
        try:
            self._update_state(y_true, y_pred, sample_weight)
        except ValueError as error:  # one line, not AutoGraph's traceback (Keras 2)
            raise checks.as_it_is(error) from None

    def _update_state(self, y_true, y_pred, sample_weight):
        if not self._counts_built:
            self._build_from(
                ops_counts.as_tensor(y_pred) if self._on_jax else tf.convert_to_tensor(y_pred)
            )
        if self._on_jax:
            batch = ops_counts.batch_counts(
                self._count_grid,
                y_true,
                y_pred,
                sample_weight,
                num_labels=self._num_labels,
                multi_label=self.multi_label,
                from_logits=self._config["from_logits"],
                integer_weights=self._mechanism.capabilities.integer_counts,
                max_weight=self._weight_bound,
                keras_shapes=self.epsilon is None,
                label_weights=self._label_weights,
                unit_weights=self._unit_weights,
            )
            high, low = ops_counts.add_exactly(self.counts_high.value, self.counts_low.value, batch)
            self.counts_high.assign(high)
            self.counts_low.assign(low)
            return
        checks.check_distributed(self.positives)  # TensorFlow: counts across replicas are synced
        tf_counts.add_batch(self, y_true, y_pred, sample_weight)

    def _counts(self):
        if not self._counts_built:
            raise ValueError(
                f"DPAUC metric {self.name!r} (multi_label, num_labels inferred) has no counts "
                "before its first update_state"
            )
        if self._on_jax:  # eagerly only: the host reads the float32 halves as float64
            pos, neg = ops_counts.read_counts(self.counts_high.value, self.counts_low.value)
            return tf.constant(pos), tf.constant(neg)
        return tf.convert_to_tensor(self.positives), tf.convert_to_tensor(self.negatives)

    def counts(self) -> tuple[np.ndarray, np.ndarray]:
        """``(pos, neg)``: the exact per-bucket counts so far, float64 numpy arrays
        (``[T + 1]``, ``[num_labels, T + 1]`` with ``multi_label``). Not a release: the
        counts are the private data; publish only releases."""
        pos, neg = self._counts()
        return pos.numpy(), neg.numpy()

    def _output(self, value):
        """A value as ``result()`` returns it: a tensor of the metric's dtype and backend."""
        if self._on_jax:
            import keras

            return keras.ops.convert_to_tensor(np.asarray(value, self.dtype))
        return tf.cast(value, self.dtype)

    def _exact_value(self, pos, neg) -> float:
        """The noise-free value of numpy counts (``epsilon=None``), on the host."""
        return float(self.value_from_release({"pos": tf.constant(pos), "neg": tf.constant(neg)}))

    def value_from_release(self, release, mechanism: CountMechanism | None = None) -> tf.Tensor:
        """The metric's value from a release, or from the sum of clients' releases, drawn by
        ``mechanism`` (default: the metric's): post-processing, no noise, no release counted.

        ``mechanism`` must be the metric's mechanism or one with the same release format
        (for a secure sum of shares: ``mechanism.aggregate()``).

        Examples:
            >>> m = DPAUC(epsilon=None, num_thresholds=3)
            >>> round(float(m.value_from_release({"pos": [0., 1., 2., 1.], "neg": [2., 1., 0., 0.]})), 4)
            0.2917
        """
        mechanism = self._mechanism if mechanism is None else mechanism
        release = {key: tf.cast(value, tf.float64) for key, value in release.items()}
        if self.curve == "ROC" and self.summation_method == "interpolation":
            if self.epsilon is None:
                aucs = keras_auc(confusion_from_histogram(release["pos"], release["neg"]))
            else:
                aucs = mechanism.estimate_auc(release)
        else:
            aucs = keras_auc(mechanism.to_confusion(release), self.curve, self.summation_method)
        if not self.multi_label:
            return aucs
        if self._label_weights is None:
            return tf.reduce_mean(aucs)
        weights = tf.constant(self._label_weights, aucs.dtype)
        return tf.math.divide_no_nan(tf.reduce_sum(aucs * weights), tf.reduce_sum(weights))

    @tf.autograph.experimental.do_not_convert
    def _authorize_release(self) -> None:
        """Every release guard's permission, before anything is drawn (may raise)."""
        for guard in list(_RELEASE_GUARDS):
            try:
                guard(self)
            except Exception as refusal:
                # Keras 2 runs result() through AutoGraph even eagerly, which would re-raise
                # the refusal as a StagingError: let it reach the caller as it is.
                raise checks.as_it_is(refusal) from None

    def release(self) -> tf.Tensor:
        """Draws one release of the current counts and returns its value (costs epsilon).
        The release guards are asked first: one that refuses raises, and nothing is drawn."""
        self._authorize_release()
        pos, neg = self._counts()
        release = self._mechanism.release(pos, neg, seed=self._noise_generator.make_seeds(1)[:, 0])
        object.__setattr__(self, "_last_release_counts", release)  # for release_interval()
        value = tf.cast(self.value_from_release(release), tf.float64)
        if self._on_jax:
            object.__setattr__(self, "_last_release_host", float(value))
            self.released.assign(np.float32(float(value)))
        else:
            self._last_release.assign(value)
        object.__setattr__(self, "_releases_drawn", self._releases_drawn + 1)
        return self._output(value)

    def _skips_release(self) -> bool:
        """``release_on_train=False`` and this is ``fit``'s epoch-end training value."""
        return not self.release_on_train and checks.in_training_fit()

    def result(self):
        """Eagerly: a new release (see the module docstring). In a graph: the last release
        since the counts were last reset (NaN before it: nothing of another data set). NaN
        where a release guard withholds the release ([`ReleaseWithheld`][])."""
        try:
            return self._result()
        except ReleaseWithheld:
            return self._output(float("nan"))

    def _result(self):
        if not self._counts_built:
            return self._output(float("nan"))
        if self._on_jax:
            return self._jax_result()
        if self.epsilon is None:  # not private: TensorFlow's AUC of the exact counts
            if tf.executing_eagerly():
                self._authorize_release()
            pos, neg = self._counts()
            return tf.cast(self.value_from_release({"pos": pos, "neg": neg}), self.dtype)
        if tf.executing_eagerly():
            if self._skips_release():
                return self._output(float("nan"))
            return self.release()
        checks.refuse_tff_server_finalizer(self)
        return tf.cast(tf.convert_to_tensor(self._last_release), self.dtype)

    def _jax_result(self):
        """JAX: in a Keras step (traced or in a ``StatelessScope``) the last release, or the
        live noise-free value through a host callback; eagerly a release on the host."""
        high, low = self.counts_high.value, self.counts_low.value
        if self.epsilon is None:
            if not ops_counts.in_step(high):
                self._authorize_release()
            return ops_counts.host_value(self._exact_value, high, low, self.dtype)
        if ops_counts.in_step(high):
            import keras

            return keras.ops.cast(self.released.value, self.dtype)
        if self._skips_release():
            return self._output(float("nan"))
        return self.release()

    def release_interval(self, confidence: float = 0.95, target: str = "population"):
        """The interval of the last release; no new release, no privacy cost
        (`dpauc_tf.keras.intervals.last_release_interval`)."""
        from dpauc_tf.keras.intervals import last_release_interval

        return last_release_interval(self, confidence, target)

    def summaries(
        self,
        max_fpr: float | None = None,
        tpr_at_fpr: float | None = None,
        fpr_at_tpr: float | None = None,
        average_precision: bool = True,
        confidence: float | None = 0.95,
        target: str = "population",
    ) -> dict:
        """Partial AUC, operating points and average precision of the **last release** (the
        one ``result()`` drew), each with its interval: post-processing of that release, no
        new release and no extra epsilon (the ``"privacy"`` entry says so). Call it eagerly
        after ``result()`` (``model.evaluate`` ends with one); with ``epsilon=None`` (NOT
        private) it reads the exact counts so far.

        Args:
          max_fpr: the partial AUC's bound in ``(0, 1]`` (scikit-learn's
            ``roc_auc_score(max_fpr=...)``, McClish-standardised).
          tpr_at_fpr: the recall at this false-positive rate on the released curve, and the
            threshold that achieves it.
          fpr_at_tpr: the false-positive rate at this recall, and its threshold.
          average_precision: scikit-learn's ``average_precision_score`` (step sum).
          confidence: the intervals' coverage (``None``: values only).
          target: ``"population"`` (privacy noise and sampling error) or ``"sample"``.

        Returns:
          ``{"partial_auc": {...}, "tpr_at_fpr": {...}, "average_precision": {...},
          "summary_confidence", "summary_ci_target", "privacy"}`` of plain floats (``None``
          where undefined), as ``dpauc evaluate --format json`` nests them.

        Raises:
          ValueError: one line, where the mechanism releases no curve (the default ROC
            mechanism ``rank-sum`` releases two numbers: pass ``mechanism="histogram"``),
            before a release, with ``multi_label``, or for a bad rate.

        Examples:
            >>> m = DPAUC(epsilon=None, num_thresholds=5)
            >>> m.update_state([0, 0, 1, 1], [0.1, 0.6, 0.4, 0.9])
            >>> round(m.summaries(max_fpr=0.5)["partial_auc"]["value"], 4)
            0.6667
        """
        from dpauc_tf.keras.intervals import last_release_summaries, summaries_dict

        if not tf.executing_eagerly():
            raise ValueError("summaries() runs eagerly, after result() (not in a tf.function)")
        summary = last_release_summaries(
            self,
            max_fpr=max_fpr,
            tpr_at_fpr=tpr_at_fpr,
            fpr_at_tpr=fpr_at_tpr,
            average_precision=average_precision,
            confidence=confidence,
            target=target,
        )
        return summaries_dict(self, summary)

    def roc_curve(self) -> RocCurve:
        """One release as ROC points (sorted by FPR). Each call is a release.

        Mechanisms that release only the AUC (``"auc-only"``) have no curve: ``ValueError``.
        """
        if self.epsilon is not None and self._mechanism.capabilities.releases != "curve":
            raise ValueError(
                f"mechanism {self._mechanism.name!r} releases only the AUC: there is no ROC "
                "curve; use a curve mechanism (e.g. mechanism='histogram') for roc_curve()"
            )
        self._authorize_release()
        pos, neg = self._counts()
        if self.epsilon is None:
            return roc_from_confusion(confusion_from_histogram(pos, neg))
        release = self._mechanism.release(pos, neg, seed=self._noise_generator.make_seeds(1)[:, 0])
        object.__setattr__(self, "_releases_drawn", self._releases_drawn + 1)
        return roc_from_confusion(self._mechanism.to_confusion(release))

    def reset_state(self):
        """Zeroes the counts and forgets the last release: a compiled step (the per-batch
        progress bar) then shows NaN, never the value of another data set or epoch."""
        object.__setattr__(self, "_last_release_counts", None)  # release_interval() forgets it
        if not self._counts_built:
            return
        if self._on_jax:
            for variable in (self.counts_high, self.counts_low):
                variable.assign(np.zeros(variable.shape, "float32"))
            self.released.assign(np.float32("nan"))
            object.__setattr__(self, "_last_release_host", float("nan"))
            return
        for variable in (self.positives, self.negatives):
            variable.assign(tf.zeros_like(variable))
        self._last_release.assign(float("nan"))

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
