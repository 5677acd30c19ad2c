"""``jetmcp run TARGET``: every form of target, the working directory on ``sys.path`` for
every transport, and one-line refusals with exit status 2."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from harness.servers import free_port, jetmcp_command
from jetmcp.run.loader import LoadError, load_app, split_target

SERVER = """
from jetmcp import Server

{name} = Server("{label}")


@{name}.tool()
def add(a: int, b: int) -> int:
    return a + b
"""

FACTORY = """
from jetmcp import Server


def create_server():
    server = Server("from-factory")

    @server.tool()
    def hello() -> str:
        return "hi"

    return server
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
TIMEOUT = 20.0


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A folder laid out as a user's project: a server module, a helper it imports, a file
    with a factory, and a package."""
    (tmp_path / "helper.py").write_text("LABEL = 'from-helper'\n")
    (tmp_path / "srv.py").write_text(
        "from helper import LABEL\n"
        + SERVER.format(name="mcp", label="{LABEL}").replace('"{LABEL}"', "LABEL")
    )
    (tmp_path / "other.py").write_text(SERVER.format(name="my_server", label="other"))
    (tmp_path / "fac.py").write_text(FACTORY)
    (tmp_path / "two.py").write_text(
        SERVER.format(name="first", label="a") + SERVER.format(name="second", label="b")
    )
    (tmp_path / "nothing.py").write_text("x = 1\n")
    (tmp_path / "broken.py").write_text("import not_a_module_anywhere\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "server.py").write_text(SERVER.format(name="app", label="pkg"))
    return tmp_path


def _stdio_name(target: str, cwd: Path) -> str:
    """Run ``jetmcp run TARGET --transport stdio`` in ``cwd`` and return serverInfo.name."""
    proc = subprocess.run(
        [*jetmcp_command(), "run", target, "--transport", "stdio"],
        input=(json.dumps(INIT) + "\n").encode(),
        capture_output=True,
        cwd=cwd,
        timeout=TIMEOUT,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode()
    reply = json.loads(proc.stdout.splitlines()[0])
    return str(reply["result"]["serverInfo"]["name"])


@pytest.mark.parametrize(
    ("target", "name"),
    [
        ("srv", "from-helper"),
        ("srv:mcp", "from-helper"),
        ("srv.py", "from-helper"),
        ("srv.py:mcp", "from-helper"),
        ("other.py", "other"),
        ("fac.py", "from-factory"),
        ("fac:create_server()", "from-factory"),
        ("fac.py:create_server", "from-factory"),
        ("pkg.server", "pkg"),
        ("pkg/server.py:app", "pkg"),
    ],
)
def test_stdio_targets(project: Path, target: str, name: str) -> None:
    assert _stdio_name(target, project) == name


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("missing_module", "no module named 'missing_module'"),
        ("missing.py", "no such file: missing.py"),
        ("srv:nope", "module has no attribute 'nope'"),
        ("nothing.py", "holds no MCP server"),
        ("two.py", "holds several servers (first, second)"),
        ("srv:add", "could not be called: add() missing 2 required positional arguments"),
        ("srv:LABEL", "not an MCP server"),
        ("broken.py", "No module named 'not_a_module_anywhere'"),
        ("srv:", "names no attribute"),
        # Typos get the closest name (difflib).
        ("srvv.py", "no such file: srvv.py (did you mean 'srv.py'?)"),
        ("pkg/servr.py", "no such file: pkg/servr.py (did you mean 'pkg/server.py'?)"),
        ("srvv", "no module named 'srvv' (did you mean 'srv'?)"),
        ("srv:mpc", "module has no attribute 'mpc' (did you mean 'mcp'?)"),
    ],
)
@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_bad_targets_exit_2_with_one_line(
    project: Path, target: str, message: str, transport: str
) -> None:
    proc = subprocess.run(
        [*jetmcp_command(), "run", target, "--transport", transport, "--port", str(free_port())],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        cwd=project,
        timeout=TIMEOUT,
        check=False,
    )
    err = proc.stderr.decode().strip()
    assert proc.returncode == 2, err
    assert len(err.splitlines()) == 1, err
    assert err.startswith("jetmcp: ") and message in err, err


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--port", "x"], "argument --port: must be a whole number, not 'x'"),
        (["--port", "70000"], "argument --port: must be a port number from 1 to 65535"),
        (["--workers", "0"], "argument --workers: must be 1 or more, not 0"),
        (["--max-batch", "-1"], "argument --max-batch: must be 1 or more, not -1"),
        (["--session-idle-seconds", "-1"], "must be a number of seconds above 0"),
        (["--keepalive-seconds", "soon"], "must be a number, not 'soon'"),
        (["--log-level", "loud"], "argument --log-level: must be one of debug, info"),
        (["--transport", "carrier"], "argument --transport: invalid choice: 'carrier'"),
        (["--metrics-port", "99999"], "argument --metrics-port: must be a port number"),
    ],
)
def test_bad_flag_values_exit_2_with_one_line(flags: list[str], message: str) -> None:
    proc = subprocess.run(
        [*jetmcp_command(), "run", *flags],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=TIMEOUT,
        check=False,
    )
    err = proc.stderr.decode().strip()
    assert proc.returncode == 2, err
    assert len(err.splitlines()) == 1, err
    assert err.startswith("jetmcp run: ") and message in err, err
    assert err.endswith("(see jetmcp run --help)"), err
    assert proc.stdout == b""


@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_a_target_that_raises_shows_its_traceback_only_at_debug(
    tmp_path: Path, transport: str
) -> None:
    (tmp_path / "broken.py").write_text(
        "def helper():\n    raise RuntimeError('boom in helper')\n\nhelper()\n"
    )

    def run(*extra: str) -> tuple[int, str]:
        proc = subprocess.run(
            [*jetmcp_command(), "run", "broken.py", "--transport", transport, *extra],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=TIMEOUT,
            check=False,
            cwd=tmp_path,
        )
        return proc.returncode, proc.stderr.decode().strip()

    code, err = run()
    assert code == 2
    assert err.splitlines() == [
        "jetmcp: 'broken.py' failed to load: RuntimeError: boom in helper "
        "(--log-level debug shows the traceback)"
    ], err
    code, err = run("--log-level", "debug")
    assert code == 2
    assert "Traceback (most recent call last)" in err and "in helper" in err, err
    assert (
        err.splitlines()[-1] == "jetmcp: 'broken.py' failed to load: RuntimeError: boom in helper"
    )


@pytest.mark.parametrize(
    ("folder", "target", "name"),
    [(".", "srv.py", "from-helper"), ("pkg", "server.py", "pkg")],
    ids=["plain folder", "inside a package"],
)
def test_http_serves_a_file_target_from_the_working_directory(
    project: Path, folder: str, target: str, name: str
) -> None:
    # Inside a package (a folder with __init__.py) Granian would prefix the package's name
    # to jetmcp's own module: the workers must still start.
    port = free_port()
    proc = subprocess.Popen(
        [*jetmcp_command(), "run", "--transport", "http", target, "--port", str(port)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=project / folder,
        start_new_session=True,
    )
    try:
        reply = None
        with httpx.Client(timeout=2.0) as client:
            for _ in range(200):
                try:
                    reply = client.post(
                        f"http://127.0.0.1:{port}/mcp",
                        json=INIT,
                        headers={"accept": "application/json, text/event-stream"},
                    )
                    break
                except httpx.TransportError:
                    if proc.poll() is not None:
                        break
                    time.sleep(0.1)
        assert reply is not None, proc.stderr.read().decode() if proc.stderr else ""
        assert reply.json()["result"]["serverInfo"]["name"] == name
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_split_target() -> None:
    assert split_target("a.b:c") == ("a.b", "c")
    assert split_target("dir/file.py") == ("dir/file.py", None)
    assert split_target("C:/x/file.py") == ("C:/x/file.py", None)
    assert split_target("C:/x/file.py:mcp") == ("C:/x/file.py", "mcp")
    with pytest.raises(LoadError):
        split_target(":x")


def test_load_app_returns_the_same_server(project: Path) -> None:
    server = load_app(str(project / "other.py") + ":my_server")
    assert server.name == "other"
    assert load_app(str(project / "other.py")) is server


PROGRAM = """
import argparse

from jetmcp import Server


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--name", required=True)
    args = parser.parse_args()
    server = Server(args.name)

    @server.tool()
    def hello() -> str:
        return "hi"

    server.run()
"""

SDK_PROGRAM = """
import asyncio

import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.models import InitializationOptions
from mcp.server.stdio import stdio_server


async def serve():
    server = Server("built-inside")
    async with stdio_server() as (read, write):
        await server.run(
            read,
            write,
            InitializationOptions(
                server_name="named-by-its-program",
                server_version="9.9",
                capabilities=server.get_capabilities(),
            ),
        )


def main():
    asyncio.run(serve())
"""


@pytest.mark.parametrize(
    ("source", "target", "argv", "name"),
    [
        (PROGRAM, "prog.py:main", ["--", "--name", "from-argv"], "from-argv"),
        # The SDK's own stdio_server() opened first reads nothing of the client's stdin,
        # and the InitializationOptions the program passed are the handshake.
        (SDK_PROGRAM, "prog.py:main", [], "named-by-its-program"),
    ],
    ids=["jetmcp program with arguments", "SDK low-level program"],
)
def test_a_program_that_runs_its_server(
    tmp_path: Path, source: str, target: str, argv: list[str], name: str
) -> None:
    (tmp_path / "prog.py").write_text(source)
    proc = subprocess.run(
        [*jetmcp_command(), "run", target, "--transport", "stdio", *argv],
        input=(json.dumps(INIT) + "\n").encode(),
        capture_output=True,
        cwd=tmp_path,
        timeout=TIMEOUT,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode()
    reply = json.loads(proc.stdout.splitlines()[0])
    assert reply["result"]["serverInfo"]["name"] == name
