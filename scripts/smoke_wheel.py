"""Smoke test of an installed jetmcp wheel, run by the test command from a fresh virtual
environment outside the source tree (``python -I``: no PYTHONPATH, no source tree on sys.path).

    smoke_wheel.py PYPROJECT     # the version the package must report comes from PYPROJECT

It checks that the package imports from that environment, that ``jetmcp --version`` and
``python -m jetmcp --version`` print pyproject.toml's version, and that the demo app answers a
tools/call over HTTP (a plain HTTP request) and over stdio (piped lines). Standard library only:
the environment holds the wheel and its dependencies, nothing else. Every wait is bounded.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import tomllib
import urllib.error
import urllib.request
from importlib.metadata import files, metadata
from pathlib import Path

TIMEOUT = 30.0
BIN = Path(sys.executable).parent
CALL = {
    "jsonrpc": "2.0",
    "id": 7,
    "method": "tools/call",
    "params": {"name": "add", "arguments": {"a": 40, "b": 2}},
}


def fail(message: str) -> None:
    raise SystemExit(f"wheel smoke test FAILED: {message}")


def check_install(pyproject: Path) -> str:
    import jetmcp
    from jetmcp import _wire

    for module in (jetmcp, _wire):
        where = Path(str(module.__file__)).resolve()
        if not where.is_relative_to(Path(sys.prefix).resolve()):
            fail(f"{module.__name__} was imported from {where}, not from {sys.prefix}")
    if pyproject.parent.resolve() in Path.cwd().resolve().parents or (
        Path.cwd().resolve() == pyproject.parent.resolve()
    ):
        fail("run me from outside the source tree")
    project = tomllib.loads(pyproject.read_text())["project"]
    version = str(project["version"])
    meta = metadata("jetmcp")
    if meta["Version"] != version or meta["License-Expression"] != project["license"]:
        fail(f"the wheel's metadata says {meta['Version']} {meta['License-Expression']}")
    if meta["Requires-Python"] != project["requires-python"]:
        fail(f"the wheel's Requires-Python is {meta['Requires-Python']}")
    if not any(path.name == "LICENSE" for path in files("jetmcp") or []):
        fail("the wheel has no LICENSE file")
    for argv in ([str(BIN / "jetmcp"), "--version"], [sys.executable, "-m", "jetmcp", "--version"]):
        out = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT, check=False)
        if out.returncode != 0 or out.stdout.strip() != f"jetmcp {version}":
            shown = " ".join(argv[-3:])
            fail(f"{shown} printed {out.stdout!r} {out.stderr!r}, exit code {out.returncode}")
    return version


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def post(url: str, body: dict[str, object]) -> dict[str, object]:
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json", "accept": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=5) as response:
        reply: dict[str, object] = json.loads(response.read())
        return reply


def check_reply(reply: object, where: str) -> None:
    if not isinstance(reply, dict) or reply.get("id") != 7:
        fail(f"{where}: unexpected reply {reply!r}")
    result = reply.get("result")
    if not isinstance(result, dict) or result.get("content") != [{"type": "text", "text": "42"}]:
        fail(f"{where}: add(40, 2) answered {reply!r}")


def check_http() -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    proc = subprocess.Popen(
        [str(BIN / "jetmcp"), "run", "--transport", "http", "--port", str(port)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + TIMEOUT
        while True:
            if proc.poll() is not None:
                err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
                fail(f"jetmcp run exited with {proc.returncode}:\n{err}")
            try:
                reply = post(url, CALL)
                break
            except (urllib.error.URLError, ConnectionError):
                if time.monotonic() > deadline:
                    fail(f"jetmcp run did not answer on {url} within {TIMEOUT}s")
                time.sleep(0.1)
        check_reply(reply, "HTTP")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)


def check_stdio() -> None:
    lines = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "smoke", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        CALL,
    ]
    stdin = "".join(json.dumps(line) + "\n" for line in lines)
    try:
        out = subprocess.run(
            [str(BIN / "jetmcp"), "run", "--transport", "stdio"],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        fail(f"jetmcp run --transport stdio did not exit within {TIMEOUT}s of its stdin closing")
    replies = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
    if out.returncode != 0 or len(replies) != 2:
        fail(f"stdio: rc {out.returncode}, stdout {out.stdout!r}, stderr {out.stderr!r}")
    init = replies[0].get("result", {})
    if replies[0].get("id") != 1 or init.get("protocolVersion") != "2025-11-25":
        fail(f"stdio: initialize answered {replies[0]!r}")
    check_reply(replies[1], "stdio")


def check_command() -> None:
    """``jetmcp check``, the README's install check, passes from the installed wheel."""
    argv = [str(BIN / "jetmcp"), "check", "--timeout", str(TIMEOUT)]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=3 * TIMEOUT, check=False)
    if out.returncode != 0 or not out.stdout.rstrip().endswith("install check: passed"):
        fail(f"jetmcp check: exit code {out.returncode}: {out.stdout!r} {out.stderr!r}")


def main() -> None:
    started = time.monotonic()
    version = check_install(Path(sys.argv[1]))
    check_http()
    check_stdio()
    check_command()
    print(
        f"wheel smoke test: ok (jetmcp {version} from {sys.prefix}; --version, HTTP and stdio "
        f"tools/call, jetmcp check; {time.monotonic() - started:.1f}s)"
    )


if __name__ == "__main__":
    main()
