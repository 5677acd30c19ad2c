"""Sessions shared through Redis, against real processes and a real Redis: two ``jetmcp run``
processes ("hosts") on one key prefix, and ``--workers 2`` of one process. Each test starts
what it needs on one host and checks it on the other: requests on fresh connections, the
GET stream taking messages sent elsewhere, answers to server-to-client requests and
cancellations POSTed to the other host, DELETE, list changes and resource updates, and a
stream resumed with ``Last-Event-ID`` after the host holding it was SIGKILLed. The faults of
Redis itself run against a private ``redis-server``.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest

from harness.messages import initialize_request, unique_id
from harness.redis_support import REDIS_URL, Hosts, PrivateRedis, drop_keys, hosts, keys, new_prefix
from harness.servers import AppServer, jetmcp_command
from jetmcp.errors import McpError
from transports.http.test_http_streaming import (
    LATEST,
    call,
    call_json,
    headers,
    initialize,
    new_client,
    run,
    stream,
    text_of,
)

APP = "tests.apps.redis_app:app"
KEEPALIVE = "0.4"


@pytest.fixture(scope="module")
def pair() -> Iterator[Hosts]:
    group = Hosts(APP, "--keepalive-seconds", KEEPALIVE)
    try:
        yield group
    finally:
        group.stop()


def fresh_post(url: str, body: Any, session: str | None = None, **kw: Any) -> httpx.Response:
    """One POST on a connection of its own (closed after it)."""
    with httpx.Client(timeout=5.0) as client:
        return client.post(url, headers=headers(session, **kw), json=body)


def session_keys(prefix: str) -> list[str]:
    """The keys under ``prefix`` that are not a worker's heartbeat or the shared
    ``requestState`` key."""
    return [
        k for k in keys(prefix) if not k.startswith(prefix + "w:") and k != prefix + "state-key"
    ]


# --------------------------------------------------------------------------- requests


def _full_session(urls: list[str], rounds: int = 20) -> None:
    """Initialize, then ``rounds`` requests of every kind, each on a fresh connection, each
    to the next url: none may meet a 404."""
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "fresh", "version": "0"},
        },
    }
    resp = fresh_post(urls[0], init)
    assert resp.status_code == 200, resp.text
    session = resp.headers["mcp-session-id"]
    version = {"mcp-protocol-version": "2025-06-18"}
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert fresh_post(urls[1 % len(urls)], note, session, **version).status_code == 202
    kinds = [
        call("add", {"a": 2, "b": 3}),
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        call("quiet", {"ms": 1}),
        {"jsonrpc": "2.0", "id": 2, "method": "ping"},
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "resources/read",
            "params": {"uri": "test://watched"},
        },
    ]
    statuses: list[int] = []
    for i in range(rounds):
        body = kinds[i % len(kinds)]
        reply = fresh_post(urls[i % len(urls)], body, session, **version)
        statuses.append(reply.status_code)
        assert reply.status_code == 200, (i, reply.status_code, reply.text)
        assert "result" in reply.json(), reply.text
    assert statuses == [200] * rounds


def test_every_request_on_a_fresh_connection_to_either_host(pair: Hosts) -> None:
    _full_session(pair.urls)


def test_two_workers_of_one_process_share_sessions() -> None:
    prefix = new_prefix()
    server = AppServer(
        APP, "--workers", "2", "--redis", REDIS_URL, "--redis-prefix", prefix, label="2 workers"
    )
    try:
        _full_session([server.url], rounds=40)
    finally:
        server.stop()
        drop_keys(prefix)


def test_delete_is_seen_by_every_host(pair: Hosts) -> None:
    async def main() -> None:
        a, b = pair.urls
        async with new_client() as client:
            session = await initialize(client, a)
            # Host b knows the session (its cache holds it) and holds a stream of it.
            await call_json(client, b, session, call("add", {"a": 1, "b": 1}))
            get = headers(session, accept="text/event-stream")
            async with new_client() as other, stream(other, "GET", b, get) as sse:
                await sse.next()
                resp = await client.delete(a, headers={"mcp-session-id": session})
                assert resp.status_code == 204
                await sse.ended(2.0)
            for url in (b, a):
                after = await client.post(url, headers=headers(session), json=call("add"))
                assert after.status_code == 404, after.text

    run(main)


# --------------------------------------------------------------------------- delivery


def test_messages_sent_on_one_host_reach_the_get_stream_on_the_other(pair: Hosts) -> None:
    async def main() -> None:
        a, b = pair.urls
        async with new_client() as client, new_client() as listener:
            session = await initialize(client, a)
            # Sent while no stream is open: parked in Redis for the next GET, wherever.
            await call_json(client, a, session, call("outbound", {"text": "early", "count": 2}))
            get = headers(session, accept="text/event-stream")
            async with stream(listener, "GET", b, get) as sse:
                got = [(await sse.message()).json()["params"]["data"] for _ in range(2)]
                assert got == ["early 0", "early 1"]
                await call_json(client, a, session, call("outbound", {"text": "live", "count": 3}))
                got = [(await sse.message()).json()["params"]["data"] for _ in range(3)]
                assert got == ["live 0", "live 1", "live 2"]
                await sse.silent()

    run(main)


@pytest.mark.parametrize(
    ("tool", "answer", "expected"),
    [
        ("ask_roots", {"roots": [{"uri": "file:///x", "name": "x"}]}, "file:///x"),
        ("ask_elicit", {"action": "accept", "content": {"name": "Ada"}}, "accept:{'name': 'Ada'}"),
        (
            "ask_sample",
            {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"},
            "sampled:hi",
        ),
    ],
)
def test_the_answer_posted_to_the_other_host_reaches_the_handler(
    pair: Hosts, tool: str, answer: dict[str, Any], expected: str
) -> None:
    async def main() -> None:
        a, b = pair.urls
        async with new_client() as client:
            resp = await client.post(
                a,
                headers=headers(),
                json={
                    "jsonrpc": "2.0",
                    "id": "init",
                    "method": "initialize",
                    "params": {
                        "protocolVersion": LATEST,
                        "capabilities": {"roots": {}, "elicitation": {}, "sampling": {}},
                        "clientInfo": {"name": "t", "version": "0"},
                    },
                },
            )
            session = resp.headers["mcp-session-id"]
            async with stream(client, "POST", a, headers(session), call(tool, id=9)) as sse:
                asked = (await sse.message()).json()
                assert "method" in asked and "id" in asked, asked
                reply = {"jsonrpc": "2.0", "id": asked["id"], "result": answer}
                sent = fresh_post(b, reply, session)
                assert sent.status_code == 202, sent.text
                final = (await sse.message()).json()
        assert final["id"] == 9, final
        result = final["result"]
        text = "".join(c.get("text", "") for c in result["content"])
        assert expected in text or expected in str(result.get("structuredContent")), result

    run(main)


def test_an_answer_from_another_session_reaches_nothing(pair: Hosts) -> None:
    """Answers stay within their session across hosts too: another session's client naming
    the request id changes nothing, and the request ends at its own timeout."""

    async def main() -> None:
        a, b = pair.urls
        async with new_client() as client:
            session = await initialize(client, a)
            intruder = await initialize(client, b)
            async with stream(client, "POST", a, headers(session), call("ask_roots", id=4)) as sse:
                asked = (await sse.message()).json()
                forged = {"jsonrpc": "2.0", "id": asked["id"], "result": {"roots": []}}
                assert fresh_post(b, forged, intruder).status_code == 202
                await sse.silent(0.5)
                real = {"jsonrpc": "2.0", "id": asked["id"], "result": {"roots": [{"uri": "r:"}]}}
                assert fresh_post(b, real, session).status_code == 202
                final = (await sse.message()).json()
        assert final["result"]["structuredContent"]["roots"] == [{"uri": "r:"}], final

    run(main)


def test_cancelled_on_the_other_host_stops_the_handler(pair: Hosts) -> None:
    async def main() -> None:
        a, b = pair.urls
        tag = unique_id("c")
        async with new_client() as client:
            session = await initialize(client, a)
            pending = asyncio.ensure_future(
                client.post(
                    a,
                    headers=headers(session, accept="application/json"),
                    json=call("wait_cancel", {"tag": tag}, id="slow-1"),
                )
            )
            await asyncio.sleep(0.3)
            note = {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": "slow-1"},
            }
            assert fresh_post(b, note, session).status_code == 202
            reply = await asyncio.wait_for(pending, 5.0)
            assert reply.json()["error"]["code"] == -32800, reply.text
            check = await call_json(client, a, session, call("was_cancelled", {"tag": tag}))
            assert check["result"]["structuredContent"]["result"] is True

    run(main)


def test_early_closed_post_stream_resumes_on_the_other_host(pair: Hosts) -> None:
    async def main() -> None:
        a, b = pair.urls
        async with new_client() as client:
            session = await initialize(client, a)
            body = call("reconnect", {"ms": 600, "retry_ms": 50}, id=1)
            async with stream(client, "POST", a, headers(session), body) as sse:
                events = await sse.rest()
            last_id = [e.id for e in events if e.id][-1]
            get = headers(session, accept="text/event-stream", **{"last-event-id": last_id})
            # The handler still runs on a; its later events reach b live, through Redis.
            async with stream(client, "GET", b, get) as resumed:
                rest = await resumed.rest()
        assert rest[0].json()["params"]["data"] == "After reconnect", rest
        assert rest[-1].json()["result"]["content"][0]["text"] == "Reconnection test completed"

    run(main)


def test_list_changes_and_resource_updates_reach_sessions_on_every_host(pair: Hosts) -> None:
    async def main() -> None:
        a, b = pair.urls
        async with new_client() as client, new_client() as listener:
            session = await initialize(client, a)
            sub = {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "resources/subscribe",
                "params": {"uri": "test://watched"},
            }
            await call_json(client, a, session, sub)
            get = headers(session, accept="text/event-stream")
            async with stream(listener, "GET", a, get) as sse:
                await sse.next()
                await call_json(client, b, session, call("touch", {"uri": "test://watched"}))
                updated = (await sse.message()).json()
                assert updated["method"] == "notifications/resources/updated"
                assert updated["params"]["uri"] == "test://watched"
                await call_json(client, b, session, call("touch", {"uri": "test://other"}))
                await call_json(client, b, session, call("change_tools"))
                changed = (await sse.message()).json()
                assert changed["method"] == "notifications/tools/list_changed", changed

    run(main)


def test_listen_streams_hear_changes_made_on_the_other_host(pair: Hosts) -> None:
    async def main() -> None:
        a, b = pair.urls
        meta = {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        }
        listen = {
            "jsonrpc": "2.0",
            "id": "L1",
            "method": "subscriptions/listen",
            "params": {
                "_meta": meta,
                "notifications": {
                    "toolsListChanged": True,
                    "resourceSubscriptions": ["test://watched"],
                },
            },
        }
        modern = headers(version="2026-07-28", **{"mcp-method": "subscriptions/listen"})
        async with new_client() as client, stream(client, "POST", a, modern, listen) as sse:
            ack = (await sse.message()).json()
            assert ack["method"] == "notifications/subscriptions/acknowledged"
            session = await initialize(client, b)
            await call_json(client, b, session, call("change_tools"))
            changed = (await sse.message()).json()
            assert changed["method"] == "notifications/tools/list_changed", changed
            assert changed["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "L1"
            await call_json(client, b, session, call("touch", {"uri": "test://watched"}))
            updated = (await sse.message()).json()
            assert updated["params"]["uri"] == "test://watched", updated

    run(main)


# --------------------------------------------------------------------------- faults


def test_a_stream_resumes_on_another_host_after_its_host_is_killed() -> None:
    """The GET stream's host dies (SIGKILL) mid-stream; the client resumes with
    Last-Event-ID on the other host and receives every message, those sent while no host
    held its stream included."""
    group = Hosts(APP, "--keepalive-seconds", KEEPALIVE)
    try:
        victim, survivor = group.servers
        a, b = victim.url, survivor.url

        async def main() -> None:
            async with new_client() as client, new_client() as listener:
                session = await initialize(client, b)
                get = headers(session, accept="text/event-stream")
                async with stream(listener, "GET", a, get) as sse:
                    await sse.next()
                    await call_json(client, b, session, call("outbound", {"text": "m", "count": 2}))
                    seen = [await sse.message() for _ in range(2)]
                    os.killpg(victim.proc.pid, signal.SIGKILL)
                    victim.proc.wait(5)
                    await sse.rest(3.0)
                # Sent while the dead host's stream is still the session's current one.
                await call_json(client, b, session, call("outbound", {"text": "n", "count": 3}))
                resume = {**get, "last-event-id": seen[-1].id or ""}
                async with stream(listener, "GET", b, resume) as again:
                    got = [(await again.message()).json()["params"]["data"] for _ in range(3)]
                    await again.silent()
            assert [e.json()["params"]["data"] for e in seen] == ["m 0", "m 1"]
            assert got == ["n 0", "n 1", "n 2"]

        run(main)
    finally:
        group.stop()


def test_unreachable_redis_at_start_is_a_clear_error() -> None:
    dead = f"redis://127.0.0.1:{_closed_port()}/0"
    proc = subprocess.run(
        [*jetmcp_command(), "run", "--transport", "http", "--port", "1", "--redis", dead],
        capture_output=True,
        timeout=30,
        check=False,
    )
    assert proc.returncode == 2, proc
    err = proc.stderr.decode()
    assert "cannot reach Redis" in err and dead in err, err


def test_several_workers_without_shared_state_are_refused() -> None:
    env = {k: v for k, v in os.environ.items() if k != "JETMCP_REDIS_URL"}
    proc = subprocess.run(
        [*jetmcp_command(), "run", "--transport", "http", "--port", "1", "--workers", "2"],
        capture_output=True,
        timeout=30,
        check=False,
        env=env,
    )
    assert proc.returncode == 2, proc
    err = proc.stderr.decode()
    assert "--redis" in err and "--stateless" in err, err


def _closed_port() -> int:
    from harness.servers import free_port

    return free_port()


@pytest.fixture
def private_redis() -> Iterator[PrivateRedis]:
    server = PrivateRedis()
    try:
        yield server
    finally:
        server.stop()


def test_redis_lost_while_serving_is_503_then_service_returns(
    private_redis: PrivateRedis,
) -> None:
    host = AppServer(
        APP, "--redis", private_redis.url, "--redis-timeout-seconds", "1", label="host"
    )
    try:
        first = fresh_post(host.url, _init())
        session = first.headers["mcp-session-id"]
        private_redis.kill()
        began = time.monotonic()
        for body in (call("add", {"a": 1, "b": 2}), _init()):
            lost = fresh_post(host.url, body, session if "name" in body["params"] else None)
            assert lost.status_code == 503, lost.text
            assert lost.json()["error"]["code"] == -32000
            assert lost.headers["retry-after"] == "1"
        assert time.monotonic() - began < 8
        # Session-less and 2026-07-28 requests need no state: still served.
        assert fresh_post(host.url, call("add", {"a": 1, "b": 2})).status_code == 200
        private_redis.start()
        deadline = time.monotonic() + 10
        while True:
            again = fresh_post(host.url, _init())
            if again.status_code == 200 or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert again.status_code == 200, again.text
        fresh = again.headers["mcp-session-id"]
        assert fresh_post(host.url, call("add", {"a": 1, "b": 2}), fresh).status_code == 200
        # That Redis kept nothing: the old session is gone, cleanly.
        assert fresh_post(host.url, call("add", {"a": 1, "b": 2}), session).status_code == 404
        assert host.proc.poll() is None
    finally:
        host.stop()


def test_a_frozen_redis_is_503_within_the_timeout_and_sessions_survive(
    private_redis: PrivateRedis,
) -> None:
    host = AppServer(
        APP, "--redis", private_redis.url, "--redis-timeout-seconds", "0.5", label="host"
    )
    other = AppServer(
        APP, "--redis", private_redis.url, "--redis-timeout-seconds", "0.5", label="other"
    )
    try:
        session = fresh_post(host.url, _init()).headers["mcp-session-id"]
        assert private_redis.proc is not None
        private_redis.proc.send_signal(signal.SIGSTOP)
        try:
            began = time.monotonic()
            frozen = fresh_post(other.url, call("add", {"a": 1, "b": 2}), session)
            assert frozen.status_code == 503, frozen.text
            assert time.monotonic() - began < 4
        finally:
            private_redis.proc.send_signal(signal.SIGCONT)
        deadline = time.monotonic() + 15
        while True:
            back = fresh_post(other.url, call("add", {"a": 1, "b": 2}), session)
            if back.status_code == 200 or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert back.status_code == 200, back.text
        assert text_of(back.json()) == "3"
    finally:
        host.stop()
        other.stop()


def _init() -> dict[str, Any]:
    return initialize_request("2025-06-18", 0, client_name="faults")


# --------------------------------------------------------------------------- keys


def test_ended_sessions_leave_no_keys() -> None:
    with hosts(APP) as pair:
        _churn(pair)


def _churn(pair: Hosts) -> None:
    async def main() -> None:
        a, b = pair.urls
        async with new_client() as client:
            for i in range(20):
                session = await initialize(client, a if i % 2 else b)
                await call_json(client, b, session, call("outbound", {"text": "x"}))
                sub = {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "resources/subscribe",
                    "params": {"uri": f"test://{i}"},
                }
                await call_json(client, a, session, sub)
                resp = await client.delete(b, headers={"mcp-session-id": session})
                assert resp.status_code == 204

    run(main)
    deadline = time.monotonic() + 3
    while session_keys(pair.prefix) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert session_keys(pair.prefix) == []


def test_session_ids_are_uuids(pair: Hosts) -> None:
    import uuid

    session = fresh_post(pair.urls[0], _init()).headers["mcp-session-id"]
    assert str(uuid.UUID(session)) == session
    assert uuid.UUID(session).version == 4


def test_sessions_idle_out_everywhere() -> None:
    prefix = new_prefix()
    group = Hosts(APP, "--session-idle-seconds", "1", prefix=prefix)
    try:
        a, b = group.urls
        session = fresh_post(a, _init()).headers["mcp-session-id"]
        assert fresh_post(b, call("add", {"a": 1, "b": 1}), session).status_code == 200
        time.sleep(2.5)
        assert fresh_post(a, call("add", {"a": 1, "b": 1}), session).status_code == 404
        assert fresh_post(b, call("add", {"a": 1, "b": 1}), session).status_code == 404
        assert session_keys(prefix) == []
    finally:
        group.stop()


def test_redis_client_settings_come_from_the_environment() -> None:
    from jetmcp.settings import Settings

    os.environ["JETMCP_REDIS_URL"] = "redis://example.invalid:1/2"
    try:
        assert Settings().redis_url == "redis://example.invalid:1/2"
    finally:
        del os.environ["JETMCP_REDIS_URL"]
    assert Settings().redis_url == ""


# --------------------------------------------------------------------------- tasks


def _legacy(url: str, session: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": unique_id(), "method": method, "params": params}
    reply = fresh_post(url, body, session, accept="application/json")
    assert reply.status_code == 200, reply.text
    out: dict[str, Any] = reply.json()
    return out


def _task_session(url: str) -> str:
    init = _init()
    init["params"]["protocolVersion"] = LATEST
    init["params"]["capabilities"] = {"elicitation": {}}
    return fresh_post(url, init).headers["mcp-session-id"]


def test_a_task_started_on_one_host_is_fetched_awaited_and_listed_on_the_other(
    pair: Hosts,
) -> None:
    a, b = pair.urls
    session = _task_session(a)
    started = _legacy(
        a,
        session,
        "tools/call",
        {"name": "slow_task", "arguments": {"text": "hi", "ms": 600}, "task": {"ttl": 60000}},
    )
    task = started["result"]["task"]
    assert task["status"] == "working"
    got = _legacy(b, session, "tasks/get", {"taskId": task["taskId"]})["result"]
    assert got["taskId"] == task["taskId"] and got["status"] == "working", got
    assert got["ttl"] == 60000
    listed = _legacy(b, session, "tasks/list", {})["result"]["tasks"]
    assert [t["taskId"] for t in listed] == [task["taskId"]]
    result = _legacy(b, session, "tasks/result", {"taskId": task["taskId"]})["result"]
    assert result["content"][0]["text"] == "hi", result
    meta = result["_meta"]["io.modelcontextprotocol/related-task"]
    assert meta == {"taskId": task["taskId"]}
    done = _legacy(b, session, "tasks/get", {"taskId": task["taskId"]})["result"]
    assert done["status"] == "completed"
    # Another session cannot see it, on either host.
    other = _task_session(b)
    for url in (a, b):
        missing = _legacy(url, other, "tasks/get", {"taskId": task["taskId"]})
        assert missing["error"]["code"] == -32602, missing


def test_a_task_cancelled_on_the_other_host_stops_where_it_runs(pair: Hosts) -> None:
    a, b = pair.urls
    session = _task_session(a)
    tag = unique_id("t")
    started = _legacy(
        a, session, "tools/call", {"name": "wait_cancel", "arguments": {"tag": tag}, "task": {}}
    )
    task_id = started["result"]["task"]["taskId"]
    cancelled = _legacy(b, session, "tasks/cancel", {"taskId": task_id})["result"]
    assert cancelled["status"] == "cancelled", cancelled
    deadline = time.monotonic() + 5
    while True:
        check = _legacy(
            a, session, "tools/call", {"name": "was_cancelled", "arguments": {"tag": tag}}
        )
        if check["result"]["structuredContent"]["result"] or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert check["result"]["structuredContent"]["result"] is True
    again = _legacy(a, session, "tasks/cancel", {"taskId": task_id})
    assert again["error"]["code"] == -32602, again
    outcome = _legacy(a, session, "tasks/result", {"taskId": task_id})
    assert outcome["error"]["code"] == -32800, outcome


MODERN = "2026-07-28"
TASKS_EXT = "io.modelcontextprotocol/tasks"


def _modern(url: str, method: str, params: dict[str, Any], name: str | None = None) -> Any:
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {
            "elicitation": {},
            "extensions": {TASKS_EXT: {}},
        },
    }
    body = {
        "jsonrpc": "2.0",
        "id": unique_id(),
        "method": method,
        "params": {**params, "_meta": meta},
    }
    extra = {"mcp-method": method}
    if name is not None:
        extra["mcp-name"] = name
    reply = fresh_post(url, body, None, version=MODERN, accept="application/json", **extra)
    assert reply.status_code in (200, 400), reply.text
    return reply.json()


def test_extension_tasks_answer_from_any_host(pair: Hosts) -> None:
    a, b = pair.urls
    created = _modern(a, "tools/call", {"name": "task_asks", "arguments": {}}, name="task_asks")[
        "result"
    ]
    assert created["resultType"] == "task", created
    task_id = created["taskId"]
    deadline = time.monotonic() + 5
    while True:
        got = _modern(b, "tasks/get", {"taskId": task_id}, name=task_id)["result"]
        if got["status"] == "input_required" or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert got["status"] == "input_required", got
    (key,) = got["inputRequests"]
    assert got["inputRequests"][key]["method"] == "elicitation/create"
    answer = {key: {"action": "accept", "content": {"name": "Ada"}}}
    ack = _modern(b, "tasks/update", {"taskId": task_id, "inputResponses": answer}, name=task_id)
    assert ack["result"]["resultType"] == "complete", ack
    while True:
        got = _modern(b, "tasks/get", {"taskId": task_id}, name=task_id)["result"]
        if got["status"] == "completed" or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert got["status"] == "completed", got
    assert got["result"]["content"][0]["text"] == "accept:{'name': 'Ada'}"

    slow = _modern(
        a, "tools/call", {"name": "wait_cancel", "arguments": {"tag": "m"}}, name="wait_cancel"
    )["result"]
    ack = _modern(b, "tasks/cancel", {"taskId": slow["taskId"]}, name=slow["taskId"])
    assert ack["result"]["resultType"] == "complete", ack
    state = _modern(a, "tasks/get", {"taskId": slow["taskId"]}, name=slow["taskId"])["result"]
    assert state["status"] == "cancelled", state
    unknown = _modern(b, "tasks/get", {"taskId": "nope"}, name="nope")
    assert unknown["error"]["code"] == -32602


def _task_view(url: str, task_id: str) -> dict[str, Any]:
    got: dict[str, Any] = _modern(url, "tasks/get", {"taskId": task_id}, name=task_id)["result"]
    return got


def _answer(url: str, task_id: str, key: str, name: str) -> None:
    answer = {key: {"action": "accept", "content": {"name": name}}}
    ack = _modern(url, "tasks/update", {"taskId": task_id, "inputResponses": answer}, name=task_id)
    assert ack["result"]["resultType"] == "complete", ack


def _until(url: str, task_id: str, keys: set[str]) -> dict[str, Any]:
    """The task once it asks exactly ``keys`` (5 s at most)."""
    deadline = time.monotonic() + 5
    while True:
        got = _task_view(url, task_id)
        if set(got.get("inputRequests", ())) == keys or time.monotonic() > deadline:
            return got
        time.sleep(0.05)


def test_an_answered_question_is_gone_on_every_host_when_the_ack_arrives(pair: Hosts) -> None:
    """tasks/update's ack means every host's tasks/get leaves the answered key out, whether
    the update reached the host running the task or the other one (the conformance suite's
    tasks-mrtr-partial-fulfillment through a round-robin proxy)."""
    a, b = pair.urls
    created = _modern(
        a, "tools/call", {"name": "task_asks_twice", "arguments": {}}, name="task_asks_twice"
    )
    task_id = created["result"]["taskId"]
    assert set(_until(b, task_id, {"first", "second"})["inputRequests"]) == {"first", "second"}
    # Answered on the host that does not run the task: gone at once on both.
    _answer(b, task_id, "first", "one")
    for url in (a, b):
        got = _task_view(url, task_id)
        assert got["status"] == "input_required", got
        assert set(got["inputRequests"]) == {"second"}, got
    # Answered on the host running it: the other host sees it at once too.
    _answer(a, task_id, "second", "two")
    got = _task_view(b, task_id)
    assert "second" not in got.get("inputRequests", {}), got
    # The next question is listed once asked.
    again = _until(b, task_id, {"third"})
    assert again["inputRequests"]["third"]["params"]["message"] == "Third?", again
    _answer(b, task_id, "third", "three")
    deadline = time.monotonic() + 5
    while (got := _task_view(a, task_id))["status"] != "completed" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert got["result"]["content"][0]["text"] == "one,two,three", got


def test_tasks_update_marks_its_keys_answered_before_the_running_worker_takes_them() -> None:
    """The same, held still: a task record as its worker wrote it (asking "first" and
    "second"), and no worker to take the answer. tasks/update in this worker, then tasks/get
    here: "first" is gone at once (before, it was listed until the running worker took the
    answer and wrote its state, and a round-robin client saw it still asked)."""
    from jetmcp import Server
    from jetmcp.settings import Settings
    from jetmcp.state.redis import RedisState
    from jetmcp.state.redis_tasks import RedisTasks

    prefix = new_prefix()

    async def scenario() -> None:
        state = RedisState(Settings(redis_url=REDIS_URL, redis_prefix=prefix))
        try:
            tasks = RedisTasks(state, Server("answered"))
            asked = {
                key: {"method": "elicitation/create", "params": {}} for key in ("first", "second")
            }
            fields = ["status", "input_required", "msg", "", "updated", "t", "created", "t"]
            fields += ["extra", "{}", "outcome", "", "inputs", orjson.dumps(asked)]
            assert await state.run("task_put", "t1", 1, "modern", "", state.worker, -1, *fields)
            got = await tasks.get("modern", "t1", "")
            assert set(got["inputRequests"]) == {"first", "second"}, got
            ack = await tasks.update("t1", {"first": {"action": "accept"}, "other": {}}, "")
            assert ack == {"resultType": "complete"}
            got = await tasks.get("modern", "t1", "")
            assert got["status"] == "input_required" and set(got["inputRequests"]) == {"second"}, (
                got
            )
            await tasks.update("t1", {"second": {"action": "decline"}}, "")
            got = await tasks.get("modern", "t1", "")
            assert got["status"] == "working" and "inputRequests" not in got, got
            with pytest.raises(McpError) as missing:
                await tasks.update("t2", {"first": {}}, "")
            assert missing.value.code == -32602
        finally:
            await state.close()

    try:
        asyncio.run(scenario())
    finally:
        drop_keys(prefix)


def test_a_task_whose_host_died_is_failed_by_the_next_host_asked() -> None:
    with hosts(APP) as group:
        victim, survivor = group.servers
        session = _task_session(survivor.url)
        started = _legacy(
            victim.url,
            session,
            "tools/call",
            {"name": "slow_task", "arguments": {"text": "x", "ms": 30000}, "task": {}},
        )
        task_id = started["result"]["task"]["taskId"]
        os.killpg(victim.proc.pid, signal.SIGKILL)
        victim.proc.wait(5)
        deadline = time.monotonic() + 20  # the heartbeat lapses within 10 s
        while True:
            got = _legacy(survivor.url, session, "tasks/get", {"taskId": task_id})["result"]
            if got["status"] != "working" or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert got["status"] == "failed", got
        outcome = _legacy(survivor.url, session, "tasks/result", {"taskId": task_id})
        assert outcome["error"]["code"] == -32603, outcome


def test_an_input_round_is_retried_on_the_other_host(pair: Hosts) -> None:
    """Hosts given no JETMCP_STATE_KEY agree on one through Redis: a 2026-07-28
    requestState sealed by one host opens on the other."""
    a, b = pair.urls
    first = _modern(a, "tools/call", {"name": "ask_elicit", "arguments": {}}, name="ask_elicit")
    asked = first["result"]
    assert asked["resultType"] == "input_required", asked
    (key,) = asked["inputRequests"]
    retry = {
        "name": "ask_elicit",
        "arguments": {},
        "inputResponses": {key: {"action": "accept", "content": {"name": "Ada"}}},
        "requestState": asked["requestState"],
    }
    done = _modern(b, "tools/call", retry, name="ask_elicit")["result"]
    assert done["resultType"] == "complete", done
    assert done["content"][0]["text"] == "accept:{'name': 'Ada'}"


def test_requests_on_a_known_session_make_no_redis_round_trip(
    private_redis: PrivateRedis,
) -> None:
    """What never changes about a session is cached by the worker: 200 requests on it cost
    Redis no command beyond the once-a-second touch (counted by Redis itself)."""
    import redis as sync_redis

    host = AppServer(APP, "--redis", private_redis.url, label="host")
    client = sync_redis.Redis.from_url(private_redis.url)
    try:
        session = fresh_post(host.url, _init()).headers["mcp-session-id"]
        version = {"mcp-protocol-version": "2025-06-18"}
        with httpx.Client(timeout=5.0) as http:
            url = host.url
            http.post(url, headers=headers(session, **version), json=call("add", {"a": 1, "b": 1}))
            client.config_resetstat()
            began = time.monotonic()
            for i in range(200):
                body = call("add", {"a": i, "b": 1}) if i % 2 else call("quiet", {"ms": 0})
                reply = http.post(url, headers=headers(session, **version), json=body)
                assert reply.status_code == 200, reply.text
            seconds = time.monotonic() - began
        stats = client.info("commandstats")
        scripts = sum(
            int(stats.get(name, {}).get("calls", 0)) for name in ("cmdstat_evalsha", "cmdstat_eval")
        )
        # At most one touch per second per worker, plus the sweep's few.
        assert scripts <= 2 * (seconds + 2), (scripts, seconds, stats)
    finally:
        client.close()
        host.stop()


def test_a_tasks_result_on_the_other_host_carries_the_task_s_requests(pair: Hosts) -> None:
    """The task runs on a and asks the client something; the client waits with
    ``tasks/result`` on b: the question arrives on that stream, the answer POSTed to a
    reaches the task, and the result ends the stream."""

    async def main() -> None:
        a, b = pair.urls
        session = _task_session(a)
        started = _legacy(
            a,
            session,
            "tools/call",
            # It asks once the tasks/result below waits (before that, a question would go to
            # the session's GET stream, as with one process).
            {"name": "task_asks", "arguments": {"ms": 1000}, "task": {}},
        )
        task_id = started["result"]["task"]["taskId"]
        body = {
            "jsonrpc": "2.0",
            "id": "res",
            "method": "tasks/result",
            "params": {"taskId": task_id},
        }
        async with new_client() as client, stream(client, "POST", b, headers(session), body) as sse:
            asked = (await sse.message()).json()
            assert asked["method"] == "elicitation/create", asked
            related = asked["params"]["_meta"]["io.modelcontextprotocol/related-task"]
            assert related == {"taskId": task_id}
            answer = {
                "jsonrpc": "2.0",
                "id": asked["id"],
                "result": {"action": "accept", "content": {"name": "Ada"}},
            }
            assert fresh_post(a, answer, session).status_code == 202
            final = (await sse.message()).json()
        assert final["id"] == "res", final
        assert final["result"]["content"][0]["text"] == "accept:{'name': 'Ada'}", final

    run(main)


def test_a_worker_just_started_serves_its_first_requests() -> None:
    """A request that reaches a worker before its pub/sub link is up (the worker just
    started) waits for the link, at most the Redis timeout, and is served: before, it was
    refused with 503 (seen with ``--workers 2``, whose second worker the readiness probe
    never reached). Once the worker has been up longer than that, a link that is down is
    refused at once, as before."""
    from jetmcp.core.call import Session
    from jetmcp.demo import app
    from jetmcp.protocol import revisions
    from jetmcp.settings import Settings
    from jetmcp.state.base import StateUnavailable, new_session_id
    from jetmcp.state.redis import RedisSessionStore

    revision = revisions.lookup("2025-11-25")
    assert revision is not None
    prefix = new_prefix()

    async def first_requests() -> None:
        store = RedisSessionStore(app, Settings(redis_url=REDIS_URL, redis_prefix=prefix))
        store.state.start_on(asyncio.get_running_loop())
        assert not store.state.healthy  # nothing has run yet: the link is not up
        session = Session(new_session_id(), revision)
        await store.add(session)
        assert store.state.healthy
        assert session.id is not None
        assert await store.get(session.id) is session
        assert await store.remove(session.id)
        await store.close()

    async def dead_redis() -> None:
        dead = f"redis://127.0.0.1:{_closed_port()}/0"
        settings = Settings(redis_url=dead, redis_prefix=prefix, redis_timeout_seconds=0.5)
        store = RedisSessionStore(app, settings)
        store.state.start_on(asyncio.get_running_loop())
        began = time.monotonic()
        with pytest.raises(StateUnavailable):
            await store.add(Session(new_session_id(), revision))
        assert time.monotonic() - began < 5  # no longer than the start-up window, then 503
        await asyncio.sleep(0.6)  # the window is over: refused without waiting on the link
        waited = asyncio.ensure_future(store.add(Session(new_session_id(), revision)))
        await asyncio.sleep(0)
        assert waited.done()
        with pytest.raises(StateUnavailable):
            waited.result()
        await store.close()

    try:
        asyncio.run(first_requests())
        asyncio.run(dead_redis())
    finally:
        drop_keys(prefix)
