"""Old official SDKs: a FastMCP file written for mcp 1.2.0 (the oldest jetmcp serves) and
for 1.6.0 (before ``mcp.server.experimental``, which 1.23 added), each in its own pinned
environment (``scripts/dropin.sh``: ``.cache/dropin/mcp-<version>``), served over stdio by
its SDK (``python old_v1.py``) and by ``jetmcp run old_v1.py``, sent the same JSON-RPC lines
one at a time: every answer must be the same, ``instructions`` and ``logging/setLevel``
(-32601: FastMCP registers no handler) included. Below the oldest, ``jetmcp run`` says
which version to install."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]
CACHE = ROOT / ".cache" / "dropin"
SERVERS = Path(__file__).resolve().parent / "servers"
VERSIONS = ("1.2.0", "1.6.0")
TIMEOUT = 30.0


def _request(id_: int, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        message["params"] = params
    return message


SCRIPT: list[dict[str, Any]] = [
    _request(
        1,
        "initialize",
        {
            "protocolVersion": "2024-11-05",
            "capabilities": {},
            "clientInfo": {"name": "old-sdk-test", "version": "0"},
        },
    ),
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    _request(2, "tools/list"),
    _request(3, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}),
    _request(4, "tools/call", {"name": "add", "arguments": {"a": "x", "b": 2}}),
    _request(5, "tools/call", {"name": "fail", "arguments": {"message": "no"}}),
    _request(6, "tools/call", {"name": "no_such_tool", "arguments": {}}),
    _request(7, "resources/list"),
    _request(8, "resources/read", {"uri": "notes://today"}),
    _request(9, "prompts/list"),
    _request(10, "prompts/get", {"name": "greet", "arguments": {"name": "Ada"}}),
    _request(11, "logging/setLevel", {"level": "info"}),
]


def _python(version: str) -> Path:
    python = CACHE / f"mcp-{version}" / "bin" / "python"
    if not python.exists():
        pytest.skip(f"mcp {version} is not set up: run bash scripts/dropin.sh")
    return python


def _transcript(command: list[str]) -> list[dict[str, Any]]:
    """Each line of :data:`SCRIPT` sent in turn; the answer to each request read before
    the next line goes (notifications get none)."""
    proc = subprocess.Popen(
        command,
        cwd=SERVERS,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None
    answers: list[dict[str, Any]] = []
    try:
        for message in SCRIPT:
            proc.stdin.write((json.dumps(message) + "\n").encode())
            proc.stdin.flush()
            if "id" not in message:
                continue
            while True:
                line = proc.stdout.readline()
                assert line, f"{command} ended early:\n{proc.stderr.read().decode()}"  # type: ignore[union-attr]
                answer = json.loads(line)
                if answer.get("id") == message["id"]:
                    answers.append(answer)
                    break
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return answers


@pytest.mark.parametrize("version", VERSIONS)
def test_an_old_sdk_server_answers_as_on_its_sdk(version: str) -> None:
    python = str(_python(version))
    sdk = _transcript([python, "old_v1.py"])
    jet = _transcript([python, "-m", "jetmcp", "run", "old_v1.py", "--transport", "stdio"])
    assert sdk[0]["result"]["serverInfo"]["version"] == version
    for ours, theirs in zip(jet, sdk, strict=True):
        assert ours == theirs
    set_level = jet[-1]
    assert set_level["error"]["code"] == -32601, set_level


def test_an_sdk_below_the_oldest_is_named(tmp_path: Path) -> None:
    """mcp 1.1.x has no FastMCP and no ``mcp.server.lowlevel``: faked here by a package
    ``mcp`` 1.1.0 on the path (its metadata is what jetmcp reads)."""
    site = tmp_path / "site"
    (site / "mcp").mkdir(parents=True)
    (site / "mcp" / "__init__.py").write_text("")
    (site / "mcp-1.1.0.dist-info").mkdir()
    (site / "mcp-1.1.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: mcp\nVersion: 1.1.0\n"
    )
    (tmp_path / "server.py").write_text("from mcp.server.fastmcp import FastMCP\n")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(ROOT / "python")])
    proc = subprocess.run(
        [sys.executable, "-m", "jetmcp", "run", "server.py", "--transport", "stdio"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        cwd=tmp_path,
        env=env,
        timeout=TIMEOUT,
        check=False,
    )
    err = proc.stderr.decode().strip()
    assert proc.returncode == 2, err
    assert "mcp 1.1.0 is older than the oldest SDK jetmcp serves (1.2.0)" in err, err
    assert "pip install 'mcp>=1.2.0'" in err, err
