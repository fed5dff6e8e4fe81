"""The AUC estimators of a release, as Keras names its curves and summation methods.

Examples:
    >>> AUCEstimator.from_str("mann-whitney-smooth").within_bucket
    'linear'
    >>> AUCEstimator.from_str("reference").within_bucket is None
    True
"""

from __future__ import annotations

import enum


class AUCEstimator(enum.Enum):
    """How a mechanism estimates the AUC from a (summed) release (post-processing).

    * ``MANN_WHITNEY`` (``"mann-whitney"``, the default): the Mann-Whitney AUC of the
      released cumulative counts, pairs inside a bucket counted 1/2: consistent (it converges
      to TensorFlow's AUC as epsilon grows, on any data).
    * ``MANN_WHITNEY_SMOOTH`` (``"mann-whitney-smooth"``): the same with the within-bucket
      correction for smooth continuous scores (``docs/epsilon_split.md``).
    * ``REFERENCE`` (``"reference"``): the DPAUC reference code's clip, sort by FPR and
      trapezoid, for reproducing the paper only (not consistent on one-class buckets).
    """

    MANN_WHITNEY = "mann-whitney"
    MANN_WHITNEY_SMOOTH = "mann-whitney-smooth"
    REFERENCE = "reference"

    @classmethod
    def from_str(cls, key: str | AUCEstimator) -> AUCEstimator:
        """The estimator named ``key``; ``ValueError`` naming the choices otherwise."""
        if isinstance(key, cls):
            return key
        for estimator in cls:
            if estimator.value == key:
                return estimator
        choices = ", ".join(repr(e.value) for e in cls)
        raise ValueError(f"estimator must be one of {choices}, got {key!r}")

    @property
    def within_bucket(self) -> str | None:
        """How the Mann-Whitney estimators count the pairs inside a bucket (``None`` for the
        reference rule, which is not a Mann-Whitney estimate)."""
        return {"mann-whitney": "half", "mann-whitney-smooth": "linear"}.get(self.value)
