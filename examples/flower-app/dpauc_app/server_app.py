"""The ServerApp: FedAvg training, a private AUC of the global model every round."""

from __future__ import annotations

import json

from flwr.app import ArrayRecord, Context
from flwr.serverapp import Grid, ServerApp
from flwr.serverapp.strategy import FedAvg

from dpauc_app.task import load_model
from dpauc_tf.flower import DPAUCStrategy, ledger_from_run_config, spec_from_run_config

app = ServerApp()


def describe(server_round: int, release) -> str:
    """One round's line: a private AUC with its epsilon, or the exact AUC, NOT private."""
    reported = f"{release.num_reporting} of {release.num_clients} clients reported"
    if release.epsilon is None:
        return (
            f"dpauc round {server_round}: exact AUC {release.auc:.4f} "
            f"(mechanism {release.mechanism}, no noise: NOT private, {reported})"
        )
    return (
        f"dpauc round {server_round}: private AUC {release.auc:.4f} "
        f"(mechanism {release.mechanism}, epsilon {release.epsilon:g}, {reported})"
    )


@app.main()
def main(grid: Grid, context: Context) -> None:
    config = context.run_config
    spec = spec_from_run_config(config)
    # every ledger setting comes from the run config (privacy-budget, ledger-delta, ...)
    ledger = ledger_from_run_config(config) if spec.epsilon is not None else None
    strategy = DPAUCStrategy(
        FedAvg(fraction_train=1.0),
        spec,
        ledger=ledger,
        dataset=str(config.get("ledger-dataset", "flower-evaluation")),
        timeout=float(config["round-timeout"]),
    )
    model = load_model(float(config["learning-rate"]), int(config["seed"]))
    result = strategy.start(
        grid=grid,
        initial_arrays=ArrayRecord(model.get_weights()),
        num_rounds=int(config["num-server-rounds"]),
        timeout=float(config["round-timeout"]),
    )
    for server_round, release in sorted(strategy.results.items()):
        print(describe(server_round, release), flush=True)
    for server_round, reason in sorted(strategy.refused.items()):
        print(f"dpauc round {server_round}: refused, nothing released ({reason})", flush=True)
    if config.get("result-file"):
        rounds = {str(r): release.to_dict() for r, release in strategy.results.items()}
        refused = {str(r): reason for r, reason in strategy.refused.items()}
        weights = [w.tolist() for w in result.arrays.to_numpy_ndarrays()]
        with open(str(config["result-file"]), "w") as out:
            json.dump({"rounds": rounds, "refused": refused, "final_weights": weights}, out)
