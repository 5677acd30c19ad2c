"""Redis faults (issue 40 items 5 and 7), against real ``redis-server`` processes of the
test's own: one that refuses writes (``maxmemory`` reached with ``noeviction``) and one
frozen with SIGSTOP. Every server is a real ``jetmcp run`` process over HTTP.
"""

from __future__ import annotations

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
VERSION = "2025-06-18"
PREFIX = ("--redis-prefix", "faults:")


@pytest.fixture
def private_redis() -> Iterator[PrivateRedis]:
    server = PrivateRedis()
    try:
        yield server
    finally:
        server.stop()


def _headers(session: str | None) -> dict[str, str]:
    out = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": VERSION,
    }
    if session is not None:
        out["mcp-session-id"] = session
    return out


def post(url: str, body: Any, session: str | None = None) -> httpx.Response:
    with httpx.Client(timeout=30.0) as client:
        return client.post(url, headers=_headers(session), json=body)


def initialize(url: str) -> httpx.Response:
    return post(
        url,
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": VERSION,
                "capabilities": {},
                "clientInfo": {"name": "faults", "version": "0"},
            },
        },
    )


def test_subscribe_is_an_error_when_redis_refuses_writes(private_redis: PrivateRedis) -> None:
    """Item 5: it answered 200 ``{}`` and stored nothing."""
    host = AppServer(
        APP, "--transport", "http", "--redis", private_redis.url, *PREFIX, label="host"
    )
    try:
        opened = initialize(host.url)
        assert opened.status_code == 200, opened.text
        session = opened.headers["mcp-session-id"]
        fill(private_redis.url)
        sub = {"jsonrpc": "2.0", "id": 5, "method": "resources/subscribe"}
        answer = post(host.url, {**sub, "params": {"uri": "test://w"}}, session).json()
        assert "result" not in answer, answer
        assert answer["error"]["code"] == -32000, answer
        assert "not stored" in answer["error"]["message"], answer
        # An unsubscribe only removes: Redis takes it even when full, so it lands.
        unsub = {"jsonrpc": "2.0", "id": 8, "method": "resources/unsubscribe"}
        answer = post(host.url, {**unsub, "params": {"uri": "test://w"}}, session).json()
        assert answer.get("result") == {}, answer
        level = {"jsonrpc": "2.0", "id": 6, "method": "logging/setLevel"}
        answer = post(host.url, {**level, "params": {"level": "debug"}}, session).json()
        assert answer["error"]["code"] == -32000, answer
        # Once Redis takes writes again, the same subscribe lands.
        client = redis.Redis.from_url(private_redis.url, socket_timeout=5)
        client.config_set("maxmemory", "0")
        client.close()
        sub = {"jsonrpc": "2.0", "id": 7, "method": "resources/subscribe"}
        answer = post(host.url, {**sub, "params": {"uri": "test://w"}}, session).json()
        assert answer.get("result") == {}, answer
        stored = redis.Redis.from_url(private_redis.url, socket_timeout=5)
        assert stored.smembers(f"faults:s:{session}:subs") == {b"test://w"}
        stored.close()
        assert host.proc.poll() is None
    finally:
        host.stop()


def test_a_frozen_redis_answers_initialize_within_one_timeout(private_redis: PrivateRedis) -> None:
    """Item 7: with Redis stopped (SIGSTOP), ``initialize`` took 4.0 s for a 2 s timeout:
    the command and its retry on a fresh connection each had the full timeout. One deadline
    now covers both: the 503 comes after about the timeout, well before twice it."""
    timeout = 3.0
    host = AppServer(
        APP,
        "--transport",
        "http",
        "--redis",
        private_redis.url,
        "--redis-timeout-seconds",
        str(timeout),
        *PREFIX,
        label="host",
    )
    try:
        assert initialize(host.url).status_code == 200
        assert private_redis.proc is not None
        private_redis.proc.send_signal(signal.SIGSTOP)
        try:
            began = time.monotonic()
            frozen = initialize(host.url)
            took = time.monotonic() - began
        finally:
            private_redis.proc.send_signal(signal.SIGCONT)
        assert frozen.status_code == 503, frozen.text
        assert frozen.json()["error"]["code"] == -32000
        assert took < 2 * timeout - 1, took  # 2x the timeout was the bug
        assert took >= timeout - 0.5, took  # and it did wait for Redis, not give up early
        deadline = time.monotonic() + 15
        while initialize(host.url).status_code != 200:
            assert time.monotonic() < deadline, "never served again after SIGCONT"
            time.sleep(0.1)
    finally:
        host.stop()
