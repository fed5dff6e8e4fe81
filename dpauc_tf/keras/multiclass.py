"""``DPMultiClassAUC``: one-vs-rest multi-class AUC with label DP, as a Keras metric.

The metric counts, per class ``c``, the examples of class ``c`` (positives) and all others
(negatives) per bucket of the score ``y_pred[:, c]``, in the same float64 weights as
[`DPAUC`][] with ``multi_label=True`` (it is one, with one label
per class), and releases the ``C x 2 x (T + 1)`` counts through
[`dpauc_tf.mechanisms.multiclass.OneVsRest`][]: every class at the class budget, so that
the two classes one example's class change touches cost ``epsilon`` together
(``docs/multiclass.md``). ``average`` picks scikit-learn's ``macro``, ``weighted`` or
``micro`` one-vs-rest average, all post-processing of the same release.

Releases, guards, the budget callback and the last-release display work as for ``DPAUC``
(its module docstring), on Keras 2 and 3, with the TensorFlow and the JAX backends (on JAX
the labels are converted with ``keras.ops`` and the release runs on the host).
"""

from __future__ import annotations

from collections.abc import Mapping

import dp_accounting
import numpy as np
import tensorflow as tf

from dpauc_tf.core.defaults import DEFAULT_NUM_THRESHOLDS
from dpauc_tf.keras import checks, ops_counts
from dpauc_tf.keras.metric import DPAUC
from dpauc_tf.mechanisms import CountMechanism
from dpauc_tf.mechanisms.laws import Average
from dpauc_tf.mechanisms.multiclass import (
    OneVsRest,
    averages,
    check_num_classes,
)
from dpauc_tf.privacy.statement import PrivacyStatement


@tf.keras.utils.register_keras_serializable(package="dpauc_tf")
class DPMultiClassAUC(DPAUC):
    """One-vs-rest multi-class ROC AUC with label differential privacy.

    ``y_true``: class ids ``[N]`` (or ``[N, 1]``) or one-hot ``[N, num_classes]``;
    ``y_pred``: class probabilities ``[N, num_classes]`` (softmax outputs), or logits with
    ``from_logits=True`` (a softmax maps them). With ``epsilon=None`` and
    ``average="macro"`` the value equals ``tf.keras.metrics.AUC(multi_label=True,
    num_labels=num_classes)`` on one-hot labels (NOT private).

    Args:
      num_classes: the number of classes ``C >= 2``, or ``None`` (default): inferred at the
        first ``update_state`` from ``y_pred.shape[-1]``, as Keras'
        ``AUC(multi_label=True)`` infers ``num_labels`` (also with noise: the guarantee
        does not depend on ``C``). A later batch with another number of columns is
        refused; one column is refused (a binary classifier: use [`DPAUC`][]).
      average: ``"macro"`` (default; the mean of the per-class AUCs), ``"weighted"`` (by the
        released class supports) or ``"micro"`` (the AUC of the counts summed over the
        classes), as ``sklearn.metrics.roc_auc_score(multi_class="ovr", average=...)``.
      epsilon: budget of **one** release of all classes (``None``: no noise, NOT private).
        A class change moves counts in two classes: every class is released at the class
        budget (``epsilon / 2`` for pure-DP mechanisms), ``privacy_statement()`` and
        ``dp_event()`` state the whole release.
      num_thresholds: thresholds of the grid (as ``tf.keras.metrics.AUC``).
      mechanism: the binary mechanism of every class (default ``"histogram"``:
        ``Laplace(4 / epsilon)`` on each of the ``2 C (T + 1)`` counts;
        ``"histogram-public-scores"``: ``Laplace(2 / epsilon)`` on the positives, the score
        histograms published; ``"rank-sum"``: every class's rank sum and positive count,
        the binary ``rank-sum`` at ``epsilon / 2``, ``macro`` or ``weighted`` only:
        `dpauc_tf.mechanisms.multiclass_rank_sum`).
      delta: for mechanisms that take one (the whole release's).
      from_logits: the predictions are logits (softmax first).
      seed: ``None`` (OS entropy) or an int (reproducible; experiments only).
      mechanism_options: further options of the mechanism.
      name: metric name.
      dtype: the dtype of ``result()``.

    Examples:
        >>> m = DPMultiClassAUC(num_classes=3, epsilon=None, num_thresholds=50)
        >>> m.update_state([0, 1, 2, 1], [[.8, .1, .1], [.2, .7, .1], [.3, .3, .4], [.6, .3, .1]])
        >>> round(float(m.result()), 4)
        0.9583
        >>> inferred = DPMultiClassAUC(epsilon=None, num_thresholds=50)  # C at the first update
        >>> inferred.update_state([0, 1], [[.8, .1, .1], [.2, .7, .1]])
        >>> inferred.num_classes
        3
        >>> noisy = DPMultiClassAUC(num_classes=3, epsilon=1.0, seed=0)
        >>> noisy.privacy_statement().epsilon, noisy.mechanism.noise_scale
        (1.0, 4.0)

    With ``compile()``:

    ```python
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy",
                  metrics=[DPMultiClassAUC(num_classes=10, epsilon=1.0)])
    ```
    """

    _labels_inferred_with_noise = True  # the cost does not depend on C (L1 = 4)

    def __init__(
        self,
        num_classes: int | None = None,
        average: str = "macro",
        epsilon: float | None = 1.0,
        num_thresholds: int = DEFAULT_NUM_THRESHOLDS,
        mechanism: str = "histogram",
        delta: float | None = None,
        from_logits: bool = False,
        seed: int | None = None,
        mechanism_options: Mapping | None = None,
        name: str = "dp_multiclass_auc",
        dtype=None,
    ):
        if num_classes is not None:
            num_classes = _check_classes(num_classes, "num_classes")
        average = Average(average).value
        # The class budget, noise and L1 = 4 do not depend on C: without num_classes a
        # two-class probe gives them until the first update sets C.
        ovr = _one_vs_rest(
            mechanism,
            epsilon,
            2 if num_classes is None else num_classes,
            num_thresholds,
            delta,
            mechanism_options,
        )
        if average == "micro" and ovr.capabilities.releases != "curve":
            raise ValueError(
                f"DPMultiClassAUC(mechanism={mechanism!r}) releases per-class rank sums: "
                "average='micro' needs the pooled rank sum, which dpauc_tf.mechanisms."
                "multiclass_release.evaluate_multiclass(average='micro') releases; use "
                "'macro' or 'weighted' here"
            )
        super().__init__(
            epsilon=ovr.class_epsilon,
            num_thresholds=num_thresholds,
            mechanism=mechanism,
            delta=ovr.class_delta,
            multi_label=True,
            num_labels=num_classes,
            seed=seed,
            mechanism_options=dict(mechanism_options) if mechanism_options else None,
            name=name,
            dtype=dtype,
        )
        object.__setattr__(self, "_ovr", ovr)
        # L1 = 4 whatever C holds for weights that stay when the class changes: with a weight
        # that depends on the class (class_weight) every class's counts would move. Weights
        # of 1 only, with noise (docs/multiclass.md).
        self._unit_weights = epsilon is not None
        object.__setattr__(
            self,
            "_multiclass_config",
            {
                "num_classes": num_classes,
                "average": average,
                "epsilon": epsilon,
                "num_thresholds": self.num_thresholds,
                "mechanism": mechanism,
                "delta": delta,
                "from_logits": bool(from_logits),
                "seed": seed,
                "mechanism_options": dict(mechanism_options) if mechanism_options else None,
            },
        )

    def _infer_classes(self, y_pred) -> None:
        """The first update without ``num_classes``: ``C = y_pred.shape[-1]`` (as Keras'
        ``AUC(multi_label=True)`` infers ``num_labels``); the counts are built then, out of
        any graph being traced (``DPAUC._build_counts``)."""
        shape = tuple(y_pred.shape)
        if len(shape) != 2 or shape[-1] is None:
            raise ValueError(
                "DPMultiClassAUC(num_classes=None) infers the number of classes from the first "
                f"batch's predictions, which must have shape [N, C] with C known; got {shape}. "
                "Pass num_classes."
            )
        classes = _check_classes(int(shape[-1]), "predictions' last dimension")
        config = self._multiclass_config
        ovr = _one_vs_rest(
            config["mechanism"],
            config["epsilon"],
            classes,
            config["num_thresholds"],
            config["delta"],
            config["mechanism_options"],
        )
        object.__setattr__(self, "_ovr", ovr)
        config["num_classes"] = classes  # get_config then rebuilds the same state
        self._build_counts(classes, lift=True)

    # -- what differs from DPAUC --------------------------------------------------------
    @property
    def epsilon(self) -> float | None:
        """Epsilon of one release of all classes (``None``: no noise)."""
        config = getattr(self, "_multiclass_config", None)
        return self._config["epsilon"] if config is None else config["epsilon"]

    @property
    def num_classes(self) -> int | None:
        """The number of classes, given or inferred at the first update (None before)."""
        return self._multiclass_config["num_classes"]

    @property
    def average(self) -> str:
        return self._multiclass_config["average"]

    @property
    def one_vs_rest(self) -> OneVsRest:
        """The release's [`OneVsRest`][] (a ``ValueError`` while ``C`` is not known)."""
        if self.num_classes is None:
            raise ValueError(
                "DPMultiClassAUC(num_classes=None) knows the number of classes only after "
                "its first update_state; pass num_classes to have it before"
            )
        return self._ovr

    def privacy_statement(self) -> PrivacyStatement:
        """The guarantee of one release of all classes (a class change; L1 = 4). Before the
        first update without ``num_classes`` it is already exact (nothing in it but the
        noise line's ``C`` depends on ``C``), with ``C`` stated as not known yet."""
        return self._ovr.statement(classes_known=self.num_classes is not None)

    def dp_event(self) -> dp_accounting.DpEvent:
        """One release: two classes' events composed (the two a class change touches)."""
        return self._ovr.dp_event()

    def update_state(self, y_true, y_pred, sample_weight=None):
        try:
            if self.num_classes is None:
                self._infer_classes(
                    ops_counts.as_tensor(y_pred) if self._on_jax else tf.convert_to_tensor(y_pred)
                )
            one_hot, probabilities = self._inputs(y_true, y_pred)
        except ValueError as error:
            raise checks.as_it_is(error) from None
        super().update_state(one_hot, probabilities, sample_weight)

    def _inputs(self, y_true, y_pred):
        if self._on_jax:
            return self._jax_inputs(y_true, y_pred)
        classes = self.num_classes
        y_pred = tf.convert_to_tensor(y_pred)
        if y_pred.shape.rank != 2 or y_pred.shape[-1] not in (None, classes):
            raise ValueError(
                f"DPMultiClassAUC(num_classes={classes}): predictions must have shape "
                f"[N, {classes}] (the same C in every batch), got {y_pred.shape}"
            )
        if self._multiclass_config["from_logits"]:
            y_pred = tf.nn.softmax(tf.cast(y_pred, tf.float64), axis=-1)
        y_true = tf.cast(tf.convert_to_tensor(y_true), tf.float64)
        rank = y_true.shape.rank
        if rank == 2 and y_true.shape[-1] == classes:  # one-hot
            one_hot = y_true
            binary = tf.reduce_all((y_true == 0.0) | (y_true == 1.0), axis=-1)
            ok = binary & tf.equal(tf.reduce_sum(y_true, axis=-1), 1.0)
            message = "one-hot labels need exactly one 1 (and zeros) per row"
        elif rank == 1 or (rank == 2 and y_true.shape[-1] == 1):  # class ids
            ids = tf.reshape(y_true, [-1])
            ok = (ids == tf.round(ids)) & (ids >= 0.0) & (ids < classes)
            one_hot = tf.one_hot(
                tf.cast(tf.where(ok, ids, 0.0), tf.int32), classes, dtype=tf.float64
            )
            message = f"class ids must be integers in [0, {classes})"
        else:
            raise ValueError(
                f"DPMultiClassAUC(num_classes={classes}): labels must be class ids [N] or "
                f"one-hot [N, {classes}], got shape {y_true.shape}"
            )
        all_ok = tf.reduce_all(ok)
        if tf.executing_eagerly():
            if not bool(all_ok):
                row = int(np.flatnonzero(~ok.numpy())[0])
                raise ValueError(f"DPMultiClassAUC: {message}; row {row} is not")
            return one_hot, y_pred
        check = tf.debugging.Assert(all_ok, [f"DPMultiClassAUC: {message}"])
        with tf.control_dependencies([check]):  # XLA drops the assertion: NaN, not a number
            return tf.where(all_ok, one_hot, tf.constant(np.nan, tf.float64)), tf.identity(y_pred)

    def _jax_inputs(self, y_true, y_pred):
        """The same conversion in ``keras.ops`` (inside ``jax.jit`` bad rows become NaN
        labels, which poison the batch's counts: the value is NaN, never a wrong number)."""
        from keras import ops

        classes = self.num_classes
        y_pred = ops.convert_to_tensor(y_pred)
        if len(y_pred.shape) != 2 or y_pred.shape[-1] != classes:
            raise ValueError(
                f"DPMultiClassAUC(num_classes={classes}): predictions must have shape "
                f"[N, {classes}] (the same C in every batch), got {tuple(y_pred.shape)}"
            )
        if self._multiclass_config["from_logits"]:
            y_pred = ops.softmax(ops.cast(y_pred, "float32"), axis=-1)
        y_true = ops.cast(ops.convert_to_tensor(y_true), "float32")
        shape = tuple(y_true.shape)
        if len(shape) == 2 and shape[-1] == classes:
            one_hot = y_true
            binary = ops.all(ops.logical_or(y_true == 0.0, y_true == 1.0), axis=-1)
            ok = ops.logical_and(binary, ops.sum(y_true, axis=-1) == 1.0)
            message = "one-hot labels need exactly one 1 (and zeros) per row"
        elif len(shape) == 1 or (len(shape) == 2 and shape[-1] == 1):
            ids = ops.reshape(y_true, [-1])
            ok = ops.logical_and(ids == ops.round(ids), ops.logical_and(ids >= 0.0, ids < classes))
            safe = ops.cast(ops.where(ok, ids, 0.0), "int32")
            one_hot = ops.one_hot(safe, classes, dtype="float32")
            message = f"class ids must be integers in [0, {classes})"
        else:
            raise ValueError(
                f"DPMultiClassAUC(num_classes={classes}): labels must be class ids [N] or "
                f"one-hot [N, {classes}], got shape {shape}"
            )
        if not ops_counts.is_traced(ok):
            bad = np.flatnonzero(~np.asarray(ok))
            if bad.size:
                raise ValueError(f"DPMultiClassAUC: {message}; row {int(bad[0])} is not")
            return one_hot, y_pred
        return ops.where(ops.all(ok), one_hot, float("nan")), y_pred

    def value_from_release(self, release, mechanism: CountMechanism | None = None) -> tf.Tensor:
        """The chosen average of a release (or of the sum of clients' releases):
        post-processing, no noise, no release counted.

        Examples:
            >>> m = DPMultiClassAUC(num_classes=2, epsilon=None, num_thresholds=3, average="micro")
            >>> pos = [[0., 0., 2., 0.], [0., 1., 1., 0.]]  # [C, T + 1]: class 0, class 1
            >>> neg = [[0., 2., 0., 0.], [0., 1., 1., 0.]]
            >>> float(m.value_from_release({"pos": pos, "neg": neg}))
            0.75
        """
        mechanism = self._mechanism if mechanism is None else mechanism
        out = averages(mechanism, release, keras_exact=self.epsilon is None)
        return out[self.average]

    def get_config(self):
        base = tf.keras.metrics.Metric.get_config(self)
        return {**base, **self._multiclass_config}


def _check_classes(num_classes, what: str) -> int:
    """``C >= 2``; one column is a binary classifier's score: DPAUC's, not one-vs-rest."""
    if not isinstance(num_classes, bool) and num_classes == 1:
        raise ValueError(
            f"DPMultiClassAUC: {what} is 1, one score per example: that is a binary "
            "classifier; use DPAUC (one-vs-rest needs C >= 2 classes)"
        )
    return check_num_classes(num_classes)


def _one_vs_rest(mechanism, epsilon, num_classes, num_thresholds, delta, options):
    """The one-vs-rest release of ``num_classes`` classes, built by the one spec
    ([`ReleaseArguments`][dpauc_tf.mechanisms.arguments.ReleaseArguments] with
    ``num_classes``: its ``OneVsRest`` or per-class rank sums)."""
    from dpauc_tf.mechanisms.arguments import ReleaseArguments  # as DPAUC: after Keras'

    return ReleaseArguments(
        epsilon,
        mechanism,
        num_thresholds=num_thresholds,
        delta=delta,
        mechanism_options=options,
        num_classes=num_classes,
    ).build()
