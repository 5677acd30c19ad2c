"""Helpers of the ``jetmcp bench`` tests: a real server of tests/apps/bench_app.py and the
command run as a user would."""

from __future__ import annotations

import json
import shlex
import subprocess
from collections.abc import Iterator
from typing import Any

from harness.client_app import ROOT, app_env, free_port, jetmcp_command
from harness.servers import ServerProcess, jetmcp_http_argv

APP = "apps.bench_app:app"
ADD = ["--tool", "add", "--args", '{"a": 1, "b": 2}']
RUN_TIMEOUT = 120.0


def serve_http(*extra: str) -> Iterator[ServerProcess]:
    port = free_port()
    argv = jetmcp_http_argv(APP, port, *extra)
    server = ServerProcess(argv, port, env=app_env(), cwd=str(ROOT))
    try:
        yield server
    finally:
        server.stop()


def stdio_command() -> str:
    return shlex.join([*jetmcp_command(), "run", APP, "--transport", "stdio"])


def bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*jetmcp_command(), "bench", *args],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        env=app_env(),
        cwd=str(ROOT),
        check=False,
    )


def bench_json(*args: str, status: int = 0) -> dict[str, Any]:
    done = bench(*args, "-q", "--json", "-")
    assert done.returncode == status, done.stderr + done.stdout
    data: dict[str, Any] = json.loads(done.stdout)
    return data
