"""What the client tests (tests/test_client*.py) run: the jetmcp app they serve, and helpers
that start servers as real processes. It holds no tests.

The app is the demo's tools, resource, template and prompt, the client fixtures (the
conformance tools that elicit, sample and list roots; ``wait_for_cancel``/``events``, which
make cancellation visible), a tool that asks twice (two MRTR rounds on 2026-07-28) and one
whose ``tenant`` argument travels as the ``Mcp-Param-Tenant`` header. Lists come in pages of
four, so pagination is real. Run it as ``jetmcp run test_client_app:app`` with this directory
on ``PYTHONPATH`` (:func:`app_env`).
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import socket
import subprocess
import tempfile
import time
from collections.abc import Awaitable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from apps.client_fixtures import app as fixtures
from conftest import START_TIMEOUT, _stop, free_port, jetmcp_command
from jetmcp.demo import app as demo
from jetmcp.demo.conformance import complete
from jetmcp.server import Context, Server

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
APP = "test_client_app:app"
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
    server = ServerProcess.jetmcp(*extra)
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


class ServerProcess:
    """A server (any command) listening on ``port`` of 127.0.0.1; stopped with its group."""

    def __init__(self, argv: list[str], port: int, path: str = "/mcp", **popen: Any) -> None:
        self.port = port
        self.url = f"http://127.0.0.1:{port}{path}"
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 (lives as long as the process)
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self._stderr,
            start_new_session=True,
            **popen,
        )
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{argv[:3]} exited:\n{self.stderr()}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"{argv[:3]} did not listen in time") from None
                time.sleep(0.05)

    @classmethod
    def jetmcp(cls, *extra: str) -> ServerProcess:
        port = free_port()
        argv = [
            *jetmcp_command(),
            "run",
            "--transport",
            "http",
            APP,
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ]
        return cls([*argv, *extra], port, env=app_env(), cwd=str(ROOT))

    def stderr(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read().decode("utf-8", "replace")

    def stop(self) -> None:
        _stop(self.proc)
        self._stderr.close()
