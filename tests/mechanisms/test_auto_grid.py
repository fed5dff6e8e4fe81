"""num_thresholds="auto": the grid suits n (its error near the best fixed grid's), it is
chosen from public information only, and the small-n warning fires where noise dominates."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import tensorflow as tf
from scipy import stats

from dpauc_tf.core.thresholds import Thresholds
from dpauc_tf.mechanisms import get_mechanism
from dpauc_tf.mechanisms.auto_grid import (
    auto_num_thresholds,
    noise_dominates_warning,
    predicted_noise_std,
)
from dpauc_tf.mechanisms.release import ReleaseSpec


def _rmse(num_thresholds, data, repeats=200):
    errors = []
    m = get_mechanism("histogram", epsilon=1.0, num_thresholds=num_thresholds)
    grid = Thresholds.make(num_thresholds)
    for i, (labels, scores, exact) in enumerate(data):
        buckets = grid.bucketize_numpy(scores.astype(np.float32))
        pos = np.bincount(buckets[labels], minlength=num_thresholds + 1).astype(float)
        neg = np.bincount(buckets[~labels], minlength=num_thresholds + 1).astype(float)
        release = m.release(tf.constant(pos), tf.constant(neg), seed=i, repeats=repeats)
        errors.append(m.estimate_auc(release).numpy() - exact)
    return float(np.sqrt(np.nanmean(np.concatenate(errors) ** 2)))


def test_auto_grid_is_near_the_best_fixed_grid_at_small_n():
    """n = 500 and 2,000 (30 % positives, binormal, epsilon 1): auto within 25 % of the best
    of 5 ... 200 thresholds, and far below TensorFlow's 200 (the old default)."""
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(0)
    for n in (500, 2000):
        data = []
        for _ in range(3):
            labels = rng.random(n) < 0.3
            z = rng.normal(size=n) + np.sqrt(2) * stats.norm.ppf(0.8) * labels
            scores = 1 / (1 + np.exp(-(z - 1.0)))
            data.append((labels, scores, roc_auc_score(labels, scores)))
        fixed = {t: _rmse(t, data) for t in (5, 7, 10, 15, 20, 30, 50, 100, 200)}
        auto = _rmse(auto_num_thresholds(n, 1.0), data)
        assert auto <= 1.25 * min(fixed.values()), (n, auto, fixed)
        assert auto <= 0.5 * fixed[200], (n, auto, fixed)


def test_rule_and_release_spec():
    assert [auto_num_thresholds(n, 1.0) for n in (500, 2000, 20000)] == [9, 17, 33]
    assert auto_num_thresholds(10**7, 1.0) == 200  # large n: TensorFlow's default
    assert auto_num_thresholds(500, None) == 200  # no noise: no reason to coarsen
    assert auto_num_thresholds(500, 1.0, "auc-only") == 200  # its own grid
    spec = ReleaseSpec.make("histogram", epsilon=1.0, num_thresholds="auto", num_examples=500)
    assert spec.num_thresholds == 9
    with pytest.raises(ValueError, match="needs the number of examples"):
        ReleaseSpec.make("histogram", epsilon=1.0, num_thresholds="auto")


def test_warning_where_noise_would_dominate():
    big = get_mechanism("histogram", epsilon=1.0, num_thresholds=200)
    privacy, sampling = predicted_noise_std(big, Thresholds.make(200), 500)
    assert privacy > 2 * sampling
    assert "would exceed the sampling error" in noise_dominates_warning(privacy, sampling)
    small = get_mechanism("histogram", epsilon=1.0, num_thresholds=33)
    privacy, sampling = predicted_noise_std(small, Thresholds.make(33), 20000)
    assert privacy < sampling and noise_dominates_warning(privacy, sampling) is None


def test_rank_sum_prediction_counts_whole_examples_on_its_fine_grid():
    """rank-sum counts on 2^17 buckets: rounding each bucket's expected count emptied them
    all, and the CLI then warned that the noise would leave the AUC undefined on 3,000
    examples, where its noise is a fifth of the sampling error."""
    rank_sum = get_mechanism("rank-sum", epsilon=1.0, num_thresholds=200)
    privacy, sampling = predicted_noise_std(rank_sum, Thresholds.make(200), 3000)
    assert math.isfinite(privacy) and 0 < privacy < sampling / 2
    assert noise_dominates_warning(privacy, sampling) is None
    # the same prediction with a tenth of the epsilon grows about tenfold (it does not
    # collapse to "undefined"): the check can fail
    weak = get_mechanism("rank-sum", epsilon=0.1, num_thresholds=200)
    privacy_weak, _ = predicted_noise_std(weak, Thresholds.make(200), 3000)
    assert 5 * privacy < privacy_weak < 20 * privacy


def test_cli_auto(capsys, tmp_path):
    from dpauc_tf.cli.main import main

    rng = np.random.default_rng(1)
    labels = (rng.random(500) < 0.3).astype(int)
    scores = 1 / (1 + np.exp(-(rng.normal(size=500) + 1.2 * labels - 0.8)))
    path = tmp_path / "s.csv"
    path.write_text(
        "score,label\n"
        + "".join(f"{s!r},{y}\n" for s, y in zip(scores.tolist(), labels.tolist(), strict=True))
    )
    argv = ["evaluate", "--scores", str(path), "--mechanism", "histogram", "--epsilon", "1"]
    assert main([*argv, "--num-thresholds", "auto", "--seed", "0", "--format", "json"]) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert out["num_thresholds"] == 9 and "public under label DP" in out["num_thresholds_rule"]
    assert main([*argv, "--seed", "0", "--format", "json"]) == 0  # 200 thresholds: warned
    assert "dpauc: warning: the privacy noise" in capsys.readouterr().err
