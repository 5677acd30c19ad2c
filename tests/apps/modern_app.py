"""The app the 2026-07-28 wire tests drive (tests/transports/http/test_modern_http.py,
transports/stdio/test_modern_stdio.py, core/test_modern_batch.py): a tool with ``x-mcp-header``
properties, a slow tool that records its
cancellation, one that needs a client capability, one that streams, one that tries a
server-to-client request, tools that change the tool list and count the open listen
streams, and handlers that set their own ``_meta`` / ``resultType``."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from jetmcp.core.call import Call
from jetmcp.errors import MISSING_CLIENT_CAPABILITY, McpError
from jetmcp.server import Context, Server

app = Server(
    "jetmcp-modern-tests",
    version="1.2.3",
    instructions="Fixtures for the 2026-07-28 wire tests.",
    title="jetmcp modern wire tests",
)

#: The input schema of ``deploy``: header-mirrored properties of every allowed type, one
#: reached through a nested object, and one that is not mirrored.
DEPLOY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "count": {"type": "integer", "x-mcp-header": "Count"},
        "dry": {"type": "boolean", "x-mcp-header": "Dry-Run"},
        "where": {
            "type": "object",
            "properties": {"zone": {"type": "string", "x-mcp-header": "Zone"}},
        },
        "note": {"type": "string"},
    },
}


@app.tool(input_schema=DEPLOY_SCHEMA)
def deploy(
    region: str | None = None,
    count: int | None = None,
    dry: bool | None = None,
    where: dict[str, Any] | None = None,
    note: str | None = None,
) -> str:
    """Echo the deployment it was asked for"""
    args = {"region": region, "count": count, "dry": dry, "where": where, "note": note}
    return json.dumps({k: v for k, v in args.items() if v is not None}, sort_keys=True)


#: Tags of the ``slow`` calls whose handler was cancelled, in order.
CANCELLED: list[str] = []


@app.tool()
async def slow(tag: str, ctx: Context, ms: int = 10_000) -> str:
    """Sleep ``ms`` milliseconds; a cancellation is recorded under ``tag``. With a progress
    token it reports progress 0 first, so a client knows it is running."""
    await ctx.report_progress(0)
    try:
        await asyncio.sleep(ms / 1000)
    except asyncio.CancelledError:
        CANCELLED.append(tag)
        raise
    return f"slept {tag}"


@app.tool()
def cancelled() -> str:
    """The tags of the slow calls cancelled so far, comma-separated"""
    return ",".join(CANCELLED)


@app.tool()
def needs_sampling(ctx: Context) -> str:
    """Refuse (-32021) unless this request's client capabilities declare sampling"""
    if "sampling" not in ctx.call.client_capabilities:
        raise McpError(
            MISSING_CLIENT_CAPABILITY,
            "needs_sampling needs the sampling capability",
            {"requiredCapabilities": {"sampling": {}}},
        )
    return "sampling declared"


@app.tool()
async def chatty(ctx: Context) -> str:
    """Report progress and log a line, then answer"""
    await ctx.report_progress(1, 2)
    await ctx.info("hello from chatty")
    await ctx.report_progress(2, 2)
    return "chatty done"


@app.tool()
async def asks_client(ctx: Context) -> str:
    """Try a server-to-client request and say how it went"""
    try:
        await ctx.call.request("roots/list", timeout=1.0)
    except McpError as exc:
        return f"refused {exc.code}"
    return "sent"


@app.tool()
def change_tools() -> str:
    """Add (or replace) the tool ``extra``: listen streams that asked for it hear of it"""
    app.add_tool(lambda: "extra", name="extra", description="Added by change_tools")
    return "changed"


@app.tool()
def listeners() -> str:
    """How many subscriptions/listen requests are open"""
    return str(len(app._subscriptions))


@app.resource("test://here", name="here", mime_type="text/plain")
def here() -> str:
    """A resource that exists"""
    return "here"


@app.prompt()
def hello(name: str) -> str:
    """Say hello"""
    return f"Hello, {name}!"


_prompts_get = app.handlers["prompts/get"]


def _prompts_get_or_ask(params: dict[str, Any], call: Call) -> Any:
    """``prompts/get ask`` needs input (an InputRequiredResult); other prompts as usual."""
    if params.get("name") == "ask":
        return {
            "resultType": "input_required",
            "inputRequests": {
                "who": {
                    "method": "elicitation/create",
                    "params": {
                        "message": "Who?",
                        "requestedSchema": {
                            "type": "object",
                            "properties": {"name": {"type": "string"}},
                        },
                    },
                }
            },
        }
    return _prompts_get(params, call)


def _complete_with_meta(params: dict[str, Any], call: Call) -> dict[str, Any]:
    """A result carrying ``_meta`` of its own, kept next to the server's identity."""
    return {"completion": {"values": ["x"]}, "_meta": {"io.jetmcp.tests/own": 1}}


def _broken(params: dict[str, Any], call: Call) -> dict[str, Any]:
    raise RuntimeError("this handler is broken on purpose")


app.handlers["prompts/get"] = _prompts_get_or_ask
app.handlers["completion/complete"] = _complete_with_meta
app.handlers["resources/templates/list"] = _broken
