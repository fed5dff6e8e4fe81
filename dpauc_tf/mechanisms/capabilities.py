"""What a mechanism can take and where it can run: a class attribute of every mechanism family
(``CountMechanism.capabilities``), read by every caller.

Pure Python (no TensorFlow, no dp-accounting), so that the command line can list the
mechanisms and their capabilities without loading either.

    >>> Capabilities(secure=True, integer_counts=True).summary()
    'protects labels, releases the curve, secure aggregation (noise shares), integer weights only'
"""

from __future__ import annotations

import dataclasses

from dpauc_tf.core.vocabulary import Vocabulary


class Protected(Vocabulary):
    """What a mechanism's noise protects (``Capabilities.protects``).

    Examples:
        >>> Protected("labels"), Protected.NOTHING == "nothing"
        (<Protected.LABELS: 'labels'>, True)
    """

    LABELS = "labels"  # label DP
    SCORES = "scores"  # score DP, labels exact
    NOTHING = "nothing"  # no noise


class Released(Vocabulary):
    """What a mechanism releases (``Capabilities.releases``): a ROC curve and its AUC, or
    only the AUC.

    Examples:
        >>> Released("auc")
        <Released.AUC: 'auc'>
    """

    CURVE = "curve"
    AUC = "auc"


@dataclasses.dataclass(frozen=True)
class Capabilities:
    """What a mechanism can take and where it can run (each family's ``capabilities`` class
    attribute; an option may replace it on an instance, e.g. exact integer noise).

    Attributes:
      protects: [`Protected`][]: ``"labels"`` (label DP), ``"scores"`` (score DP, labels
        exact) or ``"nothing"`` (no noise).
      secure: a release is one client's *share*; only the secure sum of ``num_clients``
        shares carries the stated noise (takes ``num_clients`` and ``family``).
      integer_counts: integer noise on integer counts: fractional sample weights are refused
        (the fraction would show through the noise).
      unit_weights: every sample weight must be 1 (with noise): the release holds totals
        it calls label-free (bucket totals, their sum, the number of examples), or a
        guarantee that assumes a weight does not move with the label, and a weight that
        depends on the label (Keras' ``class_weight``) would break either
        (``docs/mechanisms.md``, "Sample weights").
      xla: the release runs under XLA (``jit_compile``).
      keras_metric: usable as ``DPAUC(mechanism=...)`` (the release needs only bucket counts).
      fed_eval: usable in ``build_fed_eval`` through
        ``dpauc_tf.federated.build_dpauc_metrics_aggregation_process`` (client-side noise;
        secure mechanisms: integer shares and a secure sum).
      federated: usable in [`dpauc_tf.federated.evaluate`][] (TFF).
      transforms_data: the client step changes labels or scores before counting, so every
        release needs a pass over the data (no release from counts alone).
      releases: [`Released`][]: ``"curve"`` (a ROC curve and its AUC) or ``"auc"`` (only
        the AUC).
    """

    protects: str = Protected.LABELS.value
    secure: bool = False
    integer_counts: bool = False
    unit_weights: bool = False
    xla: bool = True
    keras_metric: bool = True
    fed_eval: bool = False
    federated: bool = True
    transforms_data: bool = False
    releases: str = Released.CURVE.value

    def __post_init__(self) -> None:  # validated here, kept as the plain string
        object.__setattr__(self, "protects", Protected(self.protects).value)
        object.__setattr__(self, "releases", Released(self.releases).value)

    @property
    def weights(self) -> str:
        """The sample weights the mechanism takes with noise, as the docs table says it.

        Examples:
            >>> Capabilities(unit_weights=True).weights, Capabilities().weights
            ('1 only', '[0, max_weight]')
        """
        if self.unit_weights:
            return "1 only"
        if self.integer_counts:
            return "0 or 1"
        return "[0, max_weight]"

    def summary(self) -> str:
        """One line for help texts and the docs table."""
        parts = [f"protects {self.protects}", f"releases the {self.releases}"]
        if self.secure:
            parts.append("secure aggregation (noise shares)")
        if self.unit_weights:
            parts.append("weights of 1 only")
        elif self.integer_counts:
            parts.append("integer weights only")
        if not self.xla:
            parts.append("no XLA")
        if not self.keras_metric:
            parts.append("not a Keras metric")
        return ", ".join(parts)
