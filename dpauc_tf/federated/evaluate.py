"""``evaluate``: the Python entry point of federated DP-AUC over precomputed scores."""

from __future__ import annotations

import collections
import dataclasses
import itertools
import math
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence, Sized
from typing import Any

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff
import tqdm

from dpauc_tf.core.defaults import DEFAULT_NUM_THRESHOLDS
from dpauc_tf.core.partitions import client_data_from_partition  # noqa: F401 (re-exported)
from dpauc_tf.core.thresholds import Thresholds
from dpauc_tf.federated import computations
from dpauc_tf.mechanisms.base import achieved_statement
from dpauc_tf.mechanisms.registry import (
    check_mechanism_options,
    get_mechanism,
    mechanism_spec,
    require,
)
from dpauc_tf.noise.seeds import make_seed, split_seed
from dpauc_tf.privacy.statement import PrivacyStatement


@dataclasses.dataclass(frozen=True)
class RocPoints:
    """ROC points sorted by increasing FPR (then TPR), with the threshold of each point."""

    fpr: np.ndarray
    tpr: np.ndarray
    thresholds: np.ndarray


@dataclasses.dataclass(frozen=True)
class FederatedEvaluation:
    """What the server learns from one federated evaluation.

    Attributes:
      auc: the (private) AUC; for ``rr`` the debiased estimate.
      roc: the ROC points (for ``rr``: of the flipped labels, not debiased).
      mechanism: mechanism name (``"none"`` when ``epsilon`` is None).
      epsilon: epsilon each client spends on this evaluation (label DP): the mechanism's
        proven figure (``paper``: half the claimed one); for the secure mechanisms the
        epsilon actually achieved by the shares that reported; ``inf`` without noise.
      delta: the matching delta.
      statement: neighbouring relation, sensitivity, noise and guarantee of the release;
        ``statement.epsilon == epsilon`` always (under dropout the statement is the achieved
        guarantee, and its noise text says how many shares reported).
      num_clients: clients asked to report.
      num_reporting: clients whose report was summed.
      noisy_counts: the server's summed release (NumPy arrays; e.g. ``pos``/``neg``).
    """

    auc: float
    roc: RocPoints
    mechanism: str
    epsilon: float
    delta: float
    statement: PrivacyStatement
    num_clients: int
    num_reporting: int
    noisy_counts: dict[str, np.ndarray]


_COMPUTATIONS: dict[tuple, tff.Computation] = {}
_SECURE_CONTEXT: dict = {}  # the test context we installed, if any
DEFAULT_COHORT_SIZE = 1000  # clients per run of the TFF computation


def _computation(mechanism, thresholds, secure_bitwidth) -> tff.Computation:
    key = (type(mechanism).__name__, repr(mechanism), thresholds, secure_bitwidth)
    if key not in _COMPUTATIONS:
        _COMPUTATIONS[key] = computations.build_summed_release(
            mechanism, thresholds, secure_bitwidth=secure_bitwidth
        )
    return _COMPUTATIONS[key]


def install_secure_sum_context() -> None:
    """Installs TFF's test context, which runs ``federated_secure_sum_bitwidth`` in simulation.

    It lowers the secure sum to an **ordinary sum**: the simulation checks the arithmetic of
    secure aggregation, not its cryptography.
    """
    stack = tff.framework.get_context_stack()
    # Re-install when another context replaced ours (e.g. shutdown_tff_workers()).
    installed = _SECURE_CONTEXT.get("context")
    if installed is None or installed() is not stack.current:
        tff.backends.test.set_sync_test_cpp_execution_context()
        # A weak reference: holding the context would keep its worker process alive.
        _SECURE_CONTEXT["context"] = weakref.ref(stack.current)


def _check_client_values(index: int, scores: np.ndarray, labels: np.ndarray) -> None:
    """Raises ``ValueError`` naming client ``index`` for labels not 0/1, scores outside [0, 1]."""
    if np.isnan(labels).any() or np.isnan(scores).any():
        raise ValueError(f"client {index}: scores and labels must not be NaN")
    bad = (labels != 0) & (labels != 1)
    if bad.any():
        raise ValueError(
            f"client {index}: labels must be 0 or 1; {int(bad.sum())} are not "
            f"(e.g. {labels[bad][0]:g})"
        )
    bad = (scores < 0) | (scores > 1)
    if bad.any():
        raise ValueError(
            f"client {index}: scores must be in [0, 1]; {int(bad.sum())} are not "
            f"(e.g. {scores[bad][0]:g})"
        )


def _dataset_batches(index: int, dataset: tf.data.Dataset, batch_size: int) -> tf.data.Dataset:
    """A client's dataset as ``(score, label)`` flat float32 batches (scalars batched)."""
    spec = dataset.element_spec
    if isinstance(spec, dict):
        dataset = dataset.map(lambda e: (e["score"], e["label"]))
    elif not (isinstance(spec, tuple) and len(spec) == 2):
        raise TypeError(
            f"client {index}: a client dataset must yield (score, label) pairs or "
            f"{{'score', 'label'}} dicts, got element_spec {spec}"
        )
    if dataset.element_spec[0].shape.rank == 0:
        dataset = dataset.batch(batch_size)
    return dataset.map(
        lambda s, y: (
            tf.reshape(tf.cast(s, tf.float32), [-1]),
            tf.reshape(tf.cast(y, tf.float32), [-1]),
        )
    )


def _as_client_arrays(item, batch_size: int, index: int = 0) -> collections.OrderedDict:
    """One client's data as ``{score, label}`` float32 vectors (the TFF computation's input),
    checked.

    A ``tf.data.Dataset`` is read here, once, batch by batch (scalar elements in batches of
    ``batch_size``). Raises ``ValueError`` naming client ``index`` for labels other than 0/1,
    scores outside [0, 1] or NaN (checked here, in Python, not as an error inside TFF's
    worker).
    """
    if isinstance(item, tf.data.Dataset):
        score_parts, label_parts = [], []
        for score_batch, label_batch in _dataset_batches(index, item, batch_size):
            score_parts.append(score_batch.numpy())
            label_parts.append(label_batch.numpy())
            if score_parts[-1].size != label_parts[-1].size:
                raise ValueError(
                    f"client {index}: scores and labels differ in length in a batch: "
                    f"{score_parts[-1].size} vs {label_parts[-1].size}"
                )
        scores = np.concatenate(score_parts) if score_parts else np.zeros(0, np.float32)
        labels = np.concatenate(label_parts) if label_parts else np.zeros(0, np.float32)
        _check_client_values(index, scores.astype(np.float64), labels.astype(np.float64))
        return collections.OrderedDict(score=scores, label=labels)
    if isinstance(item, (tuple, list)) and len(item) == 2:
        try:
            scores = np.asarray(item[0], dtype=np.float64).ravel()
            labels = np.asarray(item[1], dtype=np.float64).ravel()
        except (TypeError, ValueError) as error:
            raise ValueError(
                f"client {index}: scores and labels must be numbers ({error})"
            ) from None
        if scores.shape != labels.shape:
            raise ValueError(
                f"client {index}: scores and labels differ in length: {scores.size} vs {labels.size}"
            )
        _check_client_values(index, scores, labels)
        return collections.OrderedDict(
            score=scores.astype(np.float32), label=labels.astype(np.float32)
        )
    raise TypeError(
        f"client {index}: each client's data must be a tf.data.Dataset or a (scores, labels) "
        f"pair, got {type(item).__name__}"
    )


def evaluate(
    client_data: Iterable | Callable[[], Iterable],
    *,
    mechanism: str = "histogram",
    epsilon: float | None,
    num_thresholds: int = DEFAULT_NUM_THRESHOLDS,
    delta: float | None = None,
    threshold_grid: str | Sequence[float] = "tf",
    seed: int | None = None,
    dropout: float = 0.0,
    noise_family: str | None = None,
    secure_bitwidth: int = computations.DEFAULT_BITWIDTH,
    secure_shares: int | None = None,
    batch_size: int = 4096,
    progress: bool = False,
    num_clients: int | None = None,
    cohort_size: int = DEFAULT_COHORT_SIZE,
    mechanism_options: Mapping[str, Any] | None = None,
) -> FederatedEvaluation:
    """Federated, label-DP AUC and ROC of precomputed scores held by clients (one evaluation).

    Each client counts its examples per score bucket, applies the mechanism's client-side
    noise (or, for ``rr``, flips its labels first) and reports; the server sums the reports
    (``tff.federated_sum``; ``tff.federated_secure_sum_bitwidth`` for secure mechanisms)
    and computes the ROC points and the AUC without adding noise.

    Clients are processed in **cohorts** of ``cohort_size``: each cohort is one run of the TFF
    computation (each client adds its own noise, or its own share, as in one run), and the
    server adds up the cohorts' summed releases before it computes the curve once. Only one
    cohort's data is held at a time, so ``client_data`` may be a generator or a sampler.
    The privacy is the same as in one run: every client releases once, and for secure
    mechanisms the epsilon is the one achieved by all the shares that reported.

    Args:
      client_data: the clients, one item each: a ``tf.data.Dataset`` of ``(score, label)``
        pairs or ``{"score", "label"}`` dicts (scalars or batches), or a ``(scores, labels)``
        pair of arrays. A sequence, any iterable (a generator), or a no-argument callable
        returning one (a sampler); items are read once, cohort by cohort. Clients may be
        empty. Scores in [0, 1], labels 0/1.
      mechanism: a registered name usable here
        (``dpauc_tf.list_mechanisms(federated=True)``). Local mechanisms (``histogram``,
        ``tree-histogram``, ``paper``, ``rr``, ...): every client's report is private on its
        own and the noise variance of the sum grows linearly with the number of reporting
        clients. Secure mechanisms (``secure-histogram``, ``secure-tree-histogram``):
        integer noise shares + a secure sum, central-DP error whatever the number of
        clients. The AUC is the mechanism's estimate, the ROC points its curve
        (``docs/mechanisms.md``).
      epsilon: each client's label-DP budget for this evaluation; ``None`` = no noise (NOT
        private; equals ``tf.keras.metrics.AUC`` on the pooled data for the ``"tf"`` grid).
      num_thresholds: ``T``.
      threshold_grid: ``"tf"``, ``"reference"`` or an explicit list.
      delta: for ``paper-gaussian``, and for ``secure-histogram`` / ``secure-tree-histogram``
        with ``noise_family="skellam"``.
      seed: ``None`` draws every client's seed from OS entropy; an int makes the run
        reproducible (per-client seeds derived from it are passed in as CLIENTS data).
      dropout: fraction of clients that do not report: ``floor(dropout * K)`` clients chosen
        at random. The result says how many reported. ``secure-histogram`` sizes its noise
        shares for the clients expected to report, so the total noise is as stated.
      noise_family: ``"discrete-laplace"`` or ``"skellam"`` (secure mechanisms only; default:
        Skellam when ``delta`` is given, discrete Laplace otherwise).
      mechanism_options: further options of the mechanism's constructor (e.g.
        ``{"positive_rate": 0.25, "budget": "uniform"}``;
        [`mechanism_options`][dpauc_tf.mechanisms.registry.mechanism_options] lists a mechanism's).
      secure_bitwidth: bitwidth of the modular secure sum (totals must fit in
        ``[-2^(b-1), 2^(b-1))``).
      secure_shares: number of reports the secure mechanisms' noise shares are sized for
        (default: the clients expected to report). If fewer report, the total noise falls
        short and the result's ``epsilon`` is the (larger) epsilon actually achieved.
      batch_size: batch size for reading a client dataset of single examples (every client's
        data reaches TFF as one score vector and one label vector).
      progress: show a progress bar over the clients.
      num_clients: the number of clients ``client_data`` yields, needed when it has no
        ``len()`` and ``dropout`` is used or a secure mechanism sizes its shares (else
        optional; a different count raises ``ValueError``).
      cohort_size: clients per run of the TFF computation (the unit of memory; it does not
        change the result: integer counts are summed exactly).

    Returns:
      A [`FederatedEvaluation`][] (AUC, ROC points with thresholds, epsilon and delta
      spent per client, number of clients reporting, the summed noisy counts).

    Raises:
      ValueError: unknown mechanism, bad epsilon/delta/dropout/seed, no client (an empty
        iterable) or none reporting, a count different from ``num_clients``, or a client
        whose labels are not 0/1 or whose scores are outside [0, 1] or NaN (the message names
        the client's index; every client of a cohort is checked, reporting or not, before
        that cohort runs in TFF).

    Example (needs TFF; noise off, so the AUC equals TensorFlow's on the pooled data):

    ```python
    clients = [(np.array([0.1, 0.8]), np.array([0, 1])), (np.array([0.4]), np.array([1]))]
    out = evaluate(clients, mechanism="histogram", epsilon=None, num_thresholds=100)
    out.auc, out.num_reporting   # (1.0, 2)
    ```
    """
    clients = client_data() if callable(client_data) else client_data
    known = _expected_count(clients, num_clients)
    if isinstance(cohort_size, bool) or not isinstance(cohort_size, int) or cohort_size < 1:
        raise ValueError(f"cohort_size must be a positive int, got {cohort_size!r}")
    if not 0.0 <= dropout < 1.0:
        raise ValueError(f"dropout must be in [0, 1), got {dropout}")
    thresholds = Thresholds.make(num_thresholds, threshold_grid)
    secure = epsilon is not None and mechanism_spec(mechanism).capabilities.secure
    num_expected = None
    if known is not None:
        num_expected = known - math.floor(dropout * known)
        if num_expected < 1:
            raise ValueError(f"dropout={dropout} leaves no client to report")
    elif dropout > 0 or (secure and secure_shares is None):
        raise ValueError(
            "client_data has no len(): pass num_clients= (needed for dropout and for the "
            "shares of secure mechanisms)"
        )
    options = check_mechanism_options(
        mechanism,
        mechanism_options,
        entry="dpauc_tf.federated.evaluate",
        num_clients="secure_shares= (default: the clients expected to report)",
    )
    if noise_family is not None and epsilon is not None:
        options["family"] = noise_family
    count_mechanism = get_mechanism(
        mechanism,
        epsilon=epsilon,
        num_thresholds=thresholds.num_thresholds,
        delta=delta,
        num_clients=num_expected if secure_shares is None else secure_shares,
        **options,
    )
    require(count_mechanism, "federated")
    secure = count_mechanism.capabilities.secure

    rng = np.random.default_rng(seed)
    base_seed = make_seed(seed) if seed is not None else None
    reporting_set = None
    if dropout > 0:
        reporting_set = set(rng.choice(known, size=num_expected, replace=False).tolist())
    if secure:
        install_secure_sum_context()
    computation = _computation(count_mechanism, thresholds, secure_bitwidth if secure else None)

    total, num_seen, num_reporting = None, 0, 0
    bar = tqdm.tqdm(total=known, desc="clients", disable=not progress)
    for cohort in _cohorts(clients, cohort_size):
        start, num_seen = num_seen, num_seen + len(cohort)
        if known is not None and num_seen > known:
            raise ValueError(f"client_data yielded more than num_clients={known} clients")
        arrays = [
            _as_client_arrays(item, batch_size, index=start + i) for i, item in enumerate(cohort)
        ]
        if base_seed is not None:  # client k's seed depends only on (seed, k): a prefix property
            seeds = split_seed(base_seed, num_seen).numpy()[start:]
        else:
            seeds = np.stack([make_seed(None).numpy() for _ in cohort])
        chosen = [
            i for i in range(len(cohort)) if reporting_set is None or start + i in reporting_set
        ]
        bar.update(len(cohort))
        if not chosen:
            continue
        out = computation([arrays[i] for i in chosen], [seeds[i] for i in chosen])
        release = {key: np.asarray(value, np.float64) for key, value in out["release"].items()}
        total = release if total is None else {key: total[key] + release[key] for key in total}
        num_reporting += int(out["num_reporting"])
    bar.close()
    if num_seen == 0:
        raise ValueError("need at least one client (client_data yielded none)")
    if known is not None and num_seen != known:
        raise ValueError(f"client_data yielded {num_seen} clients, not num_clients={known}")
    if total is None:
        raise ValueError("no client reported")
    # The server's step, once, on the sum of the cohorts' sums.
    curve = _server_curve(count_mechanism, thresholds)(
        collections.OrderedDict(sorted(total.items()))
    )
    fpr, tpr = np.asarray(curve["fpr"]), np.asarray(curve["tpr"])
    order = np.lexsort((tpr, fpr))  # by FPR, then TPR: the order of dpauc_tf.core.curve
    roc = RocPoints(fpr=fpr[order], tpr=tpr[order], thresholds=thresholds.as_array()[order])

    statement = achieved_statement(count_mechanism, num_reporting)
    return FederatedEvaluation(
        auc=float(curve["auc"]),
        roc=roc,
        mechanism=count_mechanism.name,
        epsilon=float(statement.epsilon),
        delta=float(statement.delta),
        statement=statement,
        num_clients=num_seen,
        num_reporting=num_reporting,
        noisy_counts=total,
    )


def _expected_count(clients, num_clients: int | None) -> int | None:
    """The number of clients: ``num_clients`` if given (checked), else ``len()`` if any."""
    if num_clients is not None:
        if isinstance(num_clients, bool) or not isinstance(num_clients, (int, np.integer)):
            raise TypeError(f"num_clients must be an int, got {num_clients!r}")
        if num_clients < 1:
            raise ValueError("need at least one client")
        return int(num_clients)
    if isinstance(clients, (tf.data.Dataset, str, bytes)) or not isinstance(clients, Iterable):
        raise TypeError(
            "client_data must be a sequence or iterable of clients (or a callable returning "
            f"one), got {type(clients).__name__}"
        )
    if isinstance(clients, Sized):
        if len(clients) < 1:
            raise ValueError("need at least one client")
        return len(clients)
    return None


def _cohorts(clients: Iterable, cohort_size: int) -> Iterator[list]:
    """Consecutive lists of at most ``cohort_size`` clients (one cohort in memory at a time)."""
    iterator = iter(clients)
    while True:
        cohort = list(itertools.islice(iterator, cohort_size))
        if not cohort:
            return
        yield cohort


def _server_curve(mechanism, thresholds) -> tff.Computation:
    """The server's step of the round ([`computations.build_server_curve`][]), cached."""
    key = ("server", type(mechanism).__name__, repr(mechanism), thresholds)
    if key not in _COMPUTATIONS:
        release_type = computations.release_type(mechanism, thresholds)
        _COMPUTATIONS[key] = computations.build_server_curve(mechanism, thresholds, release_type)
    return _COMPUTATIONS[key]


def iter_client_data(
    scores: np.ndarray, labels: np.ndarray, client_ids: np.ndarray, num_clients: int
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Like [`client_data_from_partition`][], one client at a time (a generator)."""
    from dpauc_tf.core.partitions import client_slices

    scores, labels = np.asarray(scores).ravel(), np.asarray(labels).ravel()
    for idx in client_slices(client_ids, num_clients):
        yield scores[idx], labels[idx]
