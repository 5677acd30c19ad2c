"""Sessions, event logs and delivery between workers and hosts, in Redis
(``jetmcp run --redis redis://host:port/db``; redis-py's asyncio client with hiredis).

Any request may reach any worker: a session, its SSE event log, the GET stream that takes
its messages, its resource subscriptions all live in Redis (the keys and channels are listed
in :mod:`jetmcp.state.scripts`), changed by one Lua script per step.

What a worker keeps for itself:

- **The part of a session that never changes** (revision, client capabilities and info), in
  a bounded per-worker cache, so a request on a known session pays no round trip. Every
  worker hears (pub/sub channel ``P ctl``) when a session ends (``DELETE``, idle expiry,
  eviction) or changes (log level, ``initialized``) and updates its cache at once; while
  that channel is down the cache is not trusted and requests that need a session answer 503.
  A session's last use is written back at most once a second per worker (it keeps the
  session from idling out and moves a new one to the established tier).
- **The connections it holds**: a GET stream taking the session's messages, a resumed POST
  stream. Messages for them arrive on the worker's own channel (``P ch:<worker>``); a
  message sent while no GET stream is open waits, parked in the log, for the next one.
- **The requests it runs**, and their server-to-client requests: a ``notifications/cancelled``
  or a client's answer that reaches another worker is relayed on ``P ctl``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

import orjson
from redis.exceptions import RedisError

from jetmcp._wire import encode_notification
from jetmcp.core.call import Session
from jetmcp.core.inflight import InFlight
from jetmcp.errors import SERVER_ERROR, McpError
from jetmcp.state.base import SessionLimit, StateUnavailable
from jetmcp.state.redis_link import RedisState, check_reachable, shared_state_key
from jetmcp.state.redis_streams import RedisStreams

if TYPE_CHECKING:
    from jetmcp.server.app import Server
    from jetmcp.settings import Settings

log = logging.getLogger("jetmcp.redis")

#: Seconds between a worker's heartbeats, and how long one counts.

_LIST_CHANGED = {
    "tools": "notifications/tools/list_changed",
    "resources": "notifications/resources/list_changed",
    "prompts": "notifications/prompts/list_changed",
}
#: Sessions named per fan-out script call (a list change reaches every session).
_FAN_CHUNK = 500

#: Session ids are canonical UUIDs (:func:`~jetmcp.state.base.new_session_id`).
_ID_LENGTH = 36


class _Cached:
    __slots__ = ("epoch", "inflight", "promoted", "session", "touched")

    def __init__(self, session: Session, epoch: int, promoted: bool) -> None:
        self.session = session
        self.epoch = epoch
        self.promoted = promoted
        self.touched = time.monotonic()
        self.inflight = InFlight()


class RedisSessionStore:
    """:class:`~jetmcp.state.base.SessionStore` in Redis, with the same tiers and limits
    as the memory store (``max_sessions``, ``max_new_sessions``, ``session_protect_seconds``,
    ``session_idle_seconds``) counted over every worker and host. It is also the relay of
    answers and cancellations, and the server's fan-out of notifications."""

    def __init__(self, server: Server, settings: Settings, state: RedisState | None = None):
        self.server = server
        self.settings = settings
        self.state = state or RedisState(settings)
        self._cache: OrderedDict[str, _Cached] = OrderedDict()
        self._cache_cap = max(16, settings.max_sessions)
        self._touch_every = min(1.0, settings.session_idle_seconds / 8)
        self._idle_ms = int(settings.session_idle_seconds * 1000)
        #: Hubs with a connection on this worker, by session id (where events go).
        self.hubs: dict[str, RedisStreams] = {}
        self.log_ttl_ms = max(1, int(settings.event_log_seconds * 1000))
        self.maxlen = max(0, settings.event_log_size)
        state_ = self.state
        state_.on[b"end"] = self._on_end
        state_.on[b"chg"] = self._on_change
        state_.on[b"ans"] = self._on_answer
        state_.on[b"can"] = self._on_cancel
        state_.on[b"lc"] = self._on_list_changed
        state_.on[b"ru"] = self._on_resource_updated
        state_.on_event = self._on_event
        server.fanout = self
        from jetmcp.state.redis_tasks import RedisTasks

        #: The server's tasks, kept in Redis too.
        self.tasks = RedisTasks(state_, server)

    def __len__(self) -> int:
        """Sessions this worker holds now (its cache): what the ``jetmcp_sessions`` gauge
        reports per worker. Every worker's count is its own; a session used on two workers
        is counted on both until one forgets it."""
        return len(self._cache)

    # -- lifetime ------------------------------------------------------------------------

    def start_on(self, loop: asyncio.AbstractEventLoop) -> None:
        self.state.start_on(loop)

    async def close(self) -> None:
        await self.state.close()

    # -- SessionStore --------------------------------------------------------------------

    async def add(self, session: Session) -> None:
        sid = session.id
        assert sid is not None
        if not self.state.healthy and not await self.state.ready():
            raise StateUnavailable("the session store (Redis) is unavailable")
        settings = self.settings
        fields: list[Any] = []
        for name, value in session.record().items():
            fields += [name, value]
        kept = await self.state.run(
            "add",
            sid,
            settings.max_sessions,
            settings.max_new_sessions,
            int(settings.session_protect_seconds * 1000),
            self._idle_ms,
            *fields,
        )
        if not kept:
            raise SessionLimit(f"every one of the {settings.max_sessions} sessions is in use")
        self._adopt(session, promoted=False)

    def held(self, session_id: str) -> _Cached | None:
        entry = self._cache.get(session_id)
        state = self.state
        if entry is None or entry.epoch != state.epoch or not state.epoch:
            return None  # not cached, or cached before the link last went down
        if not entry.promoted or time.monotonic() - entry.touched >= self._touch_every:
            entry.touched = time.monotonic()
            entry.promoted = True
            state.spawn(
                self._touch(session_id),
                f"the last use of session {session_id[:8]}… (its idle time counts from an "
                "earlier use)",
            )
        return entry

    async def get(self, session_id: str) -> Session | None:
        held = self.held(session_id)
        if held is not None:
            return held.session
        entry = self._cache.get(session_id)
        state = self.state
        if len(session_id) != _ID_LENGTH:
            return None  # not an id this store mints (and no key of another kind to probe)
        if not state.healthy and not await state.ready():
            raise StateUnavailable("the session store (Redis) is unavailable")
        epoch = state.epoch
        fields = await state.run("touch", session_id, self._idle_ms, "1")
        if not fields:
            if entry is not None:
                self._forget(session_id)
            return None
        record = {
            (k.decode() if isinstance(k, bytes) else str(k)): v
            for k, v in zip(fields[::2], fields[1::2], strict=True)
        }
        if entry is not None:
            # Known here before the link went down: the same object (its waiting requests
            # and server-to-client requests live on), brought up to date.
            entry.session.update(record)
            entry.epoch = epoch
            entry.touched = time.monotonic()
            entry.promoted = True
            return entry.session
        session = Session.from_record(session_id, record)
        if session is None:
            return None
        self._adopt(session, promoted=True, epoch=epoch)
        return session

    async def remove(self, session_id: str) -> bool:
        removed = bool(await self.state.run("remove", session_id))
        self._end_here(session_id)
        return removed

    def inflight(self, session_id: str) -> InFlight:
        entry = self._cache.get(session_id)
        return entry.inflight if entry is not None else InFlight()

    # -- the cache -----------------------------------------------------------------------

    def _adopt(self, session: Session, *, promoted: bool, epoch: int | None = None) -> None:
        sid = session.id
        assert sid is not None
        session.outbound = RedisStreams(self, sid)
        session.sync = self._sync
        self.server.sessions.add(session)
        self._cache[sid] = _Cached(session, self.state.epoch if epoch is None else epoch, promoted)
        if len(self._cache) > self._cache_cap:
            self._shrink()

    def _shrink(self) -> None:
        """Drop the least recently cached sessions that hold nothing on this worker."""
        for sid in list(self._cache)[: len(self._cache) // 4]:
            entry = self._cache[sid]
            if entry.inflight.running or len(entry.session.outgoing) or sid in self.hubs:
                continue
            del self._cache[sid]

    def _forget(self, session_id: str) -> _Cached | None:
        return self._cache.pop(session_id, None)

    def _end_here(self, session_id: str) -> None:
        """The session ended: stop what this worker runs or holds for it."""
        entry = self._forget(session_id)
        if entry is not None:
            entry.inflight.cancel_all()
            entry.session.outbound.close()  # type: ignore[attr-defined]
        hub = self.hubs.pop(session_id, None)
        if hub is not None:
            hub.close()

    async def _touch(self, session_id: str) -> None:
        if not await self.state.run("touch", session_id, self._idle_ms, "0"):
            self._end_here(session_id)

    def _sync(self, session: Session, field: str, value: Any) -> Awaitable[None] | None:
        """The write of a session's change to Redis, for the request that made it to await:
        a write Redis refuses (unreachable, ``maxmemory`` with ``noeviction``, read-only)
        raises McpError, so the client learns its change did not land."""
        sid = session.id
        if sid is None:
            return None
        if field == "subscribe" or field == "unsubscribe":
            return self._write(field, "subscribe", sid, value, "1" if field == "subscribe" else "0")
        if field == "initialized":
            return self._write(field, "set_field", sid, field, "1" if value else "0")
        if field == "logLevel" and isinstance(value, str):
            return self._write(field, "set_field", sid, field, value)
        return None

    async def _write(self, what: str, script: str, *args: Any) -> None:
        try:
            await self.state.run(script, *args)
        except StateUnavailable as exc:
            raise McpError(SERVER_ERROR, f"{what} was not stored: {exc}; retry later") from None

    # -- what other workers say ----------------------------------------------------------

    def _on_end(self, rest: bytes) -> None:
        self._end_here(rest.decode())

    def _on_change(self, rest: bytes) -> None:
        sid, field, value = rest.decode().split(" ", 2)
        entry = self._cache.get(sid)
        if entry is None:
            return
        if field == "logLevel":
            entry.session._log_level = value or None
        elif field == "initialized":
            entry.session._initialized = value == "1"

    def _on_answer(self, rest: bytes) -> None:
        origin, sid, payload = rest.split(b" ", 2)
        if origin.decode() == self.state.worker:
            return
        entry = self._cache.get(sid.decode())
        if entry is None:
            return
        request_id, is_error, value = orjson.loads(payload)
        entry.session.outgoing.resolve(request_id, bool(is_error), value)

    def _on_cancel(self, rest: bytes) -> None:
        origin, sid, payload = rest.split(b" ", 2)
        if origin.decode() == self.state.worker:
            return
        entry = self._cache.get(sid.decode())
        if entry is not None:
            entry.inflight.cancel(orjson.loads(payload))

    def _on_list_changed(self, rest: bytes) -> None:
        kind = rest.decode()
        if kind in _LIST_CHANGED:
            self.server._subscriptions.list_changed(kind)

    def _on_resource_updated(self, rest: bytes) -> None:
        self.server._subscriptions.resource_updated(rest.decode())

    def _on_event(self, data: bytes) -> None:
        sid, stream, seq, final, message = data.split(b"\n", 4)
        if not sid:
            self.tasks.deliver(stream.decode(), message)
            return
        hub = self.hubs.get(sid.decode())
        if hub is not None:
            hub.deliver(stream.decode(), int(seq), final == b"1", message)

    # -- Relay ---------------------------------------------------------------------------

    @property
    def relay(self) -> RedisSessionStore:
        return self

    def answer(
        self, session_id: str, request_id: Any, is_error: bool, value: Any
    ) -> Awaitable[None]:
        payload = orjson.dumps([request_id, is_error, value])
        message = b"ans " + self.state.worker.encode() + b" " + session_id.encode() + b" "
        return self._deliver(f"the answer to request {request_id!r}", message + payload)

    def cancel(self, session_id: str, request_id: Any) -> Awaitable[None]:
        payload = orjson.dumps(request_id)
        message = b"can " + self.state.worker.encode() + b" " + session_id.encode() + b" "
        return self._deliver(f"the cancellation of request {request_id!r}", message + payload)

    async def _deliver(self, what: str, message: bytes) -> None:
        try:
            await self.state.publish(message)
        except StateUnavailable as exc:
            # A command Redis did not answer in time may still run once it does: the
            # client cannot be told it was lost, only that it may have been. Sending it
            # again is harmless (an answer resolves its request once, a cancel is idempotent).
            raise McpError(
                SERVER_ERROR,
                f"{what} may not have reached the session's other workers: {exc}; "
                "send it again (a repeat is harmless)",
            ) from None

    # -- Fanout --------------------------------------------------------------------------

    async def list_changed(self, kind: str) -> None:
        """Every listen stream of every worker, and every initialized session."""
        state = self.state
        try:
            await state.publish(b"lc " + kind.encode())
            message = encode_notification(_LIST_CHANGED[kind])
            for tier in ("new", "est"):
                start = 0
                while True:
                    ids = await state.bounded(
                        state.client.zrange(state.key(tier), start, start + _FAN_CHUNK - 1)
                    )
                    if ids:
                        await state.run("fan", self.maxlen, self.log_ttl_ms, message, "1", *ids)
                    if len(ids) < _FAN_CHUNK:
                        break
                    start += _FAN_CHUNK
        except (StateUnavailable, RedisError, OSError) as exc:
            log.warning("list_changed(%s) not sent: %s", kind, exc)

    async def resource_updated(self, uri: str) -> None:
        state = self.state
        try:
            await state.publish(b"ru " + uri.encode())
            message = encode_notification("notifications/resources/updated", {"uri": uri})
            await state.run("fan_uri", self.maxlen, self.log_ttl_ms, message, uri)
        except (StateUnavailable, RedisError, OSError) as exc:
            log.warning("resource update of %s not sent: %s", uri, exc)


__all__ = [
    "RedisSessionStore",
    "RedisState",
    "RedisStreams",
    "check_reachable",
    "shared_state_key",
]
