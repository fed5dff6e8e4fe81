"""colluding_epsilon(c) holds only below the secure aggregation's reconstruction threshold."""

import math

import pytest

from dpauc_tf.mechanisms import get_mechanism


@pytest.mark.parametrize(
    "name, options",
    [
        ("secure-histogram", {}),
        ("secure-histogram", {"family": "skellam", "delta": 1e-6}),
        ("secure-tree-histogram", {}),
    ],
)
def test_at_the_threshold_colluders_unmask_a_report_and_its_own_share_is_what_is_left(
    name, options
):
    """At c >= t colluders in a client's neighbourhood rebuild its secrets and read its report
    alone: its own share protects it, not the other honest ones. The figure said
    achieved_epsilon(K - c) whatever c (about 2 epsilon at K = 10, c = 4, where one share
    leaves about 5.6)."""
    m = get_mechanism(name, epsilon=1.0, num_thresholds=15, num_clients=10, **options)
    one_share = m.achieved_epsilon(1)
    assert one_share > 2 * m.achieved_epsilon(6)
    # below the threshold: the honest shares' figure, as before (and without a threshold)
    assert m.colluding_epsilon(3, threshold=4) == m.achieved_epsilon(7) == m.colluding_epsilon(3)
    # at and above it: one share's figure
    for colluding in (4, 5, 9):
        assert m.colluding_epsilon(colluding, threshold=4) == one_share
    assert m.colluding_epsilon(2, num_reporting=6, threshold=2) == one_share
    assert math.isinf(m.colluding_epsilon(10, threshold=4))  # nobody honest is left
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="threshold"):
            m.colluding_epsilon(1, threshold=bad)


def test_local_mechanisms_are_unchanged_by_collusion_and_the_threshold():
    local = get_mechanism("histogram", epsilon=1.0, num_thresholds=10)
    assert local.colluding_epsilon(9, 10, threshold=2) == 1.0


def test_the_docstring_states_the_assumption():
    doc = get_mechanism("secure-histogram", epsilon=1.0, num_thresholds=10).colluding_epsilon
    assert "reconstruction threshold" in doc.__doc__ and "c >= t" in doc.__doc__
