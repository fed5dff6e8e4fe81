"""The registry: one place that knows every mechanism, and what each can take.

A toy mechanism registered from outside the package shows up in every caller (the command
line, the simulation, the Keras metric, the audit, TFF where installed); capabilities are
checked against what the mechanisms really do.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path

import dp_accounting
import numpy as np
import pytest
import tensorflow as tf

from dpauc_tf import DPAUC
from dpauc_tf.core.curve import confusion_from_histogram
from dpauc_tf.core.thresholds import Thresholds
from dpauc_tf.mechanisms import (
    Capabilities,
    CountMechanism,
    describe_mechanisms,
    get_mechanism,
    list_mechanisms,
    mechanism_class,
    register_mechanism,
    require,
    unregister_mechanism,
)
from dpauc_tf.mechanisms.registry import BUILTIN_MECHANISMS
from dpauc_tf.noise import samplers
from dpauc_tf.noise.seeds import split_seed
from dpauc_tf.privacy.statement import PrivacyStatement
from dpauc_tf.simulation import client_histograms, simulate

REPO = Path(__file__).resolve().parents[2]


class ToyLaplace(CountMechanism):
    """Laplace(2/eps) on the class histograms, written from scratch outside the package."""

    name = "toy-laplace"
    capabilities = Capabilities()

    @property
    def noise_scale(self) -> float:
        return 2.0 / self.epsilon

    @property
    def noise_stddev(self) -> float:
        return math.sqrt(2.0) * self.noise_scale

    def _noisy_release(self, pos, neg, seed):
        seeds = split_seed(seed, 2)
        return {
            "pos": pos + samplers.laplace(tf.shape(pos), self.noise_scale, seeds[0], pos.dtype),
            "neg": neg + samplers.laplace(tf.shape(neg), self.noise_scale, seeds[1], neg.dtype),
        }

    def to_confusion(self, release):
        return confusion_from_histogram(release["pos"], release["neg"])

    def dp_event(self):
        return dp_accounting.LaplaceDpEvent(noise_multiplier=self.noise_scale / 2.0)

    def statement(self):
        return PrivacyStatement(
            self.name, self.neighbouring, "L1 = 2", "Laplace", self.epsilon, 0.0
        )


@pytest.fixture
def toy():
    register_mechanism(ToyLaplace, summary="a toy for the registry test")
    yield ToyLaplace
    unregister_mechanism(ToyLaplace.name)


def _data(n=2000, seed=0):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, n)
    scores = 1 / (1 + np.exp(-(rng.normal(size=n) + 1.5 * labels)))
    return labels, scores


def test_toy_mechanism_appears_in_every_caller(toy, tmp_path, capsys):
    assert "toy-laplace" in list_mechanisms()
    assert "toy-laplace" in list_mechanisms(keras_metric=True, private=True)
    labels, scores = _data()
    # the simulation
    mechanism = get_mechanism("toy-laplace", epsilon=1.0, num_thresholds=20, num_clients=3)
    pos, neg = client_histograms(labels, scores, Thresholds.make(20))
    result = simulate(mechanism, pos, neg, seed=0, repeats=5)
    assert result.aucs.shape == (5,) and np.all(np.isfinite(result.aucs))
    # the Keras metric
    metric = DPAUC(epsilon=1.0, num_thresholds=20, mechanism="toy-laplace", seed=0)
    metric.update_state(labels, scores)
    assert 0.5 < float(metric.result()) < 1.0
    # the command line
    from dpauc_tf.cli import main

    path = tmp_path / "scores.csv"
    path.write_text(
        "score,label\n" + "\n".join(f"{s},{y}" for s, y in zip(scores, labels, strict=True))
    )
    status = main(
        [
            "evaluate",
            "--scores",
            str(path),
            "--mechanism",
            "toy-laplace",
            "--epsilon",
            "1",
            "--num-thresholds",
            "20",
            "--repeats",
            "3",
            "--seed",
            "0",
            "--format",
            "json",
        ]
    )
    assert status == 0
    out = json.loads(capsys.readouterr().out)
    assert out["mechanism"] == "toy-laplace" and len(out["aucs"]) == 3
    # the audit
    from dpauc_tf.analysis.audit import auditable_mechanisms, run_audit

    assert "toy-laplace" in auditable_mechanisms()
    audit = run_audit("toy-laplace", epsilon=1.0, samples=4000, seed=0)
    assert not audit.violated
    # TFF, where installed
    if importlib.util.find_spec("tensorflow_federated") is not None:
        from dpauc_tf.federated import evaluate

        clients = [(scores[:1000], labels[:1000]), (scores[1000:], labels[1000:])]
        federated = evaluate(
            clients, mechanism="toy-laplace", epsilon=1.0, num_thresholds=20, seed=0
        )
        assert federated.mechanism == "toy-laplace" and federated.num_reporting == 2


def test_registration_is_checked():
    with pytest.raises(TypeError):
        register_mechanism(object, summary="not a mechanism")
    with pytest.raises(ValueError, match="already registered"):
        register_mechanism(_renamed("histogram"), summary="x")
    with pytest.raises(ValueError, match="built in"):
        unregister_mechanism("histogram")
    with pytest.raises(ValueError, match="unknown mechanism 'nope'"):
        get_mechanism("nope", epsilon=1.0, num_thresholds=10)
    with pytest.raises(TypeError, match="unknown capabilities"):
        list_mechanisms(flies=True)


def _renamed(name):
    return type("Clash", (ToyLaplace,), {"name": name})


def test_every_builtin_entry_loads_and_its_class_has_that_name():
    for spec in BUILTIN_MECHANISMS:
        cls = spec.load()
        assert issubclass(cls, CountMechanism) and cls.name == spec.name
        assert spec.summary and len(spec.summary) < 100
    names = [row["name"] for row in describe_mechanisms()]
    assert names == sorted(names) == list_mechanisms()


def test_listing_mechanisms_imports_neither_tensorflow_nor_dp_accounting():
    code = (
        "import sys; from dpauc_tf.mechanisms import list_mechanisms; "
        "names = list_mechanisms(); "
        "assert 'tensorflow' not in sys.modules and 'dp_accounting' not in sys.modules; "
        "print(len(names))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout) == len(BUILTIN_MECHANISMS)


def _build(name, **extra):
    delta = 1e-6 if mechanism_class(name).requires_delta else None
    return get_mechanism(name, epsilon=1.0, num_thresholds=15, delta=delta, **extra)


@pytest.mark.parametrize("name", list_mechanisms(private=True, keras_metric=True))
def test_xla_capability_is_true(name):
    """A mechanism that claims XLA compiles under jit; one that does not, fails to."""
    mechanism = _build(name)
    # 12,000 examples per class: enough for auc-only's private bound of min(P, N)
    pos = tf.constant(100.0 * np.arange(16, dtype=np.float64))
    neg = tf.constant(100.0 * np.arange(16, dtype=np.float64)[::-1].copy())
    seed = tf.constant([1, 2], tf.int64)

    @tf.function(jit_compile=True)
    def release_auc(pos, neg, seed):
        return mechanism.estimate_auc(mechanism.release(pos, neg, seed=seed))

    if mechanism.capabilities.xla:
        assert np.isfinite(float(release_auc(pos, neg, seed)))
    else:
        with pytest.raises(
            (
                tf.errors.InvalidArgumentError,
                tf.errors.UnimplementedError,
                tf.errors.NotFoundError,
                tf.errors.InternalError,
            )
        ):
            release_auc(pos, neg, seed)


@pytest.mark.parametrize("name", list_mechanisms(private=True, integer_counts=True))
def test_integer_count_mechanisms_refuse_fractional_weights_everywhere(name):
    """Eagerly, in tf.function and in the Keras metric, a weight of 0.5 is refused (``rr``
    takes weights of 1 only: its message says so, issue 30)."""
    metric = DPAUC(epsilon=1.0, num_thresholds=15, mechanism=name, seed=0)
    refusal = "1 only" if metric.mechanism.capabilities.unit_weights else "0 or 1"
    with pytest.raises((tf.errors.InvalidArgumentError, ValueError), match=refusal):
        metric.update_state([1, 0], [0.3, 0.6], sample_weight=[0.5, 1.0])

    @tf.function
    def update(y, p, w):
        metric.update_state(y, p, sample_weight=w)

    with pytest.raises(tf.errors.InvalidArgumentError, match=refusal):
        update(tf.constant([1.0, 0.0]), tf.constant([0.3, 0.6]), tf.constant([0.5, 1.0]))
    weights = [1.0, 1.0] if metric.mechanism.capabilities.unit_weights else [1.0, 0.0]
    metric.update_state([1, 0], [0.3, 0.6], sample_weight=weights)  # integer weights are fine
    assert float(tf.reduce_sum(metric.positives)) == 1.0


def test_capability_refusals_are_one_clear_message():
    score_noise = get_mechanism("score-noise", epsilon=1.0, num_thresholds=10)
    with pytest.raises(ValueError, match="cannot be used as a Keras metric"):
        DPAUC(epsilon=1.0, mechanism="score-noise")
    with pytest.raises(ValueError, match=r"cannot run in dpauc_tf\.federated\.evaluate"):
        require(score_noise, "federated")
    paper = get_mechanism("paper", epsilon=1.0, num_thresholds=10)
    with pytest.raises(ValueError, match="cannot add client-side noise in build_fed_eval"):
        require(paper, "fed_eval")
    discrete = get_mechanism("histogram", epsilon=1.0, num_thresholds=10, noise="discrete")
    assert discrete.capabilities.integer_counts and not discrete.capabilities.xla
    assert not mechanism_class("histogram")(1.0, 10).capabilities.integer_counts
    assert dataclasses.asdict(Capabilities())["protects"] == "labels"


def test_docs_table_is_the_registry():
    from dpauc_tf.mechanisms.registry import mechanisms_markdown

    text = (REPO / "docs" / "mechanisms.md").read_text()
    start = text.index("<!-- registry-table:start -->") + len("<!-- registry-table:start -->")
    end = text.index("<!-- registry-table:end -->")
    assert text[start:end].strip() == mechanisms_markdown().strip(), (
        "docs/mechanisms.md is stale: regenerate with python -m dpauc_tf.mechanisms.registry"
    )
