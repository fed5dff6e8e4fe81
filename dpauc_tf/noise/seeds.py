"""Seeds for TensorFlow's stateless samplers (Philox).

Every sampler in :mod:`dpauc_tf.noise` takes an explicit ``seed``: an int64 tensor of shape
``[2]``. :func:`make_seed` turns the user-facing ``seed`` argument into one:

* ``seed=None`` draws 126 bits from the operating system (``secrets``), so the *seed* is
  fresh entropy on every call; the noise stream itself is then Philox (TensorFlow's
  counter-based generator). This is the only mode to use for real releases.
* an integer seed makes results reproducible. It is for experiments and tests only: anyone who
  knows the seed can subtract the noise.

>>> make_seed(7).numpy().tolist()
[7, 0]
"""

from __future__ import annotations

import secrets

import numpy as np
import tensorflow as tf

_MAX_INT64 = 2**63 - 1


def make_seed(seed: int | tf.Tensor | np.ndarray | None = None) -> tf.Tensor:
    """Returns a ``[2]`` int64 seed: OS entropy for ``None``, ``[seed, 0]`` for an int.

    >>> make_seed(7).numpy().tolist()
    [7, 0]
    """
    if seed is None:
        return tf.constant([secrets.randbits(63), secrets.randbits(63)], dtype=tf.int64)
    if isinstance(seed, bool):
        raise TypeError("seed must be an int, None or a [2] tensor, not a bool")
    if isinstance(seed, (int, np.integer)):
        if seed < 0:
            raise ValueError(f"seed must be non-negative, got {seed}")
        return tf.constant([int(seed) % _MAX_INT64, 0], dtype=tf.int64)
    seed = tf.cast(tf.convert_to_tensor(seed), tf.int64)
    seed.shape.assert_is_compatible_with([2])
    return seed


def split_seed(seed: tf.Tensor, num: int) -> tf.Tensor:
    """``num`` independent ``[2]`` seeds derived from one (shape ``[num, 2]``)."""
    return tf.random.experimental.stateless_split(tf.cast(seed, tf.int64), num=num)
