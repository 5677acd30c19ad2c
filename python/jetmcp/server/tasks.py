"""Tasks (2025-11-25, experimental): ``tools/call`` with ``params.task`` answers at once with a
task while the tool runs in the background; ``tasks/get``, ``tasks/result``, ``tasks/list``
and ``tasks/cancel`` follow it.

Tasks live in memory: per session, or per server for session-less requests (their ids are
unguessable, and ``tasks/list`` without a session lists none, so a session-less task is
reached only by the client that holds its id). A finished task is forgotten once its
``ttl`` (from creation) has passed; running work is never stopped for that.

Messages the tool sends while it runs (progress, logs, elicitation and sampling requests)
carry ``_meta["io.modelcontextprotocol/related-task"]`` and go, in this order of preference,
to the stream of a ``tasks/result`` waiting for the task, to the session's own channel
(stdout on stdio, the GET stream over HTTP), or wait in a short queue for the next
``tasks/result``. While the tool waits for the client's answer the task is
``input_required``.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
import uuid
import weakref
from collections import deque
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

from jetmcp.core.call import NULL_SINK, Call, Outgoing, Result, Session, Sink
from jetmcp.errors import INTERNAL_ERROR, INVALID_PARAMS, REQUEST_CANCELLED, McpError
from jetmcp.protocol.revisions import Revision
from jetmcp.protocol.tasks import RELATED_TASK, TERMINAL, Status, now, outcome_of, related

if TYPE_CHECKING:
    from jetmcp.core.principal import Principal
    from jetmcp.server.tools import Tool

log = logging.getLogger("jetmcp")

#: How many messages wait for a ``tasks/result`` stream when there is nowhere to send them.
QUEUE_LIMIT = 256


#: The largest lifetime a task can have: JSON's largest safe integer of milliseconds.
_MAX_TTL_MS = 2**53 - 1


class TaskRoute:
    """The sink of a background task's call: see the module docstring for where it sends."""

    __slots__ = ("fallback", "queue", "remote", "waiting")

    def __init__(self, fallback: Sink) -> None:
        self.fallback = fallback
        self.waiting: list[Sink] = []
        self.queue: deque[bytes] = deque(maxlen=QUEUE_LIMIT)
        #: Hands a message to a ``tasks/result`` waiting in another process, if one does
        #: (True when it took it); set for tasks kept in a shared store.
        self.remote: Callable[[bytes], Awaitable[bool]] | None = None

    async def send(self, message: bytes) -> None:
        if self.waiting:
            await self.waiting[-1].send(message)
        elif self.remote is not None and await self.remote(message):
            return
        elif self.fallback is not NULL_SINK:
            await self.fallback.send(message)
        else:
            self.queue.append(message)

    async def attach(self, sink: Sink) -> None:
        """A ``tasks/result`` call waits on ``sink``: send what queued up there."""
        if sink is NULL_SINK:
            return
        self.waiting.append(sink)
        while self.queue:
            await sink.send(self.queue.popleft())

    def detach(self, sink: Sink) -> None:
        if sink in self.waiting:
            self.waiting.remove(sink)


class TaskState:
    """What a task of either revision has: its id, status and timestamps, its outcome once
    terminal, and the work running it. Its status never leaves a terminal one."""

    __slots__ = (
        "created",
        "created_at",
        "error",
        "id",
        "mirror",
        "owner",
        "result",
        "runner",
        "status",
        "status_message",
        "updated_at",
    )

    def __init__(self, task_id: str, owner: str | None = None) -> None:
        self.id = task_id
        #: The principal key of whoever created the task (None without auth): nobody else
        #: may read, wait for or cancel it.
        self.owner = owner
        self.status: Status = "working"
        self.status_message: str | None = None
        self.created_at = self.updated_at = now()
        self.created = time.monotonic()
        self.result: dict[str, Any] | None = None
        self.error: McpError | None = None
        self.runner: asyncio.Task[Any] | None = None
        #: Told of every change (a store shared between processes keeps a copy the other
        #: workers answer from); None when the task lives in this process only.
        self.mirror: Callable[[TaskState], None] | None = None

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    def changed(self) -> None:
        if self.mirror is not None:
            self.mirror(self)

    def move(self, status: Status, message: str | None = None) -> bool:
        """Change the status (never out of a terminal one); False when it could not."""
        if self.terminal:
            return False
        self.status = status
        self.status_message = message
        self.updated_at = now()
        self.changed()
        return True

    def fail(self, error: McpError) -> None:
        if self.terminal:
            return
        self.error = error
        self.move("failed", error.message)

    def stop_runner(self) -> None:
        """Cancel the work running the task, unless that is what is calling."""
        runner = self.runner
        if runner is not None and runner is not asyncio.current_task():
            runner.cancel()

    def cancel(self) -> object:
        """Cancel the task (each revision's kind says how)."""
        raise NotImplementedError

    def relay(self, remote: Callable[[bytes], Awaitable[bool]]) -> None:
        """Kept in a shared store: hand the messages the task sends to ``remote`` (a
        ``tasks/result`` waiting in another process) when none waits here. Only a 2025-11-25
        task sends any."""

    def open_requests(self) -> dict[str, Any]:
        """The questions the task waits on for ``tasks/update`` (none but a 2026-07-28
        task's in ``input_required``)."""
        return {}

    def answer(self, responses: dict[str, Any]) -> None:
        """``tasks/update``'s answers to the questions the task waits on (only a 2026-07-28
        task asks any)."""

    def to_wire(self) -> dict[str, Any]:
        """The task's fields up to ``lastUpdatedAt`` (each revision adds its lifetime and poll
        interval after them)."""
        task: dict[str, Any] = {"taskId": self.id, "status": self.status}
        if self.status_message is not None:
            task["statusMessage"] = self.status_message
        task["createdAt"] = self.created_at
        task["lastUpdatedAt"] = self.updated_at
        return task


def owner_of(call: Call) -> str | None:
    """The principal key a task created by ``call`` belongs to (None without auth)."""
    auth = call.auth
    return auth.key if auth is not None else None


def purge_expired(tasks: dict[str, Any]) -> None:
    """Forget the tasks in ``tasks`` (by id) whose lifetime has passed."""
    now = time.monotonic()
    for task_id in [t.id for t in tasks.values() if t.expired(now)]:
        del tasks[task_id]


def task_id_param(params: dict[str, Any]) -> str:
    """The ``taskId`` of a ``tasks/*`` request."""
    task_id = params.get("taskId")
    if not isinstance(task_id, str):
        raise McpError(INVALID_PARAMS, "Invalid params: taskId must be a string")
    return task_id


class TaskRecord(TaskState):
    """One task: its state, and the outcome of the request it wraps once it is terminal."""

    __slots__ = ("done", "inputs", "poll_interval", "route", "ttl")

    def __init__(
        self,
        ttl: int | None,
        poll_interval: int | None,
        route: TaskRoute,
        owner: str | None = None,
    ) -> None:
        super().__init__(str(uuid.uuid4()), owner)
        self.ttl = ttl
        self.poll_interval = poll_interval
        self.route = route
        self.done = asyncio.Event()
        #: Server-to-client requests of the task still waiting for the client's answer.
        self.inputs = 0

    def to_wire(self) -> dict[str, Any]:
        task = super().to_wire()
        task["ttl"] = self.ttl
        if self.poll_interval is not None:
            task["pollInterval"] = self.poll_interval
        return task

    def move(self, status: Status, message: str | None = None) -> bool:
        """As :meth:`TaskState.move`; moving into a terminal status sets ``done``."""
        if not super().move(status, message):
            return False
        if status in TERMINAL:
            self.done.set()
        return True

    def relay(self, remote: Callable[[bytes], Awaitable[bool]]) -> None:
        self.route.remote = remote

    def wait_for_input(self) -> None:
        """The task sent the client a request and waits for the answer."""
        self.inputs += 1
        if self.status == "working":
            self.move("input_required")

    def got_input(self) -> None:
        self.inputs = max(0, self.inputs - 1)
        if self.inputs == 0 and self.status == "input_required":
            self.move("working")

    def finish(self, result: dict[str, Any]) -> None:
        if self.terminal:
            return
        self.result = result
        if result.get("isError") is True:
            self.move("failed", _first_text(result))
        else:
            self.move("completed")

    def cancel(self, message: str = "The task was cancelled by request.") -> bool:
        if self.terminal:
            return False
        self.error = McpError(REQUEST_CANCELLED, "Task cancelled")
        self.move("cancelled", message)
        self.stop_runner()
        return True

    def expired(self, now: float) -> bool:
        return self.terminal and self.ttl is not None and (now - self.created) * 1000 >= self.ttl


def _first_text(result: dict[str, Any]) -> str | None:
    for block in result.get("content", ()):
        if isinstance(block, dict) and block.get("type") == "text":
            text = block.get("text")
            return text if isinstance(text, str) else None
    return None


class TaskCall(Call):
    """The call a task's tool runs with: the original request, rerouted (see :class:`TaskRoute`)."""

    __slots__ = ("task",)

    def __init__(
        self,
        method: str,
        raw_id: bytes | None,
        revision: Revision,
        session: Session | None,
        sink: Sink,
        meta: dict[str, Any] | None,
        outgoing: Outgoing | None,
        task: TaskRecord,
        auth: Principal | None = None,
    ) -> None:
        super().__init__(method, raw_id, revision, session, sink, meta, outgoing, auth)
        self.task = task


class TaskStore:
    """The tasks of one session (or of the server, for session-less requests)."""

    __slots__ = ("tasks",)

    def __init__(self) -> None:
        self.tasks: dict[str, TaskRecord] = {}

    def purge(self) -> None:
        purge_expired(self.tasks)

    def get(self, params: dict[str, Any], owner: str | None = None) -> TaskRecord:
        """The task ``params`` names; "not found" as well when ``owner`` (the caller's
        principal key) is not the one that created it."""
        task_id = task_id_param(params)
        self.purge()
        record = self.tasks.get(task_id)
        if record is None or record.owner != owner:
            raise McpError(INVALID_PARAMS, f"Failed to retrieve task: Task not found: {task_id}")
        return record


class TaskManager:
    """Creates and serves the tasks of one :class:`~jetmcp.server.app.Server`."""

    def __init__(
        self,
        run: Callable[[Tool, dict[str, Any], Call], Result],
        *,
        default_ttl_ms: int | None = 3_600_000,
        max_ttl_ms: int | None = 86_400_000,
        poll_interval_ms: int | None = 1000,
    ) -> None:
        self._run_tool = run
        self.default_ttl_ms = default_ttl_ms
        self.max_ttl_ms = max_ttl_ms
        self.poll_interval_ms = poll_interval_ms
        self._by_session: weakref.WeakKeyDictionary[Session, TaskStore] = (
            weakref.WeakKeyDictionary()
        )
        self._sessionless = TaskStore()
        #: Strong references to running work (the event loop keeps only weak ones).
        self._running: set[asyncio.Task[None]] = set()
        #: Where the tasks are also kept for other processes (sessions in Redis), which
        #: then answer ``tasks/*`` for tasks running elsewhere; None: this process only.
        self.shared: SharedTasks | None = None

    def store(self, call: Call) -> TaskStore:
        session = call.session
        if session is None:
            return self._sessionless
        store = self._by_session.get(session)
        if store is None:
            store = self._by_session[session] = TaskStore()
        return store

    def _ttl(self, requested: Any) -> int | None:
        ttl = self.default_ttl_ms
        # 1e400 reads as infinity, which int() refuses; past 2**53 the reply could not say it.
        if (
            isinstance(requested, int | float)
            and not isinstance(requested, bool)
            and math.isfinite(requested)
        ):
            ttl = max(0, min(int(requested), _MAX_TTL_MS))
        if self.max_ttl_ms is not None and (ttl is None or ttl > self.max_ttl_ms):
            ttl = self.max_ttl_ms
        return ttl

    # -- tools/call with params.task ----------------------------------------------------------

    def start(
        self, tool: Tool, arguments: dict[str, Any], call: Call, task_params: dict[str, Any]
    ) -> Result:
        """Create the task, start the tool in the background, answer ``CreateTaskResult``."""
        store = self.store(call)
        store.purge()
        session = call.session
        route = TaskRoute(session.outbound if session is not None else NULL_SINK)
        record = TaskRecord(
            self._ttl(task_params.get("ttl")), self.poll_interval_ms, route, owner_of(call)
        )
        store.tasks[record.id] = record
        background = TaskCall(
            call.method,
            call.raw_id,
            call.revision,
            session,
            route,
            call.meta,
            call.outgoing,
            record,
            call.auth,
        )
        background.http_headers = call.http_headers  # the headers of the request that started it
        loop = asyncio.get_running_loop()  # first: without one no coroutine is left unawaited
        runner = loop.create_task(self._run(record, tool, arguments, background))
        record.runner = runner
        self._running.add(runner)
        runner.add_done_callback(self._running.discard)
        if self.shared is not None:
            # Answered once the other workers can find the task.
            return self.shared.adopt(record, "legacy", _scope(call), {"task": record.to_wire()})
        return {"task": record.to_wire()}

    async def _run(
        self, record: TaskRecord, tool: Tool, arguments: dict[str, Any], call: TaskCall
    ) -> None:
        try:
            pending = self._run_tool(tool, arguments, call)
            result = pending if isinstance(pending, dict) else await pending
        except asyncio.CancelledError:
            record.cancel("The task was cancelled.")
            raise
        except McpError as exc:
            record.fail(exc)
        except Exception:
            log.exception("task %s (tool %s) failed", record.id, tool.name)
            record.fail(McpError(INTERNAL_ERROR, "Internal error"))
        else:
            record.finish(result)

    # -- tasks/* --------------------------------------------------------------------------

    def _elsewhere(self, params: dict[str, Any], call: Call) -> SharedTasks | None:
        """The shared store, when the task ``params`` names is not in this process."""
        if self.shared is None:
            return None
        store = self.store(call)
        store.purge()
        return self.shared if task_id_param(params) not in store.tasks else None

    def get(self, params: dict[str, Any], call: Call) -> Result:
        shared = self._elsewhere(params, call)
        if shared is not None:
            return shared.get("legacy", task_id_param(params), _scope(call))
        return self.store(call).get(params, owner_of(call)).to_wire()

    def cancel(self, params: dict[str, Any], call: Call) -> Result:
        shared = self._elsewhere(params, call)
        if shared is not None:
            return shared.cancel("legacy", task_id_param(params), _scope(call))
        record = self.store(call).get(params, owner_of(call))
        if not record.cancel():
            raise McpError(
                INVALID_PARAMS,
                f"Cannot cancel task {record.id}: it is already {record.status}",
            )
        return record.to_wire()

    def list(self, call: Call) -> list[dict[str, Any]] | Awaitable[list[dict[str, Any]]]:
        """The caller's session's tasks. Session-less callers share one store, reachable
        only by the ids each of them holds: listing it would hand every caller the others'
        tasks, so they are listed nothing."""
        if call.session is None:
            return []
        if self.shared is not None:
            return self.shared.list(_scope(call))
        store = self.store(call)
        store.purge()
        owner = owner_of(call)
        return [record.to_wire() for record in store.tasks.values() if record.owner == owner]

    def result(self, params: dict[str, Any], call: Call) -> Result:
        shared = self._elsewhere(params, call)
        if shared is not None:
            return shared.result("legacy", task_id_param(params), _scope(call), call.sink)
        record = self.store(call).get(params, owner_of(call))
        if record.terminal:
            return _outcome(record)
        return self._wait(record, call)

    async def _wait(self, record: TaskRecord, call: Call) -> dict[str, Any]:
        sink = call.sink
        try:
            await record.route.attach(sink)
            await record.done.wait()
        finally:
            record.route.detach(sink)
        return _outcome(record)


def owner_scope(owner: str | None) -> str:
    """The shared store's place for the tasks of ``owner`` outside any session (``""``
    without auth): another principal looks in another place, and finds nothing."""
    return "" if owner is None else "@" + owner


def _scope(call: Call) -> str:
    """Where a task of this call is found: its session (by id; a session belongs to one
    principal already), else its principal's own place."""
    session = call.session
    if session is not None:
        return session.id or ""
    return owner_scope(owner_of(call))


class SharedTasks(Protocol):
    """Tasks kept where every process serving the server can reach them (Redis): the
    process running a task keeps its copy up to date (``adopt``); any process answers for
    it. ``kind`` is ``"legacy"`` (2025-11-25) or ``"modern"`` (the 2026-07-28 extension);
    ``scope`` the session id, ``""`` for tasks outside a session."""

    def adopt(
        self, task: TaskState, kind: str, scope: str, created: dict[str, Any]
    ) -> Awaitable[dict[str, Any]]:
        """Keep ``task`` from now on; the awaitable gives ``created`` once it is kept."""
        ...

    def get(self, kind: str, task_id: str, scope: str) -> Awaitable[dict[str, Any]]: ...

    def cancel(self, kind: str, task_id: str, scope: str) -> Awaitable[dict[str, Any]]: ...

    def result(
        self, kind: str, task_id: str, scope: str, sink: Sink = NULL_SINK
    ) -> Awaitable[dict[str, Any]]:
        """Wait for the task and answer what the request it wraps answers; meanwhile the
        messages it sends (its requests to the client) go to ``sink``."""
        ...

    def list(self, scope: str) -> Awaitable[list[dict[str, Any]]]: ...

    def update(
        self, task_id: str, responses: dict[str, Any], scope: str = ""
    ) -> Awaitable[dict[str, Any]]: ...

    def answered(self, task_id: str) -> Awaitable[dict[str, Any]]:
        """``tasks/update`` was answered in this process, which runs the task: the ack,
        once every process would see the task without the answered questions."""
        ...


def _outcome(record: TaskRecord) -> dict[str, Any]:
    """What the wrapped request answered: its result, or its error raised again."""
    result: dict[str, Any] = outcome_of(record.id, record.error, record.result)
    return result


__all__ = [
    "RELATED_TASK",
    "TERMINAL",
    "SharedTasks",
    "TaskCall",
    "TaskManager",
    "TaskRecord",
    "TaskRoute",
    "TaskState",
    "TaskStore",
    "outcome_of",
    "owner_of",
    "owner_scope",
    "purge_expired",
    "related",
    "task_id_param",
]
