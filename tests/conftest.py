"""Black-box fixtures: real ``jetmcp run`` processes, spoken to over sockets and pipes.

Every wait is bounded: a server that does not come up, or a reply that never comes, fails the
test with what the process wrote to stderr instead of hanging the suite.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

#: Every legacy revision, oldest first, and the two halves of seed 000's table.
REVISIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
BATCHING = ("2024-11-05", "2025-03-26")
NO_BATCHING = ("2025-06-18", "2025-11-25")
#: The revision of an HTTP request with neither session nor header, and of stdio before
#: ``initialize``.
DEFAULT_REVISION = "2025-03-26"

MAX_SAFE = 2**53 - 1
START_TIMEOUT = 20.0
STOP_TIMEOUT = 5.0
READ_TIMEOUT = 5.0
#: How long "nothing was written" is watched for.
SILENCE_WINDOW = 0.3

_counter = itertools.count(1)
#: The repository: test apps (``tests.apps.*``) are importable from here.
ROOT = Path(__file__).resolve().parent.parent


def jetmcp_command() -> list[str]:
    """The ``jetmcp`` console script of this interpreter's environment (or ``-m jetmcp``)."""
    script = Path(sys.executable).with_name("jetmcp")
    if script.exists():
        return [str(script)]
    found = shutil.which("jetmcp")
    if found is not None and Path(found).parent == Path(sys.executable).parent:
        return [found]
    return [sys.executable, "-m", "jetmcp"]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def unique_id(prefix: str = "r") -> str:
    return f"{prefix}{next(_counter)}"


def _server_env() -> dict[str, str]:
    """This environment with the repository on ``PYTHONPATH``, so ``tests.apps.*`` import."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


# --------------------------------------------------------------------------- processes


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the process group we started, then SIGKILL it after a bounded wait."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=STOP_TIMEOUT)
    # Granian workers share the group; make sure none outlives its master.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


class HttpServer:
    """A ``jetmcp run --transport http`` process on a free port of 127.0.0.1, serving
    ``app`` (the demo app unless told)."""

    def __init__(self, *extra: str, app: str = "jetmcp.demo:app") -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.url = f"{self.base}/mcp"
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 (lives as long as the process)
        self._stdout = tempfile.TemporaryFile()  # noqa: SIM115 (lives as long as the process)
        args = [
            *jetmcp_command(),
            "run",
            app,
            "--transport",
            "http",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            *extra,
        ]
        self.proc = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=self._stdout,
            stderr=self._stderr,
            env=_server_env(),
            cwd=ROOT,
            start_new_session=True,
        )
        self._wait_ready()

    def stderr(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read().decode("utf-8", "replace")

    def stdout(self) -> bytes:
        """Everything the server wrote to stdout (an HTTP server should write nothing)."""
        self._stdout.seek(0)
        return self._stdout.read()

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"jetmcp http server exited with {self.proc.returncode}:\n{self.stderr()}"
                )
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    pass
            except OSError:
                time.sleep(0.05)
                continue
            # The port answers; make sure the app (not only the listener) is up.
            try:
                httpx.post(
                    self.url,
                    content=b'{"jsonrpc":"2.0","id":0,"method":"ping"}',
                    headers=json_headers(),
                    timeout=2.0,
                )
                return
            except httpx.HTTPError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError(
            f"jetmcp http server did not answer in {START_TIMEOUT}s:\n{self.stderr()}"
        )

    def stop(self) -> None:
        _stop(self.proc)
        self._stderr.close()
        self._stdout.close()


class AppServer:
    """``jetmcp run APP --host 127.0.0.1 --port N *extra`` on a free port, up once it answers a
    ping; ``label`` names it in the errors when it exits or does not come up."""

    def __init__(self, app: str, *extra: str, label: str) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.url = f"{self.base}/mcp"
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 (lives as long as the process)
        self.proc = subprocess.Popen(
            [
                *jetmcp_command(),
                "run",
                app,
                "--transport",
                "http",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                *extra,
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self._stderr,
            env=_server_env(),
            cwd=ROOT,
            start_new_session=True,
        )
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the {label} exited:\n{self.stderr()}")
            try:
                httpx.post(
                    self.url,
                    content=b'{"jsonrpc":"2.0","id":0,"method":"ping"}',
                    headers={"content-type": "application/json"},
                    timeout=1.0,
                )
                return
            except httpx.HTTPError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"the {label} did not come up") from None
                time.sleep(0.05)

    def stderr(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read().decode("utf-8", "replace")

    def stop(self) -> None:
        _stop(self.proc)
        self._stderr.close()


@pytest.fixture(scope="session")
def http_server() -> Iterator[HttpServer]:
    """The default server: sessions optional, default limits."""
    server = HttpServer()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def http_url(http_server: HttpServer) -> str:
    return http_server.url


@pytest.fixture(scope="session")
def strict_server() -> Iterator[HttpServer]:
    """``--require-session`` and a 1 KiB body limit, so one extra process covers both."""
    server = HttpServer("--require-session", "--max-body-bytes", "1024")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def strict_url(strict_server: HttpServer) -> str:
    return strict_server.url


@pytest.fixture(scope="session")
def stateless_url() -> Iterator[str]:
    """``--stateless``: no sessions are minted; the header alone decides the revision."""
    server = HttpServer("--stateless")
    try:
        yield server.url
    finally:
        server.stop()


# --------------------------------------------------------------------------- HTTP helpers


def json_headers(
    version: str | None = None,
    session: str | None = None,
    **extra: str,
) -> dict[str, str]:
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }
    if version is not None:
        headers["MCP-Protocol-Version"] = version
    if session is not None:
        headers["Mcp-Session-Id"] = session
    headers.update(extra)
    return headers


def encode(body: Any) -> bytes:
    """Bytes are sent as they are; anything else is compact JSON."""
    if isinstance(body, bytes):
        return body
    return json.dumps(body, separators=(",", ":")).encode()


@pytest.fixture(scope="session")
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=10.0) as c:
        yield c


def post(
    client: httpx.Client,
    url: str,
    body: Any,
    *,
    version: str | None = None,
    session: str | None = None,
    headers: dict[str, str] | None = None,
) -> httpx.Response:
    """POST raw bytes (or JSON-encoded ``body``) with the MCP headers."""
    h = json_headers(version, session)
    if headers:
        h.update(headers)
    return client.post(url, content=encode(body), headers=h)


def request(method: str, params: dict[str, Any] | None = None, id: Any = None) -> dict[str, Any]:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": unique_id() if id is None else id}
    msg["method"] = method
    if params is not None:
        msg["params"] = params
    return msg


def notification(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        msg["params"] = params
    return msg


def initialize_request(version: str, id: Any = None) -> dict[str, Any]:
    return request(
        "initialize",
        {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "jetmcp-tests", "version": "0"},
        },
        id=id,
    )


def open_session(client: httpx.Client, url: str, version: str) -> str:
    """``initialize`` at ``version`` then ``notifications/initialized``; the session id."""
    resp = post(client, url, initialize_request(version))
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["result"]["protocolVersion"] == version, body
    session = resp.headers.get("mcp-session-id")
    assert session, f"initialize opened no session: {resp.headers}"
    done = post(client, url, notification("notifications/initialized"), session=session)
    assert done.status_code == 202, done.text
    return session


def assert_refused_batch(resp: httpx.Response) -> None:
    """Seed 000: a refused (or empty) array is one -32600 with id null, at HTTP 200."""
    assert resp.status_code == 200, (resp.status_code, resp.text)
    body = resp.json()
    assert isinstance(body, dict), body
    assert body["jsonrpc"] == "2.0"
    assert body["id"] is None
    assert body["error"]["code"] == -32600, body
    assert "result" not in body


def assert_error(msg: dict[str, Any], code: int, id: Any = None) -> None:
    assert msg.get("jsonrpc") == "2.0", msg
    assert "error" in msg and "result" not in msg, msg
    assert msg["error"]["code"] == code, msg
    assert isinstance(msg["error"]["message"], str)
    assert msg["id"] == id, msg


def assert_result(msg: dict[str, Any], id: Any) -> dict[str, Any]:
    assert msg.get("jsonrpc") == "2.0", msg
    assert "error" not in msg, msg
    assert msg["id"] == id, msg
    result = msg["result"]
    assert isinstance(result, dict)
    return result


def tool_text(result: dict[str, Any]) -> str:
    return "".join(c["text"] for c in result["content"] if c.get("type") == "text")


# --------------------------------------------------------------------------- 2026-07-28

MODERN = "2026-07-28"
META_PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"
#: The app of the 2026-07-28 wire tests.
MODERN_APP = "tests.apps.modern_app:app"


def modern_meta(
    version: str = MODERN, capabilities: dict[str, Any] | None = None, **extra: Any
) -> dict[str, Any]:
    """The ``_meta`` every 2026-07-28 request carries (``extra`` adds keys)."""
    meta: dict[str, Any] = {
        META_PROTOCOL_VERSION: version,
        META_CLIENT_CAPABILITIES: capabilities if capabilities is not None else {},
        META_CLIENT_INFO: {"name": "jetmcp-tests", "version": "0"},
    }
    meta.update(extra)
    return meta


def modern_request(
    method: str,
    params: dict[str, Any] | None = None,
    id: Any = None,
    *,
    meta: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A 2026-07-28 request: ``params`` with ``_meta`` (``modern_meta()`` unless given)."""
    body = dict(params or {})
    body["_meta"] = meta if meta is not None else modern_meta()
    return request(method, body, id=id)


#: What ``Mcp-Name`` repeats, per 2026-07-28 method.
NAME_PARAMS = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}


def modern_routing(body: Any) -> dict[str, str]:
    """The ``Mcp-Method``/``Mcp-Name`` headers a 2026-07-28 client derives from a single
    message (none for a batch or a message without a method)."""
    if not isinstance(body, dict) or not isinstance(body.get("method"), str):
        return {}
    headers = {"Mcp-Method": body["method"]}
    field = NAME_PARAMS.get(body["method"])
    value = (body.get("params") or {}).get(field) if field else None
    if isinstance(value, str):
        headers["Mcp-Name"] = value
    return headers


def raw_http_post(url: str, body: Any, headers: dict[str, str]) -> socket.socket:
    """Send one POST to ``url`` on a socket of our own, headers byte for byte (httpx refuses
    padded values), so the caller decides when the client leaves."""
    data = encode(body)
    split = urlsplit(url)
    head = [
        f"POST {split.path} HTTP/1.1",
        f"Host: {split.netloc}",
        f"Content-Length: {len(data)}",
        *(f"{k}: {v}" for k, v in headers.items()),
    ]
    sock = socket.create_connection((split.hostname, split.port), timeout=READ_TIMEOUT)
    sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + data)
    return sock


def modern_headers(
    method: str | None = None, name: str | None = None, version: str = MODERN, **extra: str
) -> dict[str, str]:
    """The HTTP headers of a 2026-07-28 request (``Mcp-Method``/``Mcp-Name`` when given)."""
    headers = json_headers(version)
    if method is not None:
        headers["Mcp-Method"] = method
    if name is not None:
        headers["Mcp-Name"] = name
    headers.update(extra)
    return headers


# --------------------------------------------------------------------------- stdio


class StdioServer:
    """``jetmcp run --transport stdio`` on pipes, serving ``app`` (the demo app unless
    told); every read has a deadline."""

    def __init__(self, *extra: str, app: str = "jetmcp.demo:app") -> None:
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 (lives as long as the process)
        self.proc = subprocess.Popen(
            [*jetmcp_command(), "run", app, "--transport", "stdio", *extra],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=_server_env(),
            cwd=ROOT,
            start_new_session=True,
        )
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        #: Every stdout line, for checks that stdout carries only JSON-RPC.
        self.transcript: list[bytes] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in iter(self.proc.stdout.readline, b""):
            self.transcript.append(line)
            self.lines.put(line)
        self.lines.put(None)

    def stderr(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read().decode("utf-8", "replace")

    def send_raw(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, message: Any) -> None:
        """One line: bytes as they are (a newline added), anything else as compact JSON."""
        self.send_raw(encode(message) + b"\n")

    def read_line(self, timeout: float = READ_TIMEOUT) -> bytes:
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(
                f"no stdout line within {timeout}s; stderr:\n{self.stderr()}"
            ) from None
        if line is None:
            self.lines.put(None)
            raise AssertionError(
                f"stdout closed (exit {self.proc.poll()}); stderr:\n{self.stderr()}"
            )
        assert line.endswith(b"\n"), line
        return line

    def read(self, timeout: float = READ_TIMEOUT) -> Any:
        return json.loads(self.read_line(timeout))

    def call(self, message: Any) -> Any:
        self.send(message)
        return self.read()

    def sync(self) -> None:
        """Discard anything pending: ping, and read up to (and including) its reply."""
        ping_id = unique_id("sync")
        self.send(request("ping", id=ping_id))
        while True:
            msg = self.read()
            if isinstance(msg, dict) and msg.get("id") == ping_id:
                return

    def assert_silent(self, window: float = SILENCE_WINDOW) -> None:
        """Nothing is written within ``window``, and the next line answers a follow-up ping."""
        try:
            line = self.lines.get(timeout=window)
        except queue.Empty:
            pass
        else:
            raise AssertionError(f"expected no output, got {line!r}")
        ping_id = unique_id("ping")
        reply = self.call(request("ping", id=ping_id))
        assert reply == {"jsonrpc": "2.0", "id": ping_id, "result": {}}, reply

    def initialize(self, version: str) -> dict[str, Any]:
        init_id = unique_id("init")
        reply = self.call(initialize_request(version, id=init_id))
        result = assert_result(reply, init_id)
        assert result["protocolVersion"] == version, result
        self.send(notification("notifications/initialized"))
        return result

    def close_stdin(self) -> None:
        assert self.proc.stdin is not None
        with contextlib.suppress(BrokenPipeError):
            self.proc.stdin.close()

    def wait(self, timeout: float = STOP_TIMEOUT) -> int:
        return self.proc.wait(timeout=timeout)

    def stop(self) -> None:
        self.close_stdin()
        try:
            self.proc.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            _stop(self.proc)
        self._reader.join(timeout=STOP_TIMEOUT)
        self._stderr.close()


@pytest.fixture
def stdio() -> Iterator[StdioServer]:
    """A fresh stdio server for one test."""
    server = StdioServer()
    try:
        yield server
    finally:
        server.stop()


# --------------------------------------------------------------------------- memory guard

#: The resident size (MiB) at which the suite stops itself, naming the test that was
#: running and where every thread stood: a test that runs away with memory would otherwise
#: grow until the kernel's OOM killer ends the run with no word of which test it was.
#: ``JETMCP_TEST_MAX_RSS_MB`` changes it (0 turns the guard off).
MAX_RSS_MB = int(os.environ.get("JETMCP_TEST_MAX_RSS_MB", "4096"))
_running: list[str] = ["(collecting)"]


def _rss_mb() -> int:
    with open("/proc/self/statm", "rb") as statm:
        pages = int(statm.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") // (1024 * 1024)


def _guard(limit: int, config: pytest.Config) -> None:
    import faulthandler

    while True:
        time.sleep(0.25)
        rss = _rss_mb()
        if rss > limit:
            # Out of pytest's capture, or the words would go down with the process.
            capture = config.pluginmanager.getplugin("capturemanager")
            if capture is not None:
                capture.suspend_global_capture()
            sys.stderr.write(
                f"\nmemory guard: pytest holds {rss} MiB (limit {limit} MiB, "
                f"JETMCP_TEST_MAX_RSS_MB) while running {_running[0]}; every thread:\n"
            )
            sys.stderr.flush()
            faulthandler.dump_traceback(sys.stderr, all_threads=True)
            os._exit(3)


def pytest_configure(config: pytest.Config) -> None:
    if MAX_RSS_MB > 0 and os.path.exists("/proc/self/statm"):
        threading.Thread(
            target=_guard, args=(MAX_RSS_MB, config), name="memory-guard", daemon=True
        ).start()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    _running[0] = item.nodeid
