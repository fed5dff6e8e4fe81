"""The ServerApp: FedAvg training, a private AUC of the global model every round."""

from __future__ import annotations

import json

from flwr.app import ArrayRecord, Context
from flwr.serverapp import Grid, ServerApp
from flwr.serverapp.strategy import FedAvg

from dpauc_app.task import load_model
from dpauc_tf import PrivacyLedger
from dpauc_tf.flower import DPAUCStrategy, spec_from_run_config

app = ServerApp()


@app.main()
def main(grid: Grid, context: Context) -> None:
    config = context.run_config
    spec = spec_from_run_config(config)
    budget = float(config["privacy-budget"])
    ledger = PrivacyLedger(budget=budget) if spec.epsilon is not None else None
    strategy = DPAUCStrategy(
        FedAvg(fraction_train=1.0),
        spec,
        ledger=ledger,
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
        epsilon = "none (NOT private)" if release.epsilon is None else f"{release.epsilon:g}"
        print(
            f"dpauc round {server_round}: private AUC {release.auc:.4f} "
            f"(mechanism {release.mechanism}, epsilon {epsilon}, "
            f"{release.num_reporting} of {release.num_clients} clients reported)",
            flush=True,
        )
    if config.get("result-file"):
        rounds = {str(r): release.to_dict() for r, release in strategy.results.items()}
        weights = [w.tolist() for w in result.arrays.to_numpy_ndarrays()]
        with open(str(config["result-file"]), "w") as out:
            json.dump({"rounds": rounds, "final_weights": weights}, out)
