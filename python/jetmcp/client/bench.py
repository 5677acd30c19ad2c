"""``jetmcp bench``: a load generator built on the client, for any MCP server.

One :class:`~jetmcp.client.session.Client` picks the revision (and, over HTTP, holds the
session every connection shares); then each connection is one asyncio task that sends a
request (or a batch of ``--batch`` requests), waits for its answer, and sends the next.
Bodies are encoded once, before the run: only the ids (unique across the run, as a session
requires) are spliced in per request. Over HTTP each task owns one keep-alive connection and
reads replies itself (JSON or SSE); over stdio each connection is a server process of its own.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import math
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from jetmcp import _wire
from jetmcp.client.session import Client
from jetmcp.client.transports import (
    HttpConnection,
    HttpTransport,
    SseParser,
    TransportClosed,
    header_lines,
)

#: An id no real request carries; encoded bodies are split around it.
_SENTINEL = b"4503599627370495"


@dataclass
class BenchOptions:
    """What to run: a URL or a stdio command, the message mix, and how hard to push."""

    url: str | None = None
    stdio: str | None = None
    connections: int = 8
    #: Seconds to run; ignored when ``requests`` is set.
    duration: float = 10.0
    #: Total request bodies to send (each carries ``batch`` entries), across connections.
    requests: int | None = None
    #: ``(method, params)`` pairs, sent in rotation.
    mix: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    batch: int = 1
    revision: str | None = None
    #: Seconds a single exchange may take before it counts as a transport error.
    timeout: float = 30.0
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class BenchReport:
    target: str
    transport: str
    revision: str
    connections: int
    batch: int
    wire_batches: bool
    mix: list[str]
    seconds: float
    requests: int
    entries: int
    latencies: list[float]
    errors: dict[str, int]

    def percentile(self, fraction: float) -> float:
        """Latency (ms) at ``fraction`` (0..1), nearest rank."""
        data = self.latencies
        if not data:
            return 0.0
        rank = max(0, min(len(data) - 1, math.ceil(fraction * len(data)) - 1))
        return data[rank] * 1000.0

    def to_dict(self) -> dict[str, Any]:
        seconds = self.seconds or 1e-9
        data = self.latencies
        return {
            "target": self.target,
            "transport": self.transport,
            "revision": self.revision,
            "connections": self.connections,
            "batch": self.batch,
            "wire_batches": self.wire_batches,
            "mix": self.mix,
            "seconds": round(self.seconds, 3),
            "requests": self.requests,
            "entries": self.entries,
            "requests_per_s": round(self.requests / seconds, 1),
            "entries_per_s": round(self.entries / seconds, 1),
            "latency_ms": {
                "p50": round(self.percentile(0.50), 3),
                "p99": round(self.percentile(0.99), 3),
                "p99.9": round(self.percentile(0.999), 3),
                "max": round(data[-1] * 1000.0, 3) if data else 0.0,
                "mean": round(sum(data) / len(data) * 1000.0, 3) if data else 0.0,
            },
            "errors": dict(self.errors),
        }

    def text(self) -> str:
        d = self.to_dict()
        lat = d["latency_ms"]
        errors = "  ".join(f"{k} {v}" for k, v in d["errors"].items())
        return "\n".join(
            [
                f"jetmcp bench {d['target']}",
                f"  {d['transport']}, revision {d['revision']}, {d['connections']} connections, "
                f"batch {d['batch']} ({'one array' if d['wire_batches'] else 'single requests'})"
                if d["batch"] > 1
                else f"  {d['transport']}, revision {d['revision']}, "
                f"{d['connections']} connections",
                f"  mix        {', '.join(d['mix'])}",
                f"  requests   {d['requests']:>10}   {d['requests_per_s']:>12.1f}/s",
                f"  entries    {d['entries']:>10}   {d['entries_per_s']:>12.1f}/s",
                f"  latency    p50 {lat['p50']:.3f} ms   p99 {lat['p99']:.3f} ms   "
                f"p99.9 {lat['p99.9']:.3f} ms   max {lat['max']:.3f} ms",
                f"  errors     {errors}",
                f"  duration   {d['seconds']:.2f} s",
            ]
        )


class _Template:
    """One request, encoded once with a placeholder id."""

    __slots__ = ("head", "headers", "tail")

    def __init__(self, encoded: bytes, headers: bytes) -> None:
        head, found, tail = encoded.partition(_SENTINEL)
        if not found or _SENTINEL in tail:
            raise ValueError("the message could not be templated")
        self.head = head
        self.tail = tail
        self.headers = headers

    def render(self, wid: int) -> bytes:
        return b"%s%d%s" % (self.head, wid, self.tail)


class _Run:
    """Counters shared by every connection of one run."""

    def __init__(self, options: BenchOptions) -> None:
        self.options = options
        self.ids = itertools.count(1)
        self.sent = 0
        self.requests = 0
        self.entries = 0
        self.latencies: list[float] = []
        self.errors = {"jsonrpc": 0, "http": 0, "transport": 0, "missing": 0}
        self.started = time.perf_counter()
        self.deadline = self.started + options.duration
        self.stop = False

    def claim(self) -> bool:
        """Whether one more body may be sent."""
        if self.stop:
            return False
        limit = self.options.requests
        if limit is not None:
            if self.sent >= limit:
                return False
        elif time.perf_counter() >= self.deadline:
            return False
        self.sent += 1
        return True

    def progress(self) -> float:
        limit = self.options.requests
        if limit is not None:
            return min(1.0, self.requests / limit) if limit else 1.0
        return min(1.0, (time.perf_counter() - self.started) / (self.options.duration or 1e-9))

    def account(self, latency: float, frames: Sequence[bytes], expected: int) -> None:
        """One answered body: count its responses and errors."""
        self.requests += 1
        self.latencies.append(latency)
        answered = 0
        for data in frames:
            frame = _wire.decode(data)
            for entry in frame.entries:
                if entry.kind == _wire.RESPONSE:
                    answered += 1
                    if entry.is_error:
                        self.errors["jsonrpc"] += 1
        self.entries += answered
        if answered < expected:
            self.errors["missing"] += expected - answered


async def _http_lane(
    run: _Run,
    transport: HttpTransport,
    build: Callable[[], tuple[bytes, bytes, list[int]]],
) -> None:
    """One keep-alive connection sending one body at a time."""
    pool = transport.pool
    conn: HttpConnection | None = None
    timeout = run.options.timeout
    while run.claim():
        body, extra, wids = build()
        head = transport.encoded_post_head(extra, len(body))
        start = time.perf_counter()
        try:
            if conn is None or conn.closed:
                conn = await pool.connect()
            async with asyncio.timeout(timeout):
                resp = await conn.request(head, body)
                if resp.content_type == "text/event-stream":
                    parser = SseParser()
                    frames = [
                        event.data
                        async for chunk in resp.chunks()
                        for event in parser.feed(chunk)
                        if event.data and event.event == "message"
                    ]
                else:
                    data = await resp.read()
                    frames = [data] if data else []
        except (OSError, TransportClosed, TimeoutError):
            run.errors["transport"] += 1
            if conn is not None:
                conn.close()
                conn = None
            continue
        if not resp.reusable:
            conn.close()
            conn = None
        if resp.status >= 400:
            run.errors["http"] += 1
        run.account(time.perf_counter() - start, frames, len(wids))
    if conn is not None:
        conn.close()


async def _stdio_lane(
    run: _Run, client: Client, build: Callable[[], tuple[bytes, bytes, list[int]]]
) -> None:
    """One server process, one body at a time through the client's id routing."""
    timeout = run.options.timeout
    while run.claim():
        body, _, wids = build()
        start = time.perf_counter()
        try:
            async with asyncio.timeout(timeout):
                replies = await client._call_wire(body, wids, ())
        except (OSError, TransportClosed, TimeoutError):
            run.errors["transport"] += 1
            continue
        latency = time.perf_counter() - start
        run.requests += 1
        run.latencies.append(latency)
        run.entries += len(replies)
        run.errors["jsonrpc"] += sum(1 for r in replies if r.error is not None)


def _builder(
    run: _Run, templates: list[_Template], batch: int, offset: int
) -> Callable[[], tuple[bytes, bytes, list[int]]]:
    """The next body for a connection: ``batch`` requests from the mix, in rotation."""
    cycle = itertools.cycle(range(len(templates)))
    for _ in range(offset % len(templates)):
        next(cycle)
    ids = run.ids

    if batch == 1:

        def single() -> tuple[bytes, bytes, list[int]]:
            template = templates[next(cycle)]
            wid = next(ids)
            return template.render(wid), template.headers, [wid]

        return single

    def many() -> tuple[bytes, bytes, list[int]]:
        wids = [next(ids) for _ in range(batch)]
        parts = [templates[next(cycle)].render(wid) for wid in wids]
        return b"[" + b",".join(parts) + b"]", b"", wids

    return many


async def _progress(run: _Run, out: TextIO) -> None:
    width = 30
    while True:
        await asyncio.sleep(0.2)
        _draw(run, out, width)


def _draw(run: _Run, out: TextIO, width: int) -> None:
    fraction = run.progress()
    elapsed = time.perf_counter() - run.started
    filled = int(fraction * width)
    rate = run.requests / elapsed if elapsed > 0 else 0.0
    errors = sum(run.errors.values())
    out.write(
        f"\r[{'#' * filled}{'.' * (width - filled)}] {fraction * 100:5.1f}%  "
        f"{run.requests} req  {rate:,.0f} req/s  {errors} errors "
    )
    out.flush()


async def run_bench(options: BenchOptions, progress: TextIO | None = None) -> BenchReport:
    """Run the benchmark; ``progress`` (e.g. ``sys.stderr``) gets a progress bar."""
    if (options.url is None) == (options.stdio is None):
        raise ValueError("give a URL or a stdio command")
    if options.connections < 1 or options.batch < 1:
        raise ValueError("connections and batch must be at least 1")
    mix = options.mix or [("tools/list", {})]
    if options.url is not None:
        main = Client(
            options.url, revision=options.revision, headers=options.headers, standalone_stream=False
        )
    else:
        assert options.stdio is not None
        main = Client.stdio(options.stdio, revision=options.revision)
    async with main:
        return await _run_with(main, options, mix, progress)


async def _run_with(
    main: Client,
    options: BenchOptions,
    mix: list[tuple[str, dict[str, Any]]],
    progress: TextIO | None,
) -> BenchReport:
    rev = main.revision
    transport = main.transport
    is_http = isinstance(transport, HttpTransport)
    batch = options.batch
    wire_batches = batch == 1 or await main._can_batch()
    if batch > 1 and not wire_batches:
        raise SystemExit(
            f"jetmcp bench: the server does not take JSON-RPC batches at {rev.version}; "
            "run without --batch, or at a revision that has them"
        )
    if is_http and rev.routing_headers and any(m == "tools/call" for m, _ in mix):
        await main._relist_tools()  # learn the tools' Mcp-Param-* headers
    templates = []
    for method, params in mix:
        encoded = main._encode(int(_SENTINEL), method, params)
        headers = (
            header_lines(main._route_headers(method, params))
            if is_http and rev.routing_headers and batch == 1
            else b""
        )
        templates.append(_Template(encoded, headers))

    clients: list[Client] = []
    run = _Run(options)
    try:
        if is_http:
            assert isinstance(transport, HttpTransport)
            lanes = [
                _http_lane(run, transport, _builder(run, templates, batch, i))
                for i in range(options.connections)
            ]
        else:
            assert options.stdio is not None
            clients.append(main)
            for _ in range(options.connections - 1):
                extra = Client.stdio(options.stdio, revision=rev.version)
                await extra.open()
                clients.append(extra)
            lanes = [
                _stdio_lane(run, client, _builder(run, templates, batch, i))
                for i, client in enumerate(clients)
            ]
        run.started = time.perf_counter()
        run.deadline = run.started + options.duration
        ticker = asyncio.ensure_future(_progress(run, progress)) if progress else None
        try:
            await asyncio.gather(*lanes)
        finally:
            run.stop = True
            if ticker is not None and progress is not None:
                ticker.cancel()
                _draw(run, progress, 30)
                progress.write("\n")
        seconds = time.perf_counter() - run.started
    finally:
        for client in clients[1:]:
            await client.close()
    return BenchReport(
        target=options.url or options.stdio or "",
        transport="http" if is_http else "stdio",
        revision=rev.version,
        connections=options.connections,
        batch=batch,
        wire_batches=wire_batches,
        mix=[_describe(m, p) for m, p in mix],
        seconds=seconds,
        requests=run.requests,
        entries=run.entries,
        latencies=sorted(run.latencies),
        errors=run.errors,
    )


def _describe(method: str, params: dict[str, Any]) -> str:
    if method == "tools/call":
        return f"tools/call {params.get('name')} {json.dumps(params.get('arguments') or {})}"
    return f"{method} {json.dumps(params)}" if params else method


def main(options: BenchOptions, *, as_json: bool = False, quiet: bool = False) -> int:
    """The ``jetmcp bench`` command: run, print the report; exit status 1 on any error."""
    import uvloop

    report = uvloop.run(run_bench(options, None if quiet else sys.stderr))
    if as_json:
        print(json.dumps(report.to_dict(), indent=2))
    else:
        print(report.text())
    return 1 if any(report.errors.values()) or report.requests == 0 else 0


__all__ = ["BenchOptions", "BenchReport", "main", "run_bench"]
