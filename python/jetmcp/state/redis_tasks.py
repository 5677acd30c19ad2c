"""Tasks of both revisions in Redis (the server's ``SharedTasks``, over the
:class:`~jetmcp.state.base.SharedTask` records): the worker
running a task writes its state to ``P t:<task>`` at each change; any worker answers
``tasks/get``, ``tasks/result`` (waiting for the ``tdone`` broadcast), ``tasks/list``,
``tasks/cancel`` and ``tasks/update`` for it. A cancellation or an update is told to every
worker (``tcan``/``tupd`` on ``P ctl``) and the one running the task acts on it. A task whose
worker stopped (no heartbeat) is failed by the next worker asked about it."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

import orjson

from jetmcp.core.call import NULL_SINK, Sink
from jetmcp.errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    REQUEST_CANCELLED,
    SERVER_ERROR,
    McpError,
)
from jetmcp.protocol.tasks import TERMINAL, now, outcome_of
from jetmcp.state.base import SharedTask, StateUnavailable

if TYPE_CHECKING:
    from jetmcp.server.app import Server
    from jetmcp.state.redis import RedisState

log = logging.getLogger("jetmcp.redis")

#: Seconds ``tasks/result`` waits for the ``tdone`` broadcast before it looks again (and
#: checks that the task's worker still runs).
RECHECK_SECONDS = 2.0
#: Seconds between two tries of a task's final state that Redis did not take.
RETRY_SECONDS = 1.0
_BASE = ("taskId", "status", "statusMessage", "createdAt", "lastUpdatedAt")


class RedisTasks:
    """The shared tasks of one server in one worker."""

    def __init__(self, state: RedisState, server: Server) -> None:
        self.state = state
        self.server = server
        #: Tasks running in this worker: id -> (kind, scope, task).
        self.local: dict[str, tuple[str, str, SharedTask]] = {}
        self._versions: dict[str, int] = {}
        self._waiters: dict[str, set[asyncio.Future[None]]] = {}
        #: The streams of the ``tasks/result`` calls waiting here, by task id.
        self._sinks: dict[str, list[Sink]] = {}
        state.on[b"tdone"] = self._on_done
        state.on[b"tcan"] = self._on_cancel
        state.on[b"tupd"] = self._on_update
        server._tasks.shared = self
        server._modern_tasks.shared = self

    # -- the worker running a task -------------------------------------------------------

    def adopt(
        self, task: SharedTask, kind: str, scope: str, created: dict[str, Any]
    ) -> Coroutine[Any, Any, dict[str, Any]]:
        self.local[task.id] = (kind, scope, task)
        task.mirror = self._mirror
        task_id = task.id
        task.relay(lambda message: self._to_waiter(task_id, message))
        return self._adopted(task, created)

    async def _to_waiter(self, task_id: str, message: bytes) -> bool:
        """A message of a running task, to a ``tasks/result`` waiting in another worker."""
        try:
            return bool(await self.state.run("task_message", task_id, message))
        except StateUnavailable:
            return False

    async def _adopted(self, task: SharedTask, created: dict[str, Any]) -> dict[str, Any]:
        try:
            await self._write(task)
        except StateUnavailable as exc:
            task.stop_runner()
            raise McpError(SERVER_ERROR, f"{exc}; retry later") from None
        return created

    def _mirror(self, task: SharedTask) -> None:
        # A change of the running task: no client waits for it (tasks/get in any worker
        # reads it from Redis), so a refused write is logged with what the others miss. Its
        # final state is retried until it lands (see _write).
        self.state.spawn(
            self._write(task, retry=task.terminal),
            f"task {task.id} is now {task.status} (other workers see its previous state)",
        )

    async def _write(self, task: SharedTask, retry: bool = False) -> None:
        """Put the task's state in Redis. With ``retry`` (its final state, which nothing
        would write again: every worker would report it running for as long as this one
        lives), a write Redis does not take is tried again every :data:`RETRY_SECONDS`
        until it lands, the task's ttl passes, or the worker stops; each miss is logged."""
        entry = self.local.get(task.id)
        if entry is None:
            return
        kind, scope, _ = entry
        version = self._versions[task.id] = self._versions.get(task.id, 0) + 1
        if task.terminal:
            del self.local[task.id]
            self._versions.pop(task.id, None)
        wire = task.to_wire()
        ttl = wire.get("ttl") if kind == "legacy" else wire.get("ttlMs")
        fields: list[Any] = [
            "status",
            task.status,
            "msg",
            task.status_message or "",
            "updated",
            task.updated_at,
            "created",
            task.created_at,
            "extra",
            orjson.dumps({k: v for k, v in wire.items() if k not in _BASE}),
            "outcome",
            _outcome_json(task),
            "inputs",
            _inputs_json(task),
        ]
        ttl_ms = ttl if isinstance(ttl, int) else -1
        until = time.monotonic() + ttl_ms / 1000 if retry and ttl_ms > 0 else math.inf
        while True:
            try:
                await self.state.run(
                    "task_put", task.id, version, kind, scope, self.state.worker, ttl_ms, *fields
                )
                return
            except StateUnavailable as exc:
                if not retry or time.monotonic() + RETRY_SECONDS >= until:
                    raise
                log.warning(
                    "not stored in Redis yet: task %s's final state, %s (%s); trying again in %g s",
                    task.id,
                    task.status,
                    exc,
                    RETRY_SECONDS,
                )
            await asyncio.sleep(RETRY_SECONDS)

    # -- any worker ----------------------------------------------------------------------

    async def _read(self, kind: str, task_id: str, scope: str) -> dict[str, bytes]:
        """The task's fields (its worker checked alive); -32602 when there is none."""
        fields = await self._run("task_get", task_id, kind, scope)
        if not fields:
            raise _not_found(kind, task_id)
        record = _as_dict(fields)
        status = record.get("status", b"").decode()
        owner = record.get("owner", b"").decode()
        if (
            status not in TERMINAL
            and owner != self.state.worker
            and not await self.state.worker_alive(owner)
        ):
            error = McpError(INTERNAL_ERROR, "The worker running this task stopped")
            await self._run(
                "task_end",
                task_id,
                kind,
                scope,
                "failed",
                error.message,
                now(),
                orjson.dumps({"error": error.to_dict()}),
            )
            return await self._read(kind, task_id, scope)
        return record

    async def get(self, kind: str, task_id: str, scope: str) -> dict[str, Any]:
        record = await self._read(kind, task_id, scope)
        wire = _wire(task_id, record)
        if kind == "legacy":
            return wire
        out: dict[str, Any] = {"resultType": "complete", **wire}
        status = wire["status"]
        outcome = _loads(record.get("outcome"))
        asked = _loads(record.get("inputs"))
        inputs = _unanswered(asked, record)
        if status == "input_required" and asked and not inputs:
            # Every question is answered; the running worker has not written that yet.
            out["status"] = "working"
        elif status == "input_required" and inputs:
            out["inputRequests"] = inputs
        elif status == "completed" and "result" in outcome:
            out["result"] = outcome["result"]
        elif status == "failed" and "error" in outcome:
            out["error"] = outcome["error"]
        return out

    async def cancel(self, kind: str, task_id: str, scope: str) -> dict[str, Any]:
        message = "The task was cancelled by request."
        outcome = b""
        if kind == "legacy":
            outcome = orjson.dumps(
                {"error": {"code": REQUEST_CANCELLED, "message": "Task cancelled"}}
            )
        ended = await self._run(
            "task_end", task_id, kind, scope, "cancelled", message, now(), outcome
        )
        if not ended:
            raise _not_found(kind, task_id)
        if kind == "modern":
            return {"resultType": "complete"}
        if int(ended[0]) == 0:
            status = ended[1].decode() if isinstance(ended[1], bytes) else str(ended[1])
            raise McpError(INVALID_PARAMS, f"Cannot cancel task {task_id}: it is already {status}")
        return await self.get(kind, task_id, scope)

    async def result(
        self, kind: str, task_id: str, scope: str, sink: Sink = NULL_SINK
    ) -> dict[str, Any]:
        if sink is NULL_SINK:
            return await self._result(kind, task_id, scope)
        sinks = self._sinks.setdefault(task_id, [])
        sinks.append(sink)
        worker = self.state.worker
        try:
            await self._run("task_sink", task_id, worker, "1")
            return await self._result(kind, task_id, scope)
        finally:
            sinks.remove(sink)
            if not sinks:
                del self._sinks[task_id]
                self.state.spawn(
                    self.state.run("task_sink", task_id, worker, "0"),
                    f"the end of the wait for task {task_id}'s messages here (they are "
                    "sent to this worker, which drops them, until the task ends)",
                )

    def deliver(self, task_id: str, message: bytes) -> None:
        """A message of a task running elsewhere, for the ``tasks/result`` waiting here."""
        sinks = self._sinks.get(task_id)
        if sinks:
            self.state.spawn(sinks[-1].send(message))

    async def _result(self, kind: str, task_id: str, scope: str) -> dict[str, Any]:
        while True:
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.setdefault(task_id, set()).add(waiter)
            try:
                record = await self._read(kind, task_id, scope)
                if record.get("status", b"").decode() in TERMINAL:
                    outcome = _loads(record.get("outcome"))
                    error = outcome.get("error")
                    exc = None
                    if isinstance(error, dict):
                        exc = McpError(
                            int(error.get("code", INTERNAL_ERROR)), str(error.get("message"))
                        )
                        if "data" in error:
                            exc.data = error["data"]
                    result: dict[str, Any] = outcome_of(task_id, exc, outcome.get("result"))
                    return result
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(waiter), RECHECK_SECONDS)
            finally:
                waiters = self._waiters.get(task_id)
                if waiters is not None:
                    waiters.discard(waiter)
                    if not waiters:
                        del self._waiters[task_id]

    async def list(self, scope: str) -> list[dict[str, Any]]:
        try:
            ids = await self.state.bounded(
                self.state.client.smembers(self.state.key(f"s:{scope}:tasks"))
            )
        except Exception as exc:
            raise McpError(SERVER_ERROR, f"the session store is unavailable: {exc}") from None
        out: list[dict[str, Any]] = []
        for raw in ids:
            task_id = raw.decode() if isinstance(raw, bytes) else str(raw)
            try:
                out.append(await self.get("legacy", task_id, scope))
            except McpError:
                continue  # expired meanwhile
        out.sort(key=lambda task: (task["createdAt"], task["taskId"]))
        return out

    async def update(
        self, task_id: str, responses: dict[str, Any], scope: str = ""
    ) -> dict[str, Any]:
        record = await self._read("modern", task_id, scope)
        pending = _unanswered(_loads(record.get("inputs")), record)
        for key, value in responses.items():
            if key in pending and not isinstance(value, dict):
                raise McpError(
                    INVALID_PARAMS,
                    f"Invalid params: inputResponses[{key!r}] must be an object",
                    {"inputKey": key},
                )
        known = {key: value for key, value in responses.items() if key in pending}
        if known:
            # Marked answered in the same step as it is told: a tasks/get anywhere right
            # after this ack no longer lists these keys.
            told = await self._run(
                "task_answer", task_id, "modern", scope, orjson.dumps(known), *known
            )
            if told is None:
                raise _not_found("modern", task_id)
        return {"resultType": "complete"}

    async def answered(self, task_id: str) -> dict[str, Any]:
        """``tasks/update`` answered here, in the worker running the task: its new state is
        in Redis before the ack, so a ``tasks/get`` in any worker right after sees it."""
        entry = self.local.get(task_id)
        if entry is not None:
            try:
                await self._write(entry[2])
            except StateUnavailable as exc:
                raise McpError(SERVER_ERROR, f"{exc}; retry later") from None
        return {"resultType": "complete"}

    async def _run(self, name: str, *args: Any) -> Any:
        try:
            return await self.state.run(name, *args)
        except StateUnavailable as exc:
            raise McpError(SERVER_ERROR, f"{exc}; retry later") from None

    # -- what other workers say ----------------------------------------------------------

    def _on_done(self, rest: bytes) -> None:
        for waiter in self._waiters.get(rest.decode(), ()):
            if not waiter.done():
                waiter.set_result(None)

    def _on_cancel(self, rest: bytes) -> None:
        entry = self.local.get(rest.decode())
        if entry is None:
            return
        _, _, task = entry
        task.cancel()

    def _on_update(self, rest: bytes) -> None:
        task_id, _, payload = rest.partition(b" ")
        entry = self.local.get(task_id.decode())
        if entry is None:
            return
        kind, _, task = entry
        if kind == "modern":
            task.answer(orjson.loads(payload))


def _outcome_json(task: SharedTask) -> bytes:
    if not task.terminal:
        return b""
    if task.error is not None:
        return orjson.dumps({"error": task.error.to_dict()})
    if task.result is not None:
        return orjson.dumps({"result": task.result})
    return b""


def _inputs_json(task: SharedTask) -> bytes:
    requests = task.open_requests()
    return orjson.dumps(requests) if requests else b""


def _unanswered(inputs: dict[str, Any], record: dict[str, bytes]) -> dict[str, Any]:
    """``inputs`` without the keys ``tasks/update`` answered in another worker (marked
    ``ans:<key>``; the running worker may not have taken the answer yet)."""
    return {key: value for key, value in inputs.items() if "ans:" + key not in record}


def _as_dict(fields: list[Any]) -> dict[str, bytes]:
    return {
        (k.decode() if isinstance(k, bytes) else str(k)): v
        for k, v in zip(fields[::2], fields[1::2], strict=True)
    }


def _loads(raw: bytes | None) -> dict[str, Any]:
    if not raw:
        return {}
    value = orjson.loads(raw)
    return value if isinstance(value, dict) else {}


def _wire(task_id: str, record: dict[str, bytes]) -> dict[str, Any]:
    wire: dict[str, Any] = {"taskId": task_id, "status": record["status"].decode()}
    message = record.get("msg")
    if message:
        wire["statusMessage"] = message.decode()
    wire["createdAt"] = record.get("created", b"").decode()
    wire["lastUpdatedAt"] = record.get("updated", b"").decode()
    wire.update(_loads(record.get("extra")))
    return wire


def _not_found(kind: str, task_id: str) -> McpError:
    if kind == "legacy":
        return McpError(INVALID_PARAMS, f"Failed to retrieve task: Task not found: {task_id}")
    return McpError(INVALID_PARAMS, f"Invalid params: no task {task_id}")


__all__ = ["RedisTasks"]
