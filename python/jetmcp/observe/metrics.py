"""Prometheus metrics of a jetmcp server.

The hot path only adds to plain Python ints (a dict entry per label set, a bucket of a
histogram); nothing of prometheus-client runs per request. Once a second each worker writes
what it counted to a file of its own in a directory the ``jetmcp run`` process made; a scrape
(``--metrics-port``, served by that process, or ``--metrics-path`` on the MCP port, served
by whichever worker takes it) adds the files up and prometheus-client renders them. Counters
and histograms count every worker that ever ran; gauges only the workers alive now. So a
scrape is at most one second behind.

The ``method`` label is the method's name only when it is one the server knows (a client
can send any string: unbounded label values would grow without end), else ``other``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from bisect import bisect_left
from collections.abc import Callable, Container, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from jetmcp import _wire

if TYPE_CHECKING:
    from jetmcp.core.dispatch import Dispatcher
    from jetmcp.core.exchange import Exchange
    from jetmcp.protocol.revisions import Revision

#: The environment variable naming the directory the workers write their counts to.
METRICS_DIR_ENV = "JETMCP_METRICS_DIR"
#: Seconds between two writes of a worker's counts.
FLUSH_SECONDS = 1.0
#: Upper bounds (seconds) of the latency histogram's buckets.
LATENCY_BUCKETS: tuple[float, ...] = (
    0.0001,
    0.00025,
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
)
#: Upper bounds of the batch-size histogram's buckets (entries per batch).
BATCH_BUCKETS: tuple[float, ...] = (1, 2, 4, 8, 16, 32, 64, 128, 256)
INVALID_METHOD = "(invalid)"
OTHER_METHOD = "other"

_HEAD = b'{"jsonrpc":"2.0","id":'
_ERROR = b',"error":{"code":'
_REQUEST = _wire.REQUEST
_INVALID = _wire.INVALID
_FRAME_SINGLE = _wire.FRAME_SINGLE
_FRAME_BATCH = _wire.FRAME_BATCH
_perf = time.perf_counter


def error_code(reply: bytes, raw_id: bytes | None) -> int | None:
    """The error code of one encoded reply to the request with ``raw_id``, None for a
    result. The envelope is jetmcp's one encoder's, so its layout is known byte for byte."""
    at = len(_HEAD) + (len(raw_id) if raw_id is not None else 4)
    if not reply.startswith(_ERROR, at):
        return None
    start = at + len(_ERROR)
    end = reply.find(b",", start)
    try:
        return int(reply[start:end])
    except ValueError:
        return None


def _id_key(value: Any) -> tuple[bool, Any]:
    return (isinstance(value, str), value if isinstance(value, str | int) else repr(value))


class Metrics:
    """What one worker counted since it started (see the module docstring)."""

    def __init__(
        self,
        transport: str,
        known_methods: Callable[[], frozenset[str]],
        sessions: Callable[[], int] = lambda: 0,
        streams: Callable[[], int] = lambda: 0,
    ) -> None:
        self.transport = transport
        self._known = known_methods
        #: Method names already found known, as their own labels.
        self._labels: dict[str, str] = {}
        self.sessions = sessions
        self.streams = streams
        #: (method, revision, outcome, path) -> requests.
        self.requests: dict[tuple[str, str, str, str], int] = {}
        #: error code -> replies carrying it.
        self.errors: dict[int, int] = {}
        #: path -> bucket counts (one more than the bounds: +Inf), and the sum of seconds.
        self.latency: dict[str, list[int]] = {
            "fast": [0] * (len(LATENCY_BUCKETS) + 1),
            "general": [0] * (len(LATENCY_BUCKETS) + 1),
        }
        self.latency_sum: dict[str, float] = {"fast": 0.0, "general": 0.0}
        self.batch = [0] * (len(BATCH_BUCKETS) + 1)
        self.batch_sum = 0
        #: Bodies being worked on now (those whose handlers wait).
        self.inflight = 0

    # -- recording -------------------------------------------------------------------------

    def method_label(self, method: str | None) -> str:
        if method is None:
            return INVALID_METHOD
        label = self._labels.get(method)
        if label is None:
            if method not in self._known():
                return OTHER_METHOD  # not kept: clients choose these
            label = self._labels[method] = method
        return label

    def done(
        self,
        frame: _wire.Frame,
        revision: Revision,
        reply: bytes | None,
        began: float,
        fast: bool,
        fast_entries: Container[int] = (),
    ) -> None:
        """A body was answered with ``reply`` (None: nothing was owed); ``fast``: by the
        extension alone, else ``fast_entries`` are the indices of an array's entries it
        answered."""
        seconds = _perf() - began
        path = "fast" if fast else "general"
        self.latency[path][bisect_left(LATENCY_BUCKETS, seconds)] += 1
        self.latency_sum[path] += seconds
        version = revision.version
        requests = self.requests
        kind = frame.kind
        if kind == _FRAME_SINGLE:
            entry = frame.entries[0]
            if entry.kind != _REQUEST and entry.kind != _INVALID:
                return
            code = error_code(reply, entry.raw_id) if reply is not None else None
            method = self.method_label(entry.method if entry.kind == _REQUEST else None)
            self._count(requests, method, version, code, path)
            return
        if kind != _FRAME_BATCH:
            # A parse error, an empty or too large batch: one error for the whole body.
            code = error_code(reply, None) if reply is not None else None
            self._count(requests, INVALID_METHOD, version, code, path)
            return
        size = len(frame.entries)
        self.batch[bisect_left(BATCH_BUCKETS, size)] += 1
        self.batch_sum += size
        codes: dict[tuple[bool, Any], list[int | None]] = {}
        if reply is not None:
            try:
                answers = orjson.loads(reply)
            except orjson.JSONDecodeError:
                answers = []
            if isinstance(answers, dict):  # the whole batch refused at once
                answers = [answers] * size
            for answer in answers:
                if isinstance(answer, dict):
                    error = answer.get("error")
                    code = error.get("code") if isinstance(error, dict) else None
                    codes.setdefault(_id_key(answer.get("id")), []).append(code)
        for i, entry in enumerate(frame.entries):
            if entry.kind != _REQUEST and entry.kind != _INVALID:
                continue
            raw = entry.raw_id
            found = codes.get(_id_key(orjson.loads(raw)) if raw is not None else (False, "None"))
            code = found.pop(0) if found else None
            method = self.method_label(entry.method if entry.kind == _REQUEST else None)
            self._count(requests, method, version, code, "fast" if i in fast_entries else path)

    def _count(
        self,
        requests: dict[tuple[str, str, str, str], int],
        method: str,
        version: str,
        code: int | None,
        path: str,
    ) -> None:
        key = (method, version, "ok" if code is None else "error", path)
        requests[key] = requests.get(key, 0) + 1
        if code is not None:
            self.errors[code] = self.errors.get(code, 0) + 1

    # -- snapshots -------------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        """What this worker counted, as JSON-ready data."""
        return {
            "pid": os.getpid(),
            "transport": self.transport,
            "requests": [[*key, n] for key, n in self.requests.items()],
            "errors": [[code, n] for code, n in self.errors.items()],
            "latency": {p: [self.latency[p], self.latency_sum[p]] for p in self.latency},
            "batch": [self.batch, self.batch_sum],
            "gauges": {
                "inflight": self.inflight,
                "sessions": self.sessions(),
                "streams": self.streams(),
            },
        }


def instrument(dispatcher: Dispatcher, metrics: Metrics) -> None:
    """Count every body ``dispatcher`` answers: its ``start`` is wrapped on this instance
    only, so a dispatcher without metrics pays nothing. Whether the extension answered
    (the fast path) is read off the dispatcher's :attr:`~jetmcp.core.dispatch.Dispatcher.fast`
    count."""
    inner_start = dispatcher.start
    done = metrics.done
    dispatcher.fast_entries = []

    def start(frame: _wire.Frame, ex: Exchange) -> Any:
        began = _perf()
        hits = dispatcher.fast
        marks = dispatcher.fast_entries
        out = inner_start(frame, ex)
        answered = dispatcher.fast - hits
        # Some entries of an array by the extension, the others not: the dispatcher named
        # which (a fresh list); all of them (or the only message): the body's path is fast.
        some: list[int] = []
        if answered and dispatcher.fast_entries is not marks and dispatcher.fast_entries:
            some = dispatcher.fast_entries
        if out is None or isinstance(out, bytes):
            done(frame, ex.revision, out, began, answered > 0 and not some, some)
            return out
        return _finishing(out, frame, ex, began, some)

    async def _finishing(
        pending: Any, frame: _wire.Frame, ex: Exchange, began: float, some: list[int]
    ) -> Any:
        metrics.inflight += 1
        reply: bytes | None = None
        try:
            reply = await pending
            return reply
        finally:
            metrics.inflight -= 1
            done(frame, ex.revision, reply, began, False, some)

    dispatcher.start = start  # type: ignore[method-assign]


# --------------------------------------------------------------------------- files


class MetricsFiles:
    """Where the workers of one ``jetmcp run`` leave their counts (one JSON file each)."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)

    def write(self, snapshot: dict[str, Any]) -> None:
        """Replace this worker's file (atomically: a reader never sees half of it)."""
        target = self.directory / f"{snapshot['pid']}.json"
        partial = target.with_suffix(".tmp")
        partial.write_bytes(orjson.dumps(snapshot))
        os.replace(partial, target)

    def read(self, skip_pid: int | None = None) -> Iterator[dict[str, Any]]:
        for path in sorted(self.directory.glob("*.json")):
            try:
                data = orjson.loads(path.read_bytes())
            except (OSError, orjson.JSONDecodeError):
                continue  # a worker's file being replaced, or gone
            if isinstance(data, dict) and data.get("pid") != skip_pid:
                yield data


async def flush_forever(files: MetricsFiles, metrics: Metrics) -> None:
    """Write this worker's counts every :data:`FLUSH_SECONDS` (run as a task in the worker)."""
    while True:
        # The directory going away means the run is ending: nothing to report then.
        with contextlib.suppress(OSError):
            await asyncio.to_thread(files.write, metrics.snapshot())
        await asyncio.sleep(FLUSH_SECONDS)


def _alive(pid: Any) -> bool:
    if not isinstance(pid, int):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Collector:
    """A prometheus-client collector adding up snapshots: this worker's own, live, and
    the files of the others (``files`` None: this process alone)."""

    def __init__(
        self, files: MetricsFiles | None, own: Callable[[], dict[str, Any]] | None = None
    ) -> None:
        self.files = files
        self.own = own

    def snapshots(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        if self.own is not None:
            out.append(self.own())
        if self.files is not None:
            out.extend(self.files.read(skip_pid=os.getpid() if self.own is not None else None))
        return out

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import (
            CounterMetricFamily,
            GaugeMetricFamily,
            HistogramMetricFamily,
        )

        snaps = self.snapshots()
        requests = CounterMetricFamily(
            "jetmcp_requests",
            "JSON-RPC requests answered, by method, revision, outcome, transport and path "
            "(fast: answered by the Rust extension alone)",
            labels=["transport", "method", "revision", "outcome", "path"],
        )
        errors = CounterMetricFamily(
            "jetmcp_errors", "JSON-RPC error replies, by code", labels=["transport", "code"]
        )
        latency = HistogramMetricFamily(
            "jetmcp_request_duration_seconds",
            "Time from a body's dispatch to its reply, by path",
            labels=["transport", "path"],
            unit="",
        )
        batches = HistogramMetricFamily(
            "jetmcp_batch_size", "Entries per JSON-RPC batch", labels=["transport"]
        )
        inflight = GaugeMetricFamily(
            "jetmcp_inflight", "Bodies whose handlers are still running", labels=["transport"]
        )
        sessions = GaugeMetricFamily("jetmcp_sessions", "Live sessions", labels=["transport"])
        streams = GaugeMetricFamily(
            "jetmcp_open_streams", "Open GET event streams", labels=["transport"]
        )
        req_sum: dict[tuple[str, ...], float] = {}
        err_sum: dict[tuple[str, str], float] = {}
        lat: dict[tuple[str, str], tuple[list[int], float]] = {}
        bat: dict[str, tuple[list[int], float]] = {}
        gauges: dict[tuple[str, str], float] = {}
        for snap in snaps:
            transport = str(snap.get("transport", "http"))
            for *labels, n in snap.get("requests", []):
                key = (transport, *map(str, labels))
                req_sum[key] = req_sum.get(key, 0) + n
            for code, n in snap.get("errors", []):
                err_key = (transport, str(code))
                err_sum[err_key] = err_sum.get(err_key, 0) + n
            for path, (buckets, total) in snap.get("latency", {}).items():
                _add_histogram(lat, (transport, path), buckets, total)
            buckets, total = snap.get("batch", [[], 0])
            _add_histogram(bat, transport, buckets, total)
            if (self.own is not None and snap is snaps[0]) or _alive(snap.get("pid")):
                for name, value in snap.get("gauges", {}).items():
                    gauges[(transport, name)] = gauges.get((transport, name), 0) + value
        for key, n in req_sum.items():
            requests.add_metric(list(key), n)
        for (transport, code), n in err_sum.items():
            errors.add_metric([transport, code], n)
        for (transport, path), (buckets, total) in lat.items():
            latency.add_metric([transport, path], _cumulative(buckets, LATENCY_BUCKETS), total)
        for transport, (buckets, total) in bat.items():
            batches.add_metric([transport], _cumulative(buckets, BATCH_BUCKETS), total)
        for (transport, name), value in gauges.items():
            {"inflight": inflight, "sessions": sessions, "streams": streams}[name].add_metric(
                [transport], value
            )
        yield from (requests, errors, latency, batches, inflight, sessions, streams)


def _add_histogram(
    into: dict[Any, tuple[list[int], float]], key: Any, buckets: list[int], total: float
) -> None:
    if not buckets:
        return
    have = into.get(key)
    if have is None:
        into[key] = (list(buckets), float(total))
    else:
        into[key] = ([a + b for a, b in zip(have[0], buckets, strict=False)], have[1] + total)


def _cumulative(counts: list[int], bounds: tuple[float, ...]) -> list[tuple[str, float]]:
    out: list[tuple[str, float]] = []
    running = 0
    for bound, n in zip([*map(_le, bounds), "+Inf"], counts, strict=False):
        running += n
        out.append((bound, running))
    return out


def _le(bound: float) -> str:
    return repr(float(bound))


def render(collector: Collector) -> bytes:
    """The Prometheus text exposition of what ``collector`` adds up."""
    from prometheus_client import CollectorRegistry, generate_latest

    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    return generate_latest(registry)


def serve_port(port: int, host: str, files: MetricsFiles) -> Any:
    """Serve ``/metrics`` on ``host:port`` from a thread of this process (the ``jetmcp run``
    process, which serves no MCP itself), adding up the workers' files."""
    from prometheus_client import CollectorRegistry, start_http_server

    registry = CollectorRegistry(auto_describe=False)
    registry.register(Collector(files))
    server, _thread = start_http_server(port, addr=host, registry=registry)
    return server


def require_prometheus(flag: str) -> None:
    try:
        import prometheus_client  # noqa: F401
    except ImportError:
        raise ImportError(
            f"{flag} needs prometheus-client: pip install 'jetmcp[metrics]'"
        ) from None


__all__ = [
    "BATCH_BUCKETS",
    "LATENCY_BUCKETS",
    "METRICS_DIR_ENV",
    "Collector",
    "Metrics",
    "MetricsFiles",
    "error_code",
    "flush_forever",
    "instrument",
    "render",
    "require_prometheus",
    "serve_port",
]
