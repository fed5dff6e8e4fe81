"""``dpauc evaluate`` at extreme epsilons (issues 30 and 35): the release and its statement
always come out; the secondary PLD figure is bounded in cost or skipped with a reason, and
the warning for a tiny epsilon says what happens in words."""

from __future__ import annotations

import json
import time

import pytest

from dpauc_tf.cli.main import main
from tests.helpers.scores import normal_score_file


@pytest.fixture(scope="module")
def score_file(tmp_path_factory):
    return normal_score_file(tmp_path_factory.mktemp("scores") / "scores.csv", 500, seed=0)


@pytest.mark.parametrize("epsilon", ["1000", "1e4", "1e6"])
def test_a_huge_epsilon_gives_the_release_and_a_reason_for_no_pld(score_file, capsys, epsilon):
    """Before: epsilon 1000 failed ("deltas are not in non-increasing order", from the PLD
    line); 1e4 ran 11.5 minutes, 1e6 asked for terabytes."""
    start = time.monotonic()
    status = main(["evaluate", "--scores", score_file, "--epsilon", epsilon, "--seed", "0",
                   "--format", "json"])  # fmt: skip
    out = capsys.readouterr()
    assert status == 0, out.err
    assert time.monotonic() - start < 120
    result = json.loads(out.out)
    assert result["aucs"][0] is not None and result["guaranteed_epsilon"] == float(epsilon)
    assert result["pld_epsilon"] is None and "not computed" in result["pld_note"]


def test_a_tiny_epsilon_warning_says_what_happens(score_file, capsys):
    status = main(["evaluate", "--scores", score_file, "--epsilon", "1e-300", "--seed", "0"])
    err = capsys.readouterr().err
    assert status == 0
    warning = next(line for line in err.splitlines() if line.startswith("dpauc: warning"))
    assert "std about undefined" not in warning  # before: "std about undefined releases"
    assert "undefined in most releases" in warning
