"""The template app (examples/flower-app) run as a Flower user runs it: ``flwr run``.

A SuperLink in simulation mode is started for this module (loopback only, its own
``FLWR_HOME`` and port, stopped at the end); ``flwr run examples/flower-app <connection>``
then trains with FedAvg on 3 simulated SuperNodes and evaluates the global model's private
AUC with the library's pieces. For most tests the app's dependencies are those of this
environment (``FLWR_DISABLE_RUNTIME_DEPENDENCY_INSTALLATION=1``, docs/flower.md);
``test_flwr_installs_the_apps_dependencies_with_the_built_wheel`` takes Flower's default
route instead (a SuperLink of its own that installs the app's dependencies with ``uv``, the
built wheel as the source of ``dpauc-tf``).

Flower's runtime gives a launched app process 30 s to report after it is claimed (a
constant, ``HEARTBEAT_DEFAULT_INTERVAL``); on a machine so loaded that Python cannot start in
30 s the SuperLink keeps relaunching it with "Runtime task-token authentication failed".
Only then, with that message of Flower's, is a test skipped; any other failure fails it.
``DPAUC_TEST_FLWR_RUN=0`` skips the module.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("flwr")
pytest.importorskip("ray")

from flwr.supercore.constant import FLWR_IN_MEMORY_DB_NAME

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "examples" / "flower-app"
BIN = Path(sys.executable).parent
NUM_NODES = 3
EXAMPLES = 300  # per node in these runs (the template's 5,000 train longer)
RUN_TIMEOUT = 900  # seconds for one flwr run (Ray start-up, TensorFlow in every actor)
STARTUP_FAILURE = "Runtime task-token authentication failed"
MAX_RELAUNCHES = 3  # refused app processes before the test gives up (and skips)
MAX_APP_PROCESSES = 6  # app processes launched for one run (Flower started 3 at once under load)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        os.environ.get("DPAUC_TEST_FLWR_RUN") == "0", reason="DPAUC_TEST_FLWR_RUN=0"
    ),
    pytest.mark.skipif(not (BIN / "flwr").exists(), reason="no flwr command beside Python"),
]


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (the SuperLink starts its SuperExec in a session of its
    own, and that one the app processes), parents before their children."""
    table = subprocess.run(["ps", "-eo", "pid=,ppid="], capture_output=True, text=True).stdout
    children: dict[int, list[int]] = {}
    for line in table.splitlines():
        child, parent = (int(x) for x in line.split())
        children.setdefault(parent, []).append(child)
    out, stack = [], [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            out.append(child)
            stack.append(child)
    return out


def _stop(process: subprocess.Popen) -> None:
    """Stops the SuperLink and every process it started, by their ids (parents first, so
    that nothing is relaunched)."""
    for pid in [process.pid, *_descendants(process.pid)]:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    try:
        process.wait(30)
    except subprocess.TimeoutExpired:
        for pid in [*_descendants(process.pid), process.pid]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def _running_superlink(home: Path, *, install_dependencies: bool):
    """A SuperLink in simulation mode on a free loopback port with its own ``FLWR_HOME``.

    ``install_dependencies=False``: the app's dependencies come from this environment (the
    checkout on ``PYTHONPATH``); ``True``: Flower's default, ``uv sync`` of the app's
    ``pyproject.toml`` into a fresh environment under ``FLWR_HOME/runtime-envs``.
    """
    port = _free_port()
    env = {
        **os.environ,
        "FLWR_HOME": str(home),
        "FLWR_TELEMETRY_ENABLED": "0",
        "PATH": os.pathsep.join([str(BIN), os.environ.get("PATH", "")]),
    }
    env.pop("FLWR_DISABLE_RUNTIME_DEPENDENCY_INSTALLATION", None)
    if not install_dependencies:
        env["FLWR_DISABLE_RUNTIME_DEPENDENCY_INSTALLATION"] = "1"
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    (home / "config.toml").write_text(
        f'[superlink]\ndefault = "test"\n\n[superlink.test]\naddress = "127.0.0.1:{port}"\n'
        "insecure = true\n"
    )
    log_file = home / "superlink.log"
    command = [str(BIN / "flower-superlink"), "--insecure", "--simulation"]
    command += ["--isolation", "subprocess", "--host", "127.0.0.1", "--port", str(port)]
    # Flower's own name for its in-memory state: any other name is a SQLite file, relative to
    # the SuperLink's directory (before, ":flwr-in-memory-state:", Flower's older name, made
    # every SuperLink of the tests share one file in the checkout, runs and tasks included)
    command += ["--database", FLWR_IN_MEMORY_DB_NAME, "--log-file", str(log_file)]
    process = subprocess.Popen(
        command,
        env=env,
        cwd=home,  # whatever a SuperLink writes stays in its own FLWR_HOME
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2):
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    tail = log_file.read_text()[-2000:] if log_file.exists() else ""
                    pytest.fail(f"flower-superlink did not start: {tail}")
                time.sleep(1)
        yield env, log_file, process
    finally:
        _stop(process)


@pytest.fixture(scope="module")
def superlink(tmp_path_factory):
    with _running_superlink(tmp_path_factory.mktemp("flwr-home"), install_dependencies=False) as s:
        yield s


_CANNOT_START: list[str] = []  # Flower's line, once its runtime could not start an app


def _app_processes(process: subprocess.Popen) -> list[int]:
    """The app processes (``flwr-simulation``) the SuperLink's SuperExec has launched."""
    out = []
    for pid in _descendants(process.pid):
        try:
            if b"flwr-simulation" in Path(f"/proc/{pid}/cmdline").read_bytes():
                out.append(pid)
        except OSError:
            pass
    return out


def _refusals(log_file: Path) -> int:
    if not log_file.exists():
        return 0
    text = log_file.read_text()
    return sum("pull-task-input" in line and STARTUP_FAILURE in line for line in text.splitlines())


def _flwr_run(superlink, tmp_path, app: Path = APP, **config) -> tuple[str, dict]:
    """``flwr run examples/flower-app test --stream`` with ``config`` (run-config overrides);
    returns the streamed output and the result file the server app wrote."""
    env, log_file, _ = superlink
    if _CANNOT_START:
        pytest.skip(f"Flower's runtime could not start the app in time: {_CANNOT_START[0]}")
    result_file = tmp_path / "result.json"
    config = {
        "num-server-rounds": 1,
        "examples-per-node": EXAMPLES,
        "result-file": str(result_file),
        **config,
    }
    overrides = " ".join(f"{key}={json.dumps(value)}" for key, value in config.items())
    command = [str(BIN / "flwr"), "run", str(app), "test", "--stream"]
    command += ["--federation-config", f"num-supernodes={NUM_NODES}", "--run-config", overrides]
    # Flower relaunches an app process that missed its 30 s (one "pull-task-input" refusal
    # each), and the ones it gave up on linger: after a few, the machine is too loaded for
    # Flower's runtime, and waiting only adds load.
    runner = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=tmp_path
    )
    before = _refusals(log_file)
    deadline = time.monotonic() + RUN_TIMEOUT
    launched: set[int] = set()
    while runner.poll() is None:
        launched.update(_app_processes(superlink[2]))
        if (
            time.monotonic() > deadline
            or _refusals(log_file) - before >= MAX_RELAUNCHES
            or len(launched) > MAX_APP_PROCESSES
        ):
            runner.kill()
            break
        time.sleep(2)
    output = runner.communicate()[0] or ""
    if not result_file.exists():
        log = log_file.read_text() if log_file.exists() else ""
        if _refusals(log_file) > before or len(launched) > MAX_APP_PROCESSES:
            # this run's app process was refused, or relaunched before it could report
            refused = [x for x in log.splitlines() if STARTUP_FAILURE in x]
            line = (
                refused[-1]
                if refused
                else f"Flower's SuperExec launched {len(launched)} app processes for one run "
                f"(each claimed task expires after 30 s unreported); load average "
                f"{os.getloadavg()[0]:.1f}"
            )
            _CANNOT_START.append(line.strip())
            _stop(superlink[2])  # Flower would keep relaunching the app: the later tests skip
            pytest.skip(f"Flower's runtime could not start the app in time: {line.strip()}")
        pytest.fail(f"flwr run gave no result:\n{output[-4000:]}\n{log[-2000:]}")
    return output, json.loads(result_file.read_text())


def test_flwr_run_local_dp_histogram(superlink, tmp_path):
    output, result = _flwr_run(superlink, tmp_path, mechanism="histogram", epsilon=1.0)
    release = result["rounds"]["1"]
    assert release["mechanism"] == "histogram"
    assert release["epsilon"] == pytest.approx(1.0)
    assert release["num_reporting"] == NUM_NODES == release["num_clients"]
    assert release["num_examples"] == NUM_NODES * EXAMPLES
    assert 0.0 <= release["aucs"][0] <= 1.0
    assert f"epsilon 1, {NUM_NODES} of {NUM_NODES} clients reported" in output


def test_flwr_run_secure_histogram_through_secagg_in_an_evaluate_round(superlink, tmp_path):
    output, result = _flwr_run(superlink, tmp_path, mechanism="secure-histogram", epsilon=1.0)
    release = result["rounds"]["1"]
    assert release["mechanism"] == "secure-histogram"
    assert release["epsilon"] == pytest.approx(1.0)
    assert release["num_reporting"] == NUM_NODES
    assert release["num_examples"] == NUM_NODES * EXAMPLES  # the sum only, through SecAgg+
    assert "Secure aggregation completed" in output
    assert f"{NUM_NODES} of {NUM_NODES} clients reported" in output


def test_flwr_run_secure_rank_sum_in_two_secagg_exchanges(superlink, tmp_path):
    """The template app with ``mechanism = "secure-rank-sum"`` (its comment offers it): one
    evaluate round of two SecAgg+ exchanges, released at the full epsilon by every node."""
    output, result = _flwr_run(superlink, tmp_path, mechanism="secure-rank-sum", epsilon=1.0)
    release = result["rounds"]["1"]
    assert release["mechanism"] == "secure-rank-sum"
    assert release["epsilon"] == pytest.approx(1.0)
    assert release["num_reporting"] == NUM_NODES == release["num_clients"]
    assert release["num_examples"] == NUM_NODES * EXAMPLES  # round two's sum of n_k
    assert 0.0 <= release["aucs"][0] <= 1.0
    assert output.count("Secure aggregation completed") >= 2  # exchange one and two
    assert f"{NUM_NODES} of {NUM_NODES} clients reported" in output


def test_flwr_run_noise_off_equals_backend_simulate(superlink, tmp_path, capsys):
    """The app's AUC without noise is ``dpauc evaluate --backend simulate`` on the same
    partitions: scores of the final global model on each node's own data."""
    _, result = _flwr_run(superlink, tmp_path, mechanism="none", epsilon="none")
    release = result["rounds"]["1"]
    assert release["epsilon"] is None and release["num_reporting"] == NUM_NODES
    sys.path.insert(0, str(APP))
    try:
        from dpauc_app.task import load_data, load_model
    finally:
        sys.path.remove(str(APP))
    model = load_model()
    model.set_weights([np.asarray(w, np.float32) for w in result["final_weights"]])
    rows = ["score,label,client"]
    for node in range(NUM_NODES):
        features, labels = load_data(node, NUM_NODES, EXAMPLES, 0)
        scores = model.predict(features, batch_size=1024, verbose=0).reshape(-1)
        rows += [f"{float(s)!r},{int(y)},{node}" for s, y in zip(scores, labels, strict=True)]
    path = tmp_path / "scores.csv"
    path.write_text("\n".join(rows) + "\n")
    from dpauc_tf.cli.main import main

    status = main(
        [
            *("evaluate", "--scores", str(path), "--mechanism", "none"),
            *("--num-thresholds", "50", "--format", "json"),
        ]
    )
    simulated = json.loads(capsys.readouterr().out)
    assert status == 0
    assert simulated["backend"] == "simulate"
    assert release["aucs"] == simulated["aucs"]
    assert release["roc"] == simulated["roc"]


# uv's words when the package index cannot be reached (no network): only then is the
# dependency-installation test skipped
_NO_INDEX = ("Failed to fetch", "error sending request", "dns error", "network was disabled")

# Appended to the server app of the test's copy of the template: the app process writes
# which dpauc_tf it imported and the distribution record it came from (PEP 610's
# direct_url.json names the file a package was installed from).
_ORIGIN_RECORDER = """

def _record_dpauc_tf_origin(path):
    import importlib.metadata
    import json

    import dpauc_tf

    distribution = importlib.metadata.distribution("dpauc-tf")
    with open(path, "w") as out:
        record = dict(module=dpauc_tf.__file__, version=distribution.version,
                      direct_url=distribution.read_text("direct_url.json"))
        json.dump(record, out)


_record_dpauc_tf_origin({path!r})
"""


def test_flwr_installs_the_apps_dependencies_with_the_built_wheel(tmp_path_factory, tmp_path):
    """Flower's default route (issue 30): ``flwr run examples/flower-app --stream`` with
    runtime dependency installation on, the SuperLink running ``uv sync`` on the app's
    ``pyproject.toml`` into a fresh environment (``FLWR_HOME/runtime-envs/<run id>``,
    removed when the run ends). ``dpauc-tf`` is the wheel built from this checkout, named as
    a ``[tool.uv.sources]`` path source (as docs/flower.md says); the app's other
    dependencies come from the package index (through uv's cache).

    What proves the install is the app process itself: it records the ``dpauc_tf`` it
    imported (a module under that fresh environment, not this checkout) and the
    distribution's ``direct_url.json`` (the built wheel's file). Before, the test read
    Flower's log and uv's lock under this SuperLink's home, and a full CI run found
    neither: every SuperLink of this module shared one state file (the database name
    below), so the module's other SuperLink, whose SuperExec installs nothing, could take
    this run's task and run it from its own home."""
    import shutil
    from urllib.parse import unquote, urlparse

    import dpauc_tf

    dist = tmp_path_factory.mktemp("dist")
    build = subprocess.run(  # uv: what Flower itself runs (``python -m uv``)
        [sys.executable, "-m", "uv", "build", "--wheel", "--offline", "--out-dir", str(dist)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert build.returncode == 0, build.stderr[-2000:]
    (wheel,) = dist.glob("dpauc_tf-*.whl")
    assert wheel.name.startswith(f"dpauc_tf-{dpauc_tf.__version__}-")
    app = tmp_path / "flower-app"
    shutil.copytree(APP, app, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    pyproject = app / "pyproject.toml"
    pyproject.write_text(
        pyproject.read_text() + f'\n[tool.uv.sources]\ndpauc-tf = {{ path = "{wheel}" }}\n'
    )
    origin_file = tmp_path / "dpauc_tf-origin.json"
    server_app = app / "dpauc_app" / "server_app.py"
    server_app.write_text(server_app.read_text() + _ORIGIN_RECORDER.format(path=str(origin_file)))
    home = tmp_path_factory.mktemp("flwr-home-install")
    with _running_superlink(home, install_dependencies=True) as superlink:
        try:
            output, result = _flwr_run(superlink, tmp_path, app=app)
        except pytest.fail.Exception as failure:
            if any(word in str(failure) for word in _NO_INDEX):
                pytest.skip(f"the package index cannot be reached: {str(failure)[-300:]}")
            raise
    release = result["rounds"]["1"]
    assert (
        release["num_reporting"] == NUM_NODES and release["mechanism"] == "secure-rank-sum"
    )  # the template's default
    origin = json.loads(origin_file.read_text())
    module = Path(origin["module"]).resolve()
    environments = (home / "runtime-envs").resolve()
    assert environments in module.parents, (
        f"the app imported dpauc_tf from {module}, not from the environment Flower installed "
        f"under {environments}: its dependencies were not installed\n{output[-3000:]}"
    )
    assert origin["version"] == dpauc_tf.__version__
    url = json.loads(origin["direct_url"] or "{}").get("url", "")
    installed_from = Path(unquote(urlparse(url).path)).resolve()
    assert urlparse(url).scheme == "file" and installed_from == wheel.resolve(), origin
