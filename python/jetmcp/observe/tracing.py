"""OpenTelemetry spans: one per HTTP request (made by :mod:`jetmcp.observe.app`) and one per
JSON-RPC request it carries, a batch entry included.

Only opentelemetry-api is used: spans are no-ops until the application installs an SDK (a
``TracerProvider`` with an exporter, as ``opentelemetry-instrument`` or a few lines at start
do). The W3C trace context comes from the HTTP ``traceparent``/``tracestate`` headers for the
request's span, and from a request's ``params._meta.traceparent``/``tracestate`` for its
own span (else it is a child of the request's). With tracing on, no call is answered by the
Rust extension alone: every entry goes through Python, where its span is.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from jetmcp import _wire
from jetmcp.core.runners import LegacyRunner, ModernRunner, Pending, Shared
from jetmcp.observe.metrics import error_code

if TYPE_CHECKING:
    from jetmcp.core.dispatch import Dispatcher
    from jetmcp.core.exchange import Exchange
    from jetmcp.core.runners import Served

_REQUEST = _wire.REQUEST
#: The most spans kept for handlers that wait, until ``_finish`` takes them (bounded in case
#: a Pending is dropped before it).
_MAX_WAITING = 65_536
_NAMED = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}


def require_otel(flag: str) -> None:
    try:
        import opentelemetry.trace  # noqa: F401
    except ImportError:
        raise ImportError(f"{flag} needs opentelemetry-api: pip install 'jetmcp[otel]'") from None


def tracer() -> Any:
    from opentelemetry import trace

    import jetmcp

    return trace.get_tracer("jetmcp", jetmcp.__version__)


def extract(carrier: Mapping[str, Any]) -> Any:
    """The context a W3C ``traceparent``/``tracestate`` pair names (None without one)."""
    found = {k: v for k in ("traceparent", "tracestate") if isinstance(v := carrier.get(k), str)}
    if "traceparent" not in found:
        return None
    from opentelemetry import propagate

    return propagate.extract(found)


def end_span(span: Any, reply: bytes | None, raw_id: bytes | None) -> None:
    from opentelemetry.trace import Status, StatusCode

    code = error_code(reply, raw_id) if reply is not None else None
    if code is not None:
        span.set_attribute("rpc.jsonrpc.error_code", code)
        span.set_status(Status(StatusCode.ERROR, f"JSON-RPC error {code}"))
    span.end()


class _Spans:
    """The spans of one dispatcher's requests: started around a runner's ``entry`` and, for
    a handler that waits, ended when the dispatcher's ``_finish`` is done with it."""

    __slots__ = ("context", "kind", "trace", "tracer", "waiting")

    def __init__(self) -> None:
        from opentelemetry import context, trace
        from opentelemetry.trace import SpanKind

        self.context = context
        self.trace = trace
        self.kind = SpanKind.SERVER
        self.tracer = tracer()
        #: Spans of entries whose handlers wait, by the id of their Pending.
        self.waiting: dict[int, Any] = {}

    def entry(
        self,
        inner: Callable[[_wire.Entry, Exchange, bool], Served],
        entry: _wire.Entry,
        ex: Exchange,
        in_batch: bool,
    ) -> Served:
        if entry.kind != _REQUEST:
            return inner(entry, ex, in_batch)
        method = entry.method or ""
        name = method
        parent = None
        try:
            params = entry.params()
        except ValueError:
            params = None
        if isinstance(params, dict):
            meta = params.get("_meta")
            if isinstance(meta, dict):
                parent = extract(meta)
            target = params.get(_NAMED.get(method, ""))
            if isinstance(target, str):
                name = f"{method} {target}"
        attributes: dict[str, Any] = {
            "mcp.method.name": method,
            "mcp.protocol.version": ex.revision.version,
            "rpc.system": "jsonrpc",
        }
        if entry.raw_id is not None:
            attributes["jsonrpc.request.id"] = entry.raw_id.decode("utf-8", "replace")
        if ex.session is not None and ex.session.id is not None:
            attributes["mcp.session.id.hash"] = _digest(ex.session.id)
        if in_batch:
            attributes["jetmcp.batch_entry"] = True
        span = self.tracer.start_span(name, context=parent, kind=self.kind, attributes=attributes)
        token = self.context.attach(self.trace.set_span_in_context(span))
        try:
            out = inner(entry, ex, in_batch)
        except BaseException as exc:
            span.record_exception(exc)
            span.end()
            raise
        finally:
            self.context.detach(token)
        if out is None or isinstance(out, bytes):
            end_span(span, out, entry.raw_id)
            return out
        waiting = self.waiting
        if len(waiting) >= _MAX_WAITING:
            for stale in list(waiting.values()):
                stale.end()
            waiting.clear()
        waiting[id(out)] = span
        return out

    async def finish(
        self,
        inner: Callable[..., Awaitable[bytes | None]],
        pending: Pending,
        entry: _wire.Entry,
        running: Any,
        ex: Exchange,
        single: bool,
    ) -> bytes | None:
        span = self.waiting.pop(id(pending), None)
        if span is None:
            return await inner(pending, entry, running, ex, single)
        token = self.context.attach(self.trace.set_span_in_context(span))
        reply: bytes | None = None
        try:
            reply = await inner(pending, entry, running, ex, single)
            return reply
        finally:
            self.context.detach(token)
            end_span(span, reply, entry.raw_id)


class _TracedModern(ModernRunner):
    __slots__ = ("spans",)

    def __init__(self, shared: Shared, spans: _Spans) -> None:
        super().__init__(shared)
        self.spans = spans

    def entry(self, entry: _wire.Entry, ex: Exchange, in_batch: bool) -> Served:
        return self.spans.entry(super().entry, entry, ex, in_batch)


class _TracedLegacy(LegacyRunner):
    __slots__ = ("spans",)

    def __init__(self, shared: Shared, modern_runner: ModernRunner, spans: _Spans) -> None:
        super().__init__(shared, modern_runner)
        self.spans = spans

    def entry(self, entry: _wire.Entry, ex: Exchange, in_batch: bool) -> Served:
        return self.spans.entry(super().entry, entry, ex, in_batch)


def instrument(dispatcher: Dispatcher) -> None:
    """Give every request ``dispatcher`` runs a span of its own: its era runners are traced
    ones (a span around each entry), its ``_finish`` ends the span of a handler that waited,
    and the extension plans no calls (it would answer them with no span)."""
    spans = _Spans()
    dispatcher.planning = False
    dispatcher.modern = _TracedModern(dispatcher.shared, spans)
    dispatcher.legacy = _TracedLegacy(dispatcher.shared, dispatcher.modern, spans)
    inner_finish = dispatcher._finish

    async def finish(
        pending: Pending, entry: _wire.Entry, running: Any, ex: Exchange, single: bool
    ) -> bytes | None:
        return await spans.finish(inner_finish, pending, entry, running, ex, single)

    dispatcher._finish = finish  # type: ignore[method-assign]


def _digest(value: str) -> str:
    """A short digest of a session id: spans name the session without carrying its secret."""
    import hashlib

    return hashlib.sha256(value.encode()).hexdigest()[:16]


__all__ = ["end_span", "extract", "instrument", "require_otel", "tracer"]
