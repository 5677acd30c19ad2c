"""Real clients against jetmcp: the official Python SDK (``mcp``) over Streamable HTTP and
stdio, and the official TypeScript SDK (``@modelcontextprotocol/sdk``, run by node) over
Streamable HTTP.

They drive ``tests.apps.client_fixtures:app`` (the conformance fixtures plus a tool that
notes its own cancellation): initialize, list and call, tools that elicit, sample and ask for
roots (the client answers), progress and log notifications, cancellation of a long call,
and, over HTTP, a call whose SSE stream the server ends early (2025-11-25 polling) resumed
with ``Last-Event-ID``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid
import warnings
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import types
from mcp.client import Client
from mcp.client.context import ClientRequestContext
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPDeprecationWarning

from harness.servers import AppServer, jetmcp_command, server_env

ROOT = Path(__file__).resolve().parents[2]
APP = "tests.apps.client_fixtures:app"
TS_DIR = ROOT / "tests" / "clients"
TS_SDK_VERSION = json.loads((TS_DIR / "package.json").read_text())["dependencies"][
    "@modelcontextprotocol/sdk"
]
#: Bounds every conversation so a stuck exchange fails instead of hanging the suite.
CONVERSATION_TIMEOUT = 20.0


class FixtureServer(AppServer):
    """``jetmcp run tests.apps.client_fixtures:app`` over HTTP on a free port of 127.0.0.1."""

    def __init__(self) -> None:
        super().__init__(APP, label="fixture server")


@pytest.fixture(scope="module")
def fixture_url() -> Iterator[str]:
    server = FixtureServer()
    try:
        yield server.url
    finally:
        server.stop()


# --------------------------------------------------------------------------- Python SDK


def run(main: Callable[[], Awaitable[None]]) -> None:
    async def bounded() -> None:
        with anyio.fail_after(CONVERSATION_TIMEOUT):
            await main()

    anyio.run(bounded)


def text_of(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


class Answers:
    """The client side of server-to-client requests: canned answers, and what was asked."""

    def __init__(self) -> None:
        self.elicitations: list[types.ElicitRequestParams] = []
        self.samplings: list[types.CreateMessageRequestParams] = []
        self.logs: list[types.LoggingMessageNotificationParams] = []
        self.roots_asked = 0

    async def elicit(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        self.elicitations.append(params)
        return types.ElicitResult(
            action="accept", content={"username": "ada", "email": "ada@example.com"}
        )

    async def sample(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        self.samplings.append(params)
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text="Paris"),
            model="test-model",
            stop_reason="endTurn",
        )

    async def log(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logs.append(params)

    async def roots(self, context: ClientRequestContext) -> types.ListRootsResult:
        self.roots_asked += 1
        return types.ListRootsResult(roots=[types.Root(uri="file:///tmp/project", name="project")])

    def client(self, server: Any) -> Client:
        return Client(
            server,
            mode="legacy",
            elicitation_callback=self.elicit,
            sampling_callback=self.sample,
            logging_callback=self.log,
            list_roots_callback=self.roots,
        )


async def set_logging_level(client: Client, level: types.LoggingLevel) -> None:
    # Deprecated only for 2026-07-28; these connections negotiated a handshake revision.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        await client.set_logging_level(level)


def stdio_params() -> StdioServerParameters:
    command, *prefix = jetmcp_command()
    env = server_env()
    return StdioServerParameters(
        command=command,
        args=[*prefix, "run", APP, "--transport", "stdio"],
        env={"PYTHONPATH": env["PYTHONPATH"]},
        cwd=str(ROOT),
    )


@pytest.fixture(params=["http", "stdio"])
def target(request: pytest.FixtureRequest) -> Any:
    """Where the Python SDK connects: the HTTP fixture server's URL, or a stdio command."""
    if request.param == "http":
        return request.getfixturevalue("fixture_url")
    return stdio_params()


def test_python_sdk_lists_and_calls(target: Any) -> None:
    async def main() -> None:
        async with Answers().client(target) as client:
            assert client.protocol_version == "2025-11-25"
            tools = {t.name for t in (await client.list_tools()).tools}
            assert {"test_simple_text", "test_elicitation", "wait_for_cancel"} <= tools
            called = await client.call_tool("test_simple_text", {})
            assert text_of(called) == "This is a simple text response for testing."
            failed = await client.call_tool("test_error_handling", {})
            assert failed.is_error
            read = await client.read_resource("test://template/42/data")
            assert json.loads(getattr(read.contents[0], "text", "")) == {
                "id": "42",
                "templateTest": True,
                "data": "Data for ID: 42",
            }
            prompt = await client.get_prompt(
                "test_prompt_with_arguments", {"arg1": "x", "arg2": "y"}
            )
            assert getattr(prompt.messages[0].content, "text", "") == (
                "Prompt with arguments: arg1='x', arg2='y'"
            )

    run(main)


def test_python_sdk_answers_elicitation(target: Any) -> None:
    answers = Answers()

    async def main() -> None:
        async with answers.client(target) as client:
            result = await client.call_tool("test_elicitation", {"message": "Who are you?"})
            assert not result.is_error, text_of(result)
            assert text_of(result) == (
                'User response: action=accept, content={"username": "ada", '
                '"email": "ada@example.com"}'
            )

    run(main)
    [asked] = answers.elicitations
    assert asked.message == "Who are you?"
    schema = asked.requested_schema
    assert set(schema["properties"]) == {"username", "email"}


def test_python_sdk_answers_sampling(target: Any) -> None:
    answers = Answers()

    async def main() -> None:
        async with answers.client(target) as client:
            result = await client.call_tool("test_sampling", {"prompt": "Capital of France?"})
            assert not result.is_error, text_of(result)
            assert text_of(result) == "LLM response: Paris"

    run(main)
    [asked] = answers.samplings
    assert asked.max_tokens == 100
    assert asked.messages[0].content.text == "Capital of France?"  # type: ignore[union-attr]


def test_python_sdk_answers_roots(target: Any) -> None:
    answers = Answers()

    async def main() -> None:
        async with answers.client(target) as client:
            result = await client.call_tool("client_roots", {})
            assert not result.is_error, text_of(result)
            assert result.structured_content == {"result": ["project=file:///tmp/project"]}

    run(main)
    assert answers.roots_asked == 1


def test_python_sdk_receives_progress_and_logs(target: Any) -> None:
    answers = Answers()
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    async def main() -> None:
        async with answers.client(target) as client:
            result = await client.call_tool(
                "test_tool_with_progress", {}, progress_callback=on_progress
            )
            assert not result.is_error, text_of(result)
            await set_logging_level(client, "debug")
            logged = await client.call_tool("test_tool_with_logging", {})
            assert not logged.is_error, text_of(logged)

    run(main)
    assert [(v, t) for v, t, _ in progress] == [(0, 100), (50, 100), (100, 100)]
    assert [entry.data for entry in answers.logs] == [
        "Tool execution started",
        "Tool processing data",
        "Tool execution completed",
    ]
    assert {entry.level for entry in answers.logs} == {"info"}


def events_of(result: types.CallToolResult) -> list[str]:
    structured = result.structured_content or {}
    notes = structured.get("result", [])
    assert isinstance(notes, list)
    return [str(n) for n in notes]


async def wait_for_events(client: Client, tag: str, count: int) -> list[str]:
    """The server's notes on ``wait_for_cancel`` under ``tag``, once there are ``count``."""
    with anyio.fail_after(5):
        while True:
            notes = events_of(await client.call_tool("events", {"tag": tag}))
            if len(notes) >= count:
                return notes
            await anyio.sleep(0.02)


def test_python_sdk_cancels_a_long_call(target: Any) -> None:
    tag = f"py-{uuid.uuid4().hex[:8]}"
    seen: list[str] = []

    async def main() -> None:
        async with Answers().client(target) as client:
            async with anyio.create_task_group() as group:
                group.start_soon(client.call_tool, "wait_for_cancel", {"tag": tag, "seconds": 30})
                assert await wait_for_events(client, tag, 1) == ["started"]
                # Abandoning the call makes the SDK send notifications/cancelled.
                group.cancel_scope.cancel()
            seen[:] = await wait_for_events(client, tag, 2)

    run(main)
    assert seen == ["started", "cancelled"]


class Recorder:
    """Notes the HTTP exchanges the SDK makes: method, Last-Event-ID, status, content type."""

    def __init__(self) -> None:
        self.exchanges: list[dict[str, Any]] = []

    async def on_response(self, response: httpx2.Response) -> None:
        self.exchanges.append(
            {
                "method": response.request.method,
                "lastEventId": response.request.headers.get("last-event-id"),
                "status": response.status_code,
                "contentType": response.headers.get("content-type"),
            }
        )

    def http_client(self) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(
            timeout=httpx2.Timeout(10.0), event_hooks={"response": [self.on_response]}
        )


def assert_resumed(exchanges: list[dict[str, Any]]) -> None:
    """The call's reply was an SSE stream, and a GET with ``Last-Event-ID`` resumed it."""
    streamed = [e for e in exchanges if e["method"] == "POST" and e["status"] == 200]
    assert any("text/event-stream" in (e["contentType"] or "") for e in streamed), exchanges
    resumed = [e for e in exchanges if e["method"] == "GET" and e["lastEventId"]]
    assert resumed, exchanges
    assert all(e["status"] == 200 for e in resumed), exchanges


def test_python_sdk_resumes_a_dropped_stream(fixture_url: str) -> None:
    recorder = Recorder()
    answers = Answers()

    async def main() -> None:
        async with recorder.http_client() as http:
            transport = streamable_http_client(fixture_url, http_client=http)
            async with answers.client(transport) as client:
                await set_logging_level(client, "debug")
                result = await client.call_tool("test_reconnection", {})
                assert not result.is_error, text_of(result)
                assert text_of(result) == "Reconnection test completed"

    run(main)
    assert_resumed(recorder.exchanges)
    assert [entry.data for entry in answers.logs] == ["Before disconnect", "After reconnect"]


# --------------------------------------------------------------------------- TypeScript SDK


@pytest.fixture(scope="session")
def ts_client() -> Path:
    """``tests/clients/ts_client.mjs`` with the pinned SDK installed next to it (npm ci)."""
    node = shutil.which("node")
    npm = shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("node and npm are needed for the TypeScript SDK client")
    installed = TS_DIR / "node_modules" / "@modelcontextprotocol" / "sdk" / "package.json"
    if not installed.exists() or json.loads(installed.read_text()).get("version") != TS_SDK_VERSION:
        subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=TS_DIR,
            check=True,
            timeout=300,
        )
    return TS_DIR / "ts_client.mjs"


def ts_run(script: Path, url: str, scenario: str) -> dict[str, Any]:
    proc = subprocess.run(
        ["node", str(script), url, scenario],
        capture_output=True,
        text=True,
        timeout=CONVERSATION_TIMEOUT,
        cwd=TS_DIR,
    )
    lines = proc.stdout.strip().splitlines()
    assert lines, f"no output (exit {proc.returncode}):\n{proc.stderr}"
    observed: dict[str, Any] = json.loads(lines[-1])
    assert proc.returncode == 0 and "error" not in observed, (observed, proc.stderr)
    return observed


def test_ts_sdk_lists_and_calls(ts_client: Path, fixture_url: str) -> None:
    seen = ts_run(ts_client, fixture_url, "basic")
    assert seen["serverVersion"] == {"name": "jetmcp-client-tests", "version": "0.1.0"}
    assert seen["protocolVersion"] == "2025-11-25"
    assert seen["sessionId"]
    assert {"test_simple_text", "test_sampling", "wait_for_cancel"} <= set(seen["tools"])
    assert seen["text"] == ["This is a simple text response for testing."]
    assert "test://static-text" in seen["resources"]
    assert seen["templates"] == ["test://template/{id}/data"]
    assert json.loads(seen["readText"])["id"] == "7"
    assert "test_prompt_with_arguments" in seen["prompts"]
    assert seen["promptText"] == ["Prompt with arguments: arg1='a', arg2='b'"]
    assert seen["errorResult"] == {
        "isError": True,
        "text": ["This tool intentionally returns an error for testing"],
    }


def test_ts_sdk_answers_elicitation(ts_client: Path, fixture_url: str) -> None:
    seen = ts_run(ts_client, fixture_url, "elicit")
    assert seen["isError"] is False
    assert seen["text"] == [
        'User response: action=accept, content={"username": "ada", "email": "ada@example.com"}'
    ]
    [asked] = seen["asked"]["elicitation"]
    assert asked["message"] == "Who are you?"


def test_ts_sdk_answers_sampling(ts_client: Path, fixture_url: str) -> None:
    seen = ts_run(ts_client, fixture_url, "sample")
    assert seen["isError"] is False
    assert seen["text"] == ["LLM response: Paris"]
    [asked] = seen["asked"]["sampling"]
    assert asked["maxTokens"] == 100


def test_ts_sdk_answers_roots(ts_client: Path, fixture_url: str) -> None:
    seen = ts_run(ts_client, fixture_url, "roots")
    assert seen["isError"] is False
    assert seen["roots"] == ["project=file:///tmp/project"]
    assert seen["asked"]["roots"] == 1


def test_ts_sdk_receives_progress(ts_client: Path, fixture_url: str) -> None:
    seen = ts_run(ts_client, fixture_url, "progress")
    assert [(p["progress"], p["total"]) for p in seen["progress"]] == [
        (0, 100),
        (50, 100),
        (100, 100),
    ]


def test_ts_sdk_receives_logs(ts_client: Path, fixture_url: str) -> None:
    seen = ts_run(ts_client, fixture_url, "logging")
    assert [entry["data"] for entry in seen["logs"]] == [
        "Tool execution started",
        "Tool processing data",
        "Tool execution completed",
    ]


def test_ts_sdk_cancels_a_long_call(ts_client: Path, fixture_url: str) -> None:
    seen = ts_run(ts_client, fixture_url, "cancel")
    assert seen["outcome"].startswith("rejected"), seen
    assert seen["events"] == ["started", "cancelled"]


def test_ts_sdk_resumes_a_dropped_stream(ts_client: Path, fixture_url: str) -> None:
    seen = ts_run(ts_client, fixture_url, "reconnect")
    assert seen["isError"] is False
    assert seen["text"] == ["Reconnection test completed"]
    assert_resumed(seen["exchanges"])
