"""``GET /healthz`` and ``GET /readyz`` on the MCP port (transports/health.py), on real
``jetmcp run`` processes: never behind auth or the Host check, readiness 503 while a real
``redis-server`` is frozen (SIGSTOP) and while the server drains after SIGTERM, and no MCP
session opened by a probe.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import redis

from harness.oauth_server import AuthorizationServer
from harness.redis_support import PrivateRedis
from harness.servers import AppServer

REDIS_APP = "tests.apps.redis_app:app"
AUTH_APP = "tests.apps.auth_app:app"
HTTP = ("--transport", "http")


def probe(server: AppServer, path: str, client: httpx.Client | None = None) -> httpx.Response:
    if client is not None:
        return client.get(server.base + path)
    return httpx.get(server.base + path, timeout=10.0)


@pytest.fixture
def private_redis() -> Iterator[PrivateRedis]:
    server = PrivateRedis()
    try:
        yield server
    finally:
        server.stop()


def test_probes_need_no_token_and_no_allowed_host() -> None:
    with AuthorizationServer() as auth:
        server = AppServer(
            AUTH_APP,
            *HTTP,
            "--auth-issuer",
            auth.issuer,
            "--auth-jwks-url",
            auth.jwks_url,
            label="guarded server",
        )
        try:
            assert httpx.post(server.url, json={}, timeout=10).status_code == 401
            live = probe(server, "/healthz")
            assert live.status_code == 200 and live.json() == {"status": "ok"}
            ready = probe(server, "/readyz")
            assert ready.status_code == 200 and ready.json() == {"status": "ready"}
            assert ready.headers["cache-control"] == "no-store"
            # A kubelet's probe names the pod's address as its Host.
            pod = httpx.get(server.base + "/readyz", headers={"host": "10.1.2.3:8000"})
            assert pod.status_code == 200
            head = httpx.head(server.base + "/healthz")
            assert head.status_code == 200 and head.content == b""
            post = httpx.post(server.base + "/healthz")
            assert post.status_code == 405 and post.headers["allow"] == "GET, HEAD"
        finally:
            server.stop()


def test_probes_open_no_session() -> None:
    server = AppServer(REDIS_APP, *HTTP, "--max-sessions", "1", label="server")
    try:
        with httpx.Client(timeout=10) as client:
            for _ in range(50):
                assert probe(server, "/readyz", client).status_code == 200
        init = httpx.post(
            server.url,
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "h", "version": "0"},
                },
            },
            headers={"accept": "application/json, text/event-stream"},
            timeout=10,
        )
        assert init.status_code == 200, init.text
    finally:
        server.stop()


def test_readiness_follows_a_frozen_redis(private_redis: PrivateRedis) -> None:
    server = AppServer(
        REDIS_APP,
        *HTTP,
        "--redis",
        private_redis.url,
        "--redis-timeout-seconds",
        "2",
        label="server",
    )
    try:
        assert probe(server, "/readyz").status_code == 200
        assert private_redis.proc is not None
        private_redis.proc.send_signal(signal.SIGSTOP)
        try:
            deadline = time.monotonic() + 15
            while (answer := probe(server, "/readyz")).status_code == 200:
                assert time.monotonic() < deadline, "still ready with Redis frozen"
                time.sleep(0.2)
            assert answer.status_code == 503 and answer.json() == {"status": "unavailable"}
            # Liveness is the worker's own: it holds while Redis is frozen.
            assert probe(server, "/healthz").status_code == 200
        finally:
            private_redis.proc.send_signal(signal.SIGCONT)
        deadline = time.monotonic() + 15
        while probe(server, "/readyz").status_code != 200:
            assert time.monotonic() < deadline, "not ready again after SIGCONT"
            time.sleep(0.2)
    finally:
        server.stop()


def test_readiness_is_503_while_draining() -> None:
    server = AppServer(REDIS_APP, *HTTP, "--shutdown-grace-seconds", "10", label="server")
    answers: list[Any] = []

    def slow_call() -> None:
        body = {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": "quiet", "arguments": {"ms": 3000}},
        }
        headers = {"accept": "application/json, text/event-stream"}
        answers.append(httpx.post(server.url, json=body, headers=headers, timeout=20))

    try:
        with httpx.Client(timeout=10) as client:
            assert probe(server, "/readyz", client).status_code == 200
            caller = threading.Thread(target=slow_call)
            caller.start()
            time.sleep(0.5)
            server.proc.send_signal(signal.SIGTERM)
            time.sleep(0.5)
            # Draining: never ready again. Granian stops accepting at once (refused); an
            # engine that still takes the request answers 503 "draining".
            try:
                draining = probe(server, "/readyz", client)
            except httpx.TransportError:
                pass
            else:
                assert draining.status_code == 503, draining.text
                assert draining.json() == {"status": "draining"}
            caller.join(timeout=20)
        assert answers and answers[0].status_code == 200, answers
        assert server.proc.wait(timeout=20) == 0
    finally:
        server.stop()


def ping_calls(url: str) -> int:
    client = redis.Redis.from_url(url, socket_timeout=5)
    try:
        stats: dict[str, Any] = client.info("commandstats")
        return int(stats.get("cmdstat_ping", {}).get("calls", 0))
    finally:
        client.close()


@pytest.mark.parametrize("cache", ["0", "60"])
def test_readiness_cache_is_a_setting(private_redis: PrivateRedis, cache: str) -> None:
    """``--ready-cache-seconds``: 0 sends one PING per probe, 60 at most one for all of
    them (before, 1 s was a constant and the flag was refused)."""
    server = AppServer(
        REDIS_APP,
        *HTTP,
        "--redis",
        private_redis.url,
        "--ready-cache-seconds",
        cache,
        "--ready-ping-seconds",
        "0.5",
        label="server",
    )
    try:
        with httpx.Client(timeout=10) as client:
            assert probe(server, "/readyz", client).status_code == 200
            before = ping_calls(private_redis.url)
            for _ in range(20):
                assert probe(server, "/readyz", client).status_code == 200
            pings = ping_calls(private_redis.url) - before
        # The pub/sub link's own keepalive PING (one every 5 s) may fall in the window.
        if cache == "0":
            assert pings >= 20, pings
        else:
            assert pings <= 2, pings
    finally:
        server.stop()


@pytest.mark.parametrize(
    "flag, value",
    [
        ("--ready-cache-seconds", "-1"),
        ("--ready-cache-seconds", "61"),
        ("--ready-ping-seconds", "0"),
        ("--ready-ping-seconds", "31"),
        ("--ready-ping-seconds", "soon"),
    ],
)
def test_readiness_settings_refuse_values_out_of_bounds(
    flag: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from jetmcp.run.cli import _parser

    with pytest.raises(SystemExit) as stop:
        _parser().parse_args(["run", flag, value])
    assert stop.value.code == 2
    assert flag in capsys.readouterr().err


def test_readiness_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from jetmcp.run.cli import _parser, _settings

    monkeypatch.setenv("JETMCP_READY_CACHE_SECONDS", "5")
    monkeypatch.setenv("JETMCP_READY_PING_SECONDS", "0.25")
    got = _settings(_parser().parse_args(["run"]))
    assert (got.ready_cache_seconds, got.ready_ping_seconds) == (5.0, 0.25)
