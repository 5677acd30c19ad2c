"""What the tests of the Redis-backed state share: the Redis they use (``JETMCP_TEST_REDIS_URL``,
else 127.0.0.1:6379 db 0, which ``scripts/dev.sh test`` starts when nothing answers there),
a key prefix of their own per server group (so runs never collide, and the keys are counted
and removed afterwards), servers that share one prefix as "hosts", a private
``redis-server`` to stop and restart, and a round-robin TCP proxy that sends each new
connection to the next host."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import redis

from harness.servers import AppServer, free_port

REDIS_URL = os.environ.get("JETMCP_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


def new_prefix() -> str:
    return f"jetmcp-test-{uuid.uuid4().hex[:12]}:"


def keys(prefix: str, url: str = REDIS_URL) -> list[str]:
    """Every key under ``prefix`` (heartbeats of live workers included)."""
    client = redis.Redis.from_url(url, socket_timeout=5)
    try:
        return sorted(k.decode() for k in client.scan_iter(match=prefix + "*", count=1000))
    finally:
        client.close()


def drop_keys(prefix: str, url: str = REDIS_URL) -> None:
    client = redis.Redis.from_url(url, socket_timeout=5)
    try:
        found = list(client.scan_iter(match=prefix + "*", count=1000))
        if found:
            client.delete(*found)
    finally:
        client.close()


class Hosts:
    """``count`` separate ``jetmcp run APP --redis ... --redis-prefix P`` processes (the
    "hosts"), each on its own port, all sharing one prefix."""

    def __init__(
        self, app: str, *extra: str, count: int = 2, url: str = REDIS_URL, prefix: str = ""
    ) -> None:
        self.prefix = prefix or new_prefix()
        self.url = url
        self.servers: list[AppServer] = []
        try:
            for i in range(count):
                self.servers.append(
                    AppServer(
                        app,
                        "--redis",
                        url,
                        "--redis-prefix",
                        self.prefix,
                        *extra,
                        label=f"host {i}",
                    )
                )
        except BaseException:
            self.stop()
            raise

    @property
    def urls(self) -> list[str]:
        return [s.url for s in self.servers]

    def stop(self) -> None:
        for server in self.servers:
            server.stop()
        drop_keys(self.prefix, self.url)


class RoundRobinProxy:
    """A TCP proxy on 127.0.0.1 that hands each accepted connection to the next upstream
    port in turn (what a load balancer without stickiness does)."""

    def __init__(self, upstreams: list[int]) -> None:
        self.upstreams = upstreams
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.accepted = 0
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", self.port))
        self._sock.listen(128)
        self._sock.settimeout(0.2)
        self._stop = threading.Event()
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                client, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            port = self.upstreams[self.accepted % len(self.upstreams)]
            self.accepted += 1
            try:
                upstream = socket.create_connection(("127.0.0.1", port), timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            client.settimeout(None)
            with self._lock:
                self._open.update((client, upstream))
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    def _pipe(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                dst.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        self._stop.set()
        self._sock.close()
        self._thread.join(timeout=2)
        with self._lock:
            for sock in self._open:
                with contextlib.suppress(OSError):
                    sock.close()
            self._open.clear()


class PrivateRedis:
    """A ``redis-server`` of the test's own on a free port (nothing saved to disk), to stop,
    freeze and restart."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen[bytes] | None = None
        self._dir = tempfile.mkdtemp(prefix="jetmcp-redis-")
        self.start()

    def start(self) -> None:
        binary = shutil.which("redis-server")
        assert binary is not None, "redis-server is needed (scripts/dev.sh installs it)"
        self.proc = subprocess.Popen(
            [
                binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                self._dir,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError):
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            time.sleep(0.05)
        raise RuntimeError("the private redis-server did not come up")

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=5)

    def stop(self) -> None:
        self.kill()
        shutil.rmtree(self._dir, ignore_errors=True)


@contextlib.contextmanager
def hosts(app: str, *extra: str, **kw: Any) -> Iterator[Hosts]:
    group = Hosts(app, *extra, **kw)
    try:
        yield group
    finally:
        group.stop()


def fill(url: str) -> None:
    """Make the Redis at ``url`` refuse writes: ``noeviction``, filled until a write is
    refused, then ``maxmemory`` 1 MB (below what it holds)."""
    client = redis.Redis.from_url(url, socket_timeout=5)
    try:
        used = int(client.info("memory")["used_memory"])
        client.config_set("maxmemory-policy", "noeviction")
        client.config_set("maxmemory", str(used + 1024 * 1024))
        blob = b"x" * 65536
        for i in range(10_000):
            try:
                client.set(f"filler:{i}", blob)
            except redis.exceptions.ResponseError as exc:
                assert "maxmemory" in str(exc), exc
                # Full: now below what it holds, so no write fits, however small.
                client.config_set("maxmemory", str(1024 * 1024))
                return
        raise AssertionError("Redis never refused a write")
    finally:
        client.close()
