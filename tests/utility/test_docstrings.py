"""The runnable examples in the utility modules' docstrings run and hold."""

import doctest
import importlib

import pytest

MODULES = [
    "dpauc_tf.hierarchical",
    "dpauc_tf.postprocessing",
    "dpauc_tf.adaptive_thresholds",
    "dpauc_tf.noise_families",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0, f"{name} has no runnable example"
    assert result.failed == 0
