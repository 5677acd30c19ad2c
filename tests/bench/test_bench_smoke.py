"""``jetmcp bench`` smoke tests: short runs against real servers, checking counts and the
report's shape only. Timing goals live in bench/, never in assertions here."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from harness.client_app import (
    HERE,
    ROOT,
    ServerProcess,
    app_env,
    free_port,
    jetmcp_command,
    jetmcp_stdio,
    serving,
)

RUN_TIMEOUT = 60.0
ADD = ["--tool", "add", "--args", '{"a": 1, "b": 2}']


@pytest.fixture(scope="module")
def jet_http() -> Iterator[ServerProcess]:
    yield from serving()


def bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*jetmcp_command(), "bench", *args],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        env=app_env(),
        cwd=str(ROOT),
        check=False,
    )


def report(*args: str) -> dict[str, Any]:
    done = bench(*args, "--json")
    assert done.returncode == 0, done.stderr + done.stdout
    data: dict[str, Any] = json.loads(done.stdout)
    assert set(data) >= {
        "target",
        "transport",
        "revision",
        "connections",
        "batch",
        "mix",
        "seconds",
        "requests",
        "entries",
        "requests_per_s",
        "entries_per_s",
        "latency_ms",
        "errors",
    }
    # Today's keys are kept; new ones are added beside them.
    assert set(data["latency_ms"]) >= {"p50", "p99", "p99.9", "max", "mean"}
    assert data["errors"] == {"jsonrpc": 0, "tool": 0, "http": 0, "transport": 0, "missing": 0}
    return data


def test_one_second_over_http(jet_http: ServerProcess) -> None:
    data = report(jet_http.url, "--duration", "1", "--connections", "4", *ADD)
    assert data["transport"] == "http"
    assert data["requests"] > 0 and data["entries"] == data["requests"]
    assert data["mix"] == ['tools/call add {"a": 1, "b": 2}']
    lat = data["latency_ms"]
    assert 0 < lat["p50"] <= lat["p99"] <= lat["p99.9"] <= lat["max"]


def test_fixed_count_batches_and_a_mix(jet_http: ServerProcess) -> None:
    data = report(
        jet_http.url,
        "--requests",
        "40",
        "--connections",
        "3",
        "--revision",
        "2025-03-26",
        "--batch",
        "5",
        *ADD,
        "--method",
        "tools/list",
    )
    assert data["revision"] == "2025-03-26"
    assert (data["requests"], data["entries"], data["wire_batches"]) == (40, 200, True)
    assert data["mix"] == ['tools/call add {"a": 1, "b": 2}', "tools/list"]


def test_stdio_with_the_text_report() -> None:
    command = shlex.join(jetmcp_stdio())
    done = bench("--stdio", command, "--requests", "30", "--connections", "2", *ADD)
    assert done.returncode == 0, done.stderr
    assert "requests" in done.stdout and "p99.9" in done.stdout
    assert "30" in done.stdout.split("requests", 1)[1].split()[0]
    assert "100.0%" in done.stderr  # the progress bar's last frame


def test_batch_where_the_revision_has_none(jet_http: ServerProcess) -> None:
    done = bench(jet_http.url, "--requests", "5", "--revision", "2025-06-18", "--batch", "2", "-q")
    assert done.returncode != 0
    assert "does not take JSON-RPC batches at 2025-06-18" in done.stderr


def test_bad_arguments_are_named() -> None:
    done = bench("http://127.0.0.1:1/mcp", "--args", "{}")
    assert done.returncode == 2 and "--args must follow --tool or --method" in done.stderr
    done = bench("http://127.0.0.1:1/mcp", "--tool", "add", "--args", "[1]")
    assert done.returncode == 2 and "must be a JSON object" in done.stderr


@pytest.mark.skipif(
    shutil.which("node") is None
    or not (HERE / "clients" / "node_modules" / "@modelcontextprotocol" / "sdk").exists(),
    reason="needs node and the TypeScript SDK (npm ci in tests/clients)",
)
def test_drives_a_peer() -> None:
    port = free_port()
    node = shutil.which("node")
    assert node is not None
    server = ServerProcess([node, str(HERE / "clients" / "ts_server.mjs"), "http", str(port)], port)
    try:
        data = report(server.url, "--requests", "50", "--connections", "2", *ADD)
    finally:
        server.stop()
    assert (data["revision"], data["requests"], data["entries"]) == ("2025-11-25", 50, 50)
