"""stdio delivers every reply, whole, whatever the pace of the client, in bounded memory.

- At EOF every reply still owed is written out and flushed before the process exits (a slow
  reader gets all of them), and the exit status is 1 when stdout broke.
- A client that does not read stdout stops the server reading stdin once
  ``--max-stdout-buffer-bytes`` of replies wait: its memory stays bounded.
- A ``subscriptions/listen`` read together with EOF still ends, with its final result.
- A line may hold exactly ``--max-body-bytes`` bytes, as an HTTP body may: one more is refused
  on both transports.

Each test runs real ``jetmcp run --transport stdio`` processes; every wait is bounded.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import select
import subprocess
import termios
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from harness.messages import assert_error, json_headers, modern_request, request
from harness.servers import (
    MODERN_APP,
    ROOT,
    STOP_TIMEOUT,
    HttpServer,
    StdioServer,
    jetmcp_command,
    server_env,
)

#: Generous bounds on whole scenarios (they take well under a second each when healthy).
RUN_TIMEOUT = 60.0


def stdio_command(*extra: str, app: str = "jetmcp.demo:app") -> list[str]:
    return [*jetmcp_command(), "run", app, "--transport", "stdio", *extra]


def spawn(stdin: Any, *extra: str, app: str = "jetmcp.demo:app") -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        stdio_command(*extra, app=app),
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=server_env(),
        cwd=ROOT,
        start_new_session=True,
    )


def wait_for(condition: Callable[[], bool], within: float) -> None:
    """Poll ``condition`` until it holds or ``within`` seconds pass (no failure either way)."""
    deadline = time.monotonic() + within
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)


def unread(fd: int) -> int:
    """Bytes waiting in the pipe behind ``fd``."""
    buf = bytearray(4)
    fcntl.ioctl(fd, termios.FIONREAD, buf)
    return int.from_bytes(buf, "little")


def read_late(proc: subprocess.Popen[bytes]) -> tuple[bytes, bytes]:
    """Everything the server writes, read by a client that starts reading only once the
    server has exited or filled the pipe (it cannot go on without the client then)."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    capacity = fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ)
    wait_for(lambda: proc.poll() is not None or unread(fd) >= capacity - 4096, RUN_TIMEOUT)
    try:
        return proc.communicate(timeout=RUN_TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def vm_rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def ping(request_id: Any) -> bytes:
    return json.dumps(request("ping", id=request_id), separators=(",", ":")).encode()


# --------------------------------------------------------------------------- every reply, whole


def test_a_slow_reader_gets_every_reply_after_eof(tmp_path: Path) -> None:
    count = 100_000
    lines = tmp_path / "pings.jsonl"
    lines.write_bytes(b"".join(ping(i) + b"\n" for i in range(count)))
    with lines.open("rb") as stdin:
        proc = spawn(stdin)
    out, err = read_late(proc)
    replies = out.splitlines()
    assert len(replies) == count, (len(replies), err[-2000:])
    assert replies[0] == b'{"jsonrpc":"2.0","id":0,"result":{}}'
    assert replies[-1] == b'{"jsonrpc":"2.0","id":%d,"result":{}}' % (count - 1)
    assert out.endswith(b"\n")
    assert proc.returncode == 0, err[-2000:]


def test_a_large_reply_is_written_whole_before_exit() -> None:
    text = "z" * 1_000_000
    call = request("tools/call", {"name": "echo", "arguments": {"text": text}}, id="big")
    proc = spawn(subprocess.PIPE)
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(call).encode())  # EOF right behind it, no newline
    proc.stdin.close()
    proc.stdin = None  # closed: nothing for communicate() to flush
    out, err = read_late(proc)
    assert out.endswith(b"\n") and out.count(b"\n") == 1, (len(out), err[-2000:])
    reply = json.loads(out)
    assert reply["id"] == "big"
    assert reply["result"]["content"][0]["text"] == text
    assert proc.returncode == 0, err[-2000:]


@pytest.mark.parametrize("source", ["file", "pipe"])
def test_exit_status_says_stdout_broke(tmp_path: Path, source: str) -> None:
    # printf ... | jetmcp run --transport stdio | head -c 100
    data = b"".join(ping(i) + b"\n" for i in range(20_000))
    if source == "file":
        lines = tmp_path / "pings.jsonl"
        lines.write_bytes(data)
        with lines.open("rb") as stdin:
            proc = spawn(stdin)
    else:
        proc = spawn(subprocess.PIPE)
        assert proc.stdin is not None
        feeder = proc.stdin

        def feed() -> None:
            with contextlib.suppress(BrokenPipeError):
                feeder.write(data)
                feeder.close()

        threading.Thread(target=feed, daemon=True).start()
    assert proc.stdout is not None and proc.stderr is not None
    try:
        head = proc.stdout.read(100)
        assert len(head) == 100
        proc.stdout.close()
        status = proc.wait(timeout=RUN_TIMEOUT)
        err = proc.stderr.read().decode("utf-8", "replace")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stderr.close()
    assert status == 1, err[-2000:]
    assert "stdout broke" in err


# --------------------------------------------------------------------------- backpressure


@pytest.mark.parametrize("bound", [None, 65536], ids=["default", "flag"])
def test_a_client_that_does_not_read_cannot_grow_the_server(bound: int | None) -> None:
    """Send up to 128 MiB of echo requests (replies as large) without reading stdout: the
    server must stop taking them, its RSS stay near where it began, and every request it
    took be answered once the client reads."""
    extra = () if bound is None else ("--max-stdout-buffer-bytes", str(bound))
    proc = spawn(subprocess.PIPE, *extra)
    assert proc.stdin is not None and proc.stdout is not None
    out_fd = proc.stdout.fileno()
    try:
        proc.stdin.write(ping("ready") + b"\n")
        proc.stdin.flush()
        ready = select.select([out_fd], [], [], RUN_TIMEOUT)[0]
        assert ready, "the server did not answer"
        assert os.read(out_fd, 4096).startswith(b'{"jsonrpc":"2.0","id":"ready"')
        before = vm_rss_bytes(proc.pid)

        line = (
            json.dumps(
                request("tools/call", {"name": "echo", "arguments": {"text": "e" * 65536}}, id=1)
            ).encode()
            + b"\n"
        )
        in_fd = proc.stdin.fileno()
        os.set_blocking(in_fd, False)
        sent = 0
        rest = memoryview(b"")
        stalled_since = time.monotonic()
        peak = before
        # Stops when 128 MiB went in, or when the server took nothing for a second.
        while sent < 128 << 20 and time.monotonic() - stalled_since < 1.0:
            if not rest:
                rest = memoryview(line)
            if not select.select([], [in_fd], [], 0.1)[1]:
                peak = max(peak, vm_rss_bytes(proc.pid))
                continue
            try:
                n = os.write(in_fd, rest)
            except BlockingIOError:
                continue
            rest = rest[n:]
            sent += n
            stalled_since = time.monotonic()
        time.sleep(0.3)  # let the server take in what it has read
        peak = max(peak, vm_rss_bytes(proc.pid))
        assert sent < 64 << 20, f"the server took {sent >> 20} MiB without its replies being read"
        assert peak - before < 64 << 20, (before, peak)

        # Now read: everything the server took is answered, and it exits cleanly.
        chunks: list[bytes] = []
        reader = threading.Thread(
            target=lambda: chunks.extend(iter(lambda: os.read(out_fd, 1 << 20), b"")),
            daemon=True,
        )
        reader.start()
        os.set_blocking(in_fd, True)
        proc.stdin.write(rest)  # finish the line that was under way
        proc.stdin.close()
        assert proc.wait(timeout=RUN_TIMEOUT) == 0
        reader.join(timeout=RUN_TIMEOUT)
        replies = b"".join(chunks).splitlines()
        assert len(replies) == (sent + len(rest)) // len(line)
        assert all(r.startswith(b'{"jsonrpc":"2.0","id":1,"result"') for r in replies)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        assert proc.stderr is not None
        proc.stderr.close()


# --------------------------------------------------------------------------- listen at EOF

LISTEN = modern_request(
    "subscriptions/listen", {"notifications": {"toolsListChanged": True}}, id="listen-eof"
)


def check_listen_ended(out: bytes) -> None:
    messages = [json.loads(line) for line in out.splitlines()]
    assert messages[0]["method"] == "notifications/subscriptions/acknowledged", messages
    final = messages[-1]
    assert final["id"] == "listen-eof", messages
    assert final["result"]["resultType"] == "complete"


@pytest.mark.parametrize("newline", [True, False], ids=["newline", "no-newline"])
def test_listen_and_eof_together_from_a_pipe(newline: bool) -> None:
    data = json.dumps(LISTEN).encode() + (b"\n" if newline else b"")
    done = subprocess.run(
        stdio_command(app=MODERN_APP),
        input=data,
        capture_output=True,
        timeout=RUN_TIMEOUT,
        env=server_env(),
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    check_listen_ended(done.stdout)


def test_listen_and_eof_together_from_a_file(tmp_path: Path) -> None:
    lines = tmp_path / "listen.jsonl"
    lines.write_bytes(json.dumps(LISTEN).encode() + b"\n")
    with lines.open("rb") as stdin:
        done = subprocess.run(
            stdio_command(app=MODERN_APP),
            stdin=stdin,
            capture_output=True,
            timeout=RUN_TIMEOUT,
            env=server_env(),
            cwd=ROOT,
            check=False,
        )
    assert done.returncode == 0, done.stderr[-2000:]
    check_listen_ended(done.stdout)


# --------------------------------------------------------------------------- the line limit

#: Small enough for one read, and larger than one (a line over several reads).
LIMITS = [1024, 200_000]


def padded_ping(size: int, request_id: int) -> bytes:
    """A ping of exactly ``size`` bytes (spaces before the closing brace)."""
    head = b'{"jsonrpc":"2.0","id":%d,"method":"ping"' % request_id
    return head + b" " * (size - len(head) - 1) + b"}"


@pytest.fixture(scope="module", params=LIMITS, ids=[str(n) for n in LIMITS])
def limited_stdio(request: pytest.FixtureRequest) -> Iterator[tuple[StdioServer, int]]:
    server = StdioServer("--max-body-bytes", str(request.param))
    try:
        yield server, request.param
    finally:
        server.stop()


@pytest.mark.parametrize("ending", [b"\n", b"\r\n"], ids=["lf", "crlf"])
def test_stdio_line_limit_is_exact(limited_stdio: tuple[StdioServer, int], ending: bytes) -> None:
    io, limit = limited_stdio
    io.sync()
    io.send_raw(padded_ping(limit, 1) + ending)
    assert io.read() == {"jsonrpc": "2.0", "id": 1, "result": {}}
    io.send_raw(padded_ping(limit + 1, 2) + ending)
    assert_error(io.read(), -32600, None)
    io.send_raw(padded_ping(limit + 2, 3) + ending)
    assert_error(io.read(), -32600, None)
    assert io.call(request("ping", id=4)) == {"jsonrpc": "2.0", "id": 4, "result": {}}


@pytest.mark.parametrize("limit", LIMITS)
def test_stdio_last_line_without_newline_has_the_same_limit(limit: int) -> None:
    for size, ok in ((limit, True), (limit + 1, False)):
        done = subprocess.run(
            stdio_command("--max-body-bytes", str(limit)),
            input=padded_ping(size, 9),
            capture_output=True,
            timeout=RUN_TIMEOUT,
            env=server_env(),
            cwd=ROOT,
            check=False,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        reply = json.loads(done.stdout)
        if ok:
            assert reply == {"jsonrpc": "2.0", "id": 9, "result": {}}
        else:
            assert_error(reply, -32600, None)


@pytest.mark.parametrize("limit", LIMITS)
def test_http_body_limit_is_exact(limit: int) -> None:
    server = HttpServer("--max-body-bytes", str(limit))
    try:
        with httpx.Client(timeout=STOP_TIMEOUT * 2) as client:
            at = client.post(server.url, content=padded_ping(limit, 1), headers=json_headers())
            assert at.status_code == 200, at.text
            assert at.json() == {"jsonrpc": "2.0", "id": 1, "result": {}}
            over = client.post(
                server.url, content=padded_ping(limit + 1, 2), headers=json_headers()
            )
            assert over.status_code == 413, over.text
    finally:
        server.stop()
