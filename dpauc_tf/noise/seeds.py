"""Seeds for TensorFlow's stateless samplers (Philox).

Every sampler in `dpauc_tf.noise` takes an explicit ``seed``: an int64 tensor of shape
``[2]``. [`make_seed`][] turns the user-facing ``seed`` argument into one:

* ``seed=None`` draws 126 bits from the operating system (``secrets``), so the *seed* is
  fresh entropy on every call; the noise stream itself is then Philox (TensorFlow's
  counter-based generator). This is the only mode to use for real releases.
* an integer seed makes results reproducible. It is for experiments and tests only: anyone who
  knows the seed can subtract the noise. Every integer in ``[0, 2^64 - 1]`` gives its own
  seed (``[seed, 0]`` below ``2^63``, ``[seed - 2^63, 1]`` from ``2^63`` on), so distinct
  integer seeds give distinct noise streams; negative and larger integers are refused.

Every backend derives the seed of each release (a slice's, a client's, a chunk of repeats')
from the user's one seed with [`derive_seed`][], so that no two releases share noise and
``seed=None`` always means fresh operating-system entropy.

    >>> make_seed(7).numpy().tolist()
    [7, 0]
"""

from __future__ import annotations

import hashlib
import secrets

import numpy as np
import tensorflow as tf

_TWO_63 = 2**63
MAX_SEED = 2**64 - 1


def make_seed(seed: int | tf.Tensor | np.ndarray | None = None) -> tf.Tensor:
    """Returns a ``[2]`` int64 seed: OS entropy for ``None``; for an int in ``[0, 2^64 - 1]``,
    ``[seed, 0]`` below ``2^63`` and ``[seed - 2^63, 1]`` above (one-to-one).

    Raises:
      ValueError: a negative int or one above ``2^64 - 1``.

    Examples:
        >>> make_seed(7).numpy().tolist()
        [7, 0]
    """
    if seed is None:
        return tf.constant([secrets.randbits(63), secrets.randbits(63)], dtype=tf.int64)
    if isinstance(seed, bool):
        raise TypeError("seed must be an int, None or a [2] tensor, not a bool")
    if isinstance(seed, (int, np.integer)):
        seed = int(seed)
        if not 0 <= seed <= MAX_SEED:
            raise ValueError(f"an integer seed must be in [0, 2**64 - 1], got {seed}")
        high, low = divmod(seed, _TWO_63)
        return tf.constant([low, high], dtype=tf.int64)
    seed = tf.cast(tf.convert_to_tensor(seed), tf.int64)
    seed.shape.assert_is_compatible_with([2])
    return seed


def split_seed(seed: tf.Tensor, num: int) -> tf.Tensor:
    """``num`` independent ``[2]`` seeds derived from one (shape ``[num, 2]``)."""
    return tf.random.experimental.stateless_split(tf.cast(seed, tf.int64), num=num)


def derive_seed(seed: int | None, *keys) -> tf.Tensor:
    """The ``[2]`` seed of one release, derived from the user's ``seed`` and the release's
    keys (slice key, client id, repeat chunk, ...).

    ``seed=None`` gives fresh operating-system entropy whatever the keys; an integer seed
    gives a seed determined by ``(seed, *keys)``: distinct keys give distinct seeds (up to a
    2^-64 chance of a hash collision), so no two slices or clients share noise. Keys are
    hashed through their ``repr``: use plain values (str, int, tuples of them).

        >>> derive_seed(0, "a").numpy().tolist() == derive_seed(0, "a").numpy().tolist()
        True
        >>> derive_seed(0, "a").numpy().tolist() == derive_seed(0, "b").numpy().tolist()
        False
    """
    if seed is None:
        return make_seed(None)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an int or None, got {seed!r}")
    make_seed(int(seed))  # the same range check as every seed
    digest = hashlib.blake2b(repr((int(seed), *keys)).encode(), digest_size=8).digest()
    return make_seed(int.from_bytes(digest, "big"))
