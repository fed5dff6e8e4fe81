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


def _file_lines(path):
    """The JSON lines of a ledger file: the header and one per release (complete lines)."""
    text = path.read_text()
    return [json.loads(line) for line in text.split("\n")[:-1]]


def _file_entries(path):
    header, *entries = _file_lines(path)
    assert header["version"] == 3
    return entries


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

    entries = _file_entries(path)  # every complete line reads (a torn last one is not read)
    assert acknowledged <= len(entries) <= acknowledged + 2
    leftovers = [p.name for p in tmp_path.iterdir() if p.name != "ledger.json"]
    assert all(name.endswith((".tmp", ".lock")) for name in leftovers)  # lock: see ledger.py

    reloaded = PrivacyLedger(budget=1000.0, path=str(path))
    assert reloaded.releases("test") == len(entries)
    assert reloaded.spent("test").basic == pytest.approx(0.01 * len(entries))

    # The budget survives the restart: a fresh process with a smaller budget refuses.
    tight = PrivacyLedger(budget=0.01 * len(entries) + 0.005, path=str(path))
    with pytest.raises(BudgetExceededError):
        tight.record(dp_accounting.LaplaceDpEvent(noise_multiplier=100.0), dataset="test")
    assert PrivacyLedger(path=str(path)).releases("test") == len(entries)


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

from dpauc_tf.privacy.events import (  # noqa: E402
    BoundFailureDpEvent,
    SkellamDpEvent,
    event_from_json,
    event_to_json,
)
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
    from dpauc_tf.privacy.events import _plain

    for event in events:
        text = json.dumps(event_to_json(event))
        assert event_from_json(json.loads(text)) == event
        # the fast conversion writes exactly what dp-accounting's named tuple gives
        assert event_to_json(event) == _plain(event.to_named_tuple())


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
    assert _file_lines(tmp_path / "ledger.json")[0]["budget"] == 5.0
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
    assert len(_file_entries(tmp_path / "ledger.json")) == 200


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


# -- a ledger that keeps up (issue 21) -------------------------------------------------------
def _largest_admitted(event, budget, delta, upper):
    """Brute force: the largest n <= upper with the exact figure of n releases <= budget."""
    from dpauc_tf.privacy.accounting import composed_epsilon

    low, high = 0, upper + 1  # figure(low) fits, figure(high) does not (or beyond upper)
    while high - low > 1:
        middle = (low + high) // 2
        total = dp_accounting.SelfComposedDpEvent(event, middle)
        fits = composed_epsilon(total, 1, delta).best <= budget * (1 + 1e-12)
        low, high = (middle, high) if fits else (low, middle)
    return low


@pytest.mark.parametrize(
    "event, budget, delta",
    [
        (dp_accounting.LaplaceDpEvent(noise_multiplier=10.0), 2.0, 1e-6),  # PLD at the edge
        (dp_accounting.LaplaceDpEvent(noise_multiplier=100.0), 0.5, 0.0),  # pure: the sum
        (dp_accounting.GaussianDpEvent(noise_multiplier=20.0), 1.0, 1e-6),
    ],
)
def test_a_file_ledger_composes_rarely_and_admits_what_the_exact_figure_admits(
    tmp_path, monkeypatch, event, budget, delta
):
    """Recording used to recompose every release (and re-read and rewrite the whole file):
    400 releases took 79 s. Now a release is admitted by a cheap valid bound or an earlier
    exact figure, and the exact figure is computed only near the budget, a few times."""
    import dpauc_tf.privacy.ledger as ledger_module

    calls = []
    exact = ledger_module.composed_epsilon

    def counting(*args, **kwargs):
        calls.append(args)
        return exact(*args, **kwargs)

    monkeypatch.setattr(ledger_module, "composed_epsilon", counting)
    path = tmp_path / "ledger.json"
    ledger = PrivacyLedger(budget=budget, delta=delta, path=str(path))
    admitted = 0
    with pytest.raises(BudgetExceededError):
        for _ in range(100_000):
            ledger.record(event, dataset="test")
            admitted += 1
    assert admitted == _largest_admitted(event, budget, delta, admitted + 50)
    assert len(calls) <= 40, f"{len(calls)} exact compositions for {admitted} releases"
    # the figures are the exact ones, from the object and from the file
    figure = exact(dp_accounting.SelfComposedDpEvent(event, admitted), 1, delta)
    for spent in (ledger.spent("test"), PrivacyLedger(path=str(path)).spent("test")):
        assert (spent.basic, spent.pld, spent.rdp, spent.count) == (
            figure.basic,
            figure.pld,
            figure.rdp,
            admitted,
        )
    assert len(_file_entries(path)) == admitted


def test_mixed_releases_are_admitted_as_the_exact_figure_admits(tmp_path):
    laplace = dp_accounting.LaplaceDpEvent(noise_multiplier=10.0)
    gaussian = dp_accounting.GaussianDpEvent(noise_multiplier=15.0)
    ledger = PrivacyLedger(budget=1.5, delta=1e-6, path=str(tmp_path / "ledger.json"))
    from dpauc_tf.privacy.accounting import composed_epsilon

    counts = [0, 0]
    with pytest.raises(BudgetExceededError):
        for i in range(10_000):
            ledger.record(laplace if i % 3 else gaussian, dataset="test")
            counts[0 if i % 3 else 1] += 1
    refused = (laplace, gaussian)[0 if len(ledger.entries) % 3 else 1]
    with pytest.raises(BudgetExceededError):
        ledger.check(refused, dataset="test")
    total = dp_accounting.ComposedDpEvent(
        [
            dp_accounting.SelfComposedDpEvent(gaussian, counts[1]),
            dp_accounting.SelfComposedDpEvent(laplace, counts[0]),
        ]
    )
    assert ledger.spent("test").best == pytest.approx(composed_epsilon(total, 1, 1e-6).best)
    assert ledger.spent("test").best <= 1.5 * (1 + 1e-12)


def test_a_torn_last_line_is_not_read_and_is_cut_off_by_the_next_release(tmp_path):
    path = tmp_path / "ledger.json"
    event = dp_accounting.LaplaceDpEvent(noise_multiplier=10.0)
    PrivacyLedger(budget=5.0, path=str(path)).record(event, dataset="test")
    with open(path, "a") as handle:  # what a writer killed inside write() leaves
        handle.write('{"dataset": "test", "description": "", "time": 1.0, "ev')
    ledger = PrivacyLedger(path=str(path))
    assert ledger.releases("test") == 1
    ledger.record(event, dataset="test")
    assert len(_file_entries(path)) == 2  # the torn line is gone, every line reads
    assert PrivacyLedger(path=str(path)).releases("test") == 2


def test_another_processes_appends_and_a_rewrite_are_seen_by_a_live_object(tmp_path):
    path = str(tmp_path / "ledger.json")
    event = dp_accounting.LaplaceDpEvent(noise_multiplier=10.0)  # epsilon 0.1
    first, second = PrivacyLedger(budget=1.0, path=path), PrivacyLedger(budget=1.0, path=path)
    for _ in range(5):
        first.record(event, dataset="test")
    for _ in range(5):
        second.record(event, dataset="test")  # sees the first's five
    with pytest.raises(BudgetExceededError):
        first.record(event, dataset="test")
    assert first.releases("test") == second.releases("test") == 10
    # a file replaced under a live object (another version, a restore) is read whole
    (tmp_path / "ledger.json").write_text(
        json.dumps({"budget": 1.0, "delta": 0.0, "entries": [_entry(GOOD)]})
    )
    first.refresh()
    assert first.releases("test") == 1 and first.spent("test").basic == pytest.approx(1.0)


def test_a_version_2_file_is_read_and_rewritten_at_its_first_release(tmp_path):
    path = tmp_path / "ledger.json"
    _write(path, [_entry(GOOD), _entry(GOOD, "other")], budget=5.0)
    ledger = PrivacyLedger(path=str(path))
    assert ledger.budget == 5.0 and ledger.releases("test") == 1
    assert json.loads(path.read_text())["entries"]  # reading leaves it alone
    ledger.record(dp_accounting.LaplaceDpEvent(noise_multiplier=2.0), dataset="test")
    assert _file_lines(path)[0] == {"version": 3, "budget": 5.0, "delta": 0.0}
    assert [e["dataset"] for e in _file_entries(path)] == ["test", "other", "test"]
    assert PrivacyLedger(path=str(path)).spent("test").basic == pytest.approx(1.5)


CONCURRENT_CHILD = textwrap.dedent(
    """
    import sys
    import dp_accounting
    from dpauc_tf.privacy.ledger import BudgetExceededError, PrivacyLedger

    ledger = PrivacyLedger(budget=float(sys.argv[2]), path=sys.argv[1])
    event = dp_accounting.LaplaceDpEvent(noise_multiplier=100.0)  # epsilon 0.01 per release
    acknowledged = 0
    try:
        while True:
            ledger.record(event, dataset="test", description=sys.argv[3])
            acknowledged += 1
    except BudgetExceededError:
        pass
    print(acknowledged)
    """
)


def test_two_processes_recording_at_once_lose_nothing_and_stop_at_the_budget(tmp_path):
    """Two processes append to one file at the same time until the budget refuses: every
    acknowledged release is in the file, and together they spend exactly the budget."""
    path = str(tmp_path / "ledger.json")
    PrivacyLedger(budget=4.0, path=path).record(
        dp_accounting.LaplaceDpEvent(noise_multiplier=100.0), dataset="test"
    )  # the file exists before both start: both append
    env = {**os.environ, "PYTHONPATH": ROOT}
    children = [
        subprocess.Popen(
            [sys.executable, "-c", CONCURRENT_CHILD, path, "4.0", name],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("a", "b")
    ]
    outputs = [child.communicate(timeout=600) for child in children]
    assert [child.returncode for child in children] == [0, 0], [err for _, err in outputs]
    acknowledged = [int(out) for out, _ in outputs]
    entries = _file_entries(tmp_path / "ledger.json")
    assert len(entries) == 400 == 1 + sum(acknowledged)  # 400 x 0.01 = the budget
    for name, count in zip("ab", acknowledged, strict=True):
        assert sum(e["description"] == name for e in entries) == count
    ledger = PrivacyLedger(path=path)
    assert ledger.releases("test") == 400 and ledger.spent("test").basic == pytest.approx(4.0)


# -- refusals caused by delta say so (issue 21) ----------------------------------------------
def test_a_refusal_caused_by_delta_names_delta_and_says_what_to_do():
    """They said 'would spend epsilon inf > budget' and never mentioned delta."""
    auc_only = dp_accounting.ComposedDpEvent(  # an auc-only release (epsilon 1, delta 1e-6)
        [
            dp_accounting.LaplaceDpEvent(noise_multiplier=20.0),
            dp_accounting.LaplaceDpEvent(noise_multiplier=1 / 0.95),
            BoundFailureDpEvent(1e-6),
        ]
    )
    gaussian = dp_accounting.GaussianDpEvent(noise_multiplier=5.0)
    skellam = SkellamDpEvent((50.0,), 2.0, 2.0)
    for event in (auc_only, gaussian, skellam):
        with pytest.raises(BudgetExceededError, match=r"delta = 0.*PrivacyLedger\(.*delta="):
            PrivacyLedger(budget=10.0).record(event, dataset="test")
    ledger = PrivacyLedger(budget=10.0, delta=1e-7)  # smaller than the release's own delta
    with pytest.raises(BudgetExceededError, match=r"own deltas add up to 1e-06.*delta 1e-07"):
        ledger.record(auc_only, dataset="test")
    with pytest.raises(BudgetExceededError, match="non-private"):
        PrivacyLedger(budget=10.0).record(dp_accounting.NonPrivateDpEvent())
    with pytest.raises(BudgetExceededError) as refused:  # a budget refusal: no delta advice
        PrivacyLedger(budget=0.5).record(dp_accounting.LaplaceDpEvent(1.0))
    assert "PrivacyLedger(" not in str(refused.value)


def test_the_readmes_metric_with_delta_and_a_ledger_without_is_refused_naming_delta():
    from dpauc_tf.mechanisms import get_mechanism

    metric_event = get_mechanism("auc-only", epsilon=1.0, num_thresholds=200, delta=1e-6)
    with pytest.raises(BudgetExceededError, match=r"give the ledger a delta"):
        PrivacyLedger(budget=10.0).record_release(metric_event, dataset="validation")
    ledger = PrivacyLedger(budget=10.0, delta=1e-5)
    ledger.record_release(metric_event, dataset="validation")  # what the message suggests
    assert ledger.releases("validation") == 1


@pytest.mark.parametrize("delta", [0.0, 1e-5])
def test_an_unsupported_event_is_not_told_to_add_a_delta(delta):
    """The ledger advised a delta for an ``UnsupportedDpEvent``, which still fails with one
    (issue 35): the refusal says that no delta helps."""
    with pytest.raises(BudgetExceededError) as refused:
        PrivacyLedger(budget=10.0, delta=delta).record(dp_accounting.UnsupportedDpEvent())
    message = str(refused.value)
    assert "UnsupportedDpEvent" in message and "whatever the delta" in message
    assert "give the ledger a delta" not in message
