"""Importing TensorFlow without its C++ start-up chatter reaching the user's terminal.

TensorFlow's C++ side prints to file descriptor 2 while it starts: CUDA stub and driver
probes, CPU-feature notes, the absl "before InitializeLog" banner, TensorRT warnings.
``TF_CPP_MIN_LOG_LEVEL`` silences only part of it (the absl lines are written before it is
read). [`import_tensorflow_quietly`][], called by every entry point before its first
TensorFlow work, imports TensorFlow and initialises its devices with file descriptor 2
captured, then writes back every captured line that is not known start-up chatter, so real
errors still reach the terminal.

    >>> tf = import_tensorflow_quietly()
    >>> tf.__name__
    'tensorflow'
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
from types import ModuleType

CHATTER = re.compile(
    r"cudart_stub|cuda_platform|cuda_executor|cuda_driver|cuda_diagnostics|cuInit"
    r"|cpu_feature_guard|rebuild TensorFlow with the appropriate compiler flags"
    r"|All log messages before absl::InitializeLog|TF-TRT Warning|Could not find TensorRT"
    r"|oneDNN custom operations|TF_ENABLE_ONEDNN_OPTS|Unable to register cu(DNN|FFT|BLAS)"
    r"|computation placer already registered|This TensorFlow binary is optimized"
    r"|To enable the following instructions"
)


@contextlib.contextmanager
def _filtered_stderr():
    """Captures fd 2 (C++ and Python writes alike); writes back lines that are not chatter."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):  # no real fd 2 (some notebook kernels): nothing to filter
        yield
        return
    with tempfile.TemporaryFile(mode="w+b") as capture:
        os.dup2(capture.fileno(), 2)
        try:
            yield
        finally:
            try:
                sys.stderr.flush()
            except (OSError, ValueError):
                pass
            os.dup2(saved, 2)
            os.close(saved)
            capture.seek(0)
            kept = [
                line
                for line in capture.read().decode(errors="replace").splitlines(keepends=True)
                if not CHATTER.search(line)
            ]
            if kept:
                sys.stderr.write("".join(kept))
                sys.stderr.flush()


@contextlib.contextmanager
def quiet_tensorflow_start_up():
    """Code that may import TensorFlow on the way (reading a mechanism's capabilities loads
    its module): its start-up chatter is filtered out, every other line kept."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if "tensorflow" in sys.modules:
        yield
        return
    with _filtered_stderr():
        yield
        if "tensorflow" in sys.modules:  # imported on the way: its device probes print here
            tf = sys.modules["tensorflow"]
            tf.config.list_logical_devices()
            tf.get_logger().setLevel("ERROR")


def import_tensorflow_quietly() -> ModuleType:
    """``import tensorflow`` (and device start-up) with the C++ chatter filtered out."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if "tensorflow" in sys.modules:
        return sys.modules["tensorflow"]
    with _filtered_stderr():
        import tensorflow as tf

        tf.config.list_logical_devices()  # device probes print here, not at the first op
        tf.get_logger().setLevel("ERROR")
    return tf
