"""Swapping the import: servers written the SDK's way on ``jetmcp.Server`` run as they do
there. Real processes, driven by the official SDK client (mcp 2.x, as installed).

Covers the constructor keywords, ``lifespan`` (startup before the first request, shutdown at
EOF on stdio and on SIGTERM over HTTP, once per worker), ``run()``, the ASGI app mounted in
Starlette under uvicorn next to a custom route, the SDK ``Context`` surface
(``ctx.session``, ``ctx.request_context``), ``CallToolResult`` returns, SDK exceptions,
masked exceptions and whole docstrings.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import ClientSession, types
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from harness.redis_support import REDIS_URL, drop_keys, new_prefix
from harness.servers import ServerProcess, free_port, jetmcp_command
from jetmcp import Server

TIMEOUT = 30.0

SERVER = '''
import os
from contextlib import asynccontextmanager
from typing import Any

from mcp.server.session import ServerSession
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, SamplingMessage, TextContent

from jetmcp import Context, Server

LOG = os.environ["LIFESPAN_LOG"]


def note(what: str) -> None:
    with open(LOG, "a") as f:
        f.write(f"{what} {os.getpid()}\\n")


@asynccontextmanager
async def lifespan(server: Server) -> Any:
    note("start")
    yield {"db": "connected"}
    note("stop")


mcp = Server(
    "parity",
    lifespan=lifespan,
    host="127.0.0.1",
    json_response=True,
    dependencies=["nothing"],
    debug=False,
)


@mcp.tool()
def add(a: int, b: int) -> int:
    """Add two numbers.

    Parameters:
        a: the first
        b: the second
    """
    return a + b


@mcp.tool()
async def where(ctx: Context[ServerSession, None]) -> str:
    return ctx.request_context.lifespan_context["db"] + " " + ctx.lifespan["db"]


@mcp.tool()
async def ask(ctx: Context) -> str:
    result = await ctx.session.create_message(
        messages=[SamplingMessage(role="user", content=TextContent(type="text", text="hi"))],
        max_tokens=10,
    )
    return result.content.text


@mcp.tool()
def whole() -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text="nope")], is_error=True, _meta={"k": 1}
    )


@mcp.tool()
def protocol() -> str:
    raise MCPError(code=-32099, message="refused", data={"why": "test"})


@mcp.tool()
def crash() -> str:
    raise RuntimeError("secret detail")


if __name__ == "__main__":
    import sys

    if len(sys.argv) > 1:
        mcp.run(transport="streamable-http", port=int(sys.argv[1]))
    else:
        mcp.run()
'''


@pytest.fixture
def server_file(tmp_path: Path) -> Path:
    path = tmp_path / "parity_server.py"
    path.write_text(SERVER)
    return path


def _env(log: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["LIFESPAN_LOG"] = str(log)
    return env


async def _sample(context: Any, params: types.CreateMessageRequestParams) -> Any:
    return types.CreateMessageResult(
        role="assistant",
        content=types.TextContent(type="text", text="sampled"),
        model="test",
        stop_reason="endTurn",
    )


@contextlib.asynccontextmanager
async def _stdio_session(command: list[str], env: dict[str, str]) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=command[0], args=command[1:], env=env)
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write, sampling_callback=_sample) as session,
    ):
        await session.initialize()
        yield session


async def _exercise(session: ClientSession) -> None:
    tools = {t.name: t for t in (await session.list_tools()).tools}
    # The whole docstring, as the SDK publishes it.
    assert tools["add"].description == (
        "Add two numbers.\n\n    Parameters:\n        a: the first\n        b: the second\n    "
    )
    added = await session.call_tool("add", {"a": 2, "b": 3})
    assert added.structured_content == {"result": 5} and not added.is_error
    where = await session.call_tool("where", {})
    assert where.content[0].text == "connected connected"  # type: ignore[union-attr]
    asked = await session.call_tool("ask", {})
    assert asked.content[0].text == "sampled"  # type: ignore[union-attr]
    whole = await session.call_tool("whole", {})
    assert whole.is_error and whole.meta == {"k": 1}
    assert whole.content[0].text == "nope"  # type: ignore[union-attr]
    with pytest.raises(MCPError) as refused:
        await session.call_tool("protocol", {})
    assert (refused.value.error.code, refused.value.error.message) == (-32099, "refused")
    assert refused.value.error.data == {"why": "test"}
    crash = await session.call_tool("crash", {})
    assert crash.is_error
    assert crash.content[0].text == "Error executing tool crash"  # type: ignore[union-attr]


def _lifespan_log(log: Path) -> list[tuple[str, int]]:
    if not log.exists():
        return []
    return [(w, int(p)) for w, p in (line.split() for line in log.read_text().splitlines())]


@pytest.mark.parametrize("runner", ["jetmcp run", "mcp.run()"])
def test_stdio_server_written_the_sdk_way(server_file: Path, tmp_path: Path, runner: str) -> None:
    log = tmp_path / "lifespan.log"
    if runner == "jetmcp run":
        command = [*jetmcp_command(), "run", str(server_file), "--transport", "stdio"]
    else:
        command = [sys.executable, str(server_file)]

    async def main() -> None:
        async with _stdio_session(command, _env(log)) as session:
            # The lifespan started before the first request was answered.
            assert [w for w, _ in _lifespan_log(log)] == ["start"]
            await _exercise(session)

    asyncio.run(asyncio.wait_for(main(), TIMEOUT))
    # stdin closed: the lifespan's shutdown ran before the process exited.
    deadline = time.monotonic() + TIMEOUT
    while len(_lifespan_log(log)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    entries = _lifespan_log(log)
    assert [w for w, _ in entries] == ["start", "stop"]
    assert entries[0][1] == entries[1][1]


@contextlib.contextmanager
def _process(
    args: list[str], env: dict[str, str], cwd: Path, port: int
) -> Iterator[subprocess.Popen[bytes]]:
    """``args`` serving on ``port``, up once the port accepts; stopped with its group."""
    server = ServerProcess(args, port, env=env, cwd=cwd)
    try:
        yield server.proc
    finally:
        server.stop()


async def _http_exercise(url: str) -> None:
    async with (
        streamable_http_client(url) as (read, write),
        ClientSession(read, write, sampling_callback=_sample) as session,
    ):
        await session.initialize()
        await _exercise(session)


@pytest.mark.parametrize(
    "runner", ["jetmcp run", "jetmcp run --workers 2", "mcp.run(streamable-http)"]
)
def test_http_server_lifespan_per_worker(server_file: Path, tmp_path: Path, runner: str) -> None:
    log = tmp_path / "lifespan.log"
    port = free_port()
    workers = 2 if "--workers 2" in runner else 1
    prefix = new_prefix()
    if runner.startswith("jetmcp"):
        args = [
            *jetmcp_command(),
            "run",
            str(server_file),
            "--transport",
            "http",
            "--port",
            str(port),
        ]
        args += ["--workers", str(workers)]
        if workers > 1:
            # Several workers share their sessions through Redis (refused without it).
            args += ["--redis", REDIS_URL, "--redis-prefix", prefix]
    else:
        args = [sys.executable, str(server_file), str(port)]
    with _process(args, _env(log), tmp_path, port) as proc:
        deadline = time.monotonic() + TIMEOUT
        while len(_lifespan_log(log)) < workers and time.monotonic() < deadline:
            time.sleep(0.05)
        started = _lifespan_log(log)
        # Every worker entered the lifespan before serving.
        assert [w for w, _ in started] == ["start"] * workers
        assert len({pid for _, pid in started}) == workers
        url = f"http://127.0.0.1:{port}/mcp"
        asyncio.run(asyncio.wait_for(_http_exercise(url), TIMEOUT))
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=TIMEOUT)
    drop_keys(prefix)
    entries = _lifespan_log(log)
    stopped = sorted(pid for w, pid in entries if w == "stop")
    assert stopped == sorted(pid for _, pid in started), entries


MOUNTED = """
import contextlib

from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Mount, Route

from parity_server import mcp


@mcp.custom_route("/health", methods=["GET"])
async def health(request):
    return PlainTextResponse("ok")


async def home(request):
    return PlainTextResponse("the host app")


@contextlib.asynccontextmanager
async def lifespan(app):
    async with mcp.session_manager.run():
        yield


app = Starlette(
    routes=[Route("/", home), Mount("/tools", app=mcp.streamable_http_app())],
    lifespan=lifespan,
)
"""


def test_asgi_app_mounted_in_starlette_under_uvicorn(server_file: Path, tmp_path: Path) -> None:
    (tmp_path / "host_app.py").write_text(MOUNTED)
    log = tmp_path / "lifespan.log"
    port = free_port()
    args = [
        sys.executable,
        "-m",
        "uvicorn",
        "host_app:app",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--log-level",
        "warning",
    ]
    with _process(args, _env(log), tmp_path, port) as proc:
        assert [w for w, _ in _lifespan_log(log)] == ["start"]
        base = f"http://127.0.0.1:{port}"
        assert httpx.get(f"{base}/", timeout=5).text == "the host app"
        assert httpx.get(f"{base}/tools/health", timeout=5).text == "ok"
        asyncio.run(asyncio.wait_for(_http_exercise(f"{base}/tools/mcp"), TIMEOUT))
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=TIMEOUT)
    assert [w for w, _ in _lifespan_log(log)] == ["start", "stop"]


def test_constructor_keywords() -> None:
    assert Server().name == "jetmcp"
    server = Server("s", host="0.0.0.0", port=9000, stateless_http=True, log_level="DEBUG")
    assert server.sdk_options["port"] == 9000
    with pytest.raises(TypeError, match="unexpected keyword argument 'colour'"):
        Server("s", colour="blue")
    with pytest.raises(TypeError, match="auth_server_provider= is not supported"):
        Server("s", auth_server_provider=object())
    with pytest.raises(TypeError, match="verify_token"):
        Server("s", token_verifier=object())
    with pytest.raises(TypeError, match="middleware= is not supported"):
        Server("s", middleware=[])
    assert Server[dict[str, Any]] is Server


def test_whole_docstring_is_the_description() -> None:
    server = Server("s")

    @server.tool()
    def t() -> str:
        """First line.

        Args:
            nothing: at all
        """
        return ""

    assert server.tools["t"].description == t.__doc__


def test_run_refuses_unknown_transport() -> None:
    with pytest.raises(ValueError, match="Unknown transport"):
        Server("s").run(transport="carrier-pigeon")
