"""``evaluate``: the Python entry point of federated DP-AUC over precomputed scores.

Written against the release protocol ([`dpauc_tf.mechanisms.release`][]): [`evaluate`][]
describes the release once, as a [`ReleaseSpec`][] (the registry's default mechanism for a
deployment with secure aggregation when none is named), and [`evaluate_spec`][] runs it:
client ``k``'s seed of repeat ``r`` is ``spec.seed_for("tff", r, k)``
([`dpauc_tf.noise.seeds.derive_seed`][]), TFF runs the clients' releases and their (secure)
sum, and [`finish_release`][] turns the sum into the one result type, [`AUCResult`][].
"""

from __future__ import annotations

import collections
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
from dpauc_tf.federated import computations
from dpauc_tf.mechanisms.arguments import ReleaseArguments
from dpauc_tf.mechanisms.laws import Deployment
from dpauc_tf.mechanisms.registry import require
from dpauc_tf.mechanisms.release import AUCResult, ReleaseSpec, check_repeats, finish_release
from dpauc_tf.noise.exact import rng_from_seed

SEED_KEY = "tff"  # client k's seed of repeat r: spec.seed_for(SEED_KEY, r, k)
DROPOUT_SEED_KEY = "dropout"  # the simulated dropout's draw: spec.seed_for(DROPOUT_SEED_KEY)


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
    mechanism: str | None = None,
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
    repeats: int = 1,
) -> AUCResult:
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
        (``dpauc_tf.list_mechanisms(federated=True)``); ``None``: the registry's default
        for clients summed by secure aggregation
        ([`default_mechanism`][dpauc_tf.mechanisms.registry.default_mechanism] with
        ``Deployment.SECURE``). Local mechanisms (``histogram``,
        ``tree-histogram``, ``paper``, ``rr``, ...): every client's report is private on its
        own and the noise variance of the sum grows linearly with the number of reporting
        clients. Secure mechanisms (``secure-histogram``, ``secure-tree-histogram``):
        integer noise shares + a secure sum, central-DP error whatever the number of
        clients. The AUC is the mechanism's estimate, the ROC points its curve
        (``docs/mechanisms.md``).
      epsilon: each client's label-DP budget for this evaluation; ``None`` = no noise (NOT
        private; equals ``tf.keras.metrics.AUC`` on the pooled data for the ``"tf"`` grid).
      num_thresholds: ``T``. threshold_grid: ``"tf"``, ``"reference"`` or an explicit list.
      delta: for ``paper-gaussian``, and for ``secure-histogram`` / ``secure-tree-histogram``
        with ``noise_family="skellam"``.
      seed: ``None`` draws every client's seed from OS entropy; an int makes the run
        reproducible (per-client seeds derived from it are passed in as CLIENTS data).
      dropout: fraction of clients that do not report: ``floor(dropout * K)`` clients chosen
        at random (from the spec's seed: reproducible for an int ``seed``). The result
        says how many reported. ``secure-histogram`` sizes its noise shares for the clients
        expected to report, so the total noise is as stated.
      noise_family: ``"discrete-laplace"`` or ``"skellam"`` (secure mechanisms only; default:
        Skellam when ``delta`` is given, discrete Laplace otherwise).
      mechanism_options: further options of the mechanism's constructor (e.g.
        ``{"positive_rate": 0.25, "budget": "uniform"}``;
        `dpauc_tf.mechanisms.registry.mechanism_options` lists a mechanism's).
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
      repeats: independent evaluations (every client releases once per repeat; each one is
        accounted in ``result.epsilon_total``). More than one needs ``client_data`` to be a
        sequence or a callable (it is read once per repeat).

    Returns:
      An [`AUCResult`][]: the AUC of every repeat, ROC points (``fpr``/``tpr``, ``[R, 0]``
      for a mechanism that releases only the AUC), the epsilon and delta each client spent
      (achieved by the shares that reported), clients asked and reporting, the summed
      noisy counts.

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
    # options may be given for the federated default: the spec names it first
    arguments = ReleaseArguments.of(locals()).named(Deployment.SECURE)
    spec = arguments.spec(
        Deployment.SECURE,
        entry="dpauc_tf.federated.evaluate",
        shares_set_by="secure_shares= (default: the clients expected to report)",
        family=noise_family,
    )
    return evaluate_spec(
        spec,
        client_data,
        dropout=dropout,
        secure_bitwidth=secure_bitwidth,
        secure_shares=secure_shares,
        batch_size=batch_size,
        progress=progress,
        num_clients=num_clients,
        cohort_size=cohort_size,
        repeats=repeats,
    )


def evaluate_spec(
    spec: ReleaseSpec,
    client_data: Iterable | Callable[[], Iterable],
    *,
    dropout: float = 0.0,
    secure_bitwidth: int = computations.DEFAULT_BITWIDTH,
    secure_shares: int | None = None,
    batch_size: int = 4096,
    progress: bool = False,
    num_clients: int | None = None,
    cohort_size: int = DEFAULT_COHORT_SIZE,
    repeats: int = 1,
    confidence: float | None = None,
    ci_target: str = "population",
) -> AUCResult:
    """``repeats`` releases of ``spec`` over the clients in TFF: [`evaluate`][] once the
    release is described (the [`TFFBackend`][dpauc_tf.backends.tff.TFFBackend] calls this
    with the command line's spec). The mechanism is ``spec.build(shares)`` with ``shares``
    the clients expected to report (``secure_shares`` when given); the arguments are
    [`evaluate`][]'s, and ``confidence`` (e.g. 0.95) with ``ci_target`` asks
    [`finish_release`][] for the interval of every release (from the reports that arrived).

    Example (needs TFF):

    ```python
    spec = ReleaseArguments(None, "histogram", num_thresholds=100).spec()
    evaluate_spec(spec, [(np.array([0.1, 0.8]), np.array([0, 1]))]).auc   # 1.0
    ```
    """
    check_repeats(repeats)
    clients = client_data() if callable(client_data) else client_data
    known = _expected_count(clients, num_clients)
    if repeats > 1 and not callable(client_data) and not isinstance(clients, Sequence):
        raise ValueError(
            f"repeats={repeats} reads the clients once per repeat: pass a sequence or a "
            "callable that returns the clients, not a one-pass iterable"
        )
    if isinstance(cohort_size, bool) or not isinstance(cohort_size, int) or cohort_size < 1:
        raise ValueError(f"cohort_size must be a positive int, got {cohort_size!r}")
    if not 0.0 <= dropout < 1.0:
        raise ValueError(f"dropout must be in [0, 1), got {dropout}")
    secure = spec.epsilon is not None and spec.capabilities.secure
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
    shares = num_expected if secure_shares is None else secure_shares
    count_mechanism = spec.build(shares)
    reporting_set = _reporting_set(known, num_expected, dropout, spec)
    if count_mechanism.releases_from_summed_counts and secure:  # the rank sum: two rounds
        from dpauc_tf.federated.rank_sum import evaluate_rank_sum

        install_secure_sum_context()
        return evaluate_rank_sum(
            spec, count_mechanism, client_data, as_arrays=_as_client_arrays,
            cohort_size=cohort_size, batch_size=batch_size, secure_bitwidth=secure_bitwidth,
            repeats=repeats, reporting=reporting_set, confidence=confidence, ci_target=ci_target,
        )  # fmt: skip
    require(count_mechanism, "federated")
    secure = count_mechanism.capabilities.secure
    if secure:
        install_secure_sum_context()
    computation = _computation(
        count_mechanism, spec.thresholds, secure_bitwidth if secure else None
    )

    totals, num_examples = [], 0.0
    for repeat in range(repeats):
        if repeat:
            clients = client_data() if callable(client_data) else client_data
        total, num_seen, num_reporting, examples = _one_round(
            spec,
            repeat,
            clients,
            known,
            cohort_size,
            batch_size,
            reporting_set,
            computation,
            progress,
        )
        totals.append(total)
        num_examples = examples
    joined = {key: np.stack([total[key] for total in totals]) for key in sorted(totals[0])}
    return finish_release(
        spec,
        joined,
        num_examples=num_examples,
        num_clients=num_seen,
        num_reporting=num_reporting,
        mechanism=count_mechanism,  # its shares: finish_release asks its noise_shares
        confidence=confidence,
        ci_target=ci_target,
    )


def _reporting_set(known, num_expected, dropout, spec) -> set[int] | None:
    """The clients that report: ``None`` (all) without dropout, else ``num_expected`` of the
    ``known`` drawn from the spec's seed ``spec.seed_for("dropout")`` (fresh entropy for a
    spec without a seed)."""
    if dropout <= 0:
        return None
    rng = rng_from_seed(spec.seed_for(DROPOUT_SEED_KEY))
    return set(rng.choice(known, size=num_expected, replace=False).tolist())


def _one_round(
    spec, repeat, clients, known, cohort_size, batch_size, reporting_set, computation, progress
):
    """One evaluation: every cohort's run of the TFF computation, summed at the server.
    Returns the sum, the clients seen and reporting, and the reporting clients' examples."""
    total, num_seen, num_reporting, num_examples = None, 0, 0, 0.0
    bar = tqdm.tqdm(total=known, desc="clients", disable=not progress)
    for cohort in _cohorts(clients, cohort_size):
        start, num_seen = num_seen, num_seen + len(cohort)
        if known is not None and num_seen > known:
            raise ValueError(f"client_data yielded more than num_clients={known} clients")
        arrays = [
            _as_client_arrays(item, batch_size, index=start + i) for i, item in enumerate(cohort)
        ]
        chosen = [
            i for i in range(len(cohort)) if reporting_set is None or start + i in reporting_set
        ]
        bar.update(len(cohort))
        if not chosen:
            continue
        # client k's seed depends only on (seed, repeat, k): a prefix property
        seeds = [spec.seed_for(SEED_KEY, repeat, start + i).numpy() for i in chosen]
        out = computation([arrays[i] for i in chosen], seeds)
        release = {key: np.asarray(value, np.float64) for key, value in out["release"].items()}
        total = release if total is None else {key: total[key] + release[key] for key in total}
        num_reporting += int(out["num_reporting"])
        num_examples += float(sum(arrays[i]["score"].size for i in chosen))
    bar.close()
    if num_seen == 0:
        raise ValueError("need at least one client (client_data yielded none)")
    if known is not None and num_seen != known:
        raise ValueError(f"client_data yielded {num_seen} clients, not num_clients={known}")
    if total is None:
        raise ValueError("no client reported")
    return total, num_seen, num_reporting, num_examples


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


def iter_client_data(
    scores: np.ndarray, labels: np.ndarray, client_ids: np.ndarray, num_clients: int
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Like [`client_data_from_partition`][], one client at a time (a generator)."""
    from dpauc_tf.core.partitions import client_slices

    scores, labels = np.asarray(scores).ravel(), np.asarray(labels).ravel()
    for idx in client_slices(client_ids, num_clients):
        yield scores[idx], labels[idx]
