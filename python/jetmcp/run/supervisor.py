"""``--workers N`` without Granian: this process owns the listening socket and keeps N
forked workers serving it, replacing any that dies or hangs.

- The main process binds the socket and keeps it open for as long as it runs: a dead
  worker's place in the accept queue is taken by the others, a connection is never refused
  for it, and the port stays this server's until the main process exits.
- Each worker is forked (before any event loop exists here), restores the default signal
  dispositions, ties itself to this process (:func:`jetmcp.run.lifeline.die_with_parent`:
  killed when the main process dies, however it dies) and runs ``worker_main(sock)``;
  its return value is its exit status.
- A worker that dies is logged at error with its pid and how it ended, and replaced after
  a delay that doubles with each death in a row of that worker's place (``restart_delay``
  up to ``restart_delay_max``; a worker that served ``healthy_seconds`` resets it). From
  ``crash_loop_after`` deaths in a row on, each is also reported as a crash loop; the
  place keeps being restarted at the capped delay.
- SIGTERM and SIGINT are forwarded to every worker, which drains, and the socket stops
  listening (new clients are refused at once, not left in the backlog); a worker still
  running ``grace`` seconds later is killed (SIGKILL). A second SIGTERM/SIGINT kills at
  once.
- Children are reaped as they end (SIGCHLD wakes the loop): no zombie.
- The exit status (the return value) is 0 when every worker stopped with status 0 when
  asked to, 1 when any died unexpectedly, exited non-zero or had to be killed, 2 when a
  worker's target did not load (:func:`jetmcp.run.rundir.failed_to_load`): then every
  worker is stopped and none restarted.

- With ``listen`` (a factory of listening sockets, ``SO_REUSEPORT`` ones on one port),
  ``sock`` only holds the port (bound, not listening) and each worker gets a listening
  socket of its own, made when its place starts: the kernel spreads new connections over
  the workers' sockets evenly, where workers sharing one socket take them as they wake
  (with persistent connections one worker can end up with nearly all of them: 62 of 64
  under wrk -c64, bench/results/workers.md). A dead worker's socket is closed at once
  when another worker is serving (new clients go to the living; connections queued on it
  but not yet accepted are reset), else kept for its replacement (they wait for it).

Signals reach Python handlers in the main thread only: :func:`serve_workers` must be
called there, and ``PR_SET_PDEATHSIG`` fires when the forking thread ends, which is this one.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import signal
import socket
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from types import FrameType

from jetmcp.run.lifeline import die_with_parent
from jetmcp.run.rundir import failed_to_load

#: Defaults of :func:`serve_workers`' restart policy (seconds, deaths).
RESTART_DELAY = 0.1
RESTART_DELAY_MAX = 10.0
HEALTHY_SECONDS = 30.0
CRASH_LOOP_AFTER = 5

_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
_BLOCKED: set[int | signal.Signals] = {*_STOP_SIGNALS, signal.SIGCHLD}


def describe_status(status: int) -> str:
    """A ``waitpid`` status in words: ``killed by SIGKILL`` or ``status 3``."""
    if os.WIFSIGNALED(status):
        signum = os.WTERMSIG(status)
        try:
            return f"killed by {signal.Signals(signum).name}"
        except ValueError:
            return f"killed by signal {signum}"
    return f"status {os.waitstatus_to_exitcode(status)}"


@dataclass
class _Place:
    """One of the N worker places: its current process, and its run of deaths."""

    index: int
    pid: int = 0
    started: float = 0.0
    deaths_in_a_row: int = 0
    restart_at: float = 0.0
    #: Its own listening socket (with ``listen``), kept between a death and the restart
    #: only when no other worker serves.
    sock: socket.socket | None = None


@dataclass
class _Supervisor:
    sock: socket.socket
    worker_main: Callable[[socket.socket], int]
    grace: float
    log: logging.Logger
    restart_delay: float
    restart_delay_max: float
    healthy_seconds: float
    crash_loop_after: int
    listen: Callable[[], socket.socket] | None = None
    places: list[_Place] = field(default_factory=list)
    stop_signal: int = 0
    hurry: bool = False
    unclean: bool = False
    load_failed: bool = False
    _wake_r: int = -1
    _wake_w: int = -1

    # ----------------------------------------------------------------- workers

    def spawn(self, place: _Place) -> None:
        parent = os.getpid()
        if self.listen is not None and place.sock is None:
            try:
                place.sock = self.listen()
            except OSError as exc:
                # Out of file descriptors, say: counted as a death of this place (retried
                # after the growing delay); the other workers go on serving.
                self.log.error("worker %d has no listening socket: %s", place.index + 1, exc)
                place.started = time.monotonic()
                self._ended(place, 1 << 8)
                return
        for handler in logging.getLogger().handlers + self.log.handlers:
            handler.flush()
        # Stop signals wait until the child has the default handlers back: one forwarded
        # to it before that would reach this process's handler, copied, and be lost.
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, _BLOCKED)
        try:
            pid = os.fork()
            if pid == 0:
                self._become_worker(parent, blocked, place)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        place.pid = pid
        place.started = time.monotonic()
        self.log.info("worker %d started (pid %d)", place.index + 1, pid)

    def _become_worker(self, parent: int, mask: set[int | signal.Signals], place: _Place) -> None:
        """In the child: never returns (its status is ``worker_main``'s value)."""
        status = 1
        try:
            signal.set_wakeup_fd(-1)
            os.close(self._wake_r)
            os.close(self._wake_w)
            for signum in _BLOCKED:
                signal.signal(signum, signal.SIG_DFL)
            # A stop signal sent meanwhile ends the worker now (it has nothing to drain).
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            die_with_parent(parent)
            sock = self.sock
            if place.sock is not None:
                sock = place.sock
                self.sock.close()  # the port's holder, and the other workers' sockets
                for other in self.places:
                    if other is not place and other.sock is not None:
                        other.sock.close()
            status = int(self.worker_main(sock))
        except SystemExit as exc:
            status = exc.code if isinstance(exc.code, int) else 1
        except BaseException:
            traceback.print_exc()
        finally:
            with contextlib.suppress(Exception):
                sys.stdout.flush()
                sys.stderr.flush()
            os._exit(status)

    def reap(self) -> None:
        """Collect every worker that ended (its own pid only: other children of this
        process are left to whoever started them); schedule replacements unless stopping."""
        for place in self.live():
            try:
                pid, status = os.waitpid(place.pid, os.WNOHANG)
            except ChildProcessError:
                pid, status = place.pid, 0
            if pid == 0:
                continue
            place.pid = 0
            self._ended(place, status)

    def _ended(self, place: _Place, status: int) -> None:
        how = describe_status(status)
        if place.sock is not None and (self.stop_signal or self.live()):
            place.sock.close()
            place.sock = None
        if os.WIFEXITED(status) and failed_to_load(os.WEXITSTATUS(status)):
            # The target does not load: every worker would fail the same way. No restart;
            # the run stops and ends with status 2 (its caller says why: jetmcp.run.rundir).
            self.load_failed = True
            self.stop_signal = self.stop_signal or signal.SIGTERM
            return
        if self.stop_signal and os.WIFSIGNALED(status) and os.WTERMSIG(status) == self.stop_signal:
            # Ended by the stop signal itself: a worker that serves drains and exits 0, so
            # this one was still starting (importing the app) and had nothing to drain.
            self.log.info("worker %d stopped while starting", place.index + 1)
            return
        if self.stop_signal:
            if status != 0:
                self.unclean = True
                self.log.error("worker %d exited with %s while stopping", place.index + 1, how)
            return
        self.unclean = True
        now = time.monotonic()
        if now - place.started >= self.healthy_seconds:
            place.deaths_in_a_row = 0
        place.deaths_in_a_row += 1
        delay = min(self.restart_delay * 2 ** (place.deaths_in_a_row - 1), self.restart_delay_max)
        place.restart_at = now + delay
        self.log.error(
            "worker %d died unexpectedly (%s); replacing it in %.1f s",
            place.index + 1,
            how,
            delay,
        )
        if place.deaths_in_a_row >= self.crash_loop_after:
            self.log.error(
                "worker %d is in a crash loop: %d deaths in a row, each within %.0f s of its start",
                place.index + 1,
                place.deaths_in_a_row,
                self.healthy_seconds,
            )

    def live(self) -> list[_Place]:
        return [p for p in self.places if p.pid]

    # ----------------------------------------------------------------- signals

    def _on_stop(self, signum: int, _frame: FrameType | None) -> None:
        if self.stop_signal:
            self.hurry = True
        else:
            self.stop_signal = signum

    def _wait(self, seconds: float) -> None:
        """Sleep until a signal arrives or ``seconds`` pass."""
        with contextlib.suppress(InterruptedError):
            select.select([self._wake_r], [], [], max(0.0, seconds))
        with contextlib.suppress(BlockingIOError):
            while os.read(self._wake_r, 512):
                pass

    # ----------------------------------------------------------------- phases

    def run(self, workers: int) -> int:
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        previous_fd = signal.set_wakeup_fd(self._wake_w, warn_on_full_buffer=False)
        previous = {s: signal.getsignal(s) for s in (*_STOP_SIGNALS, signal.SIGCHLD)}
        try:
            for signum in _STOP_SIGNALS:
                signal.signal(signum, self._on_stop)
            # A handler (not SIG_DFL, which discards it) so that SIGCHLD wakes the loop.
            signal.signal(signal.SIGCHLD, lambda _s, _f: None)
            self.places = [_Place(index) for index in range(workers)]
            for place in self.places:
                self.spawn(place)
            self._serve()
            self._stop()
        finally:
            signal.set_wakeup_fd(previous_fd)
            for signum, handler in previous.items():
                signal.signal(signum, handler)
            os.close(self._wake_r)
            os.close(self._wake_w)
        return 2 if self.load_failed else 1 if self.unclean else 0

    def _serve(self) -> None:
        while not self.stop_signal:
            self.reap()
            now = time.monotonic()
            for place in self.places:
                if not place.pid and place.restart_at <= now and not self.stop_signal:
                    self.spawn(place)
            waiting = [p.restart_at for p in self.places if not p.pid]
            self._wait(min(waiting) - time.monotonic() if waiting else 60.0)

    def _stop(self) -> None:
        signum = self.stop_signal
        self.log.info(
            "%s: stopping %d workers (grace %.1f s)",
            signal.Signals(signum).name,
            len(self.live()),
            self.grace,
        )
        for place in self.live():
            with contextlib.suppress(ProcessLookupError):
                os.kill(place.pid, signum)
        # The socket stops listening for every process that shares it: a new client is
        # refused at once (and tries another replica) instead of waiting in the backlog
        # for workers that no longer accept, to be reset when the last copy closes.
        for sock in (self.sock, *(p.sock for p in self.places)):
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RD)
        deadline = time.monotonic() + self.grace
        while True:
            self.reap()
            if not self.live() or self.hurry or time.monotonic() >= deadline:
                break
            self._wait(deadline - time.monotonic())
        for place in self.live():
            self.unclean = True
            self.log.error(
                "worker %d (pid %d) had to be killed (SIGKILL): it did not stop within "
                "the grace period",
                place.index + 1,
                place.pid,
            )
            with contextlib.suppress(ProcessLookupError):
                os.kill(place.pid, signal.SIGKILL)
        for place in self.live():
            with contextlib.suppress(ChildProcessError):
                os.waitpid(place.pid, 0)
            place.pid = 0
        for place in self.places:
            if place.sock is not None:
                place.sock.close()
                place.sock = None


def serve_workers(
    sock: socket.socket,
    workers: int,
    worker_main: Callable[[socket.socket], int],
    *,
    grace: float,
    log: logging.Logger,
    restart_delay: float = RESTART_DELAY,
    restart_delay_max: float = RESTART_DELAY_MAX,
    healthy_seconds: float = HEALTHY_SECONDS,
    crash_loop_after: int = CRASH_LOOP_AFTER,
    listen: Callable[[], socket.socket] | None = None,
) -> int:
    """Keep ``workers`` forked processes running ``worker_main(sock)`` until SIGTERM or
    SIGINT, then drain them within ``grace`` seconds; the exit status to leave with (0, or
    1 when a worker died unexpectedly, exited non-zero or had to be killed; 2 when a
    worker's target did not load). With ``listen``, each worker serves a socket of its
    own that ``listen()`` makes (``sock`` only holds the port). See the module's text for
    the rules."""
    if workers < 1:
        raise ValueError("workers must be at least 1")
    if restart_delay <= 0 or restart_delay_max < restart_delay:
        raise ValueError("restart delays must be positive, the cap at least the first one")
    return _Supervisor(
        sock,
        worker_main,
        grace,
        log,
        restart_delay,
        restart_delay_max,
        healthy_seconds,
        crash_loop_after,
        listen,
    ).run(workers)


__all__ = [
    "CRASH_LOOP_AFTER",
    "HEALTHY_SECONDS",
    "RESTART_DELAY",
    "RESTART_DELAY_MAX",
    "describe_status",
    "serve_workers",
]
