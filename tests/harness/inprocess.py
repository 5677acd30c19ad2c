"""Helpers for the tests that drive a :class:`~jetmcp.server.Server` in this process."""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import orjson

T = TypeVar("T")


def async_test(fn: Callable[..., Coroutine[Any, Any, T]]) -> Callable[..., T]:
    """Run an async test on a fresh event loop, bounded in time."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> T:
        return asyncio.run(asyncio.wait_for(fn(*args, **kwargs), 10))

    return wrapper


async def until(predicate: Callable[[], bool], within: float = 3.0) -> None:
    deadline = time.monotonic() + within
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.001)


class ListSink:
    """Collects every message sent to it."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []

    async def send(self, message: bytes) -> None:
        self.messages.append(orjson.loads(message))

    def methods(self) -> list[str]:
        return [m["method"] for m in self.messages if "method" in m]

    def of(self, method: str) -> list[dict[str, Any]]:
        return [m for m in self.messages if m.get("method") == method]

    def requests(self, method: str) -> list[dict[str, Any]]:
        return [m for m in self.messages if m.get("method") == method and "id" in m]

    async def request(self, method: str, index: int = 0) -> dict[str, Any]:
        """The ``index``-th request of ``method`` sent here (waits for it)."""
        await until(lambda: len(self.requests(method)) > index)
        return self.requests(method)[index]


def text(result: dict[str, Any]) -> str:
    """The text blocks of a tool result, joined."""
    return "".join(c["text"] for c in result["content"] if c.get("type") == "text")
