"""The client at 2026-07-28 (the stateless revision).

Two kinds of server:

- a recording fake in this process (``ModernFake``): every HTTP request it gets is kept, so
  the tests can pin exactly what goes on the wire: ``_meta`` on every request, routing headers
  on single requests and never on a batch, the ``=?base64?...?=`` form, MRTR retries (new id,
  same params, ``inputResponses``, echoed ``requestState``) and the lock-step rounds of a
  batch, one write per round;
- the jetmcp server itself, over HTTP and stdio, with its ``io.jetmcp/batch`` extension on
  and off (``--no-modern-batch``).
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from harness.client_app import (
    MODERN_MISSING,
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
    ReadResourceResult,
    Root,
    TextContent,
)
from jetmcp.errors import METHOD_NOT_FOUND

MODERN = "2026-07-28"


async def _elicit(request: Any) -> ElicitResult:
    first = request.message.split()[0].rstrip("?:")
    content = {"name": first, "username": first, "email": f"{first}@example.com"}
    return ElicitResult(action="accept", content=content)


async def _sample(request: Any) -> CreateMessageResult:
    text = request.messages[0].content["text"]
    return CreateMessageResult(content={"type": "text", "text": f"sampled {text}"}, model="m")


# --------------------------------------------------------------------------- the fake

ROUTE_SCHEMA = {
    "type": "object",
    "properties": {
        "tenant": {"type": "string", "x-mcp-header": "Tenant"},
        "count": {"type": "integer", "x-mcp-header": "Count"},
        "nested": {
            "type": "object",
            "properties": {"flag": {"type": "boolean", "x-mcp-header": "Flag"}},
        },
        "text": {"type": "string"},
    },
}


class ModernFake:
    """A 2026-07-28 Streamable HTTP server that records every request it gets.

    ``ask`` (``n``) needs ``n`` input rounds (one elicitation each, keyed ``q<round>``);
    ``echo`` echoes ``text``; ``route`` has ``x-mcp-header`` arguments. ``sse`` answers every
    request as an SSE stream cut into tiny chunked pieces.
    """

    def __init__(self, *, batch: bool = True, max_batch: int = 256, sse: bool = False) -> None:
        self.batch = batch
        self.max_batch = max_batch
        self.sse = sse
        #: (lower-cased headers, parsed body) of every POST, in arrival order.
        self.posts: list[tuple[dict[str, str], Any]] = []
        #: Connections closed by the client while a ``hang`` call waited on them.
        self.hang_ups = 0
        self.url = ""
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> ModernFake:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}/mcp"
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except asyncio.IncompleteReadError:
                    return
                lines = head.decode("latin-1").split("\r\n")
                headers = {}
                for line in lines[1:]:
                    if line:
                        name, _, value = line.partition(":")
                        headers[name.strip().lower()] = value.strip()
                body = json.loads(await reader.readexactly(int(headers["content-length"])))
                self.posts.append((headers, body))
                if _calls(body, "hang"):
                    await reader.read()  # no answer: wait for the client to hang up
                    self.hang_ups += 1
                    return
                reply = self.answer(body)
                if reply is None:
                    writer.write(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")
                elif self.sse:
                    await self._write_sse(writer, reply)
                else:
                    data = json.dumps(reply).encode()
                    status = b"400 Bad Request" if _is_error(reply) else b"200 OK"
                    writer.write(
                        b"HTTP/1.1 %s\r\nContent-Type: application/json\r\n"
                        b"Content-Length: %d\r\n\r\n%s" % (status, len(data), data)
                    )
                await writer.drain()
        finally:
            writer.close()

    async def _write_sse(self, writer: asyncio.StreamWriter, reply: Any) -> None:
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n"
        )
        stream = b": hello\n\nevent: message\nid: 1\ndata: " + json.dumps(reply).encode() + b"\n\n"
        for i in range(0, len(stream), 5):  # tiny chunks: events cut anywhere
            piece = stream[i : i + 5]
            writer.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            await writer.drain()
        writer.write(b"0\r\n\r\n")

    def answer(self, body: Any) -> Any:
        if isinstance(body, list):
            if not self.batch or len(body) > self.max_batch:
                return {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "no"}}
            replies = [self.answer(m) for m in body if "id" in m]
            return replies or None
        if "id" not in body:
            return None
        method, params = body["method"], body.get("params") or {}
        meta = params.get("_meta") or {}
        if meta.get("io.modelcontextprotocol/protocolVersion") != MODERN:
            return _error(body["id"], -32602, "missing _meta")
        result: dict[str, Any]
        if method == "server/discover":
            caps: dict[str, Any] = {"tools": {}, "resources": {}, "prompts": {}}
            if self.batch:
                caps["extensions"] = {"io.jetmcp/batch": {"maxBatch": self.max_batch}}
            result = {"supportedVersions": [MODERN], "capabilities": caps, "ttlMs": 0}
            result["cacheScope"] = "public"
        elif method == "tools/list":
            tool = {"name": "route", "inputSchema": ROUTE_SCHEMA}
            result = {"tools": [tool, {"name": "echo", "inputSchema": {"type": "object"}}]}
        elif method == "tools/call" and params["name"] == "ask":
            result = self._ask(body["id"], params)
        elif method == "tools/call":
            text = json.dumps(params.get("arguments"), sort_keys=True)
            result = {"content": [{"type": "text", "text": text}]}
        elif method == "resources/read":
            result = {"contents": [{"uri": params["uri"], "text": "read"}]}
        elif method == "prompts/get":
            message = {"role": "user", "content": {"type": "text", "text": "hi"}}
            result = {"messages": [message]}
        else:
            return _error(body["id"], -32601, f"Method not found: {method}")
        result.setdefault("resultType", "complete")
        return {"jsonrpc": "2.0", "id": body["id"], "result": result}

    def _ask(self, request_id: Any, params: dict[str, Any]) -> dict[str, Any]:
        rounds = int(params["arguments"]["n"])
        state = int(params.get("requestState") or 0)
        if state:
            answer = (params.get("inputResponses") or {}).get(f"q{state - 1}")
            assert answer == {"action": "accept", "content": _content(f"q{state - 1}")}, params
        if state >= rounds:
            return {"content": [{"type": "text", "text": f"asked {rounds}"}]}
        question = {
            "method": "elicitation/create",
            "params": {"message": f"q{state}?", "requestedSchema": {"type": "object"}},
        }
        return {
            "resultType": "input_required",
            "inputRequests": {f"q{state}": question},
            "requestState": str(state + 1),
        }

    def bodies(self, method: str | None = None) -> list[Any]:
        return [b for _, b in self.posts if method is None or _methods(b) == [method]]


def _content(first: str) -> dict[str, str]:
    return {"name": first, "username": first, "email": f"{first}@example.com"}


def _calls(body: Any, tool: str) -> bool:
    messages = body if isinstance(body, list) else [body]
    return any((m.get("params") or {}).get("name") == tool for m in messages)


def _methods(body: Any) -> list[str]:
    return [m["method"] for m in body] if isinstance(body, list) else [body["method"]]


def _error(request_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def _is_error(reply: Any) -> bool:
    return isinstance(reply, dict) and "error" in reply


def b64(value: str) -> str:
    return f"=?base64?{base64.b64encode(value.encode()).decode()}?="


@asynccontextmanager
async def fake_client(**options: Any) -> AsyncIterator[tuple[ModernFake, Client]]:
    fake_options = {k: options.pop(k) for k in ("batch", "max_batch", "sse") if k in options}
    async with ModernFake(**fake_options) as fake, Client(fake.url, **options) as client:
        yield fake, client


# --------------------------------------------------------------------------- wire shape


@pytest.mark.parametrize("sse", [False, True])
def test_meta_and_routing_headers(sse: bool) -> None:
    async def scenario() -> None:
        async with fake_client(sse=sse, elicitation_handler=_elicit, roots=["file:///w"]) as (
            fake,
            client,
        ):
            assert client.revision.version == MODERN
            assert client.discover_result is not None
            await client.list_tools()
            args = {"tenant": " spaced ", "count": 3, "nested": {"flag": True}, "text": "x"}
            result = await client.call_tool("route", args)
            assert json.loads(result.text) == args
            read = await client.read_resource("file:///café/a b.txt")
            assert isinstance(read, ReadResourceResult)
            await client.get_prompt("plain-name")

            for headers, body in fake.posts:
                assert headers["mcp-protocol-version"] == MODERN
                meta = body["params"]["_meta"]
                assert meta["io.modelcontextprotocol/protocolVersion"] == MODERN
                assert meta["io.modelcontextprotocol/clientInfo"]["name"] == "jetmcp"
                caps = meta["io.modelcontextprotocol/clientCapabilities"]
                assert caps == {"roots": {}, "elicitation": {"form": {}}}
                assert headers["mcp-method"] == body["method"]
                assert "mcp-session-id" not in headers

            by_method = {b["method"]: h for h, b in fake.posts}
            call = by_method["tools/call"]
            assert call["mcp-name"] == "route"
            assert call["mcp-param-tenant"] == b64(" spaced ")
            assert (call["mcp-param-count"], call["mcp-param-flag"]) == ("3", "true")
            assert by_method["resources/read"]["mcp-name"] == b64("file:///café/a b.txt")
            assert by_method["prompts/get"]["mcp-name"] == "plain-name"
            assert "mcp-name" not in by_method["tools/list"]

            # A batch carries the revision but no header naming one request.
            fake.posts.clear()
            await client.batch().call_tool("route", args).read_resource("file:///x").send()
            ((headers, body),) = fake.posts
            assert isinstance(body, list) and len(body) == 2
            assert headers["mcp-protocol-version"] == MODERN
            assert not [h for h in headers if h in ("mcp-method", "mcp-name")]
            assert not [h for h in headers if h.startswith("mcp-param-")]

    run(scenario())


@pytest.mark.parametrize("batch", [False, True])
def test_cancelling_closes_the_stream(batch: bool) -> None:
    """At 2026-07-28 over HTTP a request is cancelled by closing its stream: the server sees
    the connection go, whether the call waited alone or in a batch."""

    async def scenario() -> None:
        async with fake_client() as (fake, client):
            with pytest.raises(TimeoutError):
                async with asyncio.timeout(0.3):
                    if batch:
                        await client.batch().call_tool("hang").call_tool("hang").send()
                    else:
                        await client.call_tool("hang")
            for _ in range(100):
                if fake.hang_ups:
                    break
                await asyncio.sleep(0.02)
            assert fake.hang_ups == 1
            assert not fake.bodies("notifications/cancelled")  # no notification over HTTP
            assert (await client.call_tool("echo", {"x": 1})).text == '{"x": 1}'

    run(scenario())


def test_ping_is_refused_at_2026_07_28() -> None:
    async def scenario() -> None:
        async with fake_client() as (fake, client):
            with pytest.raises(McpError) as exc:
                await client.ping()
            assert exc.value.code == METHOD_NOT_FOUND
            assert "ping was removed in 2026-07-28" in exc.value.message
            assert not fake.bodies("ping")  # refused without asking the server

    run(scenario())


def test_mrtr_retries_with_new_ids_and_echoed_state() -> None:
    async def scenario() -> None:
        async with fake_client(elicitation_handler=_elicit) as (fake, client):
            result = await client.call_tool("ask", {"n": 2})
            assert result.text == "asked 2"
            calls = fake.bodies("tools/call")
            assert len(calls) == 3
            assert len({c["id"] for c in calls}) == 3
            assert [c["params"].get("requestState") for c in calls] == [None, "1", "2"]
            assert [sorted(c["params"].get("inputResponses") or {}) for c in calls] == [
                [],
                ["q0"],
                ["q1"],
            ]
            for call in calls:
                assert call["params"]["name"] == "ask"
                assert call["params"]["arguments"] == {"n": 2}

            client.max_mrtr_rounds = 1
            with pytest.raises(McpError, match="max_mrtr_rounds=1"):
                await client.call_tool("ask", {"n": 2})

    run(scenario())


def test_mrtr_without_a_handler_is_an_error_in_that_slot() -> None:
    async def scenario() -> None:
        async with fake_client() as (_, client):
            ask, echo = await client.batch().call_tool("ask", {"n": 1}).call_tool("echo").send()
            with pytest.raises(McpError, match="no elicitation_handler"):
                ask.into_result(CallToolResult)
            assert echo.into_result(CallToolResult).text == "{}"

    run(scenario())


def test_batch_mrtr_rounds_in_lock_step() -> None:
    """A batch whose entries need 0, 1, 3 and 10 input rounds: one write per round, slots in
    input order, the 10-round one cut at ``max_mrtr_rounds`` without touching the others."""

    async def scenario() -> None:
        async with fake_client(elicitation_handler=_elicit, max_mrtr_rounds=8) as (fake, client):
            batch = client.batch()
            for n in (0, 1, 3, 10):
                batch.call_tool("ask", {"n": n})
            fake.posts.clear()
            zero, one, three, ten = await batch.send()
            assert zero.into_result(CallToolResult).text == "asked 0"
            assert one.into_result(CallToolResult).text == "asked 1"
            assert three.into_result(CallToolResult).text == "asked 3"
            with pytest.raises(McpError, match="after 8 rounds"):
                ten.into_result(CallToolResult)
            sizes = [len(b) if isinstance(b, list) else 1 for _, b in fake.posts]
            assert sizes == [4, 3, 2, 2, 1, 1, 1, 1, 1]
            ids = [m["id"] for _, b in fake.posts for m in (b if isinstance(b, list) else [b])]
            assert len(ids) == len(set(ids)) == 16

    run(scenario())


def test_batch_without_the_extension_goes_as_single_requests() -> None:
    async def scenario() -> None:
        async with fake_client(batch=False) as (fake, client):
            assert client.wire_batches is False
            fake.posts.clear()
            answers = await (
                client.batch()
                .call_tool("echo", {"text": "a"})
                .notify("notifications/whatever")
                .call_tool("echo", {"text": "b"})
                .send()
            )
            assert [a.into_result(CallToolResult).text for a in answers] == [
                '{"text": "a"}',
                '{"text": "b"}',
            ]
            assert all(not isinstance(b, list) for _, b in fake.posts)
            assert sorted(h["mcp-method"] for h, _ in fake.posts) == [
                "notifications/whatever",
                "tools/call",
                "tools/call",
            ]

    run(scenario())


def test_batches_larger_than_max_batch_are_split() -> None:
    async def scenario() -> None:
        async with fake_client(max_batch=3) as (fake, client):
            fake.posts.clear()
            batch = client.batch().notify("notifications/x")
            for i in range(6):
                batch.call_tool("echo", {"i": i})
            answers = await batch.send()
            assert [json.loads(a.into_result(CallToolResult).text)["i"] for a in answers] == list(
                range(6)
            )
            assert sorted(len(b) for _, b in fake.posts) == [1, 3, 3]

    run(scenario())


# --------------------------------------------------------------------------- jetmcp itself

needs_modern = pytest.mark.skipif(not MODERN_SERVER, reason=MODERN_MISSING)


@pytest.fixture(scope="module")
def jet_modern() -> Iterator[ServerProcess]:
    yield from serving()


@pytest.fixture(scope="module")
def jet_no_batch() -> Iterator[ServerProcess]:
    yield from serving("--no-modern-batch")


def _connect(kind: str, url: str, *extra: str, **options: Any) -> Client:
    if kind == "http":
        return Client(url, **options)
    return Client.stdio(jetmcp_stdio(*extra), env=app_env(), cwd=str(ROOT), **options)


@needs_modern
@pytest.mark.parametrize("batch", ["on", "off"])
@pytest.mark.parametrize("kind", ["http", "stdio"])
def test_jetmcp_at_2026_07_28(request: pytest.FixtureRequest, kind: str, batch: str) -> None:
    server = request.getfixturevalue("jet_modern" if batch == "on" else "jet_no_batch")
    extra = () if batch == "on" else ("--no-modern-batch",)

    async def scenario() -> None:
        handlers: dict[str, Any] = {
            "elicitation_handler": _elicit,
            "sampling_handler": _sample,
            "roots": [Root(uri="file:///work", name="work")],
        }
        async with _connect(kind, server.url, *extra, **handlers) as client:
            assert client.revision.version == MODERN
            assert client.wire_batches is (batch == "on")
            # Sampling and roots come as input requests too, answered by the handlers.
            sampled = await client.call_tool("test_sampling", {"prompt": "hi"})
            assert sampled.text == "LLM response: sampled hi"
            roots = await client.call_tool("client_roots")
            assert [c.text for c in roots.content if isinstance(c, TextContent)] == [
                "work=file:///work"
            ]
            with pytest.raises(McpError, match="removed in 2026-07-28"):
                await client.ping()
            # Mcp-Param-Tenant: the tool is called before it is listed (the client learns
            # its header from the server's -32020 and retries once).
            tenant = await client.call_tool("tenant_echo", {"tenant": "héllo wörld", "text": "x"})
            assert tenant.text == "héllo wörld: x"
            assert (await client.call_tool("ask_twice")).text == "First Last"

            before = client.writes
            answers = await (
                client.batch()
                .call_tool("add", {"a": 1, "b": 2})
                .call_tool("ask_twice")
                .call_tool("test_elicitation", {"message": "Ada?"})
                .read_resource("demo://readme")
                .send()
            )
            texts = [a.into_result(CallToolResult).text for a in answers[:3]]
            assert texts[:2] == ["3", "First Last"]
            assert "action=accept" in texts[2] and '"username": "Ada"' in texts[2]
            assert "jetmcp demo" in answers[3].into_result(ReadResourceResult).text
            # Extension on: a round of 4, a round of the 2 asking, a last single retry.
            # Off: every request on its own.
            assert client.writes - before == (3 if batch == "on" else 7)

            client.max_mrtr_rounds = 1
            capped, plain = (
                await client.batch()
                .call_tool("ask_twice")
                .call_tool("echo", {"text": "unaffected"})
                .send()
            )
            with pytest.raises(McpError, match="max_mrtr_rounds=1"):
                capped.into_result(CallToolResult)
            assert plain.into_result(CallToolResult).text == "unaffected"

    run(scenario())


@needs_modern
@pytest.mark.parametrize("kind", ["http", "stdio"])
def test_jetmcp_cancellation_at_2026_07_28(jet_modern: ServerProcess, kind: str) -> None:
    """HTTP: the batch's stream is closed; stdio: notifications/cancelled. Either way the
    server's tools see the cancellation."""
    tag = f"modern-{kind}"

    async def scenario() -> None:
        async with _connect(kind, jet_modern.url) as client:
            batch = client.batch()
            for _ in range(3):
                batch.call_tool("wait_for_cancel", {"tag": tag})
            task = asyncio.ensure_future(batch.send())
            await asyncio.sleep(0.4)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            for _ in range(100):
                notes = [
                    c.text
                    for c in (await client.call_tool("events", {"tag": tag})).content
                    if hasattr(c, "text")
                ]
                if notes.count("cancelled") == 3:
                    break
                await asyncio.sleep(0.05)
            assert notes == ["started"] * 3 + ["cancelled"] * 3

    run(scenario())
