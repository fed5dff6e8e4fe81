"""The backends: where a release runs, each written against the one
[`ReleaseSpec`][dpauc_tf.mechanisms.release.ReleaseSpec] and registered like a mechanism.

A backend receives the spec (the release: mechanism, epsilon, grid, seed, options) and the
data ([`EvaluationData`][]: per-client counts, the examples, or the files an engine reads
itself), runs the spec's releases where the data lives, and returns the one result type,
[`AUCResult`][dpauc_tf.mechanisms.release.AUCResult]. It never builds a mechanism or a spec of
its own, never seeds and never post-processes: the spec's ``build``, ``derive_seed`` and
``finish_release`` do that for every backend alike.

Adding a backend is one module under ``dpauc_tf/backends/`` (a [`Backend`][] subclass) and one
line in `REGISTRY`. Importing this package imports no engine (TensorFlow Federated, Flower,
Beam, Spark): [`backend`][] imports the module named in the registry when it is asked for.

Examples:
    >>> [name.value for name in BackendName]
    ['simulate', 'tff', 'flower', 'beam', 'spark']
    >>> backend_class("simulate").federated
    False
"""

from __future__ import annotations

import abc
import dataclasses
import enum
import importlib
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

if TYPE_CHECKING:  # the types only: importing them loads TensorFlow
    from dpauc_tf.io.scores import ScoreSet
    from dpauc_tf.mechanisms.release import AUCResult, ReleaseSpec


class BackendName(str, enum.Enum):
    """The backends of ``dpauc evaluate --backend`` and of [`backend`][]."""

    SIMULATE = "simulate"
    TFF = "tff"
    FLOWER = "flower"
    BEAM = "beam"
    SPARK = "spark"

    def __str__(self) -> str:
        return self.value


@dataclasses.dataclass(frozen=True)
class ScoreSource:
    """Score file(s) and how to read them (for the engines that read files themselves)."""

    path: str
    score_column: str = "score"
    label_column: str = "label"
    client_column: str | None = None  # client ids only from a named column
    from_logits: bool = False


@dataclasses.dataclass(frozen=True)
class EvaluationData:
    """What a backend releases from.

    Attributes:
      num_clients: the number of clients ``K`` (1: one data holder).
      pos: int64 ``[K, T + 1]`` per-client positive counts on the spec's counting grid
        (``None`` where the data were not counted on the driver).
      neg: the negative counts, the same shape.
      examples: the validated examples (labels, scores, the file's client ids), when they
        were kept in memory.
      client_ids: each example's client, where they differ from the file's (a partition
        ``--clients K``); ``None``: the file's, else one client.
      source: the files, for an engine that reads them itself (Beam, Spark).
      max_rows_in_memory: the limit that left ``examples`` out (for the error that says so).

    Examples:
        >>> data = EvaluationData(num_clients=1, pos=np.array([[0, 2]]), neg=np.array([[1, 0]]))
        >>> data.examples_by_client("--backend tff")
        Traceback (most recent call last):
        ...
        ValueError: --backend tff needs every example in memory, and they were not kept; ...
    """

    num_clients: int = 1
    pos: np.ndarray | None = None
    neg: np.ndarray | None = None
    examples: ScoreSet | None = None
    client_ids: np.ndarray | None = None
    source: ScoreSource | None = None
    max_rows_in_memory: int | None = None

    @classmethod
    def from_counted(cls, counted: Any, client_ids=None, num_clients: int = 1) -> EvaluationData:
        """From one counting pass ([`dpauc_tf.io.streaming.CountedScores`][])."""
        return cls(
            num_clients=num_clients,
            pos=counted.pos,
            neg=counted.neg,
            examples=counted.examples,
            client_ids=client_ids,
            max_rows_in_memory=counted.max_rows_in_memory,
        )

    def kept_examples(self, what: str) -> ScoreSet:
        """The examples; a one-line ``ValueError`` naming ``what`` needs them otherwise."""
        if self.examples is None:
            limit = (
                "they were not kept; ..."
                if self.max_rows_in_memory is None
                else f"the file has more than --max-rows-in-memory {self.max_rows_in_memory} "
                "rows; raise that limit, or use a client column (--client-column) and a "
                "mechanism that does not transform the data"
            )
            raise ValueError(f"{what} needs every example in memory, and {limit}")
        return self.examples

    def examples_by_client(self, what: str) -> tuple[ScoreSet, np.ndarray]:
        """The examples and each one's client id (the partition's, else the file's, else
        one client) for a backend that starts from the examples rather than the counts."""
        data = self.kept_examples(what)
        client_ids = self.client_ids
        if client_ids is None:
            client_ids = (
                data.clients if data.clients is not None else np.zeros(data.labels.size, np.int64)
            )
        return data, client_ids

    def client_partition(self, what: str) -> list:
        """Every client's ``(scores, labels)``, clients ``0..K-1`` in order."""
        from dpauc_tf.core.partitions import client_data_from_partition

        data, client_ids = self.examples_by_client(what)
        return client_data_from_partition(data.scores, data.labels, client_ids, self.num_clients)


class Backend(abc.ABC):
    """Runs a spec's releases where the data live; one subclass per backend.

    Class attributes say what it can do (read by the command line before any work):
    ``federated`` (the data stay on clients: the federated default mechanism applies),
    ``reads_files`` (it reads ``EvaluationData.source`` with its own IO), ``requires`` (the
    module it needs and the extra that installs it). Every backend takes ``confidence``:
    its result carries the interval its finish computed (``finish_release``).
    """

    name: ClassVar[BackendName]
    federated: ClassVar[bool] = False
    reads_files: ClassVar[bool] = False
    requires: ClassVar[tuple[str, str] | None] = None  # (module, extra)

    @classmethod
    def check_installed(cls) -> None:
        """A one-line ``ImportError`` naming the install command when ``requires`` is
        missing."""
        if cls.requires is None:
            return
        import importlib.util

        from dpauc_tf.core.extras import install_hint

        module, extra = cls.requires
        if importlib.util.find_spec(module) is None:
            raise ImportError(f"--backend {cls.name.value} needs {module}: {install_hint(extra)}")

    @abc.abstractmethod
    def evaluate(
        self,
        spec: ReleaseSpec,
        data: EvaluationData,
        *,
        repeats: int = 1,
        confidence: float | None = None,
        ci_target: str = "population",
    ) -> AUCResult:
        """``repeats`` releases of ``spec`` on ``data``: one [`AUCResult`][]."""


# name -> "module:class": one line per backend; the module is imported when asked for.
REGISTRY: dict[BackendName, str] = {
    BackendName.SIMULATE: "dpauc_tf.backends.simulate:SimulateBackend",
    BackendName.TFF: "dpauc_tf.backends.tff:TFFBackend",
    BackendName.BEAM: "dpauc_tf.backends.beam:BeamBackend",
    BackendName.SPARK: "dpauc_tf.backends.spark:SparkBackend",
    BackendName.FLOWER: "dpauc_tf.backends.flower:FlowerBackend",
}


def backend_class(name: str | BackendName) -> type[Backend]:
    """The [`Backend`][] registered as ``name``; a one-line ``ValueError`` for an unknown
    name."""
    try:
        key = BackendName(name)
        entry = REGISTRY[key]
    except (ValueError, KeyError):
        known = ", ".join(n.value for n in REGISTRY)
        raise ValueError(f"unknown backend {str(name)!r}; registered: {known}") from None
    module, _, attribute = entry.partition(":")
    return getattr(importlib.import_module(module), attribute)


def backend(name: str | BackendName, **settings: Any) -> Backend:
    """An instance of backend ``name`` with its engine's own ``settings`` (Beam's
    ``options``, Spark's ``master``, Flower's ``round_timeout``...)."""
    return backend_class(name)(**settings)
