"""Running a server's lifespan for as long as a transport serves it.

A lifespan is an async context manager (``lifespan(server)``, as the official SDK and
fastmcp take it): what it yields is the server's ``lifespan_context`` while it is open.
:class:`LifespanScope` enters it in a task of its own and leaves it in that same task, so
lifespans that open task groups or cancel scopes (anyio) work, whether the transport is an
async function (stdio) or a pair of synchronous worker hooks (Granian's RSGI init and del).
"""

from __future__ import annotations

import asyncio
from types import TracebackType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from jetmcp.server.app import Server


class LifespanScope:
    """``server.enter_lifespan()`` held open from :meth:`start` to :meth:`stop`."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self._task: asyncio.Task[None] | None = None
        self._ready: asyncio.Future[None] | None = None
        self._stop: asyncio.Event | None = None

    async def start(self) -> None:
        """Enter the lifespan; raises what its startup raised."""
        loop = asyncio.get_running_loop()
        self._ready = loop.create_future()
        self._stop = asyncio.Event()
        self._task = loop.create_task(self._run(self._ready, self._stop), name="jetmcp-lifespan")
        await self._ready

    async def stop(self) -> None:
        """Leave the lifespan (its shutdown runs to its end); raises what it raised."""
        task, stop = self._task, self._stop
        if task is None or stop is None:
            return
        self._task = None
        stop.set()
        await task

    async def _run(self, ready: asyncio.Future[None], stop: asyncio.Event) -> None:
        server = self.server
        try:
            async with server.enter_lifespan() as value:
                server.lifespan_context = value
                ready.set_result(None)
                await stop.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
                return
            raise
        finally:
            server.lifespan_context = None

    def start_on(self, loop: asyncio.AbstractEventLoop) -> None:
        """:meth:`start` on a loop that is not running yet (a worker's init hook)."""
        loop.run_until_complete(self.start())

    def stop_on(self, loop: asyncio.AbstractEventLoop) -> None:
        """:meth:`stop` on a loop that is no longer running (a worker's del hook)."""
        if self._task is not None and not loop.is_closed():
            loop.run_until_complete(self.stop())

    async def __aenter__(self) -> LifespanScope:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()


__all__ = ["LifespanScope"]
