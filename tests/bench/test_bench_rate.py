"""``jetmcp bench --rate/--ramp/--find-max`` against real servers: the open model sends on
schedule, counts latency from the schedule (a stalled server shows the stall, a closed loop
hides it), and steps the rate. Short runs at low rates: counts and relations, no timing
goals (those are bench/load/loadgen.py's)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator

import pytest

from harness.bench_support import ADD, bench, bench_json, serve_http, stdio_command
from harness.servers import ServerProcess
from jetmcp.bench import schedule


@pytest.fixture(scope="module")
def server() -> Iterator[ServerProcess]:
    yield from serve_http()


def test_rate_sends_on_schedule_over_http(server: ServerProcess) -> None:
    data = bench_json(server.url, "--transport", "http", "--rate", "200", "--duration", "1.5", *ADD)
    assert data["mode"] == "open"
    schedule = data["schedule"]
    # 1.5 s at 200/s is 300 requests, each answered once.
    assert schedule["sent"] == 300 == data["requests"] == data["entries"]
    assert schedule["rate"] == 200.0 and schedule["achieved_rate"] == 200.0
    assert data["errors"] == {"jsonrpc": 0, "tool": 0, "http": 0, "transport": 0, "missing": 0}
    assert set(schedule["service_latency_ms"]) >= {"p50", "p99", "max"}
    # From the schedule is never shorter than from the send.
    assert data["latency_ms"]["max"] >= schedule["service_latency_ms"]["max"]
    assert sum(t["requests"] for t in data["timeline"]) == 300


def test_rate_over_stdio() -> None:
    data = bench_json(
        "--stdio", stdio_command(), "--transport", "stdio", "--rate", "100", "-n", "120",
        "-c", "2", *ADD,
    )  # fmt: skip
    assert (data["transport"], data["requests"], data["schedule"]["sent"]) == ("stdio", 120, 120)
    assert data["failed"] == 0


def test_a_stalled_server_shows_in_the_open_model_not_in_a_closed_loop(
    server: ServerProcess,
) -> None:
    """SIGSTOP the server for a second mid-run: every request due meanwhile waits the rest
    of the stall, so the corrected p99 covers most of it; a closed loop sends nothing while
    stalled, so only its few in-flight requests see the stall."""
    stall = 1.0

    def run_with_stall(*args: str) -> dict[str, object]:
        proc = subprocess.Popen(
            [*bench_cmd(), server.url, "-q", "--json", "-", "--duration", "4", *ADD, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env(),
        )
        time.sleep(2.0)
        os.killpg(server.proc.pid, signal.SIGSTOP)
        time.sleep(stall)
        os.killpg(server.proc.pid, signal.SIGCONT)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        import json

        data: dict[str, object] = json.loads(out)
        return data

    opened = run_with_stall("--rate", "200", "--connections", "4", "--max-connections", "8")
    closed = run_with_stall("--connections", "2")
    open_p99 = opened["latency_ms"]["p99"]  # type: ignore[index]
    closed_p99 = closed["latency_ms"]["p99"]  # type: ignore[index]
    assert open_p99 >= 0.5 * stall * 1000, opened
    assert closed["latency_ms"]["max"] >= 0.5 * stall * 1000  # type: ignore[index]
    assert closed_p99 < open_p99 / 2, (closed_p99, open_p99)
    # The stall made requests wait for a connection, which is not the generator's fault.
    assert opened["schedule"]["waited_for_connection"] > 0  # type: ignore[index]


def bench_cmd() -> list[str]:
    from harness.client_app import jetmcp_command

    return [*jetmcp_command(), "bench"]


def env() -> dict[str, str]:
    from harness.client_app import app_env

    return app_env()


def test_ramp_reports_each_step(server: ServerProcess) -> None:
    data = bench_json(server.url, "--ramp", "50:150:50", "--step-duration", "0.6", *ADD)
    assert data["mode"] == "ramp"
    steps = data["steps"]
    assert [s["rate"] for s in steps] == [50.0, 100.0, 150.0]
    assert [s["requests"] for s in steps] == [30, 60, 90]
    assert data["requests"] == 180
    assert all(s["held"] for s in steps)
    assert "max_rate" not in data


def test_find_max_reports_the_highest_rate_that_held(server: ServerProcess) -> None:
    # A tool that sleeps 20 ms behind 2 connections holds at most about 100/s: the SLO of
    # a p99 of 15 ms breaks on the first step whatever the machine, so the search walks down
    # and nothing holds; a loose one over the ramp holds its low rates.
    nap = ["--tool", "nap", "--args", '{"seconds": 0.02}']
    data = bench_json(
        server.url, "--find-max", "--ramp", "20:60:20", "--step-duration", "0.5",
        "--slo-p99", "2000", "-c", "2", *nap,
    )  # fmt: skip
    assert data["mode"] == "find-max"
    assert data["max_rate"] == max(s["rate"] for s in data["steps"] if s["held"])
    strict = bench(
        server.url, "-q", "--find-max", "--ramp", "100:200:100", "--step-duration", "0.5",
        "--slo-p99", "15", "-c", "2", "--max-connections", "2", *nap,
    )  # fmt: skip
    assert strict.returncode == 1, strict.stdout + strict.stderr
    assert "max rate   none held" in strict.stdout
    assert "p99" in strict.stdout.split("steps", 1)[1]


def test_find_max_search_without_a_ramp(server: ServerProcess) -> None:
    data = bench_json(
        server.url, "--find-max", "--step-duration", "0.4", "--slo-p99", "5000", "-c", "2", *ADD
    )
    assert data["closed_loop_probe_rate"] > 0
    assert 2 <= len(data["steps"]) <= schedule.MAX_STEPS
    assert data["max_rate"] is not None and data["max_rate"] > 0
    # No rate holds past what the server answers at all: a closed loop over many
    # connections, measured right after, is that capacity. A server that falls behind a
    # rate answers late and did not hold it (this search once reported 13x the server's
    # capacity, its steps growing until the test timed out). The probe's two connections
    # are no bound: they wait on each reply, and a fast server answers several times more
    # over the connections the search opens.
    capacity = bench_json(server.url, "--duration", "1", "-c", "32", *ADD)["requests_per_s"]
    assert data["max_rate"] <= 1.5 * capacity, (data["max_rate"], capacity)


def test_contradictory_modes_are_refused(server: ServerProcess) -> None:
    done = bench(server.url, "--rate", "10", "--ramp", "1:2:1", *ADD)
    assert done.returncode == 2 and "different modes" in done.stderr
    done = bench(server.url, "--ramp", "10", *ADD)
    assert done.returncode == 2 and "START:STOP:STEP" in done.stderr
    done = bench(server.url, "--rate", "0", *ADD)
    assert done.returncode == 2 and "above 0" in done.stderr
