"""The model and each SuperNode's own data.

Every node generates its own partition from its ``partition-id`` (a stand-in for data
that lives on the node: no node sees another's examples, and the server sees none).
Replace :func:`load_data` with a reader of the node's local files.
"""

from __future__ import annotations

import os

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

NUM_FEATURES = 8


def load_data(partition_id: int, num_partitions: int, num_examples: int, seed: int = 0):
    """This node's ``(features, labels)``: a logistic model whose positive rate and
    feature shift differ per node (non-IID)."""
    rng = np.random.default_rng([seed, partition_id, num_partitions])
    features = rng.normal(size=(num_examples, NUM_FEATURES)).astype(np.float32)
    features[:, 0] += 0.3 * (partition_id % 3)
    weights = np.linspace(1.0, -0.5, NUM_FEATURES)
    logits = features @ weights - 0.5 + 0.2 * (partition_id % 2)
    labels = (rng.random(num_examples) < 1 / (1 + np.exp(-logits))).astype(np.float32)
    return features, labels


def load_model(learning_rate: float = 0.05, seed: int = 0):
    """A small Keras model with a sigmoid output (scores in [0, 1])."""
    import keras

    keras.utils.set_random_seed(seed)
    model = keras.Sequential(
        [
            keras.Input(shape=(NUM_FEATURES,)),
            keras.layers.Dense(8, activation="relu"),
            keras.layers.Dense(1, activation="sigmoid"),
        ]
    )
    model.compile(optimizer=keras.optimizers.Adam(learning_rate), loss="binary_crossentropy")
    return model
