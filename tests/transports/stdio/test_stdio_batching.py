"""stdio: batches by the revision negotiated at ``initialize`` (2025-03-26 before it), row by
row of seed 000's table, plus the line discipline of the transport."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.messages import (
    BATCHING,
    DEFAULT_REVISION,
    NO_BATCHING,
    REVISIONS,
    assert_error,
    assert_result,
    encode,
    initialize_request,
    notification,
    request,
    tool_text,
)
from harness.servers import STOP_TIMEOUT, StdioServer, jetmcp_command


class Negotiated:
    """A stdio server after ``initialize`` at ``revision`` (None: never initialized)."""

    def __init__(self, server: StdioServer, revision: str | None) -> None:
        self.server = server
        self.negotiated = revision
        self.revision = revision or DEFAULT_REVISION
        self.accepts = self.revision in BATCHING

    def call(self, message: Any) -> Any:
        return self.server.call(message)

    def assert_refused(self, reply: Any) -> None:
        assert isinstance(reply, dict), reply
        assert_error(reply, -32600, None)


# One process per revision for the whole module; every test starts by syncing on a ping so a
# stray line from an earlier failure cannot leak into it.
@pytest.fixture(scope="module", params=[*REVISIONS, None], ids=[*REVISIONS, "uninitialized"])
def negotiated_server(request: pytest.FixtureRequest) -> Iterator[Negotiated]:
    server = StdioServer()
    try:
        if request.param is not None:
            server.initialize(request.param)
        yield Negotiated(server, request.param)
    finally:
        server.stop()


@pytest.fixture
def srv(negotiated_server: Negotiated) -> Negotiated:
    negotiated_server.server.sync()
    return negotiated_server


# ------------------------------------------------------------------ the table


def test_batch_of_requests_answers_in_request_order(srv: Negotiated) -> None:
    reply = srv.call(
        [
            request("ping", id=1),
            request("tools/list", id="two"),
            request("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}, id=3),
        ]
    )
    if not srv.accepts:
        srv.assert_refused(reply)
        return
    assert isinstance(reply, list), reply
    assert [r["id"] for r in reply] == [1, "two", 3]
    assert assert_result(reply[0], 1) == {}
    assert {"add", "echo", "sleep", "fail"} <= {
        t["name"] for t in assert_result(reply[1], "two")["tools"]
    }
    assert tool_text(assert_result(reply[2], 3)) == "3"


def test_notifications_and_client_responses_get_no_entry(srv: Negotiated) -> None:
    reply = srv.call(
        [
            notification("notifications/roots/list_changed"),
            {"jsonrpc": "2.0", "id": "s1", "result": {}},
            request("ping", id="a"),
            {"jsonrpc": "2.0", "id": "s2", "error": {"code": -1, "message": "declined"}},
            notification("notifications/cancelled", {"requestId": "nobody"}),
            request("ping", id="b"),
        ]
    )
    if not srv.accepts:
        srv.assert_refused(reply)
        return
    assert reply == [
        {"jsonrpc": "2.0", "id": "a", "result": {}},
        {"jsonrpc": "2.0", "id": "b", "result": {}},
    ]


def test_only_notifications_and_responses_write_nothing(srv: Negotiated) -> None:
    batch = [
        notification("notifications/roots/list_changed"),
        {"jsonrpc": "2.0", "id": "s1", "result": {}},
        {"jsonrpc": "2.0", "id": 9, "error": {"code": -32601, "message": "no"}},
    ]
    if not srv.accepts:
        srv.assert_refused(srv.call(batch))
        return
    srv.server.send(batch)
    srv.server.assert_silent()


@pytest.mark.parametrize("raw", [b"[]", b" [ \t] "], ids=["tight", "spaced"])
def test_empty_array_is_a_single_invalid_request(srv: Negotiated, raw: bytes) -> None:
    srv.assert_refused(srv.call(raw))


INVALID_ENTRIES = {
    "number": b"1",
    "empty-object": b"{}",
    "id-1e400": b'{"jsonrpc":"2.0","id":1e400,"method":"ping"}',
    "id-2^53": b'{"jsonrpc":"2.0","id":9007199254740992,"method":"ping"}',
    "id-1.5": b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}',
}


def test_invalid_entries_are_refused_alone(srv: Negotiated) -> None:
    raw = b"[" + b",".join([*INVALID_ENTRIES.values(), b'{"jsonrpc":"2.0","id":0,"method":"ping"}'])
    srv.server.send(raw + b"]")
    line = srv.server.read_line()
    reply = json.loads(line)
    if not srv.accepts:
        srv.assert_refused(reply)
        return
    assert isinstance(reply, list), reply
    assert len(reply) == len(INVALID_ENTRIES) + 1
    for entry in reply[:-1]:
        assert_error(entry, -32600, None)
    assert reply[-1] == {"jsonrpc": "2.0", "id": 0, "result": {}}
    for lexeme in (b"1e400", b"9007199254740992", b"1.5", b"Infinity"):
        assert lexeme not in line


@pytest.mark.parametrize("alone", [True, False], ids=["alone", "with-ping"])
def test_initialize_in_a_batch_is_refused_and_changes_nothing(srv: Negotiated, alone: bool) -> None:
    other = NO_BATCHING[0] if srv.accepts else BATCHING[-1]
    batch = [initialize_request(other, id="init-1")]
    if not alone:
        batch.append(request("ping", id="p"))
    reply = srv.call(batch)
    if srv.accepts:
        assert isinstance(reply, list), reply
        assert len(reply) == len(batch)
        assert_error(reply[0], -32600, "init-1")
        if not alone:
            assert reply[1] == {"jsonrpc": "2.0", "id": "p", "result": {}}
    else:
        srv.assert_refused(reply)
    later = srv.call([request("ping", id="later")])
    if srv.accepts:
        assert later == [{"jsonrpc": "2.0", "id": "later", "result": {}}]
    else:
        srv.assert_refused(later)


@pytest.fixture
def rendezvous() -> Iterator[StdioServer]:
    """A stdio server whose ``meet`` calls finish only when all of them run at once."""
    server = StdioServer(app="tests/apps/rendezvous_app.py:app")
    try:
        yield server
    finally:
        server.stop()


@pytest.mark.parametrize("negotiated", [DEFAULT_REVISION, None], ids=["2025-03-26", "default"])
def test_batch_entries_run_concurrently_in_request_order(
    rendezvous: StdioServer, negotiated: str | None
) -> None:
    # Three entries that can only finish together (each waits for the other two), around a
    # quick one: run one after the other, the first would give up alone.
    if negotiated is not None:
        rendezvous.initialize(negotiated)
    key = f"batch-{negotiated}"

    def meet(i: int) -> dict[str, Any]:
        arguments = {"key": key, "parties": 3}
        return request("tools/call", {"name": "meet", "arguments": arguments}, id=i)

    echo = request("tools/call", {"name": "echo", "arguments": {"text": "quick"}}, id=3)
    reply = rendezvous.call([meet(1), meet(2), echo, meet(4)])
    assert isinstance(reply, list), reply
    assert [r["id"] for r in reply] == [1, 2, 3, 4]
    for entry in reply:
        assert not assert_result(entry, entry["id"]).get("isError"), entry
    assert tool_text(reply[2]["result"]) == "quick"
    assert [tool_text(reply[i]["result"]) for i in (0, 1, 3)] == ["together"] * 3


def test_single_messages_still_work(srv: Negotiated) -> None:
    reply = srv.call(request("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}, id=5))
    result = assert_result(reply, 5)
    assert tool_text(result) == "3"
    assert ("structuredContent" in result) is (srv.revision not in BATCHING)


# ------------------------------------------------------------------ the line discipline


def test_one_reply_per_line(stdio: StdioServer) -> None:
    stdio.send_raw(
        b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'
        b'{"jsonrpc":"2.0","id":2,"method":"ping"}\r\n'
        b"\n"
        b'[{"jsonrpc":"2.0","id":3,"method":"ping"},{"jsonrpc":"2.0","id":4,"method":"ping"}]\n'
    )
    assert stdio.read() == {"jsonrpc": "2.0", "id": 1, "result": {}}
    assert stdio.read() == {"jsonrpc": "2.0", "id": 2, "result": {}}
    assert stdio.read() == [
        {"jsonrpc": "2.0", "id": 3, "result": {}},
        {"jsonrpc": "2.0", "id": 4, "result": {}},
    ]
    stdio.assert_silent()


def test_invalid_json_line_is_a_parse_error(stdio: StdioServer) -> None:
    for raw in (b'{"jsonrpc":"2.0","id":1,', b"not json", b"\xff\xfe"):
        assert_error(stdio.call(raw), -32700, None)
    # The stream goes on.
    assert stdio.call(request("ping", id="after")) == {
        "jsonrpc": "2.0",
        "id": "after",
        "result": {},
    }


def test_unsafe_and_safe_ids(stdio: StdioServer) -> None:
    stdio.send(b'{"jsonrpc":"2.0","id":9007199254740992,"method":"ping"}')
    assert_error(stdio.read(), -32600, None)
    for raw_id in (b"9007199254740991", b"-9007199254740991", b"-0", b'"x\\u00e9y"'):
        stdio.send(b'{"jsonrpc":"2.0","id":' + raw_id + b',"method":"ping"}')
        line = stdio.read_line()
        assert b'"id":' + raw_id in line, line


def test_initialize_on_stdio_negotiates(stdio: StdioServer) -> None:
    reply = stdio.call(initialize_request("2099-01-01", id=1))
    assert assert_result(reply, 1)["protocolVersion"] == "2025-11-25"
    stdio.send(notification("notifications/initialized"))
    stdio.assert_silent()
    assert_error(stdio.call([request("ping", id=2)]), -32600, None)


def test_logs_never_reach_stdout() -> None:
    server = StdioServer("--log-level", "debug")
    try:
        server.initialize("2025-03-26")
        server.call(request("tools/call", {"name": "fail", "arguments": {}}, id=1))
        server.call(request("tools/call", {"name": "nope", "arguments": {}}, id=2))
        server.call(request("no/such/method", id=3))
        server.call(b"{not json")
        server.call([request("tools/call", {"name": "sleep", "arguments": {"ms": 10}}, id=4)])
        server.call(request("resources/read", {"uri": "demo://nope"}, id=5))
        server.close_stdin()
        assert server.wait() == 0, server.stderr()
    finally:
        server.stop()
    assert server.transcript
    for line in server.transcript:
        message = json.loads(line)
        entries = message if isinstance(message, list) else [message]
        for entry in entries:
            assert entry.get("jsonrpc") == "2.0", line
            assert "id" in entry and ("result" in entry or "error" in entry), line


def test_stdin_eof_waits_for_in_flight_requests(stdio: StdioServer) -> None:
    stdio.send(request("tools/call", {"name": "sleep", "arguments": {"ms": 300}}, id="slow"))
    stdio.close_stdin()
    reply = stdio.read(timeout=5.0)
    assert_result(reply, "slow")
    assert stdio.wait() == 0, stdio.stderr()


def test_stdin_eof_without_trailing_newline(stdio: StdioServer) -> None:
    stdio.send_raw(b'{"jsonrpc":"2.0","id":"last","method":"ping"}')
    stdio.close_stdin()
    assert stdio.read() == {"jsonrpc": "2.0", "id": "last", "result": {}}
    assert stdio.wait() == 0, stdio.stderr()


# ------------------------------------------------------------------ stdin/stdout that are not pipes
# Process supervisors, shells and CI redirect stdio to /dev/null or to files; the server must
# treat those like pipes (EOF ends it with exit 0), not crash.

PING_LINES = (
    b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'
    b'[{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","id":3,"method":"ping"}]\n'
)
PING_REPLIES = [
    {"jsonrpc": "2.0", "id": 1, "result": {}},
    [{"jsonrpc": "2.0", "id": 2, "result": {}}, {"jsonrpc": "2.0", "id": 3, "result": {}}],
]


def run_stdio(stdin: Any, stdout: Any) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [*jetmcp_command(), "run", "jetmcp.demo:app", "--transport", "stdio"],
        stdin=stdin,
        stdout=stdout,
        stderr=subprocess.PIPE,
        timeout=STOP_TIMEOUT * 2,
        check=False,
    )


def test_stdin_from_dev_null_exits_cleanly() -> None:
    done = run_stdio(subprocess.DEVNULL, subprocess.PIPE)
    assert done.returncode == 0, (done.returncode, done.stderr)
    assert done.stdout == b""


def test_stdin_from_a_regular_file(tmp_path: Path) -> None:
    requests_file = tmp_path / "requests.jsonl"
    requests_file.write_bytes(PING_LINES)
    with requests_file.open("rb") as stdin:
        done = run_stdio(stdin, subprocess.PIPE)
    assert done.returncode == 0, (done.returncode, done.stderr)
    assert [json.loads(line) for line in done.stdout.splitlines()] == PING_REPLIES


def test_stdout_to_a_regular_file(tmp_path: Path) -> None:
    replies_file = tmp_path / "replies.jsonl"
    with replies_file.open("wb") as stdout:
        proc = subprocess.Popen(
            [*jetmcp_command(), "run", "jetmcp.demo:app", "--transport", "stdio"],
            stdin=subprocess.PIPE,
            stdout=stdout,
            stderr=subprocess.PIPE,
        )
        try:
            _, err = proc.communicate(PING_LINES, timeout=STOP_TIMEOUT * 2)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert proc.returncode == 0, (proc.returncode, err)
    lines = replies_file.read_bytes().splitlines()
    assert [json.loads(line) for line in lines] == PING_REPLIES


def test_line_over_max_body_bytes_is_refused_and_the_stream_goes_on() -> None:
    server = StdioServer("--max-body-bytes", "1024")
    try:
        pad = "x" * 2048
        server.send(request("tools/call", {"name": "echo", "arguments": {"text": pad}}, id=1))
        assert_error(server.read(), -32600, None)
        assert server.call(request("ping", id=2)) == {"jsonrpc": "2.0", "id": 2, "result": {}}
    finally:
        server.stop()


def test_large_reply_is_one_line(stdio: StdioServer) -> None:
    text = "y" * 300_000
    reply = stdio.call(request("tools/call", {"name": "echo", "arguments": {"text": text}}, id=1))
    assert tool_text(assert_result(reply, 1)) == text


def test_cancelled_request_gets_no_reply(stdio: StdioServer) -> None:
    stdio.sync()  # the server is up and reading
    stdio.send(request("tools/call", {"name": "sleep", "arguments": {"ms": 700}}, id="c"))
    time.sleep(0.2)
    stdio.send(notification("notifications/cancelled", {"requestId": "c"}))
    stdio.assert_silent(window=1.0)


def test_cancel_in_the_same_read_as_its_request(stdio: StdioServer) -> None:
    # A client may cancel right away; both lines then reach the server in one read.
    stdio.sync()
    sleep = request("tools/call", {"name": "sleep", "arguments": {"ms": 700}}, id="c2")
    cancel = notification("notifications/cancelled", {"requestId": "c2"})
    stdio.send_raw(encode(sleep) + b"\n" + encode(cancel) + b"\n")
    stdio.assert_silent(window=1.0)
