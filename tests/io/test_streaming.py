"""Chunked reading and counting equal the whole-file path exactly, and fail as strictly."""

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from dpauc_tf import get_mechanism
from dpauc_tf.core.thresholds import Thresholds
from dpauc_tf.experiments.ground_truth import histogram_auc
from dpauc_tf.io.readers import ScoreChunk, iter_score_chunks
from dpauc_tf.io.scores import ScoreFileError, read_score_file
from dpauc_tf.io.streaming import (
    FINE_BUCKETS,
    ScoreCounter,
    count_chunks,
    count_score_file,
    fine_bucket_ids,
)
from dpauc_tf.simulation import client_histograms, simulate, simulate_examples

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

N = 3000
T = 20
GRID = Thresholds.make(T)


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, N)
    scores = np.round(rng.random(N), 2)  # ties, and scores exactly on the grid (k / (T - 1))
    scores[:40] = np.arange(40) % T / (T - 1)
    scores[40:50] = [0, 1] * 5
    # Client ids in runs that straddle the chunk boundaries; text ids sort as the whole file.
    clients = np.array([f"c{k:03d}" for k in (np.arange(N) // 7 * 13) % 101])
    return pd.DataFrame({"score": scores, "label": labels, "client": clients})


@pytest.fixture(scope="module")
def files(frame, tmp_path_factory):
    root = tmp_path_factory.mktemp("streaming")
    paths = {"csv": root / "s.csv", "parquet": root / "s.parquet"}
    frame.to_csv(paths["csv"], index=False)
    table = pa.Table.from_pandas(frame, preserve_index=False)
    pq.write_table(table, paths["parquet"], row_group_size=500)
    parts = root / "parts"
    parts.mkdir()
    for i, start in enumerate(range(0, N, 1100)):  # sorted names keep the row order
        pq.write_table(table.slice(start, 1100), parts / f"part-{i}.parquet")
    (parts / "_SUCCESS").write_text("")  # ignored, as Spark writes it
    paths["directory"] = parts
    paths["glob"] = str(parts / "part-*.parquet")
    paths["tfrecord"] = root / "s.tfrecord"
    write_tfrecord(paths["tfrecord"], frame)
    return paths


def write_tfrecord(path, frame):
    import tensorflow as tf

    with tf.io.TFRecordWriter(str(path)) as writer:
        for score, label, client in frame[["score", "label", "client"]].itertuples(index=False):
            feature = {
                "score": tf.train.Feature(float_list=tf.train.FloatList(value=[score])),
                "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[label])),
                "client": tf.train.Feature(bytes_list=tf.train.BytesList(value=[client.encode()])),
            }
            example = tf.train.Example(features=tf.train.Features(feature=feature))
            writer.write(example.SerializeToString())


def whole_file(frame, scores=None):
    """The whole-file path: read_score_file's validation and client numbering."""
    from dpauc_tf.io.scores import ScoreSet

    scores = frame["score"].to_numpy() if scores is None else scores
    return ScoreSet.checked(frame["label"].to_numpy(), scores, frame["client"].to_numpy())


@pytest.mark.parametrize("kind", ["csv", "parquet", "directory", "glob", "tfrecord"])
def test_chunked_counts_equal_whole_file(files, frame, kind):
    if kind in ("csv", "parquet"):  # the whole-file reader (pandas' CSV parser rounds)
        data = read_score_file(files[kind], client_column="client")
    else:
        scores = frame["score"].to_numpy()
        if kind == "tfrecord":  # tf.train.Example stores float32
            scores = scores.astype(np.float32).astype(np.float64)
        data = whole_file(frame, scores)
    pos, neg = client_histograms(data.labels, data.scores, GRID, data.clients, 101)
    for chunk_rows in (N, 333):  # one chunk; chunks that split clients' runs
        counted = count_score_file(
            files[kind], GRID, {"tf": GRID}, client_column="client", chunk_rows=chunk_rows
        )
        assert counted.num_examples == N and counted.num_clients == 101
        np.testing.assert_array_equal(counted.pos, pos)
        np.testing.assert_array_equal(counted.neg, neg)
        assert counted.client_keys.tolist() == sorted(set(frame["client"]))
        np.testing.assert_array_equal(counted.examples.scores, data.scores)
        np.testing.assert_array_equal(counted.examples.clients, data.clients)
    # Past the memory limit only the counts remain, the same counts.
    counted = count_score_file(files[kind], GRID, client_column="client", max_rows_in_memory=10)
    assert counted.examples is None
    np.testing.assert_array_equal(counted.pos, pos)


def test_releases_equal_the_whole_file_path_with_the_same_seed(files, frame):
    data = read_score_file(files["csv"], client_column="client")
    for name in ("histogram", "paper"):
        mechanism = get_mechanism(name, epsilon=1.0, num_thresholds=T, num_clients=101)
        before = simulate_examples(
            mechanism, data.labels, data.scores, GRID, data.clients, 101, seed=7, repeats=3
        )
        counted = count_score_file(files["parquet"], GRID, client_column="client", chunk_rows=256)
        after = simulate(mechanism, counted.pos, counted.neg, seed=7, repeats=3)
        np.testing.assert_array_equal(after.aucs, before.aucs)
        np.testing.assert_array_equal(after.fpr, before.fpr)


def test_many_clients_in_a_chunk_use_the_sparse_path(monkeypatch):
    import dpauc_tf.io.streaming as streaming

    rng = np.random.default_rng(5)
    labels = rng.integers(0, 2, 5000).astype(np.int8)
    scores = rng.random(5000)
    clients = rng.integers(0, 2000, 5000) * 3  # ids 0..5997, sparse
    dense = ScoreCounter(GRID)
    monkeypatch.setattr(streaming, "_MAX_DENSE_CELLS", 10)
    sparse = ScoreCounter(GRID)
    for start in range(0, 5000, 1000):
        part = slice(start, start + 1000)
        chunk = ScoreChunk(labels[part], scores[part], clients[part], "x", start + 1)
        sparse.add(chunk)
        monkeypatch.setattr(streaming, "_MAX_DENSE_CELLS", 1 << 23)
        dense.add(chunk)
        monkeypatch.setattr(streaming, "_MAX_DENSE_CELLS", 10)
    _, dense_ids = np.unique(clients, return_inverse=True)
    pos, _ = client_histograms(labels, scores, GRID, dense_ids, dense_ids.max() + 1)
    np.testing.assert_array_equal(sparse.finish().pos, pos)
    np.testing.assert_array_equal(dense.finish().pos, pos)


def test_fine_histogram_auc_is_within_its_bound_on_tied_data():
    rng = np.random.default_rng(6)
    n = 20_000
    labels = rng.integers(0, 2, n)
    # Heavy ties, and distinct scores closer than a fine bucket (2^-20 apart).
    scores = np.concatenate([np.round(rng.random(n // 2), 3), 0.5 + rng.random(n // 2) * 2e-6])
    counter = ScoreCounter(GRID, max_rows_in_memory=0)
    counter.add(ScoreChunk(labels.astype(np.int8), scores, None, "x", 1))
    counted = counter.finish()
    value, bound = histogram_auc(counted.fine_pos, counted.fine_neg)
    exact = roc_auc_score(labels, scores)
    assert bound > 0 and abs(value - exact) <= bound
    # The bound is the mass of pairs that share a fine bucket, halved: check it directly.
    ids = fine_bucket_ids(scores)
    pos = np.bincount(ids[labels == 1], minlength=FINE_BUCKETS)
    neg = np.bincount(ids[labels == 0], minlength=FINE_BUCKETS)
    assert bound == pytest.approx((pos * neg).sum() / (2 * pos.sum() * neg.sum()), rel=1e-12)


def test_histogram_bound_is_tight_and_zero_without_shared_buckets():
    # All pairs in one bucket, positives above: exact AUC 1, histogram 1/2, bound 1/2.
    assert histogram_auc([2], [3]) == (0.5, 0.5)
    assert histogram_auc([0, 5], [4, 0]) == (1.0, 0.0)
    assert all(np.isnan(histogram_auc([0, 0], [1, 2])))


def test_fine_buckets_are_ordered_and_hold_one():
    ids = fine_bucket_ids(np.array([0.0, 2.0**-20, np.nextafter(2.0**-20, 0), 0.5, 1.0]))
    assert ids.tolist() == [0, 1, 0, FINE_BUCKETS // 2, FINE_BUCKETS - 1]


def test_one_class_file_counts(tmp_path):
    path = tmp_path / "ones.csv"
    pd.DataFrame({"score": [0.1, 0.5, 0.9], "label": [1, 1, 1]}).to_csv(path, index=False)
    counted = count_score_file(path, GRID, chunk_rows=2)
    assert counted.num_positives == counted.num_examples == 3
    assert counted.neg.sum() == 0


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "empty file"),
        ("score,label\n", "no examples"),
        ("score,label,client\n0.1,0,a\n0.2,1,\n", "row 2: client id is missing"),
        ("score,lab\n0.1,0\n", "missing column(s) 'label'"),
    ],
)
def test_empty_and_malformed_files(tmp_path, text, message):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(ScoreFileError, match=message.replace("(", r"\(").replace(")", r"\)")):
        count_score_file(path, GRID, client_column="client", client_column_optional=True)


BAD_LAST_ROWS = {
    "nan score": ("nan,1", "row 7: score is NaN"),
    "inf score": ("inf,1", "row 7: scores must be in [0, 1]"),
    "label 2": ("0.5,2", "row 7: labels must be 0 or 1"),
    "missing label": ("0.5,", "row 7: label is missing"),
    "text score": ("abc,1", "row 7: scores must be numbers"),
}


@pytest.mark.parametrize("case", sorted(BAD_LAST_ROWS))
def test_a_bad_row_in_the_last_chunk_names_its_row(tmp_path, case):
    row, message = BAD_LAST_ROWS[case]
    path = tmp_path / "bad.csv"
    path.write_text("score,label\n" + "0.2,0\n0.7,1\n" * 3 + row + "\n")
    counter_calls = []
    chunks = iter_score_chunks(path, chunk_rows=3)
    with pytest.raises(ScoreFileError, match=message.replace("[", r"\[")) as error:
        for chunk in chunks:
            counter_calls.append(chunk.num_examples)
    assert counter_calls == [3, 3] and "\n" not in str(error.value)


def test_parquet_nulls_and_tfrecord_gaps_name_the_row(tmp_path):
    import tensorflow as tf

    path = tmp_path / "nulls.parquet"
    pq.write_table(pa.table({"score": [0.1, None, 0.3], "label": [0, 1, 1]}), path)
    with pytest.raises(ScoreFileError, match="row 2: score is missing"):
        count_score_file(path, GRID)
    path = tmp_path / "gap.tfrecord"
    with tf.io.TFRecordWriter(str(path)) as writer:
        for values in ([0.5], [0.2, 0.3]):
            feature = {
                "score": tf.train.Feature(float_list=tf.train.FloatList(value=values)),
                "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[1])),
            }
            writer.write(
                tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()
            )
    with pytest.raises(ScoreFileError, match="row 2: feature 'score' has 2 values"):
        count_score_file(path, GRID)


def test_client_ids_changing_type_between_chunks_are_refused(tmp_path):
    path = tmp_path / "mixed.csv"
    path.write_text("score,label,client\n0.1,0,1\n0.2,1,2\n0.3,0,x\n")
    with pytest.raises(ScoreFileError, match="client ids are texts after numbers"):
        count_score_file(path, GRID, client_column="client", chunk_rows=2)


def test_small_chunks_are_counted_together(monkeypatch, frame):
    """The library takes any chunk size; chunks of one row share one count (the fine
    histogram alone is 2^21 cells: per row it cost milliseconds)."""
    import dpauc_tf.io.streaming as streaming

    calls = []
    real = streaming.fine_bucket_ids
    monkeypatch.setattr(streaming, "fine_bucket_ids", lambda s: calls.append(len(s)) or real(s))
    rows = frame.iloc[:2000]
    chunks = [
        ScoreChunk(np.array([y], np.int8), np.array([s]), np.array([c], object), "x", i + 1)
        for i, (s, y, c) in enumerate(rows.itertuples(index=False))
    ]
    counted = count_chunks(chunks, GRID, {"tf": Thresholds.make(T, "tf")})
    assert calls == [2000]
    whole = count_chunks(
        [ScoreChunk(rows["label"].to_numpy(np.int8), rows["score"].to_numpy(), rows["client"]
                    .to_numpy(object), "x", 1)],
        GRID,
        {"tf": Thresholds.make(T, "tf")},
    )  # fmt: skip
    assert np.array_equal(counted.pos, whole.pos) and np.array_equal(counted.neg, whole.neg)
    assert np.array_equal(counted.fine_pos, whole.fine_pos)
    assert all(
        np.array_equal(a, b) for a, b in zip(counted.summed["tf"], whole.summed["tf"], strict=True)
    )
    assert counted.client_keys.tolist() == whole.client_keys.tolist()


def test_a_gzipped_tfrecord_says_so(files, tmp_path):
    import gzip

    path = tmp_path / "packed.tfrecord"
    path.write_bytes(gzip.compress(files["tfrecord"].read_bytes()))
    with pytest.raises(ScoreFileError, match=r"a compressed file .* named as a TFRecord"):
        count_score_file(path, GRID)


def test_a_tfrecord_cut_inside_a_record_header_is_not_a_shorter_file(files, tmp_path):
    """TensorFlow's reader ends quietly when fewer than 12 header bytes are left."""
    data = files["tfrecord"].read_bytes()
    end = 0
    for _ in range(1000):  # (uint64 length, CRC, data, CRC) per record
        end += 16 + int.from_bytes(data[end : end + 8], "little")
    path = tmp_path / "cut.tfrecord"
    path.write_bytes(data[: end + 7])
    with pytest.raises(
        ScoreFileError, match=rf"truncated TFRecord file: the record at byte {end} "
    ):
        count_score_file(path, GRID)
    path.write_bytes(data[:end])  # between two records: a valid, shorter file
    assert count_score_file(path, GRID).num_examples == 1000
