"""TFF's worker_binary never holds a caller's pipe: ``... | cat`` returns (TFF world only).

Each case is a shell pipeline under ``timeout``; all run at once (each imports TensorFlow
and TFF). A case that hung would end with status 124 from ``timeout``. Every child gets a
marker in its environment, inherited by its worker_binary, so the check that no worker is
left behind looks only at this test's workers.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("tensorflow_federated")

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 480  # seconds per pipeline; on two loaded shared cores the four together took 340 s

SCRIPT_OK_THEN_BAD_LABEL = """
import numpy as np
from dpauc_tf import federated
out = federated.evaluate([(np.array([0.2, 0.7]), np.array([0, 1]))], epsilon=None, num_thresholds=5)
print("AUC", out.auc, flush=True)
federated.evaluate([(np.array([0.2, 0.7]), np.array([0, 2]))], epsilon=None, num_thresholds=5)
"""

SCRIPT_OK = """
import numpy as np
from dpauc_tf import federated
out = federated.evaluate([(np.array([0.2, 0.7]), np.array([0, 1]))], epsilon=None, num_thresholds=5)
print("AUC", out.auc, flush=True)
"""

SCRIPT_SKIPS_ATEXIT = SCRIPT_OK + "import os, sys\nsys.stderr.flush()\nos._exit(0)\n"


def _marked_workers(marker: str) -> list[int]:
    """Pids of worker_binary processes whose environment carries ``marker``."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if b"worker_binary" not in f.read():
                    continue
            with open(f"/proc/{entry}/environ", "rb") as f:
                if marker.encode() in f.read():
                    pids.append(int(entry))
        except OSError:
            continue
    return pids


def test_pipelines_return_and_leave_no_worker(tmp_path):
    rng = np.random.default_rng(0)
    labels, scores = rng.integers(0, 2, 60), rng.random(60)
    good = tmp_path / "good.csv"
    pd.DataFrame({"score": scores, "label": labels, "client": np.arange(60) % 3}).to_csv(
        good, index=False
    )
    bad = tmp_path / "bad.csv"
    bad_labels = labels.copy()
    bad_labels[7] = 2
    pd.DataFrame({"score": scores, "label": bad_labels}).to_csv(bad, index=False)
    py = shlex.quote(sys.executable)
    scripts = {}
    for name, text in [
        ("ok_then_bad", SCRIPT_OK_THEN_BAD_LABEL),
        ("skips_atexit", SCRIPT_SKIPS_ATEXIT),
    ]:
        scripts[name] = tmp_path / f"{name}.py"
        scripts[name].write_text(text)
    cli = f"{py} -m dpauc_tf evaluate --backend tff --mechanism histogram --epsilon 1 --seed 0"
    cases = {
        "cli_ok": f"{cli} --scores {good} --num-thresholds 10 --format json | cat",
        "cli_error": f"{cli} --scores {bad} --num-thresholds 10 2>&1 | cat",
        "script_error": f"{py} {scripts['ok_then_bad']} 2>&1 | cat",
        "script_no_atexit": f"{py} {scripts['skips_atexit']} 2>&1 | cat",
        "import_only": f"{py} -c 'import dpauc_tf.federated' 2>&1 | cat",
    }
    marker = f"DPAUC_PIPE_TEST={uuid.uuid4().hex}"
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "TF_CPP_MIN_LOG_LEVEL": "2",
        marker.split("=")[0]: marker.split("=")[1],
    }
    running = {
        name: subprocess.Popen(
            f"timeout {TIMEOUT} bash -o pipefail -c {shlex.quote(command)}",
            shell=True,
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for name, command in cases.items()
    }
    try:
        results = {name: p.communicate(timeout=TIMEOUT + 60) for name, p in running.items()}
        codes = {name: p.returncode for name, p in running.items()}
        for name, (out, _) in results.items():
            assert codes[name] != 124, f"{name} hung:\n{out[-2000:]}"
        assert codes["cli_ok"] == 0 and '"backend": "tff"' in results["cli_ok"][0]
        assert codes["cli_error"] == 2
        assert "dpauc: error:" in results["cli_error"][0]
        assert codes["script_error"] == 1, results["script_error"][0][-2000:]
        out = results["script_error"][0]
        assert "AUC 1.0" in out and "ValueError: client 0: labels must be 0 or 1" in out
        assert codes["script_no_atexit"] == 0 and "AUC 1.0" in results["script_no_atexit"][0]
        assert codes["import_only"] == 0
        # no TFF worker manager is left for the interpreter's teardown, where its __del__
        # failed ("Exception ignored in ... ServiceManager.__del__")
        for name in ("cli_error", "script_error", "import_only"):
            assert "Exception ignored" not in results[name][0], results[name][0][-2000:]
        # Every process that exited normally stopped its worker (atexit); the one that
        # skipped atexit left one, which returned anyway because it holds no pipe.
        assert len(_marked_workers(env["DPAUC_PIPE_TEST"])) <= 1
    finally:
        for p in running.values():
            if p.poll() is None:
                p.kill()
        for pid in _marked_workers(env["DPAUC_PIPE_TEST"]):
            os.kill(pid, signal.SIGTERM)
