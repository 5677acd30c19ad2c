"""The progress bar ``jetmcp bench`` draws on stderr while it runs."""

from __future__ import annotations

import asyncio
import time
from typing import Protocol, TextIO


class Counted(Protocol):
    """What the bar reads: a recorder, or a view of a phase the Rust driver runs."""

    @property
    def requests(self) -> int: ...

    @property
    def failures(self) -> int: ...


class Progress:
    """A one-line progress report on stderr, redrawn five times a second."""

    def __init__(self, out: TextIO | None, total_seconds: float | None, count: int | None):
        self.out = out
        self.total_seconds = total_seconds
        self.count = count
        self.started = time.perf_counter()
        self.recs: list[Counted] = []
        self.task: asyncio.Future[None] | None = None

    def start(self) -> None:
        if self.out is not None:
            self.task = asyncio.ensure_future(self._tick())

    def watch(self, rec: Counted) -> None:
        self.recs.append(rec)

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(0.2)
            self.draw()

    def draw(self) -> None:
        if self.out is None:
            return
        width = 30
        requests = sum(r.requests for r in self.recs)
        errors = sum(r.failures for r in self.recs)
        elapsed = time.perf_counter() - self.started
        if self.count:
            fraction = min(1.0, requests / self.count)
        elif self.total_seconds:
            fraction = min(1.0, elapsed / self.total_seconds)
        else:
            fraction = 0.0
        rate = requests / elapsed if elapsed > 0 else 0.0
        filled = int(fraction * width)
        self.out.write(
            f"\r[{'#' * filled}{'.' * (width - filled)}] {fraction * 100:5.1f}%  "
            f"{requests} req  {rate:,.0f} req/s  {errors} errors "
        )
        self.out.flush()

    def stop(self, final: bool = True) -> None:
        if self.task is not None:
            self.task.cancel()
        if self.out is not None and final:
            if self.count is None and self.total_seconds:
                self.total_seconds = 1e-9  # the last frame shows 100%
            self.draw()
            self.out.write("\n")
