"""In-process cost of the MCP layer: the load benchmark's bodies through ``Dispatcher.start``.

No HTTP, no event loop turn: decode, dispatch, the tool, shaping and encoding, timed with
``time.perf_counter_ns`` over many rounds (best of several repeats, so other load on a shared
machine shows less). It steers optimisation; ``bench/load/run.py`` confirms it end to end.

    .venv/bin/python bench/inproc.py                 # every case, best of 7 x 0.3 s
    .venv/bin/python bench/inproc.py --profile call  # cProfile of one case, top 25
    .venv/bin/python bench/inproc.py --loop call     # run one case for ever (py-spy / perf)
    .venv/bin/python bench/inproc.py --cold 1024     # also with the caches partly cold

Build the release extension first (``maturin develop --release``); the header says which
build was loaded.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import datetime
import enum
import pstats
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Literal

sys.path.insert(0, str(Path(__file__).resolve().parent / "load"))

from bodies import BATCH_CALL, TOOLS_CALL, TOOLS_LIST

from jetmcp import Server, _wire
from jetmcp.core import threads
from jetmcp.core.dispatch import Dispatcher
from jetmcp.core.exchange import Exchange
from jetmcp.demo import app
from jetmcp.protocol import revisions

R_SINGLE = revisions.lookup("2025-11-25")
R_BATCH = revisions.lookup("2025-03-26")
assert R_SINGLE is not None and R_BATCH is not None

dispatcher = Dispatcher(app)
decode = _wire.decode
#: Each case's request made through an event loop (see :func:`_promote`).
_WARMERS: list[Callable[[], Awaitable[object]]] = []


def case(
    body: bytes, revision: revisions.Revision, through: Dispatcher | None = None
) -> Callable[[], object]:
    """``body`` through ``Dispatcher.start`` (of the demo app's dispatcher, or ``through``)."""
    start = (through or dispatcher).start

    def run() -> object:
        reply = start(decode(body), Exchange(revision, None))
        assert type(reply) is bytes
        return reply

    async def warm() -> object:
        reply = start(decode(body), Exchange(revision, None))
        return await reply if asyncio.iscoroutine(reply) else reply

    _WARMERS.append(warm)
    return run


class _Headers(dict[str, str]):
    """Granian's header map as far as the transport reads it (one value per name)."""

    def get_all(self, name: str) -> list[str]:
        value = self.get(name)
        return [] if value is None else [value]


class _Scope:
    """The parts of a Granian RSGI scope the transport reads."""

    __slots__ = ("authority", "headers", "http_version", "method", "path", "proto")

    def __init__(self, version: str, extra: dict[str, str] | None = None) -> None:
        self.proto = "http"
        self.method = "POST"
        self.path = "/mcp"
        self.http_version = "1.1"
        self.authority = None
        self.headers = _Headers(
            {
                "host": "127.0.0.1:8000",
                "content-type": "application/json",
                "accept": "application/json, text/event-stream",
                "mcp-protocol-version": version,
                "content-length": "100",
            }
        )
        for name, value in (extra or {}).items():
            self.headers[name.lower()] = value


class _Proto:
    """An RSGI protocol object whose body is at hand and whose reply is dropped."""

    __slots__ = ("body",)

    def __init__(self, body: bytes) -> None:
        self.body = body

    async def __call__(self) -> bytes:
        return self.body

    async def client_disconnect(self) -> None:
        """The client never leaves (watched by a request that waits: the warm-up's)."""
        await asyncio.Event().wait()

    def response_bytes(self, status: int, headers: object, body: bytes) -> None:
        assert status == 200, body

    def response_empty(self, status: int, headers: object) -> None:
        raise AssertionError(status)


def rsgi_case(
    rsgi: Callable[..., Any],
    body: bytes,
    version: str,
    extra: dict[str, str] | None = None,
    proto: _Proto | None = None,
) -> Callable[[], object]:
    """One request through an RSGI app, driven without an event loop (nothing in it waits);
    ``proto`` (default: a plain ``_Proto`` of ``body``) takes the reply."""
    scope = _Scope(version, extra)
    if proto is None:
        proto = _Proto(body)

    def run() -> object:
        coro = rsgi(scope, proto)
        try:
            coro.send(None)
        except StopIteration:
            return None
        raise AssertionError("the request waited")

    async def warm() -> object:
        return await rsgi(scope, proto)

    _WARMERS.append(warm)
    return run


def _http_app(server: Any = app) -> Any:
    from jetmcp.settings import Settings
    from jetmcp.transports.http import McpHttpApp

    return McpHttpApp(server, Settings(stateless=True)).__rsgi__


def _request_shape_cases() -> dict[str, tuple[Callable[[], object], int]]:
    """The stateless request-shape workloads (bodies.REQUEST_SHAPES) through the bench app,
    ``i-<key>``, and through the floor's app, ``floor-<key>``."""
    from bodies import REQUEST_SHAPES
    from floor import rsgi_app as floor_app
    from jetmcp_server import app as bench_app

    cases = {}
    for key, w in REQUEST_SHAPES.items():
        if w.session:
            continue
        version = w.headers["MCP-Protocol-Version"]
        cases[f"i-{key}"] = (rsgi_case(_http_app(bench_app), w.body, version, w.headers), w.entries)
        # The floor: the ceiling plus the tool's own work (bench/load/floor.py).
        cases[f"floor-{key}"] = (rsgi_case(floor_app, w.body, version, w.headers), w.entries)
    return cases


class _Answer(_Proto):
    """A ``_Proto`` that keeps the reply's headers (for ``initialize``)."""

    __slots__ = ("headers",)

    def response_bytes(self, status: int, headers: object, body: bytes) -> None:
        super().response_bytes(status, headers, body)
        self.headers = dict(headers)  # type: ignore[call-overload]  # RSGI's (name, value) list


def _session_case() -> tuple[Callable[[], object], int]:
    """``session`` of the request-shape workloads: a legacy session opened with ``initialize``
    on a stateful app, then its ``tools/call`` with the session's ``Mcp-Session-Id``."""
    from bodies import REQUEST_SHAPES
    from jetmcp_server import app as bench_app

    from jetmcp.settings import Settings
    from jetmcp.transports.http import McpHttpApp

    w = REQUEST_SHAPES["session"]
    version = w.headers["MCP-Protocol-Version"]
    rsgi = McpHttpApp(bench_app, Settings()).__rsgi__
    init = (
        b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"'
        + version.encode()
        + b'","capabilities":{},"clientInfo":{"name":"inproc","version":"0"}}}'
    )
    answer = _Answer(init)
    rsgi_case(rsgi, init, version, proto=answer)()
    session_id = answer.headers["mcp-session-id"]
    return rsgi_case(rsgi, w.body, version, {"mcp-session-id": session_id}), w.entries


def _bound_case(key: str) -> tuple[Callable[[], object], int]:
    """``bound-<key>``: a bare RSGI callback that hands the body straight to the extension
    (framed, planned, run and written; a 2026-07-28 request's routing headers read), with no
    HTTP rules and no dispatcher in Python: the least a Python transport in front of the
    extension could cost for a plain call (an experiment, not a way to serve)."""
    from bodies import REQUEST_SHAPES
    from jetmcp_server import app as bench_app

    w = REQUEST_SHAPES[key]
    version = w.headers["MCP-Protocol-Version"]
    revision = revisions.lookup(version) or revisions.lookup_modern(version)
    assert revision is not None
    shape = Dispatcher(bench_app).shape(revision)
    answer = bench_app.routes.answer
    read_headers = _wire.Headers.from_map if revision.routing_headers else None
    json_type = [("content-type", "application/json")]

    async def bound(scope: Any, proto: Any) -> None:
        body = await proto()
        headers = None if read_headers is None else read_headers(scope.headers)
        proto.response_bytes(200, json_type, answer(decode(body), shape, headers, True))

    return rsgi_case(bound, w.body, version, w.headers), w.entries


class Unit(enum.StrEnum):
    c = "c"
    f = "f"


def _shape_cases() -> dict[str, tuple[Callable[[], object], int]]:
    """``shape-<name>``: tools whose parameters or results are no plain type, called at
    2025-06-18 through ``Dispatcher.start``: a date and an enum (read by ``validate_json``),
    a ``Literal`` returning a float (written in Rust), a float parameter sent an integer
    (read as ``float(n)``), a dict with no declared output, one declared ``dict[str, int]``,
    a ``list[str]`` and None (written in Rust). ``slow-<name>``: the same with
    ``fast_paths=False``."""

    def build(fast: bool) -> Dispatcher:
        server = Server("shapes", fast_paths=fast)

        @server.tool()
        def dated(day: datetime.date, unit: Unit = Unit.c) -> str:
            return day.isoformat()

        @server.tool()
        def convert(value: float, unit: Literal["c", "f"]) -> float:
            return value * 2

        @server.tool()
        def half(value: float) -> float:
            return value / 2

        @server.tool()
        def lookup(key: str):  # type: ignore[no-untyped-def]  # no declared output
            return {"key": key, "hits": 3, "tags": ["a", "b"], "score": 0.5}

        @server.tool()
        def tally(n: int) -> dict[str, int]:
            return {"n": n, "twice": 2 * n}

        @server.tool()
        def names(n: int) -> list[str]:
            return ["ada", "grace", "edsger"][:n]

        @server.tool()
        def store(key: str) -> None:
            return None

        return Dispatcher(server)

    revision = revisions.lookup("2025-06-18")
    assert revision is not None
    arguments = {
        "dated": b'{"day":"2026-07-28","unit":"f"}',
        "convert": b'{"value":1.5,"unit":"c"}',
        "half": b'{"value":3}',
        "lookup": b'{"key":"k"}',
        "tally": b'{"n":4}',
        "names": b'{"n":3}',
        "store": b'{"key":"k"}',
    }
    cases: dict[str, tuple[Callable[[], object], int]] = {}
    for prefix, served in (("shape", build(True)), ("slow", build(False))):
        for name, args in arguments.items():
            body = (
                b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"'
                + name.encode()
                + b'","arguments":'
                + args
                + b"}}"
            )
            cases[f"{prefix}-{name}"] = (case(body, revision, served), 1)
    return cases


def _ceiling() -> Any:
    from ceiling import rsgi_app

    return rsgi_app


CASES: dict[str, tuple[Callable[[], object], int]] = {
    "call": (case(TOOLS_CALL, R_SINGLE), 1),
    "list": (case(TOOLS_LIST, R_SINGLE), 1),
    "batch": (case(BATCH_CALL, R_BATCH), 10),
    "decode-batch": (lambda: decode(BATCH_CALL), 10),
    "http-call": (rsgi_case(_http_app(), TOOLS_CALL, "2025-11-25"), 1),
    "http-batch": (rsgi_case(_http_app(), BATCH_CALL, "2025-03-26"), 10),
    "ceiling-call": (rsgi_case(_ceiling(), TOOLS_CALL, "2025-11-25"), 1),
    **_request_shape_cases(),
    "i-session": _session_case(),
    "bound-call-0618": _bound_case("call-0618"),
    "bound-call-2026": _bound_case("call-2026"),
    **_shape_cases(),
}


def _promote() -> None:
    """Make every case's request through an event loop until the synchronous tools it calls
    are promoted (their first calls run in the pool), so that each case then runs without
    waiting, as a served app's calls do after their first ones. An app served by a transport
    (the HTTP cases) runs its synchronous tools in the thread pool until they are promoted to
    run inline (jetmcp.core.threads): the cases measure the promoted path. The fast-call
    bound is made generous (after the transports set theirs), so that nothing here, under
    valgrind too, counts as slow and sends a tool back to the pool."""
    threads.POLICY.configure(fast_ms=10_000.0)

    async def warm() -> None:
        for _ in range(threads.POLICY.promote_after + 1):
            for warmer in _WARMERS:
                await warmer()

    asyncio.run(warm())


_promote()


def cold_median(fn: Callable[[], object], kib: int, rounds: int = 3000) -> float:
    """Median ns per call right after ``kib`` KiB of other memory was written: the code and
    data the call needs are partly out of the caches, as in a server where the kernel's and
    Granian's work runs between two requests (1024 KiB lands near what a real server's
    CPU time per request shows on a 2 MiB-L2 machine)."""
    junk = bytearray(kib * 1024)
    ones = b"\x01" * (len(junk) // 64)
    times: list[int] = []
    clock = time.perf_counter_ns
    for _ in range(rounds):
        junk[::64] = ones
        t = clock()
        fn()
        times.append(clock() - t)
    times.sort()
    return float(times[len(times) // 2])


def timeit(fn: Callable[[], object], seconds: float, repeats: int) -> float:
    """Best mean ns per call over ``repeats`` runs of about ``seconds`` each."""
    n = 1
    while True:
        t = time.perf_counter_ns()
        for _ in range(n):
            fn()
        dt = time.perf_counter_ns() - t
        if dt > seconds * 1e9 / 4:
            break
        n *= 2
    n = max(1, int(n * seconds * 1e9 / 4 / dt * 4))
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter_ns()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter_ns() - t) / n)
    return best


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("cases", nargs="*", default=list(CASES))
    parser.add_argument("--seconds", type=float, default=0.3)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--profile", metavar="CASE")
    parser.add_argument("--loop", metavar="CASE")
    parser.add_argument(
        "--count",
        type=int,
        metavar="N",
        help="with --loop: run the case N times and stop (for callgrind: two counts, subtracted)",
    )
    parser.add_argument(
        "--cold",
        type=int,
        metavar="KIB",
        help="also time each case right after writing KIB KiB of other memory (1024 is "
        "close to a real server's cache state)",
    )
    args = parser.parse_args()
    build = getattr(_wire, "BUILD", "unknown (no _wire.BUILD)")
    print(f"extension build: {build}")
    if args.loop:
        fn = CASES[args.loop][0]
        if args.count is not None:
            for _ in range(args.count):
                fn()
            return 0
        while True:
            fn()
    if args.profile:
        fn = CASES[args.profile][0]
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(200_000 // CASES[args.profile][1]):
            fn()
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(25)
        return 0
    for name in args.cases:
        fn, entries = CASES[name]
        ns = timeit(fn, args.seconds, args.repeats)
        line = f"{name:14s} {ns / 1000:8.2f} us/body  {ns / 1000 / entries:7.2f} us/entry"
        if args.cold:
            line += f"   cold {cold_median(fn, args.cold) / 1000:8.2f} us/body"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
