"""The suite's fixtures (servers shared by many tests, started by ``harness.servers``) and its
memory guard. What the tests share besides fixtures lives in ``tests/harness/``.

Every wait is bounded: a server that does not come up, or a reply that never comes, fails the
test with what the process wrote to stderr instead of hanging the suite.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from harness.servers import HttpServer, StdioServer

#: The HTTP engines the shared server fixtures run on (``JETMCP_TEST_ENGINES``, comma
#: separated, narrows them): every test that takes one runs once per engine.
ENGINES = [e for e in os.environ.get("JETMCP_TEST_ENGINES", "native,granian").split(",") if e]


@pytest.fixture(scope="session", params=ENGINES)
def engine(request: pytest.FixtureRequest) -> str:
    """The HTTP engine under test (``--server``)."""
    return str(request.param)


@pytest.fixture(scope="session")
def http_server(engine: str) -> Iterator[HttpServer]:
    """The default server: sessions optional, default limits."""
    server = HttpServer(engine=engine)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def http_url(http_server: HttpServer) -> str:
    return http_server.url


@pytest.fixture(scope="session")
def strict_server(engine: str) -> Iterator[HttpServer]:
    """``--require-session`` and a 1 KiB body limit, so one extra process covers both."""
    server = HttpServer("--require-session", "--max-body-bytes", "1024", engine=engine)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def strict_url(strict_server: HttpServer) -> str:
    return strict_server.url


@pytest.fixture(scope="session")
def stateless_url(engine: str) -> Iterator[str]:
    """``--stateless``: no sessions are minted; the header alone decides the revision."""
    server = HttpServer("--stateless", engine=engine)
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture(scope="session")
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=10.0) as c:
        yield c


@pytest.fixture
def stdio() -> Iterator[StdioServer]:
    """A fresh stdio server for one test."""
    server = StdioServer()
    try:
        yield server
    finally:
        server.stop()


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
