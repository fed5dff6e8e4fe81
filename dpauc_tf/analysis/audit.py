"""Empirical privacy audit: a statistical lower bound on the epsilon a mechanism really has.

A mechanism that claims (epsilon, delta)-DP promises, for neighbouring inputs ``D`` and
``D'`` and every event ``E``: ``P[M(D) in E] <= e^epsilon P[M(D') in E] + delta``. The audit
(in the style of Jagielski et al. 2020 and Nasr et al. 2021) runs the mechanism many times
on a worst-case pair, picks an event, and turns the observed frequencies into a lower bound
that holds with the audit's confidence (95% by default):

``epsilon_lb = log((p_A_lower - delta) / p_B_upper)``

where ``p_A_lower`` and ``p_B_upper`` are one-sided Clopper-Pearson bounds, each taking half
of the error. If ``epsilon_lb`` exceeds the claimed epsilon, the claim is false (up to that
error); an honest mechanism's bound stays below its claim, and the gap shows how tight the
claim is for this pair and sample size.

**Several audits at once** (``dpauc audit --mechanism all``): the confidence is
family-wise. With ``m`` audits each bound is computed at ``1 - (1 - confidence) / m``
(Bonferroni), so the probability that *any* honest mechanism of the family is reported
violated stays below ``1 - confidence`` (with ``m`` separate 95% bounds it could reach
``1 - 0.95^m``). See `per_audit_confidence`.

**Power**: `AuditResult.detectable_multiple` is the smallest factor by which the
mechanism's privacy loss would have to grow (its noise scale shrink) for the audit to catch
it about half of the time at the observed rates and sample size (`detectable_multiple`).
A claim that the audit cannot come close to (a composition of many small losses, such as
``paper`` at large ``T``) needs more samples to be checked; docs/audit.md gives figures.

How the pieces are chosen:

* **Worst-case neighbours** ([`worst_case_pair`][dpauc_tf.analysis.audit_pairs.worst_case_pair]): a tiny test set (the target example
  plus one positive and one negative) whose target example sits on a threshold, so its label
  moves a unit of weight between ``pos[b]`` and ``neg[b]`` of its bucket and, for the
  paper's cumulative release, changes ``2T`` counts. Counts come from
  [`dpauc_tf.core.counts.bucket_counts`][].
* **Coordinates that the flip touches** are found without looking inside the mechanism: the
  two neighbours are released with the *same* seed, and the mean difference of the outputs
  is the shift ``d`` (exact for additive-noise mechanisms). Midpoints are the medians of the
  two neighbours' outputs on the selection samples.
* **Test statistics**: the likelihood-ratio statistic for Laplace-type noise,
  ``sum_i clip(sign(d_i) (x_i - m_i), -|d_i|/2, |d_i|/2)``, and the one for Gaussian-type
  noise, ``sum_i d_i (x_i - m_i)``. Both sum over every touched coordinate (``2T`` for
  ``paper``) and are oriented so that ``D'`` tends to be larger.
* **The event** ``{S >= c}`` or ``{S <= c}`` (statistic, direction, threshold ``c``, which
  neighbour is ``A``) is chosen on a `SELECTION_FRACTION` of the samples (at most
  `MAX_SELECTION_SAMPLES` per neighbour); the bound is
  computed on the other, independent samples, so the selection does not bias it.

**What is audited** is what the mechanism claims: label DP (the pair above) for the
mechanisms that protect labels; score DP for ``score-noise`` (one example's score moves from
0 to 1, its label stays: `_ScoreAudit`), which does not protect labels.

**Memory** ([`run_audit`][]): releases are drawn in chunks of at most
`MAX_CHUNK_VALUES` values and reduced to the statistics before the next chunk; only
the selection's statistics grow with ``samples`` (32 bytes per selection release, twice
that while the event is chosen), up to `MAX_SELECTION_SAMPLES` releases.

Negative control: ``flip_weight=2`` gives the flipped example weight 2, which the mechanisms
forbid (their sensitivity assumes weights in [0, 1]): "sensitivity under-counted". Its
audited bound must then exceed the claim, which shows that the audit can detect a violation.

    >>> result = run_audit("histogram", epsilon=1.0, samples=20_000, seed=0)
    >>> result.epsilon_lower_bound <= result.claimed_epsilon
    True
"""

from __future__ import annotations

import dataclasses
import math
import sys
from collections.abc import Sequence

import numpy as np
import tensorflow as tf
from tqdm.auto import tqdm

from dpauc_tf.analysis.audit_pairs import (
    NeighbouringPair,
    pair_for,
)
from dpauc_tf.analysis.audit_statistics import (
    _select_event,
    clopper_pearson_lower,
    clopper_pearson_upper,
    detectable_multiple,
    epsilon_from_counts,
    per_audit_confidence,
)
from dpauc_tf.core.defaults import DEFAULT_AUDIT_NUM_THRESHOLDS, DEFAULT_AUDIT_SAMPLES
from dpauc_tf.core.thresholds import Thresholds
from dpauc_tf.mechanisms.arguments import ReleaseArguments
from dpauc_tf.mechanisms.base import CountMechanism, Release
from dpauc_tf.mechanisms.registry import list_mechanisms
from dpauc_tf.noise.seeds import make_seed

CONFIDENCE = 0.95
SELECTION_FRACTION = 0.2
# Releases per neighbour that choose the event, at most (their statistics are kept, 32 bytes
# per release of both neighbours): the rest evaluate it. Reached at 20,971,520 samples.
MAX_SELECTION_SAMPLES = 2**22
_CHUNK = 100_000
# Memory caps (float64 values): one chunk of releases, and the releases kept per neighbour
# for the midpoints (2^22 values: 32 MiB each).
MAX_CHUNK_VALUES = 2**22
MAX_BUFFER_VALUES = 2**22
_DIRECTION_REPEATS = 512
_SELECTION_ALPHA = 1e-4


@dataclasses.dataclass(frozen=True)
class AuditResult:
    """Outcome of one audit.

    Attributes:
      mechanism: the mechanism's name.
      epsilon: the parameters it was built with.
      delta: as ``epsilon``.
      claimed_epsilon: the epsilon of one release that the library states
        (``statement().epsilon``; for ``paper`` the tight ``epsilon / 2``).
      source_claimed_epsilon: what the source (the paper) claims, when that differs.
      epsilon_lower_bound: the audited lower bound at ``confidence`` (0 when nothing is
        shown).
      plug_in_epsilon: the same ratio from the raw frequencies (no confidence margin).
      detectable_multiple: the audit's power: the smallest factor ``k`` by which the privacy
        loss of the chosen event would have to grow (a noise scale divided by ``k``, a
        sensitivity multiplied by ``k``) for the lower bound expected at these rates and this
        sample size to exceed the claim (see `detectable_multiple`). Below 1 when the
        claim is already exceeded; ``inf`` when the audit saw no separation; ``nan`` when the
        event never occurred under the disfavoured neighbour.
      samples: releases per neighbour (a `SELECTION_FRACTION`, at most
        `MAX_SELECTION_SAMPLES`, selects the event, the rest evaluates it).
      evaluation_samples: releases per neighbour that evaluate the event.
      statistic: the chosen test.
      event: as ``statistic``.
      rate_a: observed event frequencies under the favoured and the other neighbour.
      rate_b: as ``rate_a``.
      rate_a_lower: their Clopper-Pearson bounds.
      rate_b_upper: as ``rate_a_lower``.
      confidence: the confidence of this bound alone (``1 - (1 - family_confidence) /
        family_size``: Bonferroni).
      family_confidence: the confidence that *every* bound of the family holds at once.
      family_size: the number of audits run together (and corrected for).
      num_thresholds: the neighbours audited.
      flip_weight: as ``num_thresholds``.
      pair: as ``num_thresholds``.
      neighbouring: the relation audited, the one the mechanism claims: ``"label"`` (one
        example's label flips) or ``"score"`` (one example's score moves, ``score-noise``).
    """

    mechanism: str
    epsilon: float
    delta: float
    claimed_epsilon: float
    source_claimed_epsilon: float | None
    epsilon_lower_bound: float
    plug_in_epsilon: float
    detectable_multiple: float
    samples: int
    evaluation_samples: int
    statistic: str
    event: str
    rate_a: float
    rate_b: float
    rate_a_lower: float
    rate_b_upper: float
    confidence: float
    family_confidence: float
    family_size: int
    num_thresholds: int
    flip_weight: float
    pair: str
    neighbouring: str = "label"

    @property
    def violated(self) -> bool:
        """True when the audit disproves the claim (lower bound above the claimed epsilon)."""
        return self.epsilon_lower_bound > self.claimed_epsilon

    def to_dict(self) -> dict:
        out = dataclasses.asdict(self)
        out["violated"] = self.violated
        return out


def _flatten(release: Release) -> np.ndarray:
    """A release (dict of ``[R, ...]`` tensors) as one ``[R, C]`` float64 array."""
    parts = [
        np.asarray(release[key], dtype=np.float64).reshape(np.shape(release[key])[0], -1)
        for key in sorted(release)
    ]
    return np.concatenate(parts, axis=1)


def _release_matrix(mechanism, pos, neg, seed: int, repeats: int) -> np.ndarray:
    """``repeats`` releases as a ``[R, C]`` array.

    A mechanism with ``num_clients = K > 1`` (distributed noise, where `release` is one
    client's share) is released as the sum of ``K`` reports: the client holding the test set
    and ``K - 1`` clients with no examples, so the total carries one full draw of the noise.
    """
    num_clients = int(getattr(mechanism, "num_clients", 1))
    seeds = np.random.SeedSequence(seed).generate_state(num_clients, dtype=np.uint64)
    total = None
    for client, client_seed in enumerate(seeds):
        scale = 1.0 if client == 0 else 0.0
        release = mechanism.release(
            tf.constant(scale * pos, tf.float64),
            tf.constant(scale * neg, tf.float64),
            seed=int(client_seed) % (2**63 - 1),
            repeats=repeats,
        )
        flat = _flatten({key: np.asarray(value) for key, value in release.items()})
        del release
        total = flat if total is None else total + flat
    return total


def chunk_rows(num_coordinates: int) -> int:
    """Releases drawn at once for a release of ``num_coordinates`` values: at most
    `MAX_CHUNK_VALUES` values in all (one release when a release alone is larger),
    and at most ``100,000``.

        >>> chunk_rows(6), chunk_rows(2_730), chunk_rows(10**7)
        (100000, 1536, 1)
    """
    return max(1, min(_CHUNK, MAX_CHUNK_VALUES // max(1, int(num_coordinates))))


def _num_coordinates(mechanism, pair: NeighbouringPair) -> int:
    """Values in one release (from one release of the pair's counts)."""
    return _release_matrix(mechanism, pair.pos, pair.neg, 0, 1).shape[1]


def _shift(mechanism, pair: NeighbouringPair, seed: int, num_coordinates: int) -> np.ndarray:
    """Mean output difference ``D' - D`` under common random numbers (the same seed), over
    `_DIRECTION_REPEATS` releases, drawn in chunks of [`chunk_rows`][]."""
    rows = chunk_rows(num_coordinates)
    if rows >= _DIRECTION_REPEATS:
        plan = [(seed, _DIRECTION_REPEATS)]
    else:
        sizes = _chunk_sizes(_DIRECTION_REPEATS, rows)
        states = np.random.SeedSequence(seed).generate_state(len(sizes), dtype=np.uint64)
        plan = [(int(s) % (2**63 - 1), size) for s, size in zip(states, sizes, strict=True)]
    total = np.zeros(num_coordinates)
    for chunk_seed, size in plan:
        out = _release_matrix(mechanism, pair.pos, pair.neg, chunk_seed, size)
        out_prime = _release_matrix(mechanism, pair.pos_prime, pair.neg_prime, chunk_seed, size)
        total += (out_prime - out).sum(axis=0)
    return total / _DIRECTION_REPEATS


def _statistics(x: np.ndarray, shift: np.ndarray, middle: np.ndarray) -> dict[str, np.ndarray]:
    centred = (x - middle) * np.sign(shift)
    half = np.abs(shift) / 2.0
    return {
        "laplace-lr": np.clip(centred, -half, half).sum(axis=1),
        "linear": (centred * np.abs(shift)).sum(axis=1),
    }


class _LabelAudit:
    """Releases of the label-DP pair, reduced chunk by chunk to the test statistics.

    Memory: one chunk of releases ([`chunk_rows`][]: at most `MAX_CHUNK_VALUES`
    values, or one release) and, per neighbour, the touched coordinates of the first
    selection releases (at most `MAX_BUFFER_VALUES` values, plus one chunk), whose
    medians are the midpoints; every other release is reduced to its statistics at once.
    """

    neighbouring = "label"

    def __init__(self, mechanism, pair: NeighbouringPair, direction_seed: int, progress):
        self.mechanism, self.pair, self.progress = mechanism, pair, progress
        num_coordinates = _num_coordinates(mechanism, pair)
        self.rows = chunk_rows(num_coordinates)
        shift = _shift(mechanism, pair, direction_seed, num_coordinates)
        progress.update(_DIRECTION_REPEATS)
        self.columns = np.flatnonzero(np.abs(shift) > 1e-9)
        if self.columns.size == 0:
            raise ValueError(
                f"{mechanism.name}: the release does not change when the label flips; "
                "the audit cannot find the coordinates it touches"
            )
        self.shift = shift[self.columns]
        self.middle = None
        self.description = pair.description

    def _touched(self, neighbour: int, plan):
        """The touched columns of the releases of ``D`` (0) or ``D'`` (1), chunk by chunk."""
        pair = self.pair
        pos, neg = (pair.pos, pair.neg) if neighbour == 0 else (pair.pos_prime, pair.neg_prime)
        for seed, size in plan:
            touched = _release_matrix(self.mechanism, pos, neg, seed, size)[:, self.columns]
            self.progress.update(size)
            yield touched

    def selection(self, plan_d, plan_prime):
        """Statistics of the selection releases of both neighbours (1-D arrays)."""
        limit = max(1, MAX_BUFFER_VALUES // self.columns.size)
        streams, buffers = [], []
        for neighbour, plan in ((0, plan_d), (1, plan_prime)):
            stream = self._touched(neighbour, plan)
            held, rows = [], 0
            for touched in stream:  # the first releases, up to the buffer's size
                held.append(touched)
                rows += touched.shape[0]
                if rows >= limit:
                    break
            streams.append(stream)
            buffers.append(np.concatenate(held, axis=0))
        self.middle = (np.median(buffers[0], axis=0) + np.median(buffers[1], axis=0)) / 2.0
        out = []
        for stream, buffer in zip(streams, buffers, strict=True):
            parts = [self._reduce(buffer)]
            parts += [self._reduce(touched) for touched in stream]
            out.append({name: np.concatenate([p[name] for p in parts]) for name in parts[0]})
        return out

    def _reduce(self, touched):
        return _statistics(touched, self.shift, self.middle)

    def evaluation(self, neighbour: int, plan):
        """The statistics of the evaluation releases, one dict per chunk."""
        for touched in self._touched(neighbour, plan):
            yield self._reduce(touched)


class _ScoreAudit:
    """Releases of a score-DP mechanism (``score-noise``) on its worst-case pair.

    The pair: one positive example whose score is 0 in ``D`` and ``flip_weight`` (1 unless a
    negative control) in ``D'``; the label is the same, since score DP does not protect it.
    The mechanism's own client step ([`transform`][dpauc_tf.mechanisms.base.CountMechanism.transform]) adds its noise to
    the score, which is counted on its own grid ([`count_thresholds`][dpauc_tf.mechanisms.base.CountMechanism.count_thresholds]);
    the release is that histogram, published as counted (checked), so it is one-to-one
    with the noisy score's bucket. The statistic is that bucket's threshold (``noisy-score``),
    monotone in the likelihood ratio of shifted Laplace noise. Memory: one chunk of
    `_CHUNK` scores at a time.
    """

    neighbouring = "score"

    def __init__(self, mechanism, flip_weight: float, progress):
        self.mechanism, self.progress = mechanism, progress
        self.scores = (0.0, float(flip_weight))
        self.grid = mechanism.count_thresholds(Thresholds.make(mechanism.num_thresholds))
        values = self.grid.as_array()
        step = values[1] - values[0] if values.size > 1 else 1.0
        # The value of each bucket: its lower threshold (bucket 0: below the first one).
        self.bucket_values = np.concatenate([[values[0] - step], values])
        self._check_release_is_the_histogram()
        self.rows = _CHUNK
        self.description = (
            f"1 positive example whose score is 0 in D and {flip_weight:g} in D' (score DP: "
            "labels are not protected and not audited)"
        )

    def _check_release_is_the_histogram(self):
        num_buckets = self.grid.num_buckets
        pos = np.zeros(num_buckets)
        pos[num_buckets // 2] = 1.0
        neg = np.zeros(num_buckets)
        release = self.mechanism.release(
            tf.constant(pos, tf.float64), tf.constant(neg, tf.float64), seed=0
        )
        if set(release) != {"pos", "neg"} or not (
            np.array_equal(np.asarray(release["pos"]), pos)
            and np.array_equal(np.asarray(release["neg"]), neg)
        ):
            raise ValueError(
                f"{self.mechanism.name}: the score-DP audit needs a release that publishes the "
                "noisy scores' counts as counted; this mechanism changes them"
            )

    def _statistic(self, neighbour: int, plan):
        dtype = tf.float64
        for seed, size in plan:
            labels = tf.ones([size], dtype)
            scores = tf.fill([size], tf.constant(self.scores[neighbour], dtype))
            _, noisy = self.mechanism.transform(labels, scores, make_seed(seed))
            buckets = self.grid.bucketize(noisy).numpy()
            self.progress.update(size)
            yield {"noisy-score": self.bucket_values[buckets]}

    def selection(self, plan_d, plan_prime):
        out = []
        for neighbour, plan in ((0, plan_d), (1, plan_prime)):
            parts = list(self._statistic(neighbour, plan))
            out.append({name: np.concatenate([p[name] for p in parts]) for name in parts[0]})
        return out

    def evaluation(self, neighbour: int, plan):
        yield from self._statistic(neighbour, plan)


def _chunk_sizes(total: int, chunk: int) -> list[int]:
    return [chunk] * (total // chunk) + ([total % chunk] if total % chunk else [])


def _seed_plan(
    sequence: np.random.SeedSequence, selection: int, evaluation: int, chunk: int
) -> list[list[tuple[int, int]]]:
    """Independent chunk seeds: direction, then D / D' selection, then D / D' evaluation.

    The direction's seed is the sequence's first state whatever ``chunk`` is
    (`numpy.random.SeedSequence.generate_state` is prefix-stable), so it can be drawn
    before the chunk size is known (`_direction_seed`).
    """
    sizes = [_chunk_sizes(selection, chunk)] * 2 + [_chunk_sizes(evaluation, chunk)] * 2
    states = sequence.generate_state(1 + sum(len(part) for part in sizes), dtype=np.uint64)
    seeds = iter(int(s) % (2**63 - 1) for s in states)
    direction = [(next(seeds), _DIRECTION_REPEATS)]
    return [direction, *([(next(seeds), size) for size in part] for part in sizes)]


def _direction_seed(sequence: np.random.SeedSequence) -> int:
    return int(sequence.generate_state(1, dtype=np.uint64)[0]) % (2**63 - 1)


def run_audit(
    mechanism: str | CountMechanism,
    epsilon: float | None = None,
    *,
    delta: float | None = None,
    num_thresholds: int = DEFAULT_AUDIT_NUM_THRESHOLDS,
    samples: int = DEFAULT_AUDIT_SAMPLES,
    seed: int | None = None,
    flip_weight: float = 1.0,
    confidence: float = CONFIDENCE,
    family_size: int = 1,
    progress: bool = False,
    **mechanism_kwargs,
) -> AuditResult:
    """Audits one mechanism on its worst-case pair and returns the lower bound.

    A mechanism that protects labels is audited for label DP on `pair_for`; one that
    protects scores (``score-noise``) for score DP, the relation it claims: one example's
    score moves from 0 to 1, its label stays (see `_ScoreAudit`).

    Memory is bounded whatever ``samples`` is: the statistics the event is chosen from take
    32 bytes per selection release (twice that while they are sorted), at most
    `MAX_SELECTION_SAMPLES` of them; releases are drawn in chunks of at most
    `MAX_CHUNK_VALUES` values (`chunk_rows`) and reduced to the test statistic
    before the next chunk is drawn.

    Args:
      mechanism: a registered name (built with ``epsilon``, ``num_thresholds``, ``delta`` and
        ``mechanism_kwargs``) or a built [`CountMechanism`][] (its own settings are used).
      samples: releases per neighbour; a `SELECTION_FRACTION` of them (at most
        `MAX_SELECTION_SAMPLES`) chooses the event, the rest evaluates it.
      seed: ``None`` for OS entropy, an int for a reproducible audit.
      flip_weight: weight of the flipped example (> 1 only as a negative control); for
        score DP, the score the example moves to (> 1 breaks the [0, 1] range).
      confidence: family-wise confidence: the probability that all ``family_size`` bounds
        of the audits run together hold at once.
      family_size: how many audits are judged together (``dpauc audit --mechanism all``):
        this one's bound is computed at ``1 - (1 - confidence) / family_size`` (Bonferroni),
        each Clopper-Pearson side getting half the error.
      progress: show a progress bar on stderr (releases drawn).
    """
    if isinstance(mechanism, str):
        mechanism = ReleaseArguments(
            epsilon,
            mechanism,
            num_thresholds=num_thresholds,
            delta=delta,
            mechanism_options=mechanism_kwargs,
        ).build()
    elif epsilon is not None or delta is not None or mechanism_kwargs:
        raise ValueError("pass epsilon/delta/options only with a mechanism name")
    if mechanism.epsilon is None:
        raise ValueError("the 'none' mechanism adds no noise: there is nothing to audit")
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 200:
        raise ValueError(f"samples must be an int >= 200, got {samples!r}")
    single_confidence = per_audit_confidence(confidence, family_size)
    if not (flip_weight > 0 and math.isfinite(flip_weight)):
        raise ValueError(f"flip_weight must be finite and > 0, got {flip_weight}")
    protects = mechanism.capabilities.protects
    if protects not in ("labels", "scores"):
        raise ValueError(f"{mechanism.name} protects {protects}: there is nothing to audit")
    alpha = (1.0 - single_confidence) / 2.0
    statement = mechanism.statement()
    delta_claimed = float(statement.delta)
    claimed = float(statement.epsilon)

    selection = min(MAX_SELECTION_SAMPLES, max(100, round(samples * SELECTION_FRACTION)))
    evaluation = samples - selection
    sequence = np.random.SeedSequence(seed)  # None: operating-system entropy
    direction = 0 if protects == "scores" else _DIRECTION_REPEATS
    bar = tqdm(
        total=direction + 2 * samples,
        desc=f"audit {mechanism.name}",
        unit=" releases",
        unit_scale=True,
        disable=not progress,
        leave=False,
        file=sys.stderr,
    )
    with bar:
        if protects == "scores":
            audit = _ScoreAudit(mechanism, flip_weight, bar)
        else:
            pair = pair_for(mechanism, flip_weight)
            audit = _LabelAudit(mechanism, pair, _direction_seed(sequence), bar)
        _, *plans = _seed_plan(sequence, selection, evaluation, audit.rows)
        stats_d, stats_prime = audit.selection(plans[0], plans[1])
        event = _select_event(stats_d, stats_prime, delta_claimed, _SELECTION_ALPHA)
        del stats_d, stats_prime
        # The evaluation half is streamed: only the event's counts are kept.
        count_d, count_prime = (
            sum(event.count(chunk[event.statistic]) for chunk in audit.evaluation(i, plans[2 + i]))
            for i in (0, 1)  # D, D'
        )
    n = evaluation
    count_a, count_b = (count_prime, count_d) if event.upper else (count_d, count_prime)
    bound = float(epsilon_from_counts(count_a, count_b, n, delta_claimed, alpha))
    rate_a, rate_b = count_a / n, count_b / n
    plug_in = (
        math.log((rate_a - delta_claimed) / rate_b)
        if rate_a > delta_claimed and rate_b > 0
        else (math.inf if rate_a > delta_claimed else 0.0)
    )
    return AuditResult(
        mechanism=mechanism.name,
        epsilon=float(mechanism.epsilon),
        delta=float(mechanism.delta),
        claimed_epsilon=claimed,
        source_claimed_epsilon=statement.claimed_epsilon,
        epsilon_lower_bound=max(bound, 0.0),
        plug_in_epsilon=plug_in,
        detectable_multiple=detectable_multiple(count_a, count_b, n, delta_claimed, alpha, claimed),
        samples=samples,
        evaluation_samples=n,
        statistic=event.statistic,
        event=event.describe(),
        rate_a=rate_a,
        rate_b=rate_b,
        rate_a_lower=float(clopper_pearson_lower(count_a, n, alpha)),
        rate_b_upper=float(clopper_pearson_upper(count_b, n, alpha)),
        confidence=single_confidence,
        family_confidence=confidence,
        family_size=family_size,
        num_thresholds=mechanism.num_thresholds,
        flip_weight=flip_weight,
        pair=audit.description,
        neighbouring=audit.neighbouring,
    )


def auditable_mechanisms() -> list[str]:
    """Names of every registered mechanism that adds noise to counts (from the registry)."""
    return list_mechanisms(private=True, transforms_data=False)


def format_table(results: Sequence[AuditResult]) -> str:
    """A plain-text table: claimed epsilon vs audited lower bound and power per mechanism.

    ``detect x`` is `AuditResult.detectable_multiple`; a footer states the
    confidence of the whole table (Bonferroni over its audits).
    """
    header = (
        f"{'mechanism':<24} {'eps':>5} {'delta':>7} {'claimed':>8} {'lower bd':>9} "
        f"{'plug-in':>8} {'detect x':>8} {'samples':>9} {'conf':>7}  statistic   verdict"
    )
    lines = [header, "-" * len(header)]
    for r in results:
        verdict = "VIOLATED" if r.violated else "ok"
        lines.append(
            f"{r.mechanism:<24} {r.epsilon:>5.3g} {r.delta:>7.2g} {r.claimed_epsilon:>8.4g} "
            f"{r.epsilon_lower_bound:>9.4f} {r.plug_in_epsilon:>8.4f} "
            f"{r.detectable_multiple:>8.3f} {r.samples:>9d} {r.confidence:>7.2%}  "
            f"{r.statistic:<11} {verdict}"
        )
    families = sorted({(r.family_confidence, r.family_size) for r in results})
    for family_confidence, family_size in families:
        lines.append(
            f"family-wise confidence {family_confidence:.0%} over {family_size} audit(s) "
            f"(Bonferroni): each bound at {per_audit_confidence(family_confidence, family_size):.4%}"
        )
    for r in results:
        if r.neighbouring == "score":
            lines.append(
                f"{r.mechanism}: audited for score DP, the guarantee it claims (one score moves "
                "by 1); it does not protect labels, which are not audited"
            )
    lines.append(
        "detect x: factor by which the mechanism's privacy loss (1 / noise scale) would have "
        "to grow to be caught about half of the time at these rates and sample size"
    )
    return "\n".join(lines)
