"""An app for tests/run/test_native_workers.py: each worker tells its pid, and calls that
take as long as asked keep a worker busy while it is stopped."""

from __future__ import annotations

import asyncio
import os
import time

from jetmcp.server import Server

app = Server("workers-test")


@app.tool()
def pid() -> int:
    """The pid of the worker that answers."""
    return os.getpid()


@app.tool()
async def sleep(seconds: float) -> int:
    """Wait ``seconds`` (cancellable), then answer with the worker's pid."""
    await asyncio.sleep(seconds)
    return os.getpid()


@app.tool()
def block(seconds: float) -> int:
    """Hold a thread for ``seconds`` (nothing can cancel it), then answer the pid."""
    time.sleep(seconds)
    return os.getpid()


@app.tool()
def frozen() -> int:
    """How many objects the worker's cyclic GC no longer traverses (``gc.freeze``)."""
    import gc

    return gc.get_freeze_count()
