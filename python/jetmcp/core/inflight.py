"""The requests of one client scope still owed an answer, so ``notifications/cancelled``
(and a session's end) can stop them."""

from __future__ import annotations

import asyncio
from typing import Any

from orjson import loads


def _id_key(value: Any) -> tuple[bool, Any]:
    # "1" and 1 are different ids; the flag keeps them apart in one dict.
    return (isinstance(value, str), value)


def is_request_id(value: Any) -> bool:
    # Exact types: True == 1.0 == 1 in Python, and a list or an object is not hashable.
    return type(value) is str or type(value) is int


class Running:
    """One request owed an answer: whether the client cancelled it, and the task running it
    (None while it has not started)."""

    __slots__ = ("cancelled", "key", "task")

    def __init__(self, key: tuple[bool, Any]) -> None:
        self.key = key
        self.cancelled = False
        self.task: asyncio.Task[Any] | None = None

    def cancel(self) -> None:
        self.cancelled = True
        if self.task is not None:
            self.task.cancel()


class InFlight:
    """The requests of one client scope (an HTTP session or a stdio process) that are still
    owed an answer, so ``notifications/cancelled`` can stop them.

    A request is registered the moment it is found to wait, before its task first runs, so
    a cancel that arrives right behind it (even in the same read) still finds it. Ids must
    be unique among a client's requests, but nothing stops a client from reusing one: every
    request running under an id is kept, and a cancel of that id stops all of them.
    """

    __slots__ = ("running", "waiting")

    def __init__(self) -> None:
        #: id -> the requests running under it (usually one).
        self.running: dict[tuple[bool, Any], set[Running]] = {}
        #: Requests of this scope waiting now (what the per-session cap counts).
        self.waiting = 0

    def register(self, raw_id: bytes) -> Running:
        key = _id_key(loads(raw_id))
        slot = Running(key)
        slots = self.running.get(key)
        if slots is None:
            self.running[key] = {slot}
        else:
            slots.add(slot)
        return slot

    def release(self, slot: Running) -> None:
        """Forget a request that was answered (or cancelled)."""
        slots = self.running.get(slot.key)
        if slots is not None:
            slots.discard(slot)
            if not slots:
                del self.running[slot.key]

    def cancel(self, request_id: Any) -> bool:
        """Stop every request running under this id; False when there is none (or the value
        cannot be a request id)."""
        if not is_request_id(request_id):
            return False
        slots = self.running.get(_id_key(request_id))
        if not slots:
            return False
        for slot in list(slots):
            slot.cancel()
        return True

    def cancel_all(self) -> None:
        for slots in list(self.running.values()):
            for slot in list(slots):
                slot.cancel()


__all__ = ["InFlight", "Running", "is_request_id"]
