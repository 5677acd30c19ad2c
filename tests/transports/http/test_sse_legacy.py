"""The 2024-11-05 HTTP+SSE transport against a real server: the ``endpoint`` event, POSTs
answered ``202 Accepted`` whose replies arrive as ``message`` events on the stream, the
statuses around it, and the official SDK's ``sse_client`` end to end."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest

from harness.messages import initialize_request
from transports.http.test_http_streaming import (
    KEEPALIVE_SECONDS,
    READ_TIMEOUT,
    TEST_TIMEOUT,
    SseStream,
    StreamingServer,
    call,
    new_client,
    run,
    stats,
    stream,
    text_of,
    wait_stats,
)
from transports.http.test_http_streaming import initialize as streamable_initialize


@pytest.fixture(scope="module")
def server() -> Iterator[StreamingServer]:
    srv = StreamingServer("--keepalive-seconds", str(KEEPALIVE_SECONDS))
    try:
        yield srv
    finally:
        srv.stop()


SSE_ACCEPT = {"accept": "text/event-stream"}
JSON = {"content-type": "application/json"}


def initialize(version: str = "2024-11-05") -> dict[str, Any]:
    return initialize_request(
        version, "init", capabilities={"roots": {}}, client_name="legacy-tests"
    )


async def endpoint_of(sse: SseStream, base: str) -> str:
    event = await sse.next()
    assert event.event == "endpoint", event
    assert event.data.startswith("/messages?session_id="), event
    return base + event.data


@asynccontextmanager
async def connected(
    server: StreamingServer, client: httpx.AsyncClient | None = None
) -> AsyncIterator[tuple[httpx.AsyncClient, SseStream, str]]:
    """A client, its open event stream, and the endpoint it POSTs to."""
    async with new_client() as own:
        http = client or own
        async with stream(own, "GET", server.base + "/sse", SSE_ACCEPT) as sse:
            yield http, sse, await endpoint_of(sse, server.base)


async def message(sse: SseStream) -> Any:
    event = await sse.message()
    assert event.event == "message", event
    return event.json()


async def post(client: httpx.AsyncClient, url: str, body: Any, status: int = 202) -> None:
    resp = await client.post(url, headers=JSON, json=body)
    assert resp.status_code == status, resp.text
    if status == 202:
        assert resp.content == b""


def test_endpoint_event_then_replies_as_message_events(server: StreamingServer) -> None:
    async def main() -> None:
        async with connected(server) as (client, sse, url):
            assert sse.response.headers["cache-control"] == "no-cache"
            await post(client, url, initialize())
            init = await message(sse)
            assert init["id"] == "init"
            assert init["result"]["protocolVersion"] == "2024-11-05"
            await post(client, url, {"jsonrpc": "2.0", "method": "notifications/initialized"})

            # A 2024-11-05 batch: progress streams first, then the ordered array.
            batch = [
                call("progress", {"steps": 2, "ms": 20}, token="p", id=1),
                {"jsonrpc": "2.0", "id": 2, "method": "ping"},
            ]
            await post(client, url, batch)
            notes = [await message(sse) for _ in range(2)]
            assert [n["params"]["progress"] for n in notes] == [1, 2]
            replies = await message(sse)
            assert [r["id"] for r in replies] == [1, 2]
            assert text_of(replies[0]) == "done 2"

            # Every reply goes on the stream, each exactly once.
            await post(client, url, {"jsonrpc": "2.0", "id": 3, "method": "tools/list"})
            listed = await message(sse)
            assert listed["id"] == 3 and listed["result"]["tools"]
            await sse.silent()

    run(main)


def test_malformed_cancels_are_ignored(server: StreamingServer) -> None:
    async def main() -> None:
        async with connected(server) as (client, sse, url):
            await post(client, url, initialize())
            assert (await message(sse))["id"] == "init"
            for value in ([1], {"a": 1}, True, 1.0):
                cancel = {
                    "jsonrpc": "2.0",
                    "method": "notifications/cancelled",
                    "params": {"requestId": value},
                }
                await post(client, url, cancel)
                await post(client, url, [cancel, {"jsonrpc": "2.0", "id": 5, "method": "ping"}])
                assert await message(sse) == [{"jsonrpc": "2.0", "id": 5, "result": {}}]
            await sse.silent()

    run(main)


def test_negotiated_revision_rules_apply(server: StreamingServer) -> None:
    async def main() -> None:
        async with connected(server) as (client, sse, url):
            await post(client, url, initialize("2025-06-18"))
            assert (await message(sse))["result"]["protocolVersion"] == "2025-06-18"
            await post(client, url, [{"jsonrpc": "2.0", "id": 1, "method": "ping"}])
            refused = await message(sse)
            assert refused["error"]["code"] == -32600 and refused["id"] is None

    run(main)


def test_server_to_client_request_on_the_stream(server: StreamingServer) -> None:
    async def main() -> None:
        async with connected(server) as (client, sse, url):
            await post(client, url, initialize())
            await message(sse)
            await post(client, url, call("ask_roots", id="r"))
            asked = await message(sse)
            assert asked["method"] == "roots/list"
            await post(
                client,
                url,
                {"jsonrpc": "2.0", "id": asked["id"], "result": {"roots": []}},
            )
            final = await message(sse)
            assert final["id"] == "r" and "error" not in final, final

    run(main)


def test_statuses(server: StreamingServer) -> None:
    async def main() -> None:
        async with new_client() as client:
            base = server.base
            assert (await client.post(base + "/messages", headers=JSON, json={})).status_code == 400
            unknown = await client.post(base + "/messages?session_id=nope", headers=JSON, json={})
            assert unknown.status_code == 404
            assert (await client.get(base + "/messages")).status_code == 405
            assert (await client.post(base + "/sse", headers=JSON, json={})).status_code == 405
            refused = await client.get(base + "/sse", headers={"accept": "application/json"})
            assert refused.status_code == 406
            async with stream(client, "GET", base + "/sse", SSE_ACCEPT) as sse:
                url = await endpoint_of(sse, base)
                plain = await client.post(url, headers={"content-type": "text/plain"}, content=b"x")
                assert plain.status_code == 415
                broken = await client.post(url, headers=JSON, content=b"{")
                assert broken.status_code == 400
                assert broken.json()["error"]["code"] == -32700
                await sse.silent()

    run(main)


def test_keepalive_and_disconnect(server: StreamingServer) -> None:
    async def main() -> None:
        async with new_client() as client:
            watcher = await streamable_initialize(client, server.url)
            before = await stats(client, server.url, watcher)
            async with connected(server, client) as (_, sse, url):
                await post(client, url, initialize())
                await message(sse)
                # A long call is running when the client goes away.
                await post(client, url, call("quiet", {"ms": 10_000}))
                comment = await sse.next(KEEPALIVE_SECONDS * 5, comments=True)
                assert comment.comment == "keep-alive"
            # The stream is the session: once it is gone, so is the endpoint.
            deadline = time.monotonic() + 3.0
            while True:
                resp = await client.post(url, headers=JSON, json={"jsonrpc": "2.0", "id": 1})
                if resp.status_code == 404:
                    break
                assert time.monotonic() < deadline, resp.status_code
                await asyncio.sleep(0.05)
            # ... and the call it left running was cancelled: no task outlives it.
            await wait_stats(client, server.url, watcher, lambda s: s["tasks"] <= before["tasks"])

    run(main)


def test_stateless_server_has_no_legacy_transport(stateless_url: str) -> None:
    base = stateless_url.rsplit("/", 1)[0]
    resp = httpx.get(base + "/sse", headers=SSE_ACCEPT, timeout=READ_TIMEOUT)
    assert resp.status_code == 404


def test_python_sdk_sse_client(server: StreamingServer) -> None:
    import anyio
    from mcp.client import Client
    from mcp.client.sse import sse_client

    progress: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    async def main() -> None:
        with anyio.fail_after(TEST_TIMEOUT):
            async with Client(sse_client(server.base + "/sse"), mode="legacy") as client:
                tools = {t.name for t in (await client.list_tools()).tools}
                assert {"progress", "quiet"} <= tools
                result = await client.call_tool(
                    "progress", {"steps": 2}, progress_callback=on_progress
                )
                assert not result.is_error
                assert "".join(getattr(c, "text", "") for c in result.content) == "done 2"

    anyio.run(main)
    assert progress == [1, 2]
