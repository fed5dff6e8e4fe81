"""Beam in Beam's idiom: score files read by Beam's own sources (Parquet, TFRecord, CSV and
CSV.gz, globs), sliced inside the transform from the examples' columns: noise off equals
the simulation per slice and per client; the accounting does not depend on batching."""

from __future__ import annotations

import gzip

import numpy as np
import pandas as pd
import pytest

beam = pytest.importorskip("apache_beam")
pa = pytest.importorskip("pyarrow")

import pyarrow.parquet as pq  # noqa: E402
import tensorflow as tf  # noqa: E402
from apache_beam.options.pipeline_options import PipelineOptions  # noqa: E402
from scipy import stats  # noqa: E402

from dpauc_tf.beam import PrivateAUC, ReadScores  # noqa: E402
from dpauc_tf.beam.io import csv_headers, file_format  # noqa: E402
from dpauc_tf.beam.pipeline import run_and_collect  # noqa: E402
from dpauc_tf.core.thresholds import Thresholds  # noqa: E402
from dpauc_tf.mechanisms import get_mechanism  # noqa: E402
from dpauc_tf.simulation import client_histograms, simulate  # noqa: E402

T = 10
N = 900
K = 10
LOCAL = PipelineOptions(["--runner=DirectRunner"])


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(0)
    scores = rng.random(N)
    labels = (rng.random(N) < scores).astype(np.int64)
    order = np.argsort(scores, kind="stable")  # non-IID: clients hold contiguous score ranges
    clients = np.empty(N, np.int64)
    clients[order] = np.arange(N) * K // N
    groups = np.where(rng.random(N) < 0.5, "a", "b")
    return pd.DataFrame({"score": scores, "label": labels, "group": groups, "client": clients})


def _write(frame, directory, fmt: str) -> str:
    parts = np.array_split(np.arange(len(frame)), 3)
    for index, rows in enumerate(parts):
        part = frame.iloc[rows]
        if fmt == "parquet":
            pq.write_table(
                pa.Table.from_pandas(part, preserve_index=False), directory / f"p{index}.parquet"
            )
        elif fmt == "csv":
            part.to_csv(directory / f"p{index}.csv", index=False)
        elif fmt == "csv.gz":
            with gzip.open(directory / f"p{index}.csv.gz", "wt") as handle:
                part.to_csv(handle, index=False)
        else:
            with tf.io.TFRecordWriter(str(directory / f"p{index}.tfrecord")) as writer:
                for row in part.itertuples():
                    feature = {
                        "score": tf.train.Feature(float_list=tf.train.FloatList(value=[row.score])),
                        "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[row.label])),
                        "group": tf.train.Feature(
                            bytes_list=tf.train.BytesList(value=[row.group.encode()])
                        ),
                        "client": tf.train.Feature(
                            int64_list=tf.train.Int64List(value=[row.client])
                        ),
                    }
                    writer.write(
                        tf.train.Example(
                            features=tf.train.Features(feature=feature)
                        ).SerializeToString()
                    )
    return str(directory / f"p*.{fmt}")


def _expected(frame, rows, per_client: bool):
    thresholds = Thresholds.make(T)
    clients = frame.client.to_numpy()[rows] if per_client else None
    pos, neg = client_histograms(
        frame.label.to_numpy()[rows].astype(np.float64),
        frame.score.to_numpy()[rows],
        thresholds,
        clients,
        K if per_client else 1,
    )
    return simulate(get_mechanism("none", epsilon=None, num_thresholds=T), pos, neg, repeats=1)


def _run(pattern, columns, batch_size=65_536, **options):
    options = {"num_thresholds": T, "slicing": [(), ("group",)], **options}
    results, _ = run_and_collect(
        lambda p: p | ReadScores(pattern, columns, batch_size=batch_size) | PrivateAUC(**options),
        LOCAL,
    )
    return {r.slice_key: r for r in results}


@pytest.mark.parametrize("fmt", ["parquet", "csv", "csv.gz", "tfrecord"])
def test_noise_off_equals_the_simulation_per_slice(frame, tmp_path, fmt):
    pattern = _write(frame, tmp_path, fmt)
    out = _run(pattern, ["score", "label", "group"], batch_size=128, epsilon=None)
    assert sorted(out, key=str) == sorted([(), (("group", "a"),), (("group", "b"),)], key=str)
    masks = {(): np.ones(N, bool)}
    masks.update({(("group", g),): (frame.group == g).to_numpy() for g in "ab"})
    for key, mask in masks.items():
        expected = _expected(frame, np.flatnonzero(mask), per_client=False)
        assert out[key].aucs.tolist() == expected.aucs.tolist(), (fmt, key)
        np.testing.assert_array_equal(out[key].fpr, expected.fpr)
        assert out[key].num_examples == mask.sum()


def test_k10_non_iid_clients_equal_the_simulation(frame, tmp_path):
    pattern = _write(frame, tmp_path, "parquet")
    out = _run(pattern, ["score", "label", "group", "client"], epsilon=None, client_column="client")
    for key, mask in [((), np.ones(N, bool)), ((("group", "a"),), (frame.group == "a").to_numpy())]:
        expected = _expected(frame, np.flatnonzero(mask), per_client=True)
        assert out[key].aucs.tolist() == expected.aucs.tolist()
        assert out[key].num_reporting == K


@pytest.mark.parametrize("batch_size", [7, 100_000])
def test_accounting_comes_from_the_specs_not_the_batching(frame, tmp_path, batch_size):
    pattern = _write(frame, tmp_path, "csv")
    out = _run(pattern, ["score", "label", "group"], batch_size=batch_size, epsilon=1.0, seed=0)
    mechanism = get_mechanism("histogram", epsilon=1.0, num_thresholds=T)
    for release in out.values():
        assert release.slices_per_example == 2
        assert release.epsilon == pytest.approx(1.0)
        assert release.epsilon_total == pytest.approx(mechanism.privacy_spent(2).best)


def test_noisy_auc_distribution_matches_the_simulation(frame, tmp_path):
    pattern = _write(frame, tmp_path, "parquet")
    out = _run(
        pattern, ["score", "label"], slicing=[()], mechanism="histogram", epsilon=1.0, seed=3,
        repeats=300,
    )  # fmt: skip
    pos, neg = client_histograms(
        frame.label.to_numpy().astype(np.float64), frame.score.to_numpy(), Thresholds.make(T)
    )
    mechanism = get_mechanism("histogram", epsilon=1.0, num_thresholds=T)
    simulated = simulate(mechanism, pos, neg, seed=4, repeats=300).aucs
    assert stats.ks_2samp(out[()].aucs, simulated).pvalue > 1e-3
    for wrong in (0.5, 2.0):  # a doubled or halved noise scale is told apart
        other = get_mechanism("histogram", epsilon=wrong, num_thresholds=T)
        aucs = simulate(other, pos, neg, seed=5, repeats=600).aucs
        assert stats.ks_2samp(out[()].aucs, aucs).pvalue < 1e-4, wrong


def test_hostile_files_give_clear_errors(frame, tmp_path):
    bad = frame.copy()
    bad.loc[5, "label"] = 2
    bad.to_csv(tmp_path / "labels.csv", index=False)
    with pytest.raises(Exception, match="labels must be 0 or 1"):
        _run(str(tmp_path / "labels.csv"), ["score", "label", "group"], epsilon=None)
    nulls = frame.copy()
    nulls["score"] = nulls.score.astype(object)
    nulls.loc[3, "score"] = None
    pq.write_table(pa.Table.from_pandas(nulls, preserve_index=False), tmp_path / "nulls.parquet")
    with pytest.raises(Exception, match="predictions must be finite"):
        _run(str(tmp_path / "nulls.parquet"), ["score", "label", "group"], epsilon=None)
    with pytest.raises(ValueError, match="has no column 'weight'"):
        csv_headers(str(tmp_path / "labels.csv"), ["score", "weight"])
    with pytest.raises(ValueError, match="no file matches"):
        ReadScores(str(tmp_path / "nothing-*.csv"), ["score", "label"]).expand(None)
    with pytest.raises(Exception, match="takes column batches"):
        run_and_collect(
            lambda p: p | beam.Create([("all", (0.5, 1))]) | PrivateAUC(epsilon=None, slicing=[()]),
            LOCAL,
        )


def test_one_class_and_empty_slices(tmp_path):
    frame = pd.DataFrame(
        {"score": [0.2, 0.7, 0.9, 0.4], "label": [1, 1, 0, 0], "group": ["pos", "pos", "x", None]}
    )
    frame.to_csv(tmp_path / "s.csv", index=False)
    out = _run(str(tmp_path / "s.csv"), ["score", "label", "group"], epsilon=None)
    assert out[(("group", "pos"),)].auc_or_none is None  # one class: undefined, not a number
    assert (("group", None),) not in out and len(out) == 3  # a missing value: in no slice
    pd.DataFrame({"score": [], "label": [], "group": []}).to_csv(tmp_path / "e.csv", index=False)
    assert _run(str(tmp_path / "e.csv"), ["score", "label", "group"], epsilon=1.0) == {}


def test_slicing_arguments_are_checked():
    with pytest.raises(ValueError, match="non-empty list"):
        PrivateAUC(epsilon=None, slicing=[])
    with pytest.raises(ValueError, match="twice"):
        PrivateAUC(epsilon=None, slicing=[(), ()])
    with pytest.raises(ValueError, match="does not apply"):
        PrivateAUC(epsilon=None, slicing=[()], max_slices_per_example=3)
    with pytest.raises(ValueError, match="name columns of slicing"):
        PrivateAUC(epsilon=None, client_column="client")
    assert file_format("gs://b/x-*.PARQUET") == "parquet"


def test_worker_start_up_prints_no_tensorflow_chatter(frame, tmp_path):
    """A pipeline on the 2-process DirectRunner (fresh worker processes import TensorFlow):
    no CUDA probe, oneDNN or absl start-up line reaches the output."""
    import subprocess
    import sys

    pattern = _write(frame, tmp_path, "parquet")
    script = (
        "from dpauc_tf.beam import PrivateAUC, ReadScores\n"
        "from dpauc_tf.beam.pipeline import pipeline_options, run_and_collect\n"
        f"out, _ = run_and_collect(lambda p: p | ReadScores({pattern!r}, ['score', 'label'])"
        " | PrivateAUC(epsilon=None, slicing=[()]), pipeline_options(None))\n"
        "print('AUC', out[0].auc)\n"
    )
    env = {k: v for k, v in __import__("os").environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=600
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "AUC 0." in done.stdout
    output = done.stdout + done.stderr
    for chatter in ("oneDNN custom operations", "cuda_platform", "cudart_stub", "cuInit"):
        assert chatter not in output, chatter


def test_file_pipeline_takes_a_release_spec(frame, tmp_path):
    """``evaluate_files_with_beam`` takes the release as one ReleaseSpec (and nothing else);
    noise off it equals the simulate backend on the same spec (K = 10 non-IID clients), and
    its seed (no other) makes the noisy release reproducible."""
    from dpauc_tf.beam.pipeline import evaluate_files_with_beam
    from dpauc_tf.mechanisms.release import ReleaseSpec

    pattern = _write(frame, tmp_path, "parquet")
    local = ["--runner=DirectRunner"]
    exact = ReleaseSpec.make("none", epsilon=None, num_thresholds=T)
    out = evaluate_files_with_beam(pattern, exact, client_column="client", beam_options=local)
    pos, neg = client_histograms(
        frame.label.to_numpy(),
        frame.score.to_numpy(),
        exact.count_grid(),
        frame.client.to_numpy(),
        K,
    )
    assert out.aucs.tolist() == simulate(exact, pos, neg).aucs.tolist()
    noisy = ReleaseSpec.make("histogram", epsilon=1.0, num_thresholds=T, seed=9)
    by_spec = evaluate_files_with_beam(pattern, noisy, repeats=2, beam_options=local)
    again = evaluate_files_with_beam(
        pattern,
        ReleaseSpec.make("histogram", epsilon=1.0, num_thresholds=T, seed=9),
        repeats=2,
        beam_options=local,
    )
    assert by_spec.aucs.tolist() == again.aucs.tolist()
    for keyword in ("epsilon", "seed"):  # the spec is the whole release, its seed included
        with pytest.raises(TypeError, match=f"unexpected keyword argument '{keyword}'"):
            evaluate_files_with_beam(pattern, noisy, **{keyword: 1})
    with pytest.raises(TypeError, match="pass the release as a ReleaseSpec"):
        evaluate_files_with_beam(pattern, "histogram")
