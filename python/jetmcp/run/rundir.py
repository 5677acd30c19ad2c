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
import sys
from typing import NoReturn

#: The directory the workers of one ``jetmcp run`` share (made and removed by the main one).
RUN_DIR_ENV = "JETMCP_RUN_DIR"
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


def fail_worker(explanation: str) -> NoReturn:
    """End this worker because its target did not load: the explanation is left for the
    main process (only the first failing worker's is kept), or, outside ``jetmcp run``,
    printed here. Exits with :data:`LOAD_FAILED_STATUS` without running the exit hooks
    of the half-imported target."""
    directory = run_dir()
    written = False
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
    elif directory is not None:
        written = True  # another worker's explanation is already there
    if not written:
        sys.stderr.write(explanation)
    sys.stderr.flush()
    sys.stdout.flush()
    os._exit(LOAD_FAILED_STATUS)


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
    "WARNED",
    "claim",
    "fail_worker",
    "load_failure",
    "run_dir",
]
