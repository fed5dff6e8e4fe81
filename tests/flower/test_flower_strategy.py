"""DPAUCStrategy beside FedAvg training, on Flower's Message API (in-process grid, no Ray):
a private AUC of the global model every round, the ledger charged per evaluation, SecAgg+
in *evaluate* rounds, and the release's settings read from the message."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("flwr")

from dpauc_tf import BudgetExceededError, PrivacyLedger
from dpauc_tf.flower import (
    DPAUCStrategy,
    evaluate_reply,
    release_config,
    release_from_config,
    secagg_evaluate_mod,
    spec_from_run_config,
)
from dpauc_tf.flower.local import run_in_process
from dpauc_tf.mechanisms.release import ReleaseSpec

K = 4


def _local_data(partition_id: int):
    rng = np.random.default_rng(partition_id)
    labels = rng.integers(0, 2, 50)
    return labels, np.clip(rng.normal(0.4 + 0.2 * labels, 0.2), 0, 1)


def _apps(strategy_factory, num_rounds, seen):
    from flwr.app import ArrayRecord, Message, MetricRecord, RecordDict
    from flwr.clientapp import ClientApp
    from flwr.serverapp import ServerApp

    client = ClientApp()

    @client.train()
    def train(msg, context):
        arrays = msg.content["arrays"].to_numpy_ndarrays()
        content = RecordDict(
            {
                "arrays": ArrayRecord([a + 1.0 for a in arrays]),
                "metrics": MetricRecord({"num-examples": 50}),
            }
        )
        return Message(content, reply_to=msg)

    @client.evaluate(mods=[secagg_evaluate_mod])
    def evaluate(msg, context):
        seen.append(msg.content["arrays"].to_numpy_ndarrays()[0].tolist())
        labels, scores = _local_data(int(context.node_config["partition-id"]))
        return evaluate_reply(msg, labels, scores)

    server = ServerApp()
    outcome = {}

    @server.main()
    def main(grid, context):
        strategy = strategy_factory()
        outcome["strategy"] = strategy
        try:
            outcome["result"] = strategy.start(
                grid, ArrayRecord([np.zeros(2)]), num_rounds=num_rounds, timeout=60
            )
        except BudgetExceededError as error:
            outcome["refused"] = error

    return server, client, outcome


@pytest.mark.parametrize(
    "mechanism, on_refusal",
    [("histogram", "record"), ("secure-histogram", "record"), ("histogram", "raise")],
)
def test_private_auc_every_round_beside_fedavg_and_the_ledger_charged_each_time(
    mechanism, on_refusal
):
    from flwr.serverapp.strategy import FedAvg

    ledger = PrivacyLedger(budget=2.5)
    spec = ReleaseSpec.make(mechanism, epsilon=1.0, num_thresholds=10)
    seen: list = []
    server, client, outcome = _apps(
        lambda: DPAUCStrategy(
            FedAvg(fraction_train=1.0), spec, ledger=ledger, dataset="d", on_refusal=on_refusal
        ),
        num_rounds=3,
        seen=seen,
    )
    run_in_process(server, client, K)
    strategy = outcome["strategy"]
    # rounds 1 and 2 released; round 3 was refused before any report was sent
    assert sorted(strategy.results) == [1, 2]
    if on_refusal == "raise":
        assert isinstance(outcome["refused"], BudgetExceededError)
    else:  # recorded: start() returned (before, the refusal ended it and its result)
        assert "refused" not in outcome and sorted(strategy.refused) == [3]
        assert strategy.refused[3].startswith("release refused: data set 'd'")
        assert outcome["result"].arrays.to_numpy_ndarrays()[0].tolist() == [3.0, 3.0]
    assert ledger.releases("d") == 2
    assert ledger.spent("d").best == pytest.approx(2.0)
    for result in strategy.results.values():
        assert result.num_reporting == K == result.num_clients
        assert result.epsilon == pytest.approx(1.0)
        assert result.num_examples == 50 * K
        assert 0 <= result.auc <= 1
    # every evaluation was of the round's global model (FedAvg of the clients' +1)
    assert seen[:K] == [[1.0, 1.0]] * K and seen[K : 2 * K] == [[2.0, 2.0]] * K
    assert len(seen) == 2 * K


def test_secure_rounds_are_evaluate_messages_and_the_server_sees_masked_vectors_only():
    from flwr.common.secure_aggregation.secaggplus_constants import RECORD_KEY_CONFIGS, Key
    from flwr.serverapp.strategy import FedAvg

    replies: list = []
    spec = ReleaseSpec.make("secure-histogram", epsilon=1.0, num_thresholds=10)
    server, client, outcome = _apps(
        lambda: DPAUCStrategy(FedAvg(fraction_train=1.0), spec, observe_replies=replies.append),
        num_rounds=1,
        seen=[],
    )
    run_in_process(server, client, K)
    assert outcome["strategy"].results[1].num_reporting == K
    assert replies and {str(r.metadata.message_type) for r in replies} == {"evaluate"}
    masked = 0
    for reply in replies:
        assert "dpauc.report" not in reply.content.array_records
        assert all(len(record) == 0 for record in reply.content.array_records.values())
        masked += Key.MASKED_PARAMETERS in reply.content.config_records[RECORD_KEY_CONFIGS]
    assert masked == K


def test_the_release_travels_in_the_message_without_a_seed():
    spec = ReleaseSpec.make(
        "histogram",
        epsilon=0.5,
        threshold_grid=[0.1, 0.35, 0.8],
        options={"estimator": "mann-whitney-smooth"},
        seed=123,
    )
    settings = release_from_config(release_config(spec, num_clients=7, repeats=3))
    assert settings.spec.thresholds == spec.thresholds
    assert settings.spec.options == spec.options
    assert settings.spec.seed is None  # the clients hold their own
    assert (settings.num_clients, settings.repeats) == (7, 3)
    assert "123" not in str(release_config(spec, num_clients=7))


def test_a_message_without_a_release_fails_in_one_line(monkeypatch):
    from flwr.app import ConfigRecord, Message, RecordDict
    from flwr.supercore.task_identity import TaskIdentity

    for name in ("_task_id", "_run_id", "_node_id"):  # what Flower's runtimes set
        monkeypatch.setattr(TaskIdentity, name, 1)

    message = Message(
        RecordDict({"config": ConfigRecord({})}), dst_node_id=1, message_type="evaluate"
    )
    with pytest.raises(ValueError, match="DPAUCStrategy") as error:
        evaluate_reply(message, [0, 1], [0.2, 0.8])
    assert len(str(error.value).splitlines()) == 1


def test_spec_from_run_config():
    spec = spec_from_run_config(
        {"mechanism": "histogram", "epsilon": 2.0, "num-thresholds": 20, "mechanism-options": "{}"}
    )
    assert (spec.mechanism, spec.epsilon, spec.num_thresholds) == ("histogram", 2.0, 20)
    assert spec_from_run_config({"mechanism": "none", "epsilon": "none"}).epsilon is None
    with pytest.raises(ValueError, match="epsilon"):
        spec_from_run_config({"epsilon": "lots"})
    with pytest.raises(ValueError, match="JSON"):
        spec_from_run_config({"epsilon": 1.0, "mechanism-options": "{"})


@pytest.mark.parametrize(
    "config, message",
    [
        ({"mechanism": "histogram"}, "needs an epsilon"),  # before: no noise, no word
        ({"mechanism": "secure-histogram", "epsilon": "none"}, "needs an epsilon"),
        ({"num-classes": 3}, "needs an epsilon"),  # one-vs-rest too
        ({"epsilon": 1.0, "mechanism-options": "[1, 2]"}, "JSON object"),  # AttributeError
        ({"epsilon": 1.0, "mechanism-options": "3"}, "JSON object"),
        ({"epsilon": True}, "epsilon must be a number"),
    ],
)
def test_spec_from_run_config_refuses_a_missing_epsilon_and_bad_options(config, message):
    with pytest.raises(ValueError, match=message) as error:
        spec_from_run_config(config)
    assert len(str(error.value).splitlines()) == 1


def test_spec_from_run_config_exact_only_by_mechanism_none():
    """The exact AUC (NOT private) is asked for by name, as ``dpauc evaluate --mechanism
    none``; the epsilon a template's config carries is then unused (before: a traceback)."""
    for epsilon in (1.0, "none"):
        spec = spec_from_run_config({"mechanism": "none", "epsilon": epsilon})
        assert spec.mechanism == "none" and spec.epsilon is None


def test_ledger_from_run_config_reaches_every_setting(tmp_path):
    from dpauc_tf.flower import ledger_from_run_config

    ledger = ledger_from_run_config(
        {
            "privacy-budget": 4.0,
            "ledger-delta": 1e-5,
            "ledger-file": str(tmp_path / "l.json"),
            "ledger-durable": False,
        }
    )
    assert (ledger.budget, ledger.delta, ledger.durable) == (4.0, 1e-5, False)
    assert ledger.path == tmp_path / "l.json"
    default = ledger_from_run_config({})
    assert (default.budget, default.delta, default.path) == (None, 0.0, None)
    assert ledger_from_run_config({"privacy-budget": "none"}).budget is None
    for bad in ({"privacy-budget": "lots"}, {"ledger-delta": "x"}, {"ledger-durable": "yes"}):
        with pytest.raises(ValueError):
            ledger_from_run_config(bad)


def test_client_seeds_are_the_release_paths_derivation():
    """A Flower client's seed is its own (the server's message carries none: a server that
    knew the clients' seeds could subtract their noise), derived as a spec derives its own."""
    import json

    from dpauc_tf.flower import client_seed
    from dpauc_tf.flower.records import RELEASE_KEY, release_config

    seeded = ReleaseSpec.make("histogram", epsilon=1.0, num_thresholds=10, seed=123457)
    body = json.loads(release_config(seeded, num_clients=3)[RELEASE_KEY])
    assert "seed" not in body and "123457" not in json.dumps(body)

    spec = ReleaseSpec.make("histogram", epsilon=1.0, seed=5)
    for client, server_round in [(0, 1), (3, 1), (3, 2)]:
        expected = spec.seed_for("flower-client", client, server_round).numpy().tolist()
        assert client_seed(5, client, server_round).numpy().tolist() == expected
    assert client_seed(5, 1, 1).numpy().tolist() != client_seed(5, 2, 1).numpy().tolist()
