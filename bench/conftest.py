"""Benchmarks measure the release build of the extension.

Before anything imports ``jetmcp._wire``, ``maturin develop --release`` builds it into the
running venv (the test suite leaves the quicker ``ci`` build there); set
``JETMCP_BENCH_NO_BUILD=1`` to measure whatever is installed. The build profile that was
loaded is printed in the report header and at the end, and stored in each benchmark's
``extra_info``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get("JETMCP_BENCH_NO_BUILD"):
        return
    maturin = Path(sys.executable).parent / "maturin"
    done = subprocess.run(
        [str(maturin), "develop", "--release", "-q"],
        cwd=ROOT,
        env=dict(os.environ, VIRTUAL_ENV=sys.prefix),
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-10:])
        raise pytest.UsageError(f"maturin develop --release failed:\n{tail}")


def _wire_build() -> str:
    from jetmcp import _wire

    return str(getattr(_wire, "BUILD", "unknown (no _wire.BUILD)"))


def pytest_report_header(config: pytest.Config) -> str:
    return f"jetmcp._wire build: {_wire_build()}"


def pytest_terminal_summary(terminalreporter: Any) -> None:
    # The header is hidden under -q (the project's default): say it at the end too.
    terminalreporter.write_line(f"jetmcp._wire build measured: {_wire_build()}")


@pytest.fixture(autouse=True)
def _record_build(request: pytest.FixtureRequest) -> None:
    if "benchmark" in request.fixturenames:
        bench: Any = request.getfixturevalue("benchmark")
        bench.extra_info["wire_build"] = _wire_build()
