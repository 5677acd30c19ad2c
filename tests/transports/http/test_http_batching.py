"""JSON-RPC batches over Streamable HTTP, row by row of seed 000's table.

The revision of a POST comes from its session when it has one, else from its
``MCP-Protocol-Version`` header, else it is 2025-03-26. Every row is checked for every revision
through each of those sources (the header-less, session-less channel only exists for the
default revision).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from harness.http import assert_refused_batch, open_session, post
from harness.messages import (
    BATCHING,
    DEFAULT_REVISION,
    NO_BATCHING,
    REVISIONS,
    assert_error,
    assert_result,
    initialize_request,
    notification,
    request,
    tool_text,
)
from harness.servers import HttpServer


@dataclass(frozen=True)
class Channel:
    """Where a POST's revision comes from."""

    revision: str
    #: "session": Mcp-Session-Id only; "header": MCP-Protocol-Version only; "session+header":
    #: both (what a real client sends after initialize); "none": neither.
    source: str

    def __str__(self) -> str:
        return f"{self.revision}-{self.source}"


CHANNELS = [
    *(Channel(rev, "session") for rev in REVISIONS),
    *(Channel(rev, "header") for rev in REVISIONS),
    *(Channel(rev, "session+header") for rev in REVISIONS),
    Channel(DEFAULT_REVISION, "none"),
]


class Bound:
    """A channel opened against the server: posts carry its session and/or header."""

    def __init__(self, channel: Channel, client: httpx.Client, url: str) -> None:
        self.channel = channel
        self.revision = channel.revision
        self.accepts = channel.revision in BATCHING
        self.client = client
        self.url = url
        self.session = (
            open_session(client, url, channel.revision) if "session" in channel.source else None
        )
        self.version = channel.revision if "header" in channel.source else None

    def post(self, body: Any) -> httpx.Response:
        return post(self.client, self.url, body, version=self.version, session=self.session)


@pytest.fixture(params=CHANNELS, ids=str)
def chan(request: pytest.FixtureRequest, client: httpx.Client, http_url: str) -> Bound:
    return Bound(request.param, client, http_url)


def batch_reply(resp: httpx.Response) -> list[dict[str, Any]]:
    assert resp.status_code == 200, (resp.status_code, resp.text)
    assert resp.headers["content-type"].startswith("application/json")
    body = resp.json()
    assert isinstance(body, list), body
    return body


# ------------------------------------------------------------------ array of requests


def test_batch_of_requests_answers_in_request_order(chan: Bound) -> None:
    body = [
        request("ping", id=1),
        request("tools/list", id="two"),
        request("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}, id=3),
        request("prompts/get", {"name": "greet", "arguments": {"name": "Ada"}}, id=-4),
    ]
    resp = chan.post(body)
    assert "mcp-session-id" not in resp.headers
    if not chan.accepts:
        assert_refused_batch(resp)
        return
    replies = batch_reply(resp)
    assert [r["id"] for r in replies] == [1, "two", 3, -4]
    assert assert_result(replies[0], 1) == {}
    names = {t["name"] for t in assert_result(replies[1], "two")["tools"]}
    assert {"add", "echo", "sleep", "fail"} <= names
    assert tool_text(assert_result(replies[2], 3)) == "3"
    messages = assert_result(replies[3], -4)["messages"]
    assert "Hello, Ada!" in messages[0]["content"]["text"]


def test_single_entry_batch_is_still_an_array(chan: Bound) -> None:
    resp = chan.post([request("ping", id="only")])
    if not chan.accepts:
        assert_refused_batch(resp)
        return
    assert batch_reply(resp) == [{"jsonrpc": "2.0", "id": "only", "result": {}}]


# ------------------------------------------------------------------ notifications, responses


def test_notifications_and_client_responses_get_no_entry(chan: Bound) -> None:
    body = [
        notification("notifications/roots/list_changed"),
        {"jsonrpc": "2.0", "id": "s1", "result": {}},
        request("ping", id="a"),
        {"jsonrpc": "2.0", "id": "s2", "error": {"code": -1, "message": "declined"}},
        notification("notifications/cancelled", {"requestId": "nobody", "reason": "test"}),
        request("ping", id="b"),
        notification("notifications/progress", {"progressToken": "t", "progress": 1}),
    ]
    resp = chan.post(body)
    if not chan.accepts:
        assert_refused_batch(resp)
        return
    replies = batch_reply(resp)
    assert replies == [
        {"jsonrpc": "2.0", "id": "a", "result": {}},
        {"jsonrpc": "2.0", "id": "b", "result": {}},
    ]


def test_only_notifications_and_responses_is_202_without_body(chan: Bound) -> None:
    body = [
        notification("notifications/roots/list_changed"),
        {"jsonrpc": "2.0", "id": "s1", "result": {}},
        {"jsonrpc": "2.0", "id": 7, "error": {"code": -32601, "message": "no"}},
        notification("notifications/cancelled", {"requestId": "nobody"}),
    ]
    resp = chan.post(body)
    if not chan.accepts:
        assert_refused_batch(resp)
        return
    assert resp.status_code == 202, resp.text
    assert resp.content == b""


# ------------------------------------------------------------------ empty and invalid


@pytest.mark.parametrize("raw", [b"[]", b" [ \n\t] "], ids=["tight", "spaced"])
def test_empty_array_is_a_single_invalid_request(chan: Bound, raw: bytes) -> None:
    assert_refused_batch(chan.post(raw))


INVALID_ENTRIES = {
    "number": b"1",
    "empty-object": b"{}",
    "id-1e400": b'{"jsonrpc":"2.0","id":1e400,"method":"ping"}',
    "id-2^53": b'{"jsonrpc":"2.0","id":9007199254740992,"method":"ping"}',
    "id-1.5": b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}',
}


@pytest.mark.parametrize("entry", INVALID_ENTRIES.values(), ids=INVALID_ENTRIES.keys())
def test_invalid_entry_is_refused_alone(chan: Bound, entry: bytes) -> None:
    raw = (
        b'[{"jsonrpc":"2.0","id":"before","method":"ping"},'
        + entry
        + b',{"jsonrpc":"2.0","id":"after","method":"ping"}]'
    )
    resp = chan.post(raw)
    if not chan.accepts:
        assert_refused_batch(resp)
        return
    before, bad, after = batch_reply(resp)
    assert_result(before, "before")
    assert_error(bad, -32600, None)
    assert_result(after, "after")


def test_all_invalid_entries_together(chan: Bound) -> None:
    raw = b"[" + b",".join([*INVALID_ENTRIES.values(), b'{"jsonrpc":"2.0","id":0,"method":"ping"}'])
    resp = chan.post(raw + b"]")
    if not chan.accepts:
        assert_refused_batch(resp)
        return
    replies = batch_reply(resp)
    assert len(replies) == len(INVALID_ENTRIES) + 1
    for reply in replies[:-1]:
        assert_error(reply, -32600, None)
    assert replies[-1] == {"jsonrpc": "2.0", "id": 0, "result": {}}
    # An unsafe id is never echoed back, not even rounded.
    for lexeme in (b"1e400", b"9007199254740992", b"1.5", b"inf", b"Infinity"):
        assert lexeme not in resp.content


# ------------------------------------------------------------------ initialize in a batch


@pytest.mark.parametrize("alone", [True, False], ids=["alone", "with-ping"])
def test_initialize_in_a_batch_is_refused_and_opens_no_session(chan: Bound, alone: bool) -> None:
    # Ask for the revision of the other half of the table: a batched initialize that took effect
    # would flip the outcome of the next batch.
    other = NO_BATCHING[0] if chan.accepts else BATCHING[-1]
    body = [initialize_request(other, id="init-1")]
    if not alone:
        body.append(request("ping", id="p"))
    resp = chan.post(body)
    assert "mcp-session-id" not in resp.headers
    if chan.accepts:
        replies = batch_reply(resp)
        assert_error(replies[0], -32600, "init-1")
        if not alone:
            assert replies[1] == {"jsonrpc": "2.0", "id": "p", "result": {}}
        assert len(replies) == len(body)
    else:
        assert_refused_batch(resp)

    # The channel's revision is unchanged: the next batch behaves as before.
    later = chan.post([request("ping", id="later")])
    assert "mcp-session-id" not in later.headers
    if chan.accepts:
        assert batch_reply(later) == [{"jsonrpc": "2.0", "id": "later", "result": {}}]
    else:
        assert_refused_batch(later)
    if chan.session is not None:
        # Single messages still see the negotiated revision too.
        add = chan.post(
            request("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}, id="add")
        )
        result = assert_result(add.json(), "add")
        assert ("structuredContent" in result) is (chan.revision not in BATCHING)


# ------------------------------------------------------------------ opting back in


@pytest.mark.parametrize("revision", NO_BATCHING)
def test_refusing_session_cannot_opt_back_in_with_a_header(
    client: httpx.Client, http_url: str, revision: str
) -> None:
    session = open_session(client, http_url, revision)
    batch = [request("ping", id=1), request("ping", id=2)]
    for older in BATCHING:
        resp = post(client, http_url, batch, version=older, session=session)
        assert resp.status_code == 400, resp.text
        body = resp.json()
        assert body["id"] is None and "error" in body, body
    # A batched initialize does not exempt the body from the header check either.
    sneaky = [initialize_request("2025-03-26", id="i"), request("ping", id=3)]
    resp = post(client, http_url, sneaky, version="2025-03-26", session=session)
    assert resp.status_code == 400, resp.text
    assert "mcp-session-id" not in resp.headers
    # Without a header (or with the matching one) the session's revision refuses the batch.
    assert_refused_batch(post(client, http_url, batch, session=session))
    assert_refused_batch(post(client, http_url, batch, version=revision, session=session))


@pytest.mark.parametrize("revision", BATCHING)
def test_header_contradicting_a_batching_session_is_400(
    client: httpx.Client, http_url: str, revision: str
) -> None:
    session = open_session(client, http_url, revision)
    for newer in NO_BATCHING:
        resp = post(client, http_url, [request("ping", id=1)], version=newer, session=session)
        assert resp.status_code == 400, resp.text
    ok = post(client, http_url, [request("ping", id=1)], session=session)
    assert batch_reply(ok) == [{"jsonrpc": "2.0", "id": 1, "result": {}}]


# ------------------------------------------------------------------ concurrency


@pytest.fixture(scope="module")
def rendezvous_url(engine: str) -> Iterator[str]:
    """A server whose ``meet`` calls finish only when all of them run at once."""
    server = HttpServer(app="tests/apps/rendezvous_app.py:app", engine=engine)
    try:
        yield server.url
    finally:
        server.stop()


@pytest.mark.parametrize("source", ["none", "session", "header"])
def test_batch_entries_run_concurrently_in_request_order(
    client: httpx.Client, rendezvous_url: str, source: str, engine: str
) -> None:
    # Three entries that can only finish together (each waits for the other two), around a
    # quick one: run one after the other, the first would give up alone.
    bound = Bound(Channel(DEFAULT_REVISION, source), client, rendezvous_url)
    key = f"batch-{source}-{engine}"

    def meet(i: int) -> dict[str, Any]:
        arguments = {"key": key, "parties": 3}
        return request("tools/call", {"name": "meet", "arguments": arguments}, id=i)

    echo = request("tools/call", {"name": "echo", "arguments": {"text": "quick"}}, id=3)
    replies = batch_reply(bound.post([meet(1), meet(2), echo, meet(4)]))
    assert [r["id"] for r in replies] == [1, 2, 3, 4]
    for reply in replies:
        result = assert_result(reply, reply["id"])
        assert not result.get("isError"), result
    assert "quick" in tool_text(replies[2]["result"])
    assert [tool_text(replies[i]["result"]) for i in (0, 1, 3)] == ["together"] * 3


@pytest.mark.parametrize("version", [None, *REVISIONS])
def test_batch_over_max_batch_is_refused_whole(
    client: httpx.Client, http_url: str, version: str | None
) -> None:
    body = [request("ping", id=i) for i in range(257)]  # default --max-batch is 256
    resp = post(client, http_url, body, version=version)
    if version in NO_BATCHING:
        assert_refused_batch(resp)
        return
    assert resp.status_code == 413, resp.text
    reply = resp.json()
    assert isinstance(reply, dict), reply
    assert_error(reply, -32600, None)


def test_batch_at_max_batch_is_served(client: httpx.Client, http_url: str) -> None:
    resp = post(client, http_url, [request("ping", id=i) for i in range(256)])
    assert [r["id"] for r in batch_reply(resp)] == list(range(256))


# ------------------------------------------------------------------ --stateless


def test_stateless_server_decides_by_header_alone(client: httpx.Client, stateless_url: str) -> None:
    init = post(client, stateless_url, initialize_request("2025-06-18", id=1))
    assert init.status_code == 200
    assert assert_result(init.json(), 1)["protocolVersion"] == "2025-06-18"
    assert "mcp-session-id" not in init.headers
    batch = [request("ping", id=1), request("ping", id=2)]
    # The initialize above left nothing behind: no header is the 2025-03-26 default.
    assert [r["id"] for r in batch_reply(post(client, stateless_url, batch))] == [1, 2]
    for revision in BATCHING:
        resp = post(client, stateless_url, batch, version=revision)
        assert [r["id"] for r in batch_reply(resp)] == [1, 2]
    for revision in NO_BATCHING:
        assert_refused_batch(post(client, stateless_url, batch, version=revision))
    only_notes = [notification("notifications/roots/list_changed")]
    resp = post(client, stateless_url, only_notes)
    assert resp.status_code == 202
    assert resp.content == b""
