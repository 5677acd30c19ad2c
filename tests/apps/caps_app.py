"""The app of the connection, stream and time cap tests (tests/core/test_caps.py): tools that
wait (with the server's deadline, their own, or none, or until a gate opens) and one that
blocks its event loop."""

from __future__ import annotations

import asyncio
import math
import time

from jetmcp.server import Server

app = Server("jetmcp-caps-tests", version="0.1.0")

#: Named gates: ``wait_gate`` calls wait until ``open_gate`` opens theirs.
_gates: dict[str, asyncio.Event] = {}


@app.tool()
async def sleep(ms: int) -> str:
    """Wait ``ms`` milliseconds (within the server's request deadline), then answer"""
    await asyncio.sleep(ms / 1000)
    return f"slept {ms} ms"


@app.tool(timeout=0.3)
async def hasty(ms: int) -> str:
    """Wait ``ms`` milliseconds within this tool's own 0.3 s deadline"""
    await asyncio.sleep(ms / 1000)
    return f"slept {ms} ms"


@app.tool(timeout=math.inf)
async def patient(ms: int) -> str:
    """Wait ``ms`` milliseconds whatever the server's request deadline"""
    await asyncio.sleep(ms / 1000)
    return f"slept {ms} ms"


def echo(text: str) -> str:
    """Answer at once"""
    return text


def block(seconds: float) -> str:
    """Block the event loop (a synchronous tool gone wrong)"""
    time.sleep(seconds)
    return "unblocked"


@app.tool()
async def wait_gate(name: str) -> str:
    """Wait until gate ``name`` is opened"""
    await _gates.setdefault(name, asyncio.Event()).wait()
    return f"{name} opened"


def open_gate(name: str) -> str:
    """Open gate ``name`` (answered at once: it never waits, so no cap refuses it)"""
    _gates.setdefault(name, asyncio.Event()).set()
    return name


# Pinned to the event loop, not the thread pool (jetmcp.core.threads): these answer without
# waiting, so no cap refuses them; ``block`` stalls the loop on purpose; ``open_gate`` sets
# an asyncio.Event, which only the loop's own thread may do.
for _fn in (echo, block, open_gate):
    app.add_tool(_fn, run_in_thread=False)
