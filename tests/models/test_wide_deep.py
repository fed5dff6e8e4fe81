"""The Wide & Deep model: shapes, the wide part, configuration, serialisation."""

import numpy as np
import pytest
import tensorflow as tf

from models.wide_deep import CategoricalEmbedding, build_wide_deep

VOCAB = [3, 5, *[4] * 24]


def batch(n=6, seed=0):
    rng = np.random.default_rng(seed)
    return {
        "int_features": rng.random((n, 13)).astype(np.float32),
        "cat_ids": np.stack([rng.integers(0, v, n) for v in VOCAB], axis=1).astype(np.int32),
    }


def test_output_shape_and_range():
    model = build_wide_deep(VOCAB, embedding_dim=4, hidden_units=(16, 8))
    out = model(batch()).numpy()
    assert out.shape == (6, 1)
    assert ((0 < out) & (out < 1)).all()


def test_parameter_count_matches_the_architecture():
    model = build_wide_deep(VOCAB, embedding_dim=4, hidden_units=(16, 8))
    total_ids = sum(VOCAB)
    deep_in = 26 * 4 + 13 * 2  # the integers and their logarithms
    expected = total_ids * 1 + total_ids * 4 + (deep_in * 16 + 16) + (16 * 8 + 8) + (8 + 1)
    assert model.count_params() == expected


def test_metadata_dict_and_validation():
    model = build_wide_deep({"vocab_sizes": VOCAB}, embedding_dim=2, hidden_units=(4,))
    assert model.get_layer("wide_linear").embeddings.shape == (sum(VOCAB), 1)
    with pytest.raises(ValueError, match="26"):
        build_wide_deep([3] * 25)
    with pytest.raises(ValueError):
        build_wide_deep(VOCAB, embedding_dim=0)
    with pytest.raises(ValueError):
        build_wide_deep(VOCAB, learning_rate=0)


def test_embedding_offsets_keep_columns_apart():
    layer = CategoricalEmbedding([2, 3], output_dim=1, sum_columns=False)
    layer.build((None, 2))
    layer.embeddings.assign(np.arange(5, dtype=np.float32).reshape(5, 1))
    out = layer(np.array([[0, 0], [1, 2]])).numpy()[..., 0]
    assert out.tolist() == [[0.0, 2.0], [1.0, 4.0]]
    summed = CategoricalEmbedding([2, 3], 1, sum_columns=True)
    summed.build((None, 2))
    summed.embeddings.assign(np.arange(5, dtype=np.float32).reshape(5, 1))
    assert summed(np.array([[1, 2]])).numpy().tolist() == [[5.0]]
    config = summed.get_config()
    assert CategoricalEmbedding.from_config(config).vocab_sizes == [2, 3]


def test_learns_a_planted_rule():
    rng = np.random.default_rng(0)
    n = 4000
    data = batch(n, seed=1)
    labels = ((data["cat_ids"][:, 0] == 1) ^ (rng.random(n) < 0.1)).astype(np.float32)
    tf.keras.utils.set_random_seed(0)
    model = build_wide_deep(VOCAB, embedding_dim=4, hidden_units=(16,), learning_rate=0.01)
    model.fit(data, labels, epochs=3, batch_size=128, verbose=0)
    from sklearn.metrics import roc_auc_score

    assert roc_auc_score(labels, model.predict(data, verbose=0).ravel()) > 0.85


def test_save_and_reload(tmp_path):
    model = build_wide_deep(VOCAB, embedding_dim=2, hidden_units=(4,))
    path = tmp_path / "model.keras"
    model.save(path)
    again = tf.keras.models.load_model(path)
    np.testing.assert_allclose(again(batch()).numpy(), model(batch()).numpy(), rtol=1e-6)
