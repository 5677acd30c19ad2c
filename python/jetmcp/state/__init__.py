"""Where what outlives one request lives: legacy-era sessions (the :class:`SessionStore`
interface and its two implementations, in one process's memory, the default: one worker,
stdio; and in Redis, :mod:`jetmcp.state.redis`: several workers and hosts, ``jetmcp run
--redis URL``), a session's SSE streams and event log (:mod:`jetmcp.state.streams`), and
tasks shared between processes (:mod:`jetmcp.state.redis_tasks`). It knows the transports
and the server only through the interfaces its base declares."""

from __future__ import annotations

from jetmcp.state.base import (
    Relay,
    SessionLimit,
    SessionStore,
    StateUnavailable,
    end_session,
    new_session_id,
)
from jetmcp.state.memory import MemorySessionStore

__all__ = [
    "MemorySessionStore",
    "Relay",
    "SessionLimit",
    "SessionStore",
    "StateUnavailable",
    "end_session",
    "new_session_id",
]
