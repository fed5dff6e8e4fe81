"""Flower apps run in this process: a ``Grid`` that hands each message to the ``ClientApp``.

Flower 1.42's simulation engine always starts Ray (worker processes, a dashboard agent);
on a small or busy machine its start-up takes tens of seconds or times out. ``LocalGrid``
runs the *same* ``ServerApp`` and ``ClientApp`` objects (``DefaultWorkflow``,
``SecAggPlusWorkflow``, ``secaggplus_mod``, the client's mods) with the transport replaced
by a direct call on a copy of each message: one persistent ``Context`` per node (SecAgg+ keeps its keys there
between stages), a client exception becomes an error reply (as in Flower's simulation),
replies come back in order. Only the transport differs: every message the server
receives is the one it would receive over the network. With a ``timeout`` the clients answer in
worker threads, and only the replies that came back in time are returned (in order).

    >>> grid = LocalGrid(client_app=None, num_nodes=3)
    >>> sorted(grid.get_node_ids()) == list(range(1, 4))
    True
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Iterable
from uuid import uuid4

RUN_ID = 1
MAX_WORKERS = 8  # threads that deliver messages when a timeout bounds the exchange


def _flwr():
    from flwr.app import Context, Error, Message, RecordDict
    from flwr.common.constant import SUPERLINK_NODE_ID, ErrorCode
    from flwr.serverapp.grid import Grid
    from flwr.supercore.run import Run

    return Context, Error, Message, RecordDict, SUPERLINK_NODE_ID, ErrorCode, Grid, Run


class LocalGrid:
    """An in-process Flower ``Grid`` over ``num_nodes`` nodes (``partition-id`` 0..K-1).

    Built as a subclass of ``flwr.serverapp.grid.Grid`` on first use (Flower is imported
    lazily); see the module docstring.
    """

    def __new__(cls, client_app, num_nodes: int, run_config: dict | None = None):
        grid_class = _local_grid_class()
        instance = object.__new__(grid_class)
        instance.__init__(client_app, num_nodes, run_config)
        return instance


_GRID_CLASS: list = []


def _local_grid_class():
    if _GRID_CLASS:
        return _GRID_CLASS[0]
    Context, Error, Message, RecordDict, SUPERLINK_NODE_ID, ErrorCode, Grid, Run = _flwr()

    class _LocalGrid(Grid):
        def __init__(self, client_app, num_nodes: int, run_config: dict | None = None):
            self._client_app = client_app
            self._node_ids = list(range(1, int(num_nodes) + 1))
            self._contexts = {
                node_id: Context(
                    run_id=RUN_ID,
                    node_id=node_id,
                    node_config={"partition-id": index, "num-partitions": int(num_nodes)},
                    state=RecordDict(),
                    run_config=dict(run_config or {}),
                )
                for index, node_id in enumerate(self._node_ids)
            }
            self._replies: dict[str, object] = {}
            self._run = Run.create_empty(RUN_ID)

        def set_run(self, run) -> None:
            self._run = run

        @property
        def run(self):
            return self._run

        def create_message(self, content, message_type, dst_node_id, group_id, ttl=None):
            return Message(content, dst_node_id, message_type, ttl=ttl, group_id=group_id)

        def get_node_ids(self) -> Iterable[int]:
            return list(self._node_ids)

        def get_nodes(self):
            return []

        def push_messages(self, messages) -> Iterable[str]:
            ids = []
            for message in messages:
                message_id = str(uuid4())
                message.metadata.__dict__["_message_id"] = message_id
                message.metadata.__dict__["_run_id"] = RUN_ID
                message.metadata.__dict__["_src_node_id"] = SUPERLINK_NODE_ID
                self._replies[message_id] = self._deliver(message)
                ids.append(message_id)
            return ids

        def _deliver(self, message):
            node_id = message.metadata.dst_node_id
            # A network copies every message: workflows reuse one content for all nodes,
            # and secaggplus_mod edits what it receives.
            message = copy.deepcopy(message)
            try:
                reply = self._client_app(message, self._contexts[node_id])
            except Exception as error:
                reason = f"{type(error)}:<'{error}'>"
                reply = Message(
                    Error(code=ErrorCode.CLIENT_APP_RAISED_EXCEPTION, reason=reason),
                    reply_to=message,
                )
            reply.metadata.__dict__["_message_id"] = str(uuid4())
            reply.metadata.__dict__["_src_node_id"] = node_id
            return reply

        def pull_messages(self, message_ids):
            return [self._replies.pop(i) for i in list(message_ids) if i in self._replies]

        def send_and_receive(self, messages, *, timeout=None):
            if timeout is None:
                return self.pull_messages(self.push_messages(messages))
            return self._send_and_receive_within(list(messages), float(timeout))

        def _send_and_receive_within(self, messages, timeout: float):
            """The clients answer in worker threads (as real clients answer in parallel);
            only the replies that came back within ``timeout`` seconds are returned, in
            the messages' order; later ones are dropped."""
            pending = list(enumerate(messages))
            replies: dict[int, list] = {}
            lock, late = threading.Lock(), threading.Event()

            def work():
                while True:
                    with lock:
                        if late.is_set() or not pending:
                            return
                        index, message = pending.pop(0)
                    ids = self.push_messages([message])
                    with lock:
                        answered = self.pull_messages(ids)
                        if not late.is_set():
                            replies[index] = answered

            workers = [
                threading.Thread(target=work, name="dpauc-local-grid", daemon=True)
                for _ in range(min(MAX_WORKERS, len(messages)))
            ]
            deadline = time.monotonic() + timeout
            for worker in workers:
                worker.start()
            for worker in workers:
                worker.join(max(deadline - time.monotonic(), 0.0))
            with lock:
                late.set()
                return [reply for index in sorted(replies) for reply in replies[index]]

    _GRID_CLASS.append(_LocalGrid)
    return _LocalGrid


def run_in_process(server_app, client_app, num_nodes: int, run_config: dict | None = None) -> None:
    """Runs ``server_app`` against ``num_nodes`` copies of ``client_app`` in this process;
    every app's ``context.run_config`` is ``run_config`` (an app's ``[tool.flwr.app.config]``)."""
    Context, _, _, RecordDict, SUPERLINK_NODE_ID, *_ = _flwr()
    grid = LocalGrid(client_app, num_nodes, run_config)
    context = Context(
        run_id=RUN_ID,
        node_id=SUPERLINK_NODE_ID,
        node_config={},
        state=RecordDict(),
        run_config=dict(run_config or {}),
    )
    from flwr.supercore.task_identity import TaskIdentity

    # Flower stamps new messages with the process's task identity (set by its runtimes).
    saved = (TaskIdentity._task_id, TaskIdentity._run_id, TaskIdentity._node_id)
    TaskIdentity.task_id, TaskIdentity.run_id, TaskIdentity.node_id = 1, RUN_ID, SUPERLINK_NODE_ID
    try:
        server_app(grid, context)
    finally:
        TaskIdentity._task_id, TaskIdentity._run_id, TaskIdentity._node_id = saved
