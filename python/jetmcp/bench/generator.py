"""The load driver: a closed loop or an open model over a pool of connections.

Closed loop (``--connections N``): each connection sends its next request the moment the
previous reply arrives, from the protocol's own callback (no coroutine, no timer).

Open model (``--rate R``): request *i* is due at ``start + i/R`` whatever the server does.
A timer sends every request that is due on a free connection; when none is free another is
opened (up to ``max_connections``) and the request waits for the first connection that
frees up. Its latency counts from the time it was due, as wrk2 does, so a stalled server
shows as the whole stall (coordinated omission corrected); the time from writing it to
its reply is kept too (``service``). A request that leaves more than ``late_ns`` after its
due time while a connection was free is the generator's own delay: counted as late.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any

from jetmcp.bench.connections import Conn, Dialer
from jetmcp.bench.messages import Template
from jetmcp.bench.recorder import Recorder

Headers = Sequence[tuple[bytes, bytes]]
#: What a new connection must do before it carries load (a stdio server's handshake).
Prepare = Callable[[Conn], Awaitable[None]]

_now = time.perf_counter_ns


class Source:
    """The next request body: the mix in rotation (each message as often as its weight),
    or ``batch`` of them in one JSON-RPC array."""

    def __init__(
        self,
        templates: Sequence[Template],
        headers: Sequence[Headers],
        weights: Sequence[int],
        batch: int,
        batch_label: int,
        batch_headers: Headers,
    ) -> None:
        order = [i for i, w in enumerate(weights) for _ in range(max(1, w))]
        self.templates = [templates[i] for i in order]
        self.headers = [headers[i] for i in order]
        self.batch = batch
        self.batch_label = batch_label
        self.batch_headers = batch_headers
        self.ids = itertools.count(1)
        self._cycle = itertools.cycle(range(len(order)))

    def next(self) -> tuple[int, bytes, Headers, int, int]:
        """``(label, body, headers, entries expected, first id)``."""
        if self.batch == 1:
            i = next(self._cycle)
            template = self.templates[i]
            wid = next(self.ids)
            return template.label, template.render(wid), self.headers[i], 1, wid
        ids = self.ids
        cycle = self._cycle
        first = next(ids)
        parts = [self.templates[next(cycle)].render(first)]
        for _ in range(self.batch - 1):
            parts.append(self.templates[next(cycle)].render(next(ids)))
        body = b"[" + b",".join(parts) + b"]"
        return self.batch_label, body, self.batch_headers, self.batch, first


class Driver:
    """One phase of load (a run, or one step of a ramp) over a pool kept across phases."""

    def __init__(
        self,
        dialer: Dialer,
        source: Source,
        *,
        timeout: float,
        prepare: Prepare | None = None,
        late_ns: int = 2_000_000,
    ) -> None:
        self.dialer = dialer
        self.source = source
        self.timeout_ns = int(timeout * 1e9)
        self.prepare = prepare
        self.late_ns = late_ns
        self.conns: set[Conn] = set()
        self.free: deque[Conn] = deque()
        self.rec: Recorder | None = None
        self.connect_errors: list[str] = []
        self.mode = ""
        #: Connections being opened in the background (kept so they are not collected).
        self.tasks: set[asyncio.Future[None]] = set()
        self.done: asyncio.Future[None] | None = None

    # ------------------------------------------------------------------ connections

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def open(self) -> Conn | None:
        """A new connection of this driver, prepared; None when it could not be opened."""
        try:
            conn = await self.dialer.open(self)
            if self.prepare is not None:
                await self.prepare(conn)
        except (OSError, TimeoutError, ValueError, RuntimeError) as exc:
            self.connect_errors.append(str(exc) or type(exc).__name__)
            return None
        if conn.closed:
            return None
        self.conns.add(conn)
        return conn

    async def fill(self, count: int) -> int:
        """Open connections until ``count`` are open; how many are."""
        missing = count - len(self.conns)
        if missing > 0:
            opened = await asyncio.gather(*(self.open() for _ in range(missing)))
            for conn in opened:
                if conn is not None:
                    self._list(conn)
        return len(self.conns)

    def _list(self, conn: Conn) -> None:
        if not conn.listed and not conn.closed and conn.inflight < conn.capacity:
            conn.listed = True
            self.free.append(conn)

    def _take(self) -> Conn | None:
        free = self.free
        while free:
            conn = free.popleft()
            conn.listed = False
            if not conn.closed and conn.inflight < conn.capacity:
                return conn
        return None

    def _drop(self, conn: Conn) -> None:
        self.conns.discard(conn)
        conn.close()

    async def close(self) -> None:
        for conn in list(self.conns):
            conn.close()
        self.conns.clear()
        self.free.clear()
        await self.dialer.close_all()

    async def _sweep(self) -> None:
        """Give up on requests older than the timeout: counted as ``timeout`` errors, and
        their HTTP connections closed (a reply arriving later would be mistaken)."""
        period = max(0.01, min(0.25, self.timeout_ns / 4e9))
        while True:
            await asyncio.sleep(period)
            now = _now()
            for conn in list(self.conns):
                labels = conn.expired(now - self.timeout_ns)
                if not labels:
                    continue
                assert self.rec is not None
                for label in labels:
                    self.rec.failure(label, "timeout", now)
                if conn.capacity == 1:
                    self._drop(conn)
                    self._replace()
                else:
                    self._after(conn)

    # ------------------------------------------------------------------ closed loop

    async def closed(
        self, rec: Recorder, connections: int, duration: float, count: int | None
    ) -> None:
        """Each of ``connections`` lanes sends one request at a time, for ``duration``
        seconds or until ``count`` requests were sent."""
        self.rec = rec
        self.mode = "closed"
        self.remaining = count
        self.stopping = False
        self.lanes = 0
        await self.fill(connections)
        loop = asyncio.get_running_loop()
        self.done = loop.create_future()
        rec.started_ns = _now()
        timer = loop.call_later(duration, self._stop) if count is None else None
        sweeper = asyncio.ensure_future(self._sweep())
        lanes = [self._take() for _ in range(connections)]
        self.lanes = connections
        for conn in lanes:
            if conn is None:
                self._replace()
            else:
                self._next(conn)
        try:
            await self.done
        finally:
            self.rec = None
            if timer is not None:
                timer.cancel()
            sweeper.cancel()
            rec.ended_ns = _now()

    def _stop(self) -> None:
        self.stopping = True
        if self.mode == "closed":
            self._check_closed()

    def _check_closed(self) -> None:
        if self.lanes <= 0 and self.done is not None and not self.done.done():
            self.done.set_result(None)

    def _next(self, conn: Conn) -> None:
        remaining = self.remaining
        if self.stopping or (remaining is not None and remaining <= 0):
            self.lanes -= 1
            self._list(conn)
            self._check_closed()
            return
        if remaining is not None:
            self.remaining = remaining - 1
        label, body, headers, expected, wid = self.source.next()
        now = _now()
        conn.send(headers, body, wid, label, now, now, expected)

    def _replace(self) -> None:
        """A closed-loop lane lost its connection: it goes on over a new one."""
        if self.mode != "closed":
            return
        self._spawn(self._reopen())

    async def _reopen(self) -> None:
        while not self.stopping:
            conn = await self.open()
            if conn is not None:
                self._next(conn)
                return
            assert self.rec is not None
            # The request this lane would send fails: a refused connection is an error
            # like any other, and the pause keeps a dead server from spinning the loop.
            if self.remaining is not None:
                if self.remaining <= 0:
                    break
                self.remaining -= 1
            self.rec.failure(self.source.templates[0].label, "transport", _now())
            await asyncio.sleep(0.05)
        self.lanes -= 1
        self._check_closed()

    # ------------------------------------------------------------------ open model

    async def open_model(
        self,
        rec: Recorder,
        rate: float,
        duration: float,
        connections: int,
        max_connections: int,
        count: int | None = None,
    ) -> None:
        """Send ``rate`` requests a second on schedule for ``duration`` seconds (or
        ``count`` requests), then wait for the last replies."""
        self.rec = rec
        self.mode = "open"
        self.max_connections = max_connections
        self.interval_ns = 1e9 / rate
        self.total = count if count is not None else max(1, round(duration * rate))
        self.index = 0
        self.waiting: deque[int] = deque()
        self.opening = 0
        self.sending = True
        await self.fill(connections)
        loop = asyncio.get_running_loop()
        self.loop = loop
        self.done = loop.create_future()
        self.t0 = _now()
        rec.started_ns = self.t0
        sweeper = asyncio.ensure_future(self._sweep())
        self._tick()
        try:
            await self.done
        finally:
            self.rec = None
            sweeper.cancel()
            rec.ended_ns = _now()
            self.waiting.clear()

    def _tick(self) -> None:
        self._due(_now())
        t0, interval = self.t0, self.interval_ns
        if self.index < self.total:
            delay = (t0 + self.index * interval - _now()) / 1e9
            self.loop.call_later(delay if delay > 0 else 0, self._tick)
        else:
            self.sending = False
            self._check_open()

    def _due(self, now: int) -> None:
        """Send every request due by ``now`` (the timer's millisecond steps are coarse: a
        reply arriving in between sends what fell due meanwhile)."""
        t0, interval = self.t0, self.interval_ns
        due = min(self.total, int((now - t0) / interval) + 1)
        rec = self.rec
        assert rec is not None
        while self.index < due:
            scheduled = t0 + int(self.index * interval)
            self.index += 1
            conn = self._take()
            if conn is None:
                self.waiting.append(scheduled)
                rec.waited += 1
                if len(self.conns) + self.opening < self.max_connections:
                    self._grow()
                continue
            rec.scheduled(now - scheduled, self.late_ns)
            self._fire(conn, scheduled, now)

    def _fire(self, conn: Conn, due: int, now: int) -> None:
        label, body, headers, expected, wid = self.source.next()
        conn.send(headers, body, wid, label, due, now, expected)
        assert self.rec is not None
        self.rec.sent += 1
        if conn.capacity > 1:
            self._list(conn)

    def _grow(self) -> None:
        self.opening += 1
        self._spawn(self._grown())

    async def _grown(self) -> None:
        conn = await self.open()
        self.opening -= 1
        if conn is None:
            # Nothing to send over: the waiting request closest to being due fails.
            if self.waiting:
                self.waiting.popleft()
                assert self.rec is not None
                self.rec.failure(self.source.templates[0].label, "transport", _now())
                self._check_open()
            return
        self._after(conn)

    def _after(self, conn: Conn) -> None:
        """A connection can take another request: the oldest waiting one, else it is free."""
        if self.mode == "open" and self.waiting and not conn.closed:
            self._fire(conn, self.waiting.popleft(), _now())
        else:
            self._list(conn)
        if self.mode == "open":
            self._check_open()

    def _check_open(self) -> None:
        if self.sending or self.waiting:
            return
        if any(conn.inflight for conn in self.conns):
            return
        if self.done is not None and not self.done.done():
            self.done.set_result(None)

    # ------------------------------------------------------------------ replies

    def on_reply(
        self,
        conn: Conn,
        label: int,
        due_ns: int,
        sent_ns: int,
        expected: int,
        status: int,
        body: bytes,
        keep_alive: bool,
    ) -> None:
        now = _now()
        rec = self.rec
        if rec is None:  # a reply after its phase gave up on it
            self._list(conn)
            return
        rec.reply(label, (now - due_ns) // 1000, now, status, body, expected)
        if self.mode == "closed":
            if keep_alive:
                self._next(conn)
            else:
                self._drop(conn)
                self._replace()
            return
        rec.service[label].record((now - sent_ns) // 1000)
        if keep_alive and self.sending and not self.waiting and conn.capacity == 1:
            # The common case, inlined: the connection is free again and sends what is due.
            if not conn.listed and not conn.closed:
                conn.listed = True
                self.free.append(conn)
            self._due(now)
            return
        if not keep_alive:
            self._drop(conn)
            if self.waiting:
                self._grow()
            self._check_open()
            return
        if conn.capacity == 1 or conn.inflight == 0 or self.waiting:
            self._after(conn)
        elif not self.sending:
            self._check_open()
        if self.sending:
            self._due(now)

    def on_lost(self, conn: Conn, label: int, kind: str) -> None:
        self.conns.discard(conn)
        if label >= 0 and self.rec is not None:
            self.rec.failure(label, kind, _now())
        if self.rec is None:
            return
        if self.mode == "closed":
            if label >= 0:
                self._replace()
        else:
            if self.waiting and len(self.conns) + self.opening < self.max_connections:
                self._grow()
            self._check_open()
