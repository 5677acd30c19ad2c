"""Granian's process manager with what ``jetmcp run --workers N`` needs on top of it.

Granian replaces a worker that died (its ``respawn_failed_workers``, turned on by
:func:`granian_options`) while the others keep serving. What it does not do is kept
here: every worker that died unexpectedly, and every worker that had to be killed at
shutdown (it outlived the grace period), is logged at error with its pid and signal, and
makes the exit status 1 (:attr:`SupervisedGranian.unclean`); Granian itself exits 0 after
a respawn or a kill.

Granian's own rule stays: when the same worker dies twice within 5.5 s (a crash loop)
it gives up and exits 1 instead of respawning it again.
"""

from __future__ import annotations

import logging
import multiprocessing.util
import os
import signal
import threading
import time
from typing import Any

from granian.server.mp import MPServer

from jetmcp.run.lifeline import die_with_parent
from jetmcp.run.rundir import LOAD_FAILED_STATUS, failed_to_load

_log = logging.getLogger("jetmcp.run")


def describe_exit(code: int | None) -> str:
    """``multiprocessing``'s exit code in words: ``killed by SIGKILL`` or ``status 3``."""
    if code is None:
        return "still running"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"status {code}"


#: Exit codes of a worker that stopped on the signal it was sent (multiprocessing's: -N).
_ASKED = {-signal.SIGTERM, -signal.SIGINT}


def exit_code(process: Any, wait: float = 2.0) -> int | None:
    """A joined process's exit code. At shutdown two threads join each worker (Granian's
    main loop, with its kill timeout, and the worker's watcher): the one whose ``waitpid``
    loses the race reads None (``ECHILD``) until the other has stored the code, so it is
    waited for (at most ``wait`` seconds; None if it never comes)."""
    code: int | None = process.exitcode
    deadline = time.monotonic() + wait
    while code is None and time.monotonic() < deadline:
        time.sleep(0.005)
        code = process.exitcode
    return code


def _start_worker(server: SupervisedGranian) -> None:
    """In a worker as it starts, before it imports anything: tied to the main process
    (killed when it dies: :func:`jetmcp.run.lifeline.die_with_parent`), and ended by
    SIGTERM and SIGINT until Granian installs the worker's own handlers (once the app is
    built). Until then it would have the main process's, which only set a flag of the
    main's copied state: a SIGTERM while the worker imported the app was lost, and the
    worker killed 5 s past the grace. A worker stopped before it serves has nothing to
    drain."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    die_with_parent(server.main_pid)


def granian_options() -> dict[str, Any]:
    """The options of Granian's server that supervision sets."""
    return {"respawn_failed_workers": True}


class SupervisedGranian(MPServer):
    """Granian's multi-process server, keeping the unclean worker exits it saw."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: One line per worker that died unexpectedly or had to be killed.
        self.unclean: list[str] = []
        #: The threads that watch each worker's exit (see :meth:`settle`).
        self._watching: list[threading.Thread] = []
        self.main_pid = os.getpid()
        #: Set when a worker's target failed to load (``jetmcp run`` then exits 2).
        self.load_failed = False
        # Run in each forked worker first thing (multiprocessing's after-fork hooks).
        multiprocessing.util.register_after_fork(self, _start_worker)

    def _spawn_worker(self, *args: Any, **kwargs: Any) -> Any:
        # Granian's (untyped) worker: its watcher thread and kill are wrapped in place.
        worker: Any = super()._spawn_worker(*args, **kwargs)
        idx = int(worker.idx)
        granian_watcher = worker._watcher
        killed_here = False

        def watcher() -> None:
            # Granian's watcher thread: joins the process, then (unless this server
            # stopped it) asks the main loop for a respawn.
            self._watching.append(threading.current_thread())
            worker.inner.join()
            code = exit_code(worker.inner)
            if self._load_failed(code):
                return
            if self.interrupt_signal:
                # Shutting down: a worker that got the signal too (a terminal's Ctrl-C
                # reaches the whole group) and stopped first has done what was asked;
                # one killed by something else while it drained has not.
                if code and code not in _ASKED and not killed_here:
                    self._unclean(
                        f"worker-{idx + 1} (pid {worker.inner.pid}) died while stopping: "
                        f"{describe_exit(code)}"
                    )
                return
            if not worker.interrupt_by_parent:
                self._unclean(
                    f"worker-{idx + 1} (pid {worker.inner.pid}) died unexpectedly: "
                    f"{describe_exit(code)}"
                )
            granian_watcher()

        granian_kill = worker.kill

        def kill() -> None:
            nonlocal killed_here
            killed_here = True
            # Granian kills a worker only when it did not stop within workers_kill_timeout
            # of its SIGTERM. (Its exit code cannot tell: the watcher thread may be the
            # one that reaps it, leaving none to this thread.)
            self._unclean(
                f"worker-{idx + 1} (pid {worker.inner.pid}) had to be killed (SIGKILL): "
                "it did not stop within the grace period"
            )
            granian_kill()

        worker._watcher = watcher
        worker.kill = kill
        return worker

    def _load_failed(self, code: int | None) -> bool:
        """Whether the worker exited because the target did not load
        (:func:`jetmcp.run.rundir.failed_to_load`). Then every worker is stopped, none is
        respawned (each would fail the same way), and :attr:`load_failed` is set."""
        if self.load_failed and code == LOAD_FAILED_STATUS:
            # Another worker that failed the same way, seen after the run's directory (and
            # the failure's record in it) was cleaned up.
            return True
        if not failed_to_load(code):
            return False
        self.load_failed = True
        # What Granian's own SIGTERM handler does: its main loop stops every worker.
        self.interrupt_signal = True
        self.main_loop_interrupt.set()
        return True

    def settle(self, timeout: float = 5.0) -> None:
        """Wait for the watcher threads to judge the workers' exits: Granian returns from
        ``serve()`` once its workers are joined, and a watcher may not have looked at its
        worker's exit status yet (a worker that abandoned a thread and exited 1 was then
        missed, and ``jetmcp run`` exited 0)."""
        deadline = time.monotonic() + timeout
        for thread in list(self._watching):
            thread.join(max(0.0, deadline - time.monotonic()))

    def _unclean(self, line: str) -> None:
        _log.error("%s", line)
        self.unclean.append(line)


__all__ = ["SupervisedGranian", "describe_exit", "exit_code", "granian_options"]
