"""Every mechanism owns its whole law (issue 31): the noise it states is the noise it draws,
the generic code (intervals, auto grid, simulation) reads the law from the mechanism and never
asks which family it is, and the weight bound scales the law by numbers, not prose."""

from __future__ import annotations

import ast
import math
from pathlib import Path

import dp_accounting
import numpy as np
import pytest
import tensorflow as tf
from scipy import stats

from dpauc_tf.core.curve import confusion_from_histogram
from dpauc_tf.mechanisms import Capabilities, CountMechanism, get_mechanism, list_mechanisms
from dpauc_tf.mechanisms.intervals import release_interval
from dpauc_tf.mechanisms.laws import GridRule, IntervalLaw
from dpauc_tf.mechanisms.registry import mechanism_class
from dpauc_tf.mechanisms.weight_bound import bound_weights
from dpauc_tf.noise import samplers
from dpauc_tf.noise.seeds import split_seed
from dpauc_tf.privacy.statement import LABEL_DP, PrivacyStatement

PACKAGE = Path(__file__).resolve().parents[2] / "dpauc_tf"
T = 15


def _built(name, **options):
    cls = mechanism_class(name)
    if name == "none":
        return get_mechanism(name, epsilon=None, num_thresholds=T)
    delta = 1e-6 if cls.requires_delta else None
    clients = {"num_clients": 3} if cls.capabilities.secure else {}
    return get_mechanism(name, epsilon=1.0, num_thresholds=T, delta=delta, **clients, **options)


DELTA_METHOD = [
    (name, options)
    for name in list_mechanisms()
    if mechanism_class(name).interval_law is IntervalLaw.DELTA_METHOD
    for options in ([{}, {"noise": "discrete"}] if name.startswith("histogram") else [{}])
]


def test_every_family_states_its_law_as_enums():
    for name in list_mechanisms():
        cls = mechanism_class(name)
        assert isinstance(cls.interval_law, IntervalLaw), name
        assert isinstance(cls.grid_rule, GridRule), name
        assert isinstance(cls.capabilities, Capabilities), name
    assert mechanism_class("score-noise").interval_law is IntervalLaw.NONE
    assert mechanism_class("rr").interval_law is IntervalLaw.FLIPS


@pytest.mark.parametrize(("name", "options"), DELTA_METHOD, ids=str)
def test_the_stated_noise_variances_are_the_variances_drawn(name, options):
    """Releases of empty counts are pure noise: their variance per entry is the stated one
    (4,000 draws; a halved or doubled variance is far outside the tolerance)."""
    mechanism = _built(name, **options).aggregate()
    zeros = np.zeros(T + 1)
    release = mechanism.release(zeros, zeros, seed=3, repeats=4000)
    release = {key: np.asarray(value, np.float64) for key, value in release.items()}
    stated = mechanism.noise_variances(release)
    assert set(stated) <= set(release)
    for key, draws in release.items():
        if key not in stated:
            continue
        expected = np.broadcast_to(stated[key], draws.shape[1:])
        drawn = draws.var(axis=0)
        exact = expected == 0
        assert np.all(drawn[exact] == 0), (name, key)
        if (~exact).any():
            ratio = float(np.mean(drawn[~exact] / expected[~exact]))
            assert 0.9 < ratio < 1.1, (name, key, ratio)
            for wrong in (0.5, 2.0):
                assert not 0.9 < ratio / wrong < 1.1


def test_an_outside_family_gets_an_interval_from_the_law_it_states():
    class Toy(CountMechanism):
        name = "toy-law"
        interval_law = IntervalLaw.DELTA_METHOD
        noise_stddev = math.sqrt(8.0)

        def _noisy_release(self, pos, neg, seed):
            seeds = split_seed(seed, 2)
            return {
                "pos": pos + samplers.laplace(tf.shape(pos), 2.0, seeds[0], pos.dtype),
                "neg": neg + samplers.laplace(tf.shape(neg), 2.0, seeds[1], neg.dtype),
            }

        def noise_variances(self, release):
            return {"pos": np.asarray(8.0), "neg": np.asarray(8.0)}

        def to_confusion(self, release):
            return confusion_from_histogram(release["pos"], release["neg"])

        def dp_event(self):
            return dp_accounting.LaplaceDpEvent(noise_multiplier=1.0)

        def statement(self):
            return PrivacyStatement(self.name, LABEL_DP, "L1 = 2", "Laplace(2)", 1.0, 0.0)

    toy = Toy(epsilon=1.0, num_thresholds=3)
    pos, neg = np.array([0.0, 100.0, 300.0, 0.0]), np.array([0.0, 400.0, 200.0, 0.0])
    release = {k: np.asarray(v) for k, v in toy.release(pos, neg, seed=0, repeats=2).items()}
    histogram = get_mechanism("histogram", epsilon=1.0, num_thresholds=3)
    ci = release_interval(toy, release, target="sample")
    same = release_interval(histogram, release, target="sample")  # the same law: Laplace(2)
    np.testing.assert_allclose(ci.low, same.low)
    np.testing.assert_allclose(ci.high, same.high)
    Toy.interval_law = IntervalLaw.NONE
    with pytest.raises(ValueError, match="states no noise law"):
        release_interval(toy, release)


@pytest.mark.parametrize(
    "module", ["mechanisms/intervals.py", "mechanisms/auto_grid.py", "simulation.py"]
)
def test_the_generic_law_code_imports_no_mechanism_family(module):
    """No type switch on families outside them: the generic modules do not even import one."""
    families = {
        "histogram",
        "tree",
        "secure_histogram",
        "paper",
        "randomized_response",
        "score_noise",
        "auc_only",
        "rank_sum",
        "none",
        "weight_bound",
    }
    tree = ast.parse((PACKAGE / module).read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module)
            imported.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
    assert not {m for m in imported if m.rsplit(".", 1)[-1] in families and "mechanisms" in m}


def test_the_weight_bound_scales_the_stated_numbers():
    for name, norm in (("histogram", "L1"), ("paper-gaussian", "L2"), ("tree-histogram", "L1")):
        inner = _built(name)
        bounded = bound_weights(inner, 2.5)
        statement, plain = bounded.statement(), inner.statement()
        assert statement.sensitivity_norm == plain.sensitivity_norm == norm
        assert statement.sensitivity_value == pytest.approx(2.5 * plain.sensitivity_value)
        assert statement.noise_scale == pytest.approx(2.5 * plain.noise_scale)
        assert statement.sensitivity.startswith(
            f"{norm} = {2.5 * plain.sensitivity_value:g} in weighted counts"
        )
        assert "weights in [0, 2.5]" in statement.neighbouring


def test_the_weighted_noise_is_the_stated_noise_scale():
    """The noise a weight-bounded histogram adds, in weighted counts, is Laplace of the
    statement's numeric noise_scale (a halved or doubled scale is rejected)."""
    bounded = bound_weights(get_mechanism("histogram", epsilon=1.0, num_thresholds=T), 2.0)
    zeros = np.zeros(T + 1)
    release = bounded.release(zeros, zeros, seed=5, repeats=3000)
    noise = 2.0 * np.concatenate([np.ravel(release["pos"]), np.ravel(release["neg"])])
    scale = bounded.statement().noise_scale
    assert scale == 4.0
    assert stats.kstest(noise, "laplace", args=(0, scale)).pvalue > 1e-3
    for wrong in (scale / 2, scale * 2):
        assert stats.kstest(noise, "laplace", args=(0, wrong)).pvalue < 1e-6


def test_dpauc_histogram_with_a_weight_bound_gives_a_wider_interval():
    """Regression (issue 31): ``DPAUC(mechanism="histogram", max_weight=2).release_interval()``
    works, and its interval is wider than with max_weight=1 (the counts are divided by 2
    before the same noise)."""
    from dpauc_tf.keras.metric import DPAUC

    rng = np.random.default_rng(0)
    labels = (rng.random(4000) < 0.3).astype("float32")
    scores = (1 / (1 + np.exp(-rng.normal(labels, 1.0)))).astype("float32")
    widths = []
    for max_weight in (1, 2):
        metric = DPAUC(
            epsilon=1.0, num_thresholds=50, seed=0, mechanism="histogram", max_weight=max_weight
        )
        metric.update_state(labels, scores)
        value = float(metric.result())
        ci = metric.release_interval(0.95, target="sample")
        assert ci.low[0] <= value <= ci.high[0]
        widths.append(float(ci.width[0]))
    assert widths[1] > widths[0]
