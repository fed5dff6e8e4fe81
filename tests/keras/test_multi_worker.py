"""DPAUC under ``tf.distribute.MultiWorkerMirroredStrategy``: two worker processes on localhost.

Both workers run ``_WORKER`` (TF_CONFIG with two free ports, RING collectives) on the same
data file; each prints what it saw as one JSON line. The test compares the workers with
each other and with this process (no strategy, same data, same seed):

- the metric variables are sync-on-read sums: noise-free DPAUC, tf.keras.metrics.AUC in the
  same job and the global counts equal the single-process ones on all the data (a partial
  last batch included);
- noise is added once, to the global counts: a seeded release equals this process's first
  release with that seed (noise on each worker's own counts, or twice, would not);
- without a seed both workers publish the same value (the noise generator's state is a
  mirrored variable, broadcast from the chief when it is created), so an evaluation is one
  release for the job, and each worker's ledger counts it once;
- in Keras 2, ``model.evaluate`` and ``model.fit`` with validation data do the same. Keras 3
  cannot run ``fit``/``evaluate`` under this strategy (keras-team/keras#20585, before any
  metric is involved): there the workers run a custom loop only.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
import tensorflow as tf

from dpauc_tf import DPAUC
from dpauc_tf.keras import DPAUCBudgetCallback
from dpauc_tf.keras.metric import KERAS_MAJOR
from dpauc_tf.privacy.ledger import PrivacyLedger

SEED = 7
NUM_THRESHOLDS = 50
EPOCHS = 2
BATCH = 100  # global batch: 50 per worker; the data sizes leave a partial last batch
WORKER_TIMEOUT_S = 480  # bounded: a lost worker never hangs CI; generous for loaded runners

_WORKER = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import tensorflow as tf
    from dpauc_tf import DPAUC
    from dpauc_tf.keras import DPAUCBudgetCallback
    from dpauc_tf.keras.metric import KERAS_MAJOR
    from dpauc_tf.privacy.ledger import PrivacyLedger

    data = np.load(sys.argv[1])
    seed, thresholds, epochs, batch = (int(a) for a in sys.argv[2:6])
    ring = tf.distribute.experimental.CommunicationImplementation.RING
    strategy = tf.distribute.MultiWorkerMirroredStrategy(
        communication_options=tf.distribute.experimental.CommunicationOptions(implementation=ring)
    )
    def dataset(x, y):
        return tf.data.Dataset.from_tensor_slices((x, y)).batch(batch)
    def metrics():
        return [
            tf.keras.metrics.AUC(num_thresholds=thresholds, name="auc"),
            DPAUC(epsilon=None, num_thresholds=thresholds, name="exact"),
            DPAUC(epsilon=1.0, num_thresholds=thresholds, seed=seed, name="seeded"),
            DPAUC(epsilon=1.0, num_thresholds=thresholds, name="unseeded"),
        ]
    out = {"workers": strategy.extended._num_workers}

    # A custom loop: update_state on each replica, result() eagerly on each worker.
    with strategy.scope():
        loop = metrics()
    counts = loop[1].positives  # Keras 3 wraps a tf.Variable
    out["variable"] = type(counts if isinstance(counts, tf.Variable) else counts.value).__name__
    @tf.function
    def step(x, y):
        def update(x, y):
            for metric in loop:
                metric.update_state(y, tf.sigmoid(x[:, 0]))
        strategy.run(update, args=(x, y))
    for x, y in strategy.experimental_distribute_dataset(dataset(data["x"], data["y"])):
        step(x, y)
    out["loop"] = {m.name: float(m.result()) for m in loop}
    out["loop_again"] = {m.name: float(m.result()) for m in loop[2:]}
    out["loop_counts"] = [float(tf.reduce_sum(c)) for c in loop[1]._counts()]
    out["loop_releases"] = {m.name: m.releases_drawn for m in loop[2:]}

    if KERAS_MAJOR == 2:
        with strategy.scope():
            compiled = metrics()
            model = tf.keras.Sequential([
                tf.keras.Input((1,)),
                tf.keras.layers.Dense(1, activation="sigmoid", kernel_initializer="ones"),
            ])
            model.compile("sgd", "binary_crossentropy", metrics=compiled)
        ledger = PrivacyLedger()
        callbacks = [DPAUCBudgetCallback(ledger)]
        out["evaluate"] = model.evaluate(
            dataset(data["x"], data["y"]), verbose=0, return_dict=True, callbacks=callbacks
        )
        history = model.fit(
            dataset(data["x"], data["y"]), epochs=epochs, verbose=0, callbacks=callbacks,
            validation_data=dataset(data["xv"], data["yv"]),
        )
        out["history"] = history.history
        out["releases"] = {m.name: m.releases_drawn for m in compiled[2:]}
        out["ledger"] = {d: ledger.releases(d) for d in ledger.datasets()}
    # A metric built outside the scope would count one worker's share: refused on both.
    outside = DPAUC(epsilon=1.0, num_thresholds=thresholds, name="outside")
    @tf.function
    def outside_step(x, y):
        strategy.run(lambda x, y: outside.update_state(y, tf.sigmoid(x[:, 0])), args=(x, y))
    try:
        outside_step(*next(iter(strategy.experimental_distribute_dataset(
            dataset(data["x"], data["y"])))))
        out["outside_scope"] = "accepted"
    except ValueError as error:
        out["outside_scope"] = str(error)
    print("RESULT " + json.dumps(out), flush=True)
    """
)


def _free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("localhost", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def _kill(processes) -> None:
    for process in processes:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    for process in processes:
        process.wait()


def _run_workers(data_path: str, log_dir) -> list[dict]:
    """Starts two workers, waits for both (killing both if one fails or time runs out)."""
    logs = [log_dir / f"worker{index}.log" for index in range(2)]
    cluster = {"worker": [f"localhost:{port}" for port in _free_ports(2)]}
    args = [str(SEED), str(NUM_THRESHOLDS), str(EPOCHS), str(BATCH)]
    processes = []
    try:
        for index in range(2):
            config = {"cluster": cluster, "task": {"type": "worker", "index": index}}
            env = {**os.environ, "TF_CONFIG": json.dumps(config), "TF_CPP_MIN_LOG_LEVEL": "2"}
            env["CUDA_VISIBLE_DEVICES"] = ""
            with open(logs[index], "w") as log:  # a file: a full pipe cannot block a worker
                processes.append(
                    subprocess.Popen(
                        [sys.executable, "-c", _WORKER, data_path, *args],
                        env=env,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,  # its own process group: killed as a whole
                    )
                )
        deadline = time.monotonic() + WORKER_TIMEOUT_S
        while any(p.poll() is None for p in processes):
            failed = [p for p in processes if p.poll() not in (None, 0)]
            if failed or time.monotonic() > deadline:
                _kill(processes)
                break
            time.sleep(0.2)
    finally:
        _kill(processes)
    results = []
    for index, (process, log) in enumerate(zip(processes, logs, strict=True)):
        output = log.read_text()
        lines = [line for line in output.splitlines() if line.startswith("RESULT ")]
        assert process.returncode == 0 and lines, (
            f"worker {index} exited with {process.returncode} (killed after "
            f"{WORKER_TIMEOUT_S} s if -9):\n{output[-4000:]}"
        )
        results.append(json.loads(lines[-1][len("RESULT ") :]))
    return results


def _data():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(430, 1)).astype("float32")  # 4 full global batches and one of 30
    y = (x[:, 0] + rng.normal(size=430) > 0.3).astype("float32")
    xv = rng.normal(size=(165, 1)).astype("float32")  # a last batch of 65: 33 + 32
    yv = (xv[:, 0] + rng.normal(size=165) > 0.3).astype("float32")
    return x, y, xv, yv


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    x, y, xv, yv = _data()
    folder = tmp_path_factory.mktemp("multi_worker")
    np.savez(folder / "data.npz", x=x, y=y, xv=xv, yv=yv)
    return _run_workers(str(folder / "data.npz"), folder)


def _single_process(x, y):
    """This process, no strategy: the reference values and the seeded first release."""
    scores = tf.sigmoid(x[:, 0])
    reference = tf.keras.metrics.AUC(num_thresholds=NUM_THRESHOLDS)
    reference.update_state(y, scores)
    seeded = DPAUC(epsilon=1.0, num_thresholds=NUM_THRESHOLDS, seed=SEED)
    seeded.update_state(y, scores)
    counts = [float(tf.reduce_sum(c)) for c in seeded._counts()]
    return float(reference.result()), float(seeded.result()), counts


def test_both_workers_joined_one_job_with_sync_on_read_sums(runs):
    assert [run["workers"] for run in runs] == [2, 2]
    assert [run["variable"] for run in runs] == ["SyncOnReadVariable"] * 2


def test_a_metric_built_outside_the_scope_is_refused_on_every_worker(runs):
    for run in runs:
        assert "outside the distribution strategy's scope" in run["outside_scope"]


def test_custom_loop_noise_is_added_once_to_the_global_counts(runs):
    x, y, _, _ = _data()
    auc, seeded, counts = _single_process(x, y)
    for run in runs:
        loop = run["loop"]
        assert run["loop_counts"] == counts  # every example counted once, none twice
        assert loop["exact"] == pytest.approx(auc, abs=1e-6)
        assert loop["auc"] == pytest.approx(auc, abs=1e-6)
        # one draw, on the summed counts: equal to the single process's first release
        assert loop["seeded"] == pytest.approx(seeded, abs=1e-12)
        assert loop["seeded"] != pytest.approx(auc, abs=1e-6)
        assert run["loop_releases"] == {"seeded": 2, "unseeded": 2}
    # without a seed both workers still draw the same noise: one release for the job
    assert runs[0]["loop"]["unseeded"] == runs[1]["loop"]["unseeded"]
    assert runs[0]["loop_again"] == runs[1]["loop_again"]
    assert runs[0]["loop_again"]["unseeded"] != runs[0]["loop"]["unseeded"]  # fresh noise


@pytest.mark.skipif(KERAS_MAJOR != 2, reason="Keras 3 cannot fit/evaluate under this strategy")
def test_evaluate_and_fit_publish_one_release_per_evaluation(runs):
    x, y, _, _ = _data()
    model = tf.keras.Sequential(
        [
            tf.keras.Input((1,)),
            tf.keras.layers.Dense(1, activation="sigmoid", kernel_initializer="ones"),
        ]
    )
    metrics = [
        tf.keras.metrics.AUC(num_thresholds=NUM_THRESHOLDS, name="auc"),
        DPAUC(epsilon=1.0, num_thresholds=NUM_THRESHOLDS, seed=SEED, name="seeded"),
    ]
    model.compile("sgd", "binary_crossentropy", metrics=metrics)
    ledger = PrivacyLedger()
    single = model.evaluate(
        x, y, batch_size=BATCH, verbose=0, return_dict=True, callbacks=[DPAUCBudgetCallback(ledger)]
    )
    first, second = runs
    assert first["evaluate"] == second["evaluate"]  # every value, noisy ones included
    assert first["history"] == second["history"]
    evaluated = first["evaluate"]
    assert evaluated["auc"] == pytest.approx(single["auc"], abs=1e-6)
    assert evaluated["exact"] == pytest.approx(single["auc"], abs=1e-6)
    assert evaluated["seeded"] == pytest.approx(single["seeded"], abs=1e-7)
    history = first["history"]
    assert history["exact"] == pytest.approx(history["auc"], abs=1e-6)
    assert history["val_exact"] == pytest.approx(history["val_auc"], abs=1e-6)
    for name in ("seeded", "unseeded"):
        # fresh noise for every value; only a value clipped to 0 or 1 may repeat (165
        # validation examples at epsilon 1 put the noisy AUC past 1 now and then)
        values = history[name] + history[f"val_{name}"]
        interior = [value for value in values if 0.0 < value < 1.0]
        assert all(0.0 <= value <= 1.0 for value in values)
        assert len(interior) >= 2 and len(set(interior)) == len(interior), values
    # per worker and metric: 1 (evaluate) + one training and one validation value per epoch
    releases = 1 + 2 * EPOCHS
    for run in runs:
        assert run["releases"] == {"seeded": releases, "unseeded": releases}
        assert run["ledger"] == {"evaluation": 2, "train": 2 * EPOCHS, "validation": 2 * EPOCHS}
    assert ledger.releases("evaluation") == 1  # the single process, one noisy metric
