"""The dropout figure of Polya shares (``shortfall_unit_epsilon``), which the secure
histograms and trees report when fewer shares arrive than they were sized for."""

import math

import numpy as np
import pytest
from scipy import special, stats

from dpauc_tf.noise.shares import shortfall_unit_epsilon


def _brute_force_unit_loss(scale: float, fraction: float) -> float:
    """max_z log P(z) / P(z + 1) of the difference of two NegativeBinomial(fraction,
    q = e^(-1/scale)), from their PMFs written out in log space (no 1 - q rounding)."""
    log_q = -1.0 / scale
    n = np.arange(int(60 * scale) + 400, dtype=np.float64)
    log_p = (
        special.gammaln(n + fraction)
        - special.gammaln(n + 1.0)
        - special.gammaln(fraction)
        + n * log_q
        + fraction * math.log(-math.expm1(log_q))
    )
    log_pmf = np.array([special.logsumexp(log_p[z:] + log_p[: n.size - z]) for z in range(30)])
    return float(np.max(log_pmf[:-1] - log_pmf[1:]))


@pytest.mark.parametrize("scale", [1e-3, 0.01, 0.02, 0.5, 4.0])
@pytest.mark.parametrize("fraction", [0.1, 0.5, 0.9])
def test_unit_loss_is_the_brute_force_maximum_at_every_scale(scale, fraction):
    """Scales below about 1/37 made ``1 - e^(-1/scale)`` round to 1 and the figure NaN."""
    figure = shortfall_unit_epsilon(scale, fraction)
    assert math.isfinite(figure)
    assert figure == pytest.approx(_brute_force_unit_loss(scale, fraction), rel=1e-6)
    assert figure > 1.0 / scale  # fewer shares: more loss than the full noise's


def test_tiny_scales_cost_one_over_the_scale_plus_log_one_over_the_fraction():
    for scale in (1e-3, 1e-6, 1e-12, 1e-300):
        assert shortfall_unit_epsilon(scale, 0.25) == pytest.approx(
            1.0 / scale + math.log(4.0), rel=1e-9, abs=1e-6
        )
    assert shortfall_unit_epsilon(5e-324, 0.5) == math.inf  # 1 / scale overflows


def test_a_full_set_of_shares_is_the_central_figure_and_bad_arguments_raise_one_line():
    assert shortfall_unit_epsilon(2.0, 1.0) == 0.5
    assert stats.nbinom.logpmf(3, 0.5, 1.0 - math.exp(-1.0 / 0.01)) == -math.inf  # the old NaN
    for scale in (0.0, -1.0, math.nan, math.inf):
        with pytest.raises(ValueError, match="scale must be finite and > 0"):
            shortfall_unit_epsilon(scale, 0.5)
    for fraction in (0.0, 1.5, math.nan):
        with pytest.raises(ValueError, match=r"fraction must be in \(0, 1\]"):
            shortfall_unit_epsilon(1.0, fraction)
