"""Exact integer sums through SecAgg+'s quantizer (dpauc_tf.flower.encoding), no Ray."""

from __future__ import annotations

import numpy as np
import pytest

from dpauc_tf.flower.encoding import LimbLayout


def _through_flower_arithmetic(layout, client_vectors):
    """What SecAgg+ computes (its own quantize, factor, modulus and dequantize code),
    without masks (they cancel modulo M, checked end to end in test_flower_evaluate)."""
    quantization = pytest.importorskip("flwr.common.secure_aggregation.quantization")
    arithmetic = pytest.importorskip("flwr.common.secure_aggregation.ndarrays_arithmetic")
    n = len(client_vectors)
    total = None
    for vector in client_vectors:
        limbs = layout.encode(vector)
        ratio = 1 / 1.0  # num_examples / max_weight
        q_ratio = round(ratio * layout.quantization_range)
        limbs = arithmetic.parameters_multiply(limbs, q_ratio / layout.quantization_range)
        quantized = quantization.quantize(limbs, layout.clipping_range, layout.quantization_range)
        quantized = arithmetic.factor_combine(q_ratio, quantized)
        quantized = [np.asarray(a, np.int64) for a in quantized]
        total = quantized if total is None else arithmetic.parameters_addition(total, quantized)
    total = arithmetic.parameters_mod(total, layout.modulus_range)
    q_total, total = arithmetic.factor_extract(total)
    averages = quantization.dequantize(total, layout.clipping_range, layout.quantization_range)
    for vec in averages:
        vec += -(n - 1) * layout.clipping_range
        vec *= layout.quantization_range / q_total
    return averages


@pytest.mark.parametrize("num_clients", [2, 10, 100, 1000])
def test_sums_are_exact_through_flowers_quantizer(num_clients):
    rng = np.random.default_rng(num_clients)
    layout = LimbLayout.for_clients(num_clients)
    assert num_clients * layout.quantization_range < layout.modulus_range
    vectors = [rng.integers(-(2**40), 2**40, size=7).astype(np.float64) for _ in range(num_clients)]
    vectors[0][:3] = [2.0**52, -(2.0**52), 2.0**24 + 1]  # past float32 and near float64's end
    averages = _through_flower_arithmetic(layout, vectors)
    expected = np.sum(np.asarray(vectors, np.int64), axis=0)
    np.testing.assert_array_equal(layout.decode(averages, num_clients), expected)


def test_more_limbs_would_not_be_exact_without_the_encoding():
    """The guard: the same counts sent as plain floats come back rounded or clipped."""
    layout = LimbLayout.for_clients(10)
    counts = [np.array([3.0 * 2**24 + 1.0, -5.0])] * 10
    quantization = pytest.importorskip("flwr.common.secure_aggregation.quantization")
    plain = quantization.quantize(counts, 8.0, 2**22)  # SecAggPlusWorkflow's defaults
    assert plain[0][0] != counts[0][0]
    np.testing.assert_array_equal(
        layout.decode(_through_flower_arithmetic(layout, counts), 10), [30 * 2**24 + 10, -50]
    )


@pytest.mark.parametrize(
    "bad, message",
    [
        ([0.5], "fractional"),
        ([np.nan], "NaN"),
        ([np.inf], "NaN or inf"),
        ([2.0**53], "2\\^53"),
    ],
)
def test_refuses_values_it_cannot_send_exactly(bad, message):
    with pytest.raises(ValueError, match=message):
        LimbLayout.for_clients(3).encode(np.array(bad))


def test_layout_bounds():
    assert LimbLayout.for_clients(1).bits == 31
    assert LimbLayout.for_clients(10).bits == 28
    assert LimbLayout.for_clients(100).bits == 25
    with pytest.raises(ValueError, match="fewer than 2 bits"):
        LimbLayout.for_clients(2**31)
    with pytest.raises(ValueError, match="positive integer"):
        LimbLayout.for_clients(0)
    with pytest.raises(ValueError, match="power of two"):
        LimbLayout.for_clients(3, modulus_range=2**33)
    with pytest.raises(ValueError, match="limb bits"):
        LimbLayout.for_bits(40)
    with pytest.raises(ValueError, match="limb arrays"):
        LimbLayout.for_clients(3).decode([np.zeros(2)], 3)


def test_a_wrapped_limb_sum_is_refused_not_misread():
    layout = LimbLayout.for_clients(4)
    with pytest.raises(ValueError, match="not exact"):
        layout.decode([np.full(2, float(layout.modulus_range))] * layout.num_limbs, 4)
