"""The MCP Inspector CLI (npm ``@modelcontextprotocol/inspector``, pinned in
tests/clients/package.json and its lockfile) drives ``jetmcp run app.py`` as a user would:
with the natural command ``npx @modelcontextprotocol/inspector --cli jetmcp run app.py
--method tools/list`` (what npx runs is the package's ``mcp-inspector`` script, run here
directly), and with the README's own ``mcpServers`` configuration. Both hung while
``jetmcp run`` defaulted to HTTP: the Inspector takes ``--transport stdio`` as its own."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
INSPECTOR = ROOT / "tests" / "clients" / "node_modules" / ".bin" / "mcp-inspector"
#: Bounds one Inspector run (node's start-up, jetmcp's, one request).
TIMEOUT = 120.0

APP = '''
from jetmcp import Server

app = Server("inspected")


@app.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b
'''

pytestmark = pytest.mark.skipif(
    not INSPECTOR.exists(), reason="the MCP Inspector is not installed: cd tests/clients && npm ci"
)


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JETMCP_")}
    # ``jetmcp`` as a user's activated environment has it: first on PATH.
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


def _tool_names(proc: subprocess.CompletedProcess[str]) -> list[str]:
    assert proc.returncode == 0, proc.stderr + proc.stdout
    listing = json.loads(proc.stdout)
    return [tool["name"] for tool in listing["tools"]]


def test_the_natural_command(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text(APP)
    proc = subprocess.run(
        [str(INSPECTOR), "--cli", "jetmcp", "run", "app.py", "--method", "tools/list"],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert _tool_names(proc) == ["add"]


def test_the_readme_mcpservers_config(tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"```json\n(\{\n  \"mcpServers\".*?)\n```", readme, re.S)
    assert block is not None, "README.md has no mcpServers block"
    config = json.loads(block.group(1))
    (name, server), *_ = config["mcpServers"].items()
    (tmp_path / "app.py").write_text(APP)
    # The placeholders filled in, as the README asks: full paths of jetmcp and of app.py.
    jetmcp = Path(sys.executable).with_name("jetmcp")
    assert server["command"] == "/path/to/venv/bin/jetmcp"
    server["command"] = str(jetmcp)
    server["args"] = [
        str(tmp_path / "app.py") if a == "/path/to/app.py" else a for a in server["args"]
    ]
    (tmp_path / "config.json").write_text(json.dumps(config))
    proc = subprocess.run(
        [
            *(str(INSPECTOR), "--cli", "--config", str(tmp_path / "config.json")),
            *("--server", name, "--method", "tools/list"),
        ],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert _tool_names(proc) == ["add"]
