"""A tool whose calls can only finish together: it shows calls run concurrently without
timing them (a test that needs concurrency asks for ``parties`` calls with one key)."""

from __future__ import annotations

import asyncio

from jetmcp import Server

app = Server("rendezvous")

_meetings: dict[str, tuple[int, asyncio.Event]] = {}


@app.tool()
async def meet(key: str, parties: int) -> str:
    """Wait until ``parties`` calls with ``key`` have arrived: "together", or "alone" when they
    have not after 10 s (the calls ran one after the other)."""
    count, event = _meetings.get(key, (0, asyncio.Event()))
    count += 1
    _meetings[key] = (count, event)
    if count >= parties:
        event.set()
    try:
        await asyncio.wait_for(event.wait(), 10)
    except TimeoutError:
        return "alone"
    return "together"


@app.tool()
def echo(text: str) -> str:
    """Return ``text``"""
    return text
