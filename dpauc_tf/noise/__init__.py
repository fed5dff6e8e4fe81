"""Noise: seeds, floating-point samplers, exact integer samplers and secure-aggregation shares.

* [`seeds`][dpauc_tf.noise.seeds]: ``make_seed`` / ``split_seed`` for TensorFlow's stateless RNG;
* [`samplers`][dpauc_tf.noise.samplers]: Laplace, Gaussian, discrete Laplace in TensorFlow ops (XLA);
* [`exact`][dpauc_tf.noise.exact]: exact discrete Laplace / Gaussian with integer arithmetic;
* [`shares`][dpauc_tf.noise.shares]: Polya and Skellam shares whose sum is one draw.
"""
