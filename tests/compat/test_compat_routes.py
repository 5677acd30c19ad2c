"""Custom HTTP routes (``@mcp.custom_route``) of a server file written for the official SDK,
served unchanged by ``jetmcp run`` next to its MCP endpoint (and those of a native server)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest
from mcp.client import Client

from harness.servers import ServerProcess, free_port, jetmcp_command

SDK_FILE = '''
from MODULE import CLASS
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, StreamingResponse

mcp = CLASS("routed")


@mcp.tool()
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@mcp.custom_route("/health", methods=["GET"])
async def health(request: Request) -> JSONResponse:
    return JSONResponse({"status": "ok", "q": request.query_params.get("q")})


@mcp.custom_route("/echo/{word}", methods=["POST"])
async def echo(request: Request) -> PlainTextResponse:
    body = await request.body()
    agent = request.headers.get("x-agent", "")
    return PlainTextResponse(
        f"{request.path_params['word']}:{body.decode()}:{agent}",
        status_code=201,
        headers={"x-routed": "yes"},
    )


@mcp.custom_route("/count", methods=["GET"])
async def count(request: Request) -> StreamingResponse:
    async def numbers():
        for n in range(3):
            yield f"{n}\\n".encode()

    return StreamingResponse(numbers(), media_type="text/plain")


@mcp.custom_route("/boom", methods=["GET"])
async def boom(request: Request) -> JSONResponse:
    raise RuntimeError("route failed")


@mcp.custom_route("/mcp", methods=["GET"])
async def shadow(request: Request) -> PlainTextResponse:
    return PlainTextResponse("the endpoint is the MCP app's")
'''

NATIVE_FILE = """
import sys

from starlette.requests import Request
from starlette.responses import PlainTextResponse

from jetmcp import Server

app = Server("native-routed")


@app.tool()
def hello() -> str:
    return "hi"


@app.custom_route("/ping-me", methods=["GET"])
async def ping_me(request: Request) -> PlainTextResponse:
    return PlainTextResponse("pong")


if __name__ == "__main__":
    app.run(transport="streamable-http", port=int(sys.argv[1]))
"""


def _serve(folder: Path, target: str, by_itself: bool = False) -> Iterator[str]:
    port = free_port()
    command = (
        [sys.executable, target, str(port)]
        if by_itself
        else [*jetmcp_command(), "run", target, "--transport", "http", "--port", str(port)]
    )
    server = ServerProcess(command, port, ready="ping", label=f"server of {target}", cwd=folder)
    try:
        yield server.base
    finally:
        server.stop()


#: The frameworks whose ``custom_route`` is tried: the SDK's 2.x ``MCPServer``, and
#: fastmcp's ``FastMCP`` where the drop-in corpus installed it.
FRAMEWORKS = {
    "mcp2": ("mcp.server.mcpserver", "MCPServer"),
    "fastmcp": ("fastmcp", "FastMCP"),
}


@pytest.fixture(scope="module", params=sorted(FRAMEWORKS))
def sdk_base(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    module, cls = FRAMEWORKS[request.param]
    pytest.importorskip(module)
    folder = tmp_path_factory.mktemp("routes")
    (folder / "routed_server.py").write_text(
        SDK_FILE.replace("MODULE", module).replace("CLASS", cls)
    )
    yield from _serve(folder, "routed_server.py")


def test_routes_of_an_sdk_server_are_served(sdk_base: str) -> None:
    with httpx.Client(timeout=5.0) as client:
        health = client.get(f"{sdk_base}/health?q=a%20b")
        assert health.status_code == 200
        assert health.json() == {"status": "ok", "q": "a b"}

        echo = client.post(f"{sdk_base}/echo/hello", content=b"body!", headers={"x-agent": "t"})
        assert (echo.status_code, echo.text) == (201, "hello:body!:t")
        assert echo.headers["x-routed"] == "yes"

        # The path parameter arrives decoded once, as under any ASGI server.
        spaced = client.post(f"{sdk_base}/echo/two%20words", content=b"")
        assert spaced.text == "two words::"
        escaped = client.post(f"{sdk_base}/echo/50%2525", content=b"")
        assert escaped.text == "50%25::"

        assert client.get(f"{sdk_base}/count").text == "0\n1\n2\n"

        # A method the route does not take: Starlette's 405, as on the SDK.
        assert client.get(f"{sdk_base}/echo/hello").status_code == 405
        # A route that raises: 500, and the server goes on.
        assert client.get(f"{sdk_base}/boom").status_code == 500
        assert client.get(f"{sdk_base}/health").status_code == 200

        # A path nobody serves: jetmcp's 404.
        missing = client.get(f"{sdk_base}/nowhere")
        assert missing.status_code == 404
        # The MCP endpoint stays the MCP app's (the SDK puts its own route first too): a
        # GET without a session is refused by the transport, not answered by the route.
        endpoint = client.get(f"{sdk_base}/mcp", headers={"accept": "text/event-stream"})
        assert endpoint.text != "the endpoint is the MCP app's"
        assert endpoint.status_code >= 400


def test_tools_of_an_sdk_server_with_routes(sdk_base: str) -> None:
    async def main() -> tuple[str, list[str]]:
        async with Client(f"{sdk_base}/mcp") as client:
            tools = await client.list_tools()
            result = await client.call_tool("add", {"a": 2, "b": 3})
            text = result.content[0].text  # type: ignore[union-attr]
            return text, [t.name for t in tools.tools]

    text, names = anyio.run(main)
    assert (text, names) == ("5", ["add"])


@pytest.mark.parametrize("by_itself", [False, True], ids=["jetmcp run", "server.run()"])
def test_routes_of_a_native_server_are_served(tmp_path: Path, by_itself: bool) -> None:
    (tmp_path / "native_server.py").write_text(NATIVE_FILE)
    for base in _serve(tmp_path, "native_server.py", by_itself):
        with httpx.Client(timeout=5.0) as client:
            assert client.get(f"{base}/ping-me").text == "pong"
            assert client.get(f"{base}/ping-me/no").status_code == 404
