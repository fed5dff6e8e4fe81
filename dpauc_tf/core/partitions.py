"""Splitting a test set among ``K`` federated clients (pure NumPy, no TensorFlow).

Every function returns one client id in ``[0, K)`` per example, so that clients may be
unequal in size or empty (an empty client still reports, with all-zero counts):

* `iid_partition`: each example goes to a uniformly random client (the paper's IID
  setting; the reference code's ``randint(0, K)``).
* `non_iid_partition`: examples sorted by score and cut into ``K`` contiguous blocks of
  (nearly) equal size, ``client = int(rank / (n / K))`` as in the reference code: client 0
  holds the lowest scores.
* `label_skewed_partition`: each client gets a share of the positives drawn from a
  Dirichlet distribution (``concentration`` small = strongly skewed), the negatives spread
  uniformly.

``seed=None`` uses fresh operating-system entropy; an integer makes the split reproducible.

    >>> import numpy as np
    >>> ids = non_iid_partition(np.array([0.9, 0.1, 0.5, 0.3]), num_clients=2)
    >>> ids.tolist()
    [1, 0, 1, 0]
    >>> client_slices(ids, num_clients=3)[2].size
    0
"""

from __future__ import annotations

import numpy as np

from dpauc_tf.core.vocabulary import Vocabulary


class Partition(Vocabulary):
    """How examples are split among clients (`partition`'s ``kind``; module docstring).

    Examples:
        >>> Partition("non-iid")
        <Partition.NON_IID: 'non-iid'>
    """

    IID = "iid"
    NON_IID = "non-iid"
    LABEL_SKEWED = "label-skewed"


def _check_num_clients(num_clients: int) -> int:
    if isinstance(num_clients, bool) or not isinstance(num_clients, (int, np.integer)):
        raise TypeError(f"num_clients must be an int, got {num_clients!r}")
    if num_clients < 1:
        raise ValueError(f"num_clients must be >= 1, got {num_clients}")
    return int(num_clients)


def iid_partition(num_examples: int, num_clients: int, seed: int | None = None) -> np.ndarray:
    """Client id of each example, drawn uniformly from ``[0, num_clients)``."""
    num_clients = _check_num_clients(num_clients)
    if num_examples < 0:
        raise ValueError(f"num_examples must be >= 0, got {num_examples}")
    return np.random.default_rng(seed).integers(0, num_clients, size=int(num_examples))


def non_iid_partition(scores: np.ndarray, num_clients: int) -> np.ndarray:
    """Client id of each example: sort by score, ``K`` contiguous blocks of equal size.

    Ties are broken by position (stable sort), so the split is deterministic.
    """
    num_clients = _check_num_clients(num_clients)
    scores = np.asarray(scores).ravel()
    n = scores.size
    ranks = np.empty(n, dtype=np.int64)
    ranks[np.argsort(scores, kind="stable")] = np.arange(n)
    if n == 0:
        return ranks
    # int(rank / (n / K)) with integer arithmetic (exact, and never K for rank n - 1).
    return (ranks * num_clients) // n


def label_skewed_partition(
    labels: np.ndarray,
    num_clients: int,
    concentration: float = 0.5,
    seed: int | None = None,
) -> np.ndarray:
    """Client id of each example with a Dirichlet(``concentration``) share of the positives.

    Negatives go to uniformly random clients; positives to client ``k`` with probability
    ``w_k``, ``w ~ Dirichlet(concentration * 1_K)``. Small concentrations give a few clients
    most positives (and many clients none).
    """
    num_clients = _check_num_clients(num_clients)
    if not concentration > 0:
        raise ValueError(f"concentration must be > 0, got {concentration}")
    labels = np.asarray(labels).ravel()
    if not np.all((labels == 0) | (labels == 1)):
        raise ValueError("labels must be 0 or 1")
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, num_clients, size=labels.size)
    positive = labels == 1
    weights = rng.dirichlet(np.full(num_clients, float(concentration)))
    ids[positive] = rng.choice(num_clients, size=int(positive.sum()), p=weights)
    return ids


def partition(
    kind: str,
    scores: np.ndarray,
    labels: np.ndarray,
    num_clients: int,
    seed: int | None = None,
    **kwargs,
) -> np.ndarray:
    """Client ids by partition name (``"iid"``, ``"non-iid"``, ``"label-skewed"``)."""
    kind = Partition(kind)
    if kind == "iid":
        return iid_partition(np.asarray(scores).size, num_clients, seed)
    if kind == "non-iid":
        return non_iid_partition(scores, num_clients)
    return label_skewed_partition(labels, num_clients, seed=seed, **kwargs)


def client_data_from_partition(
    scores: np.ndarray, labels: np.ndarray, client_ids: np.ndarray, num_clients: int
) -> list[tuple[np.ndarray, np.ndarray]]:
    """``(scores, labels)`` of every client from a partition (``client_ids``)."""
    scores, labels = np.asarray(scores).ravel(), np.asarray(labels).ravel()
    return [(scores[idx], labels[idx]) for idx in client_slices(client_ids, num_clients)]


def client_slices(client_ids: np.ndarray, num_clients: int) -> list[np.ndarray]:
    """Indices of the examples of every client, ``num_clients`` arrays (some may be empty)."""
    num_clients = _check_num_clients(num_clients)
    client_ids = np.asarray(client_ids).ravel()
    if client_ids.size and (client_ids.min() < 0 or client_ids.max() >= num_clients):
        raise ValueError(f"client ids must be in [0, {num_clients})")
    order = np.argsort(client_ids, kind="stable")
    bounds = np.searchsorted(client_ids[order], np.arange(num_clients + 1))
    return [order[bounds[k] : bounds[k + 1]] for k in range(num_clients)]
