"""Label-DP mechanisms: the protocol, one module per family, and the one registry.

Names load on first use: ``from dpauc_tf.mechanisms import list_mechanisms`` imports neither
TensorFlow nor dp-accounting.

    >>> from dpauc_tf.mechanisms import get_mechanism, list_mechanisms
    >>> get_mechanism("histogram", epsilon=0.5, num_thresholds=10).noise_scale
    4.0
"""

from __future__ import annotations

import importlib

_NAMES = {
    "Capabilities": "dpauc_tf.mechanisms.capabilities",
    "CountMechanism": "dpauc_tf.mechanisms.base",
    "Release": "dpauc_tf.mechanisms.base",
    "private_auc": "dpauc_tf.mechanisms.tensor_release",
    "MECHANISMS": "dpauc_tf.mechanisms.registry",
    "MechanismSpec": "dpauc_tf.mechanisms.registry",
    "describe_mechanisms": "dpauc_tf.mechanisms.registry",
    "get_mechanism": "dpauc_tf.mechanisms.registry",
    "list_mechanisms": "dpauc_tf.mechanisms.registry",
    "mechanism_class": "dpauc_tf.mechanisms.registry",
    "mechanism_spec": "dpauc_tf.mechanisms.registry",
    "register_mechanism": "dpauc_tf.mechanisms.registry",
    "require": "dpauc_tf.mechanisms.registry",
    "unregister_mechanism": "dpauc_tf.mechanisms.registry",
}

__all__ = sorted(_NAMES)


def __getattr__(name: str):
    if name in _NAMES:
        return getattr(importlib.import_module(_NAMES[name]), name)
    raise AttributeError(f"module 'dpauc_tf.mechanisms' has no attribute {name!r}")
