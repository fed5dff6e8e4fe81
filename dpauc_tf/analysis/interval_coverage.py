"""Coverage of the release intervals on simulated test sets from a known binormal population.

Negative scores are ``Phi(X)``, ``X ~ N(0, 1)``, positive scores ``Phi(X)``, ``X ~ N(d, 1)``
with ``d = sqrt(2) Phi^-1(auc)``, so the population AUC is ``auc`` exactly (and the scores
lie in (0, 1)). A test set of ``n`` examples has ``P ~ Binomial(n, positive_rate)`` positives;
its bucket counts on the mechanism's counting grid are drawn directly as multinomials of the
bucket probabilities (no scores are drawn), many test sets at once, and every test set gets
one release of the mechanism (secure mechanisms: the sum of ``num_clients`` real shares, or,
above ``max_real_shares``, one draw of the exact distribution of that sum).

For every release, the interval of `dpauc_tf.mechanisms.intervals.release_interval`
is checked against the test set's own AUC (``target="sample"``) and against the population
AUC (``target="population"``), and its width against the *oracle* interval: ``2 z`` times
the standard deviation, over the simulated sets, of the estimate around the test set's AUC
(sample) or around the population AUC (population); and against the *quantile oracle*, twice
the ``confidence`` quantile of the estimate's distance to the target over the sets (the
fixed width that covers; the same as the first for a normal error, the fair one for a
discrete law such as ``rr``'s few flips).

Examples:
    >>> out = simulate_coverage("histogram", n=2000, epsilon=1.0, sets=50, seed=0)
    >>> 0.8 < out["coverage_sample"] <= 1.0, out["sets"]
    (True, 50)
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from scipy import stats

from dpauc_tf.core.defaults import DEFAULT_NUM_THRESHOLDS
from dpauc_tf.core.sampling_variance import mann_whitney_from_counts
from dpauc_tf.core.thresholds import Thresholds


def binormal_bucket_probabilities(grid: Thresholds, auc: float) -> tuple[np.ndarray, np.ndarray]:
    """Probabilities ``[T + 1]`` of every bucket of ``grid`` for a positive and a negative
    (module docstring's population; bucket ``b`` holds ``theta_{b-1} < s <= theta_b``).

    Examples:
        >>> p_pos, p_neg = binormal_bucket_probabilities(Thresholds.make(5), 0.75)
        >>> p_neg.round(2).tolist(), round(float(p_pos.sum()), 12)
        ([0.0, 0.25, 0.25, 0.25, 0.25, 0.0], 1.0)
    """
    d = math.sqrt(2.0) * stats.norm.ppf(auc)
    theta = np.clip(grid.as_array(), 0.0, 1.0)
    out = []
    for shift in (d, 0.0):
        with np.errstate(divide="ignore"):
            cdf = stats.norm.cdf(stats.norm.ppf(theta) - shift)
        edges = np.concatenate([[0.0], cdf, [1.0]])
        out.append(np.maximum(np.diff(edges), 0.0))
    return out[0] / out[0].sum(), out[1] / out[1].sum()


def draw_test_sets(rng, n: int, positive_rate: float, p_pos, p_neg, sets: int):
    """Bucket counts ``pos, neg [sets, T + 1]`` of ``sets`` test sets of ``n`` examples."""
    num_pos = rng.binomial(n, positive_rate, size=sets)
    pos = rng.multinomial(num_pos, p_pos).astype(np.float64)
    neg = rng.multinomial(n - num_pos, p_neg).astype(np.float64)
    return pos, neg


def _release(mechanism, pos, neg, seed: int, num_clients: int | None, max_real_shares: int):
    """One release per test set; secure: the sum of the clients' shares."""
    if not mechanism.capabilities.secure or not num_clients or num_clients <= 1:
        return {k: v.numpy() for k, v in mechanism.release(pos, neg, seed=seed).items()}
    if num_clients > max_real_shares:  # the exact distribution of the sum of all shares
        release = mechanism.aggregate().release(pos, neg, seed=seed)
        return {k: v.numpy() for k, v in release.items()}
    zeros = np.zeros_like(pos)
    shares = mechanism.release(zeros, zeros, seed=seed, repeats=num_clients)
    exact = {"pos": pos, "neg": neg}
    if "pos_tree" in shares:
        layout = mechanism.layout
        exact = {
            "pos_tree": layout.node_counts(pos).numpy(),
            "neg_tree": layout.node_counts(neg).numpy(),
        }
    return {k: exact[k] + v.numpy().sum(0) for k, v in shares.items()}


def simulate_coverage(
    mechanism: str,
    *,
    n: int,
    epsilon: float,
    sets: int = 1000,
    auc: float = 0.75,
    positive_rate: float = 0.3,
    num_thresholds: int = DEFAULT_NUM_THRESHOLDS,
    delta: float | None = None,
    num_clients: int | None = None,
    options: Mapping[str, Any] | None = None,
    confidence: float = 0.95,
    seed: int = 0,
    chunk: int = 500,
    max_real_shares: int = 1000,
) -> dict[str, Any]:
    """Coverage and widths of both targets' intervals over ``sets`` simulated test sets.

    Returns a dict: ``coverage_sample``, ``coverage_population`` (shares of the defined
    releases whose interval holds the target), ``width_ratio_sample``,
    ``width_ratio_population`` (mean width over the oracle's), ``width_ratio_quantile_sample``
    and ``_population`` (over the quantile oracle's), ``whole_range_sample`` and
    ``_population`` (defined releases whose interval is all of [0, 1]: the noise swamps the
    data), ``undefined`` (releases whose AUC is undefined), ``privacy_ratio`` (median privacy
    std over sampling SE), the settings.
    """
    from dpauc_tf.mechanisms.arguments import ReleaseArguments
    from dpauc_tf.mechanisms.intervals import (
        laplace_normal_quantile,
        noise_copies,
        release_interval,
    )

    built = ReleaseArguments(
        epsilon, mechanism, num_thresholds=num_thresholds, delta=delta, mechanism_options=options
    ).build(num_clients)
    grid = built.count_thresholds(Thresholds.make(num_thresholds))
    p_pos, p_neg = binormal_bucket_probabilities(grid, auc)
    rng = np.random.default_rng(seed)
    copies = noise_copies(built, num_clients, num_clients)
    rows: dict[str, list[np.ndarray]] = {}
    for start in range(0, sets, chunk):
        size = min(chunk, sets - start)
        pos, neg = draw_test_sets(rng, n, positive_rate, p_pos, p_neg, size)
        release = _release(built, pos, neg, seed * 100_003 + start, num_clients, max_real_shares)
        estimate = built.estimate_auc({k: np.asarray(v) for k, v in release.items()}).numpy()
        parts = {"estimate": estimate, "sample_auc": mann_whitney_from_counts(pos, neg)}
        if "min_count_bound" in release:
            auc_epsilon = built.auc_epsilon_for(n)  # n is public: the share may depend on it
            parts["scale"] = 1.0 / (np.maximum(release["min_count_bound"], 2.0) * auc_epsilon)
        for target in ("sample", "population"):
            ci = release_interval(
                built,
                release,
                confidence=confidence,
                target=target,
                num_examples=n,
                copies=copies,
                estimate=estimate,
            )
            parts[f"low_{target}"], parts[f"high_{target}"] = ci.low, ci.high
            parts["ratio"] = ci.privacy_ratio
        for key, value in parts.items():
            rows.setdefault(key, []).append(np.asarray(value, np.float64))
    data = {key: np.concatenate(value) for key, value in rows.items()}
    defined = np.isfinite(data["estimate"]) & np.isfinite(data["low_sample"])
    z = stats.norm.ppf(0.5 + confidence / 2)
    out: dict[str, Any] = {
        "mechanism": mechanism,
        "n": n,
        "epsilon": epsilon,
        "num_clients": num_clients,
        "sets": sets,
        "undefined": int((~defined).sum()),
    }
    estimate = data["estimate"][defined]
    truths = {"sample": data["sample_auc"][defined], "population": np.full(estimate.shape, auc)}
    for target, truth in truths.items():
        low, high = data[f"low_{target}"][defined], data[f"high_{target}"][defined]
        covered = (low <= truth) & (truth <= high)
        oracle = 2 * z * np.sqrt(np.mean((estimate - truth) ** 2)) if estimate.size else np.nan
        if "scale" in data:  # auc-only: the exact law of every release given its scale
            scale = data["scale"][defined]
            sampling = 0.0 if target == "sample" else float(np.var(truths["sample"]))
            oracle = np.mean(2 * laplace_normal_quantile(scale, np.sqrt(sampling), 1 - confidence))
        out[f"coverage_{target}"] = float(covered.mean()) if covered.size else math.nan
        out[f"whole_range_{target}"] = int(np.sum((low <= 0.0) & (high >= 1.0)))
        quantile = np.quantile(np.abs(estimate - truth), confidence) if estimate.size else 0.0
        out[f"width_ratio_quantile_{target}"] = (
            float(np.mean(high - low) / (2 * quantile)) if quantile > 0 else math.nan
        )
        out[f"width_ratio_{target}"] = (
            float(np.mean(high - low) / oracle) if estimate.size else math.nan
        )
    out["privacy_ratio"] = float(np.nanmedian(data["ratio"])) if defined.any() else math.nan
    # measured: privacy RMSE around the test set's AUC over the spread of that AUC
    noise = np.sqrt(np.mean((estimate - truths["sample"]) ** 2)) if estimate.size else math.nan
    spread = float(np.std(data["sample_auc"])) if sets > 1 else math.nan
    out["measured_privacy_ratio"] = float(noise / spread) if estimate.size else math.nan
    return out
