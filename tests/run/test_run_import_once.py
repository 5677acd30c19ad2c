"""``jetmcp run`` imports its target once per process: over HTTP there is
no separate check import, each worker's own import is the check, and a target that does not
load ends the run with one line and status 2 (no respawns). On both HTTP engines (the
native one and Granian, whose workers are supervised differently). Real ``jetmcp run``
processes, a real target file that records every import of itself."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import httpx
import pytest

from harness.servers import free_port, jetmcp_command

TIMEOUT = 60.0

#: Appends its process id to $IMPORT_LOG each time it is imported (a start-up side effect).
COUNTED = """
import os

with open(os.environ["IMPORT_LOG"], "a") as log:
    log.write(f"{os.getpid()}\\n")

from jetmcp import Server

app = Server("counted")


@app.tool()
def add(a: int, b: int) -> int:
    return a + b
"""

BROKEN = """
import os

with open(os.environ["IMPORT_LOG"], "a") as log:
    log.write(f"{os.getpid()}\\n")


def helper():
    raise RuntimeError("boom in helper")


helper()
"""

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"},
    },
}

#: Both HTTP engines: the native one (the default) and Granian.
ENGINES = pytest.mark.parametrize("engine", ["native", "granian"])

ONE_LINE = (
    "jetmcp: 'broken.py' failed to load: RuntimeError: boom in helper "
    "(--log-level debug shows the traceback)"
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "counted.py").write_text(COUNTED)
    (tmp_path / "broken.py").write_text(BROKEN)
    return tmp_path


def _env(log: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JETMCP_")}
    env["IMPORT_LOG"] = str(log)
    return env


def _imports(log: Path) -> list[int]:
    return [int(line) for line in log.read_text().split()] if log.exists() else []


def _serve_http(
    project: Path, workers: int, log: Path, engine: str
) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    args = ["--transport", "http", "--port", str(port), "--workers", str(workers)]
    args += ["--server", engine]
    if workers > 1:
        args.append("--stateless")  # several workers without Redis
    proc = subprocess.Popen(
        [*jetmcp_command(), "run", "counted.py", *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=project,
        env=_env(log),
        start_new_session=True,
    )
    return proc, port


def _answers(proc: subprocess.Popen[bytes], port: int) -> None:
    deadline = time.monotonic() + TIMEOUT
    with httpx.Client(timeout=5.0) as client:
        while True:
            try:
                reply = client.post(
                    f"http://127.0.0.1:{port}/mcp",
                    json=INIT,
                    headers={"accept": "application/json, text/event-stream"},
                )
                assert reply.json()["result"]["serverInfo"]["name"] == "counted"
                return
            except httpx.TransportError:
                assert proc.poll() is None and time.monotonic() < deadline, _stop(proc)
                time.sleep(0.1)


def _stop(proc: subprocess.Popen[bytes]) -> str:
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)
    _, err = proc.communicate(timeout=TIMEOUT)
    return err.decode(errors="replace")


@ENGINES
@pytest.mark.parametrize("workers", [1, 2])
def test_http_imports_the_target_once_per_worker(
    project: Path, tmp_path: Path, workers: int, engine: str
) -> None:
    log = tmp_path / "imports.log"
    proc, port = _serve_http(project, workers, log, engine)
    try:
        _answers(proc, port)
        # Every worker has imported it once it serves (wait for the slower ones).
        deadline = time.monotonic() + TIMEOUT
        while len(_imports(log)) < workers and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        err = _stop(proc)
    imports = _imports(log)
    assert len(imports) == workers, (imports, err)
    assert len(set(imports)) == workers  # one import in each worker process ...
    if workers > 1 or engine == "granian":
        assert proc.pid not in imports  # ... and none in the main process that forks them
    plural = "worker" if workers == 1 else "workers"
    startup = [line for line in err.splitlines() if "serving" in line]
    assert startup == [
        f"jetmcp: serving counted at http://127.0.0.1:{port}/mcp ({workers} {plural})"
    ], err


def test_stdio_imports_the_target_once(project: Path, tmp_path: Path) -> None:
    log = tmp_path / "imports.log"
    proc = subprocess.Popen(
        [*jetmcp_command(), "run", "counted.py", "--transport", "stdio"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=project,
        env=_env(log),
    )
    out, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 0, err.decode()
    assert out == b""
    assert _imports(log) == [proc.pid]  # `jetmcp run` itself, with no helper process


def _run_broken(project: Path, log: Path, *extra: str) -> tuple[int, str]:
    proc = subprocess.run(
        [
            *jetmcp_command(),
            "run",
            "broken.py",
            "--transport",
            "http",
            "--port",
            str(free_port()),
            *extra,
        ],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        cwd=project,
        env=_env(log),
        timeout=TIMEOUT,
        check=False,
    )
    assert proc.stdout == b""
    return proc.returncode, proc.stderr.decode(errors="replace")


@ENGINES
@pytest.mark.parametrize("workers", [1, 2])
def test_a_target_failing_in_its_workers_exits_2_with_one_line(
    project: Path, tmp_path: Path, workers: int, engine: str
) -> None:
    log = tmp_path / "imports.log"
    extra = ["--workers", str(workers), "--stateless", "--server", engine]
    code, err = _run_broken(project, log, *extra)
    assert code == 2, err
    assert err.splitlines() == [ONE_LINE], err
    # Not respawned: each worker tried once (a worker still importing when the first
    # failed may have been stopped before it did).
    assert 1 <= len(_imports(log)) <= workers, err


@ENGINES
def test_a_failing_target_shows_one_traceback_at_debug(
    project: Path, tmp_path: Path, engine: str
) -> None:
    extra = ["--workers", "2", "--stateless", "--log-level", "debug", "--server", engine]
    code, err = _run_broken(project, tmp_path / "imports.log", *extra)
    assert code == 2, err
    assert err.count("Traceback (most recent call last)") == 1, err
    assert "in helper" in err
    assert err.splitlines()[-1] == (
        "jetmcp: 'broken.py' failed to load: RuntimeError: boom in helper"
    ), err


@ENGINES
def test_a_target_that_exits_while_loading_exits_2(
    project: Path, tmp_path: Path, engine: str
) -> None:
    (project / "quits.py").write_text("import sys\n\nsys.exit(0)\n")
    command = [*jetmcp_command(), "run", "quits.py", "--transport", "http", "--server", engine]
    proc = subprocess.run(
        [*command, "--port", str(free_port())],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        cwd=project,
        env=_env(tmp_path / "imports.log"),
        timeout=TIMEOUT,
        check=False,
    )
    err = proc.stderr.decode(errors="replace")
    assert proc.returncode == 2, err
    assert err.splitlines() == [
        "jetmcp: 'quits.py' exited while loading (status 0) (--log-level debug shows the traceback)"
    ], err


def test_claims_go_to_the_first_process_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from jetmcp.run import rundir

    monkeypatch.delenv(rundir.RUN_DIR_ENV, raising=False)
    assert rundir.claim(rundir.WARNED) and rundir.claim(rundir.WARNED)  # outside jetmcp run
    monkeypatch.setenv(rundir.RUN_DIR_ENV, str(tmp_path))
    assert rundir.claim(rundir.WARNED)
    assert not rundir.claim(rundir.WARNED)
    assert rundir.claim(rundir.ANNOUNCED)
    assert not rundir.failed_to_load(rundir.LOAD_FAILED_STATUS)  # no worker said so


def test_a_load_failure_outside_a_worker_exits_2_saying_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from jetmcp.run import rundir

    monkeypatch.delenv(rundir.RUN_DIR_ENV, raising=False)
    with pytest.raises(SystemExit) as exited:
        rundir.fail_worker("jetmcp: 'x.py' failed to load\n")
    assert exited.value.code == 2
    assert capsys.readouterr().err == "jetmcp: 'x.py' failed to load\n"
    # In the main process of a run (the native engine's single worker) too.
    monkeypatch.setenv(rundir.RUN_DIR_ENV, str(tmp_path))
    monkeypatch.setenv(rundir.RUN_PID_ENV, str(os.getpid()))
    with pytest.raises(SystemExit):
        rundir.fail_worker("jetmcp: again\n")
    assert capsys.readouterr().err == "jetmcp: again\n"
    assert rundir.load_failure(str(tmp_path)) is None


def test_a_stop_signal_while_the_explanation_is_written_waits_for_it(tmp_path: Path) -> None:
    """The supervisor stops every worker as soon as one failed to load: a worker stopped
    between its claim of the explanation and its rename left the claim and no explanation,
    and ``jetmcp run`` printed the short line without the reason (seen once in about 13 runs
    with 2 native workers). Here the worker sends itself SIGTERM at that very point."""
    code = textwrap.dedent(
        """
        import os, signal
        from jetmcp.run import rundir

        real_replace = os.replace

        def replace(src, dst):
            os.kill(os.getpid(), signal.SIGTERM)
            real_replace(src, dst)

        os.replace = replace
        rundir.fail_worker("the reason it failed\\n")
        """
    )
    env = {**os.environ, "JETMCP_RUN_DIR": str(tmp_path), "JETMCP_RUN_PID": "1"}
    done = subprocess.run([sys.executable, "-c", code], env=env, timeout=30, check=False)
    assert done.returncode == 3, done
    assert (tmp_path / "failed").read_text() == "the reason it failed\n"
