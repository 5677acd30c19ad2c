"""What a client sends besides requests (notifications, answers to the server's own requests)
cannot take the server down or lose a reply, however malformed; and ``notifications/cancelled``
stops every request running under the id it names, even one a client reused.

Each case runs against real ``jetmcp run`` processes: over stdio and over HTTP with a session,
as a single message and inside a legacy batch.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from harness.http import open_session, post
from harness.messages import (
    MODERN,
    assert_result,
    encode,
    json_headers,
    modern_headers,
    modern_request,
    notification,
    request,
    unique_id,
)
from harness.servers import READ_TIMEOUT, AppServer, StdioServer

APP = "tests.apps.client_fixtures:app"
#: A revision with batches, and one with server-to-client elicitation.
BATCHING = "2025-03-26"
ELICITING = "2025-06-18"

#: ``requestId`` values that name no request: not hashable, or not exactly a string or an
#: integer (``true`` and ``1.0`` compare equal to ``1`` in Python but are other JSON values).
BAD_REQUEST_IDS: list[Any] = [
    [1],
    {"a": 1},
    [[{"a": [None]}]],
    None,
    True,
    1.0,
    1.5e300,
    10**30,
    "",
]

#: Client notifications with params no handler expects.
ODD_NOTIFICATIONS: list[dict[str, Any]] = [
    *(notification("notifications/cancelled", {"requestId": v}) for v in BAD_REQUEST_IDS),
    notification("notifications/cancelled", {"reason": ["why"]}),
    {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": [1]},
    {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": [{"requestId": 1}]},
    {"jsonrpc": "2.0", "method": "notifications/initialized", "params": [[], {}]},
    notification("notifications/initialized", {"_meta": [1]}),
    notification("notifications/progress", {"progressToken": [1], "progress": {"a": 1}}),
    notification("notifications/progress", {"progressToken": {"a": 1}, "total": 10**30}),
    notification("notifications/roots/list_changed", {"_meta": {"a": [{}]}}),
    notification("notifications/elicitation/complete", {"elicitationId": [1]}),
    notification("notifications/tasks/status", {"taskId": {"a": 1}, "status": [1]}),
    notification("notifications/message", {"level": [1], "data": {"a": 1}}),
    notification("notifications/nothing/known", {"x": [1]}),
]
ODD_IDS = [json.dumps(n, separators=(",", ":"))[:60] for n in ODD_NOTIFICATIONS]


def texts(result: dict[str, Any]) -> list[str]:
    return [c["text"] for c in result["content"] if c.get("type") == "text"]


@pytest.fixture(scope="module")
def http_app() -> Iterator[AppServer]:
    server = AppServer(APP, label="client fixtures server")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def stdio_app() -> Iterator[StdioServer]:
    server = StdioServer(app=APP)
    try:
        server.initialize(BATCHING)
        yield server
    finally:
        server.stop()


@pytest.fixture
def io(stdio_app: StdioServer) -> StdioServer:
    assert stdio_app.proc.poll() is None, stdio_app.stderr()
    stdio_app.sync()
    return stdio_app


@pytest.fixture(scope="module")
def http_client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=10.0) as c:
        yield c


@pytest.fixture(scope="module")
def batching_session(http_app: AppServer, http_client: httpx.Client) -> str:
    return open_session(http_client, http_app.url, BATCHING)


# --------------------------------------------------------------------------- notifications


@pytest.mark.parametrize("note", ODD_NOTIFICATIONS, ids=ODD_IDS)
def test_stdio_odd_notification_is_ignored(io: StdioServer, note: dict[str, Any]) -> None:
    io.send(note)
    io.assert_silent(window=0.05)  # nothing written for it, and the next request answered
    ping = request("ping")
    assert io.call([note, ping]) == [{"jsonrpc": "2.0", "id": ping["id"], "result": {}}]


@pytest.mark.parametrize("note", ODD_NOTIFICATIONS, ids=ODD_IDS)
def test_http_odd_notification_is_ignored(
    http_app: AppServer, http_client: httpx.Client, batching_session: str, note: dict[str, Any]
) -> None:
    alone = post(http_client, http_app.url, note, session=batching_session)
    assert alone.status_code == 202, alone.text
    ping = request("ping")
    batch = post(http_client, http_app.url, [note, ping], session=batching_session)
    assert batch.status_code == 200, batch.text
    assert batch.json() == [{"jsonrpc": "2.0", "id": ping["id"], "result": {}}]
    no_session = post(http_client, http_app.url, [note, ping])
    assert no_session.status_code == 200, no_session.text
    assert no_session.json() == [{"jsonrpc": "2.0", "id": ping["id"], "result": {}}]


@pytest.mark.parametrize("value", BAD_REQUEST_IDS, ids=[json.dumps(v) for v in BAD_REQUEST_IDS])
def test_stdio_odd_cancel_in_a_modern_batch(io: StdioServer, value: Any) -> None:
    discover = modern_request("server/discover")
    reply = io.call([notification("notifications/cancelled", {"requestId": value}), discover])
    assert isinstance(reply, list) and len(reply) == 1, reply
    assert MODERN in assert_result(reply[0], discover["id"])["supportedVersions"]


def test_http_odd_cancel_at_2026_07_28(http_app: AppServer, http_client: httpx.Client) -> None:
    for value in BAD_REQUEST_IDS:
        note = notification("notifications/cancelled", {"requestId": value})
        alone = http_client.post(http_app.url, content=encode(note), headers=modern_headers())
        assert alone.status_code == 202, alone.text
        discover = modern_request("server/discover")
        batch = http_client.post(
            http_app.url, content=encode([note, discover]), headers=modern_headers()
        )
        assert batch.status_code == 200, batch.text
        assert_result(batch.json()[0], discover["id"])


def test_stdio_cancel_by_a_value_equal_to_the_id_is_not_a_cancel(io: StdioServer) -> None:
    # true == 1 == 1.0 in Python; on the wire they are three different values.
    call = request(
        "tools/call",
        {"name": "wait_for_cancel", "arguments": {"tag": unique_id(), "seconds": 0.3}},
        id=1,
    )
    io.send(call)
    for value in (True, 1.0):
        io.send(notification("notifications/cancelled", {"requestId": value}))
    reply = io.read()
    assert texts(assert_result(reply, 1)) == ["finished"]


# --------------------------------------------------------------------------- client responses

#: Answers to the server's own request, each malformed in its own way.
ODD_ANSWERS: list[dict[str, Any]] = [
    {"error": {"code": 10**30, "message": "huge code"}},
    {"error": {"code": -(10**30), "message": "huge negative code"}},
    {"error": {"code": True, "message": ["not", "a", "string"], "data": {"a": [1]}}},
    {"error": {"code": 1.5, "message": 5}},
    {"error": {"code": [1], "message": {"a": 1}, "data": [[[]]]}},
    {"error": "not an object"},
    {"result": [1, 2]},
    {"result": None},
    {"result": "text"},
    {"result": {"action": ["accept"], "content": [], "roots": {"a": 1}, "role": [1]}},
    {"result": {"action": "accept", "content": {"username": [1], "email": {"a": 1}}}},
    {"result": {"content": {"type": [1]}, "model": [], "roots": [[], {"uri": [1]}]}},
]
ANSWER_IDS = [json.dumps(a)[:50] for a in ODD_ANSWERS]
#: A tool of the app for each kind of server-to-client request.
ASKING_TOOLS = {
    "elicitation": ("test_elicitation", {"message": "who?"}),
    "sampling": ("test_sampling", {"prompt": "hi"}),
    "roots": ("client_roots", {}),
}
CLIENT_CAPABILITIES = {"elicitation": {}, "sampling": {}, "roots": {"listChanged": True}}


def check_answered(reply: dict[str, Any], request_id: Any) -> None:
    """The call was answered: a result, or an error whose code JSON-RPC can carry."""
    assert reply.get("id") == request_id, reply
    if "error" in reply:
        code = reply["error"]["code"]
        assert type(code) is int and abs(code) < 2**53, reply
        assert isinstance(reply["error"]["message"], str), reply
    else:
        assert isinstance(reply["result"]["content"], list), reply


@pytest.fixture(scope="module")
def eliciting_stdio() -> Iterator[StdioServer]:
    server = StdioServer(app=APP)
    try:
        init = request(
            "initialize",
            {
                "protocolVersion": ELICITING,
                "capabilities": CLIENT_CAPABILITIES,
                "clientInfo": {"name": "jetmcp-tests", "version": "0"},
            },
        )
        assert_result(server.call(init), init["id"])
        server.send(notification("notifications/initialized"))
        yield server
    finally:
        server.stop()


@pytest.mark.parametrize("kind", sorted(ASKING_TOOLS))
@pytest.mark.parametrize("answer", ODD_ANSWERS, ids=ANSWER_IDS)
def test_stdio_odd_answer_to_a_server_request(
    eliciting_stdio: StdioServer, kind: str, answer: dict[str, Any]
) -> None:
    io = eliciting_stdio
    assert io.proc.poll() is None, io.stderr()
    io.sync()
    name, arguments = ASKING_TOOLS[kind]
    call = request("tools/call", {"name": name, "arguments": arguments})
    io.send(call)
    asked = io.read()
    assert "method" in asked and "id" in asked, asked
    io.send({"jsonrpc": "2.0", "id": asked["id"], **answer})
    check_answered(io.read(), call["id"])
    io.assert_silent(window=0.05)


@pytest.fixture(scope="module")
def eliciting_session(http_app: AppServer, http_client: httpx.Client) -> str:
    init = request(
        "initialize",
        {
            "protocolVersion": ELICITING,
            "capabilities": CLIENT_CAPABILITIES,
            "clientInfo": {"name": "jetmcp-tests", "version": "0"},
        },
    )
    resp = post(http_client, http_app.url, init)
    assert resp.status_code == 200, resp.text
    session = resp.headers["mcp-session-id"]
    done = post(
        http_client, http_app.url, notification("notifications/initialized"), session=session
    )
    assert done.status_code == 202
    return session


def call_answering(
    client: httpx.Client,
    url: str,
    session: str,
    call: dict[str, Any],
    answer: Callable[[dict[str, Any]], dict[str, Any] | None],
) -> dict[str, Any]:
    """POST ``call`` and read its SSE stream; every server request on it gets ``answer(it)``
    POSTed back on the session (nothing when that is None). The call's reply."""
    headers = json_headers(ELICITING, session)
    with (
        httpx.Client(timeout=10.0) as back,
        client.stream("POST", url, content=encode(call), headers=headers) as resp,
    ):
        assert resp.status_code == 200, resp.read()
        if resp.headers["content-type"].startswith("application/json"):
            reply: dict[str, Any] = json.loads(resp.read())
            return reply
        for line in resp.iter_lines():
            if not line.startswith("data:") or not line[5:].strip():
                continue
            message = json.loads(line[5:])
            if "method" in message and "id" in message:
                response = answer(message)
                if response is not None:
                    sent = post(back, url, response, session=session)
                    assert sent.status_code == 202, sent.text
            elif message.get("id") == call["id"]:
                return message
    raise AssertionError("the stream ended without the reply")


@pytest.mark.parametrize("kind", sorted(ASKING_TOOLS))
@pytest.mark.parametrize("answer", ODD_ANSWERS, ids=ANSWER_IDS)
def test_http_odd_answer_to_a_server_request(
    http_app: AppServer,
    http_client: httpx.Client,
    eliciting_session: str,
    kind: str,
    answer: dict[str, Any],
) -> None:
    name, arguments = ASKING_TOOLS[kind]
    call = request("tools/call", {"name": name, "arguments": arguments})
    reply = call_answering(
        http_client,
        http_app.url,
        eliciting_session,
        call,
        lambda asked: {"jsonrpc": "2.0", "id": asked["id"], **answer},
    )
    check_answered(reply, call["id"])
    ping = request("ping")
    assert (
        post(http_client, http_app.url, ping, session=eliciting_session).json()["id"] == ping["id"]
    )


# --------------------------------------------------------------------------- duplicate ids


def wait_call(tag: str, request_id: Any, seconds: float = 30.0) -> dict[str, Any]:
    return request(
        "tools/call",
        {"name": "wait_for_cancel", "arguments": {"tag": tag, "seconds": seconds}},
        id=request_id,
    )


def until_events(ask: Callable[[str], list[str]], tag: str, expected: list[str]) -> None:
    deadline = time.monotonic() + READ_TIMEOUT
    while (seen := ask(tag)) != expected:
        if time.monotonic() > deadline:
            raise AssertionError(f"events of {tag}: {seen}, expected {expected}")
        time.sleep(0.02)


def stdio_events(io: StdioServer) -> Callable[[str], list[str]]:
    def ask(tag: str) -> list[str]:
        call = request("tools/call", {"name": "events", "arguments": {"tag": tag}})
        io.send(call)
        while True:  # replies to other requests may come first
            reply = io.read()
            if reply.get("id") == call["id"]:
                return texts(assert_result(reply, call["id"]))

    return ask


def test_stdio_cancel_reaches_a_reused_id_after_the_first_ends(
    eliciting_stdio: StdioServer,
) -> None:
    io = eliciting_stdio
    io.sync()
    ask = stdio_events(io)
    tag = unique_id("dup")
    # The first request under the id waits for the client's answer, so it ends exactly
    # when the test says; the second runs until it is cancelled.
    first = request(
        "tools/call", {"name": "test_elicitation", "arguments": {"message": "?"}}, id="dup"
    )
    io.send(first)
    asked = io.read()
    assert asked["method"] == "elicitation/create"
    io.send(wait_call(tag, "dup"))
    until_events(ask, tag, ["started"])
    io.send({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "decline"}})
    assert "action=decline" in texts(assert_result(io.read(), "dup"))[0]
    io.send(notification("notifications/cancelled", {"requestId": "dup"}))
    until_events(ask, tag, ["started", "cancelled"])
    io.assert_silent()  # stdio sends nothing for a cancelled request


def test_stdio_cancel_stops_every_request_under_the_id(io: StdioServer) -> None:
    ask = stdio_events(io)
    tags = [unique_id("all"), unique_id("all")]
    for tag in tags:
        io.send(wait_call(tag, 7))
    for tag in tags:
        until_events(ask, tag, ["started"])
    io.send(notification("notifications/cancelled", {"requestId": 7}))
    for tag in tags:
        until_events(ask, tag, ["started", "cancelled"])
    io.assert_silent()


def http_events(client: httpx.Client, url: str, session: str) -> Callable[[str], list[str]]:
    def ask(tag: str) -> list[str]:
        call = request("tools/call", {"name": "events", "arguments": {"tag": tag}})
        return texts(assert_result(post(client, url, call, session=session).json(), call["id"]))

    return ask


class Background:
    """One POST on a thread of its own (a call that waits), its reply kept."""

    def __init__(self, post_it: Callable[[], dict[str, Any]]) -> None:
        self.reply: dict[str, Any] | None = None
        self.failure: BaseException | None = None

        def run() -> None:
            try:
                self.reply = post_it()
            except BaseException as exc:  # handed to the test thread by result()
                self.failure = exc

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()

    def result(self) -> dict[str, Any]:
        self._thread.join(timeout=READ_TIMEOUT * 2)
        assert not self._thread.is_alive(), "the call was not answered in time"
        if self.failure is not None:
            raise self.failure
        assert self.reply is not None
        return self.reply


def test_http_cancel_reaches_a_reused_id_after_the_first_ends(
    http_app: AppServer, http_client: httpx.Client, eliciting_session: str
) -> None:
    url, session = http_app.url, eliciting_session
    ask = http_events(http_client, url, session)
    tag = unique_id("dup")
    asked = threading.Event()
    release = threading.Event()

    def answer(message: dict[str, Any]) -> dict[str, Any]:
        asked.set()
        assert release.wait(READ_TIMEOUT * 2)
        return {"jsonrpc": "2.0", "id": message["id"], "result": {"action": "decline"}}

    elicit = request(
        "tools/call", {"name": "test_elicitation", "arguments": {"message": "?"}}, id="dup"
    )
    first = Background(lambda: call_answering(http_client, url, session, elicit, answer))
    assert asked.wait(READ_TIMEOUT)
    second = Background(
        lambda: post(http_client, url, wait_call(tag, "dup"), session=session).json()
    )
    until_events(ask, tag, ["started"])
    release.set()
    assert "action=decline" in texts(assert_result(first.result(), "dup"))[0]
    cancel = post(
        http_client,
        url,
        notification("notifications/cancelled", {"requestId": "dup"}),
        session=session,
    )
    assert cancel.status_code == 202
    reply = second.result()
    assert reply["id"] == "dup" and reply["error"]["code"] == -32800, reply
    until_events(ask, tag, ["started", "cancelled"])


def test_http_cancel_stops_every_request_under_the_id(
    http_app: AppServer, http_client: httpx.Client, batching_session: str
) -> None:
    url, session = http_app.url, batching_session
    ask = http_events(http_client, url, session)
    tags = [unique_id("all"), unique_id("all")]
    calls = [
        Background(
            lambda tag=tag: post(http_client, url, wait_call(tag, 7), session=session).json()
        )
        for tag in tags
    ]
    for tag in tags:
        until_events(ask, tag, ["started"])
    cancel = post(
        http_client, url, notification("notifications/cancelled", {"requestId": 7}), session=session
    )
    assert cancel.status_code == 202
    for call in calls:
        reply = call.result()
        assert reply["id"] == 7 and reply["error"]["code"] == -32800, reply
    for tag in tags:
        until_events(ask, tag, ["started", "cancelled"])
