"""The HTTP app with its observers on: Prometheus metrics, OpenTelemetry spans, a JSON
access log. A subclass of :class:`~jetmcp.transports.http.McpHttpApp` built only when one of
them is asked for (:func:`jetmcp.run.serving.make_app`), so a server without them runs
the plain class and pays for none of this.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import sys
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import orjson

from jetmcp.errors import INVALID_REQUEST
from jetmcp.observe import metrics as m
from jetmcp.protocol import revisions
from jetmcp.transports.http import McpHttpApp

if TYPE_CHECKING:
    from jetmcp.server.app import Server
    from jetmcp.settings import Settings
    from jetmcp.state import SessionStore
    from jetmcp.transports.auth import BearerGuard

access_log = logging.getLogger("jetmcp.access")
_TEXT = [("content-type", "text/plain; version=0.0.4; charset=utf-8")]
#: Methods the ``method`` label may name besides the server's own handlers.
_BUILTIN_METHODS = frozenset(
    {
        "initialize",
        "ping",
        "logging/setLevel",
        "server/discover",
        "notifications/initialized",
        "notifications/cancelled",
    }
)


class _Recorded:
    """An RSGI protocol object that remembers the status it was answered with."""

    __slots__ = ("_proto", "status")

    def __init__(self, proto: Any) -> None:
        self._proto = proto
        self.status = 0

    def __call__(self) -> Any:
        return self._proto()

    def __aiter__(self) -> Any:
        return self._proto.__aiter__()

    def client_disconnect(self) -> Any:
        return self._proto.client_disconnect()

    def response_bytes(self, status: int, headers: Any, body: bytes) -> None:
        self.status = status
        self._proto.response_bytes(status, headers, body)

    def response_str(self, status: int, headers: Any, body: str) -> None:
        self.status = status
        self._proto.response_str(status, headers, body)

    def response_empty(self, status: int, headers: Any) -> None:
        self.status = status
        self._proto.response_empty(status, headers)

    def response_stream(self, status: int, headers: Any) -> Any:
        self.status = status
        return self._proto.response_stream(status, headers)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._proto, name)


class ObservedHttpApp(McpHttpApp):
    """:class:`McpHttpApp` with the observers its settings ask for."""

    def __init__(
        self,
        server: Server,
        settings: Settings | None = None,
        store: SessionStore | None = None,
        *,
        manage_lifespan: bool = True,
        guard: BearerGuard | None = None,
    ) -> None:
        super().__init__(server, settings, store, manage_lifespan=manage_lifespan, guard=guard)
        s = self.settings
        self.metrics: m.Metrics | None = None
        self.metrics_files: m.MetricsFiles | None = None
        self.collector: m.Collector | None = None
        self._flusher: asyncio.Task[None] | None = None
        self.tracer: Any = None
        if s.otel:
            from jetmcp.observe import tracing

            tracing.require_otel("--otel")
            self.tracer = tracing.tracer()
            tracing.instrument(self.dispatcher)
        if s.metrics_port or s.metrics_path:
            m.require_prometheus("--metrics-port/--metrics-path")
            self.metrics = m.Metrics(
                "http", self._known_methods, self._session_count, self._stream_count
            )
            directory = os.environ.get(m.METRICS_DIR_ENV)
            self.metrics_files = m.MetricsFiles(directory) if directory else None
            self.collector = m.Collector(self.metrics_files, self.metrics.snapshot)
            m.instrument(self.dispatcher, self.metrics)
        if self.tracer is not None or self.metrics is not None:
            # Both observe what passes Dispatcher.start, which the usual POST's short way
            # (McpHttpApp.__rsgi__) does not: every POST takes the general path here.
            self.lane = False
        self.access = s.access_log
        if self.access and not access_log.handlers:
            # Workers are processes of their own: the log is set up where it is written.
            handler = logging.StreamHandler(sys.stderr)
            handler.setFormatter(logging.Formatter("%(message)s"))
            access_log.addHandler(handler)
            access_log.setLevel(logging.INFO)
            access_log.propagate = False

    def _known_methods(self) -> frozenset[str]:
        handlers = self.server.handlers
        known = getattr(self, "_known", None)
        if known is None or known[0] != len(handlers):
            known = (len(handlers), frozenset(handlers) | _BUILTIN_METHODS)
            self._known = known
        return known[1]

    def _session_count(self) -> int:
        counts = getattr(self.store, "__len__", None)
        return int(counts()) if counts is not None else 0

    def _stream_count(self) -> int:
        legacy = len(self.legacy.connections) if self.legacy is not None else 0
        return self.open_streams + legacy

    def __rsgi_init__(self, loop: Any) -> None:
        super().__rsgi_init__(loop)
        if self.metrics_files is not None and self.metrics is not None:
            self._flusher = loop.create_task(m.flush_forever(self.metrics_files, self.metrics))

    def __rsgi_del__(self, loop: Any) -> None:
        if self._flusher is not None:
            self._flusher.cancel()
        if self.metrics_files is not None and self.metrics is not None:
            with contextlib.suppress(OSError):
                self.metrics_files.write(self.metrics.snapshot())
        super().__rsgi_del__(loop)

    async def __rsgi__(self, scope: Any, proto: Any) -> None:
        if scope.proto != "http":
            return
        s = self.settings
        if self.collector is not None and scope.path == s.metrics_path:
            self._serve_metrics(scope, proto)
            return
        began = time.perf_counter()
        recorded = _Recorded(proto) if self.access or self.tracer is not None else proto
        span = token = None
        if self.tracer is not None:
            span, token = self._open_span(scope)
        try:
            await super().__rsgi__(scope, recorded)
        finally:
            status = recorded.status if isinstance(recorded, _Recorded) else 0
            if span is not None:
                self._close_span(span, token, status)
            if self.access:
                self._log(scope, status, began, span)

    # -- metrics on the MCP port -----------------------------------------------------------

    def _serve_metrics(self, scope: Any, proto: Any) -> None:
        from jetmcp import _wire

        refusal = self.guard.refusal(scope)
        if refusal is not None:
            status, why = refusal
            proto.response_bytes(
                status,
                [("content-type", "application/json")],
                _wire.encode_error(None, INVALID_REQUEST, why),
            )
            return
        if scope.method != "GET":
            proto.response_empty(405, [("allow", "GET")])
            return
        assert self.collector is not None
        proto.response_bytes(200, _TEXT, m.render(self.collector))

    # -- spans -----------------------------------------------------------------------------

    def _open_span(self, scope: Any) -> tuple[Any, Any]:
        from opentelemetry import context, trace
        from opentelemetry.trace import SpanKind

        from jetmcp.observe.tracing import extract

        headers = scope.headers
        parent = extract(
            {"traceparent": headers.get("traceparent"), "tracestate": headers.get("tracestate")}
        )
        span = self.tracer.start_span(
            f"{scope.method} {scope.path}",
            context=parent,
            kind=SpanKind.SERVER,
            attributes={
                "http.request.method": scope.method,
                "url.path": scope.path,
                "network.protocol.name": "http",
            },
        )
        return span, context.attach(trace.set_span_in_context(span))

    def _close_span(self, span: Any, token: Any, status: int) -> None:
        from opentelemetry import context
        from opentelemetry.trace import Status, StatusCode

        context.detach(token)
        if status:
            span.set_attribute("http.response.status_code", status)
            if status >= 500:
                span.set_status(Status(StatusCode.ERROR))
        span.end()

    # -- the access log --------------------------------------------------------------------

    def _log(self, scope: Any, status: int, began: float, span: Any) -> None:
        headers = scope.headers
        record: dict[str, Any] = {
            "time": datetime.now(UTC).isoformat(timespec="milliseconds"),
            "client": scope.client,
            "method": scope.method,
            "path": scope.path,
            "status": status,
            "duration_ms": round((time.perf_counter() - began) * 1000, 3),
        }
        version = headers.get("mcp-protocol-version")
        if version is not None and revisions.lookup(version.strip()) is not None:
            record["protocol_version"] = version.strip()
        rpc = headers.get("mcp-method")
        if rpc is not None and rpc in self._known_methods():
            record["rpc_method"] = rpc
        session = headers.get("mcp-session-id")
        if session is not None:
            # The id is a bearer secret: the log names it by a digest only.
            record["session"] = hashlib.sha256(session.encode()).hexdigest()[:16]
        if span is not None:
            ctx = span.get_span_context()
            if ctx.is_valid:
                record["trace_id"] = f"{ctx.trace_id:032x}"
        access_log.info(orjson.dumps(record).decode())


__all__ = ["ObservedHttpApp"]
