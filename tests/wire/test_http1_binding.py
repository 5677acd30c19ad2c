"""The Python face of the extension's HTTP/1.1 framing: what a protocol callback on the event
loop gets from ``_wire.Http1Connection`` and ``_wire.Http1ClientConnection``, and what a caller
bug gets (an exception, never a split response)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jetmcp import _wire

POST = (
    b"POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\n"
    b"Mcp-Session-Id: s1\r\nX-Twice: 1\r\nx-twice: 2\r\nContent-Length: 2\r\n\r\n{}"
)
JSON = [(b"content-type", b"application/json")]


def test_request_fields_and_body() -> None:
    conn = _wire.Http1Connection()
    assert conn.phase == _wire.HTTP1_IDLE
    request = conn.feed(POST)
    assert request is not None
    assert (request.method, request.target, request.http_version) == (b"POST", b"/mcp", b"1.1")
    assert request.body == b"{}"
    assert request.keep_alive and not request.expects_continue
    assert request.header(b"MCP-SESSION-ID") == b"s1"
    assert request.header(b"origin") is None
    assert request.header_all(b"x-twice") == [b"1", b"2"]
    assert request.headers()[0] == (b"Host", b"h")
    assert request.header_key((b"host", b"origin", b"x-twice")) == b"h\x00\x01\x001\x00"
    with pytest.raises(ValueError):
        request.header_key(("host",))  # type: ignore[arg-type]
    assert conn.phase == _wire.HTTP1_RESPONDING
    assert conn.respond(200, JSON, b"{}") == (
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}"
    )
    assert conn.phase == _wire.HTTP1_IDLE and not conn.closed


def test_pipelined_requests_wait_for_the_response() -> None:
    conn = _wire.Http1Connection()
    first = conn.feed(POST + POST + b"GET /x HTTP/1.1\r\nHost: h\r\n\r\n")
    assert first is not None
    assert conn.next_request() is None, "the first response is not written yet"
    assert conn.buffered > 0
    conn.respond(202, [], b"")
    second = conn.next_request()
    assert second is not None and second.body == b"{}"
    conn.respond(202, [], b"")
    third = conn.next_request()
    assert third is not None and third.target == b"/x"
    conn.respond(200, [], b"", close=True)
    assert conn.closed and conn.phase == _wire.HTTP1_CLOSED
    assert conn.feed(POST) is None


def test_refusal_is_final_and_carries_its_answer() -> None:
    conn = _wire.Http1Connection(max_body=1)
    with pytest.raises(_wire.Http1Error) as refused:
        conn.feed(POST + POST)
    assert refused.value.status == 413
    assert refused.value.response.startswith(b"HTTP/1.1 413 Content Too Large\r\n")
    assert b"connection: close\r\n" in refused.value.response
    assert conn.closed and conn.buffered == 0
    assert conn.feed(POST) is None

    conn = _wire.Http1Connection()
    with pytest.raises(_wire.Http1Error) as preface:
        conn.feed(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
    assert preface.value.status is None and preface.value.response == b""


def test_continue_and_timeout_phases() -> None:
    conn = _wire.Http1Connection()
    assert conn.feed(b"POST / HTTP/1.1\r\nHost: h\r\n") is None
    assert conn.phase == _wire.HTTP1_HEAD
    assert conn.feed(b"Expect: 100-continue\r\nContent-Length: 2\r\n\r\n") is None
    assert conn.phase == _wire.HTTP1_BODY
    assert conn.take_continue() == b"HTTP/1.1 100 Continue\r\n\r\n"
    assert conn.take_continue() is None
    request = conn.feed(b"{}")
    assert request is not None and request.expects_continue
    timeout = _wire.http1_simple_response(408, b"Request header timeout")
    assert timeout.startswith(b"HTTP/1.1 408 Request Timeout\r\n")
    assert timeout.endswith(b"connection: close\r\n\r\nRequest header timeout")


@pytest.mark.parametrize(
    "headers",
    [
        [(b"x", b"1\r\nSet-Cookie: evil")],
        [(b"x", b"1\n")],
        [(b"x", b"1\x00")],
        [(b"bad name", b"1")],
        [(b"Content-Length", b"5")],
        [(b"Transfer-Encoding", b"chunked")],
        [(b"Connection", b"keep-alive")],
        [("x", "1")],
        [(b"x",)],
    ],
)
def test_a_caller_bug_never_splits_a_response(headers: list[tuple[bytes, ...]]) -> None:
    conn = _wire.Http1Connection()
    assert conn.feed(POST) is not None
    with pytest.raises(ValueError):
        conn.respond(200, headers, b"{}")
    # The request still waits for its (valid) response.
    assert conn.respond(200, JSON, b"{}").endswith(b"\r\n\r\n{}")


def test_writer_misuse() -> None:
    conn = _wire.Http1Connection()
    with pytest.raises(RuntimeError):
        conn.respond(200, JSON, b"{}")
    assert conn.feed(POST) is not None
    with pytest.raises(RuntimeError):
        conn.stream_data(b"x")
    with pytest.raises(ValueError):
        conn.respond(204, [], b"body")


def test_sse_stream() -> None:
    conn = _wire.Http1Connection()
    assert conn.feed(b"GET /mcp HTTP/1.1\r\nHost: h\r\nAccept: text/event-stream\r\n\r\n")
    head = conn.start_stream(200, [(b"content-type", b"text/event-stream")])
    assert head.endswith(b"transfer-encoding: chunked\r\n\r\n")
    assert conn.stream_data(b"data: {}\n\n") == b"a\r\ndata: {}\n\n\r\n"
    assert conn.end_stream() == b"0\r\n\r\n"
    assert conn.phase == _wire.HTTP1_IDLE


def test_client_whole_and_streamed() -> None:
    client = _wire.Http1ClientConnection()
    sent = client.request(b"POST", b"/mcp", [(b"host", b"h")], b"{}")
    assert sent == b"POST /mcp HTTP/1.1\r\nhost: h\r\ncontent-length: 2\r\n\r\n{}"
    assert not client.idle
    assert client.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n") == []
    (response,) = client.feed(b"\r\n{}")
    assert isinstance(response, _wire.Http1Response)
    assert response.complete and response.status == 200 and response.body == b"{}"
    assert client.idle

    client.request(b"POST", b"/mcp", [(b"host", b"h")], b"{}", stream=True)
    events = client.feed(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"5\r\nhello\r\n"
    )
    head, data = events
    assert isinstance(head, _wire.Http1Response) and not head.complete
    assert head.header(b"content-type") == b"text/event-stream"
    assert data == b"hello"
    assert client.feed(b"0\r\n\r\n") == [b""]
    assert client.idle


def test_client_refuses_a_cut_response() -> None:
    client = _wire.Http1ClientConnection()
    client.request(b"GET", b"/", [(b"host", b"h")])
    assert client.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab") == []
    with pytest.raises(_wire.Http1Error) as cut:
        client.feed(b"")
    assert cut.value.status is None
    assert client.closed


def test_fields_checked_once() -> None:
    fields = _wire.Http1Fields(JSON)
    assert bytes(fields) == b"content-type: application/json\r\n"
    conn = _wire.Http1Connection()
    assert conn.feed(POST) is not None
    assert conn.respond(200, fields, b"{}") == (
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}"
    )
    assert conn.feed(b"GET / HTTP/1.1\r\nHost: h\r\n\r\n") is not None
    sse = _wire.Http1Fields([(b"content-type", b"text/event-stream")])
    assert conn.start_stream(200, sse).endswith(
        b"content-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
    )
    with pytest.raises(ValueError):
        _wire.Http1Fields([(b"x", b"a\r\nb: c")])
    with pytest.raises(ValueError):
        _wire.Http1Fields([(b"Content-Length", b"1")])


def test_lane_key_is_header_key_of_a_post_to_the_path_only() -> None:
    names = (b"host", b"origin", b"x-twice")
    for raw, path, key in (
        (POST, b"/mcp", b"h\x00\x01\x001\x00"),
        (POST, b"/mc", None),
        (POST, b"/mcp/", None),
        (POST.replace(b"POST", b"PUT", 1), b"/mcp", None),
        (POST.replace(b"POST", b"post", 1), b"/mcp", None),
    ):
        request = _wire.Http1Connection().feed(raw)
        assert request is not None
        assert request.lane_key(path, names) == key


_MCP_NAMES = (
    b"Mcp-Protocol-Version",
    b"mcp-method",
    b"MCP-Name",
    b"Mcp-Param-A",
    b"mcp-param-a",
    b"Mcp-Param-B",
    # Longer than the 32 bytes routing() lower-cases on the stack: its other branch.
    b"Mcp-Param-A-Rather-Long-Parameter-Name",
    b"mcp-param-a-rather-long-parameter-name",
    b"Mcp-Session-Id",
    b"X-Other",
)
_VALUES = (b"tools/call", b"add", b"2026-07-28", b"a b", b"\tx", b"\xe9t\xe9", b"", b"1")


@given(st.lists(st.tuples(st.sampled_from(_MCP_NAMES), st.sampled_from(_VALUES)), max_size=8))
def test_routing_reads_as_from_map_over_the_engines_header_map(
    fields: list[tuple[bytes, bytes]],
) -> None:
    """``Http1Request.routing()`` (the native engine's hot path) against
    ``Headers.from_map`` over the engine's ``RequestHeaders``: the same routing headers,
    params, repeats, for any mix of spellings, repeats and unreadable values."""
    from jetmcp.transports.native.connection import RequestHeaders

    head = b"".join(b"%s: %s\r\n" % pair for pair in fields)
    raw = b"POST /mcp HTTP/1.1\r\nHost: h\r\n" + head + b"Content-Length: 0\r\n\r\n"
    request = _wire.Http1Connection().feed(raw)
    assert request is not None
    fast = request.routing()
    slow = _wire.Headers.from_map(RequestHeaders(request))
    assert repr(fast) == repr(slow)
    assert (fast.protocol_version, fast.method, fast.name, fast.routes) == (
        slow.protocol_version,
        slow.method,
        slow.name,
        slow.routes,
    )
    assert fast.params == slow.params
    assert fast.repeated == slow.repeated


def test_the_native_engines_read_callback_is_the_extensions() -> None:
    # uvloop calls the protocol's data_received as it finds it: the extension's, with no
    # Python frame, unless a subclass shadows it.
    from jetmcp.transports.native.connection import HttpConnection

    assert HttpConnection.data_received is _wire.Http1Protocol.data_received
    assert HttpConnection.__mro__[1] is _wire.Http1Protocol


def test_a_protocol_needs_its_servers_lane() -> None:
    class NoLane:
        native = object()

    with pytest.raises(TypeError):
        _wire.Http1Protocol(NoLane())
    with pytest.raises(AttributeError):
        _wire.Http1Protocol(object())
