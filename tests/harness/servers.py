"""The one way the tests start a server process: :class:`ServerProcess` (any command that
listens on a port of 127.0.0.1, in a process group of its own), :class:`AppServer`
(``jetmcp run APP --transport http`` on a free port, ``engine`` picking the HTTP engine) and
:class:`StdioServer` (``jetmcp run APP --transport stdio`` on pipes). The transport is always
named on the command line.

Every wait is bounded: a server that does not come up, or a reply that never comes, fails the
test with what the process wrote to stderr instead of hanging the suite.
"""

from __future__ import annotations

import contextlib
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
from pathlib import Path
from typing import Any, Literal

import httpx

from harness.messages import (
    assert_result,
    encode,
    initialize_request,
    notification,
    request,
    unique_id,
)

START_TIMEOUT = 20.0
STOP_TIMEOUT = 5.0
READ_TIMEOUT = 5.0
#: How long "the server writes nothing" is watched for.
SILENCE_WINDOW = 0.3

#: The repository: test apps (``tests.apps.*``) are importable from here.
ROOT = Path(__file__).resolve().parents[2]
#: The app of the 2026-07-28 wire tests.
MODERN_APP = "tests.apps.modern_app:app"
#: What a server is asked to show it is up.
_PING = b'{"jsonrpc":"2.0","id":0,"method":"ping"}'
_PING_HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
}


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


def server_env(*extra_path: Path) -> dict[str, str]:
    """This environment with the repository (and ``extra_path``) on ``PYTHONPATH``, so
    ``tests.apps.*`` import."""
    env = dict(os.environ)
    parts = [str(ROOT), *map(str, extra_path), env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(p for p in parts if p)
    return env


def stop_process(proc: subprocess.Popen[bytes]) -> None:
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


class ServerProcess:
    """``argv`` listening on ``port`` of 127.0.0.1, in a process group of its own; up once
    the port accepts (``ready="listen"``) or once ``path`` answers a JSON-RPC ping over HTTP
    (``ready="ping"``, any status); ``label`` names it in the errors when it exits or does
    not come up. Its stdout and stderr are kept."""

    def __init__(
        self,
        argv: list[str],
        port: int,
        path: str = "/mcp",
        *,
        ready: Literal["listen", "ping"] = "listen",
        label: str | None = None,
        env: dict[str, str] | None = None,
        cwd: Path | str | None = None,
    ) -> None:
        self.port = port
        self.base = f"http://127.0.0.1:{port}"
        self.url = f"{self.base}{path}"
        self.label = label or " ".join(argv[:3])
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 (lives as long as the process)
        self._stdout = tempfile.TemporaryFile()  # noqa: SIM115 (lives as long as the process)
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=self._stdout,
            stderr=self._stderr,
            env=env,
            cwd=cwd,
            start_new_session=True,
        )
        self._wait_ready(ready)

    def _answers(self, ready: Literal["listen", "ping"]) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                pass
            if ready == "ping":
                httpx.post(self.url, content=_PING, headers=_PING_HEADERS, timeout=2.0)
        except (OSError, httpx.HTTPError):
            return False
        return True

    def _wait_ready(self, ready: Literal["listen", "ping"]) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"{self.label} exited with {self.proc.returncode}:\n{self.stderr()}"
                )
            if self._answers(ready):
                return
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"{self.label} did not come up in {START_TIMEOUT}s")
            time.sleep(0.05)

    def stderr(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read().decode("utf-8", "replace")

    def stdout(self) -> bytes:
        """Everything the server wrote to stdout (an HTTP server should write nothing)."""
        self._stdout.seek(0)
        return self._stdout.read()

    def stop(self) -> None:
        stop_process(self.proc)
        self._stderr.close()
        self._stdout.close()


#: The engine of every HTTP server a test starts without naming one (``--server``); unset:
#: jetmcp's default. ``JETMCP_TEST_DEFAULT_ENGINE=granian`` runs the suite on Granian.
DEFAULT_ENGINE = os.environ.get("JETMCP_TEST_DEFAULT_ENGINE") or None


def jetmcp_http_argv(app: str, port: int, *extra: str, engine: str | None = None) -> list[str]:
    """``jetmcp run APP --transport http`` on ``port`` of 127.0.0.1 (``--server ENGINE`` when
    an HTTP engine is named, else ``JETMCP_TEST_DEFAULT_ENGINE``'s when set)."""
    argv = [*jetmcp_command(), "run", app, "--transport", "http"]
    argv += ["--host", "127.0.0.1", "--port", str(port), *extra]
    engine = engine or DEFAULT_ENGINE
    if engine is not None and "--server" not in extra:
        argv += ["--server", engine]
    return argv


class AppServer(ServerProcess):
    """``jetmcp run APP --transport http --host 127.0.0.1 --port N *extra`` on a free port,
    from the repository with it on ``PYTHONPATH``, up once it answers a ping."""

    def __init__(
        self,
        app: str,
        *extra: str,
        label: str | None = None,
        engine: str | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        port = free_port()
        #: The HTTP engine asked for (None: JETMCP_TEST_DEFAULT_ENGINE, else the default).
        self.engine = engine or DEFAULT_ENGINE
        super().__init__(
            jetmcp_http_argv(app, port, *extra, engine=engine),
            port,
            ready="ping",
            label=label or f"jetmcp server of {app}",
            env=env if env is not None else server_env(),
            cwd=ROOT,
        )


class HttpServer(AppServer):
    """An :class:`AppServer` of ``app``, the demo app unless told."""

    def __init__(
        self, *extra: str, app: str = "jetmcp.demo:app", engine: str | None = None
    ) -> None:
        super().__init__(app, *extra, label="jetmcp http server", engine=engine)


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
            env=server_env(),
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
            stop_process(self.proc)
        self._reader.join(timeout=STOP_TIMEOUT)
        self._stderr.close()
