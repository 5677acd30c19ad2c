"""The suite's memory guard (``tests/conftest.py``): a test that runs away with memory stops
the run, named, instead of leaving it to the kernel's OOM killer."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

GROWING = """
import time


def test_small() -> None:
    assert True


def test_grows() -> None:
    held = b"x" * (400 << 20)  # written, so resident
    time.sleep(3)
    assert held
"""


def test_a_runaway_test_is_named_and_stops_the_run(tmp_path: Path) -> None:
    (tmp_path / "test_runaway.py").write_text(GROWING)
    env = dict(
        os.environ,
        JETMCP_TEST_MAX_RSS_MB="300",
        PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "tests")]),
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-p",
            "tests.conftest",
            "-q",
            str(tmp_path / "test_runaway.py"),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 3, out
    assert "memory guard" in out
    assert "test_runaway.py::test_grows" in out
    assert "test_grows" in out.split("every thread:", 1)[1]  # its stack
