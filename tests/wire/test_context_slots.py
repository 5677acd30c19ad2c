"""The slots the extension sets on a Context it makes (``_wire.CONTEXT_SLOTS``), held to
``jetmcp.server.context.Context``.

``Plans.run_context`` makes the Context of a planned 2026-07-28 call as
``object.__new__(Context)`` does: no ``__init__`` runs, and the extension sets the slots one
by one. So what must hold, besides each name being a slot of Context (a Context has no
``__dict__``, so setting any other name fails):

* every slot of Context is one the extension sets: one it left unset would raise
  AttributeError when the Context reads it;
* ``Context.__init__`` sets the same slots, so a Context made either way has them all, and
  a tool sees the same object whichever path served its call.

The last two tests run a tool that takes a Context both ways, and look at which slots the
tool found set: planned and run by the extension (``Routes.answer``, then
``Plans.run_context`` with a 2026-07-28 ``Shape`` that names the Context class), and called
through ``jetmcp.Client(server)`` at 2025-06-18, where ``Context.__init__`` makes it.
"""

from __future__ import annotations

import asyncio

import pytest

from jetmcp import Client, Context, Server, _wire
from jetmcp.protocol import revisions
from jetmcp.server.context import Context as ContextClass


def slots_of(cls: type) -> set[str]:
    """Every slot an instance of ``cls`` has, its bases' included."""
    names: set[str] = set()
    for klass in cls.__mro__:
        declared = klass.__dict__.get("__slots__", ())
        names.update((declared,) if isinstance(declared, str) else declared)
    return names


def test_context_is_the_class_the_package_exports() -> None:
    assert Context is ContextClass


def test_the_extension_names_each_slot_once() -> None:
    names = _wire.CONTEXT_SLOTS
    assert type(names) is tuple and names
    assert all(type(name) is str for name in names)
    assert len(set(names)) == len(names)


def test_the_extension_sets_exactly_the_slots_of_context() -> None:
    assert set(_wire.CONTEXT_SLOTS) == slots_of(ContextClass)
    # No __dict__ to fall back on: a name that is not a slot cannot be set at all.
    bare = object.__new__(ContextClass)
    with pytest.raises(AttributeError):
        bare.not_a_slot = None  # type: ignore[attr-defined]


#: What the tool found of its Context, per call: (made by the extension, slots set).
SEEN: list[tuple[bool, set[str]]] = []


def build() -> Server:
    server = Server("context-slots")

    @server.tool()
    def look(n: int, ctx: Context) -> int:
        # Read before anything asks the Context for its call (which fills `_made`).
        made_bare = ctx._made is None and ctx._plan is not None
        SEEN.append((made_bare, {name for name in slots_of(ContextClass) if hasattr(ctx, name)}))
        return n

    return server


def test_the_context_the_extension_makes_has_every_slot_set() -> None:
    server = build()
    modern = revisions.R2026_07_28
    shape = _wire.Shape(True, b"{}", [modern.version], (server, ContextClass, [modern]))
    meta = {
        "io.modelcontextprotocol/protocolVersion": modern.version,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    params = {"name": "look", "arguments": {"n": 5}, "_meta": meta}
    body = _wire.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
    plans = server.routes.answer(_wire.decode(body), shape)
    assert type(plans) is _wire.Plans, "planned, not run: the tool takes a Context"
    # The exchange is only kept in `_plan` until the Context makes its call; `look` makes
    # none, so any object stands for it here.
    SEEN.clear()
    reply = plans.run_context(object(), False)
    assert type(reply) is bytes and b'"text":"5"' in reply
    [(made_bare, found)] = SEEN
    assert made_bare
    assert found == set(_wire.CONTEXT_SLOTS)


async def call_look_through_the_client() -> None:
    async with Client(build(), revision="2025-06-18") as client:
        result = await client.call_tool("look", {"n": 5})
    assert not result.is_error and result.text == "5"


def test_context_init_sets_the_same_slots() -> None:
    SEEN.clear()
    asyncio.run(call_look_through_the_client())
    [(made_bare, found)] = SEEN
    assert not made_bare, "at 2025-06-18 Context.__init__ makes the Context"
    assert found == set(_wire.CONTEXT_SLOTS)
