"""``dpauc evaluate`` without ``--mechanism``: the registry's default for the deployment its
flags describe (``dpauc_tf/cli/default_mechanism.py``; issue 32 item 6)."""

import numpy as np
import pandas as pd
import pytest

from dpauc_tf.cli.default_mechanism import deployment_of
from dpauc_tf.cli.evaluate import prepare_evaluate
from dpauc_tf.cli.main import build_parser
from dpauc_tf.mechanisms.laws import Deployment
from tests.helpers.cli import cli_status, evaluate_json


@pytest.fixture(scope="module")
def csv_path(tmp_path_factory):
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 2, 3000)
    scores = 1 / (1 + np.exp(-(1.2 * rng.normal(size=labels.size) + labels - 0.5)))
    frame = pd.DataFrame({"score": scores, "label": labels, "client": rng.integers(0, 6, 3000)})
    path = tmp_path_factory.mktemp("default") / "scores.csv"
    frame.to_csv(path, index=False)
    return str(path)


def test_clients_name_the_local_noise_rank_sum_and_its_statement(capsys, csv_path):
    out = evaluate_json(capsys, "--scores", csv_path, "--clients", 10, "--epsilon", 1, "--seed", 0)
    assert out["mechanism"] == "rank-sum" and out["num_clients"] == 10
    assert out["num_reporting"] == 10 and out["roc"] is None  # the AUC alone, no curve
    assert out["guaranteed_epsilon"] == 1.0 and out["guaranteed_delta"] == 0.0
    assert out["privacy"].startswith("rank-sum: (1, 0)-DP; neighbours: label DP")
    assert "S + Laplace(D / 0.75), P + Laplace(4)" in out["privacy"]
    assert 0.0 <= out["auc_mean"] <= 1.0
    # the same default from a client column (FEDERATED), and the central one without clients
    column = evaluate_json(
        capsys, "--scores", csv_path, "--client-column", "client", "--epsilon", 1, "--seed", 0
    )
    assert column["mechanism"] == "rank-sum" and column["num_clients"] == 6
    central = evaluate_json(capsys, "--scores", csv_path, "--epsilon", 1, "--seed", 0)
    assert central["mechanism"] == "rank-sum" and central["num_clients"] == 1


def test_local_noise_grows_with_the_clients_secure_does_not(capsys, csv_path):
    """The FEDERATED default's K draws show in the spread (sqrt(10) ~ 3.2 over central); the
    secure default's one draw does not (it would be 1x if the clients' noise were not
    drawn, 10x if it grew as K)."""
    common = ["--scores", csv_path, "--epsilon", 0.5, "--repeats", 300, "--seed", 1]
    central = evaluate_json(capsys, *common)["auc_std"]
    local = evaluate_json(capsys, *common, "--clients", 10)["auc_std"]
    secure = evaluate_json(
        capsys, *common, "--clients", 10, "--mechanism", "secure-rank-sum"
    )["auc_std"]  # fmt: skip
    assert 2.5 < local / central < 4.0, local / central
    assert 0.8 < secure / central < 1.25, secure / central


@pytest.mark.parametrize(
    "flags, mechanism",
    [
        ([], "rank-sum"),
        (["--delta", "1e-6"], "auc-only"),
        (["--clients", "10"], "rank-sum"),
        (["--clients", "1"], "rank-sum"),
        (["--client-column", "client", "--backend", "beam"], "rank-sum"),
        (["--client-column", "client", "--backend", "spark"], "rank-sum"),
        (["--clients", "10", "--backend", "tff"], "secure-rank-sum"),
        (["--clients", "10", "--backend", "flower"], "secure-rank-sum"),
        (["--clients", "10", "--backend", "tff", "--delta", "1e-6"], "secure-rank-sum"),
        (["--clients", "10", "--max-fpr", "0.1"], "histogram"),
        (["--clients", "10", "--backend", "flower", "--max-fpr", "0.1"], "secure-histogram"),
        (["--clients", "10", "--mechanism", "secure-histogram"], "secure-histogram"),
    ],
)
def test_the_flags_pick_the_deployments_default(csv_path, flags, mechanism):
    """Resolved before TensorFlow and before any backend runs (no engine needed here)."""
    args = build_parser().parse_args(["evaluate", "--scores", csv_path, "--epsilon", "1", *flags])
    assert prepare_evaluate(args).release.mechanism == mechanism


def test_deployment_of_the_flags():
    assert deployment_of("simulate", clients=False) is Deployment.CENTRAL
    assert deployment_of("simulate", clients=True) is Deployment.FEDERATED
    assert deployment_of("beam", clients=True) is Deployment.FEDERATED
    assert deployment_of("tff", clients=False) is Deployment.SECURE
    assert deployment_of("flower", clients=True) is Deployment.SECURE


def test_a_delta_without_secure_aggregation_is_refused_in_one_line(capsys, csv_path):
    code, captured = cli_status(
        capsys, "evaluate", "--scores", csv_path, "--clients", 10, "--epsilon", 1, "--delta", 1e-6
    )
    assert code != 0
    lines = [line for line in captured.err.splitlines() if line.strip()]
    assert len(lines) == 1 and "pure epsilon-DP; leave delta unset" in lines[0], captured.err


def test_local_rank_sum_statement_says_every_client_adds_its_noise(capsys, csv_path):
    """Over clients without secure aggregation the release carries K draws: the statement
    says so and names what the server sees (the bucket totals and every noisy report)."""
    out = evaluate_json(capsys, "--scores", csv_path, "--clients", 4, "--epsilon", 1, "--seed", 0)
    assert out["mechanism"] == "rank-sum"
    assert "over 4 clients without secure aggregation every client adds" in out["privacy"]
    assert "the server sees every client's bucket totals" in out["privacy"]
