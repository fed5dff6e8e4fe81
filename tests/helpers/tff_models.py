"""A fixed linear Keras model wrapped for ``tff.learning`` (score = sigmoid(x0)) and clients of
two-feature examples: the set-up of the ``build_fed_eval`` tests (federated world only)."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

SPEC = (tf.TensorSpec([None, 2], tf.float32), tf.TensorSpec([None, 1], tf.float32))


def model_fn_with(dpauc_metrics):
    """A ``model_fn`` whose metrics are ``dpauc_metrics()`` and a binary accuracy."""
    import tensorflow_federated as tff

    def model_fn():
        dense = tf.keras.layers.Dense(
            1,
            activation="sigmoid",
            kernel_initializer=tf.keras.initializers.Constant([[1.0], [0.0]]),
        )
        keras_model = tf.keras.Sequential([tf.keras.layers.Input((2,)), dense])
        return tff.learning.models.from_keras_model(
            keras_model,
            loss=tf.keras.losses.BinaryCrossentropy(),
            input_spec=SPEC,
            metrics=[*dpauc_metrics(), tf.keras.metrics.BinaryAccuracy()],
        )

    return model_fn


def linear_clients(num_clients: int, seed: int, size: int = 80) -> list:
    """``num_clients`` clients of ``size`` examples ``(x [size, 2], y [size, 1])``, ``y``
    following ``x0`` with noise."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(num_clients):
        x = rng.normal(size=(size, 2)).astype(np.float32)
        y = (x[:, :1] + rng.normal(size=(size, 1)) > 0).astype(np.float32)
        out.append((x, y))
    return out


def client_datasets(clients) -> list:
    return [tf.data.Dataset.from_tensor_slices(c).batch(40) for c in clients]
