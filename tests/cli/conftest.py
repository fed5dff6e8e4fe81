"""Fixtures shared by the ``dpauc evaluate`` tests."""

from __future__ import annotations

import functools
import importlib.util

import pytest

from tests.helpers import cli as helpers_cli

# --backend NAME -> (package it needs, the skip reason where it is missing)
_BACKEND_NEEDS = {
    "simulate": None,
    "tff": ("tensorflow_federated", "needs TensorFlow Federated (the federated world)"),
    "beam": ("apache_beam", 'needs Apache Beam: pip install "dpauc-tf[beam]"'),
    "flower": ("flwr", 'needs Flower: pip install "dpauc-tf[flower]"'),
}


@pytest.fixture(params=list(_BACKEND_NEEDS))
def backend(request, monkeypatch) -> str:
    """Every ``--backend``, skipped where its package is missing (Flower runs in process)."""
    needs = _BACKEND_NEEDS[request.param]
    if needs is not None and importlib.util.find_spec(needs[0]) is None:
        pytest.skip(needs[1])
    monkeypatch.setenv("DPAUC_FLOWER_ENGINE", "in-process")
    return request.param


@pytest.fixture()
def evaluate_json(capsys):
    """``dpauc evaluate ARGS --format json``, checked to succeed, as a dict."""

    return functools.partial(helpers_cli.evaluate_json, capsys)
