"""The demo: a Keras model trained with DPAUC next to tf.keras.metrics.AUC.

    bash run.sh demo            # sets up the environment, then runs this module
    python -m dpauc_tf.demo --epochs 3 --epsilon 1.0

Trains a small logistic model on synthetic click-through-like data, evaluates each epoch on a
held-out test set with TensorFlow's AUC (exact on its grid) and DPAUC (label-DP at the given
epsilon, one release per epoch, charged to a privacy ledger) and prints both, with
scikit-learn's exact AUC.
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def _synthetic(n: int, seed: int):
    import numpy as np

    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 8)).astype("float32")
    logit = -1.3 + x @ np.linspace(0.8, -0.3, 8).astype("float32")
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-logit))).astype("float32")
    return x, y


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="DPAUC next to tf.keras.metrics.AUC")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--num-thresholds", type=int, default=200)
    parser.add_argument("--mechanism", default="histogram")
    parser.add_argument("--examples", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    import tensorflow as tf
    from sklearn.metrics import roc_auc_score

    from dpauc_tf import DPAUC, DPAUCBudgetCallback, PrivacyLedger

    tf.keras.utils.set_random_seed(args.seed)
    x, y = _synthetic(args.examples, args.seed)
    split = int(0.9 * len(y))
    model = tf.keras.Sequential(
        [tf.keras.Input((x.shape[1],)), tf.keras.layers.Dense(1, activation="sigmoid")]
    )
    dpauc = DPAUC(
        epsilon=args.epsilon,
        num_thresholds=args.num_thresholds,
        mechanism=args.mechanism,
        seed=args.seed,
    )
    model.compile(
        optimizer=tf.keras.optimizers.Adam(0.01),
        loss="binary_crossentropy",
        metrics=[tf.keras.metrics.AUC(num_thresholds=args.num_thresholds, name="auc"), dpauc],
    )
    ledger = PrivacyLedger()
    callback = DPAUCBudgetCallback(ledger, evaluation_dataset="test")
    print(dpauc.privacy_statement())
    print(f"{'epoch':>5} {'exact AUC':>10} {'TF AUC':>8} {'DP AUC':>8} {'eps spent':>10}")
    for epoch in range(args.epochs):
        model.fit(x[:split], y[:split], batch_size=1024, epochs=1, verbose=0)
        result = model.evaluate(
            x[split:], y[split:], batch_size=8192, verbose=0, return_dict=True, callbacks=[callback]
        )
        exact = roc_auc_score(y[split:], model.predict(x[split:], batch_size=8192, verbose=0))
        spent = ledger.spent("test").best
        print(f"{epoch:>5} {exact:>10.4f} {result['auc']:>8.4f} {result['dp_auc']:>8.4f} {spent:>10.3g}")
    print(ledger.summary())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
