"""One-vs-rest multi-class AUC with label DP: counts, the release and its guarantee.

For ``C`` classes, scores ``s`` of shape ``[N, C]`` and labels ``y`` (class ids or one-hot),
class ``c``'s binary problem has the examples of class ``c`` as positives and every other
example as negatives, all scored by ``s[:, c]`` (scikit-learn's
``roc_auc_score(multi_class="ovr")``). Its per-bucket counts are ``pos[c, b]`` and
``neg[c, b]`` ([`one_vs_rest_counts`][]).

**Neighbours and sensitivity.** Label DP: two test sets differ in the class of one example
(``a`` in one, ``a'`` in the other; its scores and weight ``w <= 1`` are the same). That
changes exactly two classes' histograms: in class ``a`` weight ``w`` moves from
``pos[a, b_a]`` to ``neg[a, b_a]`` (``b_a`` the bucket of ``s_a``), in class ``a'`` it moves
from ``neg[a', b_a']`` to ``pos[a', b_a']``; every other class is unchanged. Over the whole
``C x 2 x (T + 1)`` release the L1 sensitivity is therefore **4** and the L2 sensitivity
**2**, whatever ``C`` (``tests/mechanisms/test_multiclass.py`` checks both by enumerating
every neighbouring label vector of small data sets).

**The release.** Every class's histogram is released by the chosen binary mechanism
(``histogram`` by default) at the *class budget*, and the guarantee of the whole release is
the composition of **two** class releases (only two classes change), computed with
dp-accounting ([`OneVsRest.dp_event`][]). For pure-DP mechanisms the class budget is
exactly ``epsilon / 2``: ``histogram`` puts ``Laplace(4 / epsilon)`` on every one of the
``2 C (T + 1)`` counts (L1 = 4). For mechanisms with a ``delta`` (Skellam, Gaussian) the
class epsilon is the largest whose two-fold composition at ``delta`` is at most ``epsilon``
(bisection on the accountant's figure): the L2 sensitivity only grows by ``sqrt(2)`` over
the binary one, so such noise grows by about ``sqrt(2)``, not 2.

**What gives the least noise.** Splitting the budget over all ``C`` classes (``epsilon /
C`` each, the naive composition) would make the noise grow with ``C``; the two-class
argument above does not. Less noise again for the same label-DP guarantee:
``mechanism="histogram-public-scores"`` releases only the positives ``pos[c, b]`` with
``Laplace(2 / epsilon)`` and the bucket totals ``pos[c, b] + neg[c, b]`` exactly (they do
not depend on the labels, so a class change moves one unit in two positive counts: L1 = 2,
L2 = sqrt(2)); but this publishes every class's score histogram. The default keeps the
scores' distribution hidden and pays a factor 2 in the noise scale.

**Sample weights.** The bounds above hold for a weight that stays when the class
changes. Keras' ``class_weight`` makes the weight depend on the class: a change from ``a`` to
``a'`` then also moves ``|w(a) - w(a')|`` in the negatives of every other class, an L1 of
``2 (w(a) + w(a')) + (C - 2) |w(a) - w(a')|`` that grows with ``C``, and the weights cannot
tell whether they depend on the class. So a noisy one-vs-rest release takes weights of 1
only ([`one_vs_rest_counts`][]'s ``unit_weights``, ``DPMultiClassAUC``); noise scaled to
``(C + 2) max_weight`` would give up the point of one-vs-rest (noise that does not grow with
``C``).

**Averages** (post-processing, no extra budget), as scikit-learn defines them: ``macro`` the
mean of the per-class AUCs, ``weighted`` their mean weighted by the classes' supports (the
*released* positives of each class, as the true supports are private), ``micro`` the AUC of
the counts summed over the classes (``sum_c pos[c, b]`` against ``sum_c neg[c, b]``: the
binary problem of all ``N x C`` (example, class) pairs). An average is NaN where a class's
AUC is undefined (no positive or no negative left after the noise).

Examples:
    >>> import numpy as np
    >>> scores = np.array([[.8, .1, .1], [.2, .7, .1], [.3, .3, .4], [.6, .2, .2]])
    >>> pos, neg = one_vs_rest_counts([0, 1, 2, 1], scores, Thresholds.make(5))
    >>> pos.shape, float(pos.sum()), float(neg.sum())
    ((3, 6), 4.0, 8.0)
    >>> m = OneVsRest("histogram", epsilon=1.0, num_classes=3, num_thresholds=5)
    >>> m.class_mechanism.noise_scale, m.statement().epsilon
    (4.0, 1.0)
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Mapping
from typing import Any

import dp_accounting
import numpy as np

from dpauc_tf.core.defaults import DEFAULT_NUM_THRESHOLDS
from dpauc_tf.core.thresholds import Thresholds
from dpauc_tf.mechanisms.option_types import frozen_options
from dpauc_tf.mechanisms.registry import get_mechanism, mechanism_spec
from dpauc_tf.privacy.statement import PrivacyStatement, check_epsilon

NEIGHBOURING = (
    "label DP, multi-class: neighbouring test sets differ only in the class of one example "
    "(its scores are the same; with noise every sample weight is 1)"
)
# Mechanisms that do not release per-class bucket counts (or not a curve).
_NOT_ONE_VS_REST = {
    "rr": "randomized response flips binary labels; a k-ary version is not provided",
}


def check_num_classes(num_classes: Any) -> int:
    """An int >= 2, or ``ValueError``/``TypeError`` saying what to pass."""
    if isinstance(num_classes, (bool, float, str)) or not isinstance(
        num_classes, (int, np.integer)
    ):
        raise TypeError(f"num_classes must be an int >= 2, got {num_classes!r}")
    if num_classes < 2:
        raise ValueError(
            f"num_classes must be >= 2 (one-vs-rest needs two classes), got {num_classes}"
        )
    return int(num_classes)


def to_one_hot(labels: Any, num_classes: int) -> np.ndarray:
    """Labels as a float64 one-hot ``[N, C]`` array: class ids ``[N]`` (or ``[N, 1]``) in
    ``[0, C)``, or one-hot rows ``[N, C]`` with exactly one 1; anything else ``ValueError``.

    Examples:
        >>> to_one_hot([2, 0], 3).tolist()
        [[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]
    """
    labels = np.asarray(labels)
    if labels.ndim == 2 and labels.shape[1] == num_classes and num_classes > 1:
        values = labels.astype(np.float64)
        if not np.all((values == 0) | (values == 1)) or np.any(values.sum(axis=1) != 1):
            row = int(
                np.flatnonzero(
                    ~np.all((values == 0) | (values == 1), axis=1) | (values.sum(axis=1) != 1)
                )[0]
            )
            raise ValueError(
                f"one-hot labels need exactly one 1 (and zeros) per row; row {row} is "
                f"{labels[row].tolist()}"
            )
        return values
    if labels.ndim == 2 and labels.shape[1] == 1:
        labels = labels[:, 0]
    if labels.ndim != 1:
        raise ValueError(
            f"labels must be class ids [N] or one-hot [N, {num_classes}], got shape {labels.shape}"
        )
    try:
        ids = labels.astype(np.float64)
    except (TypeError, ValueError) as error:
        raise ValueError(f"class ids must be integers in [0, {num_classes})") from error
    bad = ~np.isfinite(ids) | (ids != np.round(ids)) | (ids < 0) | (ids >= num_classes)
    if np.any(bad):
        row = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"class ids must be integers in [0, {num_classes}); row {row} is {labels[row]!r}"
        )
    return np.eye(num_classes, dtype=np.float64)[ids.astype(np.int64)]


def check_client_data(
    item: Any, num_classes: int | None, index: int = 0, *, from_logits: bool | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """One federated client's ``(scores [n, C], labels)`` as float64 probabilities and
    one-hot labels ``[n, C]``, checked in the caller's process: a one-line error naming
    client ``index``. ``from_logits=True`` applies a softmax first; ``None``: the caller
    has no such option (the error then does not suggest it)."""
    if not (isinstance(item, (tuple, list)) and len(item) == 2):
        raise TypeError(
            f"client {index}: each client's data must be a (scores [n, C], labels) pair, got "
            f"{type(item).__name__}"
        )
    try:
        scores = np.asarray(item[0], np.float64)
    except (TypeError, ValueError) as error:
        raise ValueError(f"client {index}: scores must be numbers ({error})") from None
    if scores.size == 0 and num_classes is not None:
        scores = scores.reshape(0, num_classes)
    if scores.ndim != 2 or (num_classes is not None and scores.shape[1] != num_classes):
        want = "C" if num_classes is None else str(num_classes)
        raise ValueError(
            f"client {index}: scores must have shape [n, {want}] (one column per class), "
            f"got {scores.shape}"
        )
    classes = check_num_classes(scores.shape[1])
    labels = np.asarray(item[1])
    try:
        one_hot = to_one_hot(labels.reshape(0) if labels.size == 0 else labels, classes)
    except ValueError as error:
        raise ValueError(f"client {index}: {error}") from None
    if one_hot.shape[0] != scores.shape[0]:
        raise ValueError(f"client {index}: {one_hot.shape[0]} labels for {scores.shape[0]} rows")
    if from_logits and scores.size:
        shifted = scores - scores.max(axis=1, keepdims=True)
        scores = np.exp(shifted) / np.exp(shifted).sum(axis=1, keepdims=True)
    bad = ~np.isfinite(scores) | (scores < 0) | (scores > 1)
    if bad.any():
        hint = "" if from_logits is None else "; logits need from_logits=True"
        raise ValueError(
            f"client {index}: scores must be finite and in [0, 1] (probabilities{hint}); "
            f"{int(bad.sum())} are not (e.g. {scores[bad][0]:g})"
        )
    return scores, one_hot


def one_vs_rest_counts(
    labels: Any,
    scores: Any,
    thresholds: Thresholds,
    num_classes: int | None = None,
    sample_weight: Any = None,
    *,
    from_logits: bool = False,
    integer_weights: bool = False,
    unit_weights: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Per-class bucket counts ``(pos, neg)``, float64 ``[C, T + 1]``.

    Args:
      labels: class ids ``[N]`` or one-hot ``[N, C]``.
      scores: ``[N, C]`` class scores in [0, 1] (probabilities), or logits with
        ``from_logits=True`` (a softmax over the classes maps them).
      thresholds: the grid of the ``T + 1`` buckets.
      num_classes: ``C`` (default: the scores' second dimension).
      sample_weight: optional weights ``[N]`` in [0, 1].
      from_logits: apply a softmax first.
      integer_weights: require weights of 0 or 1 (integer-noise mechanisms).
      unit_weights: require weights of 1 (every noisy one-vs-rest release: see the module's
        "Sample weights").
    """
    from dpauc_tf.core.counts import bucket_counts

    scores = np.asarray(scores, np.float64)
    if scores.ndim != 2:
        raise ValueError(
            f"scores must have shape [N, C] (one column per class), got {scores.shape}"
        )
    num_classes = scores.shape[1] if num_classes is None else check_num_classes(num_classes)
    if scores.shape[1] != num_classes:
        raise ValueError(
            f"scores have {scores.shape[1]} columns, expected num_classes={num_classes}"
        )
    check_num_classes(num_classes)
    one_hot = to_one_hot(labels, num_classes)
    if one_hot.shape[0] != scores.shape[0]:
        raise ValueError(f"{one_hot.shape[0]} labels for {scores.shape[0]} rows of scores")
    if from_logits:
        shifted = scores - scores.max(axis=1, keepdims=True)
        scores = np.exp(shifted) / np.exp(shifted).sum(axis=1, keepdims=True)
    rows = scores.shape[0]
    weights = None
    if sample_weight is not None:
        weights = np.asarray(sample_weight, np.float64).reshape(rows, -1)
        if weights.shape[1] != 1:
            raise ValueError("sample weights must be one per example, shape [N]")
        weights = np.repeat(weights, num_classes, axis=1).ravel()
    groups = np.tile(np.arange(num_classes), rows)
    import tensorflow as tf

    try:
        pos, neg = bucket_counts(
            one_hot.ravel(),
            scores.ravel(),
            thresholds,
            weights,
            integer_weights=integer_weights,
            unit_weights=unit_weights,
            group_ids=groups,
            num_groups=num_classes,
        )
    except tf.errors.InvalidArgumentError as error:  # eager checks: one line, a ValueError
        raise ValueError(error.message.split("Summarized data: ")[-1].strip("b'\"")) from None
    return pos.numpy(), neg.numpy()


@functools.lru_cache(maxsize=64)
def class_budget(
    mechanism: str,
    epsilon: float | None,
    delta: float | None,
    num_thresholds: int,
    options: tuple[tuple[str, Any], ...] = (),
) -> tuple[float | None, float | None]:
    """The ``(epsilon, delta)`` each class's release is built with, so that the composition
    of two class releases (a class change touches two classes) costs at most
    ``(epsilon, delta)``: ``epsilon / 2`` for pure-DP mechanisms whose statement is their
    parameter (in general the rescaling that makes the two-fold cost ``epsilon``, checked);
    for the others the largest
    class epsilon whose two-fold composition at ``delta`` (dp-accounting's best figure) is
    at most ``epsilon`` (bisection, to a relative ``1e-4`` below).

    Examples:
        >>> class_budget("histogram", 1.0, None, 10)
        (0.5, None)
    """
    if check_epsilon(epsilon) is None:
        return None, None
    opts = dict(options)
    probe = get_mechanism(
        mechanism, epsilon=epsilon, num_thresholds=num_thresholds, delta=delta, **opts
    )
    pure = not probe.delta

    def two_fold(class_epsilon: float) -> float:
        built = get_mechanism(
            mechanism, epsilon=class_epsilon, num_thresholds=num_thresholds, delta=delta, **opts
        )
        return float(built.privacy_spent(2, 0.0 if pure else delta).best)

    if pure:
        # a pure-DP release's epsilon is proportional to the mechanism's parameter (its
        # noise scales as 1 / parameter), so one rescaling makes the two-fold cost epsilon:
        # ``epsilon / 2`` where the statement is the parameter (``paper``: ``epsilon``)
        spent = float(probe.privacy_spent(2, 0.0).best)
        class_epsilon = epsilon / 2.0 if spent == 2.0 * epsilon else epsilon * epsilon / spent
        if two_fold(class_epsilon) <= epsilon * (1.0 + 1e-12):
            return class_epsilon, None
    low, high = epsilon / 4.0, epsilon
    while two_fold(low) > epsilon:  # pragma: no cover - every accountant gives 2x at most
        low /= 2.0
    for _ in range(40):
        if high - low <= 1e-4 * low:
            break
        middle = math.sqrt(low * high)
        if two_fold(middle) <= epsilon:
            low = middle
        else:
            high = middle
    return low, (None if pure else delta)


class OneVsRest:
    """A multi-class release: every class's histogram through one binary mechanism.

    Args:
      mechanism: a registered curve mechanism (``"histogram"`` by default; e.g.
        ``"histogram-public-scores"``, ``"secure-histogram"``, ``"tree-histogram"``).
      epsilon: epsilon of one release of all ``C`` classes (``None``: no noise, NOT private).
      num_classes: ``C >= 2``.
      num_thresholds: the grid's thresholds ``T``.
      delta: for mechanisms that take one (the whole release's).
      num_clients: shares of a secure mechanism (one per client).
      options: the binary mechanism's options.

    [`release`][] takes ``pos, neg`` of shape ``[C, T + 1]`` and returns the class
    mechanism's release with a leading ``C`` axis (``[R, C, ...]`` with ``repeats``); it is
    additive like every curve mechanism's (a server may sum clients' releases).

    Examples:
        >>> m = OneVsRest("histogram-public-scores", epsilon=1.0, num_classes=4, num_thresholds=10)
        >>> m.class_mechanism.noise_scale, m.statement().sensitivity.startswith("two classes")
        (2.0, True)
    """

    releases_from_summed_counts = False  # every client releases its own counts (additive)

    def __init__(
        self,
        mechanism: str = "histogram",
        *,
        epsilon: float | None,
        num_classes: int,
        num_thresholds: int = DEFAULT_NUM_THRESHOLDS,
        delta: float | None = None,
        num_clients: int | None = None,
        options: Mapping[str, Any] | None = None,
    ):
        self.num_classes = check_num_classes(num_classes)
        spec = mechanism_spec(mechanism)  # unknown names: the registry's message
        caps = spec.capabilities
        if mechanism in _NOT_ONE_VS_REST or caps.releases != "curve" or caps.transforms_data:
            why = _NOT_ONE_VS_REST.get(
                mechanism,
                "it releases only an AUC"
                if caps.releases != "curve"
                else "it changes every example before counting",
            )
            raise ValueError(
                f"mechanism {mechanism!r} cannot release one-vs-rest counts ({why}); use a "
                "curve mechanism such as 'histogram'"
            )
        frozen = frozen_options(options)
        options = dict(frozen)
        self.base_name = mechanism
        self.epsilon = check_epsilon(epsilon)
        self.class_epsilon, self.class_delta = class_budget(
            mechanism, self.epsilon, delta, int(num_thresholds), frozen
        )
        self.class_mechanism = get_mechanism(
            mechanism,
            epsilon=self.class_epsilon,
            num_thresholds=int(num_thresholds),
            delta=self.class_delta,
            num_clients=num_clients,
            **options,
        )
        self.delta = float(self.class_mechanism.delta or 0.0)
        self.num_thresholds = self.class_mechanism.num_thresholds
        self.name = f"one-vs-rest {self.class_mechanism.name}"

    # -- what the registry callers read -------------------------------------------------
    @property
    def capabilities(self):
        return self.class_mechanism.capabilities

    @property
    def num_clients(self) -> int:
        return int(getattr(self.class_mechanism, "num_clients", 1))

    def count_thresholds(self, thresholds: Thresholds) -> Thresholds:
        """The grid every client counts on: the class mechanism's."""
        return self.class_mechanism.count_thresholds(thresholds)

    def release(self, pos, neg, seed=None, repeats: int | None = None):
        """Every class's noisy release (one draw of the class mechanism on ``[C, T + 1]``)."""
        shape = np.shape(pos)
        if len(shape) != 2 or shape[0] != self.num_classes or np.shape(neg) != shape:
            raise ValueError(
                f"one-vs-rest counts must have shape [C={self.num_classes}, T+1], got "
                f"{shape} and {np.shape(neg)}"
            )
        return self.class_mechanism.release(pos, neg, seed=seed, repeats=repeats)

    def aggregate(self) -> OneVsRest:
        """The release of summed counts distributed as the secure sum of every share."""
        out = object.__new__(OneVsRest)
        out.__dict__.update(self.__dict__)
        out.class_mechanism = self.class_mechanism.aggregate()
        return out

    # -- post-processing ---------------------------------------------------------------
    def estimate(self, release: Mapping[str, Any]) -> dict[str, np.ndarray]:
        """Per-class AUCs ``[..., C]``, ROC points ``[..., C, T]``, released supports and the
        three averages ``[...]`` of a (summed) release: post-processing, no noise."""
        import tensorflow as tf

        from dpauc_tf.core.curve import roc_from_confusion

        tensors = {
            key: tf.constant(np.asarray(value), tf.float64) for key, value in release.items()
        }
        out = {key: value.numpy() for key, value in averages(self.class_mechanism, tensors).items()}
        roc = roc_from_confusion(self.class_mechanism.to_confusion(tensors))
        return {**out, "fpr": roc.fpr.numpy(), "tpr": roc.tpr.numpy()}

    # -- the guarantee -----------------------------------------------------------------
    def dp_event(self) -> dp_accounting.DpEvent:
        """One release: the class mechanism's event twice (the two classes a change touches)."""
        return dp_accounting.SelfComposedDpEvent(self.class_mechanism.dp_event(), 2)

    def privacy_spent(self, releases: int = 1, delta: float | None = None):
        """Epsilon of ``releases`` releases (dp-accounting, `composed_epsilon`)."""
        from dpauc_tf.privacy.accounting import composed_epsilon

        return composed_epsilon(self.dp_event(), releases, self.delta if delta is None else delta)

    def achieved_epsilon(self, num_reporting: int) -> float:
        """Epsilon when ``num_reporting`` clients reported: the composition of two classes'
        achieved releases (exact for pure DP, basic composition otherwise)."""
        if self.epsilon is None:
            return math.inf
        full = num_reporting >= self.num_clients
        if full:
            return float(self.statement().epsilon)
        return 2.0 * float(self.class_mechanism.achieved_epsilon(num_reporting))

    def achieved(self, num_reporting: int | None) -> tuple[PrivacyStatement, bool]:
        """The statement achieved by ``num_reporting`` reports, and whether fewer shares
        arrived than the noise was sized for (the whole output then composes basically:
        [`dpauc_tf.mechanisms.release.finish_release`][])."""
        short = num_reporting is not None and num_reporting < self.num_clients
        return self.statement(num_reporting if short else None), short

    def statement(
        self, num_reporting: int | None = None, *, classes_known: bool = True
    ) -> PrivacyStatement:
        """The guarantee of one release of all classes (achieved by ``num_reporting``
        reports when given). ``classes_known=False``: the number of classes is not known
        yet (a metric that infers it from its first batch); nothing in the guarantee but
        the noise line's ``C`` depends on it, and that line says so."""
        inner = self.class_mechanism.statement()
        if self.epsilon is None:
            return dataclasses.replace(inner, mechanism=self.name)
        epsilon = float(self.privacy_spent(1).best)
        delta = self.delta
        classes = self.num_classes if classes_known else "not known yet"
        noise = f"per class (C = {classes}, class epsilon {self.class_epsilon:.6g}): {inner.noise}"
        if num_reporting is not None and num_reporting < self.num_clients:
            epsilon = self.achieved_epsilon(num_reporting)
            delta = min(1.0, 2.0 * delta)
            noise += f"; only {num_reporting} of {self.num_clients} shares reported"
        # the class mechanism's law says what it publishes and what one change moves: its
        # own neighbouring relation's extra (e.g. the score histogram released exactly) and
        # its L1 sensitivity (its statement's number), moved in two classes
        extra = inner.neighbouring[len(self.class_mechanism.neighbouring) :]
        l1 = inner.sensitivity_value if inner.sensitivity_norm == "L1" else None
        sensitivity = (
            f"two classes' releases change, each as one binary release ({inner.sensitivity})"
        )
        if l1 is not None:
            sensitivity += f"; L1 = {2 * float(l1):g} over the C classes' counts"
        return PrivacyStatement(
            mechanism=self.name,
            neighbouring=NEIGHBOURING + extra.replace("histogram is", "histograms are"),
            sensitivity=sensitivity,
            noise=noise,
            epsilon=epsilon,
            delta=delta,
        )

    def __repr__(self) -> str:
        return (
            f"OneVsRest({self.base_name!r}, epsilon={self.epsilon!r}, "
            f"num_classes={self.num_classes}, num_thresholds={self.num_thresholds})"
        )


def averages(mechanism, release: Mapping[str, Any], *, keras_exact: bool = False) -> dict:
    """Per-class AUCs ``[..., C]``, released supports ``[..., C]`` and the ``macro``,
    ``weighted`` and ``micro`` averages ``[...]`` of a (summed) one-vs-rest release of
    ``mechanism`` (the class mechanism), as float64 tensors: the one place this math lives
    ([`OneVsRest`][] and the Keras metric call it). ``keras_exact``: exact counts
    ``{"pos", "neg"}`` with Keras' trapezoid rule (noise off, as ``tf.keras.metrics.AUC``).
    A class whose AUC is undefined makes every average NaN.

    Examples:
        >>> import tensorflow as tf
        >>> from dpauc_tf.mechanisms import get_mechanism
        >>> none = get_mechanism("none", epsilon=None, num_thresholds=3)
        >>> pos = tf.constant([[0., 0., 2., 0.], [0., 1., 1., 0.]])
        >>> neg = tf.constant([[0., 2., 0., 0.], [0., 1., 1., 0.]])
        >>> out = averages(none, {"pos": pos, "neg": neg})
        >>> out["class_aucs"].numpy().tolist(), float(out["macro"]), float(out["micro"])
        ([1.0, 0.5], 0.75, 0.75)
    """
    import tensorflow as tf

    from dpauc_tf.core.curve import confusion_from_histogram
    from dpauc_tf.core.summation import keras_auc

    release = {key: tf.cast(value, tf.float64) for key, value in release.items()}
    if not keras_exact and mechanism.capabilities.releases != "curve":  # per-class rank sums
        class_aucs = tf.cast(mechanism.estimate_auc(release), tf.float64)
        support = tf.maximum(release["num_pos"], 0.0)
        micro = tf.fill(tf.shape(class_aucs)[:-1], tf.constant(np.nan, tf.float64))
    elif keras_exact:
        summed = {key: tf.reduce_sum(value, axis=-2) for key, value in release.items()}
        class_aucs = keras_auc(confusion_from_histogram(release["pos"], release["neg"]))
        micro = keras_auc(confusion_from_histogram(summed["pos"], summed["neg"]))
        support = tf.reduce_sum(release["pos"], axis=-1)
    else:
        summed = {key: tf.reduce_sum(value, axis=-2) for key, value in release.items()}
        class_aucs = tf.cast(mechanism.estimate_auc(release), tf.float64)
        micro = tf.cast(mechanism.estimate_auc(summed), tf.float64)
        confusion = mechanism.released_confusion(release)
        support = tf.maximum(confusion.tp[..., 0] + confusion.fn[..., 0], 0.0)
    support = tf.cast(support, tf.float64)
    weighted = tf.reduce_sum(class_aucs * support, axis=-1) / tf.reduce_sum(support, axis=-1)
    return {
        "class_aucs": class_aucs,
        "support": support,
        "macro": tf.reduce_mean(class_aucs, axis=-1),
        "weighted": weighted,
        "micro": micro,
    }
