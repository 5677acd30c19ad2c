"""``jetmcp run``'s conventions, as MCP users know them from fastmcp and the SDKs: stdio
unless ``--transport http`` is given, every flag from ``JETMCP_<FLAG>`` (a flag beats its
variable), one start-up line over HTTP and nothing but MCP on stdout over stdio, and errors
that name what to fix. Real ``jetmcp run`` processes."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from harness.servers import free_port, jetmcp_command

TIMEOUT = 30.0

SERVER = """
from jetmcp import Server

app = Server("conventions")


@app.tool()
def add(a: int, b: int) -> int:
    return a + b
"""

#: Tools registered inside main(): importing the module gives a server with nothing in it.
LATE = """
from jetmcp import Server

app = Server("late")


def main() -> None:
    @app.tool()
    def add(a: int, b: int) -> int:
        return a + b

    app.run()
"""

#: A tool whose parameter type has no JSON schema.
BAD_PARAM = """
from jetmcp import Server


class Engine:
    pass


app = Server("bad-param")


@app.tool()
def start(speed: int, engine: Engine) -> str:
    return "on"
"""

#: Prints at import and in its tool, as careless code does: over stdio that must go to stderr.
NOISY = """
import os
import sys

from jetmcp import Server

print("importing noisy")
app = Server("noisy")


@app.tool()
def shout() -> str:
    print("in the tool")
    os.write(1, b"straight to fd 1\\n")
    sys.stdout.flush()
    return "ok"
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


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "app.py").write_text(SERVER)
    (tmp_path / "late.py").write_text(LATE)
    (tmp_path / "bad_param.py").write_text(BAD_PARAM)
    (tmp_path / "noisy.py").write_text(NOISY)
    return tmp_path


def _env(**values: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JETMCP_")}
    env.update(values)
    return env


def _stdio(
    project: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [*jetmcp_command(), "run", *args],
        input=(json.dumps(INIT) + "\n").encode(),
        capture_output=True,
        cwd=project,
        env=env or _env(),
        timeout=TIMEOUT,
        check=False,
    )


def _initialize_lines(stdout: bytes) -> list[dict[str, object]]:
    return [json.loads(line) for line in stdout.splitlines()]


def test_run_serves_stdio_by_default(project: Path) -> None:
    proc = _stdio(project, "app.py")
    assert proc.returncode == 0, proc.stderr.decode()
    # Nothing but the answer on stdout (no banner), nothing at all on stderr.
    (reply,) = _initialize_lines(proc.stdout)
    assert reply["id"] == 1 and reply["result"]["serverInfo"]["name"] == "conventions"  # type: ignore[index]
    assert proc.stderr == b""


def test_a_flag_beats_its_variable(project: Path) -> None:
    proc = _stdio(project, "app.py", "--transport", "stdio", env=_env(JETMCP_TRANSPORT="http"))
    assert proc.returncode == 0, proc.stderr.decode()
    (reply,) = _initialize_lines(proc.stdout)
    assert reply["result"]["serverInfo"]["name"] == "conventions"  # type: ignore[index]


class _Http:
    """``jetmcp run`` started with ``args`` and ``env``, stopped on exit."""

    def __init__(self, project: Path, args: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [*jetmcp_command(), "run", *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=project,
            env=env,
            start_new_session=True,
        )

    def initialize(self, url: str) -> dict[str, object]:
        deadline = time.monotonic() + TIMEOUT
        with httpx.Client(timeout=5.0) as client:
            while True:
                try:
                    reply = client.post(
                        url, json=INIT, headers={"accept": "application/json, text/event-stream"}
                    )
                    return dict(reply.json())
                except httpx.TransportError:
                    if self.proc.poll() is not None or time.monotonic() > deadline:
                        raise AssertionError(self.stop()[1]) from None
                    time.sleep(0.1)

    def stop(self) -> tuple[bytes, str]:
        if self.proc.poll() is None:
            self.proc.terminate()
        out, err = self.proc.communicate(timeout=TIMEOUT)
        return out, err.decode(errors="replace")


def test_http_from_the_environment_prints_one_startup_line(project: Path) -> None:
    port = free_port()
    env = _env(JETMCP_TRANSPORT="http", JETMCP_PORT=str(port), JETMCP_HOST="127.0.0.1")
    server = _Http(project, ["app.py"], env)
    try:
        reply = server.initialize(f"http://127.0.0.1:{port}/mcp")
        assert reply["result"]["serverInfo"]["name"] == "conventions"  # type: ignore[index]
    finally:
        out, err = server.stop()
    assert out == b""
    assert err.splitlines()[0] == (
        f"jetmcp: serving conventions at http://127.0.0.1:{port}/mcp (1 worker)"
    ), err
    startup = [line for line in err.splitlines() if "serving" in line]
    assert len(startup) == 1, err


def test_sse_is_http(project: Path) -> None:
    port = free_port()
    server = _Http(project, ["app.py", "--transport", "sse", "--port", str(port)], _env())
    try:
        reply = server.initialize(f"http://127.0.0.1:{port}/mcp")
        assert reply["result"]["serverInfo"]["name"] == "conventions"  # type: ignore[index]
    finally:
        server.stop()


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("JETMCP_PORT", "x", "JETMCP_PORT='x': must be a whole number, not 'x'"),
        ("JETMCP_WORKERS", "0", "JETMCP_WORKERS='0': must be 1 or more, not 0"),
        ("JETMCP_TRANSPORT", "carrier", "JETMCP_TRANSPORT='carrier': must be one of stdio"),
        ("JETMCP_STATELESS", "maybe", "JETMCP_STATELESS='maybe': must be 1, true, yes, on"),
        ("JETMCP_LOG_LEVEL", "loud", "JETMCP_LOG_LEVEL='loud': must be one of debug"),
    ],
)
def test_bad_variables_exit_2_naming_the_variable(
    project: Path, variable: str, value: str, message: str
) -> None:
    proc = _stdio(project, "app.py", env=_env(**{variable: value}))
    err = proc.stderr.decode().strip()
    assert proc.returncode == 2, err
    assert len(err.splitlines()) == 1, err
    assert err.startswith("jetmcp: ") and message in err, err
    assert proc.stdout == b""


def test_switches_and_lists_from_the_environment() -> None:
    from jetmcp.run.cli import _parser

    env = {
        "JETMCP_STATELESS": "yes",
        "JETMCP_NO_MODERN_BATCH": "1",
        "JETMCP_AUTHORIZATION_SERVER": "https://a.example, https://b.example",
        "JETMCP_ALLOWED_HOSTS": "a.example,b.example",
        "JETMCP_PORT": "9001",
    }
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        ns = _parser().parse_args(["run", "--port", "9002"])
    finally:
        for key, old in saved.items():
            if old is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = old
    assert ns.stateless is True
    assert ns.modern_batch is False
    assert ns.authorization_servers == ["https://a.example", "https://b.example"]
    assert ns.allowed_hosts == ["a.example", "b.example"]
    assert ns.port == 9002  # the flag beats JETMCP_PORT


def test_help_shows_each_flags_default_and_variable() -> None:
    proc = subprocess.run(
        [*jetmcp_command(), "run", "--help"],
        capture_output=True,
        env=_env(COLUMNS="200"),
        timeout=TIMEOUT,
        check=False,
    )
    text = proc.stdout.decode()
    assert proc.returncode == 0, proc.stderr.decode()
    flat = " ".join(text.split())
    for piece in (
        "(default: stdio; env JETMCP_TRANSPORT)",
        "(default: 8000; env JETMCP_PORT)",
        "(default: 127.0.0.1; env JETMCP_HOST)",
        "(default: 1; env JETMCP_WORKERS)",
        "(default: warning; env JETMCP_LOG_LEVEL)",
        "(env JETMCP_STATELESS=1)",
    ):
        assert piece in flat, piece
    # Every option that takes a value or is a switch names its variable.
    from jetmcp.run.cli import _parser

    run = next(
        a.choices["run"]
        for a in _parser()._actions
        if getattr(a, "choices", None) and "run" in a.choices  # type: ignore[operator]
    )
    for action in run._actions:
        longs = [o for o in action.option_strings if o.startswith("--") and o != "--help"]
        if longs:
            variable = "JETMCP_" + longs[0][2:].upper().replace("-", "_")
            assert variable in flat, longs[0]


def test_help_hides_url_credentials() -> None:
    proc = subprocess.run(
        [*jetmcp_command(), "run", "--help"],
        capture_output=True,
        env=_env(JETMCP_REDIS_URL="redis://user:hunter2@redis.example:6379/0"),
        timeout=TIMEOUT,
        check=False,
    )
    text = " ".join(proc.stdout.decode().split())
    assert "hunter2" not in text
    assert "redis://***@redis.example:6379/0" in text


def test_a_server_with_nothing_registered_warns(project: Path) -> None:
    proc = _stdio(project, "late.py")
    assert proc.returncode == 0, proc.stderr.decode()
    err = proc.stderr.decode()
    assert "'late.py' serves no tools, resources or prompts" in err, err
    assert "main()" in err and "module:main" in err, err
    (reply,) = _initialize_lines(proc.stdout)
    assert reply["id"] == 1
    # A server with tools says nothing.
    assert _stdio(project, "app.py").stderr == b""


def test_a_server_with_nothing_registered_warns_once_over_http(project: Path) -> None:
    port = free_port()
    server = _Http(project, ["late.py", "--transport", "http", "--port", str(port)], _env())
    try:
        server.initialize(f"http://127.0.0.1:{port}/mcp")
    finally:
        _, err = server.stop()
    assert err.count("serves no tools, resources or prompts") == 1, err


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_an_unsupported_parameter_type_names_the_tool_and_parameter(
    project: Path, transport: str
) -> None:
    proc = _stdio(project, "bad_param.py", "--transport", transport, "--port", str(free_port()))
    err = proc.stderr.decode().strip()
    assert proc.returncode == 2, err
    assert len(err.splitlines()) == 1, err
    assert "start: parameter 'engine' has type Engine, which has no JSON schema" in err, err


def test_stdio_stdout_carries_mcp_messages_only(project: Path) -> None:
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "shout", "arguments": {}},
    }
    proc = subprocess.run(
        [*jetmcp_command(), "run", "noisy.py"],
        input=(json.dumps(INIT) + "\n" + json.dumps(call) + "\n").encode(),
        capture_output=True,
        cwd=project,
        env=_env(),
        timeout=TIMEOUT,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode()
    replies = _initialize_lines(proc.stdout)  # every stdout line is JSON
    assert [r["id"] for r in replies] == [1, 2]
    assert replies[1]["result"]["content"][0]["text"] == "ok"  # type: ignore[index]
    err = proc.stderr.decode()
    for printed in ("importing noisy", "in the tool", "straight to fd 1"):
        assert printed in err, err
