"""Where legacy-era sessions live: the :class:`SessionStore` interface and its in-memory
implementation (the default for one process)."""

from __future__ import annotations

import secrets
import time
from collections import OrderedDict
from typing import Protocol

from jetmcp.call import Session
from jetmcp.dispatch import InFlight


def end_session(session: Session) -> None:
    """Close what the transport keeps open for a session that ended (its SSE streams)."""
    close = getattr(session.outbound, "close", None)
    if close is not None:
        close()


def new_session_id() -> str:
    """An unguessable session id of visible ASCII (0x21-0x7E), as the spec asks."""
    return secrets.token_urlsafe(24)


class SessionStore(Protocol):
    """Keeps sessions by id. Implementations must be safe to call from one event loop."""

    async def add(self, session: Session) -> None: ...

    async def get(self, session_id: str) -> Session | None: ...

    async def remove(self, session_id: str) -> bool: ...

    def inflight(self, session_id: str) -> InFlight:
        """The running requests of a session (for cancellation)."""
        ...


class MemorySessionStore:
    """Sessions in a dict, least recently used first; bounded in count and idle time."""

    def __init__(self, max_sessions: int = 10_000, idle_seconds: float = 3600.0) -> None:
        self.max_sessions = max_sessions
        self.idle_seconds = idle_seconds
        self._sessions: OrderedDict[str, tuple[Session, float, InFlight]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._sessions)

    async def add(self, session: Session) -> None:
        assert session.id is not None
        self._expire(time.monotonic())
        while len(self._sessions) >= self.max_sessions:
            _, (evicted, _, _) = self._sessions.popitem(last=False)
            end_session(evicted)
        self._sessions[session.id] = (session, time.monotonic(), InFlight())

    async def get(self, session_id: str) -> Session | None:
        entry = self._sessions.get(session_id)
        if entry is None:
            return None
        now = time.monotonic()
        if now - entry[1] > self.idle_seconds:
            del self._sessions[session_id]
            end_session(entry[0])
            return None
        self._sessions[session_id] = (entry[0], now, entry[2])
        self._sessions.move_to_end(session_id)
        return entry[0]

    async def remove(self, session_id: str) -> bool:
        entry = self._sessions.pop(session_id, None)
        if entry is None:
            return False
        entry[2].cancel_all()
        end_session(entry[0])
        return True

    def inflight(self, session_id: str) -> InFlight:
        entry = self._sessions.get(session_id)
        return entry[2] if entry is not None else InFlight()

    def _expire(self, now: float) -> None:
        limit = now - self.idle_seconds
        while self._sessions:
            sid, (session, seen, _) = next(iter(self._sessions.items()))
            if seen >= limit:
                break
            del self._sessions[sid]
            end_session(session)


__all__ = ["MemorySessionStore", "SessionStore", "end_session", "new_session_id"]
