"""SecAgg+'s neighbourhoods: how many clients share each client's secrets, how many of
them it takes to rebuild one, and which groups of clients the server can unmask.

Flower's SecAgg+ (Bell et al. 2020, "Secure Single-Server Aggregation with
(Poly)Logarithmic Overhead") places the ``K`` clients on a ring in a random order (the
server shuffles them) and makes each client a neighbour of the ``(k - 1) / 2`` clients on
either side: ``k = num_shares`` is the size of a client's neighbourhood, itself included.
A client masks its vector with one pairwise mask per neighbour and one private mask, and
Shamir-shares the two secrets behind them among its neighbourhood; any
``t = reconstruction_threshold`` of the ``k`` shares rebuild a secret, fewer reveal
nothing. Flower's secret sharing runs in pure Python (``t * k`` field multiplications per
16 bytes of secret per client, ``t^2`` per rebuilt secret), so with ``k = K`` a round
costs ``O(K^3)``; with ``k = O(log K)`` it costs ``O(K log^2 K)``.

What each setting guarantees (honest-but-curious server; ``c`` clients colluding with it,
``d`` dropping out):

* **dropouts**: the round completes while every neighbourhood keeps ``t`` active clients,
  so up to ``k - t`` dropouts in any neighbourhood (with ``k = K``: ``K - t`` in all);
* **collusion**: ``c < t`` colluders never hold ``t`` shares of a client's secret;
* **only sums of groups**: the server can unmask exactly the sum of each connected group of
  the surviving honest clients (pairwise masks cancel only inside such a group). With
  ``k = K`` that is one group, the total; on the ring, whose connectivity is ``k - 1``, it
  is one group whenever ``c + d < k - 1``. When dropouts do split the ring,
  [`unmasked_groups`][] finds the groups and the result states the epsilon of the
  smallest (its noise has only that group's shares).

Bell et al. show that a random ring of degree ``O(log K)`` keeps these properties with
high probability for a constant fraction of colluding or dropped clients; the
deterministic bounds above hold for every ring.

    >>> SecAggSettings.for_clients(100)
    SecAggSettings(num_clients=100, num_shares=15, reconstruction_threshold=8)
    >>> SecAggSettings.for_clients(6)  # small: every client a neighbour of every other
    SecAggSettings(num_clients=6, num_shares=6, reconstruction_threshold=4)
    >>> sorted(unmasked_groups({1: {1, 2, 3}, 2: {1, 2, 3}, 3: {1, 2, 3}}, active={1, 3}))
    [2]
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable, Mapping


def default_num_shares(num_clients: int) -> int:
    """``k = 2 * ceil(log2 K) + 1`` (odd), or ``K`` (every client a neighbour of every
    other) when that is not smaller."""
    k = 2 * math.ceil(math.log2(max(int(num_clients), 2))) + 1
    return int(num_clients) if k >= num_clients else k


@dataclasses.dataclass(frozen=True)
class SecAggSettings:
    """Validated SecAgg+ settings for ``num_clients`` clients (see the module docstring).

    Attributes:
      num_clients: ``K``, the clients asked to report.
      num_shares: ``k``, a client's neighbourhood (itself included); odd, or ``K``.
      reconstruction_threshold: ``t``, shares needed to rebuild a secret; ``2 <= t <= k``.

    Examples:
        >>> s = SecAggSettings.for_clients(10, num_shares=5)
        >>> s.reconstruction_threshold, s.dropout_tolerance, s.max_colluders
        (3, 2, 2)
    """

    num_clients: int
    num_shares: int
    reconstruction_threshold: int

    @classmethod
    def for_clients(
        cls,
        num_clients: int,
        num_shares: int | float | None = None,
        reconstruction_threshold: int | float | None = None,
    ) -> SecAggSettings:
        """The settings for ``num_clients``; ``None`` takes the defaults
        ([`default_num_shares`][], a majority ``k // 2 + 1`` of the neighbourhood).

        Floats in ``(0, 1]`` are fractions, read as Flower's ``SecAggPlusWorkflow`` reads
        them (``num_shares``: of the clients, rounded, made odd; ``reconstruction_threshold``:
        of ``num_shares``, at least 2). Raises ``ValueError`` (one line) for anything else.
        """
        if isinstance(num_clients, bool) or int(num_clients) != num_clients or num_clients < 2:
            raise ValueError(f"SecAgg+ needs at least 2 clients, got {num_clients!r}")
        n = int(num_clients)
        if num_shares is None:
            k = default_num_shares(n)
        elif _is_fraction(num_shares, "num_shares"):
            k = round(num_shares * n)
            if k < n and k % 2 == 0:
                k += 1
            if k <= 2:
                k = n
        else:
            k = _checked_int(num_shares, "num_shares")
            if k > n:
                raise ValueError(f"num_shares must be at most the number of clients ({n}), got {k}")
            if k != n and k < 3:
                raise ValueError(
                    f"num_shares must be at least 3 (or the number of clients), got {k}"
                )
            if k != n and k % 2 == 0:
                raise ValueError(
                    "num_shares must be odd (the client and (num_shares - 1) / 2 neighbours on "
                    f"each side) or the number of clients ({n}), got {k}"
                )
        if reconstruction_threshold is None:
            t = k // 2 + 1
        elif _is_fraction(reconstruction_threshold, "reconstruction_threshold"):
            t = max(round(reconstruction_threshold * k), 2)
        else:
            t = _checked_int(reconstruction_threshold, "reconstruction_threshold")
            if not 2 <= t <= k:
                raise ValueError(
                    f"reconstruction_threshold must be in [2, num_shares = {k}], got {t}"
                )
        return cls(num_clients=n, num_shares=k, reconstruction_threshold=t)

    @property
    def dropout_tolerance(self) -> int:
        """Dropouts any one neighbourhood survives (``k - t``)."""
        return self.num_shares - self.reconstruction_threshold

    @property
    def max_colluders(self) -> int:
        """Colluding clients that can never rebuild an honest client's secret (``t - 1``)."""
        return self.reconstruction_threshold - 1

    @property
    def flower_arguments(self) -> dict[str, int | float]:
        """``num_shares`` and ``reconstruction_threshold`` as ``SecAggPlusWorkflow`` takes
        them (``1.0`` for "all": Flower refuses ``t = k`` as integers)."""
        full = self.num_shares == self.num_clients
        equal = self.reconstruction_threshold == self.num_shares
        return {
            "num_shares": 1.0 if full else self.num_shares,
            "reconstruction_threshold": 1.0 if equal else self.reconstruction_threshold,
        }


def _is_fraction(value, name: str) -> bool:
    if isinstance(value, float):
        if not (math.isfinite(value) and 0 < value <= 1):
            raise ValueError(f"{name} as a fraction must be in (0, 1], got {value!r}")
        return True
    return False


def _checked_int(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an integer or a fraction in (0, 1], got {value!r}")
    return int(value)


def unmasked_groups(neighbours: Mapping[int, Iterable[int]], active: Iterable[int]) -> list[int]:
    """Sizes of the groups of ``active`` clients whose sums the server can unmask: the
    connected components of the neighbourhood graph restricted to ``active`` (a client's
    pairwise masks cancel only against active neighbours' masks)."""
    active = set(active)
    seen: set[int] = set()
    sizes = []
    for start in sorted(active):
        if start in seen:
            continue
        seen.add(start)
        stack, size = [start], 0
        while stack:
            node = stack.pop()
            size += 1
            for other in neighbours.get(node, ()):
                if other in active and other not in seen:
                    seen.add(other)
                    stack.append(other)
        sizes.append(size)
    return sizes


def make_recording_workflow(
    on_graph: Callable[[dict[int, set[int]], set[int]], None], **workflow_args
):
    """A ``SecAggPlusWorkflow`` that shows ``on_graph`` the neighbourhoods and the clients
    whose masked vectors arrived, before unmasking (Flower's state is local to a round);
    ``on_graph`` returning ``False`` halts the workflow there: nothing is unmasked."""
    from flwr.server.workflow import SecAggPlusWorkflow

    class RecordingSecAggPlusWorkflow(SecAggPlusWorkflow):
        def unmask_stage(self, grid, context, state) -> bool:
            # unmask_stage edits the neighbour sets of dropped clients: copy them first
            go_on = on_graph(
                {nid: set(nbrs) for nid, nbrs in state.nid_to_neighbours.items()},
                set(state.active_node_ids),
            )
            if go_on is False:
                return False
            return super().unmask_stage(grid, context, state)

    return RecordingSecAggPlusWorkflow(**workflow_args)
