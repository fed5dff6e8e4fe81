"""``DPECE``: the label-DP expected calibration error as a Keras metric (issue 33, item 3).

Without noise it equals a reference ECE written here in numpy (10 equal-width bins, within
1e-6) eagerly, inside ``tf.function`` and through ``model.evaluate``; with noise every eager
``result()`` is one release charged to the ledger of ``DPAUCBudgetCallback``, with the
mechanism's noise; hostile input gives a right number or a one-line refusal."""

from __future__ import annotations

import importlib.util
import inspect
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

import dpauc_tf
from dpauc_tf import DPECE, DPAUCBudgetCallback, PrivacyLedger
from dpauc_tf.keras.checks import KERAS_MAJOR

BINS = 10


def reference_ece(labels, scores, num_bins: int = BINS) -> float:
    """ECE over bins ``(k / B, (k + 1) / B]`` (bin 0 also holds 0), weighted by bin size."""
    scores = np.asarray(scores, np.float64)
    labels = np.asarray(labels, np.float64)
    bins = np.clip(np.ceil(scores * num_bins) - 1, 0, num_bins - 1).astype(int)
    ece = 0.0
    for k in range(num_bins):
        inside = bins == k
        if inside.any():
            ece += inside.mean() * abs(scores[inside].mean() - labels[inside].mean())
    return ece


def _data(n: int = 600, seed: int = 0):
    rng = np.random.default_rng(seed)
    scores = rng.uniform(size=n).astype("float32")
    labels = (rng.uniform(size=n) < scores**2).astype("float32")  # miscalibrated on purpose
    return labels, scores


def _identity_model(metric, jit_compile=False, run_eagerly=False):
    """A model whose predictions are its inputs: the scores go to the metric unchanged."""
    model = tf.keras.Sequential([tf.keras.Input(shape=(1,)), tf.keras.layers.Activation("linear")])
    model.compile(
        loss="binary_crossentropy",
        metrics=[metric],
        jit_compile=jit_compile,
        run_eagerly=run_eagerly,
    )
    return model


def test_noise_off_equals_the_reference_eagerly():
    labels, scores = _data()
    metric = DPECE(epsilon=None, num_bins=BINS)
    for start in range(0, labels.size, 128):  # several batches
        metric.update_state(labels[start : start + 128], scores[start : start + 128])
    assert float(metric.result()) == pytest.approx(reference_ece(labels, scores), abs=1e-6)


def test_noise_off_equals_the_reference_inside_tf_function():
    labels, scores = _data()
    metric = DPECE(epsilon=None, num_bins=BINS)

    @tf.function
    def step(y, s):
        metric.update_state(y, s)
        return metric.result()

    value = step(tf.constant(labels), tf.constant(scores))
    assert float(value) == pytest.approx(reference_ece(labels, scores), abs=1e-6)


def test_a_finer_grid_gives_the_same_ece():
    labels, scores = _data()
    metric = DPECE(epsilon=None, num_bins=BINS, num_thresholds=201)  # 20 buckets per bin
    metric.update_state(labels, scores)
    assert float(metric.result()) == pytest.approx(reference_ece(labels, scores), abs=1e-6)


@pytest.mark.parametrize("mode", ["eager", "function", "xla"])
def test_noise_off_equals_the_reference_through_evaluate(mode):
    labels, scores = _data()
    model = _identity_model(
        DPECE(epsilon=None, num_bins=BINS), jit_compile=mode == "xla", run_eagerly=mode == "eager"
    )
    result = model.evaluate(scores[:, None], labels, batch_size=64, verbose=0, return_dict=True)
    assert result["dp_ece"] == pytest.approx(reference_ece(labels, scores), abs=1e-6)


def test_each_release_is_charged_to_the_ledger():
    labels, scores = _data()
    epsilon = 0.5
    metric = DPECE(epsilon=epsilon, num_bins=BINS, seed=3)
    ledger = PrivacyLedger()
    model = _identity_model(metric)
    values = []
    for releases in (1, 2, 3):
        result = model.evaluate(
            scores[:, None],
            labels,
            batch_size=64,
            verbose=0,
            return_dict=True,
            callbacks=[DPAUCBudgetCallback(ledger)],
        )
        values.append(result["dp_ece"])
        dataset = ledger.entries[-1]["dataset"]
        assert ledger.releases(dataset) == releases == metric.releases_drawn
        assert ledger.spent(dataset).basic == pytest.approx(releases * epsilon)
        assert ledger.events(dataset)[-1] == metric.mechanism.dp_event()
    assert len(set(values)) == 3  # fresh noise at every release
    assert all(0.0 <= v <= 1.0 for v in values)


def test_a_budget_refuses_the_release_before_it_is_drawn():
    labels, scores = _data()
    metric = DPECE(epsilon=1.0, num_bins=BINS, seed=0)
    ledger = PrivacyLedger(budget=1.5)
    model = _identity_model(metric)
    callback = DPAUCBudgetCallback(ledger)
    model.evaluate(scores[:, None], labels, verbose=0, callbacks=[callback])
    with pytest.raises(dpauc_tf.BudgetExceededError):
        model.evaluate(scores[:, None], labels, verbose=0, callbacks=[callback])
    assert metric.releases_drawn == 1


@pytest.mark.parametrize("factor", [0.5, 1.0, 2.0])
def test_the_release_noise_is_the_mechanisms(factor):
    """Laplace(2 / epsilon) per released count: the spread of the released positives of fixed
    counts matches it, and a halved or doubled scale is rejected."""
    labels, scores = _data(n=200)
    metric = DPECE(epsilon=1.0, num_bins=BINS, seed=7)
    metric.update_state(labels, scores)
    exact, _ = metric.counts()
    noise = []
    for _ in range(300):
        metric.release()
        noise.append(np.asarray(metric._last_release_counts["pos"]) - exact)
    noise = np.concatenate(noise)
    scale = metric.mechanism.noise_scale * factor
    from scipy import stats

    p_value = stats.kstest(noise, "laplace", args=(0.0, scale)).pvalue
    if factor == 1.0:
        assert metric.mechanism.noise_scale == pytest.approx(2.0)
        assert p_value > 1e-3
    else:
        assert p_value < 1e-6


def test_the_value_comes_from_the_release():
    """The ECE is the release's: post-processing of its positives with the label-free
    score statistics (a changed release changes it; the exact counts give the exact ECE)."""
    labels, scores = _data()
    metric = DPECE(epsilon=1.0, num_bins=BINS, seed=1)
    metric.update_state(labels, scores)
    value = float(metric.result())
    release = {k: np.asarray(v) for k, v in metric._last_release_counts.items()}
    assert float(metric.value_from_release(release)) == pytest.approx(value, abs=1e-6)
    pos, neg = metric.counts()
    table = metric.reliability_from_release({"pos": pos, "neg": neg})
    assert float(table.ece[0]) == pytest.approx(reference_ece(labels, scores), abs=1e-6)


def test_a_bins_rate_reads_the_release_before_the_projection():
    """A bin's positive rate is its released positives summed as drawn (negative noisy counts
    included) over its examples, clipped to [0, 1]: projecting first would move a near-empty
    bin's rate up (here 0.125 instead of 0)."""
    metric = DPECE(epsilon=1.0, num_bins=2, num_thresholds=5, seed=1)
    metric.update_state([0] * 4 + [1] * 4, [0.05, 0.1, 0.3, 0.4, 0.6, 0.7, 0.8, 0.9])
    release = {"pos": np.array([0.0, 2.0, -3.0, 4.0, 4.0, 0.0]), "neg": np.full(6, 1.0)}
    table = metric.reliability_from_release(release)
    assert metric.num_bins == 2 and table.counts[0].tolist() == [4.0, 4.0]
    assert table.positive_rate[0].tolist() == [0.0, 1.0]  # (2 - 3) / 4 clipped; 8 / 4 clipped
    projected, _ = metric.mechanism.projected_counts(release)
    assert np.asarray(projected).ravel()[1:3].sum() == 0.5  # the projection's rate: 0.125


def test_get_config_is_exactly_the_constructor_arguments():
    metric = DPECE(epsilon=2.0, num_bins=5, num_thresholds=51, seed=4, name="ece")
    config = metric.get_config()
    params = set(inspect.signature(DPECE.__init__).parameters) - {"self"}
    assert set(config) == params
    again = DPECE.from_config(config)
    assert again.get_config() == config
    assert again.num_bins == 5 and again.num_thresholds == 51 and again.epsilon == 2.0


def test_a_saved_model_reloads_with_the_metric(tmp_path):
    labels, scores = _data()
    model = _identity_model(DPECE(epsilon=1.0, num_bins=BINS, seed=5))
    model.evaluate(scores[:, None], labels, verbose=0)
    path = str(tmp_path / "model.keras")
    model.save(path)
    reloaded = tf.keras.models.load_model(path)
    got = reloaded.evaluate(scores[:, None], labels, verbose=0, return_dict=True)
    again = tf.keras.models.load_model(path).evaluate(
        scores[:, None], labels, verbose=0, return_dict=True
    )
    assert 0.0 <= got["dp_ece"] <= 1.0
    assert again["dp_ece"] == got["dp_ece"]  # the seed travels with the config
    metrics = _dpece_metrics(reloaded)
    assert len(metrics) == 1 and metrics[0].get_config()["num_bins"] == BINS
    assert metrics[0].get_config()["seed"] == 5


def _dpece_metrics(model) -> list:
    """The DPECE metrics of a compiled model (Keras 3 nests them in a container, Keras 2
    in its compiled-metrics container's list)."""
    found, stack = [], list(model.metrics)
    if KERAS_MAJOR == 2:
        stack.extend(model.compiled_metrics._user_metrics or [])
    while stack:
        metric = stack.pop()
        if isinstance(metric, DPECE) and all(metric is not m for m in found):
            found.append(metric)
        stack.extend(getattr(metric, "metrics", []) or [])
    return found


# -- hostile input ------------------------------------------------------------------------
def _one_line(error) -> str:
    message = str(error.value)
    assert "\n" not in message.strip(), message
    return message


@pytest.mark.parametrize("epsilon", [None, 1.0])
def test_nan_scores_are_refused_in_one_line(epsilon):
    metric = DPECE(epsilon=epsilon, num_bins=BINS)
    with pytest.raises(ValueError) as error:
        metric.update_state([0.0, 1.0], [0.3, float("nan")])
    assert "predictions" in _one_line(error)


def test_one_class_gives_the_right_number():
    _, scores = _data()
    metric = DPECE(epsilon=None, num_bins=BINS)
    metric.update_state(np.zeros_like(scores), scores)
    expected = reference_ece(np.zeros_like(scores), scores)  # the mean score
    assert float(metric.result()) == pytest.approx(expected, abs=1e-6)
    assert expected == pytest.approx(float(np.mean(scores.astype(np.float64))), abs=1e-6)


def test_a_single_example_gives_the_right_number():
    metric = DPECE(epsilon=None, num_bins=BINS)
    metric.update_state([1.0], [0.35])
    assert float(metric.result()) == pytest.approx(0.65, abs=1e-6)
    noisy = DPECE(epsilon=1.0, num_bins=BINS, seed=0)
    noisy.update_state([1.0], [0.35])
    assert 0.0 <= float(noisy.result()) <= 1.0


def test_no_example_is_nan_not_a_number():
    assert np.isnan(float(DPECE(epsilon=None).result()))


@pytest.mark.parametrize("num_bins, num_thresholds", [(3, 11), (7, 201)])
def test_bins_that_split_the_grid_are_refused_in_one_line(num_bins, num_thresholds):
    with pytest.raises(ValueError) as error:
        DPECE(epsilon=1.0, num_bins=num_bins, num_thresholds=num_thresholds)
    assert "split the grid's buckets" in _one_line(error)


@pytest.mark.parametrize("num_bins", [0, -1, 2.5, True, "10"])
def test_a_bad_number_of_bins_is_refused(num_bins):
    with pytest.raises(ValueError) as error:
        DPECE(epsilon=1.0, num_bins=num_bins)
    assert "calibration bins" in _one_line(error)


@pytest.mark.parametrize("mechanism", ["rank-sum", "auc-only"])
def test_a_mechanism_without_a_curve_is_refused(mechanism):
    delta = 1e-6 if mechanism == "auc-only" else None
    with pytest.raises(ValueError) as error:
        DPECE(epsilon=1.0, mechanism=mechanism, delta=delta)
    assert "curve" in _one_line(error)


@pytest.mark.parametrize("mode", ["eager", "function"])
def test_label_dependent_weights_are_refused_with_noise(mode):
    """class_weight moves the weight with the label: the 'label-free' score statistics
    would hold labels. Refused (naming class_weight), and nothing is released."""
    labels, scores = _data(n=64)
    metric = DPECE(epsilon=1.0, num_bins=BINS, seed=0)
    model = tf.keras.Sequential(
        [
            tf.keras.Input(shape=(1,)),
            tf.keras.layers.Dense(1, "sigmoid", kernel_initializer="zeros"),
        ]
    )
    model.compile(
        optimizer=tf.keras.optimizers.SGD(learning_rate=0.0),
        loss="mse",
        weighted_metrics=[metric],
        run_eagerly=mode == "eager",
    )
    with pytest.raises((ValueError, tf.errors.InvalidArgumentError), match="class_weight"):
        model.fit(scores[:, None], labels, epochs=1, verbose=0, class_weight={0: 1.0, 1: 3.0})
    assert metric.releases_drawn == 0
    with pytest.raises(ValueError, match="class_weight"):
        metric.update_state(labels, scores, sample_weight=np.full(labels.shape, 2.0))


def test_noise_off_counts_weights_as_the_weighted_ece():
    labels, scores = _data()
    metric = DPECE(epsilon=None, num_bins=BINS)
    metric.update_state(np.repeat(labels, 2), np.repeat(scores, 2))
    doubled = DPECE(epsilon=None, num_bins=BINS)
    doubled.update_state(labels, scores, sample_weight=np.full(labels.shape, 2.0))
    assert float(doubled.result()) == pytest.approx(float(metric.result()), abs=1e-6)


def test_reset_state_forgets_the_scores():
    labels, scores = _data()
    metric = DPECE(epsilon=None, num_bins=BINS)
    metric.update_state(1.0 - labels, scores)
    metric.reset_state()
    metric.update_state(labels, scores)
    assert float(metric.result()) == pytest.approx(reference_ece(labels, scores), abs=1e-6)


@pytest.mark.skipif(
    KERAS_MAJOR < 3 or importlib.util.find_spec("jax") is None, reason="needs Keras 3 and JAX"
)
def test_the_jax_backend_is_refused_in_one_line():
    code = (
        "from dpauc_tf import DPECE\n"
        "try:\n    DPECE(epsilon=1.0)\nexcept ValueError as error:\n    print('REFUSED', error)\n"
    )
    env = {**os.environ, "KERAS_BACKEND": "jax"}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300
    )
    assert "REFUSED DPECE runs on Keras' TensorFlow backend only" in out.stdout, out.stderr


def test_the_score_statistics_are_label_free():
    """Neighbouring label sets (one label flipped) give the same per-bucket examples and
    score sums: only the release depends on the labels."""
    labels, scores = _data()
    flipped = labels.copy()
    flipped[7] = 1.0 - flipped[7]
    metrics = [DPECE(epsilon=1.0, num_bins=BINS, seed=0) for _ in range(2)]
    for metric, y in zip(metrics, (labels, flipped), strict=True):
        metric.update_state(y, scores)
    first, second = (metric.bucket_scores() for metric in metrics)
    np.testing.assert_array_equal(first.counts, second.counts)
    np.testing.assert_array_equal(first.score_sums, second.score_sums)
    assert not np.array_equal(metrics[0].counts()[0], metrics[1].counts()[0])


def test_fit_charges_each_epoch_end_release():
    labels, scores = _data(n=256)
    metric = DPECE(epsilon=1.0, num_bins=BINS, seed=2)
    ledger = PrivacyLedger()
    model = tf.keras.Sequential(
        [tf.keras.Input(shape=(1,)), tf.keras.layers.Dense(1, "sigmoid", kernel_initializer="ones")]
    )
    model.compile(optimizer=tf.keras.optimizers.SGD(0.0), loss="mse", metrics=[metric])
    history = model.fit(
        scores[:, None],
        labels,
        epochs=2,
        batch_size=64,
        verbose=0,
        validation_data=(scores[:, None], labels),
        callbacks=[DPAUCBudgetCallback(ledger)],
    )
    assert len(history.history["dp_ece"]) == len(history.history["val_dp_ece"]) == 2
    datasets = {entry["dataset"] for entry in ledger.entries}
    assert sum(ledger.releases(d) for d in datasets) == 4 == metric.releases_drawn


def test_what_dpece_does_not_release_is_refused_in_one_line():
    """DPAUC's ROC curve is not the ECE's: refused, no release drawn (its interval is the
    ECE's: tests/keras/test_summaries.py)."""
    labels, scores = _data(n=50)
    metric = DPECE(epsilon=1.0, num_bins=BINS, seed=0)
    metric.update_state(labels, scores)
    metric.result()
    with pytest.raises(ValueError) as error:
        metric.roc_curve()
    assert "DPECE" in _one_line(error)
    assert metric.releases_drawn == 1
