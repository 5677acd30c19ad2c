"""Synchronous tools for tests/test_sync_tools.py: a fast ``add``, a slow ``sleep``, a tool
with its own ``timeout``, one pinned to the pool and one pinned inline, and one whose speed
the caller picks (to see it promoted, then demoted)."""

from __future__ import annotations

import sys
import threading
import time

from jetmcp import Server

app = Server("sync-tools")


@app.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@app.tool()
def sleep(seconds: float) -> str:
    """Block for ``seconds`` (time.sleep), then say so; stderr tells when it starts."""
    sys.stderr.write(f"sleep {seconds} started\n")
    sys.stderr.flush()
    time.sleep(seconds)
    return f"slept {seconds}"


@app.tool(timeout=0.5)
def stuck(seconds: float) -> str:
    """Block past its own 0.5 s timeout."""
    time.sleep(seconds)
    return "finished"


@app.tool()
def maybe_slow(seconds: float, tag: str) -> dict[str, object]:
    """Block for ``seconds`` (0: not at all); a structured result for byte comparisons."""
    if seconds:
        time.sleep(seconds)
    return {"tag": tag, "seconds": seconds, "words": ["a", "b"]}


def where() -> str:
    """The name of the thread that runs it (always a pool thread)."""
    return threading.current_thread().name


def where_inline() -> str:
    """The name of the thread that runs it (always the event loop's)."""
    return threading.current_thread().name


app.add_tool(where, run_in_thread=True)
app.add_tool(where_inline, run_in_thread=False)
