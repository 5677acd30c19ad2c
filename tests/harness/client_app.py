"""What the client tests (tests/client/test_client*.py) run: the jetmcp app they serve, and helpers
that start servers as real processes. It holds no tests.

The app is the demo's tools, resource, template and prompt, the client fixtures (the
conformance tools that elicit, sample and list roots; ``wait_for_cancel``/``events``, which
make cancellation visible), a tool that asks twice (two MRTR rounds on 2026-07-28) and one
whose ``tenant`` argument travels as the ``Mcp-Param-Tenant`` header. Lists come in pages of
four, so pagination is real. Run it as ``jetmcp run harness.client_app:app`` with tests/
on ``PYTHONPATH`` (:func:`app_env`).
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
from collections.abc import Awaitable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from apps.client_fixtures import app as fixtures
from harness.servers import ServerProcess, free_port, jetmcp_command, jetmcp_http_argv
from jetmcp.demo import app as demo
from jetmcp.demo.conformance import complete
from jetmcp.server import Context, Server

#: tests/, where ``harness`` and ``apps`` import from.
HERE = Path(__file__).resolve().parents[1]
ROOT = HERE.parent
APP = "harness.client_app:app"
#: Whether this checkout's server speaks 2026-07-28 (the stateless revision's rules module).
MODERN_SERVER = importlib.util.find_spec("jetmcp.protocol.modern") is not None
MODERN_MISSING = (
    "the jetmcp server does not speak 2026-07-28 yet (jetmcp.protocol.modern, MRTR and "
    "the io.jetmcp/batch extension are not in this checkout)"
)

app = Server("jetmcp-client-tests", version="0.1.0", page_size=4)
for source in (demo, fixtures):
    for tool in source.tools.values():
        app.add_tool(tool)
    for resource in source.resources.values():
        app.add_resource(resource)
    for template in source.resource_templates.values():
        app.add_resource(template)
    for prompt in source.prompts.values():
        app.add_prompt(prompt)

app.completion()(complete)

_NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}}


@app.tool()
async def ask_twice(ctx: Context) -> str:
    """Ask for a first and a last name, one after the other"""
    first = await ctx.elicit("First name?", _NAME_SCHEMA)
    last = await ctx.elicit("Last name?", _NAME_SCHEMA)
    names = [a.data.get("name") if a.action == "accept" else a.action for a in (first, last)]
    return " ".join(str(n) for n in names)


@app.tool(
    input_schema={
        "type": "object",
        "properties": {
            "tenant": {"type": "string", "x-mcp-header": "Tenant"},
            "text": {"type": "string"},
        },
        "required": ["tenant", "text"],
    }
)
def tenant_echo(**arguments: Any) -> str:
    """Echo the text for a tenant (the tenant also travels as a header)"""
    return f"{arguments['tenant']}: {arguments['text']}"


# --------------------------------------------------------------------------- helpers

#: Bounds every client scenario so a stuck exchange fails instead of hanging the suite.
SCENARIO_TIMEOUT = 40.0
T = TypeVar("T")


def run(coro: Awaitable[T]) -> T:
    """Run one async scenario to its end, within :data:`SCENARIO_TIMEOUT`."""

    async def bounded() -> T:
        async with asyncio.timeout(SCENARIO_TIMEOUT):
            return await coro

    return asyncio.run(bounded())


def serving(*extra: str) -> Iterator[ServerProcess]:
    """A jetmcp HTTP server of this app for the life of a fixture (``yield from`` it)."""
    port = free_port()
    argv = jetmcp_http_argv(APP, port, *extra)
    server = ServerProcess(argv, port, env=app_env(), cwd=str(ROOT))
    try:
        yield server
    finally:
        server.stop()


def app_env(*extra_path: Path) -> dict[str, str]:
    """An environment where this directory (and the repository) is importable."""
    env = dict(os.environ)
    parts = [str(HERE), str(ROOT), *map(str, extra_path), env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(p for p in parts if p)
    return env


def jetmcp_stdio(*extra: str) -> list[str]:
    """The argv of a stdio jetmcp server of this app."""
    return [*jetmcp_command(), "run", APP, "--transport", "stdio", *extra]
