"""End-to-end preparation, the shard format, tf.data loading, the command line."""

import json
import subprocess
import sys

import numpy as np
import pytest

from data_prep.__main__ import main
from data_prep.io import load_split_arrays, load_tf_dataset, read_metadata
from data_prep.pipeline import prepare_criteo, prepare_synthetic
from data_prep.preprocess import is_test_row
from data_prep.reader import MalformedInputError
from data_prep.synthetic import SyntheticCriteo


@pytest.fixture(scope="module")
def synthetic_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("raw") / "train.txt"
    SyntheticCriteo(seed=2).write_tsv(path, 3000)
    return path


def test_prepare_file_fits_on_train_only(synthetic_file, tmp_path):
    meta = prepare_criteo(synthetic_file, tmp_path, seed=5, test_fraction=0.2, chunk_rows=700)
    train, test = load_split_arrays(tmp_path, "train"), load_split_arrays(tmp_path, "test")
    expected_test = is_test_row(np.arange(3000), 5, 0.2)
    assert len(test["label"]) == expected_test.sum() == meta["splits"]["test"]["rows"]
    assert len(train["label"]) + len(test["label"]) == 3000
    assert meta["splits"]["train"]["shards"] == [f"train-0000{i}.npz" for i in range(5)]
    # vocabularies come from the training part: every train id is known, some test ids are not
    assert (train["cat_ids"] > 0).all()
    assert (test["cat_ids"] == 0).any()
    sizes = np.array(meta["vocab_sizes"])
    assert (train["cat_ids"] < sizes).all() and (test["cat_ids"] < sizes).all()
    # scaling is fitted on the training part: train spans [0, 1] exactly, test is clipped
    assert train["int_features"].min() == 0.0 and train["int_features"].max() == 1.0
    assert 0.0 <= test["int_features"].min() and test["int_features"].max() <= 1.0
    vocab = json.loads((tmp_path / "vocabularies.json").read_text())
    assert [len(vocab[f"C{i}"]) + 1 for i in range(1, 27)] == meta["vocab_sizes"]


def test_same_seed_same_output_whatever_the_chunking(synthetic_file, tmp_path):
    prepare_criteo(synthetic_file, tmp_path / "a", seed=1, chunk_rows=3000)
    prepare_criteo(synthetic_file, tmp_path / "b", seed=1, chunk_rows=512)
    prepare_criteo(synthetic_file, tmp_path / "c", seed=2)
    for split in ("train", "test"):
        a = load_split_arrays(tmp_path / "a", split)
        b = load_split_arrays(tmp_path / "b", split)
        for key in a:
            assert np.array_equal(a[key], b[key])
    c = load_split_arrays(tmp_path / "c", "test")
    assert not np.array_equal(c["label"], load_split_arrays(tmp_path / "a", "test")["label"])


def test_min_count_caps_vocabularies(synthetic_file, tmp_path):
    full = prepare_criteo(synthetic_file, tmp_path / "full", seed=0)
    capped = prepare_criteo(synthetic_file, tmp_path / "capped", seed=0, min_count=5)
    assert sum(capped["vocab_sizes"]) < sum(full["vocab_sizes"]) / 2
    train = load_split_arrays(tmp_path / "capped", "train")
    assert (train["cat_ids"] == 0).mean() > 0.01


def test_malformed_lines_are_reported_in_metadata(tmp_path):
    text = (tmp_path / "x").as_posix()
    gen = SyntheticCriteo(seed=0)
    gen.write_tsv(text, 200)
    lines = open(text).read().splitlines()
    lines[10] = lines[10].replace("\t", ",", 3)
    lines[50] = "1\tnot-a-number" + lines[50][lines[50].index("\t", 2) :]
    path = tmp_path / "bad.txt"
    path.write_text("\n".join(lines) + "\n")
    meta = prepare_criteo(path, tmp_path / "out", seed=0)
    report = meta["read_report"]
    assert report["malformed_lines"] == 2 and report["rows"] == 198
    assert [m["line"] for m in report["malformed_examples"]] == [11, 51]
    assert meta["splits"]["train"]["rows"] + meta["splits"]["test"]["rows"] == 198


def test_tf_dataset_batches(tmp_path):
    prepare_synthetic(1000, tmp_path, seed=0)
    meta = read_metadata(tmp_path)
    ds = load_tf_dataset(tmp_path, "train", 128, shuffle=True, seed=0)
    batches = list(ds)
    assert len(batches) == ds.cardinality().numpy() == -(-meta["splits"]["train"]["rows"] // 128)
    features, label = batches[0]
    assert (
        features["int_features"].shape == (128, 13)
        and features["int_features"].dtype.name == "float32"
    )
    assert features["cat_ids"].shape == (128, 26) and features["cat_ids"].dtype.name == "int32"
    assert label.shape == (128,) and label.dtype.name == "float32"
    total = sum(int(lbl.shape[0]) for _, lbl in batches)
    assert total == meta["splits"]["train"]["rows"]
    ordered = np.concatenate([lbl.numpy() for _, lbl in load_tf_dataset(tmp_path, "test", 64)])
    assert np.array_equal(ordered, load_split_arrays(tmp_path, "test")["label"])


def test_cli_synthetic_and_errors(tmp_path, capsys):
    assert main(["--synthetic", "500", "--output", str(tmp_path / "s"), "--no-progress"]) == 0
    assert "prepared 500 rows" in capsys.readouterr().out
    assert read_metadata(tmp_path / "s")["source"]["synthetic"]["rows"] == 500
    assert main(["--input", str(tmp_path / "missing.txt"), "--output", str(tmp_path / "o")]) == 1
    assert "error: no such file" in capsys.readouterr().err
    bad = tmp_path / "bad.txt"
    bad.write_text("1\t" + "\t" * 38 + "\n1\tx" + "\t" * 38 + "\n")
    args = ["--input", str(bad), "--output", str(tmp_path / "b"), "--no-progress"]
    assert main([*args, "--strict"]) == 1
    assert "line 2" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--synthetic", "0", "--output", str(tmp_path)])


def test_module_entry_point(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "data_prep", "--synthetic", "300", "--output", str(tmp_path),
         "--seed", "3", "--test-fraction", "0.3", "--no-progress"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert read_metadata(tmp_path)["test_fraction"] == 0.3


def test_real_criteo_sample(criteo_combined_file, tmp_path):
    meta = prepare_criteo(criteo_combined_file, tmp_path, seed=0)
    report = meta["read_report"]
    assert report["rows"] == 19_532 and report["malformed_lines"] == 0
    train, test = meta["splits"]["train"], meta["splits"]["test"]
    assert train["rows"] + test["rows"] == 19_532
    assert train["positives"] + test["positives"] == 4_653
    assert 0.08 < test["rows"] / 19_532 < 0.12
    assert meta["source"]["format"] == "raw_tsv"


def test_real_criteo_every_raw_file(criteo_raw_dir):
    from data_prep.reader import read_criteo

    expected = {"cafpereira": 4584, "lapis-hong": 10000, "shenweichen": 200, "va.rx": 1999}
    for path in sorted(criteo_raw_dir.iterdir()):
        chunk, report = read_criteo(path)
        assert report.malformed_lines == 0, path.name
        for key, rows in expected.items():
            if key in path.name:
                assert len(chunk) == rows, path.name


def test_undecodable_categories_get_distinct_ids(tmp_path, write_undecodable):
    path = tmp_path / "bad_bytes.txt"
    UNDECODABLE = write_undecodable(path, repeat=30)
    meta = prepare_criteo(path, tmp_path / "out", seed=0, test_fraction=0.2)
    assert meta["read_report"]["malformed_lines"] == 0
    ids = np.concatenate(
        [load_split_arrays(tmp_path / "out", s)["cat_ids"] for s in ("train", "test")]
    )
    pairs = set(zip(ids[:, 1].tolist(), ids[:, 0].tolist(), strict=True))  # (C2 tag, C1)
    assert 0 not in {c1 for _, c1 in pairs}
    assert len(pairs) == len({c1 for _, c1 in pairs}) == len(UNDECODABLE)
    raw = (tmp_path / "out" / "vocabularies.json").read_bytes()
    vocab = json.loads(raw.decode("utf-8"))
    assert len(vocab["C1"]) == len(UNDECODABLE)
    for value in vocab["C1"]:
        value.encode("utf-8")  # strict UTF-8: no lone surrogates in the file


def snapshot(directory):
    """{relative path: bytes} of every file under ``directory``."""
    return {
        p.relative_to(directory).as_posix(): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


def truncated_gzip_copy(source, path, keep=0.6):
    import gzip

    whole = gzip.compress(source.read_bytes())
    path.write_bytes(whole[: int(len(whole) * keep)])
    return path


def strict_failure_input(source, path, bad_line=2500):
    lines = source.read_text().splitlines(keepends=True)
    lines[bad_line - 1] = (
        "1\tnot-a-number" + lines[bad_line - 1][lines[bad_line - 1].index("\t", 2) :]
    )
    path.write_text("".join(lines))
    return path


@pytest.mark.parametrize("failure", ["truncated_gzip", "strict_malformed", "empty_test_split"])
def test_failed_rerun_leaves_the_previous_output_intact(synthetic_file, tmp_path, failure):
    parent = tmp_path / "prepared_parent"
    out = parent / "out"
    first = prepare_criteo(synthetic_file, out, seed=1, chunk_rows=700)
    before = snapshot(out)
    assert "metadata.json" in before and len(first["splits"]["train"]["shards"]) > 1
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    options = {"seed": 2, "chunk_rows": 500}
    if failure == "truncated_gzip":
        bad = truncated_gzip_copy(synthetic_file, inputs / "input.txt.gz")
        error = MalformedInputError
    elif failure == "strict_malformed":
        bad = strict_failure_input(synthetic_file, inputs / "strict.txt")
        options["strict"], error = True, MalformedInputError
    else:  # fails after every shard of the new run has been written
        bad, error = synthetic_file, ValueError
        options["test_fraction"] = 1e-12
    with pytest.raises(error):
        prepare_criteo(bad, out, **options)
    assert snapshot(out) == before
    assert sorted(p.name for p in parent.iterdir()) == ["out"]  # no temporary left behind
    assert read_metadata(out)["seed"] == 1


def test_cli_failed_rerun_keeps_the_output(synthetic_file, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["--input", str(synthetic_file), "--output", str(out), "--no-progress"]) == 0
    before = snapshot(out)
    bad = truncated_gzip_copy(synthetic_file, tmp_path / "input.txt.gz")
    capsys.readouterr()
    assert main(["--input", str(bad), "--output", str(out), "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ")
    assert f"{bad}: truncated gzip file (" in err
    assert snapshot(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["input.txt.gz", "out"]


def test_module_entry_point_truncated_gzip_is_one_line(synthetic_file, tmp_path):
    bad = truncated_gzip_copy(synthetic_file, tmp_path / "input.txt.gz")
    result = subprocess.run(
        [sys.executable, "-m", "data_prep", "--input", str(bad), "--output",
         str(tmp_path / "out")],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode == 1
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert lines[-1].startswith("error: ") and "truncated gzip file" in lines[-1]
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "out").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["input.txt.gz"]


def test_successful_rerun_replaces_the_output(synthetic_file, tmp_path):
    out = tmp_path / "out"
    prepare_criteo(synthetic_file, out, seed=1, chunk_rows=500)
    out.chmod(0o750)
    meta = prepare_criteo(synthetic_file, out, seed=2)  # one shard per split now
    names = sorted(p.name for p in out.iterdir())
    assert names == ["metadata.json", "test-00000.npz", "train-00000.npz", "vocabularies.json"]
    assert read_metadata(out) == meta and meta["seed"] == 2
    assert out.stat().st_mode & 0o777 == 0o750
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_refuses_to_replace_a_directory_holding_other_files(synthetic_file, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match=r"notes\.txt"):
        prepare_criteo(synthetic_file, out, seed=0)
    assert snapshot(out) == {"notes.txt": b"mine"}
    inside = out / "train.txt"  # the input inside the output directory is not deleted either
    inside.write_bytes(synthetic_file.read_bytes())
    with pytest.raises(ValueError, match="not prepared data"):
        prepare_criteo(inside, out, seed=0)
    assert inside.read_bytes() == synthetic_file.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


# -- the working directories of a killed run (issue 21) -----------------------------------------
def siblings(parent, kind="tmp"):
    return sorted(p.name for p in parent.iterdir() if p.name.startswith(f".out.{kind}-"))


def start_prepare(out, rows):
    """``python -m data_prep --synthetic ROWS`` in the background, as a user starts it."""
    return subprocess.Popen(
        [sys.executable, "-m", "data_prep", "--synthetic", str(rows), "--output", str(out),
         "--seed", "3", "--no-progress"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def wait_for_work_dir(process, parent, timeout=300):
    import time

    deadline = time.monotonic() + timeout
    while not siblings(parent):
        assert process.poll() is None, process.stderr.read()
        assert time.monotonic() < deadline, "no working directory appeared"
        time.sleep(0.05)
    return siblings(parent)


def prepare_cli(out, rows):
    done = subprocess.run(
        [sys.executable, "-m", "data_prep", "--synthetic", str(rows), "--output", str(out),
         "--seed", "4", "--no-progress"],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done


def test_a_killed_run_s_working_directory_is_removed_by_the_next_run(tmp_path):
    import signal

    out = tmp_path / "out"
    prepare_cli(out, 500)
    before = snapshot(out)
    process = start_prepare(out, 5_000_000)  # far more than it gets to write
    try:
        left = wait_for_work_dir(process, tmp_path)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    assert siblings(tmp_path) == left and snapshot(out) == before  # the old output intact
    prepare_cli(out, 600)
    assert siblings(tmp_path) == [] and siblings(tmp_path, "old") == []
    assert (
        read_metadata(out)["splits"]["train"]["rows"] + read_metadata(out)["splits"]["test"]["rows"]
        == 600
    )


def test_a_concurrent_run_s_working_directory_is_left_alone(tmp_path):
    out = tmp_path / "out"
    slow = start_prepare(out, 300_000)
    try:
        theirs = wait_for_work_dir(slow, tmp_path)
        prepare_cli(out, 500)  # finishes first, into the same output
        assert slow.poll() is None, "the slow run ended first: nothing was tested"
        assert set(theirs) <= set(siblings(tmp_path))  # the live run's directory is kept
        _, err = slow.communicate(timeout=900)
    finally:
        if slow.poll() is None:
            slow.kill()
            slow.wait()
    assert slow.returncode == 0, err  # and that run completes
    assert read_metadata(out)["seed"] == 3
    assert siblings(tmp_path) == [] and siblings(tmp_path, "old") == []


def test_only_provably_dead_owners_lose_their_directories(tmp_path):
    """Dead pid: removed; live pid: kept; live pid with another start time (reused): removed;
    another host or no owner in the name: kept; a dead run's ``.old-`` copy comes back when
    the output itself is missing (killed between its two renames)."""
    from data_prep import io

    host, boot = io._digest(__import__("socket").gethostname()), io._digest(io._boot_id())
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    try:
        live_start = io._process_stat(live.pid)[1]
        names = {
            "dead": f".out.tmp-{dead.pid}-{live_start}-{host}-{boot}-a1",
            "live": f".out.tmp-{live.pid}-{live_start}-{host}-{boot}-b2",
            "reused": f".out.tmp-{live.pid}-{live_start + 1}-{host}-{boot}-c3",
            "other host": f".out.tmp-{dead.pid}-{live_start}-00000000-{boot}-d4",
            "legacy": ".out.tmp-e5xyz",
            "old": f".out.old-{dead.pid}-{live_start}-{host}-{boot}-f6",
            "other name": f".outer.tmp-{dead.pid}-{live_start}-{host}-{boot}-g7",
        }
        for name in names.values():
            (tmp_path / name).mkdir()
        (tmp_path / names["old"] / "out").mkdir()
        (tmp_path / names["old"] / "out" / "metadata.json").write_text("{}")
        removed = io.remove_stale_siblings(tmp_path / "out")
        left = {p.name for p in tmp_path.iterdir()}
    finally:
        live.kill()
        live.wait()
    gone = {"dead", "reused", "old"}
    assert {p.name for p in removed} == {names[k] for k in gone}
    assert left == {names[k] for k in names if k not in gone} | {"out"}
    assert (tmp_path / "out" / "metadata.json").read_text() == "{}"
