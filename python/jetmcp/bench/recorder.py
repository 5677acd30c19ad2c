"""What one load run saw: latencies in HDR histograms per message kind, errors by kind,
throughput and latency second by second, and how well the generator kept its schedule.

A :class:`Recorder` is filled on the hot path (one call per reply) and turned into plain
data (:meth:`Recorder.to_raw`) that another process can merge without loss
(:meth:`Recorder.merge_raw`): histograms travel as their populated buckets.
"""

from __future__ import annotations

from typing import Any

import orjson

from jetmcp import _wire
from jetmcp.client.transports import SseParser

#: Latencies are recorded in microseconds, to three significant figures, up to one hour.
HIGHEST_US = 3_600_000_000
#: Per-second histograms only draw the latency-over-time plot: two figures are enough.
TIMELINE_FIGURES = 2

#: The ``errors`` keys the JSON report has always had, plus ``tool`` (``isError: true``).
ERROR_KEYS = ("jsonrpc", "tool", "http", "transport", "missing")


def new_histogram(figures: int = 3) -> _wire.Histogram:
    return _wire.Histogram(HIGHEST_US, figures)


def histogram_from(
    counts: list[list[int]] | list[tuple[int, int]], figures: int = 3
) -> _wire.Histogram:
    hist = new_histogram(figures)
    for value, count in counts:
        hist.record_n(int(value), int(count))
    return hist


class Second:
    """One second of a run: replies, failed requests, their latency."""

    __slots__ = ("errors", "hist", "requests")

    def __init__(self) -> None:
        self.requests = 0
        self.errors = 0
        self.hist = new_histogram(TIMELINE_FIGURES)


class Recorder:
    """Counts for one run (or one step of a ramp). ``labels`` name the message kinds
    (``tools/call add``, ``tools/list``...); replies are recorded against a label's index."""

    def __init__(self, labels: list[str], started_ns: int, *, open_model: bool = False) -> None:
        self.labels = list(labels)
        self.started_ns = started_ns
        self.open_model = open_model
        n = len(labels)
        #: Latency from the moment a request was due (the open model's scheduled time, the
        #: closed loop's send) to its reply.
        self.hists = [new_histogram() for _ in range(n)]
        #: Open model only: latency from the moment the request was written.
        self.service = [new_histogram() for _ in range(n)] if open_model else []
        self.replies = [0] * n
        self.failed = [0] * n
        self.entries = 0
        self.errors = dict.fromkeys(ERROR_KEYS, 0)
        #: ``(label index, kind)`` -> count; kinds: ``jsonrpc -32602``, ``isError``,
        #: ``http 503``, ``transport``, ``timeout``, ``missing``.
        self.kinds: dict[tuple[int, str], int] = {}
        self.seconds: dict[int, Second] = {}
        self._sec = -1
        self._cur = Second()
        # Schedule keeping (open model).
        self.sent = 0
        self.late = 0
        self.max_behind_us = 0
        self.waited = 0
        self.lag = new_histogram()
        self.ended_ns = started_ns

    # ------------------------------------------------------------------ hot path

    def _second(self, now_ns: int) -> Second:
        sec = (now_ns - self.started_ns) // 1_000_000_000
        if sec != self._sec:
            cur = self.seconds.get(sec)
            if cur is None:
                cur = self.seconds[sec] = Second()
            self._sec = sec
            self._cur = cur
        return self._cur

    def reply(
        self, label: int, latency_us: int, now_ns: int, status: int, body: bytes, expected: int
    ) -> None:
        """One answered body. The common case (HTTP 200, one JSON result, no error) costs a
        few byte searches; anything else is parsed and classified."""
        self.hists[label].record(latency_us)
        if (now_ns - self.started_ns) // 1_000_000_000 == self._sec:
            cur = self._cur
        else:
            cur = self._second(now_ns)
        cur.hist.record(latency_us)
        cur.requests += 1
        self.replies[label] += 1
        if (
            expected == 1
            and status == 200
            and body[:1] == b"{"
            and b'"error"' not in body
            and b'"result"' in body
            and (b"isError" not in body or _plain_false(body))
        ):
            self.entries += 1
            return
        self._classify(label, status, body, expected, cur)

    def _classify(self, label: int, status: int, body: bytes, expected: int, cur: Second) -> None:
        kinds: list[str] = []
        messages = _messages(body)
        answered = 0
        for message in messages:
            if not isinstance(message, dict) or "id" not in message:
                continue
            if "error" in message:
                answered += 1
                error = message["error"]
                code = error.get("code") if isinstance(error, dict) else None
                self.errors["jsonrpc"] += 1
                kinds.append(f"jsonrpc {code}")
            elif "result" in message:
                answered += 1
                result = message["result"]
                if isinstance(result, dict) and result.get("isError") is True:
                    self.errors["tool"] += 1
                    kinds.append("isError")
        self.entries += answered
        if status >= 400:
            self.errors["http"] += 1
            kinds.append(f"http {status}")
        elif answered < expected:
            self.errors["missing"] += expected - answered
            kinds.append("missing")
        if kinds:
            self.failed[label] += 1
            cur.errors += 1
            for kind in kinds:
                key = (label, kind)
                self.kinds[key] = self.kinds.get(key, 0) + 1

    def service_time(self, label: int, latency_us: int) -> None:
        self.service[label].record(latency_us)

    def failure(self, label: int, kind: str, now_ns: int) -> None:
        """A request that got no reply: ``transport`` (the connection failed) or
        ``timeout``; both count under the report's ``transport`` errors."""
        self.errors["transport"] += 1
        self.failed[label] += 1
        self._second(now_ns).errors += 1
        key = (label, kind)
        self.kinds[key] = self.kinds.get(key, 0) + 1

    def scheduled(self, lag_ns: int, tolerance_ns: int) -> None:
        """A request of the open model left ``lag_ns`` after its scheduled time with a
        connection free: the generator's own delay."""
        lag_us = lag_ns // 1000 if lag_ns > 0 else 0
        self.lag.record(lag_us)
        if lag_ns > tolerance_ns:
            self.late += 1
            if lag_us > self.max_behind_us:
                self.max_behind_us = lag_us

    # ------------------------------------------------------------------ totals

    @property
    def requests(self) -> int:
        return sum(self.replies)

    @property
    def failures(self) -> int:
        return sum(self.failed)

    def total(self) -> _wire.Histogram:
        hist = new_histogram()
        for h in self.hists:
            hist.add(h)
        return hist

    def total_service(self) -> _wire.Histogram | None:
        if not self.open_model:
            return None
        hist = new_histogram()
        for h in self.service:
            hist.add(h)
        return hist

    # ------------------------------------------------------------------ merging

    def to_raw(self) -> dict[str, Any]:
        """Everything, as JSON-able data that :meth:`merge_raw` takes back without loss."""
        return {
            "labels": self.labels,
            "open_model": self.open_model,
            "started_ns": self.started_ns,
            "ended_ns": self.ended_ns,
            "hists": [h.counts() for h in self.hists],
            "service": [h.counts() for h in self.service],
            "replies": self.replies,
            "failed": self.failed,
            "entries": self.entries,
            "errors": self.errors,
            "kinds": [[label, kind, n] for (label, kind), n in self.kinds.items()],
            "seconds": [
                [sec, s.requests, s.errors, s.hist.counts()] for sec, s in self.seconds.items()
            ],
            "sent": self.sent,
            "late": self.late,
            "max_behind_us": self.max_behind_us,
            "waited": self.waited,
            "lag": self.lag.counts(),
        }

    @classmethod
    def from_raw(cls, raw: dict[str, Any]) -> Recorder:
        rec = cls(raw["labels"], raw["started_ns"], open_model=raw["open_model"])
        rec.ended_ns = raw["started_ns"]
        rec.merge_raw(raw)
        return rec

    def merge_raw(self, raw: dict[str, Any]) -> None:
        """Add another recorder's counts (same labels; its seconds are aligned on its own
        start, which a multi-process run makes common)."""
        if raw["labels"] != self.labels:
            raise ValueError("cannot merge runs of different message mixes")
        for mine, counts in zip(self.hists, raw["hists"], strict=True):
            for value, count in counts:
                mine.record_n(value, count)
        for mine, counts in zip(self.service, raw["service"], strict=False):
            for value, count in counts:
                mine.record_n(value, count)
        for i, n in enumerate(raw["replies"]):
            self.replies[i] += n
        for i, n in enumerate(raw["failed"]):
            self.failed[i] += n
        self.entries += raw["entries"]
        for key, n in raw["errors"].items():
            self.errors[key] = self.errors.get(key, 0) + n
        for label, kind, n in raw["kinds"]:
            self.kinds[(label, kind)] = self.kinds.get((label, kind), 0) + n
        # perf_counter_ns is the system's monotonic clock: comparable across processes.
        shift = round((raw["started_ns"] - self.started_ns) / 1e9)
        for sec, requests, errors, counts in raw["seconds"]:
            sec += shift
            second = self.seconds.get(sec)
            if second is None:
                second = self.seconds[sec] = Second()
            second.requests += requests
            second.errors += errors
            for value, count in counts:
                second.hist.record_n(value, count)
        self.sent += raw["sent"]
        self.late += raw["late"]
        self.max_behind_us = max(self.max_behind_us, raw["max_behind_us"])
        self.waited += raw["waited"]
        for value, count in raw["lag"]:
            self.lag.record_n(value, count)
        self.ended_ns = max(self.ended_ns, raw["ended_ns"])


def _plain_false(body: bytes) -> bool:
    """Whether the one ``isError`` of a body is the key of a compact ``"isError":false``
    (what most servers, jetmcp's among them, put in every tool result). Inside a JSON
    string the quotes would be escaped, so neither pattern matches text; anything else
    (spaces, two keys, ``true``) goes to the full parse."""
    return body.count(b"isError") == 1 and b'"isError":false' in body


def _messages(body: bytes) -> list[Any]:
    """The JSON-RPC messages of a reply body: one JSON value or array, or the ``message``
    events of an SSE stream. Unreadable bodies hold none."""
    if not body:
        return []
    if body[:1] in (b"{", b"[", b" ", b"\n", b"\t", b"\r"):
        return _loads(body)
    out: list[Any] = []
    for event in SseParser().feed(body):
        if event.data and event.event == "message":
            out.extend(_loads(event.data))
    return out


def _loads(data: bytes | str) -> list[Any]:
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        return []
    return value if isinstance(value, list) else [value]
