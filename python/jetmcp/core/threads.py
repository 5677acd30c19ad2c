"""Synchronous tools off the event loop.

A synchronous tool (a plain ``def``) would block the worker's event loop for as long as it
runs: every other request of that worker waits behind it, and no deadline can answer its own
caller. So by default it runs in a bounded thread pool (:data:`POLICY`, one per process, as
anyio's is for the official SDK), awaited like an ``async`` tool: its ``timeout`` and the
server's request timeout answer the caller on time while the thread runs on (its result is
then dropped and logged; the pool slot stays busy until the function returns, as nothing can
stop a thread).

A thread costs a few microseconds per call, which matters for tools that take less: a tool
whose last ``promote_after`` calls each took under ``fast_ms`` is *promoted* to run inline
(on the loop, as fast as before, the extension calling it by itself), and *demoted* back to
the pool on its first call over ``fast_ms``. Each switch is logged once at info on the
``jetmcp`` logger. ``run_in_thread=True`` keeps a tool in the pool for good,
``run_in_thread=False`` runs it inline for good (the behaviour before the pool).

:class:`SyncCall` is one tool's state: what the tool (and the extension's route of it) calls
is :meth:`SyncCall.threaded` (a coroutine function) or the function itself, timed by its
caller against :attr:`SyncCall.watch_ns` (the extension in Rust, ``Tool.start`` inline), a
slow call reported to :meth:`SyncCall.slow_ns`; :attr:`SyncCall.inline_now` says which, and
the tool swaps its route when it changes.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import logging
import os
import queue
import sys
import threading
import weakref
from collections.abc import Callable
from math import inf
from time import perf_counter
from typing import Any, Literal

from jetmcp.settings import SYNC_TOOL_FAST_MS, SYNC_TOOL_PROMOTE_AFTER, SYNC_TOOL_THREADS

log = logging.getLogger("jetmcp")

#: The loop a pool thread is running a tool call for (set for the call's duration).
_calling = threading.local()


def calling_loop() -> asyncio.AbstractEventLoop | None:
    """The event loop that handed this pool thread the tool call it runs, or None outside
    one: what a server method called from a sync tool (``add_tool``, ``remove_tool`` ...)
    hands its announcements to, since the thread has no loop of its own."""
    loop: asyncio.AbstractEventLoop | None = getattr(_calling, "loop", None)
    return loop


#: The defaults (threads of the pool, fast calls in a row that promote, milliseconds of a
#: fast call): the settings' own.
DEFAULT_THREADS = SYNC_TOOL_THREADS
DEFAULT_PROMOTE_AFTER = SYNC_TOOL_PROMOTE_AFTER
DEFAULT_FAST_MS = SYNC_TOOL_FAST_MS

#: How a synchronous tool runs: ``auto`` (the pool, inline once measured fast), ``thread``
#: (always the pool), ``inline`` (always on the loop).
Mode = Literal["auto", "thread", "inline"]


def _check(threads: int, promote_after: int, fast_ms: float) -> None:
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 0:
        raise ValueError(f"sync_tool_threads must be an integer of at least 0, not {threads!r}")
    if isinstance(promote_after, bool) or not isinstance(promote_after, int) or promote_after < 0:
        raise ValueError(
            f"sync_tool_promote_after must be an integer of at least 0 (0: never promote), "
            f"not {promote_after!r}"
        )
    if isinstance(fast_ms, bool) or not isinstance(fast_ms, int | float) or not 0 <= fast_ms < inf:
        raise ValueError(f"sync_tool_fast_ms must be a finite number >= 0, not {fast_ms!r}")


class ThreadPolicy:
    """The pool synchronous tools run in and the rule that promotes them (see the module
    docstring): ``--sync-tool-threads`` (0: no pool, every synchronous tool runs inline),
    ``--sync-tool-promote-after`` (0 never promotes) and ``--sync-tool-fast-ms``. The pool
    is made on first use in each process (a Granian worker forked from the parent makes its
    own)."""

    __slots__ = ("_pid", "_pool", "fast_seconds", "promote_after", "threads")

    def __init__(
        self,
        threads: int = DEFAULT_THREADS,
        promote_after: int = DEFAULT_PROMOTE_AFTER,
        fast_ms: float = DEFAULT_FAST_MS,
    ) -> None:
        _check(threads, promote_after, fast_ms)
        self.threads = threads
        self.promote_after = promote_after
        self.fast_seconds = fast_ms / 1000.0
        self._pool: DaemonPool | None = None
        self._pid = 0

    @property
    def fast_ms(self) -> float:
        return self.fast_seconds * 1000.0

    def configure(
        self,
        threads: int | None = None,
        promote_after: int | None = None,
        fast_ms: float | None = None,
    ) -> None:
        """Change the settings given (None keeps one); a pool already made with another
        size is replaced (its running calls finish in it)."""
        new_threads = self.threads if threads is None else threads
        new_after = self.promote_after if promote_after is None else promote_after
        new_fast = self.fast_ms if fast_ms is None else fast_ms
        _check(new_threads, new_after, new_fast)
        if new_threads != self.threads and self._pool is not None:
            self._pool.shutdown()
            self._pool = None
        self.threads = new_threads
        self.promote_after = new_after
        self.fast_seconds = new_fast / 1000.0

    def pool(self) -> DaemonPool:
        """This process's pool."""
        pool = self._pool
        pid = os.getpid()
        if pool is None or self._pid != pid:
            pool = DaemonPool(self.threads, "jetmcp-sync-tool")
            self._pool = pool
            self._pid = pid
        return pool

    def running(self) -> int:
        """Synchronous tool calls running in this process's pool threads now."""
        pool = self._pool
        return pool.running if pool is not None and self._pid == os.getpid() else 0

    def shutdown(self) -> None:
        """Stop taking calls; threads still running finish on their own."""
        if self._pool is not None and self._pid == os.getpid():
            self._pool.shutdown()
        self._pool = None


#: A call waiting for a pool thread: its future, the function and its arguments (None: a
#: thread is to stop).
_Job = tuple[concurrent.futures.Future[Any], Callable[..., Any], tuple[Any, ...]] | None


class DaemonPool:
    """At most ``size`` daemon threads, started as calls need them, taking calls from one
    queue. Unlike ``concurrent.futures.ThreadPoolExecutor``, whose threads the interpreter
    joins at exit, a thread stuck in a tool never keeps the process from exiting once the
    server is done (its shutdown grace over)."""

    __slots__ = ("_idle", "_jobs", "_lock", "_name", "_running", "_size", "_started")

    def __init__(self, size: int, name: str) -> None:
        self._size = size
        self._name = name
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        #: Released by each thread that waits for a call: a call finding one taken starts
        #: no thread.
        self._idle = threading.Semaphore(0)
        self._lock = threading.Lock()
        self._started = 0
        self._running = 0

    @property
    def running(self) -> int:
        """Calls running in a thread now."""
        return self._running

    def submit(self, fn: Callable[..., Any], *args: Any) -> concurrent.futures.Future[Any]:
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self._jobs.put((future, fn, args))
        if not self._idle.acquire(blocking=False):
            with self._lock:
                if self._started < self._size:
                    name = f"{self._name}_{self._started}"
                    self._started += 1
                    threading.Thread(target=self._work, name=name, daemon=True).start()
        return future

    def _work(self) -> None:
        jobs = self._jobs
        while True:
            job = jobs.get()
            if job is None:
                return
            future, fn, args = job
            if future.set_running_or_notify_cancel():
                with self._lock:
                    self._running += 1
                try:
                    result = fn(*args)
                except BaseException as exc:
                    future.set_exception(exc)
                else:
                    future.set_result(result)
                finally:
                    with self._lock:
                        self._running -= 1
            del job, future, fn, args
            self._idle.release()

    def shutdown(self) -> None:
        """Let each thread stop once it has no call left to take."""
        with self._lock:
            for _ in range(self._started):
                self._jobs.put(None)


#: What a call in a thread hands back: whether it returned, its value or exception, and the
#: seconds it took.
_Ran = tuple[bool, Any, float]


class SyncCall:
    """One synchronous tool's way of being called (see the module docstring). ``switched``
    is called (on the event loop) after each promotion or demotion."""

    __slots__ = ("fn", "inline_now", "mode", "name", "policy", "served", "streak", "switched")

    def __init__(
        self,
        fn: Callable[..., Any],
        name: str,
        mode: Mode,
        switched: Callable[[], None],
        policy: ThreadPolicy | None = None,
    ) -> None:
        self.fn = fn
        self.name = name
        self.mode: Mode = mode
        self.switched = switched
        self.policy = policy if policy is not None else POLICY
        #: Whether a transport serves the tool (:func:`serve`): until then it runs inline,
        #: as a promoted one does (a dispatcher driven without a transport may have no
        #: event loop to await a thread with), and is never demoted.
        self.served = False
        #: Whether calls run inline now (the function itself) rather than in the pool.
        self.inline_now = True
        #: Consecutive fast calls measured in the pool.
        self.streak = 0

    @property
    def current(self) -> Callable[..., Any]:
        """What a call of the tool calls now."""
        if self.mode == "inline":
            return self.fn
        return self.fn if self.inline_now else self.threaded

    def serve(self) -> None:
        """A transport serves the tool: from now on it runs in the pool (unless it is
        pinned inline), promoted as measured."""
        if self.served:
            return
        self.served = True
        if self.mode != "inline" and self.policy.threads:
            self.inline_now = False
            self.streak = 0
            self.switched()

    async def threaded(self, *args: Any, **kwargs: Any) -> Any:
        """Call the function in the pool, the context variables of the caller copied."""
        ctx = contextvars.copy_context()
        loop = asyncio.get_running_loop()
        future = self.policy.pool().submit(ctx.run, self._run, loop, args, kwargs)
        try:
            returned, value, seconds = await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            # A deadline (or the client) stopped waiting: the thread cannot be stopped.
            log.warning(
                "sync tool %s: its caller stopped waiting (timeout or cancel); its thread "
                "runs on and its result will be dropped",
                self.name,
            )
            future.add_done_callback(self._dropped)
            raise
        self._measured(seconds)
        if returned:
            return value
        raise value

    @property
    def watch_ns(self) -> int | None:
        """The nanoseconds over which an inline call demotes the tool (its caller reports
        it: :meth:`slow_ns`), or None when inline calls are not timed (pinned inline, not
        yet served, no pool, or in the pool now). The extension times the call in Rust
        (``ToolRoute(slow_ns=, on_slow=)``) and ``Tool.start`` with one ``perf_counter_ns``
        pair: no wrapper around the function."""
        if self.mode == "auto" and self.inline_now and self.served and self.policy.threads:
            return round(self.policy.fast_seconds * 1e9)
        return None

    def slow_ns(self, took_ns: int) -> None:
        """An inline call took ``took_ns`` nanoseconds, over :attr:`watch_ns`: demote."""
        self._slow(took_ns / 1e9)

    def _slow(self, took: float) -> None:
        if self.served and self.mode == "auto":
            self._demote(took)

    def _run(
        self, loop: asyncio.AbstractEventLoop, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> _Ran:
        # In a pool thread: never raises, so the loop side measures every call.
        _calling.loop = loop
        start = perf_counter()
        try:
            value = self.fn(*args, **kwargs)
        except BaseException as exc:
            return False, exc, perf_counter() - start
        finally:
            _calling.loop = None
        return True, value, perf_counter() - start

    def _dropped(self, future: concurrent.futures.Future[_Ran]) -> None:
        # In the thread that finished (or wherever the future settled).
        if future.cancelled():
            log.info("sync tool %s: a call nobody waited for never started", self.name)
            return
        returned, value, seconds = future.result()
        log.warning(
            "sync tool %s: a call nobody waited for any more finished after %.3f s "
            "(%s); its result was dropped",
            self.name,
            seconds,
            "returned" if returned else f"raised {type(value).__name__}",
        )

    def _measured(self, seconds: float) -> None:
        """Count a call made in the pool towards promotion (on the loop)."""
        if self.mode != "auto" or self.inline_now:
            return
        policy = self.policy
        if seconds > policy.fast_seconds:
            self.streak = 0
            return
        self.streak += 1
        if policy.promote_after and self.streak >= policy.promote_after:
            self.inline_now = True
            self.streak = 0
            log.info(
                "sync tool %s promoted to run inline: %d calls in a row took at most %g ms",
                self.name,
                policy.promote_after,
                policy.fast_ms,
            )
            self.switched()

    def _demote(self, took: float) -> None:
        """Send the tool back to the pool once the call that was slow is answered: its
        caller still takes its value as an inline call's (the switch is made by the loop
        next). Without a running loop (nothing could await a thread) it stays inline."""
        if not self.inline_now or not self.policy.threads:
            return  # demoted already (the switch still to come), or no pool
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self.inline_now = False
        self.streak = 0
        log.info(
            "sync tool %s demoted to the thread pool: a call took %.3f ms (over %g ms)",
            self.name,
            took * 1000.0,
            self.policy.fast_ms,
        )
        loop.call_soon(self.switched)


#: This process's pool and promotion rule (``Dispatcher.from_settings`` applies the
#: ``--sync-tool-*`` settings to it).
POLICY = ThreadPolicy()

#: The servers a transport serves: their synchronous tools run in the pool, and their route
#: tables are updated when one is promoted or demoted.
_SERVED: weakref.WeakSet[Any] = weakref.WeakSet()


def serve(server: Any, settings: Any) -> None:
    """A transport serves ``server`` (a :class:`~jetmcp.server.app.Server`) with ``settings``
    (their ``sync_tool_*`` set on :data:`POLICY`): its synchronous tools, and those added
    later, run in the pool from now on."""
    POLICY.configure(
        settings.sync_tool_threads, settings.sync_tool_promote_after, settings.sync_tool_fast_ms
    )
    if server in _SERVED:
        return
    _SERVED.add(server)
    _serve_tools(server)
    server.add_change_listener(lambda kind: _serve_tools(server) if kind == "tools" else None)


def _serve_tools(server: Any) -> None:
    for tool in server.tools.values():
        sync = getattr(tool, "sync", None)
        if sync is not None:
            sync.serve()


def abandoned_at_exit(where: str) -> bool:
    """Whether synchronous tool calls are still running in this process's pool threads as
    it exits (its shutdown grace over): they are abandoned (daemon threads, stopped with the
    process), which is logged at error; the exit status must then say so (non-zero), as a
    worker killed at shutdown does (``run/granian_server.py``, ``run/supervisor.py``)."""
    stuck = POLICY.running()
    if stuck:
        log.error(
            "%s: %d synchronous tool call(s) still running in threads past the shutdown "
            "grace were abandoned at exit",
            where,
            stuck,
        )
    return stuck > 0


#: The exit status of a server worker that abandoned running synchronous tool calls.
EXIT_ABANDONED = 1


def exit_if_abandoned(where: str) -> None:
    """In a server worker that has stopped serving: when :func:`abandoned_at_exit`, end the
    process now with :data:`EXIT_ABANDONED` (logs flushed), for its supervisor to count the
    exit as unclean (``Granian`` workers return no status of their own)."""
    if abandoned_at_exit(where):
        logging.shutdown()
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(EXIT_ABANDONED)


def republish(name: str, old: Any, new: Any) -> None:
    """Put a switched tool's ``new`` route (None: none) where its ``old`` one is published."""
    if old is None:
        return
    for server in list(_SERVED):
        routes = server.routes
        if name in routes and routes[name] is old:
            if new is None:
                routes.pop(name)
            else:
                routes[name] = new


__all__ = [
    "DEFAULT_FAST_MS",
    "DEFAULT_PROMOTE_AFTER",
    "DEFAULT_THREADS",
    "EXIT_ABANDONED",
    "POLICY",
    "Mode",
    "SyncCall",
    "ThreadPolicy",
    "abandoned_at_exit",
    "exit_if_abandoned",
    "republish",
    "serve",
]
