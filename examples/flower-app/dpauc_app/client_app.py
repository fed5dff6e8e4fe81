"""The ClientApp: trains on the node's own data and answers private-AUC evaluations."""

from __future__ import annotations

from flwr.app import ArrayRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp

from dpauc_app.task import load_data, load_model
from dpauc_tf.flower import client_seed, model_evaluate_reply, secagg_evaluate_mod

app = ClientApp()


def _local(context: Context):
    config = context.run_config
    partition_id = int(context.node_config["partition-id"])
    features, labels = load_data(
        partition_id,
        int(context.node_config["num-partitions"]),
        int(config["examples-per-node"]),
        int(config["seed"]),
    )
    model = load_model(float(config["learning-rate"]), int(config["seed"]))
    return partition_id, model, features, labels


@app.train()
def train(msg: Message, context: Context) -> Message:
    """FedAvg's local step: a few epochs on this node's data."""
    _, model, features, labels = _local(context)
    model.set_weights(msg.content["arrays"].to_numpy_ndarrays())
    history = model.fit(
        features,
        labels,
        epochs=int(context.run_config["local-epochs"]),
        batch_size=int(context.run_config["batch-size"]),
        verbose=0,
    )
    loss = float(history.history["loss"][-1]) if history.history else 0.0
    content = RecordDict(
        {
            "arrays": ArrayRecord(model.get_weights()),
            "metrics": MetricRecord({"train_loss": loss, "num-examples": len(labels)}),
        }
    )
    return Message(content=content, reply_to=msg)


@app.evaluate(mods=[secagg_evaluate_mod])
def evaluate(msg: Message, context: Context) -> Message:
    """The private AUC's report of the global model on this node's own data."""
    partition_id, model, features, labels = _local(context)
    base = int(context.run_config["client-seed"])
    seed = None if base < 0 else client_seed(base, partition_id, int(msg.metadata.group_id))
    return model_evaluate_reply(msg, model, features, labels, seed=seed)
