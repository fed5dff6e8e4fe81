"""The runnable examples in the experiment modules' docstrings run and hold."""

import doctest
import importlib

import pytest

MODULES = [
    "dpauc_tf.score_noise",
    "dpauc_tf.experiments.ground_truth",
    "dpauc_tf.experiments.score_files",
    "dpauc_tf.experiments.simulation",
    "dpauc_tf.experiments.synthetic",
    "dpauc_tf.experiments.tables",
    "dpauc_tf.experiments.plots",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0, f"{name} has no runnable example"
    assert result.failed == 0
