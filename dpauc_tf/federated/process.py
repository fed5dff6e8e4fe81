"""Stopping TFF's ``worker_binary`` subprocess (process hygiene).

``import tensorflow_federated`` installs a local C++ execution context; its first computation
starts a ``worker_binary`` subprocess that inherits Python's stdout/stderr and is stopped only
by a ``__del__`` that does not run at interpreter exit. Left alone it outlives Python and
keeps a pipe open, so ``python x.py | cat`` or a CI log pipe hangs.
:func:`shutdown_tff_workers` replaces the current context by a fresh local one (which starts
no worker until it is used) and collects the old one, whose manager then stops its worker; any ``worker_binary`` child
that is still running afterwards (seen once after switching to the test context) is sent
SIGTERM by its pid.
Command-line entry points register it with :func:`register_atexit_shutdown`; the test suite
calls it at the end of the session (``tests/conftest.py``).
"""

from __future__ import annotations

import atexit
import gc
import os
import signal
import sys
import time

_registered = False


def shutdown_tff_workers() -> bool:
    """Stops the worker processes of TFF's current execution context, if TFF is loaded.

    Returns ``True`` when TFF was imported (and its context replaced), ``False`` otherwise.
    Never imports TFF itself.
    """
    tff = sys.modules.get("tensorflow_federated")
    if tff is None:
        return False
    tff.backends.native.set_sync_local_cpp_execution_context()
    gc.collect()
    # Fallback: a worker whose manager was not collected is still our child; stop it by pid.
    for pid in _child_workers():
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + 2.0
    while _child_workers() and time.monotonic() < deadline:
        time.sleep(0.05)
    return True


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


def register_atexit_shutdown() -> None:
    """Registers :func:`shutdown_tff_workers` to run at interpreter exit (once)."""
    global _registered
    if not _registered:
        atexit.register(shutdown_tff_workers)
        _registered = True
