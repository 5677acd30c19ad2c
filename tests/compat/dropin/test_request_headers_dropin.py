"""Servers of other frameworks reading the HTTP request's headers (issue 41 item 7), each
served over Streamable HTTP by its own SDK (``sdk_run.py``, under uvicorn) and by ``jetmcp
run``, sent the same requests: the tool must see the same ``X-Api-Key`` on both, and over
stdio jetmcp gives what the SDK gives there (no HTTP request).

- SDK 1.x FastMCP: ``ctx.request_context.request.headers``;
- SDK 2.x MCPServer: ``ctx.headers``;
- fastmcp 2.x (on mcp 1.x) and 4.x (on mcp 2.x): ``get_http_headers()``, ``get_http_request()``.

The environments are the drop-in corpus's (``bash scripts/dropin.sh``)."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from harness.servers import ServerProcess, free_port, jetmcp_command

ROOT = Path(__file__).resolve().parents[3]
HERE = Path(__file__).resolve().parent
SERVERS = HERE / "servers"
V1 = ROOT / ".cache" / "dropin" / "v1" / "bin" / "python"
PYTHON = {"v1": V1, "v2": Path(sys.executable)}
LEGACY = "2025-06-18"

#: (environment, server file, tools and what each answers for X-Api-Key: k-1).
CASES = [
    ("v1", "headers_sdk1.py", ("api_key",)),
    ("v1", "headers_fastmcp.py", ("api_key", "via_request")),
    ("v2", "headers_sdk2.py", ("api_key",)),
    ("v2", "headers_fastmcp.py", ("api_key", "via_request")),
]


def _ready(env: str) -> bool:
    python = PYTHON[env]
    if not python.exists():
        return False
    probe = "import fastmcp, mcp"
    return subprocess.run([str(python), "-c", probe], capture_output=True).returncode == 0


pytestmark = pytest.mark.skipif(
    not (_ready("v1") and _ready("v2")),
    reason="the drop-in environments are missing: run `bash scripts/dropin.sh`",
)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "python"), str(HERE), str(SERVERS)])
    env.pop("VIRTUAL_ENV", None)
    return env


def _jetmcp(env: str) -> list[str]:
    if env == "v2":
        return jetmcp_command()
    return [str(PYTHON[env]), "-m", "jetmcp"]


@pytest.fixture(params=CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def case(request: pytest.FixtureRequest) -> tuple[str, str, tuple[str, ...]]:
    return request.param  # type: ignore[no-any-return]


def _serve(argv: list[str], port: int, label: str) -> ServerProcess:
    return ServerProcess(argv, port, ready="listen", label=label, env=_env(), cwd=SERVERS)


@pytest.fixture
def sides(case: tuple[str, str, tuple[str, ...]]) -> Iterator[dict[str, ServerProcess]]:
    env, file, _ = case
    python = str(PYTHON[env])
    started: dict[str, ServerProcess] = {}
    try:
        port = free_port()
        started["sdk"] = _serve(
            [python, str(HERE / "sdk_run.py"), file, "http", str(port)], port, f"sdk {file}"
        )
        port = free_port()
        argv = [*_jetmcp(env), "run", file, "--transport", "http", "--port", str(port)]
        started["jetmcp"] = _serve([*argv, "--host", "127.0.0.1"], port, f"jetmcp {file}")
        yield started
    finally:
        for server in started.values():
            server.stop()


def _message(resp: httpx.Response) -> dict[str, Any]:
    assert resp.status_code in (200, 202), resp.text
    text = resp.text
    if resp.headers.get("content-type", "").startswith("text/event-stream"):
        data = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
        text = [d for d in data if d][-1]
    message: dict[str, Any] = json.loads(text)
    return message


def _texts(url: str, tools: tuple[str, ...], headers: dict[str, str]) -> list[str]:
    """A session at 2025-06-18 that calls each tool once with ``headers`` added."""
    base = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    with httpx.Client(timeout=20.0) as client:
        init = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": LEGACY,
                "capabilities": {},
                "clientInfo": {"name": "headers-test", "version": "0"},
            },
        }
        resp = client.post(url, json=init, headers=base)
        assert "result" in _message(resp), resp.text
        session = {"MCP-Protocol-Version": LEGACY}
        if "mcp-session-id" in resp.headers:
            session["Mcp-Session-Id"] = resp.headers["mcp-session-id"]
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        client.post(url, json=note, headers={**base, **session})
        texts = []
        for i, tool in enumerate(tools, start=2):
            call = {
                "jsonrpc": "2.0",
                "id": i,
                "method": "tools/call",
                "params": {"name": tool, "arguments": {}},
            }
            answer = _message(client.post(url, json=call, headers={**base, **session, **headers}))
            texts.append(answer["result"]["content"][0]["text"])
        return texts


def test_the_tool_sees_the_header_as_on_its_own_sdk(
    case: tuple[str, str, tuple[str, ...]], sides: dict[str, ServerProcess]
) -> None:
    _, _, tools = case
    for headers, expected in (({"X-Api-Key": "k-1"}, "k-1"), ({}, "missing")):
        sdk = _texts(sides["sdk"].url, tools, headers)
        assert sdk == [expected] * len(tools)  # the reference itself reads it
        assert _texts(sides["jetmcp"].url, tools, headers) == sdk


def _one_at_a_time(argv: list[str], lines: list[dict[str, Any]]) -> dict[Any, Any]:
    """Send each line over stdio, a request only once the one before it is answered (at
    EOF an SDK may drop what is still running); the replies by id."""
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=_env(),
        cwd=SERVERS,
        start_new_session=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    replies: dict[Any, Any] = {}
    pending = b""
    try:
        for line in lines:
            proc.stdin.write((json.dumps(line) + "\n").encode())
            proc.stdin.flush()
            wanted = line.get("id")
            while wanted is not None and wanted not in replies:
                ready, _, _ = select.select([proc.stdout], [], [], 60)
                assert ready, f"no answer to {line} within 60 s"
                chunk = os.read(proc.stdout.fileno(), 65536)
                assert chunk, f"{argv} exited before answering {line}"
                pending += chunk
                *whole, pending = pending.split(b"\n")
                for text in whole:
                    message = json.loads(text) if text.strip() else {}
                    if "id" in message:
                        replies[message["id"]] = message
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return replies


def test_no_http_request_over_stdio(case: tuple[str, str, tuple[str, ...]]) -> None:
    env, file, tools = case
    lines = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": LEGACY,
                "capabilities": {},
                "clientInfo": {"name": "headers-test", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]
    for i, tool in enumerate(tools, start=2):
        params = {"name": tool, "arguments": {}}
        lines.append({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": params})
    answers: dict[str, list[str]] = {}
    for side, argv in (
        ("sdk", [str(PYTHON[env]), str(HERE / "sdk_run.py"), file, "stdio"]),
        ("jetmcp", [*_jetmcp(env), "run", file, "--transport", "stdio"]),
    ):
        replies = _one_at_a_time(argv, lines)
        answers[side] = [
            replies[i]["result"]["content"][0]["text"] for i in range(2, 2 + len(tools))
        ]
    assert answers["jetmcp"] == answers["sdk"]
    # SDK 1.x/2.x: no request; fastmcp: get_http_headers() is empty, get_http_request() raises.
    assert set(answers["sdk"]) <= {"no http request", "missing"}
