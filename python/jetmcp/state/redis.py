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
import contextlib
import itertools
import logging
import secrets
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any

import orjson
import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import RedisError

from jetmcp._wire import encode_notification
from jetmcp.core.call import Session
from jetmcp.core.inflight import InFlight
from jetmcp.state.base import SessionLimit, StateUnavailable
from jetmcp.state.scripts import SCRIPTS
from jetmcp.state.streams import (
    CLIENT_GONE,
    KEEPALIVE,
    SSE_HEADERS,
    Listener,
    SessionStreams,
    encode_event,
    priming_event,
    split_event_id,
)

if TYPE_CHECKING:
    from jetmcp.server.app import Server
    from jetmcp.settings import Settings

log = logging.getLogger("jetmcp.redis")

#: Seconds between a worker's heartbeats, and how long one counts.
HEARTBEAT_SECONDS = 3.0
HEARTBEAT_TTL_MS = 10_000
#: The pub/sub link is pinged after this many quiet seconds, and given up as dead when
#: nothing (not even the pong) came back for twice that.
PING_SECONDS = 5.0
_LIST_CHANGED = {
    "tools": "notifications/tools/list_changed",
    "resources": "notifications/resources/list_changed",
    "prompts": "notifications/prompts/list_changed",
}
#: Sessions named per fan-out script call (a list change reaches every session).
_FAN_CHUNK = 500

_epochs = itertools.count(1)
#: Session ids are canonical UUIDs (:func:`~jetmcp.state.base.new_session_id`).
_ID_LENGTH = 36


def check_reachable(url: str, timeout: float) -> str | None:
    """Why the Redis at ``url`` cannot be used (None when it answers a PING): for the
    command line, before any worker starts."""
    import redis as sync_redis

    try:
        client = sync_redis.Redis.from_url(
            url, socket_timeout=timeout, socket_connect_timeout=timeout
        )
        try:
            client.ping()
        finally:
            client.close()
    except (RedisError, OSError, ValueError) as exc:
        return str(exc) or type(exc).__name__
    return None


def shared_state_key(url: str, prefix: str, timeout: float) -> str:
    """The key sealing 2026-07-28 ``requestState`` that every server on this Redis and prefix
    agrees on: the first to ask draws it (``P state-key``), the others read it. For servers
    not given ``JETMCP_STATE_KEY``, so a retry may land on any host."""
    import redis as sync_redis

    client = sync_redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout)
    try:
        key = prefix + "state-key"
        client.set(key, secrets.token_urlsafe(32), nx=True)
        value = client.get(key)
    finally:
        client.close()
    if not isinstance(value, bytes):
        raise RedisError("the shared requestState key could not be read")
    return value.decode()


class RedisState:
    """One worker's link to the shared store: a pooled client for the scripts, and one
    pub/sub connection for the worker's channels, reconnected by itself when lost."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.prefix = settings.redis_prefix
        #: This worker's name in Redis (its channel, its heartbeat, its streams' ids).
        self.worker = secrets.token_hex(6)
        timeout = settings.redis_timeout_seconds
        pool = aioredis.BlockingConnectionPool.from_url(
            settings.redis_url,
            max_connections=settings.redis_connections,
            timeout=timeout,
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
            # One more try on a fresh connection: a pooled one may have died with a restart.
            retry=Retry(NoBackoff(), 1),
        )
        self.client = aioredis.Redis(connection_pool=pool)
        self._scripts = {name: self.client.register_script(src) for name, src in SCRIPTS.items()}
        #: Nonzero while the pub/sub link is up; a new number after each reconnection, so
        #: what was cached before it is known to be stale.
        self.epoch = 0
        #: Handlers of the ``P ctl`` messages, by their first word.
        self.on: dict[bytes, Callable[[bytes], None]] = {}
        #: Handler of the worker's own channel.
        self.on_event: Callable[[bytes], None] = lambda message: None
        #: Called when the link comes back (the caches were stale meanwhile).
        self.on_connect: Callable[[], None] = lambda: None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._ids = itertools.count(1)
        self._up = asyncio.Event()
        #: When the background work started (monotonic), None before (see :meth:`ready`).
        self._since: float | None = None

    def key(self, name: str) -> str:
        return self.prefix + name

    def next_id(self) -> int:
        """A number unique in this worker (for stream ids)."""
        return next(self._ids)

    @property
    def healthy(self) -> bool:
        return self.epoch != 0

    # -- lifetime ------------------------------------------------------------------------

    def start_on(self, loop: asyncio.AbstractEventLoop) -> None:
        """Start the pub/sub link, the heartbeat and the sweep of idle sessions on ``loop``."""
        if self._since is not None:
            return
        self._since = time.monotonic()
        loop.call_soon(self._start)

    def _start(self) -> None:
        self.spawn(self._listen())
        self.spawn(self._heartbeat())
        self.spawn(self._sweep())

    async def ensure_started(self) -> None:
        """Start the background work on the running loop (embedded servers, tests) and wait
        for the pub/sub link, at most the Redis timeout."""
        if self._since is None:
            self._since = time.monotonic()
            self._start()
        await self._link_within(self.settings.redis_timeout_seconds)

    async def ready(self) -> bool:
        """Whether the pub/sub link is up. Within the Redis timeout of the worker's start,
        while its first link is still being made, this waits for it (for what is left of
        that time): the first requests a worker takes are served, not refused because they
        came before its link did. Later, a link that is down is answered at once (503)."""
        if self.epoch:
            return True
        since = self._since
        if since is None:
            return False
        left = since + self.settings.redis_timeout_seconds - time.monotonic()
        return left > 0 and await self._link_within(left)

    async def _link_within(self, seconds: float) -> bool:
        """Wait for the pub/sub link, at most ``seconds``: whether it is up."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                await self._up.wait()
        return self.epoch != 0

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        with contextlib.suppress(RedisError, OSError):
            await self.client.delete(self.key("w:" + self.worker))
        with contextlib.suppress(RedisError, OSError, RuntimeError):
            await self.client.aclose()

    def spawn(self, work: Coroutine[Any, Any, Any]) -> None:
        """Run ``work`` in the background (kept referenced; a failure is logged)."""
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            exc = task.exception()
            if isinstance(exc, StateUnavailable | RedisError | OSError):
                log.debug("background Redis work failed: %s", exc)
            else:
                log.error("background Redis work failed", exc_info=exc)

    # -- commands ------------------------------------------------------------------------

    async def run(self, name: str, *args: Any) -> Any:
        """Run script ``name`` (its ARGV after the prefix); :class:`StateUnavailable` when
        Redis cannot be reached."""
        try:
            return await self._scripts[name](args=[self.prefix, *args])
        except (RedisError, OSError) as exc:
            raise StateUnavailable(f"the session store (Redis) is unavailable: {exc}") from None

    async def publish(self, message: bytes | str) -> None:
        try:
            await self.client.publish(self.key("ctl"), message)
        except (RedisError, OSError) as exc:
            raise StateUnavailable(f"the session store (Redis) is unavailable: {exc}") from None

    async def worker_alive(self, worker: str) -> bool:
        try:
            return bool(await self.client.exists(self.key("w:" + worker)))
        except (RedisError, OSError):
            return True  # unknown: keep the stream, the next look decides

    # -- background ----------------------------------------------------------------------

    async def _listen(self) -> None:
        delay = 0.05
        ctl = self.key("ctl").encode()
        mine = self.key("ch:" + self.worker).encode()
        while True:
            pubsub = self.client.pubsub()
            try:
                await pubsub.subscribe(ctl, mine)
                confirmed = 0
                deadline = time.monotonic() + self.settings.redis_timeout_seconds
                while confirmed < 2:
                    if time.monotonic() > deadline:
                        raise TimeoutError("no subscription confirmation")
                    reply = await pubsub.get_message(timeout=0.2)
                    if reply is not None and reply["type"] == "subscribe":
                        confirmed += 1
                self.epoch = next(_epochs)
                self._up.set()
                if delay > 0.05:
                    log.warning("Redis is back: serving sessions again")
                delay = 0.05
                self.on_connect()
                heard = time.monotonic()
                pinged = False
                while True:
                    reply = await pubsub.get_message(timeout=PING_SECONDS)
                    now = time.monotonic()
                    if reply is None:
                        if now - heard > 2 * PING_SECONDS:
                            raise TimeoutError("the pub/sub link went quiet")
                        if not pinged:
                            await pubsub.ping()
                            pinged = True
                        continue
                    heard = now
                    pinged = False
                    if reply["type"] == "message":
                        self._dispatch(reply["channel"], reply["data"], mine)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if self.epoch:
                    log.warning("lost Redis (%s): requests needing a session get 503", exc)
                self.epoch = 0
                self._up.clear()
            finally:
                with contextlib.suppress(Exception):
                    await pubsub.aclose()  # type: ignore[no-untyped-call]
            await asyncio.sleep(delay)
            delay = min(delay * 2, 1.0)

    def _dispatch(self, channel: bytes, data: bytes, mine: bytes) -> None:
        try:
            if channel == mine:
                self.on_event(data)
                return
            verb, _, rest = data.partition(b" ")
            handler = self.on.get(verb)
            if handler is not None:
                handler(rest)
        except Exception:
            log.exception("a Redis message could not be handled: %r", data[:200])

    async def _heartbeat(self) -> None:
        key = self.key("w:" + self.worker)
        while True:
            with contextlib.suppress(RedisError, OSError):
                await self.client.set(key, b"1", px=HEARTBEAT_TTL_MS)
            await asyncio.sleep(HEARTBEAT_SECONDS)

    async def _sweep(self) -> None:
        idle_ms = int(self.settings.session_idle_seconds * 1000)
        every = min(5.0, max(0.2, self.settings.session_idle_seconds / 4))
        while True:
            # Workers look at different moments, so the sessions are swept about every
            # ``every / workers`` seconds, by whoever comes first.
            await asyncio.sleep(every * (0.5 + secrets.randbelow(1000) / 1000))
            with contextlib.suppress(StateUnavailable):
                await self.run("sweep", idle_ms)


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
            state.spawn(self._touch(session_id))
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

    def _sync(self, session: Session, field: str, value: Any) -> None:
        sid = session.id
        if sid is None:
            return
        if field == "subscribe" or field == "unsubscribe":
            self.state.spawn(
                self.state.run("subscribe", sid, value, "1" if field == "subscribe" else "0")
            )
        elif field == "initialized":
            self.state.spawn(self.state.run("set_field", sid, field, "1" if value else "0"))
        elif field == "logLevel" and isinstance(value, str):
            self.state.spawn(self.state.run("set_field", sid, field, value))

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

    def answer(self, session_id: str, request_id: Any, is_error: bool, value: Any) -> None:
        payload = orjson.dumps([request_id, is_error, value])
        message = b"ans " + self.state.worker.encode() + b" " + session_id.encode() + b" "
        self.state.spawn(self.state.publish(message + payload))

    def cancel(self, session_id: str, request_id: Any) -> None:
        payload = orjson.dumps(request_id)
        message = b"can " + self.state.worker.encode() + b" " + session_id.encode() + b" "
        self.state.spawn(self.state.publish(message + payload))

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
                    ids = await state.client.zrange(state.key(tier), start, start + _FAN_CHUNK - 1)
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


# ---------------------------------------------------------------------------- streams


class _Remote:
    """A connection on this worker carrying one stream of a session whose events come
    through Redis: what arrives waits in a queue its GET handler writes from."""

    __slots__ = ("closed", "queue", "stream", "written")

    def __init__(self, stream: str) -> None:
        self.stream = stream
        self.written = 0
        self.closed = False
        self.queue: asyncio.Queue[tuple[int, bool, bytes] | None] = asyncio.Queue()

    def put(self, seq: int, final: bool, message: bytes, limit: int) -> None:
        if self.closed:
            return
        if self.queue.qsize() >= limit:
            # A client this far behind resumes from the log (Last-Event-ID) instead.
            self.close()
            return
        self.queue.put_nowait((seq, final, message))

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.queue.put_nowait(None)


class RedisStreams(SessionStreams):
    """``session.outbound`` of a session kept in Redis: its messages go through the
    session's log in Redis to the GET stream that takes them, on whichever worker holds it;
    the GET streams and resumed POST streams held here are fed from this worker's channel.

    Stream ids carry the worker's name (``g<worker>.<n>``, ``p<worker>.<n>``), so they are
    unique across workers; seqs of a standalone stream are counted in Redis."""

    remote = True

    __slots__ = ("_remote", "sid", "store")

    def __init__(self, store: RedisSessionStore, session_id: str) -> None:
        super().__init__(store.settings)
        self.store = store
        self.sid = session_id
        self._remote: dict[str, _Remote] = {}

    def new_stream_id(self, kind: str) -> str:
        state = self.store.state
        return f"{kind}{state.worker}.{state.next_id()}"

    # -- messages not tied to a request --------------------------------------------------

    async def send(self, message: bytes) -> None:
        store = self.store
        await store.state.run("send", self.sid, store.maxlen, store.log_ttl_ms, message)

    # -- POST streams --------------------------------------------------------------------

    def register(self, post: Any) -> None:
        return None

    def unregister(self, post: Any) -> None:
        return None

    async def announce(self, stream: str) -> None:
        """POST stream ``stream`` (of this worker) is live: a GET elsewhere may resume it."""
        await self.store.state.run("post_live", self.sid, self.store.state.worker, stream)

    async def record(self, stream: str, seq: int, message: bytes, final: bool) -> None:
        store = self.store
        try:
            await store.state.run(
                "post_event",
                self.sid,
                stream,
                seq,
                "1" if final else "0",
                store.maxlen,
                store.log_ttl_ms,
                message,
            )
        except StateUnavailable as exc:
            # The live connection still gets the event; only a resumption would miss it.
            log.warning("event %s-%d not logged: %s", stream, seq, exc)

    def ended(self, stream: str) -> None:
        self.store.state.spawn(self.store.state.run("post_end", self.sid, stream))

    # -- GET streams ---------------------------------------------------------------------

    async def find_resume(self, last_event_id: str | None) -> tuple[str, int] | None:
        parsed = split_event_id(last_event_id)
        if parsed is None:
            return None
        stream, _ = parsed
        if stream[:1] not in ("p", "g"):
            return None
        found = await self.store.state.run("probe", self.sid, stream)
        if stream.startswith("p"):
            if found == 1:
                return parsed
            raise LookupError(stream)
        return parsed if found == 1 else None

    def connected(self, stream: str) -> bool:
        return stream in self._remote

    def deliver(self, stream: str, seq: int, final: bool, message: bytes) -> None:
        """An event for stream ``stream`` (seq -1: close its connection here)."""
        remote = self._remote.get(stream)
        if remote is None:
            return
        if seq < 0:
            remote.close()
        else:
            remote.put(seq, final, message, max(16, self.store.maxlen))

    def _attach(self, stream: str) -> _Remote:
        old = self._remote.get(stream)
        if old is not None:
            old.close()
        remote = self._remote[stream] = _Remote(stream)
        self.store.hubs[self.sid] = self
        return remote

    def _detach(self, remote: _Remote) -> None:
        remote.close()
        if self._remote.get(remote.stream) is remote:
            del self._remote[remote.stream]
        if not self._remote and self.store.hubs.get(self.sid) is self:
            del self.store.hubs[self.sid]

    async def serve_get(
        self,
        proto: Any,
        resume: tuple[str, int] | None,
        priming: bool,
        hold: Callable[[Listener, Any], Awaitable[None]],
    ) -> None:
        store = self.store
        state = store.state
        age = store.log_ttl_ms
        if resume is not None and resume[0].startswith("p"):
            stream, seq = resume
            remote = self._attach(stream)
            try:
                found = await state.run("resume_post", self.sid, state.worker, stream, seq, age)
                transport = proto.response_stream(200, SSE_HEADERS)
                if not found or int(found[1]) < 0:
                    return
                owner = found[0].decode() if isinstance(found[0], bytes) else str(found[0])
                ended = int(found[1]) == 1
                remote.written = seq
                await self._replay(transport, remote, found[2:])
                if ended or not owner:
                    return

                async def alive() -> bool:
                    return await store.get(self.sid) is not None and await state.worker_alive(owner)

                await self._pump(remote, transport, proto, alive)
            except CLIENT_GONE:
                pass
            finally:
                self._detach(remote)
                state.spawn(state.run("release_post", self.sid, state.worker, stream))
            return

        if resume is None:
            stream = self.new_stream_id("g")
            first = priming_event(f"{stream}-0") if priming else b""
            remote = self._attach(stream)
            try:
                found = await state.run(
                    "open_get",
                    self.sid,
                    state.worker,
                    stream,
                    store.maxlen,
                    store.log_ttl_ms,
                    age,
                )
            except BaseException:
                self._detach(remote)
                raise
            events = found
        else:
            stream, seq = resume
            first = b""
            remote = self._attach(stream)
            remote.written = seq
            try:
                found = await state.run(
                    "resume_get",
                    self.sid,
                    state.worker,
                    stream,
                    seq,
                    store.maxlen,
                    store.log_ttl_ms,
                    age,
                )
            except BaseException:
                self._detach(remote)
                raise
            events = found[1:] if found else found
        try:
            transport = proto.response_stream(200, SSE_HEADERS)
            if events is None or events is False:
                return  # the session ended meanwhile
            if first:
                await transport.send_bytes(first)
            await self._replay(transport, remote, events)

            async def alive() -> bool:
                return await store.get(self.sid) is not None

            await self._pump(remote, transport, proto, alive)
        except CLIENT_GONE:
            pass
        finally:
            self._detach(remote)
            state.spawn(
                state.run(
                    "release_get",
                    self.sid,
                    state.worker,
                    stream,
                    remote.written,
                    store.maxlen,
                    store.log_ttl_ms,
                )
            )

    async def _replay(self, transport: Any, remote: _Remote, events: list[Any]) -> None:
        """Write logged events (seq, message pairs) the connection has not had yet."""
        chunks: list[bytes] = []
        top = remote.written
        for i in range(0, len(events) - 1, 2):
            seq = int(events[i])
            if seq <= top:
                continue
            chunks.append(encode_event(events[i + 1], f"{remote.stream}-{seq}"))
            top = seq
        if chunks:
            await transport.send_bytes(b"".join(chunks))
            remote.written = top

    async def _pump(
        self,
        remote: _Remote,
        transport: Any,
        proto: Any,
        alive: Callable[[], Awaitable[bool]],
    ) -> None:
        """Write the stream's events as they come until it closes, its last event is out,
        or the client leaves; keep-alives on idle ticks, which also look at ``alive``."""
        watcher = asyncio.ensure_future(proto.client_disconnect())

        def gone(task: asyncio.Future[Any]) -> None:
            if not task.cancelled():
                task.exception()
            remote.close()

        watcher.add_done_callback(gone)
        keepalive = self.settings.keepalive_seconds
        try:
            while not remote.closed or not remote.queue.empty():
                try:
                    async with asyncio.timeout(keepalive if keepalive > 0 else None):
                        item = await remote.queue.get()
                except TimeoutError:
                    try:
                        if not await alive():
                            return
                    except StateUnavailable:
                        return
                    await transport.send_bytes(KEEPALIVE)
                    continue
                if item is None:
                    return
                seq, final, message = item
                if seq <= remote.written:
                    continue
                await transport.send_bytes(encode_event(message, f"{remote.stream}-{seq}"))
                remote.written = seq
                if final:
                    return
        finally:
            watcher.cancel()

    async def close_stream(self, retry_ms: int | None = None) -> None:
        """Close the GET streams this worker holds for the session (their handlers own
        the connections, so no ``retry:`` goes first: the client waits its own delay)."""
        for remote in list(self._remote.values()):
            remote.close()

    def close(self) -> None:
        """This worker lets go of the session: its connections here close."""
        self.closed = True
        for remote in list(self._remote.values()):
            remote.close()

    def stats(self) -> dict[str, int]:
        return {"get_streams": len(self._remote), "post_streams": 0, "log": 0, "parked": 0}


__all__ = [
    "RedisSessionStore",
    "RedisState",
    "RedisStreams",
    "check_reachable",
    "shared_state_key",
]
