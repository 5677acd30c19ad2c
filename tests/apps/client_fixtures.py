"""The app the real-client tests drive (tests/interop/test_sdk_clients.py): the conformance
fixtures plus
tools that make cancellation observable and one that asks for the client's roots.

``wait_for_cancel`` sleeps until it is cancelled and notes what happened to it under a tag;
``events`` reads those notes back, so a client can check that the server stopped the work.
"""

from __future__ import annotations

import asyncio

from jetmcp.demo.conformance import app as conformance
from jetmcp.server import Context, Server

app = Server("jetmcp-client-tests", version="0.1.0")
for tool in conformance.tools.values():
    app.add_tool(tool)
for resource in conformance.resources.values():
    app.add_resource(resource)
for template in conformance.resource_templates.values():
    app.add_resource(template)
for prompt in conformance.prompts.values():
    app.add_prompt(prompt)

#: What happened to each ``wait_for_cancel`` call, by tag, in order.
EVENTS: dict[str, list[str]] = {}


@app.tool()
async def wait_for_cancel(tag: str, seconds: float = 30.0) -> str:
    """Sleep for up to ``seconds``, noting under ``tag`` whether the sleep was cancelled"""
    notes = EVENTS.setdefault(tag, [])
    notes.append("started")
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        notes.append("cancelled")
        raise
    notes.append("finished")
    return "finished"


@app.tool()
def events(tag: str) -> list[str]:
    """What happened to the ``wait_for_cancel`` calls under ``tag``"""
    return EVENTS.get(tag, [])


@app.tool()
async def client_roots(ctx: Context) -> list[str]:
    """The client's roots (``roots/list``), as ``name=uri``"""
    return [f"{root.name}={root.uri}" for root in await ctx.list_roots()]
