"""The runnable examples in every module's docstrings run and hold.

Modules are discovered, so a new module's examples are tested without being listed; the
modules in ``MUST_HAVE_EXAMPLES`` must keep at least one example.
"""

import doctest
import importlib
import importlib.util
import pkgutil

import pytest

PACKAGES = ("dpauc_tf", "data_prep", "models")
SKIP = {"__main__", "demo", "cli"}  # entry points: exercised by their own tests
MUST_HAVE_EXAMPLES = {
    "dpauc_tf.thresholds",
    "dpauc_tf.counts",
    "dpauc_tf.curve",
    "dpauc_tf.noise",
    "dpauc_tf.exact_noise",
    "dpauc_tf.accounting",
    "dpauc_tf.mechanisms",
    "dpauc_tf.distributed",
    "dpauc_tf.hierarchical",
    "dpauc_tf.postprocessing",
    "dpauc_tf.adaptive_thresholds",
    "dpauc_tf.noise_families",
    "dpauc_tf.randomized_response",
    "dpauc_tf.score_noise",
    "dpauc_tf.partitions",
    "dpauc_tf.audit",
    "dpauc_tf.ledger",
    "dpauc_tf.keras_metric",
    "dpauc_tf.experiments.simulation",
    "dpauc_tf.experiments.synthetic",
    "dpauc_tf.experiments.tables",
}


def _modules():
    names = []
    for package in PACKAGES:
        path = importlib.import_module(package).__path__
        for info in pkgutil.walk_packages(path, package + "."):
            if info.name.rsplit(".", 1)[-1] not in SKIP:
                names.append(info.name)
    return sorted(names)


@pytest.mark.parametrize("name", _modules())
def test_docstring_examples(name):
    if name.startswith("dpauc_tf.federated") and not importlib.util.find_spec(
        "tensorflow_federated"
    ):
        pytest.skip("needs TensorFlow Federated")
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    if name in MUST_HAVE_EXAMPLES:
        assert result.attempted > 0, f"{name} lost its runnable examples"


def test_every_required_module_exists():
    assert MUST_HAVE_EXAMPLES <= set(_modules())
