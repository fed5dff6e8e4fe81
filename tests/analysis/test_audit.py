"""The empirical privacy audit: honest mechanisms pass, deliberately broken ones are caught."""

import argparse
import json
import math

import pytest
from scipy import stats

from dpauc_tf.analysis.audit import (
    auditable_mechanisms,
    clopper_pearson_lower,
    clopper_pearson_upper,
    run_audit,
    worst_case_pair,
)
from dpauc_tf.analysis.audit_cli import register_cli
from dpauc_tf.mechanisms.histogram import HistogramLaplace
from dpauc_tf.mechanisms.paper import PaperGaussian, PaperLaplace

SAMPLES = 100_000
EPSILON = 1.0

# (name, options) of every registered mechanism, in each of its noise modes.
HONEST = [
    ("histogram", {}),
    ("histogram", {"noise": "discrete"}),
    ("histogram-public-scores", {}),
    ("histogram-public-scores", {"noise": "discrete"}),
    ("paper", {}),
    ("paper-gaussian", {"delta": 1e-5}),
    ("secure-histogram", {}),
    ("secure-histogram", {"num_clients": 3}),
    ("secure-histogram", {"family": "skellam", "delta": 1e-5}),
    ("tree-histogram", {}),
    ("tree-histogram", {"public_scores": True}),
    ("secure-tree-histogram", {}),
    ("secure-tree-histogram", {"num_clients": 3}),
    ("secure-tree-histogram", {"family": "skellam", "delta": 1e-5}),
    ("rr", {}),
]
GAUSSIAN_TYPE = {"paper-gaussian", "skellam"}


def _id(case):
    name, options = case
    return name + "".join(f"-{k}={v}" for k, v in options.items())


def _audit(name, options, **kwargs):
    kwargs.setdefault("samples", SAMPLES)
    kwargs.setdefault("seed", 0)
    return run_audit(name, epsilon=EPSILON, **options, **kwargs)


def test_every_registered_mechanism_is_covered():
    assert set(auditable_mechanisms()) <= {name for name, _ in HONEST}


@pytest.mark.parametrize("case", HONEST, ids=_id)
def test_honest_mechanism_stays_below_its_claim(case):
    name, options = case
    result = _audit(name, options)
    assert result.claimed_epsilon > 0
    assert result.epsilon_lower_bound <= result.claimed_epsilon, result
    assert not result.violated
    # The audit has power: pure-DP claims are nearly reached on the worst-case pair.
    gaussian_type = name in GAUSSIAN_TYPE or options.get("family") in GAUSSIAN_TYPE
    tightness = 0.3 if gaussian_type else 0.8
    assert result.epsilon_lower_bound > tightness * result.claimed_epsilon, result


@pytest.mark.parametrize("case", HONEST, ids=_id)
def test_under_counted_sensitivity_is_caught(case):
    """A flipped example of weight 2 doubles the true sensitivity: the claim must fail."""
    name, options = case
    result = _audit(name, options, flip_weight=2.0)
    assert result.violated, result


class HalvedNoiseHistogram(HistogramLaplace):
    """Broken on purpose: half the noise scale, the same claimed epsilon."""

    @property
    def noise_scale(self) -> float:
        return super().noise_scale / 2


class QuarterNoisePaper(PaperLaplace):
    """Broken on purpose: noise for L1 = T instead of 4T, the same claimed epsilon / 2."""

    @property
    def noise_scale(self) -> float:
        return self.num_thresholds / self.epsilon


class HalvedNoisePaperGaussian(PaperGaussian):
    """Broken on purpose: half the Gaussian sigma, the same claimed (epsilon, delta)."""

    @property
    def noise_stddev(self) -> float:
        return super().noise_stddev / 2


@pytest.mark.parametrize(
    "broken",
    [
        HalvedNoiseHistogram(epsilon=EPSILON, num_thresholds=2),
        HalvedNoiseHistogram(epsilon=EPSILON, num_thresholds=2, noise="discrete"),
        QuarterNoisePaper(epsilon=EPSILON, num_thresholds=2),
        HalvedNoisePaperGaussian(epsilon=EPSILON, num_thresholds=2, delta=1e-5),
    ],
    ids=repr,
)
def test_reduced_noise_is_caught(broken):
    samples = 400_000 if isinstance(broken, PaperGaussian) else SAMPLES
    result = run_audit(broken, samples=samples, seed=1)
    assert result.violated, result


def test_paper_noise_is_audited_against_the_tight_half_epsilon():
    result = _audit("paper", {}, num_thresholds=3)
    assert result.claimed_epsilon == EPSILON / 2
    assert result.source_claimed_epsilon == EPSILON
    assert result.epsilon_lower_bound <= EPSILON / 2


def test_worst_case_pair_differs_in_one_unit_of_one_bucket():
    for num_thresholds in (2, 3, 10):
        pair = worst_case_pair(num_thresholds)
        diff_pos = pair.pos - pair.pos_prime
        diff_neg = pair.neg_prime - pair.neg
        assert diff_pos.sum() == 1 and diff_neg.sum() == 1
        assert diff_pos[pair.bucket] == 1 and diff_neg[pair.bucket] == 1
        assert pair.pos.sum() + pair.neg.sum() == 3
    heavy = worst_case_pair(4, flip_weight=2.0)
    assert (heavy.pos - heavy.pos_prime).sum() == 2


def test_clopper_pearson_bounds():
    alpha = 0.025
    assert clopper_pearson_lower(0, 100, alpha) == 0.0
    assert clopper_pearson_upper(100, 100, alpha) == 1.0
    assert float(clopper_pearson_upper(0, 100, alpha)) == pytest.approx(
        1 - alpha ** (1 / 100), rel=1e-9
    )
    lower = float(clopper_pearson_lower(30, 100, alpha))
    assert lower == pytest.approx(stats.beta.ppf(alpha, 30, 71))
    assert lower < 0.3 < float(clopper_pearson_upper(30, 100, alpha))


@pytest.mark.parametrize(
    "kwargs, error",
    [
        ({"mechanism": "no-such", "epsilon": 1.0}, ValueError),
        ({"mechanism": "histogram", "epsilon": 0.0}, ValueError),
        ({"mechanism": "histogram", "epsilon": math.nan}, ValueError),
        ({"mechanism": "histogram", "epsilon": None}, ValueError),
        ({"mechanism": "histogram", "epsilon": 1.0, "samples": 10}, ValueError),
        ({"mechanism": "histogram", "epsilon": 1.0, "flip_weight": -1.0}, ValueError),
        ({"mechanism": "paper-gaussian", "epsilon": 1.0}, ValueError),
    ],
)
def test_bad_audit_arguments_raise(kwargs, error):
    with pytest.raises(error):
        run_audit(**kwargs)


def _cli(argv):
    parser = argparse.ArgumentParser()
    register_cli(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    return args.func(args)


def test_cli_reports_json_and_flags_violations(capsys):
    base = ["audit", "--mechanism", "histogram", "--epsilon", "1", "--samples", "20000"]
    assert _cli([*base, "--seed", "0", "--format", "json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["mechanism"] == "histogram" and row["violated"] is False
    assert 0 < row["epsilon_lower_bound"] <= row["claimed_epsilon"] == 1.0
    assert _cli([*base, "--seed", "0", "--flip-weight", "2"]) == 3
    table = capsys.readouterr().out
    assert "VIOLATED" in table and "histogram" in table
    with pytest.raises(SystemExit):
        _cli(["audit", "--mechanism", "histogram", "--epsilon", "-1"])
    assert _cli(["audit", "--mechanism", "no-such", "--epsilon", "1"]) == 2
    assert _cli([*base, "--delta", "1e-5"]) == 2  # a pure-DP mechanism takes no delta
    assert "error" in capsys.readouterr().err
