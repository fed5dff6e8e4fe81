"""Error of the one-vs-rest macro and micro averages at epsilon 1 (docs/multiclass.md).

Synthetic softmax scores (N examples, C classes, the true class's logit shifted by 1.5),
``repeats`` releases per mechanism through
:func:`dpauc_tf.mechanisms.multiclass_release.evaluate_multiclass`, compared with
scikit-learn's ``roc_auc_score(multi_class="ovr")``; prints the bias and standard deviation.

Usage (from the repository root)::

    PYTHONPATH=. python benchmarks/bench_multiclass.py
    PYTHONPATH=. python benchmarks/bench_multiclass.py --classes 3 10 --repeats 200
"""

from __future__ import annotations

import argparse

import numpy as np
from sklearn.metrics import roc_auc_score

from dpauc_tf.mechanisms.multiclass_release import evaluate_multiclass

MECHANISMS = {
    "histogram": {},
    "histogram-public-scores": {},
    "secure-histogram": {"num_clients": 100},
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--classes", type=int, nargs="+", default=[3, 10])
    parser.add_argument("--examples", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--num-thresholds", type=int, default=100)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    for classes in args.classes:
        n = args.examples
        logits = rng.normal(size=(n, classes))
        labels = rng.integers(0, classes, n)
        logits[np.arange(n), labels] += 1.5
        scores = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
        exact = {
            average: roc_auc_score(labels, scores, multi_class="ovr", average=average)
            for average in ("macro", "micro")
        }
        for name, extra in MECHANISMS.items():
            result = evaluate_multiclass(
                labels,
                scores,
                epsilon=args.epsilon,
                mechanism=name,
                num_thresholds=args.num_thresholds,
                repeats=args.repeats,
                seed=1,
                **extra,
            )
            macro, micro = result.macro - exact["macro"], result.micro - exact["micro"]
            print(
                f"C={classes:<3d} {name:24s} macro {exact['macro']:.4f} bias "
                f"{np.nanmean(macro):+.5f} std {np.nanstd(macro):.5f}  micro std "
                f"{np.nanstd(micro):.5f}"
            )


if __name__ == "__main__":
    main()
