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

The comments are invisible in the built site. Every page under ``docs/`` is read, and so is
``README.md``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import pytest

from conftest import ROOT
from jetmcp import Client
from runnable import SCRIPT_TIMEOUT, served

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

    from jetmcp.cli import _parser

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
