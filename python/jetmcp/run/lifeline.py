"""A worker process dies with the process that started it (no orphan keeps the port).

Linux's ``prctl(PR_SET_PDEATHSIG)`` has the kernel signal the worker when its parent
exits, however the parent ends (``kill -9`` included). The request is made after the
fork, so a parent that died in between would be missed: the worker then checks that its
parent is still the process that forked it, and exits at once when not.
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import sys

#: ``PR_SET_PDEATHSIG`` of ``<linux/prctl.h>``.
_PR_SET_PDEATHSIG = 1

_log = logging.getLogger("jetmcp.run")


def die_with_parent(parent_pid: int, signum: int = signal.SIGKILL) -> bool:
    """Have the kernel send ``signum`` to this process when its parent exits; exit now
    (status 1) when the parent is already gone, i.e. is no longer ``parent_pid``.

    True when the kernel took the request; False where ``prctl`` does not exist (not
    Linux), in which case only the check against ``parent_pid`` was made."""
    armed = False
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(_PR_SET_PDEATHSIG, int(signum), 0, 0, 0) != 0:
            err = ctypes.get_errno()
            _log.warning("prctl(PR_SET_PDEATHSIG) failed: %s", os.strerror(err))
        else:
            armed = True
    if os.getppid() != parent_pid:
        # The parent died between the fork and the request above: nobody would stop us.
        _log.error("worker %d: its parent %d is gone, exiting", os.getpid(), parent_pid)
        os._exit(1)
    return armed


__all__ = ["die_with_parent"]
