"""``jetmcp._wire.eager_task``: a real asyncio task whose first step runs in the call, as a
task's step runs on the loop (its own context, ``current_task()``, ``all_tasks()``), and an
ordinary ``create_task`` where that cannot hold (a task running, a task factory set)."""

from __future__ import annotations

import asyncio
import contextvars
import gc
from collections.abc import Callable
from typing import Any

import pytest
import uvloop

from jetmcp import _wire

VAR: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")


def in_callback(body: Callable[[asyncio.AbstractEventLoop], Any]) -> Any:
    """``body(loop)`` run in a plain callback of a uvloop loop (no task running), as the
    native engine's socket callbacks run; its result once the loop has gone round."""
    out: list[Any] = []

    async def main() -> None:
        loop = asyncio.get_running_loop()
        loop.call_soon(lambda: out.append(body(loop)))
        await asyncio.sleep(0.05)

    uvloop.run(main())
    return out[0]


def test_the_first_step_runs_in_the_call_inside_the_task() -> None:
    seen: dict[str, Any] = {}

    async def tool() -> int:
        task = asyncio.current_task()
        seen["task"] = task
        seen["listed"] = task in asyncio.all_tasks()
        seen["var"] = VAR.get()
        VAR.set("set by the tool")
        return 7

    def body(loop: asyncio.AbstractEventLoop) -> Any:
        task = _wire.eager_task(loop, tool())
        return task, task.done() and task.result(), VAR.get(), task in asyncio.all_tasks(loop)

    task, result, outside, still_listed = in_callback(body)
    assert result == 7
    assert seen["task"] is task and seen["listed"] is True and seen["var"] == "unset"
    assert outside == "unset"  # the task's own copy of the context
    assert still_listed is False  # ended in its first step: out of the set again
    assert task.get_name() == "jetmcp-request"


def test_a_task_that_waits_goes_on_and_stays_listed() -> None:
    async def waits() -> str:
        first = asyncio.current_task()
        await asyncio.sleep(0.001)
        return str(first is asyncio.current_task())

    def body(loop: asyncio.AbstractEventLoop) -> Any:
        task = _wire.eager_task(loop, waits())
        return task, task.done(), task in asyncio.all_tasks(loop)

    task, done_at_once, listed = in_callback(body)
    assert done_at_once is False and listed is True
    assert task.result() == "True"


def test_the_all_tasks_set_keeps_no_dead_entry() -> None:
    import _asyncio

    if not hasattr(_asyncio, "_all_tasks"):
        pytest.skip("Python 3.12+: the constructor's eager_start registers the task")
    data = _asyncio._all_tasks.data

    async def quick() -> int:
        return 1

    def body(loop: asyncio.AbstractEventLoop) -> int:
        gc.collect()  # tasks of earlier tests that are garbage leave the set first
        before = len(data)
        for _ in range(50):
            _wire.eager_task(loop, quick())
        gc.collect()
        return len(data) - before

    assert in_callback(body) == 0


def test_with_a_task_running_it_is_an_ordinary_task() -> None:
    async def tool() -> int:
        return 3

    async def main() -> tuple[bool, int]:
        task = _wire.eager_task(asyncio.get_running_loop(), tool())
        not_yet = task.done()  # scheduled, not stepped: a task is running
        return not_yet, await task

    assert uvloop.run(main()) == (False, 3)


def test_a_task_factory_makes_the_task() -> None:
    made: list[Any] = []

    async def tool() -> int:
        return 5

    def factory(loop: asyncio.AbstractEventLoop, coro: Any, **kw: Any) -> asyncio.Task[Any]:
        task = asyncio.Task(coro, loop=loop, **kw)
        made.append(task)
        return task

    def body(loop: asyncio.AbstractEventLoop) -> Any:
        loop.set_task_factory(factory)
        try:
            return _wire.eager_task(loop, tool())
        finally:
            loop.set_task_factory(None)

    task = in_callback(body)
    assert made == [task] and task.result() == 5


def test_an_exception_is_the_task_s_and_keyboard_interrupt_leaves_the_call() -> None:
    async def fails() -> int:
        raise ValueError("no")

    async def interrupted() -> int:
        raise KeyboardInterrupt

    def body(loop: asyncio.AbstractEventLoop) -> Any:
        task = _wire.eager_task(loop, fails())
        try:
            _wire.eager_task(loop, interrupted())
        except KeyboardInterrupt:
            return task, "propagated"
        return task, "swallowed"

    task, what = in_callback(body)
    assert isinstance(task.exception(), ValueError)
    assert what == "propagated"


def test_a_coroutine_is_required() -> None:
    def body(loop: asyncio.AbstractEventLoop) -> Any:
        try:
            _wire.eager_task(loop, 42)  # type: ignore[arg-type]
        except TypeError as exc:
            return str(exc)
        return None

    assert in_callback(body) is not None
    # The loop's call_soon and the set's add are its own again.
    loop = uvloop.new_event_loop()
    try:
        assert "call_soon" not in vars(loop)
    finally:
        loop.close()


@pytest.mark.parametrize("n", [1, 3])
def test_call_soon_is_the_loop_s_own_after_each_task(n: int) -> None:
    import _asyncio

    async def tool() -> int:
        return 1

    def body(loop: asyncio.AbstractEventLoop) -> Any:
        for _ in range(n):
            _wire.eager_task(loop, tool())
        registry = getattr(_asyncio, "_all_tasks", None)  # 3.11's set of all tasks
        return "call_soon" in vars(loop), registry is not None and "add" in vars(registry)

    assert in_callback(body) == (False, False)
