"""The release keywords a face accepts, held once: [`ReleaseArguments`][] -> one checked
[`ReleaseSpec`][dpauc_tf.mechanisms.release.ReleaseSpec].

Every face (Keras' metric, ``dpauc_tf.beam.PrivateAUC``, TFMA's metric, TFF's, Flower's and
Spark's evaluations, the command line) takes the same user-facing keywords (``mechanism``,
``epsilon``, ``num_thresholds``, ``threshold_grid``, ``delta``, ``mechanism_options``,
``seed`` and, one-vs-rest, ``num_classes`` and ``average``). They are held here as one frozen
value, and [`ReleaseArguments.spec`][] is the one recipe that turns them into a spec for a
deployment: the options checked for the face (a key its own arguments set is refused,
naming them), then the one ``ReleaseSpec.make`` (the registry's default where no mechanism is
named, the mechanism built once, one-line refusals). A face whose parameters are named as the
fields hands them over at once with [`ReleaseArguments.of`][]: the keywords are listed once,
in the face's signature.

Examples:
    >>> arguments = ReleaseArguments(epsilon=1.0, num_thresholds=10, seed=0)
    >>> spec = arguments.spec(Deployment.FEDERATED, entry="an example")
    >>> spec.mechanism, spec.num_thresholds, spec.seed
    ('rank-sum', 10, 0)
    >>> ReleaseArguments(epsilon=1.0, mechanism_options={"budget": "uniform"}).spec(entry="f")
    Traceback (most recent call last):
    ...
    ValueError: f: mechanism_options are a mechanism's options: name the mechanism
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from dpauc_tf.core.defaults import DEFAULT_NUM_THRESHOLDS
from dpauc_tf.mechanisms.laws import Deployment
from dpauc_tf.mechanisms.release import ReleaseSpec


@dataclasses.dataclass(frozen=True)
class ReleaseArguments:
    """The release keywords of a face, as the user gave them (not yet checked).

    Attributes:
      epsilon: one release's budget (``None``: no noise, NOT private).
      mechanism: a registered mechanism's name; ``None``: the registry's default for the
        deployment ([`default_mechanism`][dpauc_tf.mechanisms.registry.default_mechanism]).
      num_thresholds: ``T``, or ``"auto"`` (resolved from ``num_examples``).
      threshold_grid: ``"tf"``, ``"reference"`` or the inner thresholds.
      delta: for the mechanisms that take one.
      mechanism_options: the mechanism's constructor options (only with a named mechanism).
      seed: ``None`` (fresh entropy) or an int (reproducible).
      num_classes: ``None`` (binary) or ``C >= 2`` (one-vs-rest).
      average: a one-vs-rest release's headline average.
      max_weight: the declared bound of the sample weights (Keras' ``DPAUC(max_weight=...)``).

    Examples:
        >>> ReleaseArguments.of({"epsilon": 0.5, "repeats": 3, "seed": 1})
        ReleaseArguments(epsilon=0.5, mechanism=None, num_thresholds=200, threshold_grid='tf', delta=None, mechanism_options=None, seed=1, num_classes=None, average='macro', max_weight=1.0)
        >>> ReleaseArguments(epsilon=1.0, mechanism="histogram", num_thresholds=3).build().name
        'histogram'
    """

    epsilon: float | None
    mechanism: str | None = None
    num_thresholds: int | str = DEFAULT_NUM_THRESHOLDS
    threshold_grid: str | Sequence[float] = "tf"
    delta: float | None = None
    mechanism_options: Mapping[str, Any] | None = None
    seed: int | None = None
    num_classes: int | None = None
    average: str = "macro"
    max_weight: float = 1.0

    @classmethod
    def of(cls, keywords: Mapping[str, Any]) -> ReleaseArguments:
        """The fields found in ``keywords`` (a face's arguments, e.g. its ``locals()``, named
        as the fields); the others keep their defaults, every other key is ignored."""
        names = {field.name for field in dataclasses.fields(cls)}
        return cls(**{key: value for key, value in keywords.items() if key in names})

    def named(
        self, deployment: Deployment | str = Deployment.CENTRAL, *, needs_curve: bool = False
    ) -> ReleaseArguments:
        """These arguments with the mechanism named: the given one, or the spec's default for
        ``deployment`` and what is asked
        ([`ReleaseSpec.mechanism_for`][dpauc_tf.mechanisms.release.ReleaseSpec.mechanism_for]),
        for a face that needs the name before the spec (the command line's checks before
        TensorFlow, a face whose deployment is fixed and takes options for its default).

            >>> ReleaseArguments(epsilon=1.0).named(Deployment.SECURE).mechanism
            'secure-rank-sum'
            >>> ReleaseArguments(epsilon=1.0, delta=1e-6).named(needs_curve=True).mechanism
            'histogram'
        """
        mechanism = ReleaseSpec.mechanism_for(
            self.mechanism,
            delta=self.delta,
            needs_curve=needs_curve,
            deployment=deployment,
            num_classes=self.num_classes,
        )
        return dataclasses.replace(self, mechanism=mechanism)

    def checked_options(self, entry: str, shares_set_by: str) -> dict[str, Any]:
        """``mechanism_options`` parsed for the named mechanism
        (``registry.check_mechanism_options``:
        a key that ``entry``'s own arguments set is refused; ``shares_set_by`` says what
        sizes the secure shares there); refused without a named mechanism (the default
        depends on the deployment)."""
        if self.mechanism is None:
            if self.mechanism_options:
                raise ValueError(
                    f"{entry}: mechanism_options are a mechanism's options: name the mechanism"
                )
            return {}
        from dpauc_tf.mechanisms.registry import check_mechanism_options

        return check_mechanism_options(
            self.mechanism, self.mechanism_options, entry=entry, num_clients=shares_set_by
        )

    def spec(
        self,
        deployment: Deployment | str = Deployment.CENTRAL,
        *,
        entry: str | None = None,
        shares_set_by: str = "the clients that report",
        family: str | None = None,
        num_examples: float | None = None,
        needs_curve: bool = False,
    ) -> ReleaseSpec:
        """The one checked [`ReleaseSpec`][dpauc_tf.mechanisms.release.ReleaseSpec] of these
        arguments for ``deployment`` (which picks the default mechanism).

        Args:
          deployment: where the labels are.
          entry: the face, as a message names it; with it the options are checked for the
            face ([`checked_options`][]); ``None``: taken as given (already parsed).
          shares_set_by: what sets the number of secure shares at ``entry``.
          family: the noise family of a mechanism that offers several (a face's
            ``noise_family=``; ignored without noise).
          num_examples: resolves ``num_thresholds="auto"``.
          needs_curve: a curve is asked for (the default is then a curve mechanism).
        """
        if entry is None:
            options = dict(self.mechanism_options or {})
        else:
            options = self.checked_options(entry, shares_set_by)
        if family is not None and self.epsilon is not None:
            options["family"] = family
        grid = self.threshold_grid
        return ReleaseSpec.make(
            self.mechanism,
            epsilon=self.epsilon,
            num_thresholds=self.num_thresholds,
            threshold_grid=grid if isinstance(grid, str) else list(grid),
            delta=self.delta,
            options=options,
            seed=self.seed,
            num_examples=num_examples,
            num_classes=self.num_classes,
            average=self.average,
            needs_curve=needs_curve,
            deployment=deployment,
            max_weight=self.max_weight,
        )

    def build(self, num_clients: int | None = None):
        """The mechanism of these arguments (options as given) for ``num_clients`` clients:
        ``spec().build(num_clients)``, for the faces that release with a mechanism."""
        return self.spec().build(num_clients)
