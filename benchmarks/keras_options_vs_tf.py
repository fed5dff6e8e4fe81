"""Prints |DPAUC(epsilon=None, ...) - tf.keras.metrics.AUC(...)| for every Keras AUC option.

python benchmarks/keras_options_vs_tf.py      # in each world (.venv, .venv-keras3)
"""

from __future__ import annotations

import numpy as np

from dpauc_tf.tf_startup import import_tensorflow_quietly

tf = import_tensorflow_quietly()

from dpauc_tf import DPAUC  # noqa: E402


def main() -> None:
    rng = np.random.default_rng(0)
    n = 20_000
    y = rng.integers(0, 2, (n, 3)).astype("float32")
    p = (1 / (1 + np.exp(-(rng.normal(size=(n, 3)) + 1.2 * y)))).astype("float32")
    w = rng.random(n).astype("float32")
    cases = []
    for curve in ("ROC", "PR"):
        for method in ("interpolation", "minoring", "majoring"):
            cases.append(({"curve": curve, "summation_method": method}, False))
    cases.append(({"thresholds": [0.3, 0.5, 0.7]}, False))
    cases.append(({"num_thresholds": 1000}, False))
    cases.append(({"multi_label": True, "num_labels": 3}, True))
    cases.append(({"multi_label": True, "num_labels": 3, "label_weights": [0.2, 0.0, 1.0]}, True))
    print(f"TensorFlow {tf.__version__}, {n} examples, sample weights")
    print("| options | tf.keras.metrics.AUC | DPAUC(epsilon=None) | abs. difference |")
    print("|---|---|---|---|")
    for options, multi in cases:
        ys, ps = (y, p) if multi else (y[:, 0], p[:, 0])
        reference = tf.keras.metrics.AUC(**options)
        reference.update_state(ys, ps, sample_weight=w)
        ours = DPAUC(epsilon=None, **options)
        ours.update_state(ys, ps, sample_weight=w)
        a, b = float(reference.result()), float(ours.result())
        print(f"| `{options}` | {a:.7f} | {b:.7f} | {abs(a - b):.1e} |")


if __name__ == "__main__":
    main()
