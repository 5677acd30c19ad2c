"""The load loop in Rust (``_wire.Drive``): what :class:`~jetmcp.bench.generator.Driver` does
for a mix over plain HTTP, with no Python per request and the GIL released.

The requests are the ones the Python driver would send: each message's body around its id
(:class:`~jetmcp.bench.messages.Template`) and its header fields (the session id, the protocol
version, 2026-07-28's routing headers, the user's own), in the same rotation, ids counting up
from 1. Replies are framed by the extension's HTTP/1.1 client and judged as
:meth:`Recorder.reply <jetmcp.bench.recorder.Recorder.reply>` judges them (the same error kinds);
each phase's figures come back as :meth:`Recorder.to_raw` has them and are merged into the
phase's recorder. The Rust loop runs in a thread, so the event loop (the progress bar, the
session kept open) goes on meanwhile.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from jetmcp import _wire
from jetmcp.bench.generator import Source
from jetmcp.bench.recorder import Recorder
from jetmcp.client.transports import Url

#: ``--driver`` values.
DRIVERS = ("auto", "python", "rust")


def why_not(url: str | None, scenario: bool) -> str | None:
    """Why a run cannot use the Rust driver (None: it can)."""
    if url is None:
        return "stdio servers are driven in Python"
    if scenario:
        return "scenarios (think times, sessions per user) are driven in Python"
    if Url.parse(url).scheme != "http":
        return "the Rust driver speaks plain HTTP (no TLS)"
    return None


class Live:
    """What the progress bar reads of a phase the Rust loop is running."""

    def __init__(self, rec: Recorder, drive: _wire.Drive) -> None:
        self.rec = rec
        self.drive = drive
        self.running = True

    @property
    def requests(self) -> int:
        return self.drive.progress if self.running else self.rec.requests

    @property
    def failures(self) -> int:
        return self.rec.failures


class RustDriver:
    """The closed loop and the open model of :class:`~jetmcp.bench.generator.Driver`, with the
    same signatures (what ``runner`` calls), in Rust."""

    def __init__(
        self,
        url: str,
        source: Source,
        labels: int,
        *,
        timeout: float,
        connect_timeout: float,
        late_ns: int,
    ) -> None:
        parsed = Url.parse(url)
        items: list[tuple[int, bytes, bytes, list[tuple[bytes, bytes]]]] = [
            (t.label, t.head, t.tail, list(h))
            for t, h in zip(source.templates, source.headers, strict=True)
        ]
        self.drive = _wire.Drive(
            parsed.host,
            parsed.port,
            parsed.target.encode("latin-1"),
            items,
            labels,
            batch=source.batch,
            batch_label=source.batch_label,
            batch_fields=list(source.batch_headers),
            timeout=timeout,
            connect_timeout=connect_timeout,
            late_ns=late_ns,
            now_ns=time.perf_counter_ns(),
        )
        self.lives: list[Live] = []

    @property
    def connect_errors(self) -> list[str]:
        return self.drive.connect_errors

    def live(self, rec: Recorder) -> Live:
        view = Live(rec, self.drive)
        self.lives.append(view)
        return view

    async def fill(self, count: int) -> int:
        return await asyncio.to_thread(self.drive.fill, count)

    async def _run(self, rec: Recorder, call: Any, *args: Any) -> None:
        try:
            raw = await asyncio.to_thread(call, *args)
        except asyncio.CancelledError:
            self.drive.stop()
            raise
        finally:
            for view in self.lives:
                if view.rec is rec:
                    view.running = False
        raw["labels"] = rec.labels
        rec.started_ns = raw["started_ns"]
        rec.ended_ns = raw["ended_ns"]
        rec.merge_raw(raw)

    async def closed(
        self, rec: Recorder, connections: int, duration: float, count: int | None
    ) -> None:
        await self._run(
            rec, self.drive.closed, connections, None if count is not None else duration, count
        )

    async def open_model(
        self,
        rec: Recorder,
        rate: float,
        duration: float,
        connections: int,
        max_connections: int,
        count: int | None = None,
    ) -> None:
        total = count if count is not None else max(1, round(duration * rate))
        await self._run(rec, self.drive.open, rate, total, connections, max_connections)

    async def close(self) -> None:
        await asyncio.to_thread(self.drive.close)
