"""Stopping TFF's ``worker_binary`` subprocess (process hygiene).

``import tensorflow_federated`` installs a local C++ execution context; its first computation
starts a ``worker_binary`` subprocess that inherits Python's stdout/stderr and is stopped only
by a ``__del__`` that does not run at interpreter exit. Left alone it outlives Python and
keeps a pipe open, so ``python x.py | cat`` or a CI log pipe hangs.
[`shutdown_tff_workers`][] replaces the current context by a fresh local one (which starts
no worker until it is used) and collects the old one, whose manager then stops its worker.
Before that, every ``worker_binary`` child of this process is sent SIGTERM by its pid: the
manager's own stop is a SIGINT followed by an unbounded ``wait()``, the one step of the
shutdown that can block, and a worker is sometimes left over after switching to the test
context.
The library owns the worker's lifecycle from the moment ``dpauc_tf.federated`` is imported
(`own_tff_workers`, called by the package's ``__init__``):

* every ``worker_binary`` started afterwards in this process gets ``/dev/null`` as its stdout
  and stderr instead of Python's (TFF passes ``sys.stdout``/``sys.stderr`` to ``Popen``), so
  even a worker that outlives Python (a SIGKILLed parent skips ``atexit``) cannot hold the
  caller's pipe open; the worker's own log lines are dropped, its errors still reach Python
  through gRPC;
* [`shutdown_tff_workers`][] is registered with ``atexit``, so a script that calls
  [`dpauc_tf.federated.evaluate`][] (or runs a ``build_fed_eval`` process) and exits leaves
  no ``worker_binary`` behind.

The test suite also calls [`shutdown_tff_workers`][] at the end of the session
(``tests/conftest.py``).
"""

from __future__ import annotations

import atexit
import gc
import os
import signal
import subprocess
import sys
import time
import types

_registered = False
_WORKER_NAME = "worker_binary"


class _QuietWorkerPopen(subprocess.Popen):
    """``Popen`` that gives a ``worker_binary`` ``/dev/null`` for stdout and stderr."""

    def __init__(self, args, *rest, **kwargs):
        command = args[0] if isinstance(args, (list, tuple)) and args else args
        if _WORKER_NAME in os.path.basename(str(command)):
            kwargs["stdout"] = subprocess.DEVNULL
            kwargs["stderr"] = subprocess.DEVNULL
        super().__init__(args, *rest, **kwargs)


class _SubprocessWithQuietWorkers(types.ModuleType):
    """The ``subprocess`` module as TFF's executor factory sees it: ``Popen`` replaced."""

    Popen = _QuietWorkerPopen

    def __getattr__(self, name):
        return getattr(subprocess, name)


def quiet_worker_output() -> bool:
    """Makes TFF start every later ``worker_binary`` with ``/dev/null`` as stdout/stderr.

    TFF's local executor factory starts the worker with ``Popen(..., stdout=sys.stdout,
    stderr=sys.stderr)``; this replaces the ``subprocess`` module *that factory module* sees
    (nothing else in the process changes). Returns ``False`` when TFF's layout is not the one
    expected (the ``atexit`` shutdown still applies then).
    """
    module = sys.modules.get(
        "tensorflow_federated.python.core.impl.executor_stacks.executor_factory"
    )
    if module is None:
        try:
            from tensorflow_federated.python.core.impl.executor_stacks import (
                executor_factory as module,
            )
        except ImportError:  # pragma: no cover - another TFF layout
            return False
    if isinstance(getattr(module, "subprocess", None), _SubprocessWithQuietWorkers):
        return True
    if getattr(module, "subprocess", None) is not subprocess:  # pragma: no cover
        return False
    module.subprocess = _SubprocessWithQuietWorkers("subprocess")
    return True


def own_tff_workers() -> None:
    """Quiet worker output ([`quiet_worker_output`][]) and stop workers at exit (once)."""
    quiet_worker_output()
    register_atexit_shutdown()


def shutdown_tff_workers() -> bool:
    """Stops the worker processes of TFF's current execution context, if TFF is loaded.

    Returns ``True`` when TFF was imported (and its context replaced), ``False`` otherwise.
    Never imports TFF itself.
    """
    tff = sys.modules.get("tensorflow_federated")
    if tff is None:
        return False
    # Our worker_binary children first, by pid: the manager's own stop (SIGINT, then an
    # unbounded wait) then finds its worker gone and returns at once.
    _stop_child_workers()
    tff.backends.native.set_sync_local_cpp_execution_context()
    gc.collect()
    _stop_child_workers()  # a worker started since (none expected)
    return True


def _stop_child_workers(grace_s: float = 2.0) -> None:
    """SIGTERM to this process's ``worker_binary`` children, then up to ``grace_s`` for them
    to exit (they stay unreaped until their ``Popen`` is waited on, which TFF does)."""
    pids = _child_workers()
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + grace_s
    while pids and _child_workers() and time.monotonic() < deadline:
        time.sleep(0.05)


def _child_workers() -> list[int]:
    """Pids of this process's ``worker_binary`` children (Linux ``/proc``; else none)."""
    me = os.getpid()
    pids = []
    if not os.path.isdir("/proc"):
        return pids
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            if int(fields[1]) != me or fields[0] == "Z":
                continue
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                if b"worker_binary" in cmdline.read():
                    pids.append(int(entry))
        except (OSError, IndexError, ValueError):
            continue
    return pids


def _shutdown_at_exit() -> None:
    """[`shutdown_tff_workers`][], then no TFF context at all: the fresh one it installs
    holds a worker manager whose ``__del__`` would otherwise run in the interpreter's
    teardown, when TFF's ``subprocess`` global is gone ("Exception ignored in ...
    ServiceManager.__del__": AttributeError)."""
    if shutdown_tff_workers():
        from tensorflow_federated.python.core.impl.context_stack import set_default_context

        set_default_context.set_no_default_context()
        gc.collect()


def register_atexit_shutdown() -> None:
    """Registers the shutdown of TFF's workers ([`shutdown_tff_workers`][]) to run at
    interpreter exit (once)."""
    global _registered
    if not _registered:
        atexit.register(_shutdown_at_exit)
        _registered = True
