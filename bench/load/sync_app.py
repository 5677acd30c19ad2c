"""The server of bench/load/sync_tools.py: a plain synchronous ``add`` and a synchronous
``block`` that holds its thread for ``seconds`` (``time.sleep``). Nothing in it is new API, so
a checkout from before the thread pool serves it too."""

from __future__ import annotations

import time

from jetmcp import Server

app = Server("sync-bench")


@app.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@app.tool()
def block(seconds: float) -> str:
    """Block for ``seconds``."""
    time.sleep(seconds)
    return "done"
