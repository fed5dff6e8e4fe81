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

# Names that were top-level in 0.1 and where they live now.
_MOVED_NAMES = {
    "MECHANISMS": "dpauc_tf.mechanisms.registry",
    "CountMechanism": "dpauc_tf.mechanisms.base",
    "private_auc": "dpauc_tf.mechanisms.tensor_view",
    "PrivacyStatement": "dpauc_tf.privacy.statement",
    "EpsilonSpent": "dpauc_tf.privacy.accounting",
    "composed_epsilon": "dpauc_tf.privacy.accounting",
    "bucket_counts": "dpauc_tf.core.counts",
    "Thresholds": "dpauc_tf.core.thresholds",
    "Confusion": "dpauc_tf.core.curve",
    "RocCurve": "dpauc_tf.core.curve",
    "auc_from_confusion": "dpauc_tf.core.curve",
    "auc_from_histogram": "dpauc_tf.core.curve",
    "auc_from_roc": "dpauc_tf.core.curve",
    "confusion_from_histogram": "dpauc_tf.core.curve",
    "roc_from_confusion": "dpauc_tf.core.curve",
}

# Modules of 0.1 and where their contents live now (0.2 moved them into the layers).
MOVED_MODULES = {
    "dpauc_tf.thresholds": "dpauc_tf.core.thresholds",
    "dpauc_tf.counts": "dpauc_tf.core.counts",
    "dpauc_tf.curve": "dpauc_tf.core.curve",
    "dpauc_tf.postprocessing": "dpauc_tf.core.postprocessing",
    "dpauc_tf.partitions": "dpauc_tf.core.partitions",
    "dpauc_tf.adaptive_thresholds": "dpauc_tf.core.adaptive_thresholds",
    "dpauc_tf.exact_noise": "dpauc_tf.noise.exact",
    "dpauc_tf.accounting": "dpauc_tf.privacy.accounting",
    "dpauc_tf.ledger": "dpauc_tf.privacy.ledger (the callback: dpauc_tf.keras.callbacks)",
    "dpauc_tf.distributed": "dpauc_tf.mechanisms.secure_histogram",
    "dpauc_tf.hierarchical": "dpauc_tf.mechanisms.tree and dpauc_tf.core.tree",
    "dpauc_tf.randomized_response": "dpauc_tf.mechanisms.randomized_response",
    "dpauc_tf.score_noise": "dpauc_tf.mechanisms.score_noise",
    "dpauc_tf.keras_metric": "dpauc_tf.keras.metric",
    "dpauc_tf.audit": "dpauc_tf.analysis.audit",
    "dpauc_tf.noise_families": "dpauc_tf.analysis.noise_families",
    # 0.3: every command-line face lives in dpauc_tf.cli
    "dpauc_tf.analysis.audit_cli": "dpauc_tf.cli.audit",
    "dpauc_tf.flower.cli": "dpauc_tf.cli.flower",
    # 0.3: the score-file readers in dpauc_tf.io, the simulate backend in its own module
    "dpauc_tf.experiments.score_files": "dpauc_tf.io.scores",
    "dpauc_tf.experiments.score_sources": "dpauc_tf.io.readers",
    "dpauc_tf.experiments.streaming": "dpauc_tf.io.streaming",
    "dpauc_tf.experiments.simulation": "dpauc_tf.simulation",
}

__all__ = [*sorted(_PUBLIC), "__version__"]


def __getattr__(name: str):
    if name in _PUBLIC:
        return getattr(importlib.import_module(_PUBLIC[name]), name)
    if name in _MOVED_NAMES:
        raise AttributeError(
            f"dpauc_tf.{name} moved in 0.2: use `from {_MOVED_NAMES[name]} import {name}` "
            "(see docs/changelog.md)"
        )
    raise AttributeError(f"module 'dpauc_tf' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*__all__, *globals()])


class _MovedModuleFinder(importlib.abc.MetaPathFinder):
    """Turns an import of a 0.1 module path into an error that names its new home."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname in MOVED_MODULES:
            raise ModuleNotFoundError(
                f"{fullname} moved in {'0.3' if fullname.count('.') > 1 else '0.2'} to "
                f"{MOVED_MODULES[fullname]} (see docs/changelog.md)",
                name=fullname,
            )
        return None


if not any(isinstance(finder, _MovedModuleFinder) for finder in sys.meta_path):
    sys.meta_path.append(_MovedModuleFinder())


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
