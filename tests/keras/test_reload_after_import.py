"""A saved ``.keras`` model reloads after ``import dpauc_tf`` alone (issue 34: "Could not
locate class 'DPAUC'"), whichever of dpauc_tf and Keras is imported first, and
``import dpauc_tf`` still imports no TensorFlow. Each case runs in a fresh interpreter."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

SAVE = """
import numpy as np, tensorflow as tf
from dpauc_tf import DPAUC, DPMultiClassAUC
model = tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(1, activation="sigmoid")])
model.compile("adam", "binary_crossentropy", metrics=[DPAUC(epsilon=1.0, seed=0, name="dp_auc")])
model.fit(np.zeros((8, 3), "float32"), np.array([0, 1] * 4, "float32"), verbose=0)
model.save({path!r})
"""


def _python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300
    )


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("model") / "model.keras")
    done = _python(SAVE.format(path=path))
    assert done.returncode == 0, done.stderr[-2000:]
    return path


@pytest.mark.parametrize(
    "imports",
    [
        "import dpauc_tf; import tensorflow as tf; load = tf.keras.models.load_model",
        "import tensorflow as tf; import dpauc_tf; load = tf.keras.models.load_model",
        "import dpauc_tf; import keras; load = keras.models.load_model",
        # a module of ours that imports tensorflow itself (half imported when it finishes)
        "from dpauc_tf.core.thresholds import Thresholds; import keras; "
        "load = keras.models.load_model",
    ],
)
def test_a_saved_model_reloads_after_import_dpauc_tf_alone(saved, imports):
    code = (
        f"{imports}\n"
        f"model = load({saved!r})\n"
        "import numpy as np\n"
        "x, y = np.zeros((8, 3), 'float32'), np.array([0, 1] * 4, 'float32')\n"
        "print(sorted(model.evaluate(x, y, verbose=0, return_dict=True)))\n"
    )
    done = _python(code)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "'dp_auc'" in done.stdout
    assert "could not register" not in done.stderr  # the hook's warning: it failed


def test_import_dpauc_tf_imports_no_tensorflow():
    done = _python(
        "import sys, dpauc_tf; print('tensorflow' in sys.modules, 'keras' in sys.modules)"
    )
    assert done.stdout.split() == ["False", "False"], done.stderr[-2000:]
