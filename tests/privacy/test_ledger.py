"""The privacy ledger loses nothing when its process is killed (SIGKILL) between releases."""

import json
import os
import signal
import subprocess
import sys
import textwrap

import dp_accounting
import pytest

from dpauc_tf.privacy.ledger import BudgetExceededError, PrivacyLedger

CHILD = textwrap.dedent(
    """
    import sys
    import dp_accounting
    from dpauc_tf.privacy.ledger import PrivacyLedger

    ledger = PrivacyLedger(budget=1000.0, path=sys.argv[1])
    event = dp_accounting.LaplaceDpEvent(noise_multiplier=100.0)  # epsilon 0.01 per release
    for i in range(100_000):
        ledger.record(event, dataset="test", description=f"release {i}")
        print(i + 1, flush=True)  # acknowledged: record() has returned
    """
)


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_killed_process_loses_no_acknowledged_release(tmp_path):
    path = tmp_path / "ledger.json"
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
    )
    acknowledged = 0
    try:
        for line in child.stdout:
            acknowledged = int(line)
            if acknowledged >= 40:
                os.kill(child.pid, signal.SIGKILL)  # mid-loop: possibly during a write
                break
    finally:
        child.kill()
        child.wait(timeout=60)
    assert child.returncode == -signal.SIGKILL
    assert acknowledged >= 40

    state = json.loads(path.read_text())  # never half-written
    assert acknowledged <= len(state["entries"]) <= acknowledged + 2
    leftovers = [p.name for p in tmp_path.iterdir() if p.name != "ledger.json"]
    assert all(name.endswith((".tmp", ".lock")) for name in leftovers)  # lock: see ledger.py

    reloaded = PrivacyLedger(budget=1000.0, path=str(path))
    assert reloaded.releases("test") == len(state["entries"])
    assert reloaded.spent("test").basic == pytest.approx(0.01 * len(state["entries"]))

    # The budget survives the restart: a fresh process with a smaller budget refuses.
    tight = PrivacyLedger(budget=0.01 * len(state["entries"]) + 0.005, path=str(path))
    with pytest.raises(BudgetExceededError):
        tight.record(dp_accounting.LaplaceDpEvent(noise_multiplier=100.0), dataset="test")
    assert PrivacyLedger(path=str(path)).releases("test") == len(state["entries"])


def test_two_ledgers_on_one_file_keep_both_releases(tmp_path):
    path = str(tmp_path / "ledger.json")
    first, second = PrivacyLedger(budget=1.0, path=path), PrivacyLedger(budget=1.0, path=path)
    event = dp_accounting.LaplaceDpEvent(noise_multiplier=1 / 0.6)  # epsilon 0.6 each
    first.record(event, dataset="test")
    with pytest.raises(BudgetExceededError):  # 0.6 + 0.6 > 1: the file already holds 0.6
        second.record(event, dataset="test")
    assert PrivacyLedger(path=path).releases("test") == 1
