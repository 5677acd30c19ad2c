"""The jetmcp client against the jetmcp server, over Streamable HTTP and stdio, at every legacy
revision (2024-11-05 .. 2025-11-25), plus the pieces that need no server (header values, SSE
framing) and the client's own guarantees against a misbehaving fake server (answers routed
by the client's ids only, late and duplicate answers dropped, a dead server reported).

Every server is a real process (tests/harness/client_app.py); every wait is bounded.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from harness.client_app import (
    MODERN_SERVER,
    ROOT,
    ServerProcess,
    app_env,
    jetmcp_stdio,
    run,
    serving,
)
from jetmcp import Client, McpError
from jetmcp.client import (
    CallToolResult,
    CreateMessageResult,
    ElicitResult,
    GetPromptResult,
    ListToolsResult,
    ReadResourceResult,
    Response,
    Root,
    TransportClosed,
)
from jetmcp.client.session import encode_header_value
from jetmcp.client.transports import HttpTransport, SseParser, Url
from jetmcp.client.types import ImageContent, TextContent, UnknownContent
from jetmcp.errors import INVALID_PARAMS, METHOD_NOT_FOUND
from jetmcp.protocol import revisions
from jetmcp.protocol.modern import decode_value

LEGACY = [r.version for r in revisions.LEGACY]
TRANSPORTS = ("http", "stdio")


@pytest.fixture(scope="module")
def jet_http() -> Iterator[ServerProcess]:
    yield from serving()


Connect = Callable[..., Client]


@pytest.fixture
def connect(jet_http: ServerProcess) -> Connect:
    """``connect(kind, **options)``: a Client of the test app over ``kind``."""

    def make(kind: str, **options: Any) -> Client:
        if kind == "http":
            return Client(jet_http.url, **options)
        return Client.stdio(jetmcp_stdio(), env=app_env(), cwd=str(ROOT), **options)

    return make


async def _elicit(request: Any) -> ElicitResult:
    content = {"username": f"ada ({request.message})", "email": "ada@example.com"}
    return ElicitResult(action="accept", content=content)


async def _sample(request: Any) -> CreateMessageResult:
    prompt = request.messages[0].content["text"]
    return CreateMessageResult(content={"type": "text", "text": f"echo {prompt}"}, model="fake")


HANDLERS: dict[str, Any] = {
    "elicitation_handler": _elicit,
    "sampling_handler": _sample,
    "roots": [Root(uri="file:///work", name="work"), "file:///tmp"],
}


async def _events(client: Client, tag: str, want: int) -> list[str]:
    """``events(tag)`` once ``want`` cancellations are noted (or the deadline passed)."""
    deadline = time.monotonic() + 5.0
    while True:
        notes = _items(await client.call_tool("events", {"tag": tag}))
        if notes.count("cancelled") >= want or time.monotonic() > deadline:
            return list(notes)
        await asyncio.sleep(0.05)


def _items(result: CallToolResult) -> list[str]:
    """A tool's list of strings: one text block per item (on every revision)."""
    return [block.text for block in result.content if isinstance(block, TextContent)]


# --------------------------------------------------------------------------- jetmcp, legacy


@pytest.mark.parametrize("version", LEGACY)
@pytest.mark.parametrize("kind", TRANSPORTS)
def test_typed_calls(connect: Connect, kind: str, version: str) -> None:
    async def scenario() -> None:
        async with connect(kind, revision=version) as client:
            assert client.revision.version == version
            assert client.server_info["name"] == "jetmcp-client-tests"
            await client.ping()

            page = await client.list_tools()
            assert isinstance(page, ListToolsResult)
            assert len(page.tools) == 4 and page.next_cursor
            tools = await client.list_all_tools()
            names = [t.name for t in tools]
            assert len(names) == len(set(names)) > 4
            assert {"add", "echo", "wait_for_cancel", "tenant_echo"} <= set(names)
            add = next(t for t in tools if t.name == "add")
            assert add.input_schema["properties"]["a"]["type"] == "integer"

            result = await client.call_tool("add", {"a": 40, "b": 2})
            assert isinstance(result, CallToolResult)
            assert result.text == "42" and not result.is_error
            assert isinstance(result.content[0], TextContent)
            image = await client.call_tool("test_image_content")
            assert isinstance(image.content[0], ImageContent)
            failed = await client.call_tool("fail")
            assert failed.is_error and "always fails" in failed.text

            with pytest.raises(McpError) as unknown:
                await client.call_tool("no_such_tool")
            assert unknown.value.code == INVALID_PARAMS
            assert "no_such_tool" in unknown.value.message

            readme = await client.read_resource("demo://readme")
            assert isinstance(readme, ReadResourceResult)
            assert "jetmcp demo" in readme.text
            resources = await client.list_all_resources()
            assert {r.uri for r in resources} >= {"demo://readme", "test://static-text"}
            templates = await client.list_all_resource_templates()
            assert {t.uri_template for t in templates} >= {"demo://items/{id}"}
            prompts = await client.list_all_prompts()
            assert "greet" in {p.name for p in prompts}
            greeting = await client.get_prompt("greet", {"name": "Ada"})
            assert isinstance(greeting, GetPromptResult)
            assert greeting.messages[0].content.text == "Hello, Ada!"  # type: ignore[union-attr]

            completion = await client.complete(
                {"type": "ref/prompt", "name": "test_prompt_with_arguments"}, ("arg1", "pa")
            )
            assert completion.completion.values == ["paris", "park", "party"]

            await client.notify("notifications/roots/list_changed")
            assert (await client.call_tool("echo", {"text": "still there"})).text == "still there"

    run(scenario())


@pytest.mark.parametrize("version", LEGACY)
@pytest.mark.parametrize("kind", TRANSPORTS)
def test_batches(connect: Connect, kind: str, version: str) -> None:
    rev = revisions.lookup(version)
    assert rev is not None

    async def scenario() -> None:
        async with connect(kind, revision=version) as client:
            before = client.writes
            tools, add, readme, greeting = await (
                client.batch()
                .list_tools()
                .call_tool("add", {"a": 40, "b": 2})
                .notify("notifications/roots/list_changed")
                .read_resource("demo://readme")
                .get_prompt("greet", {"name": "Neva"})
                .send()
            )
            assert tools.into_result(ListToolsResult).tools
            assert add.into_result(CallToolResult).text == "42"
            assert "jetmcp demo" in readme.into_result(ReadResourceResult).text
            assert greeting.into_result(GetPromptResult).messages
            assert [r.id for r in (tools, add, readme, greeting)] == [0, 1, 2, 3]
            # Where the revision has batches: one array (after the one-time [ping] check);
            # where it does not: four single requests, same answers, same order.
            assert client.wire_batches is rev.batching
            assert client.writes - before == (2 if rev.batching else 4)

            # Hand-built messages with colliding ids: the client numbers the wire itself.
            answers = await client.call_batch(
                [
                    {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": _add(1, 1)},
                    {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": _add(2, 2)},
                    {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"},
                    {"jsonrpc": "2.0", "id": "1", "method": "tools/call", "params": _add(3, 3)},
                    {"jsonrpc": "2.0", "id": 7, "method": "no/such/method"},
                    {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": _add(4, 4)},
                ]
            )
            assert [a.id for a in answers] == [1, 1, "1", 7, 1]
            texts = [a.into_result(CallToolResult).text for i, a in enumerate(answers) if i != 3]
            assert texts == ["2", "4", "6", "8"]
            with pytest.raises(McpError) as missing:
                answers[3].into_result(CallToolResult)
            assert missing.value.code == METHOD_NOT_FOUND

            # Only notifications: nothing to answer, nothing returned.
            assert await client.batch().notify("notifications/roots/list_changed").send() == []

    run(scenario())


def _add(a: int, b: int) -> dict[str, Any]:
    return {"name": "add", "arguments": {"a": a, "b": b}}


@pytest.mark.parametrize("version", LEGACY)
@pytest.mark.parametrize("kind", TRANSPORTS)
def test_server_requests(connect: Connect, kind: str, version: str) -> None:
    """Elicitation (2025-06-18 on), sampling and roots, asked by the server mid-call, answered
    by the handlers given, alone and inside a batch."""
    rev = revisions.lookup(version)
    assert rev is not None

    async def scenario() -> None:
        async with connect(kind, revision=version, **HANDLERS) as client:
            caps = client.capabilities(client.revision)
            assert "sampling" in caps and "roots" in caps
            assert ("elicitation" in caps) is rev.elicitation
            sampled = await client.call_tool("test_sampling", {"prompt": "hi"})
            assert sampled.text == "LLM response: echo hi"
            roots = await client.call_tool("client_roots")
            assert _items(roots) == ["work=file:///work", "None=file:///tmp"]
            batch = client.batch().call_tool("test_sampling", {"prompt": "a"})
            batch.call_tool("client_roots")
            if rev.elicitation:
                batch.call_tool("test_elicitation", {"message": "name?"})
            answers = await batch.send()
            assert answers[0].into_result(CallToolResult).text == "LLM response: echo a"
            assert _items(answers[1].into_result(CallToolResult))[0] == "work=file:///work"
            if rev.elicitation:
                text = answers[2].into_result(CallToolResult).text
                assert "action=accept" in text
                assert '"username": "ada (name?)"' in text

    run(scenario())


@pytest.mark.parametrize("version", LEGACY)
@pytest.mark.parametrize("kind", TRANSPORTS)
def test_batch_cancellation(connect: Connect, kind: str, version: str) -> None:
    """Cancelling the task awaiting a batch, or its timeout, cancels every request in it: the
    server's tool sees the cancellation."""
    tag = f"{kind}-{version}"

    async def scenario() -> None:
        async with connect(kind, revision=version) as client:
            batch = client.batch()
            for _ in range(3):
                batch.call_tool("wait_for_cancel", {"tag": f"{tag}-cancel"})
            task = asyncio.ensure_future(batch.send())
            await asyncio.sleep(0.4)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert await _events(client, f"{tag}-cancel", 3) == ["started"] * 3 + ["cancelled"] * 3

            batch = client.batch()
            for _ in range(2):
                batch.call_tool("wait_for_cancel", {"tag": f"{tag}-timeout"})
            with pytest.raises(TimeoutError):
                async with asyncio.timeout(0.4):
                    await batch.send()
            notes = await _events(client, f"{tag}-timeout", 2)
            assert notes == ["started"] * 2 + ["cancelled"] * 2
            # The session goes on: nothing late reaches the next caller.
            assert (await client.call_tool("add", {"a": 1, "b": 2})).text == "3"

    run(scenario())


@pytest.mark.parametrize("kind", TRANSPORTS)
def test_negotiation_picks_the_newest(connect: Connect, kind: str) -> None:
    """No revision forced: 2026-07-28 when the server discovers, else the newest legacy one."""

    async def scenario() -> None:
        async with connect(kind) as client:
            expected = "2026-07-28" if MODERN_SERVER else "2025-11-25"
            assert client.revision.version == expected
            assert (await client.call_tool("add", {"a": 2, "b": 3})).text == "5"

    run(scenario())


@pytest.mark.parametrize("kind", TRANSPORTS)
def test_notifications_reach_the_handler(connect: Connect, kind: str) -> None:
    """Progress sent mid-call reaches ``notification_handler``; a handler that raises does
    not stop the client. Notification-only batches send and return nothing."""
    seen: list[tuple[str, dict[str, Any]]] = []

    def handler(method: str, params: dict[str, Any]) -> None:
        seen.append((method, params))
        raise RuntimeError("a careless handler")

    async def scenario() -> None:
        async with connect(kind, revision="2025-03-26", notification_handler=handler) as client:
            result = await client.call_tool("test_tool_with_progress", meta={"progressToken": 7})
            assert "Progress test completed" in result.text
            progress = [p for m, p in seen if m == "notifications/progress"]
            assert progress and {p["progressToken"] for p in progress} == {7}
            two = client.batch().notify("notifications/roots/list_changed")
            assert await two.notify("notifications/roots/list_changed").send() == []
            assert (await client.call_tool("add", {"a": 1, "b": 1})).text == "2"

    run(scenario())


def test_a_stream_the_server_ends_early_is_resumed(jet_http: ServerProcess) -> None:
    """2025-11-25 SSE polling: the server closes the call's stream after a log line; the
    client resumes it with GET + Last-Event-ID and gets the rest, the result included."""
    logs: list[Any] = []

    def handler(method: str, params: dict[str, Any]) -> None:
        if method == "notifications/message":
            logs.append(params["data"])

    async def scenario() -> None:
        options = {"revision": "2025-11-25", "notification_handler": handler}
        async with Client(jet_http.url, **options) as client:
            transport = client.transport
            assert isinstance(transport, HttpTransport)
            resumed: list[str | None] = []
            resume = transport._resume

            async def counting(parser: SseParser, status: int) -> int:
                resumed.append(parser.last_id)
                return await resume(parser, status)

            transport._resume = counting  # type: ignore[method-assign]
            await client.request("logging/setLevel", {"level": "info"})
            result = await client.call_tool("test_reconnection")
            assert result.text == "Reconnection test completed"
            assert logs == ["Before disconnect", "After reconnect"]
            assert len(resumed) == 1 and resumed[0]

    run(scenario())


def test_http_session_is_deleted_on_close(jet_http: ServerProcess) -> None:
    async def scenario() -> str:
        async with Client(jet_http.url, revision="2025-06-18") as client:
            session = client.transport.session_id  # type: ignore[attr-defined]
            assert session
        return str(session)

    session = run(scenario())
    body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    headers = {
        "Accept": "application/json, text/event-stream",
        "Mcp-Session-Id": session,
        "MCP-Protocol-Version": "2025-06-18",
    }
    resp = httpx.post(jet_http.url, json=body, headers=headers, timeout=5)
    assert resp.status_code == 404, resp.text


@pytest.mark.parametrize("version", ["2025-03-26", "2025-11-25"])
def test_an_expired_session_is_renewed(jet_http: ServerProcess, version: str) -> None:
    """A 404 for the session (here: ended behind the client's back) means initialize again
    and send what was refused, once; single calls and batches alike."""

    async def scenario() -> None:
        async with Client(jet_http.url, revision=version) as client:
            transport = client.transport
            assert isinstance(transport, HttpTransport)
            for attempt in ("single", "batch"):
                lost = transport.session_id
                assert lost
                headers = {"Mcp-Session-Id": lost, "MCP-Protocol-Version": version}
                async with httpx.AsyncClient() as raw:
                    ended = await raw.delete(jet_http.url, headers=headers, timeout=5)
                assert ended.status_code == 204
                if attempt == "single":
                    assert (await client.call_tool("add", {"a": 1, "b": 2})).text == "3"
                else:
                    one, two = (
                        await client.batch()
                        .call_tool("echo", {"text": "a"})
                        .call_tool("echo", {"text": "b"})
                        .send()
                    )
                    assert one.into_result(CallToolResult).text == "a"
                    assert two.into_result(CallToolResult).text == "b"
                assert transport.session_id not in (None, lost)
                assert client.revision.version == version

    run(scenario())


def test_unknown_revision_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown MCP revision"):
        Client("http://127.0.0.1:1/mcp", revision="1999-01-01")


def test_unreachable_server() -> None:
    async def scenario() -> None:
        client = Client("http://127.0.0.1:9/mcp", timeout=5)
        with pytest.raises(OSError):
            await client.open()

    run(scenario())


# --------------------------------------------------------------------------- a fake server

#: A stdio server that misbehaves on purpose, to pin the client's routing:
#: - ``initialize``: answers the version its mode allows (see MODES below);
#: - ``tools/call`` ``slow``: never answered (the client gives up on it);
#: - ``tools/call`` ``echo``: first an answer to an id nobody sent, then a late answer to
#:   every id it was sent before, then the real answer twice;
#: - a batch: answered in reverse order, one line per answer;
#: - ``tools/call`` ``die``: exits.
FAKE_SERVER = r"""
import json, sys
mode = sys.argv[1]
seen = []
def out(msg):
    sys.stdout.write(json.dumps(msg) + "\n"); sys.stdout.flush()
def answer(msg):
    method, mid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
    if method == "server/discover":
        return {"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "nope"}}
    if method == "initialize":
        asked = params["protocolVersion"]
        if mode == "oldest-only" and asked != "2024-11-05":
            return {"jsonrpc": "2.0", "id": mid, "error": {"code": -32602, "message": "no"}}
        if mode == "supported" and asked != "2025-03-26":
            return {"jsonrpc": "2.0", "id": mid, "error": {"code": -32602,
                    "message": "Unsupported protocol version",
                    "data": {"supported": ["2025-03-26", "1999-01-01"], "requested": asked}}}
        if mode == "counter":
            asked = "2025-03-26"
        return {"jsonrpc": "2.0", "id": mid, "result": {"protocolVersion": asked,
                "capabilities": {"tools": {}}, "serverInfo": {"name": "fake", "version": "0"}}}
    if method == "tools/call":
        name = params["name"]
        if name == "slow":
            seen.append(mid)
            return None
        if name == "die":
            sys.exit(3)
        for old in seen:
            late = {"content": [{"type": "text", "text": "late"}]}
            out({"jsonrpc": "2.0", "id": old, "result": late})
        out({"jsonrpc": "2.0", "id": 999999, "result": {"content": []}})
        seen.append(mid)
        text = params["arguments"]["text"]
        reply = {"jsonrpc": "2.0", "id": mid, "result": {
            "content": [{"type": "text", "text": text}, {"type": "video", "url": "v"}],
            "extraField": 1}}
        out(reply)
        return reply
    if method == "ping":
        return {"jsonrpc": "2.0", "id": mid, "result": {}}
    if "id" in msg:
        return {"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": method}}
    return None
for line in sys.stdin:
    msg = json.loads(line)
    if isinstance(msg, list):
        for reply in reversed([answer(m) for m in msg]):
            if reply is not None:
                out(reply)
        continue
    reply = answer(msg)
    if reply is not None:
        out(reply)
"""


def _fake(mode: str = "plain", **options: Any) -> Client:
    return Client.stdio([sys.executable, "-c", FAKE_SERVER, mode], **options)


def test_answers_are_routed_by_the_clients_ids_only() -> None:
    async def scenario() -> None:
        async with _fake(revision="2025-03-26") as client:
            with pytest.raises(TimeoutError):
                async with asyncio.timeout(0.2):
                    await client.call_tool("slow")
            # The late answer to the abandoned "slow", an answer to an id never sent and
            # a duplicate answer are all dropped; each caller gets its own answer.
            first, second = await asyncio.gather(
                client.call_tool("echo", {"text": "one"}),
                client.call_tool("echo", {"text": "two"}),
            )
            assert (first.text, second.text) == ("one", "two")
            # Unknown fields stay readable; unknown content types are kept as they came.
            assert first.model_extra == {"extraField": 1}
            assert first.extraField == 1  # type: ignore[attr-defined]
            assert first.to_dict()["extraField"] == 1
            assert isinstance(first.content[1], UnknownContent)
            assert first.content[1].url == "v"  # type: ignore[attr-defined]
            # A batch answered in reverse order, one line each: slots keep request order.
            answers = await client.call_batch(
                [
                    {"jsonrpc": "2.0", "id": "x", "method": "tools/call", "params": _echo("a")},
                    {"jsonrpc": "2.0", "id": "x", "method": "tools/call", "params": _echo("b")},
                    {"jsonrpc": "2.0", "id": 0, "method": "tools/call", "params": _echo("c")},
                ]
            )
            assert [(a.id, a.into_result(CallToolResult).text) for a in answers] == [
                ("x", "a"),
                ("x", "b"),
                (0, "c"),
            ]

    run(scenario())


def _echo(text: str) -> dict[str, Any]:
    return {"name": "echo", "arguments": {"text": text}}


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("plain", "2025-11-25"),
        ("counter", "2025-03-26"),
        ("oldest-only", "2024-11-05"),
        ("supported", "2025-03-26"),
    ],
)
def test_initialize_falls_back(mode: str, expected: str) -> None:
    """discover refused (-32601 on stdio) → initialize at the newest legacy revision; a server
    that counter-proposes is followed; one that refuses is tried down to 2024-11-05; one
    that names ``supported`` versions is asked the newest of those straight away."""

    async def scenario() -> None:
        async with _fake(mode) as client:
            assert client.revision.version == expected
            await client.ping()

    run(scenario())


def test_forced_revision_the_server_will_not_speak() -> None:
    async def scenario() -> None:
        with pytest.raises(McpError, match="asked for 2025-06-18, the server answered 2025-03-26"):
            async with _fake("counter", revision="2025-06-18"):
                pass
        with pytest.raises(McpError, match="does not speak 2026-07-28"):
            async with _fake("plain", revision="2026-07-28"):
                pass

    run(scenario())


def test_a_dead_server_fails_what_waits() -> None:
    async def scenario() -> None:
        async with _fake(revision="2024-11-05") as client:
            with pytest.raises(TransportClosed, match="exit code 3"):
                await client.call_tool("die")
            with pytest.raises(TransportClosed):
                await client.ping()

    run(scenario())


def test_stdio_close_terminates_a_server_that_ignores_eof() -> None:
    """stdin is closed first; a server that neither answers nor exits (nor heeds SIGTERM)
    is killed after the grace periods."""
    script = "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(60)"

    async def scenario() -> None:
        client = Client.stdio([sys.executable, "-c", script], discover_timeout=0.3, timeout=0.3)
        client.transport.close_timeout = 0.3  # type: ignore[attr-defined]
        started = time.monotonic()
        with pytest.raises(TimeoutError):
            await client.open()
        proc = client.transport.proc  # type: ignore[attr-defined]
        assert proc.returncode is not None
        assert time.monotonic() - started < 5

    run(scenario())


# --------------------------------------------------------------------------- units


def test_header_values() -> None:
    assert encode_header_value("plain-name_1.2") == "plain-name_1.2"
    assert encode_header_value("with inner space") == "with inner space"
    assert encode_header_value(" edge") == "=?base64?IGVkZ2U=?="
    assert encode_header_value("héllo") == "=?base64?aMOpbGxv?="
    assert encode_header_value("line\nbreak") == "=?base64?bGluZQpicmVhaw==?="
    assert encode_header_value("=?base64?abc?=") == "=?base64?PT9iYXNlNjQ/YWJjPz0=?="
    for value in ("plain", " edge ", "héllo wörld", "tab\there", "=?base64?abc?=", "日本"):
        assert decode_value(encode_header_value(value)) == value  # the server's reading


def test_sse_parser_handles_any_chunking() -> None:
    stream = (
        b': keep-alive\r\n\r\nid: 7\r\nretry: 50\r\ndata: {"a":\r\ndata: 1}\r\n\r\n'
        b"event: message\ndata: x\n\nid: 8\ndata: y\n\n"
    )
    for size in (1, 2, 3, 7, len(stream)):
        parser = SseParser()
        events = []
        for i in range(0, len(stream), size):
            events.extend(parser.feed(stream[i : i + size]))
        assert [(e.event, e.data, e.id, e.retry) for e in events] == [
            ("message", b'{"a":\n1}', "7", 50),
            ("message", b"x", None, None),
            ("message", b"y", "8", None),
        ]
        assert parser.last_id == "8"


def test_url_parsing() -> None:
    url = Url.parse("http://127.0.0.1:8000/mcp?x=1")
    assert (url.host, url.port, url.target, url.authority) == (
        "127.0.0.1",
        8000,
        "/mcp?x=1",
        "127.0.0.1:8000",
    )
    assert Url.parse("https://example.com").authority == "example.com"
    assert Url.parse("http://[::1]:9/").authority == "[::1]:9"
    with pytest.raises(ValueError):
        Url.parse("ftp://example.com/")


def test_response_into_result() -> None:
    ok = Response({"content": [{"type": "text", "text": "hi"}], "isError": False}, id=3)
    assert ok.into_result(CallToolResult).text == "hi"
    failed = Response(error=McpError(-32602, "bad", {"x": 1}), id="a")
    with pytest.raises(McpError) as exc:
        failed.into_result(CallToolResult)
    assert (exc.value.code, exc.value.data) == (-32602, {"x": 1})
    wrong = Response({"tools": "not a list"})
    with pytest.raises(McpError, match="does not fit ListToolsResult"):
        wrong.into_result(ListToolsResult)


def test_batch_builder_is_chainable_and_counts_slots() -> None:
    client = Client("http://127.0.0.1:1/mcp")
    builder = client.batch().list_tools().notify("x").call_tool("add", {"a": 1}).list_prompts()
    assert len(builder) == 3
