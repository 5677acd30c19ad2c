"""``jetmcp check``: whether this install serves MCP, from the installed package alone.

It starts the demo app (``jetmcp.demo:app``) the way a user would, with this interpreter's
``jetmcp run``, once over stdio and once over Streamable HTTP on a free loopback port, and
talks to each with :class:`jetmcp.Client`: the handshake, ``tools/list`` and a call of
``add(1, 2)``, whose answer must be ``3``. Every step is printed; the exit status is 0 when
both transports answered right, 1 otherwise (with what went wrong).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from typing import IO

import jetmcp
from jetmcp import Client, _wire

#: The app every check serves, and the call it makes.
DEMO = "jetmcp.demo:app"
CALL = ("add", {"a": 1, "b": 2})
EXPECTED = "3"


def main(timeout: float, out: IO[str] = sys.stdout) -> int:
    """Run both checks, each within ``timeout`` seconds; the exit status."""
    print(f"jetmcp {jetmcp.__version__}, extension {getattr(_wire, 'BUILD', 'unknown')}", file=out)
    print(f"python {sys.version.split()[0]} at {sys.executable}", file=out)
    passed = True
    for label, check in (("stdio", _stdio), ("http", _http)):
        try:
            detail = asyncio.run(_within(check, timeout))
        except TimeoutError:
            passed = False
            print(f"{label}: FAILED: no answer within {timeout:g} s", file=out)
        except Exception as exc:  # every failure is reported, none is raised
            passed = False
            print(f"{label}: FAILED: {type(exc).__name__}: {exc}", file=out)
        else:
            print(f"{label}: ok ({detail})", file=out)
    print("install check: " + ("passed" if passed else "FAILED"), file=out)
    return 0 if passed else 1


async def _within(check: Callable[[], Awaitable[str]], seconds: float) -> str:
    async with asyncio.timeout(seconds):
        return await check()


def _command(*args: str) -> list[str]:
    """``jetmcp run DEMO ARGS`` with this interpreter (whatever ``jetmcp`` is on PATH)."""
    return [sys.executable, "-m", "jetmcp", "run", DEMO, *args]


async def _talk(client: Client) -> str:
    """The handshake, ``tools/list`` and the call, through an open ``client``."""
    tools = await client.list_all_tools()
    if not any(tool.name == CALL[0] for tool in tools):
        raise RuntimeError(f"tools/list has no {CALL[0]!r} tool")
    result = await client.call_tool(*CALL)
    if result.is_error or result.text != EXPECTED:
        raise RuntimeError(f"{CALL[0]}(1, 2) answered {result.text!r}, not {EXPECTED!r}")
    return (
        f"revision {client.revision.version}, {len(tools)} tools, {CALL[0]}(1, 2) = {result.text}"
    )


async def _stdio() -> str:
    async with Client.stdio(_command("--transport", "stdio")) as client:
        return await _talk(client)


async def _http() -> str:
    with socket.socket() as probe:  # a free loopback port, released for the server
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with tempfile.TemporaryFile() as log:
        argv = _command(
            "--transport", "http", "--host", "127.0.0.1", "--port", str(port), "--stateless"
        )
        proc = await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.DEVNULL, stdout=log, stderr=log
        )
        try:
            await _listening(port, proc)
            async with Client(f"http://127.0.0.1:{port}/mcp") as client:
                return await _talk(client)
        except Exception:
            if proc.returncode is not None:
                log.seek(0)
                tail = log.read()[-2000:].decode(errors="replace").strip()
                raise RuntimeError(
                    f"the server exited with status {proc.returncode}: {tail}"
                ) from None
            raise
        finally:
            if proc.returncode is None:
                proc.terminate()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(10):
                        await proc.wait()
                if proc.returncode is None:
                    proc.kill()
                    await proc.wait()


async def _listening(port: int, proc: asyncio.subprocess.Process) -> None:
    """Until the server takes connections on ``port`` (or exits: raised by the caller)."""
    started = time.monotonic()
    while proc.returncode is None:
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            await asyncio.sleep(0.1 if time.monotonic() - started < 5 else 0.25)
            continue
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
        return
    raise RuntimeError(f"the server exited with status {proc.returncode} before listening")
