"""Sessions in one process's memory: the default store for one worker (and stdio)."""

from __future__ import annotations

import time
from collections import OrderedDict

from jetmcp.core.call import Session
from jetmcp.core.inflight import InFlight
from jetmcp.state.base import SessionLimit, end_session


class _Entry:
    __slots__ = ("inflight", "seen", "session")

    def __init__(self, session: Session, seen: float) -> None:
        self.session = session
        self.seen = seen
        self.inflight = InFlight()


class MemorySessionStore:
    """Sessions in memory, bounded in count and idle time.

    Eviction policy: a session is *new* until its client makes a second request with it,
    then *established*. New sessions have a cap of their own (``max_new``): past it the
    oldest new session ends, so a flood of ``initialize`` only churns other new sessions.
    When the store holds ``max_sessions`` in all, room is made by ending the oldest new
    session, else the least recently used established one if it has been idle for at least
    ``protect_seconds``; otherwise the newcomer is refused (:class:`SessionLimit`). A
    session idle for ``idle_seconds`` ends.
    """

    def __init__(
        self,
        max_sessions: int = 10_000,
        idle_seconds: float = 3600.0,
        max_new: int = 1_000,
        protect_seconds: float = 60.0,
    ) -> None:
        self.max_sessions = max(1, max_sessions)
        self.idle_seconds = idle_seconds
        self.max_new = max(1, min(max_new, self.max_sessions))
        self.protect_seconds = protect_seconds
        #: Oldest (least recently used) first.
        self._new: OrderedDict[str, _Entry] = OrderedDict()
        self._established: OrderedDict[str, _Entry] = OrderedDict()

    def __len__(self) -> int:
        return len(self._new) + len(self._established)

    def counts(self) -> tuple[int, int]:
        """(new, established) sessions."""
        return len(self._new), len(self._established)

    async def add(self, session: Session) -> None:
        assert session.id is not None
        now = time.monotonic()
        self._expire(now)
        if len(self._new) >= self.max_new:
            self._end_oldest(self._new)
        if len(self) >= self.max_sessions:
            if self._new:
                self._end_oldest(self._new)
            else:
                oldest = next(iter(self._established.values()))
                if now - oldest.seen < self.protect_seconds:
                    raise SessionLimit(f"every one of the {self.max_sessions} sessions is in use")
                self._end_oldest(self._established)
        self._new[session.id] = _Entry(session, now)

    def held(self, session_id: str) -> _Entry | None:
        entry = self._established.get(session_id)
        if entry is None:
            return None  # a new session's second request (get promotes it), or none
        now = time.monotonic()
        if now - entry.seen > self.idle_seconds:
            return None  # get ends it
        entry.seen = now
        self._established.move_to_end(session_id)
        return entry

    async def get(self, session_id: str) -> Session | None:
        held = self.held(session_id)
        if held is not None:
            return held.session
        entry = self._established.pop(session_id, None)
        if entry is not None:  # idle too long, as held found
            end_session(entry.session)
            return None
        entry = self._new.pop(session_id, None)
        if entry is None:
            return None
        now = time.monotonic()
        if now - entry.seen > self.idle_seconds:
            end_session(entry.session)
            return None
        entry.seen = now
        self._established[session_id] = entry  # its second request: established now
        return entry.session

    async def remove(self, session_id: str) -> bool:
        entry = self._established.pop(session_id, None) or self._new.pop(session_id, None)
        if entry is None:
            return False
        entry.inflight.cancel_all()
        end_session(entry.session)
        return True

    def inflight(self, session_id: str) -> InFlight:
        entry = self._established.get(session_id) or self._new.get(session_id)
        return entry.inflight if entry is not None else InFlight()

    def _end_oldest(self, tier: OrderedDict[str, _Entry]) -> None:
        _, entry = tier.popitem(last=False)
        entry.inflight.cancel_all()
        end_session(entry.session)

    def _expire(self, now: float) -> None:
        limit = now - self.idle_seconds
        for tier in (self._new, self._established):
            while tier:
                entry = next(iter(tier.values()))
                if entry.seen >= limit:
                    break
                self._end_oldest(tier)


__all__ = ["MemorySessionStore"]
