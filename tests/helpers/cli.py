"""The command line run in process (``dpauc_tf.cli.main.main``), its output captured by
pytest's ``capsys``."""

from __future__ import annotations

import json

from dpauc_tf.cli.main import main


def run_cli(capsys, *argv):
    """Runs ``dpauc ARGV`` (every argument through ``str``); asserts exit status 0 and returns
    the captured ``out`` and ``err``."""
    code = main([str(arg) for arg in argv])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return captured


def cli_status(capsys, *argv):
    """``(exit status, captured)`` of ``dpauc ARGV``, for commands that may be refused."""
    code = main([str(arg) for arg in argv])
    return code, capsys.readouterr()


def cli_json(capsys, command: str, *argv) -> dict:
    """The JSON that ``dpauc COMMAND ARGV --format json`` prints (exit status 0)."""
    return json.loads(run_cli(capsys, command, *argv, "--format", "json").out)


def evaluate_json(capsys, *argv) -> dict:
    """``dpauc evaluate ARGV --format json``, parsed."""
    return cli_json(capsys, "evaluate", *argv)


def evaluate_exact_json(capsys, *argv) -> dict:
    """``dpauc evaluate ARGV --format json --show-exact``, parsed (the exact values beside the
    release)."""
    return cli_json(capsys, "evaluate", *argv, "--show-exact")
