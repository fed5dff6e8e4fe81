"""``secure-histogram``: distributed integer noise for histograms summed by secure aggregation.

Each of ``num_clients`` clients adds a small integer noise *share* to its own per-bucket
counts; the shares are built so that their **sum** over all clients is exactly one draw of the
target noise. The server receives only the sum of the clients' integer histograms (secure
aggregation, e.g. ``tff.federated_secure_sum_bitwidth``), so the error of the AUC is that of
one central release and does not grow with the number of clients.

Guarantee (per evaluation, with every share present):

* **Neighbouring relation**: label DP (two test sets differ in the label of one example;
  labels, scores and counts are integers, no sample weights).
* **Sensitivity**: a label flip moves one unit from ``pos[b]`` to ``neg[b]``: L1 = 2, L2 = sqrt(2).
* **Noise** (``family``):

  - ``"discrete-laplace"`` (default, pure DP): client share = difference of two Polya
    (negative binomial, shape ``1 / num_clients``) variates ([`dpauc_tf.noise.shares.polya_difference`][],
    Goryczka et al. 2013); the sum over ``num_clients`` shares is discrete Laplace with scale
    ``2 / epsilon`` on each of the ``2 (T + 1)`` counts: ``(epsilon, 0)``-DP.
  - ``"skellam"`` (Gaussian family, needs ``delta``): client share = ``Poisson(mu / K) -
    Poisson(mu / K)``; Skellam is closed under sums, so the total is ``Skellam(mu, mu)``
    (variance ``2 mu``). ``mu`` is the smallest value whose Renyi-DP bound (Agarwal, Kairouz
    & Liu 2021, Thm. 3.5, with L1 = 2 and L2^2 = 2), converted to ``(epsilon, delta)``,
    meets the target.

* **Class split** (``positive_share``, or a public prior ``positive_rate``;
  `dpauc_tf.mechanisms.class_split`): discrete Laplace of scale ``1 / (s epsilon)`` on
  the positive and ``1 / ((1 - s) epsilon)`` on the negative counts (epsilon unchanged), or
  Skellam parameters ``mu_pos, mu_neg`` with Renyi precisions ``1 / mu`` in the ratio
  ``s : 1 - s``, calibrated together (`dpauc_tf.privacy.skellam.skellam_tree_mus`, a
  unit change in each class). The default ``s = 0.5`` is the equal split above.

**Trust model.** The guarantee is against a server (and anyone else) who sees *only the
securely aggregated sum*. It requires that the secure-aggregation protocol hides individual
reports, and that clients follow the protocol. A single client's report on its own carries
only its share (variance ``1 / num_clients`` of the total), which protects little: if
individual reports leak, the local-DP mechanisms (``histogram``, ``paper``) are the ones to
use. In TFF simulation, ``tff.federated_secure_sum_bitwidth`` runs under
``tff.backends.test.set_sync_test_cpp_execution_context()``, which performs an **ordinary
sum**: the simulation shows the arithmetic, not the cryptography.

**Dropout.** Shares are sized for ``num_clients`` reporters. If only ``m < num_clients``
report, the total noise is a sum of ``m`` shares, *less* than claimed; the guarantee then
is [`SecureHistogram.achieved_epsilon`][] ``(m)`` (computed numerically, larger than
``epsilon``). Sizing shares for the number of clients *expected* to report (as
[`dpauc_tf.federated.evaluate`][] does) restores the claim; more reporters than that only
add noise (epsilon stays at most the target).

Noise here is sampled exactly as integers (no floating-point low-bit leak once added to
integer counts); the counts stay integers, as secure aggregation needs.

    >>> m = SecureHistogram(epsilon=1.0, num_thresholds=100, num_clients=10)
    >>> m.noise_scale
    2.0
    >>> round(m.achieved_epsilon(10), 6)
    1.0
"""

from __future__ import annotations

import math
from typing import ClassVar

import dp_accounting
import numpy as np
import tensorflow as tf

from dpauc_tf.core.curve import confusion_from_histogram
from dpauc_tf.core.postprocessing import monotone_confusion
from dpauc_tf.mechanisms.base import CountMechanism
from dpauc_tf.mechanisms.capabilities import Capabilities
from dpauc_tf.mechanisms.class_split import EQUAL_SHARE, resolve_positive_share, split_options
from dpauc_tf.mechanisms.laws import IntervalLaw
from dpauc_tf.noise.exact import discrete_laplace_variance
from dpauc_tf.noise.seeds import split_seed
from dpauc_tf.noise.shares import (
    check_shares,
    polya_difference,
    shortfall_unit_epsilon,
    skellam_share,
)
from dpauc_tf.privacy.events import SkellamDpEvent, class_pair_event, discrete_laplace_event
from dpauc_tf.privacy.skellam import (
    HISTOGRAM_L1,
    HISTOGRAM_L2_SQUARED,
    skellam_epsilon,
    skellam_mu,
    skellam_tree_epsilon,
    skellam_tree_mus,
)
from dpauc_tf.privacy.statement import PrivacyStatement


class SecureHistogram(CountMechanism):
    """Distributed discrete noise on the class histograms, for secure aggregation.

    See the module docstring for the guarantee, the trust model and dropout.

    Args:
      epsilon: epsilon of the *summed* release over ``num_clients`` shares.
      num_thresholds: ``T``; histograms have ``T + 1`` buckets.
      delta: required for ``family="skellam"``, must be unset for discrete Laplace.
      num_clients: number of shares the total noise is split into (the number of clients
        expected to report).
      family: ``"discrete-laplace"`` or ``"skellam"``.
      positive_share: the positive histogram's share of the budget (default 0.5).
      positive_rate: a public prior of the fraction of positives; sets the share that
        minimises the AUC's variance (not with ``positive_share``).
      estimator: ``"mann-whitney"`` (default) or ``"reference"``
        ([`CountMechanism`][]).

    [`release`][] is **one client's** report: its integer counts plus its share of noise.
    Summing ``num_clients`` releases gives counts plus one draw of the target noise.

        >>> m = SecureHistogram(epsilon=1.0, num_thresholds=3, num_clients=4)
        >>> r = m.release(tf.constant([0., 5., 3., 0.]), tf.constant([0., 4., 1., 0.]), seed=0)
        >>> bool(tf.reduce_all(r["pos"] == tf.round(r["pos"])))
        True
    """

    name = "secure-histogram"
    capabilities: ClassVar[Capabilities] = Capabilities(
        secure=True, integer_counts=True, xla=False, fed_eval=True
    )
    interval_law: ClassVar[IntervalLaw] = IntervalLaw.DELTA_METHOD

    def __init__(
        self,
        epsilon: float,
        num_thresholds: int,
        delta: float | None = None,
        num_clients: int = 1,
        family: str = "discrete-laplace",
        estimator: str = "mann-whitney",
        positive_share: float | None = None,
        positive_rate: float | None = None,
    ):
        self.num_clients = check_shares(num_clients, family)
        self.family = family
        self.requires_delta = family == "skellam"
        super().__init__(
            epsilon=epsilon, num_thresholds=num_thresholds, delta=delta, estimator=estimator
        )
        self.positive_rate = positive_rate
        self.positive_share = resolve_positive_share(
            positive_share, positive_rate, "skellam" if family == "skellam" else "laplace"
        )
        self._split = self.positive_share != EQUAL_SHARE
        if self._split and family == "skellam":
            shares = (self.positive_share, 1.0 - self.positive_share)
            self.class_mus = tuple(skellam_tree_mus(self.epsilon, self.delta, shares, 1.0))

    # -- noise parameters ----------------------------------------------------------------
    @property
    def noise_scale(self) -> float:
        """Discrete Laplace: scale ``2 / epsilon`` of the total. Skellam: total ``mu``."""
        if self.family == "skellam":
            return skellam_mu(self.epsilon, self.delta)
        return HISTOGRAM_L1 / self.epsilon

    @property
    def class_scales(self) -> tuple[float, float]:
        """Total noise parameter of the positive and the negative counts: discrete Laplace
        scales ``1 / eps_class``, or Skellam ``mu`` (both ``noise_scale`` when equal)."""
        if not self._split:
            return (self.noise_scale, self.noise_scale)
        if self.family == "skellam":
            return self.class_mus
        share = self.positive_share
        return (1.0 / (share * self.epsilon), 1.0 / ((1.0 - share) * self.epsilon))

    @property
    def noise_stddev(self) -> float:
        """Standard deviation of the *total* noise on one summed count (the noisier class)."""
        scale = max(self.class_scales)
        if self.family == "skellam":
            return math.sqrt(2.0 * scale)
        return math.sqrt(discrete_laplace_variance(scale))

    @property
    def client_noise_stddev(self) -> float:
        """Standard deviation of one client's share (``noise_stddev / sqrt(num_clients)``)."""
        return self.noise_stddev / math.sqrt(self.num_clients)

    def _noisy_release(self, pos, neg, seed):
        shape = tf.shape(pos)
        seeds = split_seed(seed, 2)
        scales = self.class_scales
        if self.family == "skellam":
            shares = [
                skellam_share(shape, scales[i] / self.num_clients, seeds[i], pos.dtype)
                for i in range(2)
            ]
        else:
            shares = [
                polya_difference(shape, scales[i], self.num_clients, seeds[i], pos.dtype)
                for i in range(2)
            ]
        return {"pos": pos + shares[0], "neg": neg + shares[1]}

    def noise_variances(self, release):
        """The total (all shares') noise on every summed count: Skellam ``2 mu`` or the
        discrete Laplace variance of the class's scale."""
        pos_scale, neg_scale = self.class_scales
        if self.family == "skellam":
            return {"pos": np.asarray(2.0 * pos_scale), "neg": np.asarray(2.0 * neg_scale)}
        return {
            "pos": np.asarray(discrete_laplace_variance(pos_scale)),
            "neg": np.asarray(discrete_laplace_variance(neg_scale)),
        }

    def released_confusion(self, release):
        """The suffix sums of the summed noisy histograms (the AUC is estimated from these)."""
        return confusion_from_histogram(release["pos"], release["neg"])

    def to_confusion(self, release):
        """Monotone, consistent cumulative counts ([`monotone_confusion`][]) for the curve."""
        return monotone_confusion(release["pos"], release["neg"])

    # -- accounting ----------------------------------------------------------------------
    def dp_event(self) -> dp_accounting.DpEvent:
        """The summed release: exact discrete Laplace (a flip moves two counts by one each),
        or one [`SkellamDpEvent`][] (L1 = 2, L2^2 = 2). An
        unequal split: the two classes' unit changes, composed (discrete Laplace) or one
        Skellam event over ``(mu_pos, mu_neg)`` with L1 = L2^2 = 1 per vector."""
        if self._split and self.family == "skellam":
            return SkellamDpEvent(self.class_mus, 1.0, 1.0)
        if self._split:
            return class_pair_event(*self.class_scales, discrete=True)
        if self.family == "skellam":
            return SkellamDpEvent((self.noise_scale,), HISTOGRAM_L1, HISTOGRAM_L2_SQUARED)
        return discrete_laplace_event(self.noise_scale, int(HISTOGRAM_L1))

    def aggregate(self) -> SecureHistogram:
        """The same mechanism with one share: its release of summed counts is distributed
        exactly as the secure sum of ``num_clients`` clients' releases (for simulation)."""
        return SecureHistogram(
            epsilon=self.epsilon,
            num_thresholds=self.num_thresholds,
            delta=self.delta or None,
            num_clients=1,
            family=self.family,
            estimator=self.estimator,
            **split_options(self.positive_share, self.positive_rate),
        )

    def achieved_epsilon(self, num_reporting: int) -> float:
        """Epsilon actually provided when ``num_reporting`` of the ``num_clients`` shares arrive.

        Equal to ``epsilon`` for ``num_reporting >= num_clients`` (extra shares only add noise),
        larger when clients drop out; ``inf`` when nobody reports.
        """
        if num_reporting >= self.num_clients:
            return self.epsilon
        if num_reporting <= 0:
            return math.inf
        fraction = num_reporting / self.num_clients
        if self.family == "skellam":
            if self._split:
                return skellam_tree_epsilon(
                    [mu * fraction for mu in self.class_mus], 1.0, self.delta
                )
            return skellam_epsilon(self.noise_scale * fraction, self.delta)
        return sum(shortfall_unit_epsilon(scale, fraction) for scale in self.class_scales)

    def statement(self) -> PrivacyStatement:
        if self._split:
            kind = "Skellam(mu=" if self.family == "skellam" else "discrete Laplace(scale="
            scale_pos, scale_neg = self.class_scales
            noise_text = (
                f"{kind}{scale_pos:.4g}) in total on each of the T+1 = {self.num_buckets} "
                f"positive counts and {kind}{scale_neg:.4g}) on each negative count (positive "
                f"share {self.positive_share:.4g}), split into {self.num_clients} client shares"
            )
        elif self.family == "skellam":
            noise_text = (
                f"Skellam(mu={self.noise_scale:.4g}) in total on each of 2(T+1) = "
                f"{2 * self.num_buckets} bucket counts, split into {self.num_clients} client "
                f"shares Poisson(mu/K) - Poisson(mu/K)"
            )
        else:
            noise_text = (
                f"discrete Laplace(scale={self.noise_scale:g}) in total on each of 2(T+1) = "
                f"{2 * self.num_buckets} bucket counts, split into {self.num_clients} client "
                "shares (Polya differences)"
            )
        return PrivacyStatement(
            mechanism=self.name,
            neighbouring=self.neighbouring
            + "; trust: the server sees only the secure sum of all reports",
            sensitivity="L1 = 2, L2 = sqrt(2) (one unit moves between pos[b] and neg[b])",
            noise=noise_text,
            epsilon=self.epsilon,
            delta=self.delta,
            sensitivity_value=HISTOGRAM_L1,
            noise_scale=None if self.family == "skellam" else max(self.class_scales),
        )

    def options(self) -> dict:
        split = split_options(self.positive_share, self.positive_rate)
        return {
            "num_clients": self.num_clients,
            "family": self.family,
            **split,
            **super().options(),
        }
