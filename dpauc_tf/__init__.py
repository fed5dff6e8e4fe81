"""dpauc_tf: AUC and ROC curves with label differential privacy, for Keras and TFF.

The top level holds what a Keras user needs; everything else lives in the layers
(``core``, ``noise``, ``privacy``, ``mechanisms``, ``io``, ``keras``, ``federated``,
``simulation``, ``cli``, ``analysis``, ``experiments``). Names are loaded on first use, so
``import dpauc_tf`` does not import TensorFlow; once Keras is imported (before or after
``dpauc_tf``), the Keras adapter is loaded too, so that ``keras.models.load_model`` finds
``DPAUC``, ``DPECE`` and ``DPMultiClassAUC`` in a saved model after ``import dpauc_tf`` alone.

    >>> from dpauc_tf import DPAUC, list_mechanisms
    >>> metric = DPAUC(epsilon=1.0, num_thresholds=100, seed=0)
    >>> "histogram" in list_mechanisms()
    True
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys

__version__ = "0.3.0"

# name -> module that defines it (loaded lazily by __getattr__)
_PUBLIC = {
    "DPAUC": "dpauc_tf.keras.metric",
    "DPAUCBudgetCallback": "dpauc_tf.keras.callbacks",
    "DPECE": "dpauc_tf.keras.calibration",
    "DPMultiClassAUC": "dpauc_tf.keras.multiclass",
    "PrivacyLedger": "dpauc_tf.privacy.ledger",
    "BudgetExceededError": "dpauc_tf.privacy.ledger",
    "get_mechanism": "dpauc_tf.mechanisms.registry",
    "list_mechanisms": "dpauc_tf.mechanisms.registry",
}

__all__ = [*sorted(_PUBLIC), "__version__"]


def __getattr__(name: str):
    if name in _PUBLIC:
        return getattr(importlib.import_module(_PUBLIC[name]), name)
    raise AttributeError(f"module 'dpauc_tf' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*__all__, *globals()])


# -- Keras serialization: register DPAUC once Keras is there, without importing it -----------
_KERAS_STATE = {"registered": False}


def _imported(name: str, done: str | None) -> bool:
    """Whether module ``name`` is fully imported (``done``: the one that just finished)."""
    module = sys.modules.get(name)
    spec = getattr(module, "__spec__", None)
    return module is not None and (name == done or not getattr(spec, "_initializing", False))


def _register_keras_objects(done: str | None = None) -> None:
    """Imports the Keras adapter (its classes register themselves with Keras) once ``keras``
    and, if it is being imported, ``tensorflow`` have finished importing."""
    if _KERAS_STATE["registered"] or not _imported("keras", done):
        return
    if "tensorflow" in sys.modules and not _imported("tensorflow", done):
        return  # tensorflow imports keras: wait for tensorflow
    if any(
        name.startswith("dpauc_tf.") and not _imported(name, done) for name in list(sys.modules)
    ):
        return  # a module of ours is half imported (it imported tensorflow): wait for it
    _KERAS_STATE["registered"] = True
    try:
        importlib.import_module("dpauc_tf.keras")
    except Exception as error:  # never break the user's import of keras
        import warnings

        warnings.warn(
            f"dpauc_tf could not register DPAUC with Keras ({type(error).__name__}: {error}); "
            "import it (from dpauc_tf import DPAUC) before loading a saved model",
            stacklevel=2,
        )


class _KerasImportHook(importlib.abc.MetaPathFinder):
    """After ``keras`` or ``tensorflow`` is imported, registers the Keras adapter; after
    each module of ours, tries again (a module of ours that imports tensorflow is half
    imported when tensorflow finishes, and the adapter imports it)."""

    def find_spec(self, fullname, path=None, target=None):
        ours = fullname.startswith("dpauc_tf.")
        if _KERAS_STATE["registered"] or not (ours or fullname in ("keras", "tensorflow")):
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        loader = getattr(spec, "loader", None)
        if loader is None or not hasattr(loader, "exec_module"):
            return None
        execute = loader.exec_module

        def exec_module(module):
            execute(module)
            _register_keras_objects(done=fullname)

        loader.exec_module = exec_module
        return spec


if not any(isinstance(finder, _KerasImportHook) for finder in sys.meta_path):
    sys.meta_path.insert(0, _KerasImportHook())
_register_keras_objects()
