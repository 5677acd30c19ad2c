"""The tasks extension ``io.modelcontextprotocol/tasks`` (2026-07-28).

On 2026-07-28 tasks are an extension, advertised under ``capabilities.extensions`` and used
only by requests whose ``clientCapabilities.extensions`` declare it. The server decides:

- a tool registered with ``task_support="optional"`` or ``"required"`` called by such a
  request becomes a task at once, answered with a flat ``CreateTaskResult``
  (``resultType: "task"``, ``taskId``, ``status``, ``createdAt``, ``lastUpdatedAt``,
  ``ttlMs``, ``pollIntervalMs``, and an empty ``content``: see
  :meth:`ModernTask.created_result`); a legacy ``task`` hint in the params is ignored;
- a tool registered with ``defer_task=True`` runs in the request first (it may gather input
  in MRTR rounds) and becomes a task when it awaits ``ctx.start_task()``;
- without the extension, ``optional`` tools run in the request and ``required`` ones are
  refused with -32021 naming the extension, as are ``tasks/get``, ``tasks/update`` and
  ``tasks/cancel``.

``tasks/get`` answers the task with its ``result`` inlined once ``completed`` (a tool error is
``completed`` with ``result.isError``), its ``error`` once ``failed`` (a JSON-RPC error the
tool raised), and its ``inputRequests`` while ``input_required``: a question the task's
handler asks (``ctx.elicit`` ...) waits until ``tasks/update`` brings its answer in
``inputResponses`` (several may be pending; each answer is taken as it comes, unknown keys
are ignored). ``tasks/cancel`` is idempotent. Both acknowledge with ``{"resultType":
"complete"}``. ``tasks/result`` and ``tasks/list`` do not exist on this revision.

Tasks live in one store per server, keyed by unguessable ids, so any stateless request can
reach them. A terminal task is forgotten once ``ttlMs`` (from creation) has passed.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from jetmcp.core.call import NULL_SINK, Call, Result
from jetmcp.core.mrtr import InputRequired, InputRound, Inputs, RoundCall
from jetmcp.errors import INTERNAL_ERROR, INVALID_PARAMS, MISSING_CLIENT_CAPABILITY, McpError
from jetmcp.server.tasks import (
    SharedTasks,
    TaskState,
    owner_of,
    owner_scope,
    purge_expired,
    task_id_param,
)

if TYPE_CHECKING:
    from jetmcp.server.app import Server
    from jetmcp.server.tools import Tool

log = logging.getLogger("jetmcp")

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"


def declares_tasks(call: Call) -> bool:
    """Whether this request's client capabilities declare the tasks extension."""
    extensions = call.client_capabilities.get("extensions")
    return isinstance(extensions, dict) and isinstance(extensions.get(TASKS_EXTENSION), dict)


def missing_tasks_extension(what: str) -> McpError:
    return McpError(
        MISSING_CLIENT_CAPABILITY,
        f"{what} needs the client capability extensions[{TASKS_EXTENSION!r}]",
        {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}},
    )


class ModernTask(TaskState):
    """One task of the extension: its state, and its outcome once terminal."""

    __slots__ = ("pending", "poll_interval_ms", "ttl_ms")

    def __init__(
        self, ttl_ms: int | None, poll_interval_ms: int | None, owner: str | None = None
    ) -> None:
        super().__init__(secrets.token_urlsafe(18), owner)
        self.ttl_ms = ttl_ms
        self.poll_interval_ms = poll_interval_ms
        #: Questions waiting for ``tasks/update``: key -> (the input request, its answer).
        self.pending: dict[str, tuple[dict[str, Any], asyncio.Future[Any]]] = {}

    def finish(self, result: dict[str, Any]) -> None:
        if not self.terminal:
            self.result = result
            self.move("completed")

    def cancel(self) -> None:
        if self.terminal:
            return
        self.move("cancelled", "The task was cancelled by request.")
        for _, answer in self.pending.values():
            answer.cancel()
        self.stop_runner()

    def expired(self, now: float) -> bool:
        return (
            self.terminal and self.ttl_ms is not None and (now - self.created) * 1000 >= self.ttl_ms
        )

    def to_wire(self) -> dict[str, Any]:
        task = super().to_wire()
        task["ttlMs"] = self.ttl_ms
        if self.poll_interval_ms is not None:
            task["pollIntervalMs"] = self.poll_interval_ms
        return task

    def created_result(self) -> dict[str, Any]:
        """The ``CreateTaskResult``: the task itself, flat. It also carries an empty
        ``content``, so that it stays a valid ``CallToolResult`` of the core 2026-07-28 schema
        for whatever validates ``tools/call`` results without knowing the extension."""
        return {"resultType": "task", **self.to_wire(), "content": []}

    def open_requests(self) -> dict[str, Any]:
        if self.status == "input_required" and self.pending:
            return {key: request for key, (request, _) in self.pending.items()}
        return {}

    def answer(self, responses: dict[str, Any]) -> None:
        known = [(key, value) for key, value in responses.items() if key in self.pending]
        for key, value in known:
            if not isinstance(value, dict):
                raise McpError(
                    INVALID_PARAMS,
                    f"Invalid params: inputResponses[{key!r}] must be an object",
                    {"inputKey": key},
                )
        for key, value in known:
            # Off the pending list now, not when the handler resumes: a tasks/get right
            # after this must show only what is still unanswered.
            _, answer = self.pending.pop(key)
            if not answer.done():
                answer.set_result(value)
        if known and not self.pending and self.status == "input_required":
            self.move("working")
        elif known:
            self.changed()

    def detailed(self) -> dict[str, Any]:
        """The ``tasks/get`` result: the task, with its outcome or its pending questions."""
        out: dict[str, Any] = {"resultType": "complete", **self.to_wire()}
        if self.status == "input_required" and self.pending:
            out["inputRequests"] = {key: request for key, (request, _) in self.pending.items()}
        elif self.status == "completed" and self.result is not None:
            out["result"] = self.result
        elif self.status == "failed" and self.error is not None:
            out["error"] = self.error.to_dict()
        return out


class TaskInputs(Inputs):
    """A task's questions: each waits in ``inputRequests`` until ``tasks/update`` answers."""

    __slots__ = ("task",)

    def __init__(self, task: ModernTask, state: dict[str, Any] | None = None) -> None:
        super().__init__(state)
        self.task = task

    async def ask(self, key: str | None, method: str, params: dict[str, Any]) -> Any:
        chosen = self.next_key(key, method)
        task = self.task
        answer: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        task.pending[chosen] = ({"method": method, "params": params}, answer)
        if task.status == "working":
            task.move("input_required")
        else:
            task.changed()
        try:
            return await answer
        finally:
            task.pending.pop(chosen, None)
            if not task.pending and task.status == "input_required":
                task.move("working")
            else:
                task.changed()


class ModernTasks:
    """The extension's tasks of one :class:`~jetmcp.server.app.Server`."""

    def __init__(
        self,
        *,
        ttl_ms: int | None = 3_600_000,
        poll_interval_ms: int | None = 1000,
    ) -> None:
        self.ttl_ms = ttl_ms
        self.poll_interval_ms = poll_interval_ms
        self.tasks: dict[str, ModernTask] = {}
        #: Strong references to running work (the event loop keeps only weak ones).
        self._running: set[asyncio.Task[Any]] = set()
        #: Where the tasks are also kept for other processes (see
        #: :class:`~jetmcp.server.tasks.SharedTasks`); None: this process only.
        self.shared: SharedTasks | None = None

    # -- creating ----------------------------------------------------------------------------

    def _create(self, call: Call) -> ModernTask:
        self.purge()
        task = ModernTask(self.ttl_ms, self.poll_interval_ms, owner_of(call))
        self.tasks[task.id] = task
        return task

    def _keep(self, runner: asyncio.Task[Any]) -> None:
        self._running.add(runner)
        runner.add_done_callback(self._running.discard)

    @staticmethod
    def _become_task(call: RoundCall, task: ModernTask) -> None:
        # Later questions wait for tasks/update; the request's stream is answered already.
        before = call.inputs
        inputs = TaskInputs(task, before.state)
        inputs.adopt(before)
        call.inputs = inputs
        call.sink = NULL_SINK

    def start(
        self, tool: Tool, arguments: dict[str, Any], call: RoundCall, server: Server
    ) -> Result:
        """Run ``tool`` as a task for a request that declared the extension."""
        if tool.defer_task:
            return self._deferred(tool, arguments, call, server)
        task = self._create(call)
        self._become_task(call, task)
        runner = asyncio.get_running_loop().create_task(
            self._drive(task, lambda: tool.call(arguments, call, server))
        )
        task.runner = runner
        self._keep(runner)
        if self.shared is not None:
            return self.shared.adopt(task, "modern", owner_scope(task.owner), task.created_result())
        return task.created_result()

    async def _drive(self, task: ModernTask, work: Callable[[], Result]) -> None:
        try:
            result = work()
            if not isinstance(result, dict):
                result = await result
        except asyncio.CancelledError:
            task.cancel()
            raise
        except InputRequired:  # a task's questions wait instead; never expected here
            task.fail(McpError(INTERNAL_ERROR, "Internal error"))
        except McpError as exc:
            task.fail(exc)
        except Exception:
            log.exception("task %s failed", task.id)
            task.fail(McpError(INTERNAL_ERROR, "Internal error"))
        else:
            task.finish(result)

    async def _deferred(
        self, tool: Tool, arguments: dict[str, Any], call: RoundCall, server: Server
    ) -> dict[str, Any]:
        """Run the tool in the request until it awaits ``ctx.start_task()``: its questions
        before that are MRTR rounds; the request is then answered with the task."""
        inputs = call.inputs
        assert isinstance(inputs, InputRound)
        loop = asyncio.get_running_loop()
        outcome: asyncio.Future[dict[str, Any]] = loop.create_future()
        made: list[ModernTask] = []

        def settle(result: dict[str, Any] | None, error: McpError | None) -> None:
            if made:
                task = made[0]
                if error is not None:
                    task.fail(error)
                elif result is not None:
                    task.finish(result)
            elif not outcome.done():
                if error is not None:
                    outcome.set_exception(error)
                else:
                    outcome.set_result(result or {})

        async def escalate() -> None:
            if made:
                return
            task = self._create(call)
            made.append(task)
            self._become_task(call, task)
            task.runner = asyncio.current_task()
            created = task.created_result()
            if self.shared is not None:
                created = await self.shared.adopt(task, "modern", owner_scope(task.owner), created)
            if not outcome.done():
                outcome.set_result(created)

        inputs.escalate = escalate

        async def body() -> None:
            try:
                result = tool.call(arguments, call, server)
                if not isinstance(result, dict):
                    result = await result
            except asyncio.CancelledError:
                if made:
                    made[0].cancel()
                raise
            except InputRequired as exc:
                if made:
                    settle(None, McpError(INTERNAL_ERROR, "Internal error"))
                else:
                    settle(inputs.result(exc.requests), None)
            except McpError as exc:
                settle(None, exc)
            except Exception:
                log.exception("tool %s failed", tool.name)
                settle(None, McpError(INTERNAL_ERROR, "Internal error"))
            else:
                settle(result, None)

        runner = loop.create_task(body())
        self._keep(runner)
        try:
            return await asyncio.shield(outcome)
        except asyncio.CancelledError:
            if not made:
                runner.cancel()
            raise

    # -- tasks/* -----------------------------------------------------------------------------

    def purge(self) -> None:
        purge_expired(self.tasks)

    def lookup(self, params: dict[str, Any], call: Call) -> ModernTask:
        if not declares_tasks(call):
            raise missing_tasks_extension(call.method)
        task_id = task_id_param(params)
        self.purge()
        task = self.tasks.get(task_id)
        if task is None or task.owner != owner_of(call):
            raise McpError(INVALID_PARAMS, f"Invalid params: no task {task_id}")
        return task

    def _elsewhere(self, params: dict[str, Any], call: Call) -> str | None:
        """The id of the task ``params`` name when it runs in another process (the shared
        store has it); None when it is here (or there is no shared store)."""
        if self.shared is None:
            return None
        if not declares_tasks(call):
            raise missing_tasks_extension(call.method)
        task_id = task_id_param(params)
        self.purge()
        return None if task_id in self.tasks else task_id

    def get(self, params: dict[str, Any], call: Call) -> Result:
        task_id = self._elsewhere(params, call)
        if task_id is not None and self.shared is not None:
            return self.shared.get("modern", task_id, owner_scope(owner_of(call)))
        return self.lookup(params, call).detailed()

    def update(self, params: dict[str, Any], call: Call) -> Result:
        task_id = self._elsewhere(params, call)
        if task_id is not None and self.shared is not None:
            responses = params.get("inputResponses")
            if not isinstance(responses, dict):
                raise McpError(INVALID_PARAMS, "Invalid params: inputResponses must be an object")
            return self.shared.update(task_id, responses, owner_scope(owner_of(call)))
        task = self.lookup(params, call)
        responses = params.get("inputResponses")
        if not isinstance(responses, dict):
            raise McpError(INVALID_PARAMS, "Invalid params: inputResponses must be an object")
        self.answer(task, responses)
        if self.shared is not None:
            return self.shared.answered(task.id)
        return {"resultType": "complete"}

    def answer(self, task: ModernTask, responses: dict[str, Any]) -> None:
        """Hand ``tasks/update``'s answers to the questions ``task`` waits on."""
        task.answer(responses)

    def cancel(self, params: dict[str, Any], call: Call) -> Result:
        task_id = self._elsewhere(params, call)
        if task_id is not None and self.shared is not None:
            return self.shared.cancel("modern", task_id, owner_scope(owner_of(call)))
        self.lookup(params, call).cancel()
        return {"resultType": "complete"}


__all__ = [
    "TASKS_EXTENSION",
    "ModernTask",
    "ModernTasks",
    "TaskInputs",
    "declares_tasks",
    "missing_tasks_extension",
]
