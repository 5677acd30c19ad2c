"""Serving user code as a user would: ``jetmcp run module:app`` with the module's directory on
``PYTHONPATH``, and running client scripts as separate processes. Used by the tests of
``examples/`` and of the documentation's runnable code blocks."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.servers import AppServer

#: Bounds one client script; each of their calls has its own, shorter timeout too.
SCRIPT_TIMEOUT = 60.0


@contextlib.contextmanager
def served(target: str, directory: Path, *extra: str) -> Iterator[AppServer]:
    """``jetmcp run target`` over HTTP on a free port, ``directory`` importable."""
    with pytest.MonkeyPatch.context() as patch:
        path = os.environ.get("PYTHONPATH")
        patch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(directory), path])))
        server = AppServer(target, *extra, label=f"server {target} from {directory}")
    try:
        yield server
    finally:
        server.stop()


def run_script(
    script: Path, *args: str, pythonpath: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``script`` with this interpreter; fail the test with its output unless it exits 0."""
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(pythonpath), env.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, str(script), *args],
        capture_output=True,
        text=True,
        timeout=SCRIPT_TIMEOUT,
        env=env,
        cwd=script.parent,
        check=False,
    )
    assert done.returncode == 0, (
        f"{script.name} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    )
    return done
