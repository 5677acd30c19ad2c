"""One worker's link to Redis (:class:`RedisState`): the pooled client the scripts run on,
the pub/sub connection that reconnects by itself, the heartbeat and the sweep of idle
sessions; and the checks ``jetmcp run`` makes before any worker starts. Split from
:mod:`jetmcp.state.redis`, which re-exports what is public here."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import logging
import secrets
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import RedisError

from jetmcp.state.base import StateUnavailable
from jetmcp.state.scripts import SCRIPTS

if TYPE_CHECKING:
    from jetmcp.settings import Settings

log = logging.getLogger("jetmcp.redis")

T = TypeVar("T")

#: Seconds between a worker's heartbeats, and how long one counts.


#: Seconds between a worker's heartbeats, and how long one counts.
HEARTBEAT_SECONDS = 3.0
HEARTBEAT_TTL_MS = 10_000
#: The pub/sub link is pinged after this many quiet seconds, and given up as dead when
#: nothing (not even the pong) came back for twice that.
PING_SECONDS = 5.0

_epochs = itertools.count(1)


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


#: Draws the shared key unless there is one, and answers it: one round trip.
_DRAW_KEY = "redis.call('SET', KEYS[1], ARGV[1], 'NX') return redis.call('GET', KEYS[1])"


def shared_state_key(url: str, prefix: str, timeout: float) -> str:
    """The key sealing 2026-07-28 ``requestState`` that every server on this Redis and prefix
    agrees on: the first to ask draws it (``P state-key``), the others read it. For servers
    not given ``JETMCP_STATE_KEY``, so a retry may land on any host. Connecting, the one
    round trip and any retry share one deadline, ``timeout`` seconds from the call (they
    each had the whole of it: a Redis that answered slowly took twice as long or more)."""
    return asyncio.run(_shared_state_key(url, prefix + "state-key", timeout))


async def _shared_state_key(url: str, key: str, timeout: float) -> str:  # noqa: ASYNC109
    # RESP2 and no CLIENT SETINFO: connecting sends nothing (RESP3 costs a HELLO and a
    # CLIENT MAINT_NOTIFICATIONS round trip first), the EVAL is the one round trip.
    client = aioredis.Redis.from_url(
        url,
        socket_timeout=timeout,
        socket_connect_timeout=timeout,
        protocol=2,
        driver_info=None,
    )
    try:
        async with asyncio.timeout(timeout):
            value = await client.eval(_DRAW_KEY, 1, key, secrets.token_urlsafe(32))
    except TimeoutError:
        raise RedisError(f"no answer within {timeout:g} s") from None
    finally:
        await client.aclose()
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

    def spawn(self, work: Coroutine[Any, Any, Any], lost: str = "") -> None:
        """Run ``work`` in the background (kept referenced). It is for writes no client
        waits for (a request that waits awaits its write and is told when it fails), so a
        failure is logged at warning, naming ``lost``: what the shared state now lacks."""
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(functools.partial(self._done, lost))

    def _done(self, lost: str, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            exc = task.exception()
            if isinstance(exc, StateUnavailable | RedisError | OSError):
                # Never dropped silently: the log says what was lost, and why.
                log.warning("not stored in Redis: %s (%s)", lost or "background work", exc)
            else:
                log.error("background Redis work failed", exc_info=exc)

    # -- commands ------------------------------------------------------------------------

    async def run(self, name: str, *args: Any) -> Any:
        """Run script ``name`` (its ARGV after the prefix); :class:`StateUnavailable` when
        Redis cannot be reached or does not answer within the Redis timeout."""
        return await self.bounded(self._scripts[name](args=[self.prefix, *args]))

    async def bounded(self, work: Awaitable[T]) -> T:
        """``work`` (one Redis operation) under one deadline, ``--redis-timeout-seconds``
        from now: the pool's wait for a connection, the command, and the retry on a fresh
        connection all count against it (each had the full timeout of its own, so a hung
        Redis took twice the timeout). :class:`StateUnavailable` when it fails or runs out."""
        seconds = self.settings.redis_timeout_seconds
        try:
            async with asyncio.timeout(seconds):
                return await work
        except TimeoutError:
            raise StateUnavailable(
                f"the session store (Redis) did not answer within {seconds:g} s"
            ) from None
        except (RedisError, OSError) as exc:
            raise StateUnavailable(f"the session store (Redis) is unavailable: {exc}") from None

    async def publish(self, message: bytes | str) -> None:
        await self.bounded(self.client.publish(self.key("ctl"), message))

    async def worker_alive(self, worker: str) -> bool:
        try:
            return bool(await self.bounded(self.client.exists(self.key("w:" + worker))))
        except StateUnavailable:
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


__all__ = ["RedisState", "check_reachable", "shared_state_key"]
