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


# -- hardening ----------------------------------------------------------------------------
import math  # noqa: E402

from dp_accounting import dp_event  # noqa: E402

from dpauc_tf.privacy.events import SkellamDpEvent, event_from_json, event_to_json  # noqa: E402
from dpauc_tf.privacy.ledger import LedgerFormatError  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_every_kind_of_event_round_trips_through_json():
    laplace = dp_accounting.LaplaceDpEvent(noise_multiplier=2.0)
    events = [
        laplace,
        dp_accounting.GaussianDpEvent(noise_multiplier=3.0),
        dp_event.DiscreteLaplaceDpEvent(noise_parameter=0.5, sensitivity=2),
        dp_event.RandomizedResponseDpEvent(noise_parameter=0.4, num_buckets=2),
        SkellamDpEvent((10.0, 20.0), 2.0, 2.0),
        dp_accounting.NoOpDpEvent(),
        dp_accounting.NonPrivateDpEvent(),
        dp_accounting.ComposedDpEvent(
            [laplace, dp_accounting.SelfComposedDpEvent(SkellamDpEvent((5.0,), 1.0, 1.0), 3)]
        ),
    ]
    for event in events:
        text = json.dumps(event_to_json(event))
        assert event_from_json(json.loads(text)) == event


def _write(path, entries, budget=None, delta=0.0):
    path.write_text(json.dumps({"budget": budget, "delta": delta, "entries": entries}))


def _entry(event, dataset="test"):
    return {"dataset": dataset, "description": "", "time": 0.0, "event": event}


GOOD = event_to_json(dp_accounting.LaplaceDpEvent(noise_multiplier=1.0))


@pytest.mark.parametrize(
    "bad",
    [
        {**GOOD, "noise_multiplier": -1.0},  # would cancel another release's epsilon
        {**GOOD, "noise_multiplier": float("nan")},
        {**GOOD, "noise_multiplier": "1"},
        {"module_name": "os", "class_name": "system"},  # not a dp_accounting class
        {"module_name": "dp_accounting.dp_event", "class_name": "LaplaceDpEvent"},  # no field
        event_to_json(dp_accounting.SelfComposedDpEvent(dp_accounting.LaplaceDpEvent(1.0), 2))
        | {"count": -2},
        "not an event",
    ],
)
def test_a_malformed_entry_is_refused_naming_the_file_and_the_entry(tmp_path, bad):
    path = tmp_path / "ledger.json"
    _write(path, [_entry(GOOD), _entry(bad)])
    with pytest.raises(LedgerFormatError, match=rf"{path}: entry 1"):
        PrivacyLedger(budget=10.0, path=str(path))


def test_a_non_dict_entry_is_refused(tmp_path):
    path = tmp_path / "ledger.json"
    _write(path, [_entry(GOOD), 42])
    with pytest.raises(LedgerFormatError, match=rf"{path}: entry 1"):
        PrivacyLedger(path=str(path))


def test_record_refuses_invalid_and_foreign_events():
    ledger = PrivacyLedger(budget=10.0)
    ledger.record(dp_accounting.LaplaceDpEvent(noise_multiplier=1.0))
    with pytest.raises(ValueError, match="noise_multiplier"):
        ledger.record(dp_accounting.LaplaceDpEvent(noise_multiplier=-1.0))
    assert ledger.spent("default").basic == pytest.approx(1.0)


def test_a_stale_ledger_object_refuses_at_the_files_budget(tmp_path):
    path = str(tmp_path / "ledger.json")
    event = dp_accounting.LaplaceDpEvent(noise_multiplier=1.0)  # epsilon 1
    stale = PrivacyLedger(budget=10.0, path=path)
    stale.record(event, dataset="test")
    PrivacyLedger(budget=5.0, path=path)  # lowers the file's budget
    assert json.loads((tmp_path / "ledger.json").read_text())["budget"] == 5.0
    for _ in range(4):
        stale.record(event, dataset="test")
    with pytest.raises(BudgetExceededError, match="budget 5"):
        stale.record(event, dataset="test")
    assert PrivacyLedger(path=path).releases("test") == 5


def test_every_ledger_error_names_the_file(tmp_path):
    path = tmp_path / "ledger.json"
    ledger = PrivacyLedger(budget=1.0, delta=1e-6, path=str(path))
    ledger.record(dp_accounting.LaplaceDpEvent(noise_multiplier=1.0), dataset="test")
    with pytest.raises(BudgetExceededError, match=str(path)):
        ledger.record(dp_accounting.LaplaceDpEvent(noise_multiplier=1.0), dataset="test")
    with pytest.raises(ValueError, match=str(path)):
        PrivacyLedger(delta=1e-5, path=str(path))
    with pytest.raises(ValueError, match=str(path)):
        PrivacyLedger(budget=2.0, path=str(path))
    with pytest.raises(ValueError, match=str(path)):
        ledger.record(dp_accounting.GaussianDpEvent(noise_multiplier=math.nan))
    path.write_text("{")
    with pytest.raises(LedgerFormatError, match=str(path)):
        PrivacyLedger(path=str(path))


def test_opening_leaves_other_files_alone(tmp_path):
    path = tmp_path / "ledger.json"
    PrivacyLedger(path=str(path)).record(dp_accounting.LaplaceDpEvent(2.0), dataset="test")
    others = [tmp_path / "ledger.json123.tmp", tmp_path / ".ledger.json.99999.abc.tmp"]
    for other in others:
        other.write_text("{")  # an unrelated file; another process's write in progress
    PrivacyLedger(path=str(path)).record(dp_accounting.LaplaceDpEvent(2.0), dataset="test")
    assert all(other.exists() for other in others)
    assert PrivacyLedger(path=str(path)).releases("test") == 2


REOPENING_CHILD = textwrap.dedent(
    """
    import sys
    import dp_accounting
    from dpauc_tf.privacy.ledger import PrivacyLedger

    event = dp_accounting.LaplaceDpEvent(noise_multiplier=1.0)
    for i in range(100):
        PrivacyLedger(path=sys.argv[1]).record(event, dataset=sys.argv[2], description=str(i))
    """
)


def test_two_processes_reopening_the_ledger_per_release_keep_every_record(tmp_path):
    path = str(tmp_path / "ledger.json")
    env = {**os.environ, "PYTHONPATH": ROOT}
    children = [
        subprocess.Popen(
            [sys.executable, "-c", REOPENING_CHILD, path, name],
            cwd=ROOT,
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("a", "b")
    ]
    errors = [child.communicate(timeout=600)[1] for child in children]
    assert [child.returncode for child in children] == [0, 0], errors
    ledger = PrivacyLedger(path=path)
    assert ledger.releases("a") == 100 and ledger.releases("b") == 100
    assert len(json.loads((tmp_path / "ledger.json").read_text())["entries"]) == 200


def test_a_version_1_file_is_read():
    import tempfile

    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "ledger.json")
        with open(path, "w") as handle:
            json.dump(
                {
                    "budget": 5.0,
                    "delta": 0.0,
                    "entries": [
                        {
                            "dataset": "t",
                            "description": "",
                            "time": 1.0,
                            "kind": "laplace",
                            "noise_multiplier": 2.0,
                        },
                        {
                            "dataset": "t",
                            "description": "",
                            "time": 1.0,
                            "kind": "discrete-laplace",
                            "noise_multiplier": 4.0,
                        },
                    ],
                },
                handle,
            )
        ledger = PrivacyLedger(path=path)
        assert ledger.spent("t").basic == pytest.approx(0.75) and ledger.budget == 5.0
