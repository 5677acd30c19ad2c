"""The requests that are waiting, each with its deadline: what bounds them in time and count.

The dispatcher adds the task of every request that has to wait (a handler that returned an
awaitable) with the seconds it may take, and removes it when the request is answered. A
request still here when its time is up has its task cancelled and marked
:data:`STOP_TIMEOUT`; :meth:`Deadlines.stop_all` marks every one :data:`STOP_SHUTDOWN`. The
dispatcher turns the mark into an error reply. :attr:`Deadlines.count` is what the server's
cap on requests in flight counts.

Requests given the same number of seconds expire in the order they were added, so each
duration keeps an insertion-ordered dict and a single loop timer waits for the earliest head
of them all. Adding and removing a request is a few dict operations; no timer is scheduled
and cancelled per request (``asyncio.timeout`` costs several microseconds a time).
"""

from __future__ import annotations

import asyncio
import math
import time
from typing import Any

#: Why a request was stopped (the dispatcher answers each with its own error).
STOP_TIMEOUT = 1
STOP_SHUTDOWN = 2

#: The duration of requests that have no deadline (they are still counted and stoppable).
NO_DEADLINE = math.inf

_monotonic = time.monotonic


class Deadlines:
    """Tasks of waiting requests by duration, oldest first, and one timer for all of them."""

    __slots__ = ("_at", "_queues", "_timer", "count", "stopped")

    def __init__(self) -> None:
        #: seconds -> {task: monotonic deadline}, in the order the tasks were added.
        self._queues: dict[float, dict[asyncio.Task[Any], float]] = {}
        self._timer: asyncio.TimerHandle | None = None
        #: When the armed timer fires (infinity: none armed).
        self._at = math.inf
        #: Requests currently added.
        self.count = 0
        #: Tasks cancelled by :meth:`_expire` or :meth:`stop_all`, with why, until removed.
        self.stopped: dict[asyncio.Task[Any], int] = {}

    def add(self, task: asyncio.Task[Any], seconds: float) -> None:
        """Watch ``task`` for ``seconds`` (:data:`NO_DEADLINE`: count it, never expire it)."""
        self.count += 1
        queue = self._queues.get(seconds)
        if queue is None:
            queue = self._queues[seconds] = {}
        if seconds == NO_DEADLINE:
            queue[task] = NO_DEADLINE
            return
        at = _monotonic() + seconds
        queue[task] = at
        if at < self._at:
            self._arm(at)

    def remove(self, task: asyncio.Task[Any], seconds: float) -> int:
        """Stop watching ``task`` (its request is answered). Returns why it was stopped, 0
        when it was not; a stop its handler swallowed is taken back (``uncancel``)."""
        self.count -= 1
        queue = self._queues.get(seconds)
        if queue is not None:
            queue.pop(task, None)
        if not self.stopped:
            return 0
        why = self.stopped.pop(task, 0)
        if why:
            task.uncancel()
        return why

    def take_stop(self, task: asyncio.Task[Any]) -> int:
        """Why ``task`` was cancelled by a deadline or a shutdown (0: it was not); the mark
        and the cancellation request are consumed."""
        why = self.stopped.pop(task, 0) if self.stopped else 0
        if why:
            task.uncancel()
        return why

    def stop_all(self, why: int = STOP_SHUTDOWN) -> int:
        """Cancel every watched request, marked ``why``; how many there were."""
        stopped = 0
        for queue in self._queues.values():
            for task in list(queue):
                if task not in self.stopped and not task.done():
                    self.stopped[task] = why
                    task.cancel()
                    stopped += 1
        return stopped

    # -- the timer -----------------------------------------------------------------------

    def _arm(self, at: float) -> None:
        timer = self._timer
        if timer is not None:
            timer.cancel()
        self._at = at
        self._timer = asyncio.get_running_loop().call_later(
            max(0.0, at - _monotonic()), self._expire
        )

    def _expire(self) -> None:
        """Stop every request whose deadline passed, then wait for the next one."""
        self._timer = None
        self._at = math.inf
        now = _monotonic()
        earliest = math.inf
        for seconds, queue in list(self._queues.items()):
            if seconds == NO_DEADLINE:
                continue
            while queue:
                task, at = next(iter(queue.items()))
                if at > now:
                    earliest = min(earliest, at)
                    break
                del queue[task]
                if task not in self.stopped and not task.done():
                    self.stopped[task] = STOP_TIMEOUT
                    task.cancel()
            if not queue:
                del self._queues[seconds]
        if earliest < math.inf:
            self._arm(earliest)


__all__ = ["NO_DEADLINE", "STOP_SHUTDOWN", "STOP_TIMEOUT", "Deadlines"]
