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
    "dpauc_tf",
    "dpauc_tf.core.thresholds",
    "dpauc_tf.core.counts",
    "dpauc_tf.core.curve",
    "dpauc_tf.core.postprocessing",
    "dpauc_tf.core.adaptive_thresholds",
    "dpauc_tf.core.partitions",
    "dpauc_tf.core.tree",
    "dpauc_tf.noise.seeds",
    "dpauc_tf.noise.samplers",
    "dpauc_tf.noise.exact",
    "dpauc_tf.noise.shares",
    "dpauc_tf.privacy.statement",
    "dpauc_tf.privacy.accounting",
    "dpauc_tf.privacy.skellam",
    "dpauc_tf.privacy.calibration",
    "dpauc_tf.privacy.ledger",
    "dpauc_tf.mechanisms",
    "dpauc_tf.mechanisms.capabilities",
    "dpauc_tf.mechanisms.base",
    "dpauc_tf.mechanisms.registry",
    "dpauc_tf.mechanisms.histogram",
    "dpauc_tf.mechanisms.paper",
    "dpauc_tf.mechanisms.none",
    "dpauc_tf.mechanisms.secure_histogram",
    "dpauc_tf.mechanisms.tree",
    "dpauc_tf.mechanisms.randomized_response",
    "dpauc_tf.mechanisms.score_noise",
    "dpauc_tf.keras.metric",
    "dpauc_tf.cli.formats",
    "dpauc_tf.cli.evaluate",
    "dpauc_tf.cli.reproduce",
    "dpauc_tf.core.summation",
    "dpauc_tf.core.defaults",
    "dpauc_tf.privacy.events",
    "dpauc_tf.tf_startup",
    "dpauc_tf.keras.callbacks",
    "dpauc_tf.analysis.audit",
    "dpauc_tf.analysis.audit_statistics",
    "dpauc_tf.cli.audit",
    "dpauc_tf.analysis.noise_families",
    "dpauc_tf.analysis.tree_design",
    "dpauc_tf.simulation",
    "dpauc_tf.experiments.synthetic",
    "dpauc_tf.experiments.tables",
    "dpauc_tf.io",
    "dpauc_tf.io.scores",
    "dpauc_tf.io.streaming",
    "dpauc_tf.io.readers",
    "dpauc_tf.experiments.ground_truth",
}


def _modules():
    names = ["dpauc_tf"]
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
    if name.startswith("dpauc_tf.beam") and not importlib.util.find_spec("apache_beam"):
        pytest.skip("needs Apache Beam")
    if name == "dpauc_tf.beam.tfma_metric" and not importlib.util.find_spec(
        "tensorflow_model_analysis"
    ):
        pytest.skip("needs TensorFlow Model Analysis")
    spark = ("dpauc_tf.spark", "dpauc_tf.backends.spark")
    if name.startswith(spark) and not importlib.util.find_spec("pyspark"):
        pytest.skip('needs PySpark: pip install "dpauc-tf[spark]"')
    if name == "dpauc_tf.flower.local" and not importlib.util.find_spec("flwr"):
        pytest.skip('needs Flower: pip install "dpauc-tf[flower]"')
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    if name in MUST_HAVE_EXAMPLES:
        assert result.attempted > 0, f"{name} lost its runnable examples"


def test_every_required_module_exists():
    assert MUST_HAVE_EXAMPLES <= set(_modules())
