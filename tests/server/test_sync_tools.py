"""Synchronous tools never stall other requests (issue 40, item 3).

Real ``jetmcp run`` processes over HTTP and stdio: a 2 s ``time.sleep`` tool in flight while
20 concurrent ``add`` calls are answered (all of them before it: an ordering, not a timing
bound); a sync tool's ``timeout`` and ``--request-timeout-seconds`` answered while the thread
runs on; promotion to inline and demotion back seen in the log and in the thread that runs
the tool; a promoted tool's reply byte-identical to the pool's; an adapted SDK server alike.
"""

from __future__ import annotations

import concurrent.futures
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from harness.http import post
from harness.messages import (
    assert_error,
    assert_result,
    encode,
    modern_headers,
    modern_request,
    request,
    tool_text,
)
from harness.servers import HttpServer, StdioServer, jetmcp_command

APP = "tests.apps.sync_app:app"
SDK_APP = "tests.apps.sync_sdk_app:mcp"
#: How long a wait for a log line may last before the test fails (a bound, not a check).
LOG_WAIT = 15.0
#: Flags of a server that promotes after 3 calls of at most 200 ms (a generous bound).
PROMOTE_FAST = (
    "--log-level",
    "info",
    "--sync-tool-promote-after",
    "3",
    "--sync-tool-fast-ms",
    "200",
)
#: Replies to wait for: long enough for a loaded machine.
READ = 30.0


def call(name: str, arguments: dict[str, Any], id: Any = None) -> dict[str, Any]:
    return request("tools/call", {"name": name, "arguments": arguments}, id=id)


def wait_for_log(stderr: Any, text: str) -> str:
    """The server's stderr once it holds ``text`` (fails after :data:`LOG_WAIT`)."""
    deadline = time.monotonic() + LOG_WAIT
    while True:
        seen: str = stderr()
        if text in seen:
            return seen
        if time.monotonic() > deadline:
            raise AssertionError(f"{text!r} never logged; stderr:\n{seen}")
        time.sleep(0.02)


@pytest.fixture(params=[APP, SDK_APP], ids=["jetmcp", "sdk2"])
def http_app(request: pytest.FixtureRequest) -> Iterator[HttpServer]:
    server = HttpServer("--log-level", "info", app=request.param)
    try:
        yield server
    finally:
        server.stop()


def test_http_slow_sync_tool_holds_up_nothing_but_itself(http_app: HttpServer) -> None:
    finished: list[str] = []
    lock = threading.Lock()
    replies: dict[str, dict[str, Any]] = {}

    def run(key: str, body: dict[str, Any], client: httpx.Client) -> None:
        resp = post(client, http_app.url, body)
        with lock:
            replies[key] = resp.json()
            finished.append(key)

    with httpx.Client(timeout=READ) as client:
        slow = threading.Thread(target=run, args=("slow", call("sleep", {"seconds": 2}), client))
        slow.start()
        wait_for_log(http_app.stderr, "sleep 2")
        adds = [
            threading.Thread(
                target=run, args=(f"add{i}", call("add", {"a": i, "b": 1}, id=i), client)
            )
            for i in range(20)
        ]
        for t in adds:
            t.start()
        for t in adds:
            t.join(READ)
        slow.join(READ)
    assert len(finished) == 21, finished
    # Every add answered before the slow call did.
    assert finished[-1] == "slow", finished
    for i in range(20):
        assert tool_text(assert_result(replies[f"add{i}"], i)) == str(i + 1)
    assert tool_text(replies["slow"]["result"]).startswith("slept 2")


def test_stdio_slow_sync_tool_holds_up_nothing_but_itself() -> None:
    server = StdioServer("--log-level", "info", app=APP)
    try:
        server.initialize("2025-06-18")
        server.send(call("sleep", {"seconds": 2}, id="slow"))
        wait_for_log(server.stderr, "sleep 2")
        for i in range(20):
            server.send(call("add", {"a": i, "b": 1}, id=i))
        order = [server.read(READ) for _ in range(21)]
        # The adds run in pool threads until promoted: their replies may come in any order.
        assert sorted(m["id"] for m in order[:20]) == list(range(20)), order
        assert order[20]["id"] == "slow", order
        for msg in order[:20]:
            assert tool_text(assert_result(msg, msg["id"])) == str(msg["id"] + 1)
    finally:
        server.stop()


def test_sync_tool_timeouts_answer_while_the_thread_runs_on() -> None:
    server = HttpServer("--log-level", "info", "--request-timeout-seconds", "0.5", app=APP)
    try:
        with httpx.Client(timeout=READ) as client:
            # The tool's own timeout (0.5 s) and then the server's request timeout.
            for name, args in (("stuck", {"seconds": 3}), ("sleep", {"seconds": 3})):
                reply = post(client, server.url, call(name, args, id=name)).json()
                assert_error(reply, -32001, name)
                # Answered while its thread still runs (its result is dropped later).
                assert f"sync tool {name}: a call nobody waited" not in server.stderr()
                wait_for_log(server.stderr, f"sync tool {name}: its caller stopped waiting")
            # Meanwhile other calls are answered.
            reply = post(client, server.url, call("add", {"a": 2, "b": 3}, id=7)).json()
            assert tool_text(assert_result(reply, 7)) == "5"
        log = wait_for_log(server.stderr, "sync tool sleep: a call nobody waited for")
        assert "sync tool stuck: a call nobody waited for any more finished" in log
    finally:
        server.stop()


def test_promotion_and_demotion_are_logged_and_change_the_thread() -> None:
    server = HttpServer(*PROMOTE_FAST, app=APP)
    try:
        with httpx.Client(timeout=READ) as client:

            def text(name: str, args: dict[str, Any]) -> str:
                return tool_text(
                    assert_result(post(client, server.url, call(name, args, 1)).json(), 1)
                )

            # Pinned: one always in a pool thread, one always on the loop's.
            assert all(text("where", {}).startswith("jetmcp-sync-tool") for _ in range(5))
            assert not any(text("where_inline", {}).startswith("jetmcp-sync") for _ in range(5))
            assert "sync tool where promoted" not in server.stderr()
            for _ in range(3):
                text("maybe_slow", {"seconds": 0, "tag": "t"})
            wait_for_log(server.stderr, "sync tool maybe_slow promoted to run inline")
            text("maybe_slow", {"seconds": 0.5, "tag": "t"})
            log = wait_for_log(server.stderr, "sync tool maybe_slow demoted to the thread pool")
            assert log.count("sync tool maybe_slow promoted") == 1
            assert log.count("sync tool maybe_slow demoted") == 1
    finally:
        server.stop()


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_promoted_tool_answers_byte_identically(era: str) -> None:
    server = HttpServer(*PROMOTE_FAST, app=APP)
    try:
        with httpx.Client(timeout=READ) as client:

            def raw(name: str, args: dict[str, Any]) -> bytes:
                params = {"name": name, "arguments": args}
                if era == "modern":
                    body = modern_request("tools/call", params, id=5)
                    headers = modern_headers("tools/call", name)
                    resp = client.post(server.url, content=encode(body), headers=headers)
                else:
                    resp = post(client, server.url, request("tools/call", params, id=5))
                assert resp.status_code == 200, resp.text
                return resp.content

            for name, args in (
                ("add", {"a": 40, "b": 2}),
                ("maybe_slow", {"seconds": 0, "tag": "é\u2028"}),
            ):
                pooled = raw(name, args)
                assert f"sync tool {name} promoted" not in server.stderr()
                for _ in range(3):
                    raw(name, args)
                wait_for_log(server.stderr, f"sync tool {name} promoted to run inline")
                assert raw(name, args) == pooled
    finally:
        server.stop()


def test_the_pool_has_the_threads_it_is_given() -> None:
    server = HttpServer("--sync-tool-threads", "2", app=APP)
    try:
        with httpx.Client(timeout=READ) as client:

            def name(i: int) -> str:
                reply = post(client, server.url, call("where", {}, id=i)).json()
                return tool_text(assert_result(reply, i))

            with concurrent.futures.ThreadPoolExecutor(8) as pool:
                names = set(pool.map(name, range(24)))
        assert names <= {"jetmcp-sync-tool_0", "jetmcp-sync-tool_1"}, names
    finally:
        server.stop()


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--sync-tool-threads", "-1"),
        ("--sync-tool-promote-after", "-1"),
        ("--sync-tool-fast-ms", "-0.5"),
        ("--sync-tool-fast-ms", "nan"),
        ("--sync-tool-fast-ms", "inf"),
    ],
)
def test_bad_pool_settings_are_refused(flag: str, value: str) -> None:
    done = subprocess.run(
        [*jetmcp_command(), "run", APP, "--transport", "stdio", flag, value],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=READ,
        check=False,
    )
    assert done.returncode == 2, done
    assert flag in done.stderr.decode(), done.stderr


def test_a_thread_stuck_in_a_tool_does_not_keep_the_server_from_exiting() -> None:
    """stdio: stdin closed while a sync tool sleeps for an hour; once the 1 s grace is over
    the call is answered -32000 and the process exits (its pool threads are daemons)."""
    server = StdioServer("--shutdown-grace-seconds", "1", app=APP)
    try:
        server.initialize("2025-06-18")
        server.send(call("sleep", {"seconds": 3600}, id="stuck"))
        wait_for_log(server.stderr, "sleep 3600")
        server.close_stdin()
        assert_error(server.read(READ), -32000, "stuck")
        # The thread it left running makes the exit status non-zero, with a line saying so.
        assert server.wait(READ) == 1
        assert "1 synchronous tool call(s) still running in threads" in server.stderr()
    finally:
        server.stop()


@pytest.mark.parametrize("engine", ["native", "granian"])
def test_http_a_thread_abandoned_at_exit_makes_the_exit_status_non_zero(engine: str) -> None:
    """SIGTERM while a sync tool sleeps for an hour: the call is answered -32000 once the
    1 s grace is over, and the worker that abandons the thread exits non-zero, so ``jetmcp
    run`` does (1) and logs it; a server stopped with nothing running still exits 0."""
    idle = HttpServer("--shutdown-grace-seconds", "1", app=APP, engine=engine)
    try:
        idle.proc.send_signal(signal.SIGTERM)
        assert idle.proc.wait(READ) == 0
    finally:
        idle.stop()
    server = HttpServer(
        "--log-level", "info", "--shutdown-grace-seconds", "1", app=APP, engine=engine
    )
    try:
        with concurrent.futures.ThreadPoolExecutor(1) as pool, httpx.Client(timeout=READ) as c:
            stuck = pool.submit(post, c, server.url, call("sleep", {"seconds": 3600}, "stuck"))
            wait_for_log(server.stderr, "sleep 3600")
            server.proc.send_signal(signal.SIGTERM)
            assert_error(stuck.result(READ).json(), -32000, "stuck")
        assert server.proc.wait(READ) == 1
        log = server.stderr()
        assert "1 synchronous tool call(s) still running in threads" in log, log
        if engine == "granian":
            # Granian's supervision counts the worker's exit as unclean (which of its lines
            # is Granian's timing: "died while stopping: status 1" or "had to be killed").
            assert "jetmcp.run: worker-1 (pid" in log, log
    finally:
        server.stop()
