"""The runnable examples in the core modules' docstrings run and hold."""

import doctest
import importlib

import pytest

MODULES = [
    "dpauc_tf.thresholds",
    "dpauc_tf.counts",
    "dpauc_tf.curve",
    "dpauc_tf.noise",
    "dpauc_tf.accounting",
    "dpauc_tf.mechanisms",
    "dpauc_tf.ledger",
    "dpauc_tf.keras_metric",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0, f"{name} has no runnable example"
    assert result.failed == 0
