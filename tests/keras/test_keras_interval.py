"""The Keras metric's interval of its last release, and the callback that logs its bounds."""

from __future__ import annotations

import numpy as np
import pytest

from dpauc_tf.keras.intervals import DPAUCIntervalLogger
from dpauc_tf.keras.metric import DPAUC


def _data(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    labels = (rng.random(n) < 0.3).astype("float32")
    return labels, (1 / (1 + np.exp(-rng.normal(labels, 1.0)))).astype("float32")


def test_interval_of_the_last_release_draws_no_release():
    metric = DPAUC(epsilon=1.0, num_thresholds=50, seed=0)
    labels, scores = _data()
    metric.update_state(labels, scores)
    with pytest.raises(ValueError, match="no release yet"):
        metric.release_interval()
    value = float(metric.result())
    drawn = metric.releases_drawn
    population = metric.release_interval(0.95)
    sample = metric.release_interval(0.95, target="sample")
    assert metric.releases_drawn == drawn
    assert population.low[0] < sample.low[0] < value < sample.high[0] < population.high[0]


def test_callback_logs_the_bounds():
    import keras

    metric = DPAUC(epsilon=1.0, num_thresholds=50, seed=0)
    labels, scores = _data(512)
    x = scores[:, None]
    model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1, activation="sigmoid")])
    model.compile(optimizer="sgd", loss="binary_crossentropy", metrics=[metric])
    history = model.fit(x, labels, epochs=2, verbose=0, callbacks=[DPAUCIntervalLogger(metric)])
    lower, upper = history.history["dp_auc_lower"], history.history["dp_auc_upper"]
    assert len(lower) == 2 and all(lo < hi for lo, hi in zip(lower, upper, strict=True))


def test_the_interval_of_a_reset_metric_is_refused():
    """Issue 30: after reset_state() the last release is forgotten (its value is NaN);
    release_interval() returned the forgotten release's interval."""
    metric = DPAUC(epsilon=1.0, num_thresholds=50, seed=0)
    labels, scores = _data()
    metric.update_state(labels, scores)
    metric.result()
    metric.release_interval()
    metric.reset_state()
    with pytest.raises(ValueError, match="no release yet since the counts were last reset"):
        metric.release_interval()
    metric.update_state(labels, scores)
    with pytest.raises(ValueError, match="no release"):
        metric.release_interval()


@pytest.mark.parametrize("release_on_train", [False, True])
def test_the_logger_names_each_interval_by_the_data_it_reads(release_on_train):
    """Issue 30: with release_on_train=False and validation_freq=2, epoch 2's validation
    interval was logged again in epoch 3 under the training names."""
    import keras

    metric = DPAUC(epsilon=1.0, num_thresholds=50, seed=0, release_on_train=release_on_train)
    labels, scores = _data(512)
    x = scores[:, None]
    model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1, activation="sigmoid")])
    model.compile(optimizer="sgd", loss="binary_crossentropy", metrics=[metric])
    logged = []

    class Spy(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            logged.append({k: v for k, v in logs.items() if k.endswith(("_lower", "_upper"))})

    model.fit(
        x,
        labels,
        epochs=4,
        verbose=0,
        validation_data=(x, labels),
        validation_freq=2,
        callbacks=[DPAUCIntervalLogger(metric), Spy()],
    )
    validated = [{"val_dp_auc_lower", "val_dp_auc_upper"} <= set(e) for e in logged]
    assert validated == [False, True, False, True]
    trained = [{"dp_auc_lower", "dp_auc_upper"} & set(e) for e in logged]
    if release_on_train:  # each epoch without validation logs its own training interval
        assert [bool(t) for t in trained] == [True, False, True, False]
    else:  # no training release: no training interval, ever
        assert not any(trained)
