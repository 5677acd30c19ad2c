"""What a client sends for another worker of its session (an answer to a server-to-client
request, a ``notifications/cancelled``) is relayed through Redis; with Redis frozen
(SIGSTOP, a real ``redis-server`` of the test's own) the client is told it was not
delivered (HTTP 503, -32000 saying what was lost, ``Retry-After``) instead of 202 (issue
40: every write to the shared state lands or the client gets an error). Before, the relay
ran in the background: 202 at once, and the answer or cancellation was lost with only a
log line. Writes no client waits for are logged at warning, naming what was lost."""

from __future__ import annotations

import asyncio
import logging
import signal
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import redis

from harness.redis_support import PrivateRedis, fill
from harness.servers import AppServer

APP = "tests.apps.redis_app:app"
TIMEOUT = "1"


@pytest.fixture
def private_redis() -> Iterator[PrivateRedis]:
    server = PrivateRedis()
    try:
        yield server
    finally:
        server.stop()


def headers(version: str, session: str | None = None) -> dict[str, str]:
    out = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": version,
    }
    if session is not None:
        out["mcp-session-id"] = session
    return out


def open_session(url: str, version: str) -> str:
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {"sampling": {}},
            "clientInfo": {"name": "relay", "version": "0"},
        },
    }
    opened = httpx.post(url, json=init, headers=headers(version), timeout=30)
    assert opened.status_code == 200, opened.text
    session = opened.headers["mcp-session-id"]
    done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert httpx.post(url, json=done, headers=headers(version, session)).status_code == 202
    return session


ANSWER = {"jsonrpc": "2.0", "id": "srv-9", "result": {"content": {"type": "text", "text": "hi"}}}
CANCEL = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 42}}


def served(redis_url: str) -> AppServer:
    return AppServer(
        APP,
        "--transport",
        "http",
        "--redis",
        redis_url,
        "--redis-timeout-seconds",
        TIMEOUT,
        label="host",
    )


def wait_ready(server: AppServer) -> None:
    deadline = time.monotonic() + 20
    while httpx.get(server.base + "/readyz", timeout=10).status_code != 200:
        assert time.monotonic() < deadline, "not ready again after SIGCONT"
        time.sleep(0.2)


@pytest.mark.parametrize("body, what", [(ANSWER, "answer"), (CANCEL, "cancellation")])
def test_a_relay_redis_does_not_take_is_a_503(
    private_redis: PrivateRedis, body: dict[str, Any], what: str
) -> None:
    version = "2025-06-18"
    host = served(private_redis.url)
    assert private_redis.proc is not None
    try:
        session = open_session(host.url, version)
        private_redis.proc.send_signal(signal.SIGSTOP)
        try:
            refused = httpx.post(host.url, json=body, headers=headers(version, session), timeout=30)
        finally:
            private_redis.proc.send_signal(signal.SIGCONT)
        assert refused.status_code == 503, (refused.status_code, refused.text)
        assert refused.headers["retry-after"]
        error = refused.json()
        assert error["id"] is None and error["error"]["code"] == -32000, error
        message = error["error"]["message"]
        assert f"the {what} of request" in message or f"the {what} to request" in message
        assert "may not have reached the session's other workers" in message, message
        assert "send it again" in message, message
        # Once Redis answers again, the same message is taken: 202 as always.
        wait_ready(host)
        again = httpx.post(host.url, json=body, headers=headers(version, session), timeout=30)
        assert again.status_code == 202, again.text
        assert "may not have reached" in host.stderr(), host.stderr()
        assert host.proc.poll() is None
    finally:
        host.stop()


def test_a_batch_names_the_relay_that_did_not_land(private_redis: PrivateRedis) -> None:
    """2025-03-26 takes batches: the requests in it are answered as usual, and the answer
    that could not be relayed adds an error (id null) to the batch's reply."""
    version = "2025-03-26"
    host = served(private_redis.url)
    assert private_redis.proc is not None
    try:
        session = open_session(host.url, version)
        batch = [ANSWER, {"jsonrpc": "2.0", "id": 3, "method": "ping"}]
        private_redis.proc.send_signal(signal.SIGSTOP)
        try:
            reply = httpx.post(host.url, json=batch, headers=headers(version, session), timeout=30)
        finally:
            private_redis.proc.send_signal(signal.SIGCONT)
        assert reply.status_code == 200, reply.text
        parts = reply.json()
        assert {"jsonrpc": "2.0", "id": 3, "result": {}} in parts, parts
        errors = [p for p in parts if p.get("id") is None]
        assert len(errors) == 1 and errors[0]["error"]["code"] == -32000, parts
        message = errors[0]["error"]["message"]
        assert "the answer to request 'srv-9' may not have reached" in message, message
    finally:
        host.stop()


def test_a_write_no_client_waits_for_is_logged_with_what_was_lost(
    private_redis: PrivateRedis, caplog: pytest.LogCaptureFixture
) -> None:
    """Heartbeats of a session's use, a task's changes, the end of a stream: no client
    waits for them, so a write Redis does not take is logged at warning, naming what the
    shared state now lacks (before: "background Redis work failed", naming nothing)."""
    from jetmcp.settings import Settings
    from jetmcp.state.redis import RedisState

    async def scenario() -> None:
        state = RedisState(Settings(redis_url=private_redis.url, redis_timeout_seconds=0.5))
        try:
            assert await state.client.ping()
            assert private_redis.proc is not None
            private_redis.proc.send_signal(signal.SIGSTOP)
            try:
                state.spawn(state.run("touch", "s" * 43, 1000, "0"), "the last use of session s")
                await asyncio.gather(*state._tasks, return_exceptions=True)
                await asyncio.sleep(0)  # the done callbacks (the log) run next
            finally:
                private_redis.proc.send_signal(signal.SIGCONT)
        finally:
            await state.close()

    with caplog.at_level(logging.WARNING, logger="jetmcp.redis"):
        asyncio.run(scenario())
    lost = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(
        m.startswith("not stored in Redis: the last use of session s (") and "within 0.5 s" in m
        for m in lost
    ), lost


def call(url: str, session: str, method: str, params: dict[str, Any], id: int) -> Any:
    body = {"jsonrpc": "2.0", "id": id, "method": method, "params": params}
    reply = httpx.post(url, json=body, headers=headers(TASKS_VERSION, session), timeout=30)
    assert reply.status_code == 200, reply.text
    return reply.json()


TASKS_VERSION = "2025-11-25"


def test_a_task_final_state_redis_refused_lands_once_it_takes_writes(
    private_redis: PrivateRedis,
) -> None:
    """A task that ends while Redis refuses writes (``maxmemory`` with ``noeviction``): its
    final state is written again until Redis takes it. Before, the one write failed with a
    log line, and every worker reported the task "working" for as long as its worker
    lived. (A frozen Redis would not show it: the write sent before the freeze runs when
    Redis wakes.)"""
    host = served(private_redis.url)
    try:
        session = open_session(host.url, TASKS_VERSION)
        args = {"name": "slow_task", "arguments": {"text": "hi", "ms": 1500}, "task": {}}
        started = call(host.url, session, "tools/call", args, 1)
        task_id = started["result"]["task"]["taskId"]
        fill(private_redis.url)
        # What every other worker reads: the task's record in Redis.
        shared = redis.Redis.from_url(private_redis.url, socket_timeout=5)
        record = f"jetmcp:t:{task_id}"
        try:
            deadline = time.monotonic() + 20
            while f"task {task_id}" not in host.stderr():  # it ended, its write was refused
                assert time.monotonic() < deadline, host.stderr()
                time.sleep(0.2)
            assert shared.hget(record, "status") == b"working"
            shared.config_set("maxmemory", "0")
            deadline = time.monotonic() + 20
            while shared.hget(record, "status") != b"completed":
                assert time.monotonic() < deadline, host.stderr()
                time.sleep(0.2)
        finally:
            shared.config_set("maxmemory", "0")
            shared.close()
        assert f"task {task_id}'s final state, completed" in host.stderr(), host.stderr()
        result = call(host.url, session, "tasks/result", {"taskId": task_id}, 4)
        assert result["result"]["content"][0]["text"] == "hi", result
    finally:
        host.stop()
