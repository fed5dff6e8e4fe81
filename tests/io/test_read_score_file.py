"""The whole-file reader is the chunked reader joined (one piece of reading logic): every
format and layout it reads, with the same row-numbered errors."""

import numpy as np
import pandas as pd
import pytest

from dpauc_tf.io.readers import iter_score_chunks
from dpauc_tf.io.scores import ScoreFileError, ScoreSet, read_score_file

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


def _write_tfrecord(path, frame):
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


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(3)
    n = 500
    return pd.DataFrame(
        {
            "score": rng.random(n).round(3),
            "label": rng.integers(0, 2, n),
            "client": np.array([f"c{k}" for k in rng.integers(0, 7, n)]),
        }
    )


def _chunks_joined(path, **columns):
    chunks = list(iter_score_chunks(path, chunk_rows=64, **columns))
    clients = None
    if chunks[0].clients is not None:
        clients = np.concatenate([c.clients for c in chunks])
    return ScoreSet.checked(
        np.concatenate([c.labels for c in chunks]),
        np.concatenate([c.scores for c in chunks]),
        clients,
    )


@pytest.mark.parametrize("layout", ["csv.gz", "directory", "glob", "tfrecord"])
def test_every_layout_of_the_chunked_reader(frame, tmp_path, layout):
    """0.2's read_score_file read one CSV or Parquet file: a directory was 'no such file',
    a TFRecord was parsed as CSV."""
    if layout == "csv.gz":
        path = tmp_path / "s.csv.gz"
        frame.to_csv(path, index=False)
    elif layout == "tfrecord":
        path = tmp_path / "s.tfrecord"
        _write_tfrecord(path, frame)
    else:
        (tmp_path / "parts").mkdir()
        for i in range(3):
            part = frame.iloc[i * 200 : (i + 1) * 200]
            table = pa.Table.from_pandas(part, preserve_index=False)
            pq.write_table(table, tmp_path / "parts" / f"part-{i}.parquet")
        path = (
            tmp_path / "parts" if layout == "directory" else str(tmp_path / "parts" / "*.parquet")
        )
    whole = read_score_file(path, client_column="client")
    joined = _chunks_joined(path, client_column="client")
    np.testing.assert_array_equal(whole.labels, joined.labels)
    np.testing.assert_array_equal(whole.scores, joined.scores)
    np.testing.assert_array_equal(whole.clients, joined.clients)
    assert whole.num_examples == len(frame) and whole.num_file_clients == 7


def test_errors_name_the_row_as_the_chunked_reader_does(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("score,label\n0.1,0\n0.2,1\n0.3,2\n")
    with pytest.raises(ScoreFileError, match=r"bad\.csv: row 3: labels must be 0 or 1"):
        read_score_file(path)
    with pytest.raises(ScoreFileError, match=r"bad\.csv: row 3: labels must be 0 or 1"):
        list(iter_score_chunks(path))


def test_score_sets_from_arrays_use_the_same_checks():
    with pytest.raises(ScoreFileError, match=r"client 2: score is NaN"):
        ScoreSet.checked([0, 1], [0.5, np.nan], source="client 2")
    with pytest.raises(ScoreFileError, match="client ids mix types"):
        ScoreSet.checked([0, 1], [0.5, 0.2], np.array([1, "a"], dtype=object))
    assert ScoreSet.checked([0, 1], [0.5, 0.2], ["b", "a"]).clients.tolist() == [1, 0]
