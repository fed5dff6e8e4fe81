"""A pytest plugin for the world-independent tests (``WORLD_INDEPENDENT_TESTS`` in run.sh):
run.sh runs them once, in one world, with this plugin (``-p tests.helpers.tensorflow_blocked``),
so that a test on that list which comes to import TensorFlow, Keras or JAX fails instead of
being tested in one world only.

The import fails with :class:`WorldDependentImport`, which is not an ``ImportError``:
``pytest.importorskip("tensorflow")`` cannot turn it into a skip. Asking whether one is
installed (``importlib.util.find_spec``, as ``tests/helpers/worlds.py`` does) still answers.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys

# the frameworks whose versions make the worlds differ
BLOCKED = ("tensorflow", "keras", "tf_keras", "jax", "jaxlib", "tensorflow_federated")


class WorldDependentImport(RuntimeError):
    """A world-independent test imported a framework whose version differs between worlds."""


class _RefusingLoader(importlib.abc.Loader):
    def create_module(self, spec):
        raise WorldDependentImport(
            f"{spec.name} imported by a test of WORLD_INDEPENDENT_TESTS (run.sh): "
            "it depends on the world; take it off that list"
        )

    def exec_module(self, module):  # pragma: no cover - create_module always raises
        raise AssertionError


class _Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        if fullname not in BLOCKED:
            return None
        found = importlib.machinery.PathFinder.find_spec(fullname, path)
        if found is None:
            return None  # not installed: the usual ModuleNotFoundError
        return importlib.machinery.ModuleSpec(fullname, _RefusingLoader(), origin=found.origin)


def pytest_configure(config) -> None:
    loaded = sorted(name for name in BLOCKED if name in sys.modules)
    if loaded:
        raise WorldDependentImport(f"{loaded} imported before the world-independent tests")
    sys.meta_path.insert(0, _Blocker())
