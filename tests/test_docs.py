"""The documentation's runnable code blocks run.

A fenced ``python`` block preceded (on the line before its fence) by an HTML comment is runnable;
the comment says how to run it:

``<!-- runnable: server NAME -->``
    A server module, written to ``NAME.py`` in a temporary directory and served over HTTP by a
    real ``jetmcp run NAME:app`` process (that directory on ``PYTHONPATH``). Once it is up, the
    test lists its tools, resources and prompts with ``jetmcp.Client``, so a server block that
    does not load fails.
``<!-- runnable: client -->``
    A script run (as its own process, in that directory, exit status 0 expected) against the
    last server block above it on the same page: the address ``http://127.0.0.1:8000/mcp`` in
    it is replaced by that server's. Its ``assert`` statements are the checks.
``<!-- runnable: script -->``
    A script run on its own (``jetmcp`` is on ``PATH``; the directory is on ``PYTHONPATH``, so
    it may start ``jetmcp run NAME:app --transport stdio`` for a module written earlier).

``<!-- runnable: commands NAME -->`` (README.md, above a ``bash`` fence)
    The quick start's commands: each ``jetmcp run ...`` line is run as written, from a directory
    holding the README's server block ``NAME``, over HTTP (on a free port) or stdio, and the
    quick start's ``add`` tool is called through it. The README's ``mcpServers`` snippet is run
    the same way, as a host would start it.
``<!-- runnable: install -->`` (README.md, above a ``bash`` fence)
    The install check: run by ``bash`` as written (this environment's ``jetmcp`` first on
    ``PATH``), it must exit 0 and print the demo's ``add`` result.

The comments are invisible in the built site. Every page under ``docs/`` is read, and so is
``README.md``.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import pytest

from harness.runnable import SCRIPT_TIMEOUT, served
from harness.servers import ROOT, AppServer, jetmcp_command
from jetmcp import Client

PLACEHOLDER_URL = "http://127.0.0.1:8000/mcp"
_MARKER = re.compile(r"^<!-- runnable: (server|client|script)(?: ([A-Za-z_][A-Za-z0-9_]*))? -->$")
_FENCE = re.compile(r"^(`{3,}|~{3,})python\b")
PAGES = sorted([*ROOT.joinpath("docs").rglob("*.md"), ROOT / "README.md"])


@dataclass
class Block:
    kind: str
    name: str | None
    code: str
    where: str


@dataclass
class Group:
    """A server and the client blocks that follow it, or one script."""

    where: str
    server: Block | None = None
    scripts: list[Block] = field(default_factory=list)


def blocks(page: Path) -> list[Block]:
    found: list[Block] = []
    lines = page.read_text().splitlines()
    for number, line in enumerate(lines):
        marker = _MARKER.match(line.strip())
        if marker is None:
            continue
        where = f"{page.relative_to(ROOT)}:{number + 1}"
        fence = _FENCE.match(lines[number + 1].strip()) if number + 1 < len(lines) else None
        if fence is None:
            raise AssertionError(f"{where}: a runnable marker must sit right above a python fence")
        indent = len(lines[number + 1]) - len(lines[number + 1].lstrip())
        body: list[str] = []
        for code_line in lines[number + 2 :]:
            if code_line.strip() == fence.group(1):
                break
            body.append(code_line[indent:])
        else:
            raise AssertionError(f"{where}: the code block is not closed")
        kind, name = marker.groups()
        if (kind == "server") != (name is not None):
            raise AssertionError(f"{where}: a server block needs a module name, others none")
        found.append(Block(kind, name, "\n".join(body) + "\n", where))
    return found


def groups() -> list[Group]:
    out: list[Group] = []
    for page in PAGES:
        current: Group | None = None
        for block in blocks(page):
            if block.kind == "server":
                current = Group(block.where, server=block)
                out.append(current)
            elif block.kind == "client":
                assert current is not None, f"{block.where}: a client block needs a server above"
                assert PLACEHOLDER_URL in block.code, f"{block.where}: no {PLACEHOLDER_URL}"
                current.scripts.append(block)
            else:
                out.append(Group(block.where, scripts=[block]))
    return out


GROUPS = groups()


def run_block(block: Block, directory: Path, url: str | None) -> None:
    code = block.code if url is None else block.code.replace(PLACEHOLDER_URL, url)
    script = directory / ("block_" + re.sub(r"\W", "_", block.where) + ".py")
    script.write_text(code)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(directory), env.get("PYTHONPATH")]))
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    done = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=SCRIPT_TIMEOUT,
        cwd=directory,
        env=env,
        check=False,
    )
    assert done.returncode == 0, (
        f"the block at {block.where} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    )


def check_loads(url: str) -> None:
    async def listing() -> None:
        with anyio.fail_after(20):
            async with Client(url) as client:
                await client.list_all_tools()
                await client.list_all_resources()
                await client.list_all_prompts()

    anyio.run(listing)


def test_there_are_runnable_blocks() -> None:
    pages = {group.where.split(":")[0] for group in GROUPS}
    assert {"docs/index.md", "docs/server.md", "docs/client.md"} <= pages


@pytest.mark.parametrize("group", GROUPS, ids=[g.where for g in GROUPS])
def test_runnable_block(group: Group) -> None:
    with tempfile.TemporaryDirectory(prefix="jetmcp-docs-") as tmp:
        directory = Path(tmp)
        # The server modules of the page's earlier blocks stay importable (a script block may
        # serve one over stdio).
        page = group.where.split(":")[0]
        for earlier in GROUPS[: GROUPS.index(group)]:
            if earlier.server is not None and earlier.where.split(":")[0] == page:
                (directory / f"{earlier.server.name}.py").write_text(earlier.server.code)
        if group.server is None:
            for block in group.scripts:
                run_block(block, directory, None)
            return
        (directory / f"{group.server.name}.py").write_text(group.server.code)
        with served(f"{group.server.name}:app", directory) as server:
            check_loads(server.url)
            for block in group.scripts:
                run_block(block, directory, server.url)


def test_every_run_flag_is_documented() -> None:
    """Each ``jetmcp run`` option has its row in docs/configuration.md."""
    import argparse

    from jetmcp.run.cli import _parser

    subcommands = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    page = (ROOT / "docs" / "configuration.md").read_text()
    rows = {line.split("|")[1] for line in page.splitlines() if line.startswith("| `--")}
    missing = [
        option
        for action in subcommands.choices["run"]._actions
        for option in action.option_strings
        if option.startswith("--") and option != "--help" and f"`{option}" not in "".join(rows)
    ]
    assert not missing, f"add a row to docs/configuration.md for {missing}"


# --------------------------------------------------------------------------- README quick start

_COMMANDS = re.compile(r"^<!-- runnable: commands ([A-Za-z_][A-Za-z0-9_]*) -->$")


def readme_commands() -> tuple[str, list[list[str]]]:
    """The server module the README's commands block serves, and each command's argv."""
    lines = (ROOT / "README.md").read_text().splitlines()
    for number, line in enumerate(lines):
        marker = _COMMANDS.match(line.strip())
        if marker is None:
            continue
        assert lines[number + 1].strip() == "```bash", f"README.md:{number + 1}: not a bash fence"
        commands: list[list[str]] = []
        for command in lines[number + 2 :]:
            if command.strip() == "```":
                return marker.group(1), commands
            argv = shlex.split(command, comments=True)
            assert argv[:2] == ["jetmcp", "run"], f"not a jetmcp run command: {command}"
            commands.append(argv)
    raise AssertionError("README.md has no <!-- runnable: commands NAME --> block")


def readme_bash_block(marker: str) -> str:
    """The ``bash`` block right below ``marker`` in the README."""
    lines = (ROOT / "README.md").read_text().splitlines()
    number = lines.index(marker)
    assert lines[number + 1].strip() == "```bash", f"README.md:{number + 2}: not a bash fence"
    end = lines.index("```", number + 2)
    return "\n".join(lines[number + 2 : end])


def test_readme_install_check_answers() -> None:
    script = readme_bash_block("<!-- runnable: install -->")
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    with tempfile.TemporaryDirectory(prefix="jetmcp-install-") as tmp:
        done = subprocess.run(
            ["bash", "-c", script],
            capture_output=True,
            text=True,
            timeout=SCRIPT_TIMEOUT,
            cwd=tmp,
            env=env,
            check=False,
        )
    assert done.returncode == 0, (done.stdout, done.stderr)
    lines = done.stdout.splitlines()
    assert lines[-1] == "install check: passed", done.stdout
    for transport in ("stdio", "http"):
        assert any(
            line.startswith(f"{transport}: ok (") and line.endswith("add(1, 2) = 3)")
            for line in lines
        ), done.stdout


def test_install_check_says_what_failed() -> None:
    """``jetmcp check`` exits 1 and names each transport that did not answer in time."""
    done = subprocess.run(
        [sys.executable, "-m", "jetmcp", "check", "--timeout", "0.001"],
        capture_output=True,
        text=True,
        timeout=SCRIPT_TIMEOUT,
        check=False,
    )
    assert done.returncode == 1, (done.stdout, done.stderr)
    lines = done.stdout.splitlines()
    assert "stdio: FAILED: no answer within 0.001 s" in lines, done.stdout
    assert "http: FAILED: no answer within 0.001 s" in lines, done.stdout
    assert lines[-1] == "install check: FAILED"


def readme_host_config() -> dict[str, object]:
    """The one server of the README's ``mcpServers`` snippet."""
    text = (ROOT / "README.md").read_text()
    found = re.search(r"^```json\n(.*?)^```$", text, re.MULTILINE | re.DOTALL)
    assert found is not None, "README.md has no mcpServers snippet"
    servers = json.loads(found.group(1))["mcpServers"]
    assert len(servers) == 1
    config: dict[str, object] = next(iter(servers.values()))
    return config


async def _call_add(client: Client) -> None:
    with anyio.fail_after(20):
        async with client:
            assert (await client.call_tool("add", {"a": 2, "b": 3})).text == "5"


def test_readme_quick_start_commands_serve_the_server() -> None:
    name, commands = readme_commands()
    server = next(g.server for g in GROUPS if g.server is not None and g.server.name == name)
    assert server.where.startswith("README.md:")
    assert {"http", "stdio"} == {
        argv[argv.index("--transport") + 1] if "--transport" in argv else "stdio"
        for argv in commands
    }
    with tempfile.TemporaryDirectory(prefix="jetmcp-readme-") as tmp:
        directory = Path(tmp)
        (directory / f"{name}.py").write_text(server.code)
        for argv in commands:
            args = argv[2:]
            if "--transport" in args and args[args.index("--transport") + 1] == "stdio":
                # As written, from the directory holding the file.
                client = Client.stdio([*jetmcp_command(), "run", *args], cwd=str(directory))
                anyio.run(_call_add, client)
                continue
            # As written, but on a free port: the file named by its path from that directory.
            target = [str(directory / arg) if arg.endswith(".py") else arg for arg in args]
            served = AppServer(*target, label=f"README's {shlex.join(argv)}")
            try:
                anyio.run(_call_add, Client(served.url))
            finally:
                served.stop()


def test_readme_host_configuration_starts_the_server() -> None:
    name, _ = readme_commands()
    server = next(g.server for g in GROUPS if g.server is not None and g.server.name == name)
    config = readme_host_config()
    assert str(config["command"]).endswith("/bin/jetmcp")
    args = [str(arg) for arg in config["args"]]  # type: ignore[attr-defined]
    with tempfile.TemporaryDirectory(prefix="jetmcp-host-") as tmp:
        path = Path(tmp) / f"{name}.py"
        path.write_text(server.code)
        # The host starts it from a directory of its own, with the paths filled in.
        argv = [*jetmcp_command(), *(str(path) if a.endswith(f"/{name}.py") else a for a in args)]
        anyio.run(_call_add, Client.stdio(argv, cwd="/"))
