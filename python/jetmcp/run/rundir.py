"""What the HTTP workers of one ``jetmcp run`` settle among themselves, through a private
directory the main process makes (:data:`RUN_DIR_ENV`).

Each worker imports the target itself, once: there is no separate check import. So that a
target's problems are still said once, not once per worker, the first worker to need a
thing said claims it by creating a file there (``O_CREAT | O_EXCL``, atomic between
processes): the start-up line (:data:`ANNOUNCED`), the warnings of loading
(:data:`WARNED`). A worker whose target fails to load leaves the one-line explanation in
:data:`FAILED` (the first one's only) and exits with :data:`LOAD_FAILED_STATUS`; the main
process then stops every worker instead of respawning it, prints that explanation last,
and exits 2.

Outside ``jetmcp run`` (no directory exported) every claim is granted: a single process
says everything itself.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import NoReturn

#: The directory the workers of one ``jetmcp run`` share (made and removed by the main one).
RUN_DIR_ENV = "JETMCP_RUN_DIR"
#: The process id of that main process (a target loaded there fails it directly).
RUN_PID_ENV = "JETMCP_RUN_PID"
#: Claimed by the worker that prints the start-up line (made in advance to print none).
ANNOUNCED = "announced"
#: Claimed by the worker that logs the warnings of loading the target.
WARNED = "warned"
#: Holds the explanation of the first worker whose target failed to load.
FAILED = "failed"
#: The exit status of a worker whose target failed to load (``jetmcp run`` itself exits 2).
LOAD_FAILED_STATUS = 3


def run_dir() -> str | None:
    """The shared directory of this ``jetmcp run``, or None outside one."""
    return os.environ.get(RUN_DIR_ENV) or None


def claim(name: str) -> bool:
    """True for the first process of this ``jetmcp run`` to claim ``name`` (always True
    outside one, or when the directory cannot be written: saying twice beats not saying)."""
    directory = run_dir()
    if directory is None:
        return True
    try:
        fd = os.open(os.path.join(directory, name), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        return False
    except OSError:
        return True
    os.close(fd)
    return True


def make_run_dir() -> str:
    """A new shared directory, exported (with this process's id) to the workers to come."""
    import tempfile

    directory = tempfile.mkdtemp(prefix="jetmcp-run-")
    os.environ[RUN_DIR_ENV] = directory
    os.environ[RUN_PID_ENV] = str(os.getpid())
    return directory


def fail_worker(explanation: str) -> NoReturn:
    """End this worker because its target did not load: the explanation is left for the
    main process (only the first failing worker's is kept), and the worker exits with
    :data:`LOAD_FAILED_STATUS` without running the exit hooks of the half-imported target.
    In the main process itself, or outside ``jetmcp run``, the explanation is printed and
    :class:`SystemExit` (status 2) raised."""
    directory = run_dir()
    if directory is None or os.environ.get(RUN_PID_ENV) == str(os.getpid()):
        sys.stderr.write(explanation)
        raise SystemExit(2)
    written = False
    # The supervisor stops every worker once one failed to load: a worker killed between its
    # claim and the rename would leave the claim and no explanation (the main process then
    # printed the short line without the reason). Stop signals wait until this one exits.
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT, signal.SIGQUIT})
    if directory is not None and claim(FAILED + ".lock"):
        try:
            # Written aside, then renamed: the main process never reads half of it.
            path = os.path.join(directory, FAILED)
            with open(path + ".part", "w", encoding="utf-8") as out:
                out.write(explanation)
            os.replace(path + ".part", path)
            written = True
        except OSError:
            pass
    else:
        written = True  # another worker's explanation is already there
    if not written:
        sys.stderr.write(explanation)
    sys.stderr.flush()
    sys.stdout.flush()
    os._exit(LOAD_FAILED_STATUS)


def failed_to_load(status: int | None) -> bool:
    """Whether a worker that exited with ``status`` did so because its target did not load
    (:func:`fail_worker`; a status of 3 of its own is not taken for one). Its supervisor
    then stops every worker, respawns none, and ends with :func:`load_failure`'s text and
    exit status 2."""
    directory = run_dir()
    if status != LOAD_FAILED_STATUS or directory is None:
        return False
    return os.path.exists(os.path.join(directory, FAILED + ".lock"))


def load_failure(directory: str) -> str | None:
    """The explanation a worker left when its target failed to load, or None."""
    try:
        with open(os.path.join(directory, FAILED), encoding="utf-8") as found:
            return found.read()
    except OSError:
        return None


__all__ = [
    "ANNOUNCED",
    "FAILED",
    "LOAD_FAILED_STATUS",
    "RUN_DIR_ENV",
    "RUN_PID_ENV",
    "WARNED",
    "claim",
    "fail_worker",
    "failed_to_load",
    "load_failure",
    "make_run_dir",
    "run_dir",
]
