"""``jetmcp bench --scenario/--users``: virtual users over HTTP (a legacy session and
2026-07-28) and stdio against jetmcp, and over HTTP against the official Python SDK."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from client.test_client_peers import SDK_APP
from harness.bench_support import ADD, bench, bench_json, serve_http, stdio_command
from harness.client_app import free_port
from harness.servers import ServerProcess

SCENARIO = {
    "users": 3,
    "steps": [
        {"initialize": {}},
        {"list": "tools"},
        {"call": "add", "arguments": {"a": 1, "b": 2}, "weight": 3},
        {"call": "add", "arguments": {"a": 5, "b": 5}, "weight": 1},
        {"think_ms": 5},
    ],
}


@pytest.fixture(scope="module")
def server() -> Iterator[ServerProcess]:
    yield from serve_http()


@pytest.fixture
def scenario(tmp_path: Path) -> Path:
    path = tmp_path / "users.json"
    path.write_text(json.dumps({**SCENARIO, "iterations": 4}))
    return path


def test_legacy_sessions_over_http(server: ServerProcess, scenario: Path) -> None:
    data = bench_json(
        server.url, "--scenario", str(scenario), "--revision", "2025-06-18", "-d", "20"
    )
    methods = data["methods"]
    # Each user initializes and lists once, then runs its 4 iterations (one call each).
    assert methods["initialize"]["count"] == 3 and methods["tools/list"]["count"] == 3
    assert methods["tools/call add"]["count"] == 3 * 4
    assert (data["users"], data["sessions"], data["iterations"]) == (3, 3, 12)
    assert data["failed"] == 0


def test_churn_modern_and_users_flag(server: ServerProcess, tmp_path: Path) -> None:
    path = tmp_path / "churn.json"
    path.write_text(json.dumps({**SCENARIO, "churn": 2, "iterations": 4}))
    data = bench_json(server.url, "--scenario", str(path), "--users", "2", "-d", "20")
    assert data["revision"] == "2026-07-28"
    # Two sessions per user: discover (2026-07-28's handshake) and the list run per session.
    assert data["methods"]["server/discover"]["count"] == 4 == data["sessions"]
    assert data["methods"]["tools/call add"]["count"] == 8
    assert data["failed"] == 0
    # --users without a file: initialize, then the mix.
    plain = bench_json(server.url, "--users", "2", "-d", "0.5", *ADD)
    assert plain["mode"] == "scenario" and plain["methods"]["tools/call add"]["count"] > 0


def test_stdio_users_and_yaml(tmp_path: Path) -> None:
    pytest.importorskip("yaml")
    path = tmp_path / "users.yaml"
    path.write_text(
        "users: 2\niterations: 3\nsteps:\n  - initialize: {}\n"
        "  - call: add\n    arguments: {a: 1, b: 2}\n"
    )
    data = bench_json(
        "--stdio", stdio_command(), "--transport", "stdio", "--scenario", str(path),
        "--revision", "2025-11-25", "-d", "30",
    )  # fmt: skip
    assert data["transport"] == "stdio" and data["methods"]["tools/call add"]["count"] == 6
    assert data["methods"]["initialize"]["count"] == 2 and data["failed"] == 0


def test_bad_scenarios_are_named(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    for body, message in (
        ({"steps": []}, "'steps' must be a non-empty list"),
        ({"steps": [{"initialize": {}}]}, "no 'call' step"),
        ({"steps": [{"call": "add", "weight": 0}]}, "'weight' is a whole number"),
        ({"steps": [{"jump": 1}]}, "unknown step"),
    ):
        path.write_text(json.dumps(body))
        done = bench("http://127.0.0.1:1/mcp", "--scenario", str(path))
        assert done.returncode == 2 and message in done.stderr, done.stderr
    path.write_text("{")
    done = bench("http://127.0.0.1:1/mcp", "--scenario", str(path))
    assert done.returncode == 2 and "not valid JSON" in done.stderr


@pytest.fixture(scope="module")
def sdk_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    app = tmp_path_factory.mktemp("sdk") / "sdk_peer.py"
    app.write_text(SDK_APP)
    port = free_port()
    server = ServerProcess([sys.executable, str(app), "http", str(port)], port)
    try:
        yield server
    finally:
        server.stop()


def test_official_sdk_server(sdk_server: ServerProcess, scenario: Path) -> None:
    closed = bench_json(sdk_server.url, "-n", "20", "-c", "2", *ADD)
    assert closed["requests"] == 20 and closed["failed"] == 0
    opened = bench_json(sdk_server.url, "--rate", "20", "-d", "1", *ADD)
    assert opened["schedule"]["sent"] == 20 and opened["failed"] == 0
    users = bench_json(
        sdk_server.url, "--scenario", str(scenario), "--revision", "2025-06-18", "-d", "30"
    )
    assert users["methods"]["tools/call add"]["count"] == 12 and users["failed"] == 0
