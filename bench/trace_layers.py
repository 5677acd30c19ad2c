"""How often one request enters the dispatcher and crosses layers: a trace of Python calls.

One body goes through ``Dispatcher.start`` (and, when something had to wait, the coroutine
it gives back) under ``sys.setprofile``; every call is put in the layer its function's
module belongs to (``jetmcp.core``, ``jetmcp.server``, ``jetmcp.protocol``, ...; the
extension ``jetmcp._wire`` as ``wire``; the tools themselves as ``tool``; anything else,
the standard library or pydantic, is left out and its calls are not counted). It counts:

- *dispatcher entries*: calls into ``jetmcp.core.dispatch`` or ``jetmcp.core.route`` from a
  function outside both (the dispatcher's own calls to itself are one entry);
- *layer crossings*: calls whose caller and callee are in different layers (returns are
  not counted again; a Python function the extension calls is called by ``wire``; a
  coroutine resumed counts as a call again).

Bodies (``--body``): ``mixed`` (a 2026-07-28 batch of a plain, a Context and an ``async``
tool), ``plain`` (a 2026-07-28 batch of three plain calls), ``single`` (one plain call at
2025-11-25). Prints one line per body; ``--calls`` lists every crossing too.

    .venv/bin/python bench/trace_layers.py
    .venv/bin/python bench/trace_layers.py --body mixed --calls
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import types
from collections.abc import Coroutine
from typing import Any

import orjson

from jetmcp import Context, Server, _wire
from jetmcp.core.dispatch import Dispatcher
from jetmcp.core.exchange import Exchange
from jetmcp.protocol import revisions

MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "trace", "version": "0"},
}
_DISPATCHER = ("jetmcp.core.dispatch", "jetmcp.core.route")

server = Server("trace")


@server.tool()
def add(a: int, b: int) -> int:
    """A plain tool."""
    return a + b


@server.tool()
def who(name: str, ctx: Context) -> str:
    """A tool that takes a Context."""
    return f"{name} via {type(ctx).__name__}"


@server.tool()
async def later(n: int) -> int:
    """An async tool that waits once."""
    await asyncio.sleep(0)
    return n + 1


def _call(i: int, name: str, arguments: dict[str, Any], modern: bool) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if modern:
        params["_meta"] = MODERN_META
    return {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": params}


BODIES: dict[str, tuple[bytes, revisions.Revision]] = {
    "mixed": (
        orjson.dumps(
            [
                _call(1, "add", {"a": 1, "b": 2}, True),
                _call(2, "who", {"name": "x"}, True),
                _call(3, "later", {"n": 1}, True),
            ]
        ),
        revisions.R2026_07_28,
    ),
    "plain": (
        orjson.dumps([_call(i, "add", {"a": i, "b": 2}, True) for i in (1, 2, 3)]),
        revisions.R2026_07_28,
    ),
    "single": (
        orjson.dumps(_call(1, "add", {"a": 1, "b": 2}, False)),
        revisions.R2025_11_25,
    ),
}


def layer(frame: types.FrameType | None, c_function: Any = None) -> str | None:
    """The layer of a Python frame (or, with ``c_function``, of a built-in it calls)."""
    if c_function is not None:
        module = getattr(c_function, "__module__", None) or ""
        if module == "jetmcp._wire" or type(getattr(c_function, "__self__", None)).__module__ == (
            "jetmcp._wire"
        ):
            return "wire"
        return None
    if frame is None:
        return None
    module = frame.f_globals.get("__name__", "")
    if module == "__main__":
        return "tool" if frame.f_code.co_name in {"add", "who", "later"} else None
    if not module.startswith("jetmcp."):
        return None
    return ".".join(module.split(".")[:2])


class Tally:
    """What the profile hook saw."""

    def __init__(self) -> None:
        self.entries = 0
        self.crossings = 0
        self.seen: list[str] = []
        #: The frames that are calling into the extension now (innermost last): a Python
        #: function called from one of them is called by the extension.
        self.in_wire: list[types.FrameType] = []

    def hook(self, frame: types.FrameType, event: str, arg: Any) -> None:
        if event in ("c_return", "c_exception"):
            if layer(None, arg) == "wire" and self.in_wire:
                self.in_wire.pop()
            return
        caller: str | None = None
        if event == "call":
            callee_frame = frame
            caller_frame = frame.f_back
            callee = layer(callee_frame)
            if self.in_wire and caller_frame is self.in_wire[-1]:
                caller = "wire"
            module = callee_frame.f_globals.get("__name__", "")
            if module in _DISPATCHER:
                outer = caller_frame.f_globals.get("__name__", "") if caller_frame else ""
                if outer not in _DISPATCHER:
                    self.entries += 1
        elif event == "c_call":
            callee = layer(None, arg)
            caller_frame = frame
            if callee == "wire":
                self.in_wire.append(frame)
        else:
            return
        if callee is None:
            return
        # The nearest caller in a known layer (frames of other code in between are skipped).
        walk = caller_frame if caller is None else None
        while walk is not None and caller is None:
            caller = layer(walk)
            walk = walk.f_back
        if caller is not None and caller != callee:
            self.crossings += 1
            name = getattr(arg, "__qualname__", None) if event == "c_call" else frame.f_code.co_name
            self.seen.append(f"{caller} -> {callee} ({name})")


def trace(body: bytes, revision: revisions.Revision) -> Tally:
    """Run ``body`` once (after a warm-up run) under the profile hook."""
    dispatcher = Dispatcher(server)
    tally = Tally()

    async def once(hooked: bool) -> Any:
        frame = _wire.decode(body)
        ex = Exchange(revision, None)
        if hooked:
            sys.setprofile(tally.hook)
        try:
            reply = dispatcher.start(frame, ex)
            if isinstance(reply, Coroutine):
                reply = await reply
        finally:
            sys.setprofile(None)
        return reply

    async def main() -> None:
        await once(False)
        await once(True)

    asyncio.run(main())
    return tally


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--body", choices=sorted(BODIES), action="append")
    parser.add_argument("--calls", action="store_true", help="list every crossing")
    args = parser.parse_args()
    for name in args.body or list(BODIES):
        tally = trace(*BODIES[name])
        print(
            f"{name:8s} dispatcher entries {tally.entries:3d}  layer crossings {tally.crossings:3d}"
        )
        if args.calls:
            for line in tally.seen:
                print(f"    {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
