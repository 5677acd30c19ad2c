"""Principal-bound state, in process through the one dispatcher (the HTTP side is in
test_auth.py): a 2026-07-28 listen stream announces only resources its principal may read,
a listing cache never serves one principal's view to another, and a server without gates
keeps its one cached listing."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson

from harness.inprocess import ListSink, async_test, until
from jetmcp import _wire
from jetmcp.auth import Principal
from jetmcp.core.dispatch import Dispatcher, InFlight
from jetmcp.core.exchange import Exchange
from jetmcp.protocol.meta import META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_PROTOCOL_VERSION
from jetmcp.protocol.revisions import BY_VERSION, R2026_07_28
from jetmcp.server import Server

ALICE = Principal("alice", frozenset({"mcp", "admin"}), issuer="https://as")
BOB = Principal("bob", frozenset({"mcp"}), issuer="https://as")


def modern(method: str, params: dict[str, Any], id: Any) -> bytes:
    meta = {
        META_PROTOCOL_VERSION: R2026_07_28.version,
        META_CLIENT_CAPABILITIES: {},
        META_CLIENT_INFO: {"name": "t", "version": "0"},
    }
    return orjson.dumps(
        {"jsonrpc": "2.0", "id": id, "method": method, "params": {**params, "_meta": meta}}
    )


def app() -> Server:
    server = Server("state")

    @server.resource("admin://config", scopes=["admin"])
    def config() -> str:
        return "c"

    @server.resource("public://news")
    def news() -> str:
        return "n"

    return server


@async_test
async def test_a_listen_stream_announces_only_what_its_principal_may_read() -> None:
    server = app()
    dispatcher = Dispatcher(server)
    sinks: dict[str, ListSink] = {}
    tasks = []
    for who in (ALICE, BOB):
        sink = sinks[who.subject or ""] = ListSink()
        ex = Exchange(R2026_07_28, None, sink, InFlight(), auth=who)
        body = modern(
            "subscriptions/listen",
            {"notifications": {"resourceSubscriptions": ["admin://config", "public://news"]}},
            f"sub-{who.subject}",
        )
        pending = dispatcher.start(_wire.decode(body), ex)
        assert pending is not None and not isinstance(pending, bytes)
        tasks.append(asyncio.ensure_future(pending))
    await until(lambda: all(len(s.messages) == 1 for s in sinks.values()))
    # Both are acknowledged alike: a hidden URI is taken like an unknown one.
    assert (
        sinks["bob"].messages[0]["params"]["notifications"]
        == sinks["alice"].messages[0]["params"]["notifications"]
    )
    await server.notify_resource_updated("admin://config")
    await server.notify_resource_updated("public://news")
    await until(lambda: len(sinks["alice"].messages) == 3 and len(sinks["bob"].messages) == 2)
    await asyncio.sleep(0.05)
    uris = {k: [m["params"].get("uri") for m in s.messages[1:]] for k, s in sinks.items()}
    assert uris == {"alice": ["admin://config", "public://news"], "bob": ["public://news"]}
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def listed(server: Server, who: Principal | None, version: str = "2025-06-18") -> list[str]:
    ex = Exchange(BY_VERSION[version], None, auth=who)
    reply = Dispatcher(server).start(
        _wire.decode(b'{"jsonrpc":"2.0","id":1,"method":"resources/list"}'), ex
    )
    assert isinstance(reply, bytes)
    return [r["uri"] for r in orjson.loads(reply)["result"]["resources"]]


def test_listings_are_kept_per_view_and_never_mixed() -> None:
    server = app()
    for _ in range(2):  # the second round comes from the caches
        assert listed(server, ALICE) == ["admin://config", "public://news"]
        assert listed(server, BOB) == ["public://news"]
        assert listed(server, None) == ["public://news"]
    # A scope nothing needs does not make a view of its own.
    extra = Principal("carol", frozenset({"mcp", "unrelated"}))
    assert listed(server, extra) == ["public://news"]
    assert len(server._gated) == 2


def test_a_server_without_gates_keeps_one_listing_for_everyone() -> None:
    server = Server("plain")

    @server.resource("public://news")
    def news() -> str:
        return "n"

    assert listed(server, ALICE) == listed(server, None) == ["public://news"]
    assert not server._gated
    assert len(server._list_results) == 1  # the one encoded listing, served to both
