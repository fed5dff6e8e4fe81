"""What each world (run.sh's virtual environments) has: marks that skip a test where an
optional engine is missing, and the backends of ``dpauc evaluate`` as parameters."""

from __future__ import annotations

import importlib.util

import pytest

# import name -> what the skip reason says
ENGINE_MODULES = {
    "apache_beam": "Apache Beam",
    "pyspark": "PySpark",
    "tensorflow_federated": "TFF",
    "flwr": "Flower",
    "tensorflow_model_analysis": "TFMA",
}


def has(module: str) -> bool:
    """Whether ``module`` can be imported in this world."""
    return importlib.util.find_spec(module) is not None


def needs(module: str) -> pytest.MarkDecorator:
    """Skips a test where ``module`` is not installed."""
    return pytest.mark.skipif(not has(module), reason=f"needs {ENGINE_MODULES.get(module, module)}")


def _backend(name: str, module: str):
    return pytest.param(name, marks=needs(module))


# ``--backend`` values whose engines read the files themselves, and the federated ones.
ENGINES = [_backend("beam", "apache_beam"), _backend("spark", "pyspark")]
FEDERATED = [_backend("tff", "tensorflow_federated"), _backend("flower", "flwr")]
