"""``ctx.headers`` and ``ctx.request_context.request``: a tool reads the headers of the HTTP
request it serves (issue 41 item 7), on both engines, on every way a POST is served (the
short stateless lane, a session's lane, the general path, a 2026-07-28 request), and finds
None over stdio."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from harness.http import open_session, post
from harness.messages import (
    MODERN,
    encode,
    modern_headers,
    modern_request,
    modern_routing,
    tool_call,
    tool_text,
)
from harness.servers import AppServer, StdioServer
from jetmcp.core.request import HttpRequest, RequestHeaders

APP = "tests.apps.headers_app:app"
LEGACY = "2025-06-18"


@pytest.fixture(scope="module")
def served(engine: str) -> Iterator[AppServer]:
    server = AppServer(APP, engine=engine)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def stateless(engine: str) -> Iterator[AppServer]:
    server = AppServer(APP, "--stateless", engine=engine)
    try:
        yield server
    finally:
        server.stop()


def _result(resp: httpx.Response) -> dict[str, Any]:
    assert resp.status_code == 200, resp.text
    text = resp.text
    if resp.headers.get("content-type", "").startswith("text/event-stream"):
        data = [line[5:] for line in text.splitlines() if line.startswith("data:")]
        text = data[-1]
    body = json.loads(text)
    assert "result" in body, body
    result: dict[str, Any] = body["result"]
    return result


@pytest.mark.parametrize("tool", ["api_key", "api_key_sync"])
def test_a_tool_reads_a_header_on_the_stateless_lane(
    stateless: AppServer, client: httpx.Client, tool: str
) -> None:
    for value in ("k-1", "k-2"):  # a second request: nothing kept from the first
        resp = post(
            client,
            stateless.url,
            tool_call(tool, id=1),
            version=LEGACY,
            headers={"X-Api-Key": value},
        )
        assert tool_text(_result(resp)) == value
    resp = post(client, stateless.url, tool_call(tool, id=2), version=LEGACY)
    assert tool_text(_result(resp)) == "missing"


@pytest.mark.parametrize("tool", ["api_key", "api_key_sync"])
def test_a_tool_reads_a_header_in_a_session(
    served: AppServer, client: httpx.Client, tool: str
) -> None:
    session = open_session(client, served.url, LEGACY)
    resp = post(
        client,
        served.url,
        tool_call(tool, id=3),
        version=LEGACY,
        session=session,
        headers={"x-API-key": "in-session"},
    )
    assert tool_text(_result(resp)) == "in-session"


def test_the_general_path_keeps_the_headers_too(served: AppServer, client: httpx.Client) -> None:
    # No MCP-Protocol-Version header: not the usual POST, the general path serves it.
    resp = client.post(
        served.url,
        content=encode(tool_call("api_key", id=4)),
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "X-Api-Key": "general",
        },
    )
    assert tool_text(_result(resp)) == "general"


def test_a_header_sent_twice_reads_as_its_first_value_and_getlist_has_both(
    stateless: AppServer, client: httpx.Client
) -> None:
    headers = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", LEGACY),
        ("X-Tenant", "a"),
        ("X-Tenant", "b"),
    ]
    resp = client.post(stateless.url, content=encode(tool_call("all_keys", id=5)), headers=headers)
    assert _result(resp)["structuredContent"] == {"result": ["a", "b"]}


def test_a_2026_request_reads_its_headers(served: AppServer, client: httpx.Client) -> None:
    body = modern_request("tools/call", {"name": "api_key", "arguments": {}}, id=6)
    headers = modern_headers(version=MODERN)
    headers.update(modern_routing(body))
    headers["X-Api-Key"] = "modern"
    resp = client.post(served.url, content=encode(body), headers=headers)
    assert tool_text(_result(resp)) == "modern"


@pytest.mark.parametrize("tool", ["api_key", "api_key_sync"])
def test_no_http_request_over_stdio(tool: str) -> None:
    server = StdioServer(app=APP)
    try:
        server.initialize(LEGACY)
        answer = server.call(tool_call(tool, id=7))
        assert tool_text(answer["result"]) == "no http request"
    finally:
        server.stop()


def test_the_mapping_is_read_only_and_ignores_case() -> None:
    headers = RequestHeaders([(b"X-Api-Key", b"v"), (b"x-tenant", b"a"), (b"X-Tenant", b"b")])
    assert headers["x-api-key"] == headers["X-API-KEY"] == "v"
    assert "X-Tenant" in headers and "nope" not in headers
    assert headers["x-tenant"] == "a" and headers.getlist("X-TENANT") == ["a", "b"]
    assert dict(headers) == {"x-api-key": "v", "x-tenant": "a"}
    assert len(headers) == 2
    with pytest.raises(TypeError):
        headers["x"] = "y"  # type: ignore[index]
    # A value with bytes outside visible ASCII reads as absent, as under Granian.
    assert "bad" not in RequestHeaders([(b"bad", b"\xff")])
    assert HttpRequest([("A", "1")]).headers["a"] == "1"


def test_the_request_has_an_asgi_scope_without_a_user() -> None:
    # fastmcp's get_access_token() reads request.scope.get("user") on every request.
    request = HttpRequest([(b"X-Api-Key", b"v")])
    assert request.method == "POST"
    assert request.scope.get("user") is None
    assert request.scope["type"] == "http"
    assert request.scope["headers"] == [(b"x-api-key", b"v")]
