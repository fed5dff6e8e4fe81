"""Clients' reports in Beam: the ``CombineFn`` that sums them per slice, and the counter
every release increments (internal: `dpauc_tf.beam.release` and `dpauc_tf.beam.rank_sums`
share them)."""

from __future__ import annotations

import apache_beam as beam
import numpy as np

# Every release (a slice's central release, a client's report) increments this counter.
RELEASE_COUNTER = ("dpauc_tf.beam", "releases")


def count_release() -> None:
    """One more release on the Beam counter `RELEASE_COUNTER`."""
    beam.metrics.Metrics.counter(*RELEASE_COUNTER).inc()


class SumReports(beam.CombineFn):
    """Sums clients' reports ``(release, num_examples)`` of one slice (dicts of arrays,
    added key by key in their own dtype: int64 limbs stay exact), and counts them.

        >>> fn = SumReports()
        >>> acc = fn.add_input(fn.create_accumulator(), ({"a": np.array([1, 2])}, 3.0))
        >>> total, examples, clients = fn.add_input(acc, ({"a": np.array([5, 5])}, 1.0))
        >>> total["a"].tolist(), examples, clients
        ([6, 7], 4.0, 2)
    """

    def create_accumulator(self):
        return (None, 0.0, 0)

    def add_input(self, accumulator, report):
        total, examples, clients = accumulator
        release, num_examples = report
        if total is None:
            total = {key: np.asarray(value) for key, value in release.items()}
        else:
            total = {key: total[key] + value for key, value in release.items()}
        return (total, examples + num_examples, clients + 1)

    def merge_accumulators(self, accumulators):
        merged = self.create_accumulator()
        for total, examples, clients in accumulators:
            if total is None:
                merged = (merged[0], merged[1] + examples, merged[2] + clients)
                continue
            summed = total if merged[0] is None else {k: merged[0][k] + total[k] for k in total}
            merged = (summed, merged[1] + examples, merged[2] + clients)
        return merged

    def extract_output(self, accumulator):
        return accumulator
