"""The vocabularies of a mechanism's law: how its noise is drawn, which interval law its
releases follow and how ``num_thresholds="auto"`` sizes its grid; and of its releases: what an
interval covers (`IntervalTarget`) and the one-vs-rest average (`Average`).

Every mechanism family states these as class attributes (``noise_kind`` per instance where an
option picks it); the generic code (intervals, auto grid, simulation) reads them and never
asks which family a mechanism is. Pure Python: no TensorFlow, no dp-accounting.

Examples:
    >>> NoiseKind("discrete").exact, GridRule.NOISE_PER_BUCKET.grows_with_grid
    (True, True)
    >>> IntervalLaw.DELTA_METHOD.has_interval, IntervalLaw.NONE.has_interval
    (True, False)
"""

from __future__ import annotations

import enum

from dpauc_tf.core.vocabulary import Vocabulary


class NoiseKind(Vocabulary):
    """How a mechanism draws its noise on a count (a ``str``: compares equal to its value).

    * ``CONTINUOUS`` (``"continuous"``): floating-point samples (open to Mironov's 2012
      low-order-bit attack, like every floating-point sampler).
    * ``DISCRETE`` (``"discrete"``): exact integer samples (integer counts only).
    """

    CONTINUOUS = "continuous"
    DISCRETE = "discrete"

    @property
    def exact(self) -> bool:
        """Whether the noise is exact integer noise (integer counts only)."""
        return self is NoiseKind.DISCRETE

    @classmethod
    def argument(cls) -> str:
        return "noise"


class IntervalLaw(enum.Enum):
    """Which law `dpauc_tf.mechanisms.intervals.release_interval` applies to a release.

    * ``DELTA_METHOD``: independent noise of stated variances on released entries
      (``noise_variances``), carried to the AUC by the gradient of the mechanism's
      unclipped estimate (``unclipped_estimate``), less the curvature counted twice.
    * ``FLIPS``: the delta method, and where few flips are expected the quantile of the
      flips' exact law (randomized response).
    * ``LAPLACE_ON_AUC``: one Laplace draw of a released scale on the AUC itself (its
      exact quantile; ``auc-only``).
    * ``RANK_SUM``: a Laplace draw on the rank sum and the count's noise through
      ``1 / (P N)``, with a conservative box where the count's noise is large.
    * ``NONE``: no valid interval (the release does not tell the noise's effect).
    """

    DELTA_METHOD = "delta-method"
    FLIPS = "flips"
    LAPLACE_ON_AUC = "laplace-on-auc"
    RANK_SUM = "rank-sum"
    NONE = "none"

    @property
    def has_interval(self) -> bool:
        return self is not IntervalLaw.NONE


class GridRule(enum.Enum):
    """How ``num_thresholds="auto"`` sizes a mechanism's grid
    (`dpauc_tf.mechanisms.auto_grid.auto_num_thresholds`).

    * ``NOISE_PER_BUCKET``: the release's noise grows with the number of buckets: the grid
      balances that noise against the grid's bias (``0.6 (eps n)^0.4`` on a ladder).
    * ``DEFAULT_GRID``: the noise does not grow with the grid (no per-bucket noise, or the
      mechanism counts on its own grid): TensorFlow's default.
    """

    NOISE_PER_BUCKET = "noise-per-bucket"
    DEFAULT_GRID = "default-grid"

    @property
    def grows_with_grid(self) -> bool:
        return self is GridRule.NOISE_PER_BUCKET


class Deployment(str, enum.Enum):
    """Where the labels are when a release is drawn: what the default mechanism depends on.

    * ``CENTRAL`` (``"central"``): one data holder releases (the Keras metric, one file).
    * ``FEDERATED`` (``"federated"``): clients each add their own noise and the server sees
      every client's report (no secure aggregation).
    * ``SECURE`` (``"secure"``): clients' reports are summed by secure aggregation (TFF's
      secure sum, Flower's SecAgg+): the server sees only the sum.

    Examples:
        >>> Deployment("secure").has_clients, Deployment.CENTRAL.has_clients
        (True, False)
    """

    CENTRAL = "central"
    FEDERATED = "federated"
    SECURE = "secure"

    @property
    def has_clients(self) -> bool:
        """Whether several data holders report (the release is federated)."""
        return self is not Deployment.CENTRAL


class IntervalTarget(Vocabulary):
    """What an interval covers (``target=``, ``ci_target=``;
    `dpauc_tf.mechanisms.intervals`): this test set's AUC (``"sample"``: the privacy noise
    only) or the population's (``"population"``, the default: the noise and the sampling
    error).

    Examples:
        >>> IntervalTarget("sample"), IntervalTarget.POPULATION == "population"
        (<IntervalTarget.SAMPLE: 'sample'>, True)
    """

    SAMPLE = "sample"
    POPULATION = "population"

    @classmethod
    def argument(cls) -> str:
        return "target"


class Average(Vocabulary):
    """The one-vs-rest average (``average=``), as
    ``sklearn.metrics.roc_auc_score(multi_class="ovr", average=...)``: the mean of the
    per-class AUCs (``"macro"``), weighted by class support (``"weighted"``), or the AUC of
    the pooled one-vs-rest counts (``"micro"``).

    Examples:
        >>> Average("micro"), Average.values()
        (<Average.MICRO: 'micro'>, ('macro', 'weighted', 'micro'))
    """

    MACRO = "macro"
    WEIGHTED = "weighted"
    MICRO = "micro"
