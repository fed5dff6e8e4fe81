"""Each client's data reaches TFF as two vectors: same counts and noise as a dataset of batches."""

from __future__ import annotations

import collections

import numpy as np
import pytest

tff = pytest.importorskip("tensorflow_federated")

import tensorflow as tf  # noqa: E402

from dpauc_tf.core.thresholds import Thresholds  # noqa: E402
from dpauc_tf.federated import computations, evaluate  # noqa: E402
from dpauc_tf.federated.evaluate import SEED_KEY  # noqa: E402
from dpauc_tf.mechanisms.registry import get_mechanism  # noqa: E402
from dpauc_tf.mechanisms.release import ReleaseSpec  # noqa: E402

pytestmark = pytest.mark.federated

T, SEED = 10, 11


@pytest.fixture(scope="module")
def clients():
    rng = np.random.default_rng(8)
    out = []
    for size in (0, 1, 37, 200):
        labels = (rng.random(size) < 0.4).astype(np.float32)
        out.append((rng.random(size).astype(np.float32), labels))
    return out


def _same(a, b):
    assert a.auc == b.auc and a.num_reporting == b.num_reporting
    for key in a.noisy_counts:
        np.testing.assert_array_equal(a.noisy_counts[key], b.noisy_counts[key])


def test_datasets_of_any_batching_give_the_arrays_release(clients):
    as_scalars = [tf.data.Dataset.from_tensor_slices(c) for c in clients]
    as_batches = [
        tf.data.Dataset.from_tensor_slices({"score": s, "label": y}).batch(16) for s, y in clients
    ]
    as_columns = [  # [N, 1] batches, as a model's predictions come
        tf.data.Dataset.from_tensor_slices((s[:, None], y[:, None])).batch(7) for s, y in clients
    ]
    common = dict(mechanism="histogram", epsilon=1.0, num_thresholds=T, seed=SEED)
    arrays = evaluate(clients, **common)
    for datasets in (as_scalars, as_batches, as_columns):
        _same(evaluate(datasets, batch_size=5, **common), arrays)


def test_the_one_round_computation_is_evaluate_and_counts_datasets_alike(clients):
    """``build_federated_evaluation`` (the round with the server's curve) gives what
    ``evaluate`` gives (summed releases, then the curve once), and the client step counts a
    dataset of batches (the MapReduce form's input) as it counts the two vectors."""
    thresholds = Thresholds.make(T, "tf")
    mechanism = get_mechanism("histogram", epsilon=1.0, num_thresholds=T)
    # client k's seed, as evaluate derives it (the release protocol's seed_for)
    spec = ReleaseSpec.make("histogram", epsilon=1.0, num_thresholds=T, seed=SEED)
    seeds = [spec.seed_for(SEED_KEY, 0, k).numpy() for k in range(len(clients))]
    arrays = [collections.OrderedDict(score=s, label=y) for s, y in clients]
    round_ = computations.build_federated_evaluation(mechanism, thresholds)
    out = round_(arrays, seeds)
    expected = evaluate(clients, mechanism="histogram", epsilon=1.0, num_thresholds=T, seed=SEED)
    assert float(out["curve"]["auc"]) == expected.auc
    assert int(out["num_reporting"]) == len(clients)
    for key, value in out["release"].items():
        np.testing.assert_array_equal(np.asarray(value), expected.noisy_counts[key][0])

    on_arrays = computations.build_client_release(mechanism, thresholds)
    on_datasets = computations.build_client_release(
        mechanism, thresholds, client_type=computations.DATASET_TYPE
    )
    batches = tf.data.Dataset.from_tensor_slices(arrays[-1]).batch(30)
    from_arrays, from_batches = on_arrays(arrays[-1], seeds[-1]), on_datasets(batches, seeds[-1])
    for key in from_arrays:
        np.testing.assert_array_equal(from_arrays[key], from_batches[key])


def test_a_dataset_whose_scores_and_labels_disagree_in_length_names_the_client(clients):
    uneven = tf.data.Dataset.from_tensors((np.zeros(3, np.float32), np.zeros(2, np.float32)))
    with pytest.raises(ValueError, match="client 1: scores and labels differ in length"):
        evaluate([clients[2], uneven], epsilon=None, num_thresholds=T)
    bad = tf.data.Dataset.from_tensor_slices((np.array([0.5, 1.5]), np.array([0.0, 1.0])))
    with pytest.raises(ValueError, match="client 0: scores must be in"):
        evaluate([bad], epsilon=None, num_thresholds=T)


def test_a_client_past_2_to_the_24_is_counted_exactly():
    # float32 stops counting at 2^24; the client's two vectors are counted in float64.
    size = 2**24 + 3
    scores = np.full(size, 0.7, np.float32)
    labels = np.ones(size, np.float32)
    labels[:2] = 0.0
    out = evaluate(
        [(scores, labels), (scores[:5], np.ones(5, np.float32))], epsilon=None, num_thresholds=3
    )
    assert out.noisy_counts["pos"].sum() == size - 2 + 5
    assert out.noisy_counts["neg"].sum() == 2
