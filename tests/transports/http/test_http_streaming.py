"""Streamable HTTP streaming against a real ``jetmcp run tests.apps.streaming_app:app``:
POST replies that become SSE streams, 2025-11-25 priming/ids/early close and resumption,
the session's GET streams (delivery, parking, replay, keep-alive, DELETE, disconnects),
and the pieces underneath (event log, SSE encoding, Accept parsing) in process.

Every read has a deadline: a stream that stays silent fails the test instead of hanging.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from harness.messages import tool_call, unique_id
from harness.servers import AppServer

APP = "tests.apps.streaming_app:app"
#: The bound on any one read from a stream, and on each whole test.
READ_TIMEOUT = 5.0
TEST_TIMEOUT = 20.0
#: How long "nothing more arrives" is watched for.
SILENCE = 0.3
KEEPALIVE_SECONDS = 0.4
LATEST = "2025-11-25"


# --------------------------------------------------------------------------- the server


class StreamingServer(AppServer):
    """``jetmcp run tests.apps.streaming_app:app`` on a free port of 127.0.0.1."""

    def __init__(self, *extra: str) -> None:
        super().__init__(APP, *extra, label="streaming server")


@pytest.fixture(scope="module")
def server() -> Iterator[StreamingServer]:
    """Short keep-alives so the tests can observe them."""
    srv = StreamingServer("--keepalive-seconds", str(KEEPALIVE_SECONDS))
    try:
        yield srv
    finally:
        srv.stop()


def run(main: Callable[[], Awaitable[None]]) -> None:
    async def bounded() -> None:
        async with asyncio.timeout(TEST_TIMEOUT):
            await main()

    asyncio.run(bounded())


# --------------------------------------------------------------------------- SSE client


@dataclass
class Event:
    """One SSE event (or, with ``comment`` set, one comment line)."""

    data: str = ""
    id: str | None = None
    event: str | None = None
    retry: int | None = None
    comment: str | None = None

    def json(self) -> Any:
        return json.loads(self.data)


class SseStream:
    """An open SSE response, parsed in the background into a queue of events."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self.queue: asyncio.Queue[Event | None] = asyncio.Queue()
        self.closed = False
        self.task = asyncio.create_task(self._read())

    async def _read(self) -> None:
        fields: dict[str, Any] = {}
        data: list[str] = []
        try:
            async for line in self.response.aiter_lines():
                if line == "":
                    if data or fields:
                        await self.queue.put(Event(data="\n".join(data), **fields))
                    fields, data = {}, []
                elif line.startswith(":"):
                    await self.queue.put(Event(comment=line[1:].strip()))
                else:
                    name, _, value = line.partition(":")
                    value = value[1:] if value.startswith(" ") else value
                    if name == "data":
                        data.append(value)
                    elif name == "id":
                        fields["id"] = value
                    elif name == "event":
                        fields["event"] = value
                    elif name == "retry":
                        fields["retry"] = int(value)
        except (httpx.HTTPError, asyncio.CancelledError):
            pass
        finally:
            self.queue.put_nowait(None)

    async def next(self, within: float = READ_TIMEOUT, comments: bool = False) -> Event:
        """The next event (comments skipped unless asked for); fails if the stream ends
        or stays silent for ``within`` seconds."""
        while True:
            try:
                async with asyncio.timeout(within):
                    event = await self.queue.get()
            except TimeoutError:
                raise AssertionError(f"no SSE event within {within}s") from None
            if event is None:
                self.closed = True
                self.queue.put_nowait(None)
                raise AssertionError("the SSE stream ended")
            if event.comment is not None and not comments:
                continue
            return event

    async def message(self, within: float = READ_TIMEOUT) -> Event:
        """The next event that carries data (skips priming events and retry-only ones)."""
        while True:
            event = await self.next(within)
            if event.data:
                return event

    async def rest(self, within: float = READ_TIMEOUT) -> list[Event]:
        """Every event (comments skipped) until the stream ends; fails if it does not end
        within ``within`` seconds."""
        out: list[Event] = []
        try:
            async with asyncio.timeout(within):
                while True:
                    event = await self.queue.get()
                    if event is None:
                        self.closed = True
                        self.queue.put_nowait(None)
                        return out
                    if event.comment is None:
                        out.append(event)
        except TimeoutError:
            raise AssertionError(f"the stream did not end within {within}s: {out}") from None

    async def silent(self, window: float = SILENCE) -> None:
        """Nothing but comments arrives within ``window`` (and the stream stays open)."""
        deadline = time.monotonic() + window
        while (left := deadline - time.monotonic()) > 0:
            try:
                async with asyncio.timeout(left):
                    event = await self.queue.get()
            except TimeoutError:
                return
            if event is None:
                self.queue.put_nowait(None)
                raise AssertionError("the SSE stream ended")
            assert event.comment is not None, f"expected silence, got {event}"

    async def ended(self, within: float = READ_TIMEOUT) -> None:
        await self.rest(within)


def headers(
    session: str | None = None,
    version: str | None = None,
    accept: str = "application/json, text/event-stream",
    **extra: str,
) -> dict[str, str]:
    h = {"content-type": "application/json", "accept": accept}
    if session is not None:
        h["mcp-session-id"] = session
    if version is not None:
        h["mcp-protocol-version"] = version
    h.update(extra)
    return h


@asynccontextmanager
async def stream(
    client: httpx.AsyncClient,
    method: str,
    url: str,
    hdrs: dict[str, str],
    body: Any = None,
    status: int = 200,
) -> AsyncIterator[SseStream]:
    """Send a request whose reply must be an SSE stream; read it in the background."""
    content = None if body is None else json.dumps(body).encode()
    async with client.stream(method, url, headers=hdrs, content=content) as resp:
        assert resp.status_code == status, (resp.status_code, await resp.aread())
        assert resp.headers["content-type"].startswith("text/event-stream"), resp.headers
        sse = SseStream(resp)
        try:
            yield sse
        finally:
            sse.task.cancel()
            await asyncio.gather(sse.task, return_exceptions=True)


def call(name: str, arguments: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
    """``tools/call`` of ``name``; ``token=`` asks for progress, ``id=`` names the request."""
    meta = {"progressToken": kw["token"]} if "token" in kw else None
    return tool_call(name, arguments or {}, kw.get("id", unique_id()), meta=meta)


async def initialize(client: httpx.AsyncClient, url: str, version: str = LATEST) -> str:
    resp = await client.post(
        url,
        headers=headers(),
        json={
            "jsonrpc": "2.0",
            "id": "init",
            "method": "initialize",
            "params": {
                "protocolVersion": version,
                "capabilities": {"roots": {}},
                "clientInfo": {"name": "streaming-tests", "version": "0"},
            },
        },
    )
    assert resp.status_code == 200, resp.text
    assert resp.json()["result"]["protocolVersion"] == version
    session = resp.headers["mcp-session-id"]
    done = await client.post(
        url,
        headers=headers(session),
        json={"jsonrpc": "2.0", "method": "notifications/initialized"},
    )
    assert done.status_code == 202
    return session


async def call_json(
    client: httpx.AsyncClient, url: str, session: str | None, body: Any, **kw: Any
) -> Any:
    """POST ``body`` and require a plain JSON reply."""
    resp = await client.post(url, headers=headers(session, **kw), json=body)
    assert resp.status_code == 200, resp.text
    assert resp.headers["content-type"] == "application/json", resp.headers
    return resp.json()


async def stats(client: httpx.AsyncClient, url: str, session: str) -> dict[str, int]:
    reply = await call_json(client, url, session, call("stats"))
    result: dict[str, int] = reply["result"]["structuredContent"]
    return result


async def wait_stats(
    client: httpx.AsyncClient,
    url: str,
    session: str,
    check: Callable[[dict[str, int]], bool],
    within: float = 3.0,
) -> dict[str, int]:
    """Poll the server's bookkeeping until ``check`` holds."""
    deadline = time.monotonic() + within
    while True:
        now = await stats(client, url, session)
        if check(now):
            return now
        if time.monotonic() > deadline:
            raise AssertionError(f"server bookkeeping never settled: {now}")
        await asyncio.sleep(0.05)


def text_of(reply: dict[str, Any]) -> str:
    return "".join(c.get("text", "") for c in reply["result"]["content"])


def new_client() -> httpx.AsyncClient:
    return httpx.AsyncClient(timeout=httpx.Timeout(READ_TIMEOUT))


# --------------------------------------------------------------------------- POST replies


@pytest.mark.parametrize("version", ["2025-03-26", "2025-06-18", LATEST])
def test_progress_turns_the_reply_into_an_event_stream(
    server: StreamingServer, version: str
) -> None:
    async def main() -> None:
        async with new_client() as client:
            session = await initialize(client, server.url, version)
            body = call("progress", {"steps": 3}, token="tok", id=7)
            async with stream(client, "POST", server.url, headers(session), body) as sse:
                assert sse.response.headers["cache-control"] == "no-cache"
                assert sse.response.headers["x-accel-buffering"] == "no"
                events = await sse.rest()
        if version == LATEST:
            priming, *events = events
            assert priming.data == "" and priming.id, priming
            ids = [priming.id, *(e.id for e in events)]
            assert all(ids), ids
            assert len(set(ids)) == len(ids), ids
            streams = {i.rpartition("-")[0] for i in ids if i}
            assert len(streams) == 1, ids
        else:
            assert all(e.id is None for e in events), events
        *notes, final = events
        assert [n.json()["method"] for n in notes] == ["notifications/progress"] * 3
        assert [n.json()["params"]["progress"] for n in notes] == [1, 2, 3]
        assert all(n.json()["params"]["progressToken"] == "tok" for n in notes)
        reply = final.json()
        assert reply["id"] == 7
        assert text_of(reply) == "done 3"

    run(main)


def test_log_lines_stream_before_the_result(server: StreamingServer) -> None:
    async def main() -> None:
        async with new_client() as client:
            session = await initialize(client, server.url, "2025-06-18")
            body = call("logs", {"count": 2}, id="L")
            async with stream(client, "POST", server.url, headers(session), body) as sse:
                events = await sse.rest()
        assert [e.json().get("method") for e in events] == [
            "notifications/message",
            "notifications/message",
            None,
        ]
        assert [e.json()["params"]["data"] for e in events[:2]] == ["line 0", "line 1"]
        assert text_of(events[-1].json()) == "logged 2"

    run(main)


def test_a_call_that_sends_nothing_stays_json(server: StreamingServer) -> None:
    async def main() -> None:
        async with new_client() as client:
            session = await initialize(client, server.url)
            # A handler that waits, and one that reports progress without being asked for it.
            waited = await call_json(client, server.url, session, call("quiet", {"ms": 20}))
            assert text_of(waited) == "quiet"
            unasked = await call_json(client, server.url, session, call("progress"))
            assert text_of(unasked) == "done 3"
            listed = await call_json(
                client, server.url, session, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
            )
            assert "progress" in {t["name"] for t in listed["result"]["tools"]}

    run(main)


def test_a_client_that_takes_only_json_gets_json(server: StreamingServer) -> None:
    async def main() -> None:
        async with new_client() as client:
            session = await initialize(client, server.url)
            only_json = {"accept": "application/json"}
            streamed = await call_json(
                client, server.url, session, call("progress", token="t"), **only_json
            )
            assert text_of(streamed) == "done 3"
            # A server-to-client request has no stream to go on: a clear error, at once.
            asked = await call_json(client, server.url, session, call("ask_roots"), **only_json)
            error = asked.get("error") or {}
            message = error.get("message", "") or text_of(asked)
            assert "no stream" in message, asked
            # No Accept at all is a client that does not listen for streams either (httpx
            # sends */* unless told otherwise, which does take streams).
            bare = new_client()
            bare.headers.pop("accept", None)
            async with bare:
                resp = await bare.post(
                    server.url,
                    headers={"content-type": "application/json", "mcp-session-id": session},
                    json=call("progress", token="t"),
                )
            assert resp.headers["content-type"] == "application/json"
            assert text_of(resp.json()) == "done 3"

    run(main)


def test_a_streaming_batch_ends_with_the_ordered_array(server: StreamingServer) -> None:
    async def main() -> None:
        async with new_client() as client:
            session = await initialize(client, server.url, "2025-03-26")
            batch = [
                call("progress", {"steps": 2, "ms": 30}, token="b", id="a"),
                {"jsonrpc": "2.0", "id": "b", "method": "ping"},
                {"jsonrpc": "2.0", "method": "notifications/progress", "params": {}},
                call("quiet", {"ms": 10}, id="c"),
            ]
            async with stream(client, "POST", server.url, headers(session), batch) as sse:
                events = await sse.rest()
        *notes, last = events
        assert [n.json()["method"] for n in notes] == ["notifications/progress"] * 2
        replies = last.json()
        assert isinstance(replies, list), replies
        assert [r["id"] for r in replies] == ["a", "b", "c"]
        assert replies[1]["result"] == {}

    run(main)


def test_server_to_client_request_on_the_post_stream(server: StreamingServer) -> None:
    async def main() -> None:
        async with new_client() as client:
            session = await initialize(client, server.url)
            async with stream(
                client, "POST", server.url, headers(session), call("ask_roots", id=5)
            ) as sse:
                asked = (await sse.message()).json()
                assert asked["method"] == "roots/list", asked
                answer = {
                    "jsonrpc": "2.0",
                    "id": asked["id"],
                    "result": {"roots": [{"uri": "file:///tmp", "name": "tmp"}]},
                }
                resp = await client.post(server.url, headers=headers(session), json=answer)
                assert resp.status_code == 202, resp.text
                final = (await sse.message()).json()
                await sse.ended()
        assert final["id"] == 5
        assert final["result"]["structuredContent"]["roots"][0]["uri"] == "file:///tmp"

    run(main)


# --------------------------------------------------------------------------- SSE polling


def test_early_close_then_resume_with_last_event_id(server: StreamingServer) -> None:
    async def main() -> None:
        async with new_client() as client:
            session = await initialize(client, server.url)
            body = call("reconnect", {"ms": 300, "retry_ms": 50}, id=1)
            async with stream(client, "POST", server.url, headers(session), body) as sse:
                first = await sse.next()
                events = await sse.rest()
            # Priming first, the log line, then retry before the server hung up: no result.
            assert first.data == "" and first.id, first
            assert [e.json()["params"]["data"] for e in events if e.data] == ["Before disconnect"]
            assert any(e.retry == 50 for e in events), events
            last_id = [e.id for e in events if e.id][-1]
            assert all(e.id for e in events if e.data), events

            get = headers(session, accept="text/event-stream", **{"last-event-id": last_id})
            async with stream(client, "GET", server.url, get) as resumed:
                rest = await resumed.rest()
            assert [e.json().get("method") for e in rest] == ["notifications/message", None]
            assert rest[0].json()["params"]["data"] == "After reconnect"
            assert rest[1].json()["result"]["content"][0]["text"] == "Reconnection test completed"
            stream_id = last_id.rpartition("-")[0]
            assert all(e.id and e.id.startswith(f"{stream_id}-") for e in rest), rest

            # The whole stream stays replayable from its priming id, final response included.
            get["last-event-id"] = first.id or ""
            async with stream(client, "GET", server.url, get) as again:
                replay = await again.rest()
            assert [e.data and e.json().get("id") for e in replay][-1] == 1
            assert len(replay) == 3, replay

    run(main)


def test_closing_early_needs_sse_polling(server: StreamingServer) -> None:
    async def main() -> None:
        async with new_client() as client:
            session = await initialize(client, server.url, "2025-06-18")
            body = call("reconnect", {"ms": 50}, id=2)
            async with stream(client, "POST", server.url, headers(session), body) as sse:
                events = await sse.rest()
        assert all(e.retry is None and e.id is None for e in events), events
        assert [e.json().get("id") for e in events] == [None, None, 2]

    run(main)


def test_unknown_post_stream_cannot_be_resumed(server: StreamingServer) -> None:
    async def main() -> None:
        async with new_client() as client:
            session = await initialize(client, server.url)
            resp = await client.get(
                server.url,
                headers=headers(session, accept="text/event-stream", **{"last-event-id": "p999-1"}),
            )
            assert resp.status_code == 400, resp.text

    run(main)


# --------------------------------------------------------------------------- GET streams


def test_get_statuses(server: StreamingServer) -> None:
    async def main() -> None:
        async with new_client() as client:
            sse_only = {"accept": "text/event-stream"}
            missing = await client.get(server.url, headers=sse_only)
            assert missing.status_code == 400, missing.text
            unknown = await client.get(server.url, headers={**sse_only, "mcp-session-id": "nope"})
            assert unknown.status_code == 404, unknown.text
            session = await initialize(client, server.url)
            json_only = await client.get(
                server.url, headers={"accept": "application/json", "mcp-session-id": session}
            )
            assert json_only.status_code == 406, json_only.text
            wrong_version = await client.get(
                server.url,
                headers={
                    **sse_only,
                    "mcp-session-id": session,
                    "mcp-protocol-version": "2025-06-18",
                },
            )
            assert wrong_version.status_code == 400, wrong_version.text
            put = await client.put(server.url, headers=headers(session))
            assert put.status_code == 405
            assert put.headers["allow"] == "GET, POST, DELETE"

    run(main)


def test_stateless_get_and_delete_are_405(stateless_url: str) -> None:
    for method in ("GET", "DELETE"):
        resp = httpx.request(
            method,
            stateless_url,
            headers={"accept": "text/event-stream", "mcp-session-id": "x"},
            timeout=READ_TIMEOUT,
        )
        assert resp.status_code == 405, (method, resp.status_code)
        assert resp.headers["allow"] == "POST"


def test_standalone_stream_carries_session_messages(server: StreamingServer) -> None:
    async def main() -> None:
        async with new_client() as client:
            session = await initialize(client, server.url)
            get = headers(session, accept="text/event-stream")
            async with stream(client, "GET", server.url, get) as sse:
                priming = await sse.next()
                assert priming.data == "" and priming.id, priming
                sent = await call_json(
                    client, server.url, session, call("outbound", {"text": "hello"})
                )
                assert text_of(sent) == "sent 1"
                event = await sse.message()
                assert event.json()["params"]["data"] == "hello 0"
                stream_id = priming.id.rpartition("-")[0] if priming.id else ""
                assert event.id == f"{stream_id}-1", event

    run(main)


def test_older_revisions_get_ids_but_no_priming(server: StreamingServer) -> None:
    async def main() -> None:
        async with new_client() as client:
            session = await initialize(client, server.url, "2025-03-26")
            async with stream(
                client, "GET", server.url, headers(session, accept="text/event-stream")
            ) as sse:
                await call_json(client, server.url, session, call("outbound", {"text": "x"}))
                event = await sse.next()
                assert event.data and event.id, event

    run(main)


def test_messages_sent_with_no_stream_open_wait_for_the_next_one(
    server: StreamingServer,
) -> None:
    async def main() -> None:
        async with new_client() as client:
            session = await initialize(client, server.url)
            await call_json(
                client, server.url, session, call("outbound", {"text": "early", "count": 2})
            )
            assert (await stats(client, server.url, session))["parked"] == 2
            get = headers(session, accept="text/event-stream")
            async with stream(client, "GET", server.url, get) as sse:
                first = [(await sse.message()).json()["params"]["data"] for _ in range(2)]
                assert first == ["early 0", "early 1"]
                await sse.silent()
            # That stream is gone; what is sent now waits, and resuming it delivers it.
            await wait_stats(client, server.url, session, lambda s: s["get_streams"] == 0)
            await call_json(client, server.url, session, call("outbound", {"text": "late"}))
            async with stream(client, "GET", server.url, get) as sse:
                late = await sse.message()
                assert late.json()["params"]["data"] == "late 0"
                last_id = late.id
            assert last_id

            # With Last-Event-ID, the stream named picks up where it was (ids continue).
            await wait_stats(client, server.url, session, lambda s: s["get_streams"] == 0)
            await call_json(client, server.url, session, call("outbound", {"text": "again"}))
            resume = {**get, "last-event-id": last_id}
            async with stream(client, "GET", server.url, resume) as sse:
                again = await sse.message()
            assert again.json()["params"]["data"] == "again 0"
            stream_id, _, seq = last_id.rpartition("-")
            assert again.id == f"{stream_id}-{int(seq) + 1}", (last_id, again.id)

    run(main)


def test_each_message_goes_to_exactly_one_stream(server: StreamingServer) -> None:
    async def main() -> None:
        async with new_client() as one, new_client() as two:
            session = await initialize(one, server.url)
            get = headers(session, accept="text/event-stream")
            async with (
                stream(one, "GET", server.url, get) as a,
                stream(two, "GET", server.url, get) as b,
            ):
                await a.next()  # priming: both streams are attached
                await b.next()
                await call_json(
                    one, server.url, session, call("outbound", {"text": "m", "count": 6})
                )
                got: list[str] = []
                pending = {
                    asyncio.ensure_future(a.message()): a,
                    asyncio.ensure_future(b.message()): b,
                }
                deadline = time.monotonic() + READ_TIMEOUT
                while len(got) < 6 and time.monotonic() < deadline:
                    done, _ = await asyncio.wait(
                        pending, timeout=deadline - time.monotonic(), return_when="FIRST_COMPLETED"
                    )
                    for task in done:
                        sse = pending.pop(task)
                        got.append(task.result().json()["params"]["data"])
                        pending[asyncio.ensure_future(sse.message())] = sse
                for task in pending:
                    task.cancel()
                await asyncio.gather(*pending, return_exceptions=True)
                assert sorted(got) == [f"m {i}" for i in range(6)], got
                await a.silent()
                await b.silent()

    run(main)


def test_delete_closes_the_session_streams(server: StreamingServer) -> None:
    async def main() -> None:
        async with new_client() as client, new_client() as other:
            session = await initialize(client, server.url)
            get = headers(session, accept="text/event-stream")
            async with stream(other, "GET", server.url, get) as sse:
                await sse.next()
                resp = await client.delete(server.url, headers={"mcp-session-id": session})
                assert resp.status_code == 204
                await sse.ended(2.0)
            again = await client.get(server.url, headers=get)
            assert again.status_code == 404

    run(main)


def test_idle_streams_get_keepalive_comments(server: StreamingServer) -> None:
    async def main() -> None:
        async with new_client() as client:
            session = await initialize(client, server.url)
            get = headers(session, accept="text/event-stream")
            async with stream(client, "GET", server.url, get) as sse:
                await sse.next()
                comment = await sse.next(KEEPALIVE_SECONDS * 5, comments=True)
                assert comment.comment == "keep-alive", comment
            # A POST stream that goes quiet between events gets them too.
            body = call("progress", {"steps": 1, "ms": int(KEEPALIVE_SECONDS * 2500)}, token=1)
            async with stream(client, "POST", server.url, headers(session), body) as post:
                seen: list[Event] = []
                while not any(e.data and "result" in e.json() for e in seen):
                    seen.append(await post.next(comments=True))
            assert any(e.comment == "keep-alive" for e in seen), seen

    run(main)


def test_a_client_that_disconnects_is_detached(server: StreamingServer) -> None:
    async def main() -> None:
        async with new_client() as client:
            session = await initialize(client, server.url)
            before = await stats(client, server.url, session)
            get = headers(session, accept="text/event-stream")
            for _ in range(3):
                async with (
                    new_client() as listener,
                    stream(listener, "GET", server.url, get) as sse,
                ):
                    await sse.next()
                    opened = await stats(client, server.url, session)
                    assert opened["get_streams"] == 1, opened
                    assert opened["tasks"] > before["tasks"], (before, opened)
                # The connection is gone: the server lets go of the stream and its task.
                after = await wait_stats(
                    client,
                    server.url,
                    session,
                    lambda s: s["get_streams"] == 0 and s["tasks"] <= before["tasks"],
                )
            assert after["post_streams"] == 0
            # Nothing is written to a stream that is gone: the next message waits instead.
            await call_json(client, server.url, session, call("outbound", {"text": "x"}))
            assert (await stats(client, server.url, session))["parked"] == 1

    run(main)


def test_a_dropped_post_stream_is_let_go(server: StreamingServer) -> None:
    async def main() -> None:
        async with new_client() as client:
            session = await initialize(client, server.url)
            before = await stats(client, server.url, session)
            body = call("progress", {"steps": 4, "ms": 100}, token="d")
            async with (
                new_client() as dropper,
                stream(dropper, "POST", server.url, headers(session), body) as sse,
            ):
                await sse.message()
            await wait_stats(
                client,
                server.url,
                session,
                lambda s: s["post_streams"] == 0 and s["tasks"] <= before["tasks"],
            )

    run(main)


def test_origin_is_checked_on_every_path(server: StreamingServer) -> None:
    evil = {"origin": "http://evil.example.com", "accept": "text/event-stream"}
    with httpx.Client(timeout=READ_TIMEOUT) as client:
        for method, path in (
            ("GET", "/mcp"),
            ("DELETE", "/mcp"),
            ("GET", "/sse"),
            ("POST", "/messages?session_id=x"),
        ):
            resp = client.request(method, server.base + path, headers=evil)
            assert resp.status_code == 403, (method, path, resp.status_code)
        host = client.get(server.url, headers={"host": "evil.example.com"})
        assert host.status_code == 403


# --------------------------------------------------------------------------- the SDK client


def test_python_sdk_follows_streams_and_resumes(server: StreamingServer) -> None:
    import anyio
    from mcp.client import Client

    progress: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    async def main() -> None:
        with anyio.fail_after(TEST_TIMEOUT):
            async with Client(server.url, mode="legacy") as client:
                result = await client.call_tool(
                    "progress", {"steps": 3}, progress_callback=on_progress
                )
                assert not result.is_error
                resumed = await client.call_tool("reconnect", {"ms": 200, "retry_ms": 20})
                assert not resumed.is_error
                assert "".join(getattr(c, "text", "") for c in resumed.content) == (
                    "Reconnection test completed"
                )

    anyio.run(main)
    assert progress == [1, 2, 3]


# --------------------------------------------------------------------------- in process


def test_event_log_is_bounded_in_size_and_age() -> None:
    from jetmcp.state.streams import EventLog

    log = EventLog(max_events=3, max_age=300.0)
    for seq in range(1, 6):
        log.append("g1", seq, b"m%d" % seq)
    assert len(log) == 3
    assert log.after("g1", 0) == [(3, b"m3"), (4, b"m4"), (5, b"m5")]
    assert log.after("g1", 4) == [(5, b"m5")]
    assert log.after("g2", 0) is None
    log.park(b"p")
    assert log.parked() == 1 and len(log) == 3
    assert log.unpark() == [b"p"]
    assert log.parked() == 0
    log.discard("g1", 5)
    assert log.after("g1", 0) == [(4, b"m4")]

    old = EventLog(max_events=10, max_age=0.05)
    old.append("p1", 1, b"x")
    old.park(b"y")
    time.sleep(0.1)
    assert old.after("p1", 0) is None
    assert old.unpark() == []


def test_sse_encoding() -> None:
    from jetmcp.state.streams import encode_event, priming_event, retry_field, split_event_id

    assert encode_event(b'{"a":1}') == b'data: {"a":1}\n\n'
    assert encode_event(b"x", "g1-2", "message") == b"event: message\nid: g1-2\ndata: x\n\n"
    assert encode_event(b"a\nb\r\nc") == b"data: a\ndata: b\ndata: c\n\n"
    assert priming_event("p3-0") == b"id: p3-0\ndata: \n\n"
    assert retry_field(250) == b"retry: 250\n\n"
    assert split_event_id("p12-7") == ("p12", 7)
    assert split_event_id("a-b-3") == ("a-b", 3)
    for bad in (None, "", "p1", "p1-", "-3", "p1-x", "p1-\u0663"):
        assert split_event_id(bad) is None, bad


@pytest.mark.parametrize(
    ("accept", "flags"),
    [
        (None, 1),
        ("application/json", 1),
        ("text/event-stream", 2),
        ("application/json, text/event-stream", 3),
        ("*/*", 3),
        ("text/*", 2),
        ("application/json, text/event-stream;q=0", 1),
        ("text/html", 0),
        ("application/json;q=0", 0),
    ],
)
def test_accept_parsing(accept: str | None, flags: int) -> None:
    from jetmcp.transports.http import accept_flags

    assert accept_flags(accept) == flags
