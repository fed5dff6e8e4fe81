"""How far the Skellam figures sit above the truth (issue 30): the slack of a valid bound.

For ``secure-histogram`` with Skellam noise (``Skellam(mu, mu)`` on every count; a label flip
moves one count of each class by one) at the ledger's delta:

* ``statement``: the epsilon the mechanism states (``mu`` calibrated by the Renyi bound);
* ``exact``: the exact epsilon of one release, by bisection on the exact delta (a brute-force
  sum over both counts' noise, scipy's pmf, independent of dp-accounting);
* for ``k`` releases: the ledger's figure (``privacy_spent(k).best``: the smaller of the
  Renyi bound and the PLD from the pmf on dp-accounting's grid of 1e-4) and the PLD on a
  10x finer grid (1e-5), which is closer to the truth (both bound it from above).

Usage (from the repository root)::

    PYTHONPATH=. python benchmarks/bench_skellam_slack.py
    PYTHONPATH=. python benchmarks/bench_skellam_slack.py --epsilon 0.1 1 --releases 10 100
"""

from __future__ import annotations

import argparse
import math

import numpy as np
from scipy.stats import skellam

from dpauc_tf.mechanisms import get_mechanism
from dpauc_tf.privacy.skellam import skellam_event_pld


def exact_delta(epsilon: float, mu: float) -> float:
    """Exact delta(epsilon) of one release (pos[b] - 1, neg[b] + 1 under a flip)."""
    half = int(20 * math.sqrt(2 * mu)) + 20
    k = np.arange(-half, half + 1)
    p = skellam.pmf(k, mu, mu)
    q_pos, q_neg = skellam.pmf(k + 1, mu, mu), skellam.pmf(k - 1, mu, mu)
    joint_p = p[:, None] * p[None, :]
    joint_q = q_pos[:, None] * q_neg[None, :]
    return float(np.sum(np.clip(joint_p - math.exp(epsilon) * joint_q, 0, None)))


def exact_epsilon(mu: float, delta: float, high: float = 20.0) -> float:
    low = 0.0
    for _ in range(60):
        middle = (low + high) / 2
        low, high = (low, middle) if exact_delta(middle, mu) <= delta else (middle, high)
    return high


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epsilon", type=float, nargs="+", default=[0.1, 1.0, 8.0])
    parser.add_argument("--delta", type=float, default=1e-6)
    parser.add_argument("--releases", type=int, nargs="+", default=[10, 100])
    args = parser.parse_args()
    print("| epsilon | releases | stated / ledger | exact / finer PLD | slack |")
    print("|---|---|---|---|---|")
    for epsilon in args.epsilon:
        m = get_mechanism("secure-histogram", epsilon=epsilon, num_thresholds=10, delta=args.delta)
        mu = m.noise_scale
        stated, exact = m.statement().epsilon, exact_epsilon(mu, args.delta)
        print(f"| {epsilon:g} | 1 (statement) | {stated:.4f} | {exact:.4f} | "
              f"{stated / exact - 1:+.1%} |")  # fmt: skip
        for k in (1, *args.releases):
            ledger = m.privacy_spent(k, args.delta).best
            if k == 1:
                truth = exact
            else:
                one = skellam_event_pld([mu], 2.0, 2.0, value_discretization_interval=1e-5)
                truth = one.self_compose(k).get_epsilon_for_delta(args.delta)
            print(f"| {epsilon:g} | {k} | {ledger:.4f} | {truth:.4f} | {ledger / truth - 1:+.1%} |",
                  flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
