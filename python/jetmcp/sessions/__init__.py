"""Where legacy-era sessions live: the :class:`SessionStore` interface and its two
implementations, in one process's memory (the default: one worker, stdio) and in Redis
(:mod:`jetmcp.sessions.redis`: several workers and hosts; ``jetmcp run --redis URL``)."""

from __future__ import annotations

from jetmcp.sessions.base import (
    Relay,
    SessionLimit,
    SessionStore,
    StateUnavailable,
    end_session,
    new_session_id,
)
from jetmcp.sessions.memory import MemorySessionStore

__all__ = [
    "MemorySessionStore",
    "Relay",
    "SessionLimit",
    "SessionStore",
    "StateUnavailable",
    "end_session",
    "new_session_id",
]
