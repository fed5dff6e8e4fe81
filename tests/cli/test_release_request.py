"""The one spec builder of ``dpauc evaluate`` (dpauc_tf.cli.release): the release's arguments
are checked once, before TensorFlow, and every backend receives the spec, not the arguments."""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd
import pytest

from dpauc_tf.cli import backends, release
from dpauc_tf.cli.errors import CommandError
from dpauc_tf.cli.main import main


def _args(**given) -> argparse.Namespace:
    values = dict(
        mechanism=None,
        epsilon=1.0,
        delta=None,
        num_thresholds=200,
        threshold_grid="tf",
        thresholds=None,
        mechanism_options=[],
        seed=None,
    )
    values.update(given)
    return argparse.Namespace(**values)


def test_the_default_rule_and_a_thresholds_file(tmp_path):
    assert release.release_request(_args(), needs_curve=False).mechanism == "rank-sum"
    assert release.release_request(_args(delta=1e-6), needs_curve=False).mechanism == "auc-only"
    assert release.release_request(_args(), needs_curve=True).mechanism == "histogram"
    path = tmp_path / "grid.txt"
    path.write_text("0.2, 0.5\n0.7")
    request = release.release_request(_args(thresholds=str(path)), needs_curve=False)
    assert request.threshold_grid == (0.2, 0.5, 0.7) and request.num_thresholds == 5
    assert request.grid_name == "explicit" and request.thresholds_file == str(path)


@pytest.mark.parametrize(
    "given, message",
    [
        (dict(epsilon=None), "give --epsilon"),
        (dict(mechanism="none"), "adds no noise: leave --epsilon unset"),
        (dict(mechanism="histogram", epsilon=None), "needs --epsilon"),
        (
            dict(mechanism_options=[("positive_rate", 0.2), ("positive_rate", 0.3)]),
            "--mechanism-option: an option is given twice",
        ),
    ],
)
def test_refusals_before_tensorflow(given, message):
    with pytest.raises(CommandError, match=message):
        release.release_request(_args(**given), needs_curve=False)


def test_evaluate_checks_its_release_once_and_backends_get_the_spec(tmp_path, monkeypatch, capsys):
    """``--epsilon``/``--mechanism`` are resolved once, the spec made once, and the backend
    is called with a BackendRun carrying that spec (never the command's arguments)."""
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, 300)
    frame = pd.DataFrame({"score": rng.uniform(size=300), "label": labels})
    frame.to_csv(tmp_path / "s.csv", index=False)
    calls = {"resolve": 0, "spec": 0}
    resolve, make_spec = release.resolve_mechanism, release.ReleaseRequest.spec

    def counting_resolve(*args, **kwargs):
        calls["resolve"] += 1
        return resolve(*args, **kwargs)

    def counting_spec(self, *args, **kwargs):
        calls["spec"] += 1
        return make_spec(self, *args, **kwargs)

    seen = []
    simulate = backends.BACKENDS["simulate"]

    def recording(run, *rest):
        seen.append(run)
        return simulate(run, *rest)

    monkeypatch.setattr(release, "resolve_mechanism", counting_resolve)
    monkeypatch.setattr(release.ReleaseRequest, "spec", counting_spec)
    monkeypatch.setitem(backends.BACKENDS, "simulate", recording)
    argv = ["evaluate", "--scores", str(tmp_path / "s.csv"), "--epsilon", "2", "--seed", "1"]
    assert main([*argv, "--num-thresholds", "20", "--format", "json"]) == 0
    capsys.readouterr()
    assert calls == {"resolve": 1, "spec": 1}
    (run,) = seen
    assert isinstance(run, backends.BackendRun)
    assert (run.spec.mechanism, run.spec.epsilon, run.spec.seed) == ("rank-sum", 2.0, 1)
    assert run.spec.num_thresholds == 20
