"""Privacy accounting with the ``dp-accounting`` library.

Each mechanism describes one release as a ``dp_accounting.DpEvent`` (or the project's
[`SkellamDpEvent`][]); this module turns events into epsilons,
for one release and for many composed, by three methods, and says which one it used:

* ``basic``: the sum of per-release epsilons (pure-DP releases: exact; releases that are not
  pure DP get an equal share of ``delta`` each). Always valid.
* ``pld``: dp-accounting's privacy-loss-distribution accountant, when it supports every
  event (``accountant.supports(event)``), plus Skellam's PLD built from its pmf
  (`dpauc_tf.privacy.skellam.skellam_event_pld`); ``delta > 0`` only.
* ``rdp``: dp-accounting's RDP accountant plus the Skellam Renyi curve at the same orders,
  when every other event is supported by the RDP accountant; ``delta > 0`` only.

A [`BoundFailureDpEvent`][] (the delta of a noisy bound, as in
``auc-only``) composed with pure-DP events is one ``(epsilon, delta)``-DP release: ``basic``
takes the deltas off ``delta`` first (the epsilon is infinite if they exceed it) and adds
the epsilons; ``pld`` composes the canonical ``(epsilon, delta)`` pair (dp-accounting's
``from_privacy_parameters``: the optimal composition theorem of Kairouz, Oh & Viswanath
2015); ``rdp`` is not given. Beside events that are not pure DP it is composed by ``basic``
only.

`EpsilonSpent.best` is the smallest of them and `EpsilonSpent.method` names it.
Randomized response is accounted under the replace-one relation (a label changes); events
with a sensitivity (Laplace, discrete Laplace, Gaussian) already state the change of the
released vector under a label flip.

Examples:
    >>> import dp_accounting
    >>> event = dp_accounting.LaplaceDpEvent(noise_multiplier=100.0)   # epsilon 0.01 each
    >>> spent = composed_epsilon(event, count=100, delta=1e-6)
    >>> round(spent.basic, 6), spent.pld < 0.5, spent.method
    (1.0, True, 'pld')
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math

import attr
import dp_accounting
from dp_accounting import dp_event, pld, privacy_accountant, rdp
from dp_accounting.pld import common as pld_common
from dp_accounting.pld import privacy_loss_distribution

from dpauc_tf.privacy.calibration import smallest_parameter
from dpauc_tf.privacy.events import BoundFailureDpEvent, SkellamDpEvent, event_to_json
from dpauc_tf.privacy.pld_reading import PLD_DELTA_MARGIN  # how PLDs are read
from dpauc_tf.privacy.skellam import (
    RDP_ORDERS,
    skellam_event_pld,
    skellam_pld_supported,
    skellam_rdp,
)


@dataclasses.dataclass(frozen=True)
class EpsilonSpent:
    """Epsilon of ``count`` composed releases at ``delta``.

    Attributes:
      basic: the sum of per-release epsilons (plus the deltas); always valid.
      pld: the PLD accountant's epsilon at ``delta`` (``None`` for ``delta == 0`` or when
        the PLD accountant does not support every event).
      rdp: the RDP epsilon at ``delta`` (``None`` for ``delta == 0`` or when the RDP
        accountant and the Skellam curve do not cover every event).
      delta: the delta these figures hold for.
      count: number of releases.
    """

    basic: float
    pld: float | None
    rdp: float | None
    delta: float
    count: int

    @property
    def best(self) -> float:
        """The smallest valid figure."""
        return min(x for x in (self.basic, self.pld, self.rdp) if x is not None)

    @property
    def method(self) -> str:
        """Which figure [`best`][] is: ``"pld"``, ``"rdp"`` or ``"basic"``."""
        figures = {"pld": self.pld, "rdp": self.rdp, "basic": self.basic}
        return (
            min((v, k) for k, v in figures.items() if v is not None)[1] if self.count else "basic"
        )


def _rr_epsilon(event: dp_event.RandomizedResponseDpEvent) -> float:
    p, k = float(event.noise_parameter), int(event.num_buckets)
    if k <= 1:
        return 0.0
    if p <= 0:
        return math.inf
    return math.log1p(k * (1.0 - p) / p)


def pure_epsilon(event: dp_accounting.DpEvent) -> float | None:
    """Epsilon of a pure-DP event (Laplace, discrete Laplace, randomized response, their
    compositions, no-op); ``None`` otherwise."""
    if isinstance(event, dp_accounting.NoOpDpEvent):
        return 0.0
    if isinstance(event, dp_accounting.LaplaceDpEvent):
        return 1.0 / event.noise_multiplier
    if isinstance(event, dp_event.DiscreteLaplaceDpEvent):
        return float(event.noise_parameter) * float(event.sensitivity)
    if isinstance(event, dp_event.RandomizedResponseDpEvent):
        return _rr_epsilon(event)
    if isinstance(event, dp_accounting.SelfComposedDpEvent):
        inner = pure_epsilon(event.event)
        return None if inner is None else inner * event.count
    if isinstance(event, dp_accounting.ComposedDpEvent):
        parts = [pure_epsilon(e) for e in event.events]
        return None if any(p is None for p in parts) else sum(parts)
    return None


@attr.s(frozen=True, slots=True, auto_attribs=True)
class _ApproximateDp(dp_accounting.DpEvent):
    """One (epsilon, delta)-DP release (accounting only, never stored): a composition of
    pure-DP events with [`BoundFailureDpEvent`][] s, whose events hold except with
    probability ``delta``. Composed by the basic sum and by the PLD of the canonical
    (epsilon, delta) pair (dp-accounting's ``from_privacy_parameters``), which every
    (epsilon, delta)-DP mechanism's pair of output distributions is a post-processing of
    (Kairouz, Oh & Viswanath 2015, Thm. 2.1 and the optimal composition theorem 3.3)."""

    epsilon: float
    delta: float


def _leaves(
    event: dp_accounting.DpEvent, count: int = 1
) -> list[tuple[dp_accounting.DpEvent, int]]:
    """``event`` as (elementary event, multiplicity) pairs (compositions unrolled)."""
    if isinstance(event, dp_accounting.SelfComposedDpEvent):
        return _leaves(event.event, count * int(event.count))
    if isinstance(event, dp_accounting.ComposedDpEvent):
        failures = [e for e in event.events if isinstance(e, BoundFailureDpEvent)]
        if failures:
            pures = [pure_epsilon(e) for e in event.events if e not in failures]
            if all(p is not None for p in pures) and count:
                # one (epsilon, delta)-DP release (propose-test-release, as auc-only)
                release = _ApproximateDp(sum(pures), sum(e.delta for e in failures))
                return [(release, count)]
        return [pair for inner in event.events for pair in _leaves(inner, count)]
    return [(event, count)] if count else []


# dp-accounting's default grid of privacy losses.
PLD_INTERVAL = 1e-4
# The most grid points a PLD may span (its losses' range / the interval): a wider range gets
# a coarser grid (still pessimistic: a valid, looser figure), never gigabytes of memory.
PLD_MAX_POINTS = 2**20
# dp-accounting reads a PLD through exp(loss), which overflows past about 709: a release
# whose privacy loss can exceed this gets no PLD figure (the basic and Renyi figures stand).
PLD_MAX_LOSS = 500.0


class _PLDAccountant(pld.PLDAccountant):
    """dp-accounting's PLD accountant with randomized response composed ``count`` times
    under the replace-one relation (dp-accounting 0.6.0 composes it once, whatever the
    count, and only under a replace relation, which would double the Laplace and Gaussian
    sensitivities)."""

    def __init__(self, value_discretization_interval: float = PLD_INTERVAL):
        super().__init__(value_discretization_interval=value_discretization_interval)

    def _maybe_compose(self, event, count, do_compose):
        if isinstance(event, SkellamDpEvent):
            interval = self._value_discretization_interval
            if not skellam_pld_supported(event.mus, event.l1, event.l2_squared):
                return privacy_accountant.PrivacyAccountant.CompositionErrorDetails(
                    invalid_event=event, error_message="no exact Skellam PLD for this event"
                )
            if do_compose and count > 0:
                one = skellam_event_pld(event.mus, event.l1, event.l2_squared, interval)
                self._pld = self._pld.compose(one.self_compose(count))
            return None
        if isinstance(event, _ApproximateDp):
            if do_compose and count > 0:
                parameters = pld_common.DifferentialPrivacyParameters(event.epsilon, event.delta)
                canonical = privacy_loss_distribution.from_privacy_parameters(
                    parameters, self._value_discretization_interval
                )
                self._pld = self._pld.compose(canonical.self_compose(count))
            return None
        if isinstance(event, dp_event.RandomizedResponseDpEvent):
            if do_compose and event.num_buckets > 1 and count > 0:
                if event.noise_parameter == 0:
                    self._contains_non_dp_event = True
                else:
                    rr = privacy_loss_distribution.from_randomized_response(
                        noise_parameter=event.noise_parameter,
                        num_buckets=event.num_buckets,
                        value_discretization_interval=self._value_discretization_interval,
                        neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE,
                    )
                    self._pld = self._pld.compose(rr.self_compose(count))
            return None
        return super()._maybe_compose(event, count, do_compose)


def _leaf_loss(leaf) -> float | None:
    """An upper bound on the privacy loss of one release of ``leaf`` (``None`` when not
    known cheaply)."""
    pure = pure_epsilon(leaf)
    if pure is None and isinstance(leaf, _ApproximateDp):
        pure = leaf.epsilon
    if pure is None and isinstance(leaf, dp_accounting.GaussianDpEvent):
        r = 1.0 / leaf.noise_multiplier if leaf.noise_multiplier > 0 else math.inf
        pure = r * r / 2.0 + 10.0 * r  # the loss is N(r^2 / 2, r^2), cut at its tails
    return pure


def _loss_range(leaves) -> float | None:
    """An upper bound on the range of the composed privacy losses that the PLD must span
    (``None`` when it is not known cheaply: the PLD is then built on the default grid)."""
    total = 0.0
    for leaf, count in leaves:
        loss = _leaf_loss(leaf)
        if loss is None:
            if isinstance(leaf, SkellamDpEvent):
                continue  # built on a bounded support of its own (skellam.MAX_SUPPORT)
            return None
        total += count * loss
    return 2.0 * total


def pld_skip_reason(leaves) -> str | None:
    """Why the PLD of ``leaves`` is not computed (``None`` when it is): a release whose
    privacy loss can exceed `PLD_MAX_LOSS` (dp-accounting's reading overflows there)."""
    for leaf, _ in leaves:
        loss = _leaf_loss(leaf)
        if loss is not None and loss > PLD_MAX_LOSS:
            return (
                f"not computed: one release's privacy loss reaches {loss:.4g}, beyond the "
                f"{PLD_MAX_LOSS:g} that the PLD accountant reads without overflow; the basic "
                "figure (exact for pure DP) stands"
            )
    return None


def pld_interval(leaves) -> float:
    """The grid of the PLD of ``leaves``: dp-accounting's 1e-4, coarser (a round figure)
    where the losses would span more than `PLD_MAX_POINTS` points (a coarser grid is
    still pessimistic: a valid, looser figure, computed in bounded time and memory)."""
    span = _loss_range(leaves)
    if span is None or not math.isfinite(span):
        return PLD_INTERVAL
    wanted = span / PLD_MAX_POINTS
    if wanted <= PLD_INTERVAL:
        return PLD_INTERVAL
    # a round figure (1, 2 or 5 times a power of ten), so that round epsilons sit on the grid
    power = 10.0 ** math.floor(math.log10(wanted))
    return next(f * power for f in (1.0, 2.0, 5.0, 10.0) if f * power >= wanted)


def pld_note(event: dp_accounting.DpEvent, count: int = 1) -> str | None:
    """Why ``count`` releases of ``event`` get no PLD figure for a reason of cost or range
    (``None`` otherwise, e.g. when the figure exists or the accountant does not apply)."""
    return pld_skip_reason(_leaves(event, count))


def _pld_epsilon(leaves, delta: float) -> float | None:
    if pld_skip_reason(leaves) is not None:
        return None
    accountant = _PLDAccountant(pld_interval(leaves))
    if not all(accountant.supports(leaf) for leaf, _ in leaves):
        return None
    try:
        for leaf, count in leaves:
            accountant.compose(leaf, count)
        return float(accountant.get_epsilon(delta * (1.0 - PLD_DELTA_MARGIN)))
    except (OverflowError, ValueError, MemoryError):
        # e.g. a canonical (epsilon, delta) pair at epsilon 1000 (exp overflows), or
        # dp-accounting's "deltas are not in non-increasing order" far out in the tails
        return None  # no PLD figure; the basic and Renyi figures stand


def _rdp_epsilon(leaves, delta: float) -> float | None:
    skellam = [(leaf, n) for leaf, n in leaves if isinstance(leaf, SkellamDpEvent)]
    rr = [(leaf, n) for leaf, n in leaves if isinstance(leaf, dp_event.RandomizedResponseDpEvent)]
    other = [pair for pair in leaves if pair not in skellam and pair not in rr]
    # The Skellam bound is stated at integer orders; dp-accounting's defaults otherwise.
    orders = list(RDP_ORDERS) if skellam else None
    relation = dp_accounting.NeighboringRelation
    total = None
    for group, neighbours in ((other, relation.ADD_OR_REMOVE_ONE), (rr, relation.REPLACE_ONE)):
        accountant = rdp.RdpAccountant(orders, neighboring_relation=neighbours)
        if not all(accountant.supports(leaf) for leaf, _ in group):
            return None
        for leaf, count in group:
            accountant.compose(leaf, count)
        total = accountant.rdp if total is None else total + accountant.rdp
        orders = accountant.orders
    for leaf, count in skellam:
        total = total + count * sum(
            skellam_rdp(orders, mu, leaf.l1, leaf.l2_squared) for mu in leaf.mus
        )
    return float(rdp.compute_epsilon(orders, total, delta)[0])


def _leaf_epsilon(leaf, delta: float) -> float:
    """(epsilon, delta)-DP epsilon of one elementary release: its pure epsilon, or the
    smaller of its PLD and RDP figures at ``delta`` (``inf`` when no method knows it)."""
    pure = pure_epsilon(leaf)
    if pure is not None:
        return pure
    if isinstance(leaf, dp_accounting.NonPrivateDpEvent) or delta <= 0:
        return math.inf
    figures = [
        f
        for f in (_pld_epsilon([(leaf, 1)], delta), _rdp_epsilon([(leaf, 1)], delta))
        if f is not None
    ]
    return min(figures) if figures else math.inf


def _key(event) -> str:
    try:
        return json.dumps(event_to_json(event), sort_keys=True)
    except (TypeError, ValueError):
        return ""


def composed_epsilon(
    event: dp_accounting.DpEvent, count: int = 1, delta: float = 0.0
) -> EpsilonSpent:
    """Epsilon of ``count`` independent releases of ``event`` at ``delta``.

    Pure-DP events compose by the sum (``basic``); events that are not pure DP (Gaussian,
    Skellam) have no finite pure epsilon, so ``basic`` then adds their single-release
    epsilons at an equal share of ``delta`` each. ``pld`` and ``rdp`` are given where their
    accountants support every event (see the module docstring). A non-private event, or one
    no method can account, costs ``inf``.
    """
    if isinstance(count, bool) or int(count) != count or count < 0:
        raise ValueError(f"count must be an integer >= 0, got {count}")
    if not 0.0 <= delta < 1.0:
        raise ValueError(f"delta must be in [0, 1), got {delta}")
    if not isinstance(event, dp_accounting.DpEvent):
        raise TypeError(f"expected a dp_accounting.DpEvent, got {type(event).__name__}")
    key = _key(event)
    if key:
        return _cached_composed(key, event, int(count), float(delta))
    return _composed(event, int(count), float(delta))


_CACHE: dict[tuple[str, int, float], EpsilonSpent] = {}


def _cached_composed(key: str, event, count: int, delta: float) -> EpsilonSpent:
    """Memoised by the event's JSON (events holding lists are not hashable)."""
    spent = _CACHE.get((key, count, delta))
    if spent is None:
        if len(_CACHE) >= 512:
            _CACHE.clear()
        spent = _CACHE[(key, count, delta)] = _composed(event, count, delta)
    return spent


def _with_deltas(leaves, delta: float) -> float:
    """The basic figure of leaves among which some carry their own delta (approximate-DP
    releases, bare bound failures): their deltas come off ``delta`` first (``inf`` if they
    exceed it), their epsilons add, and the other leaves share what is left."""
    own = [
        (leaf, n) for leaf, n in leaves if isinstance(leaf, (_ApproximateDp, BoundFailureDpEvent))
    ]
    others = [
        (leaf, n)
        for leaf, n in leaves
        if not isinstance(leaf, (_ApproximateDp, BoundFailureDpEvent))
    ]
    failed = sum(n * leaf.delta for leaf, n in own)
    if failed > delta * (1 + 1e-12):
        return math.inf
    spent = sum(n * leaf.epsilon for leaf, n in own if isinstance(leaf, _ApproximateDp))
    return spent + _basic_epsilon(others, max(delta - failed, 0.0))


def _composed(event, count: int, delta: float) -> EpsilonSpent:
    if count == 0:
        return EpsilonSpent(0.0, 0.0 if delta > 0 else None, None, delta, 0)
    leaves = _leaves(event, count)
    if not leaves:
        return EpsilonSpent(0.0, 0.0 if delta > 0 else None, None, delta, count)
    if any(isinstance(leaf, dp_accounting.NonPrivateDpEvent) for leaf, _ in leaves):
        return EpsilonSpent(math.inf, None, None, delta, count)
    if any(isinstance(leaf, BoundFailureDpEvent) for leaf, _ in leaves):
        # a bound failure beside events that are not pure DP: basic composition only
        return EpsilonSpent(_with_deltas(leaves, delta), None, None, delta, count)
    approximate = any(isinstance(leaf, _ApproximateDp) for leaf, _ in leaves)
    basic = _with_deltas(leaves, delta) if approximate else _basic_epsilon(leaves, delta)
    if delta <= 0:
        return EpsilonSpent(basic, None, None, delta, count)
    rdp_figure = None if approximate else _rdp_epsilon(leaves, delta)
    return EpsilonSpent(basic, _pld_epsilon(leaves, delta), rdp_figure, delta, count)


def quick_epsilon(event: dp_accounting.DpEvent, delta: float = 0.0) -> float:
    """A valid upper bound on the epsilon of ``event`` at ``delta`` that is cheap to compute:
    the smaller of the basic sum when every release is pure DP (or approximate DP with its
    own delta, within ``delta``) and the Renyi figure where it applies (``inf`` when neither
    does). Never below ``composed_epsilon(event, 1, delta).best`` (it is one of that
    function's figures)."""
    leaves = _leaves(event, 1)
    if not leaves:
        return 0.0
    if any(isinstance(leaf, dp_accounting.NonPrivateDpEvent) for leaf, _ in leaves):
        return math.inf
    own = (_ApproximateDp, BoundFailureDpEvent)
    cheap = all(isinstance(leaf, own) or pure_epsilon(leaf) is not None for leaf, _ in leaves)
    basic = _with_deltas(leaves, delta) if cheap else math.inf
    if delta > 0 and not any(isinstance(leaf, own) for leaf, _ in leaves):
        figure = _rdp_epsilon(leaves, delta)
        if figure is not None:
            return min(basic, figure)
    return basic


def infinite_reason(event: dp_accounting.DpEvent, delta: float) -> str | None:
    """Why ``event`` costs infinite epsilon at ``delta``, in words that say what to do
    (``None`` when it does not, or when no delta would help)."""
    leaves = _leaves(event, 1)
    if any(isinstance(leaf, dp_accounting.NonPrivateDpEvent) for leaf, _ in leaves):
        return "a non-private release (no noise) costs infinite epsilon whatever the delta"
    if any(isinstance(leaf, dp_accounting.UnsupportedDpEvent) for leaf, _ in leaves):
        return (
            "a release whose privacy no accountant can state (an UnsupportedDpEvent) costs "
            "infinite epsilon whatever the delta: a larger delta does not help"
        )
    own = sum(
        n * leaf.delta
        for leaf, n in leaves
        if isinstance(leaf, (_ApproximateDp, BoundFailureDpEvent))
    )
    needs_delta = own > 0 or any(pure_epsilon(leaf) is None for leaf, _ in leaves)
    if not needs_delta:
        return None
    if delta <= 0:
        return (
            "these releases are (epsilon, delta)-DP (Gaussian, Skellam or auc-only noise) and "
            "have no finite epsilon at delta = 0: give the ledger a delta, e.g. "
            f"PrivacyLedger(..., delta={max(10 * own, 1e-6):.0e})"
            + (f" (at least the releases' own deltas, {own:.3g} in all)" if own else "")
        )
    if own > delta * (1 + 1e-12):
        return (
            f"the releases' own deltas add up to {own:.3g}, more than the ledger's delta "
            f"{delta:g}: use a ledger with a larger delta (a new file: a ledger's delta "
            "cannot change) or releases with a smaller delta"
        )
    return None


def _basic_epsilon(leaves, delta: float) -> float:
    """Sum of the leaves' epsilons; leaves that are not pure DP share ``delta`` equally."""
    pure_total, approximate = 0.0, []
    for leaf, n in leaves:
        pure = pure_epsilon(leaf)
        if pure is None:
            approximate.append((leaf, n))
        else:
            pure_total += n * pure
    shares = sum(n for _, n in approximate)
    return pure_total + sum(n * _leaf_epsilon(leaf, delta / shares) for leaf, n in approximate)


def _gaussian_delta(epsilon: float, sigma: float, sensitivity: float) -> float:
    """Exact delta of the Gaussian mechanism (Balle & Wang 2018, Theorem 8)."""
    a = sensitivity / (2.0 * sigma)
    b = epsilon * sigma / sensitivity

    from scipy.special import log_ndtr, ndtr

    # exp(epsilon) * Phi(-a - b) in log space: exp(epsilon) alone overflows above ~709,
    # while the product never exceeds Phi(a - b) <= 1.
    return float(ndtr(a - b)) - math.exp(epsilon + float(log_ndtr(-a - b)))


@functools.lru_cache(maxsize=256)
def analytic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """Smallest Gaussian std giving (epsilon, delta)-DP for L2 ``sensitivity`` (analytic Gaussian).

    Examples:
        >>> round(analytic_gaussian_sigma(1.0, 1e-5), 3)
        3.731
    """
    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise ValueError(f"epsilon must be finite and > 0, got {epsilon}")
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta must be in (0, 1), got {delta}")
    return smallest_parameter(
        lambda sigma: _gaussian_delta(epsilon, sigma, sensitivity), delta, start=sensitivity
    )
