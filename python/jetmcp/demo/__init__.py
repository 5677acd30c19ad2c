"""The built-in demo app: a few tools, a resource, a template and a prompt."""

from __future__ import annotations

import asyncio

from jetmcp.errors import ToolError
from jetmcp.server import Server

app = Server(
    "jetmcp-demo",
    version="0.1.0",
    instructions="A demo server: arithmetic, echo, sleep, a failing tool, a readme and items.",
    title="jetmcp demo",
)

README = """# jetmcp demo

This server is jetmcp's built-in demo. Try the tools `add`, `echo`, `sleep` and `fail`, read
`demo://items/{id}`, or get the `greet` prompt.
"""


@app.tool()
def add(a: int, b: int) -> int:
    """Add two integers"""
    return a + b


@app.tool()
def echo(text: str) -> str:
    """Echo the text back"""
    return text


@app.tool()
async def sleep(ms: int) -> str:
    """Sleep for ms milliseconds, then answer"""
    await asyncio.sleep(ms / 1000)
    return f"slept {ms} ms"


@app.tool()
def fail() -> str:
    """Always fail (to show how tool errors look)"""
    raise ToolError("this tool always fails")


@app.resource("demo://readme", name="readme", mime_type="text/markdown")
def readme() -> str:
    """What this demo server offers"""
    return README


@app.resource("demo://items/{id}", name="item")
def item(id: str) -> str:
    """One item of the demo catalogue"""
    return f"Item {id}"


@app.prompt()
def greet(name: str) -> str:
    """Greet someone by name"""
    return f"Hello, {name}!"


__all__ = ["app"]
