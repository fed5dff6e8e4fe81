"""DPAUC as a Keras metric, in whichever Keras this environment has (2 or 3)."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import tensorflow as tf

from dpauc_tf import DPAUC, get_mechanism
from dpauc_tf.keras.metric import KERAS_MAJOR
from dpauc_tf.mechanisms import private_auc


def _data(n=2000, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4)).astype("float32")
    y = (x[:, 0] + rng.normal(size=n) > 0.5).astype("float32")
    scores = (1 / (1 + np.exp(-(x[:, 0] * 1.5)))).astype("float32")
    weights = rng.uniform(size=n).astype("float32")
    return x, y, scores, weights


@pytest.mark.parametrize("num_thresholds", [2, 10, 200, 1000])
@pytest.mark.parametrize("weighted", [False, True])
def test_noise_free_dpauc_equals_tf_auc(num_thresholds, weighted):
    _, y, scores, weights = _data(seed=num_thresholds)
    w = weights if weighted else None
    reference = tf.keras.metrics.AUC(num_thresholds=num_thresholds)
    metric = DPAUC(epsilon=None, num_thresholds=num_thresholds)
    for batch in range(4):
        part = slice(batch * 500, (batch + 1) * 500)
        reference.update_state(y[part], scores[part], None if w is None else w[part])
        metric.update_state(y[part], scores[part], None if w is None else w[part])
    assert abs(float(metric.result()) - float(reference.result())) < 1e-6
    metric.reset_state()
    reference.reset_state()
    metric.update_state(y[:100], scores[:100])
    reference.update_state(y[:100], scores[:100])
    assert abs(float(metric.result()) - float(reference.result())) < 1e-6


def test_noisy_results_are_fresh_per_call_reproducible_by_seed_and_correctly_spread():
    _, y, scores, _ = _data(n=20000)
    metric = DPAUC(epsilon=1.0, num_thresholds=100, seed=7)
    metric.update_state(y, scores)
    values = np.array([float(metric.result()) for _ in range(300)])
    assert len(set(values.round(9))) > 290  # every result() is a new release
    again = DPAUC(epsilon=1.0, num_thresholds=100, seed=7)
    again.update_state(y, scores)
    assert float(again.result()) == values[0]
    # the spread of result() is the spread of the mechanism's releases of the same counts
    pos, neg = tf.convert_to_tensor(metric.positives), tf.convert_to_tensor(metric.negatives)
    library = private_auc(metric.mechanism, pos, neg, seed=1, repeats=300).aucs
    assert np.std(values) == pytest.approx(np.std(library), rel=0.25)
    exact = DPAUC(epsilon=None, num_thresholds=100)
    exact.update_state(y, scores)
    assert abs(np.mean(values) - float(exact.result())) < 4 * np.std(values) / np.sqrt(300) + 1e-3


def test_mechanism_options_reach_the_metric():
    m = DPAUC(epsilon=2.0, num_thresholds=50, mechanism="paper", threshold_grid="reference")
    assert m.mechanism.noise_scale == 4 * 50 / 2.0
    assert m.thresholds[0] == 0.0 and m.privacy_statement().claimed_epsilon == 2.0
    g = DPAUC(epsilon=1.0, mechanism="paper-gaussian", delta=1e-6, num_thresholds=20)
    assert g.privacy_statement().delta == 1e-6
    e = DPAUC(epsilon=1.0, thresholds=[0.1, 0.5, 0.9], mechanism="histogram")
    # as tf.keras.metrics.AUC(thresholds=...): end points -1e-7 and 1 + 1e-7 added
    assert e.thresholds == [-1e-7, 0.1, 0.5, 0.9, 1.0 + 1e-7] and e.positives.shape == (6,)


def test_config_round_trip_keeps_every_argument():
    metric = DPAUC(
        epsilon=0.5,
        num_thresholds=64,
        mechanism="histogram-public-scores",
        threshold_grid="reference",
        from_logits=True,
        seed=3,
        name="private_auc",
    )
    config = metric.get_config()
    for key, value in {
        "epsilon": 0.5,
        "num_thresholds": 64,
        "mechanism": "histogram-public-scores",
        "delta": None,
        "thresholds": None,
        "threshold_grid": "reference",
        "from_logits": True,
        "seed": 3,
        "name": "private_auc",
    }.items():
        assert config[key] == value
    clone = DPAUC.from_config(json.loads(json.dumps(config)))
    assert clone.get_config() == config
    rebuilt = tf.keras.metrics.deserialize(tf.keras.metrics.serialize(metric))
    assert isinstance(rebuilt, DPAUC) and rebuilt.get_config()["mechanism"] == config["mechanism"]


def _model(jit_compile=False, seed=0):
    tf.keras.utils.set_random_seed(seed)
    model = tf.keras.Sequential(
        [tf.keras.Input((4,)), tf.keras.layers.Dense(1, activation="sigmoid")]
    )
    model.compile(
        optimizer="adam",
        loss="binary_crossentropy",
        metrics=[
            tf.keras.metrics.AUC(num_thresholds=100, name="auc"),
            DPAUC(epsilon=None, num_thresholds=100, name="dp_auc_exact"),
            DPAUC(epsilon=1.0, num_thresholds=100, mechanism="paper", seed=0, name="dp_auc"),
        ],
        jit_compile=jit_compile,
    )
    return model


@pytest.mark.parametrize("jit_compile", [False, True])
def test_fit_with_validation_and_evaluate(jit_compile):
    x, y, _, weights = _data()
    model = _model(jit_compile)
    history = model.fit(
        x, y, sample_weight=weights, epochs=2, batch_size=256, verbose=0, validation_data=(x, y)
    )
    for key in ("dp_auc", "val_dp_auc", "dp_auc_exact", "val_dp_auc_exact"):
        assert len(history.history[key]) == 2
    np.testing.assert_allclose(
        history.history["val_dp_auc_exact"], history.history["val_auc"], atol=1e-6
    )
    result = model.evaluate(x, y, verbose=0, return_dict=True)
    assert abs(result["dp_auc_exact"] - result["auc"]) < 1e-6
    assert 0.0 <= result["dp_auc"] <= 1.0 and result["dp_auc"] != result["auc"]


def test_saved_model_reloads_with_the_metric(tmp_path):
    x, y, _, _ = _data()
    model = _model()
    model.fit(x, y, epochs=1, verbose=0)
    expected = model.evaluate(x, y, verbose=0, return_dict=True)
    path = str(tmp_path / "model.keras")
    model.save(path)
    reloaded = tf.keras.models.load_model(path)
    got = reloaded.evaluate(x, y, verbose=0, return_dict=True)
    assert got["dp_auc_exact"] == pytest.approx(expected["dp_auc_exact"], abs=1e-6)
    assert 0.0 <= got["dp_auc"] <= 1.0
    # the seed travels with the config: a second reload replays the same noise
    again = tf.keras.models.load_model(path).evaluate(x, y, verbose=0, return_dict=True)
    assert again["dp_auc"] == got["dp_auc"]
    if KERAS_MAJOR == 2:
        saved_model = str(tmp_path / "saved_model")
        model.save(saved_model, save_format="tf")
        reloaded = tf.keras.models.load_model(saved_model)
        got = reloaded.evaluate(x, y, verbose=0, return_dict=True)
        assert got["dp_auc_exact"] == pytest.approx(expected["dp_auc_exact"], abs=1e-6)


def test_mirrored_strategy_adds_noise_once_to_the_global_counts():
    script = textwrap.dedent(
        """
        import json, numpy as np, tensorflow as tf
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
        from dpauc_tf import DPAUC
        rng = np.random.default_rng(0)
        x = rng.normal(size=(4096, 4)).astype("float32")
        y = (x[:, 0] + rng.normal(size=4096) > 0).astype("float32")
        strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
        with strategy.scope():
            model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(1, activation="sigmoid")])
            model.compile("adam", "binary_crossentropy", metrics=[
                tf.keras.metrics.AUC(num_thresholds=100, name="auc"),
                DPAUC(epsilon=None, num_thresholds=100, name="exact"),
                DPAUC(epsilon=1.0, num_thresholds=100, seed=0, name="noisy")])
        model.fit(x, y, epochs=1, batch_size=512, verbose=0)
        print(json.dumps(model.evaluate(x, y, verbose=0, return_dict=True)))
        """
    )
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, env=env
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert abs(result["exact"] - result["auc"]) < 1e-6
    assert abs(result["noisy"] - result["auc"]) < 0.05 and result["noisy"] != result["auc"]


@pytest.mark.parametrize(
    "kwargs, error",
    [
        ({"epsilon": 0.0}, ValueError),
        ({"epsilon": -2.0}, ValueError),
        ({"epsilon": float("inf")}, ValueError),
        ({"epsilon": float("nan")}, ValueError),
        ({"mechanism": "paper-gaussian"}, ValueError),
        ({"mechanism": "paper-gaussian", "delta": 1.5}, ValueError),
        ({"num_thresholds": 1}, ValueError),
        ({"mechanism": "laplace"}, ValueError),
        ({"threshold_grid": "quantile"}, ValueError),
        ({"seed": -1}, ValueError),
    ],
)
def test_bad_constructor_arguments_raise(kwargs, error):
    with pytest.raises(error):
        DPAUC(**kwargs)


@pytest.mark.parametrize(
    "y_true, y_pred, weight, mechanism, message",
    [
        ([0, 2], [0.1, 0.2], None, None, "labels must be 0 or 1"),
        ([0, 1], [0.1, 1.2], None, None, "in \\[0, 1\\]"),
        ([0, 1], [0.1, float("nan")], None, None, "in \\[0, 1\\]"),
        ([0, 1], [0.1, 0.2], [1.0, 3.0], "histogram", "weights must be in \\[0, 1\\]"),
        # the default (rank-sum) takes weights of 1 only: that rule comes first
        ([0, 1], [0.1, 0.2], [1.0, 3.0], None, "sample weights of 1 only.*class_weight"),
    ],
)
def test_bad_batches_raise(y_true, y_pred, weight, mechanism, message):
    metric = DPAUC(epsilon=1.0, num_thresholds=10, mechanism=mechanism)
    # weights known when the step is built are refused in one line (issue 23)
    refused = ValueError if weight is not None else tf.errors.InvalidArgumentError
    with pytest.raises(refused, match=message):
        metric.update_state(y_true, y_pred, sample_weight=weight)


def test_from_logits_applies_a_sigmoid():
    _, y, scores, _ = _data()
    logits = np.log(scores) - np.log1p(-scores)
    a = DPAUC(epsilon=None, num_thresholds=200)
    b = DPAUC(epsilon=None, num_thresholds=200, from_logits=True)
    a.update_state(y, scores)
    b.update_state(y, logits)
    assert float(a.result()) == pytest.approx(float(b.result()), abs=1e-3)


def test_mechanisms_are_the_library_mechanisms():
    metric = DPAUC(epsilon=1.0, num_thresholds=30, mechanism="histogram")
    library = get_mechanism("histogram", epsilon=1.0, num_thresholds=30)
    assert metric.privacy_statement() == library.statement()


def test_tree_mechanism_with_options_in_the_metric():
    _, y, scores, _ = _data(n=20000)
    exact = DPAUC(epsilon=None, num_thresholds=1023)
    exact.update_state(y, scores)
    metric = DPAUC(
        epsilon=1.0,
        num_thresholds=1023,
        mechanism="tree-histogram",
        mechanism_options={"branching": 4, "public_scores": True},
        seed=0,
    )
    metric.update_state(y, scores)
    values = np.array([float(metric.result()) for _ in range(50)])
    assert abs(values.mean() - float(exact.result())) < 5 * values.std() / np.sqrt(50) + 1e-4
    assert 0 < values.std() < 0.01
    clone = DPAUC.from_config(metric.get_config())
    assert clone.get_config()["mechanism_options"] == {"branching": 4, "public_scores": True}
    assert clone.mechanism.layout == metric.mechanism.layout
