"""Wide & Deep (Cheng et al. 2016) for prepared Criteo data, in Keras 2 and Keras 3.

Inputs are the arrays of a prepared directory (see :mod:`data_prep.io`):
``int_features`` (float32 ``[b, 13]``, scaled into [0, 1]) and ``cat_ids`` (int32 ``[b, 26]``,
column ``j`` in ``[0, vocab_sizes[j])``). The output is the click probability ``[b, 1]``.

* wide part: a linear model over the one-hot categorical ids (one weight per id, summed);
* deep part: an embedding per categorical column, concatenated with the 13 scaled integers
  and their logarithms (:class:`LogScaled`), then a ReLU MLP;
* output: ``sigmoid(wide + deep)``; both parts are trained jointly with one optimizer.

Default hyper-parameters, and why (the DPAUC paper does not state its own):

* ``embedding_dim=8``: DeepCTR's Criteo examples use 4-8 dimensions; Cheng et al. used 32 for
  Google Play's far larger vocabularies. 8 suits the 20k-1M rows this project trains on.
* ``hidden_units=(256, 128, 64)``: DeepCTR's ``WDL`` default (Cheng et al.: 1024-512-256).
* ``learning_rate=1e-3`` with Adam: Keras' default Adam step, the usual choice for Criteo CTR
  models (Cheng et al. used FTRL for the wide and AdaGrad for the deep part; one Adam keeps
  the model a single plain Keras model, which DP-SGD optimizers need).
* ``embedding_l2=0``, ``dropout=0``: none in the builder, like DeepCTR's WDL; the training
  entry point (:mod:`models.train`) sizes the L2 penalties of both parts by the number of
  rows, adds dropout, folds rare ids into the out-of-vocabulary id and stops early on a
  validation split (:mod:`models.fitting`): without them the model overfits 20,000 rows
  within two epochs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from data_prep.schema import (
    CATEGORICAL_IDS_KEY,
    INTEGER_FEATURES_KEY,
    NUM_CATEGORICAL_FEATURES,
    NUM_INTEGER_FEATURES,
)

keras = tf.keras

DEFAULT_EMBEDDING_DIM = 8
DEFAULT_HIDDEN_UNITS: tuple[int, ...] = (256, 128, 64)
DEFAULT_LEARNING_RATE = 1e-3


@keras.utils.register_keras_serializable(package="dpauc_models")
class CategoricalEmbedding(keras.layers.Layer):
    """One embedding table per categorical column, stored as one matrix with column offsets.

    Maps ids ``[b, num_columns]`` (column ``j`` in ``[0, vocab_sizes[j])``) to
    ``[b, num_columns, output_dim]``, or with ``sum_columns=True`` to their sum ``[b, output_dim]``
    (``output_dim=1`` with a sum is a linear model over the one-hot ids).

    Example:
        >>> layer = CategoricalEmbedding([3, 5], output_dim=4)
        >>> tuple(layer(np.array([[0, 4], [2, 1]])).shape)
        (2, 2, 4)
    """

    def __init__(
        self,
        vocab_sizes: Sequence[int],
        output_dim: int,
        sum_columns: bool = False,
        embeddings_initializer: Any = "uniform",
        embeddings_l2: float = 0.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.vocab_sizes = [int(v) for v in vocab_sizes]
        if not self.vocab_sizes or min(self.vocab_sizes) < 1:
            raise ValueError(f"vocab_sizes must be positive, got {vocab_sizes}")
        if int(output_dim) < 1:
            raise ValueError(f"output_dim must be at least 1, got {output_dim}")
        self.output_dim = int(output_dim)
        self.sum_columns = bool(sum_columns)
        self.embeddings_initializer = keras.initializers.get(embeddings_initializer)
        self.embeddings_l2 = float(embeddings_l2)
        self._offsets = np.concatenate([[0], np.cumsum(self.vocab_sizes)[:-1]]).astype(np.int32)

    def build(self, input_shape: Any) -> None:
        self.embeddings = self.add_weight(
            name="embeddings",
            shape=(int(sum(self.vocab_sizes)), self.output_dim),
            initializer=self.embeddings_initializer,
            regularizer=keras.regularizers.L2(self.embeddings_l2) if self.embeddings_l2 else None,
        )
        super().build(input_shape)

    def call(self, ids: tf.Tensor) -> tf.Tensor:
        ids = tf.cast(ids, tf.int32) + tf.constant(self._offsets)
        vectors = tf.gather(self.embeddings, ids)
        return tf.reduce_sum(vectors, axis=1) if self.sum_columns else vectors

    def compute_output_shape(self, input_shape: Any) -> tuple:
        batch = next(iter(input_shape))
        if self.sum_columns:
            return (batch, self.output_dim)
        return (batch, len(self.vocab_sizes), self.output_dim)

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        config.update(
            {
                "vocab_sizes": self.vocab_sizes,
                "output_dim": self.output_dim,
                "sum_columns": self.sum_columns,
                "embeddings_initializer": keras.initializers.serialize(self.embeddings_initializer),
                "embeddings_l2": self.embeddings_l2,
            }
        )
        return config


@keras.utils.register_keras_serializable(package="dpauc_models")
class LogScaled(keras.layers.Layer):
    """``log1p(1000 x) / log(1001)`` of features min-max scaled into [0, 1]: spreads the
    small values where heavy-tailed counts (Criteo's integers) crowd, keeps 0 and 1.

    Example:
        >>> [round(float(v), 3) for v in LogScaled()(np.array([0.0, 0.001, 1.0]))]
        [0.0, 0.1, 1.0]
    """

    def call(self, x: tf.Tensor) -> tf.Tensor:
        x = tf.nn.relu(tf.cast(x, tf.float32))
        return tf.math.log1p(1000.0 * x) / tf.math.log(1001.0)

    def compute_output_shape(self, input_shape: Any) -> Any:
        return input_shape


def vocab_sizes_from(metadata: Mapping[str, Any] | Sequence[int]) -> list[int]:
    """The 26 vocabulary sizes from a prepared directory's metadata (or the sizes themselves)."""
    sizes = metadata["vocab_sizes"] if isinstance(metadata, Mapping) else metadata
    sizes = [int(v) for v in sizes]
    if len(sizes) != NUM_CATEGORICAL_FEATURES:
        raise ValueError(f"expected {NUM_CATEGORICAL_FEATURES} vocabulary sizes, got {len(sizes)}")
    return sizes


def build_wide_deep(
    metadata: Mapping[str, Any] | Sequence[int],
    *,
    embedding_dim: int = DEFAULT_EMBEDDING_DIM,
    hidden_units: Sequence[int] = DEFAULT_HIDDEN_UNITS,
    learning_rate: float = DEFAULT_LEARNING_RATE,
    embedding_l2: float = 0.0,
    dropout: float = 0.0,
    wide_l2: float | None = None,
    log_integers: bool = True,
    optimizer: Any | None = None,
    loss: Any | None = None,
    compile_model: bool = True,
) -> keras.Model:
    """A compiled Wide & Deep model for prepared Criteo data.

    Args:
        metadata: the prepared directory's metadata (``data_prep.io.read_metadata``) or the
            list of 26 vocabulary sizes.
        embedding_dim: size of each categorical embedding in the deep part.
        hidden_units: widths of the deep part's ReLU layers.
        learning_rate: Adam's step size (ignored when ``optimizer`` is given).
        embedding_l2: L2 penalty on the deep embeddings (0 = none).
        wide_l2: L2 penalty on the wide part's weights (``None``: ``embedding_l2``'s).
        log_integers: also give the deep part ``log1p(1000 x) / log(1001)`` of the scaled
            integers (min-max scaling leaves Criteo's heavy-tailed counts near 0).
        dropout: dropout rate after each hidden layer (0 = none).
        optimizer: a Keras optimizer to use instead of Adam (e.g. a DP-SGD optimizer).
        loss: a loss to use instead of binary cross-entropy (DP-SGD needs per-example losses).
        compile_model: compile with the optimizer and loss (no metrics).

    Example:
        >>> model = build_wide_deep([10] * 26, embedding_dim=4, hidden_units=(8,))
        >>> batch = {"int_features": np.zeros((2, 13), np.float32),
        ...          "cat_ids": np.zeros((2, 26), np.int32)}
        >>> tuple(model(batch).shape)
        (2, 1)
    """
    vocab_sizes = vocab_sizes_from(metadata)
    if embedding_dim < 1:
        raise ValueError(f"embedding_dim must be at least 1, got {embedding_dim}")
    if any(int(u) < 1 for u in hidden_units):
        raise ValueError(f"hidden_units must be positive, got {list(hidden_units)}")
    if learning_rate <= 0:
        raise ValueError(f"learning_rate must be positive, got {learning_rate}")
    wide_l2 = embedding_l2 if wide_l2 is None else wide_l2
    if embedding_l2 < 0 or wide_l2 < 0:
        raise ValueError(f"L2 penalties must be >= 0, got {embedding_l2}, {wide_l2}")
    if not 0.0 <= dropout < 1.0:
        raise ValueError(f"dropout must be in [0, 1), got {dropout}")

    int_features = keras.Input(
        shape=(NUM_INTEGER_FEATURES,), dtype="float32", name=INTEGER_FEATURES_KEY
    )
    cat_ids = keras.Input(
        shape=(NUM_CATEGORICAL_FEATURES,), dtype="int32", name=CATEGORICAL_IDS_KEY
    )

    wide_logit = CategoricalEmbedding(
        vocab_sizes,
        1,
        sum_columns=True,
        embeddings_initializer="zeros",
        embeddings_l2=wide_l2,
        name="wide_linear",
    )(cat_ids)

    embeddings = CategoricalEmbedding(
        vocab_sizes, embedding_dim, embeddings_l2=embedding_l2, name="deep_embeddings"
    )(cat_ids)
    deep_parts = [keras.layers.Flatten(name="flat_embeddings")(embeddings), int_features]
    if log_integers:
        deep_parts.append(LogScaled(name="log_integers")(int_features))
    deep = keras.layers.Concatenate(name="deep_input")(deep_parts)
    for i, units in enumerate(hidden_units):
        deep = keras.layers.Dense(int(units), activation="relu", name=f"deep_hidden_{i}")(deep)
        if dropout:
            deep = keras.layers.Dropout(dropout, name=f"deep_dropout_{i}")(deep)
    deep_logit = keras.layers.Dense(1, name="deep_logit")(deep)

    logit = keras.layers.Add(name="logit")([wide_logit, deep_logit])
    probability = keras.layers.Activation("sigmoid", name="probability", dtype="float32")(logit)
    model = keras.Model(
        inputs={INTEGER_FEATURES_KEY: int_features, CATEGORICAL_IDS_KEY: cat_ids},
        outputs=probability,
        name="wide_deep",
    )
    if compile_model:
        model.compile(
            optimizer=optimizer or keras.optimizers.Adam(learning_rate=learning_rate),
            loss=loss or keras.losses.BinaryCrossentropy(),
        )
    return model
