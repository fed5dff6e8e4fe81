"""Noise: seeds, floating-point samplers, exact integer samplers and secure-aggregation shares.

* [`seeds`][]: ``make_seed`` / ``split_seed`` for TensorFlow's stateless RNG;
* [`samplers`][]: Laplace, Gaussian, discrete Laplace in TensorFlow ops (XLA);
* [`exact`][]: exact discrete Laplace / Gaussian with integer arithmetic;
* [`shares`][]: Polya and Skellam shares whose sum is one draw.
"""
