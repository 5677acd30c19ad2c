"""What every session store shares: the interfaces the transports and the dispatcher use, the
errors a store raises, and what a store needs of the server's task records
(:class:`SharedTask`: the stores know the tasks through it, not the server's modules)."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from jetmcp.core.call import Session
from jetmcp.core.inflight import InFlight
from jetmcp.errors import McpError


def end_session(session: Session) -> None:
    """Close what the transport keeps open for a session that ended (its SSE streams)."""
    close = getattr(session.outbound, "close", None)
    if close is not None:
        close()


def new_session_id() -> str:
    """An unguessable session id: a random (version 4) UUID, 122 bits from the system's
    CSPRNG, written the canonical way. Visible ASCII as the spec asks, and a UUID, because
    some clients parse session ids as UUIDs and drop anything else."""
    return str(uuid.uuid4())


class SessionLimit(Exception):
    """No room for a new session: every session is established and in use (HTTP 503)."""


class StateUnavailable(Exception):
    """The shared store cannot be reached now: the request that needs it is answered with
    HTTP 503 (and -32000), never left waiting; the store reconnects by itself."""


class Held(Protocol):
    """A session a store knows without I/O, with the requests of it running here."""

    session: Session
    inflight: InFlight


class SessionStore(Protocol):
    """Keeps sessions by id. Implementations must be safe to call from one event loop.

    ``get`` of a known session is on every request's path: a store keeps what never changes
    about a session (revision, client capabilities and info) where reading it costs no I/O.
    A store that cannot answer raises :class:`StateUnavailable`.
    """

    async def add(self, session: Session) -> None:
        """Keep a new session; raises :class:`SessionLimit` when there is no room."""
        ...

    async def get(self, session_id: str) -> Session | None: ...

    def held(self, session_id: str) -> Held | None:
        """What :meth:`get` would find, with :meth:`inflight`, when this process can tell
        now, with no I/O and no change of tier (and it counts as a use, as ``get`` does);
        None when only ``get`` can tell. Every request of an established session takes this
        path: no coroutine to await."""
        ...

    async def remove(self, session_id: str) -> bool: ...

    def inflight(self, session_id: str) -> InFlight:
        """The running requests of a session in this process (for cancellation)."""
        ...


class Relay(Protocol):
    """Carries what a client sent to one worker to the worker it concerns: an answer to a
    server-to-client request, or a ``notifications/cancelled``. Only a store shared between
    processes has one. Each call gives the delivery for the request that carried it to
    await: it raises :class:`~jetmcp.errors.McpError` (-32000, saying what was lost) when
    the shared state refused the write or did not take it in time, so the client is told
    (HTTP 503) instead of 202."""

    def answer(
        self, session_id: str, request_id: Any, is_error: bool, value: Any
    ) -> Awaitable[None]: ...

    def cancel(self, session_id: str, request_id: Any) -> Awaitable[None]: ...


class SharedTask(Protocol):
    """A task of either revision as a store shared between processes keeps it (the server's
    :class:`~jetmcp.server.tasks.TaskState`): what it writes at each change, and what it
    tells the task when another process asks."""

    @property
    def id(self) -> str: ...

    @property
    def status(self) -> str: ...

    @property
    def status_message(self) -> str | None: ...

    @property
    def created_at(self) -> str: ...

    @property
    def updated_at(self) -> str: ...

    @property
    def error(self) -> McpError | None: ...

    @property
    def result(self) -> dict[str, Any] | None: ...

    @property
    def terminal(self) -> bool: ...

    #: Told of every change (the store sets it when it adopts the task).
    mirror: Callable[[Any], None] | None

    def to_wire(self) -> dict[str, Any]: ...

    def stop_runner(self) -> None: ...

    def cancel(self) -> object: ...

    def relay(self, remote: Callable[[bytes], Awaitable[bool]]) -> None: ...

    def open_requests(self) -> dict[str, Any]: ...

    def answer(self, responses: dict[str, Any]) -> None: ...


__all__ = [
    "Held",
    "Relay",
    "SessionLimit",
    "SessionStore",
    "SharedTask",
    "StateUnavailable",
    "end_session",
    "new_session_id",
]
