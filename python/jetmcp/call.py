"""Per-request and per-session state handed from the transports, through the dispatcher,
to the method handlers."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from jetmcp._wire import dumps, encode_notification
from jetmcp.protocol.revisions import Revision

#: What a method handler gives back: the result object itself when it needed no waiting,
#: else an awaitable of it. Answering in place lets the dispatcher skip a task.
Result = dict[str, Any] | Awaitable[dict[str, Any]]
#: A method handler: params (``{}`` when absent) and the call, to a result.
Handler = Callable[[dict[str, Any], "Call"], Result]


class Sink(Protocol):
    """Where messages related to one request go (its SSE stream, stdout, or nowhere)."""

    async def send(self, message: bytes) -> None: ...


class NullSink:
    """Drops messages: used where the transport cannot carry them (plain JSON replies)."""

    __slots__ = ()

    async def send(self, message: bytes) -> None:
        return None


NULL_SINK = NullSink()

#: The syslog levels of ``logging/setLevel``, least severe first.
LOG_LEVELS: tuple[str, ...] = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)
LOG_RANK: dict[str, int] = {name: i for i, name in enumerate(LOG_LEVELS)}


class Session:
    """A legacy-era session: what ``initialize`` negotiated with one client."""

    __slots__ = (
        "client_capabilities",
        "client_info",
        "id",
        "initialized",
        "log_level",
        "revision",
        "subscriptions",
    )

    def __init__(
        self,
        session_id: str | None,
        revision: Revision,
        client_capabilities: dict[str, Any] | None = None,
        client_info: dict[str, Any] | None = None,
    ) -> None:
        self.id = session_id
        self.revision = revision
        self.client_capabilities: dict[str, Any] = client_capabilities or {}
        self.client_info: dict[str, Any] = client_info or {}
        self.initialized = False
        #: The minimum level of ``notifications/message`` to send; None sends every level.
        self.log_level: str | None = None
        self.subscriptions: set[str] = set()


class Call:
    """One request being served."""

    __slots__ = ("meta", "method", "raw_id", "revision", "session", "sink")

    def __init__(
        self,
        method: str,
        raw_id: bytes | None,
        revision: Revision,
        session: Session | None,
        sink: Sink,
        meta: dict[str, Any] | None,
    ) -> None:
        self.method = method
        self.raw_id = raw_id
        self.revision = revision
        self.session = session
        self.sink = sink
        self.meta = meta

    @property
    def request_id(self) -> Any:
        """The request id as a JSON value (str or int); None for a notification."""
        from orjson import loads

        return None if self.raw_id is None else loads(self.raw_id)

    @property
    def progress_token(self) -> Any:
        return None if self.meta is None else self.meta.get("progressToken")

    @property
    def client_capabilities(self) -> dict[str, Any]:
        return self.session.client_capabilities if self.session is not None else {}

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send a notification related to this request (on its stream, when it has one)."""
        if self.sink is NULL_SINK:
            return
        await self.sink.send(encode_notification(method, params if params is not None else {}))

    def wants_log(self, level: str) -> bool:
        """Whether a ``notifications/message`` at ``level`` should be sent for this call."""
        floor = self.session.log_level if self.session is not None else None
        if floor is None:
            return True
        return LOG_RANK.get(level, 0) >= LOG_RANK.get(floor, 0)


__all__ = [
    "LOG_LEVELS",
    "NULL_SINK",
    "Call",
    "Handler",
    "NullSink",
    "Result",
    "Session",
    "Sink",
    "dumps",
]
