"""What one client can make the server keep: the client data a session stores is bounded, and a
flood of ``initialize`` cannot push established sessions out."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from harness.http import open_session, post
from harness.messages import initialize_request, json_headers, notification
from harness.servers import HttpServer
from jetmcp.core.call import Session
from jetmcp.protocol.revisions import HTTP_DEFAULT
from jetmcp.state import MemorySessionStore, SessionLimit

LIMIT = 16 * 1024


def _initialize(caps: dict[str, object]) -> dict[str, object]:
    return initialize_request("2025-06-18", capabilities=caps)


def _caps_of_size(size: int) -> dict[str, object]:
    """Capabilities whose JSON is at most ``size`` bytes, made of as many empty objects as
    fit: the shape that costs the most memory per byte."""
    caps: dict[str, object] = {}
    used = 2
    i = 0
    while True:
        cost = len(f'"k{i}":{{}},')
        if used + cost > size:
            return caps
        caps[f"k{i}"] = {}
        used += cost
        i += 1


@pytest.fixture(scope="module")
def server() -> Iterator[HttpServer]:
    srv = HttpServer()
    try:
        yield srv
    finally:
        srv.stop()


def test_oversized_client_data_is_refused(server: HttpServer) -> None:
    """Seen: a 4 MiB initialize of ~1.4 M empty objects pinned ~105 MiB per session. Now
    capabilities + clientInfo over --max-client-data-bytes (16 KiB) are -32602."""
    with httpx.Client(timeout=10.0) as client:
        big = {"experimental": {f"k{i}": {} for i in range(200_000)}}  # ~2.3 MB of JSON
        resp = post(client, server.url, _initialize(big))
        assert resp.status_code == 200, resp.text
        body = resp.json()
        assert body["error"]["code"] == -32602, body
        assert "mcp-session-id" not in resp.headers
        assert str(LIMIT) in body["error"]["message"]
        small = {"roots": {"listChanged": True}, "sampling": {}}
        ok = post(client, server.url, _initialize(small))
        assert ok.json()["result"]["protocolVersion"] == "2025-06-18"


def _rss_of_tree(pid: int) -> int:
    """Resident bytes of ``pid`` and its descendants (Granian's supervisor and worker)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        todo.extend(children.get(p, []))
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            pass
    return total


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads RSS from /proc")
def test_a_session_costs_its_bytes_not_its_object_graph() -> None:
    """300 sessions, each with nearly 16 KiB of empty objects as capabilities: the server
    keeps their bytes (~5 MiB in all). Keeping them as dicts, as before, costs ~60 MiB."""
    srv = HttpServer()
    try:
        caps = _caps_of_size(LIMIT - 200)
        with httpx.Client(timeout=10.0) as client:
            for _ in range(20):  # warm up allocator and caches
                assert post(client, srv.url, _initialize({})).status_code == 200
            before = _rss_of_tree(srv.proc.pid)
            for _ in range(300):
                resp = post(client, srv.url, _initialize(caps))
                assert "result" in resp.json(), resp.text[:200]
            after = _rss_of_tree(srv.proc.pid)
        grown = after - before
        assert grown < 25 * 1024 * 1024, f"RSS grew {grown / 2**20:.1f} MiB"
    finally:
        srv.stop()


def test_an_initialize_flood_does_not_evict_established_sessions() -> None:
    """Seen: 10,000 initializes evicted every other client's session (LRU). Now sessions
    that made no second request churn among themselves (--max-new-sessions)."""
    srv = HttpServer("--max-sessions", "60", "--max-new-sessions", "10")
    try:
        with httpx.Client(timeout=10.0) as client:
            established = [open_session(client, srv.url, "2025-06-18") for _ in range(30)]

            async def flood() -> None:
                async with httpx.AsyncClient(timeout=10.0) as aclient:
                    sem = asyncio.Semaphore(16)

                    async def one() -> None:
                        async with sem:
                            r = await aclient.post(
                                srv.url,
                                json=initialize_request("2025-06-18"),
                                headers=json_headers(),
                            )
                            assert r.status_code == 200

                    await asyncio.gather(*(one() for _ in range(1000)))

            asyncio.run(flood())
            for session in established:
                resp = post(
                    client,
                    srv.url,
                    {"jsonrpc": "2.0", "id": 1, "method": "ping"},
                    session=session,
                )
                assert resp.status_code == 200, (session, resp.status_code, resp.text)
    finally:
        srv.stop()


def test_sessions_in_use_are_not_ended_to_make_room() -> None:
    """When every session is established and was used within --session-protect-seconds, a
    new initialize is refused with 503 and Retry-After; the established ones keep working."""
    srv = HttpServer("--max-sessions", "5", "--max-new-sessions", "2")
    try:
        with httpx.Client(timeout=10.0) as client:
            sessions = [open_session(client, srv.url, "2025-06-18") for _ in range(5)]
            resp = post(client, srv.url, initialize_request("2025-06-18"))
            assert resp.status_code == 503, resp.text
            assert resp.json()["error"]["code"] == -32603
            assert int(resp.headers["retry-after"]) >= 1
            for session in sessions:
                ping = post(
                    client, srv.url, notification("notifications/initialized"), session=session
                )
                assert ping.status_code == 202
    finally:
        srv.stop()


# --------------------------------------------------------------------------- the store


def _session(n: int) -> Session:
    return Session(f"s{n}", HTTP_DEFAULT)


def test_store_policy_in_process() -> None:
    async def main() -> None:
        store = MemorySessionStore(max_sessions=4, idle_seconds=3600, max_new=2, protect_seconds=0)
        for n in range(3):
            await store.add(_session(n))
        assert store.counts() == (2, 0)  # s0 ended: the new tier holds 2
        assert await store.get("s0") is None
        assert await store.get("s1") is not None  # second request: established
        assert store.counts() == (1, 1)
        for n in range(3, 6):
            await store.add(_session(n))
        # Full (4): new sessions made room for each other; s1 stayed.
        assert await store.get("s1") is not None
        # protect_seconds=0: with no new session left, the LRU established one goes.
        for sid in ("s4", "s5"):
            assert await store.get(sid) is not None
        assert store.counts() == (0, 3)
        await store.add(_session(6))
        await store.add(_session(7))
        assert len(store) == 4

        guarded = MemorySessionStore(max_sessions=2, max_new=1, protect_seconds=60)
        for n in range(2):
            await guarded.add(_session(10 + n))
            assert await guarded.get(f"s{10 + n}") is not None
        with pytest.raises(SessionLimit):
            await guarded.add(_session(12))
        assert len(guarded) == 2

    asyncio.run(main())


def test_held_answers_for_established_sessions_only_and_counts_as_a_use() -> None:
    """``held`` (the transports' no-await lookup) finds what ``get`` would for an
    established session, with the same in-flight registry; it leaves the new tier and
    idle sessions to ``get``, which promotes the one and ends the other."""

    async def main() -> None:
        store = MemorySessionStore(max_sessions=4, idle_seconds=3600, max_new=4)
        await store.add(_session(0))
        await store.add(_session(1))
        assert store.held("s0") is None  # new: only get promotes it
        assert store.counts() == (2, 0)
        found = await store.get("s0")
        assert found is not None and store.counts() == (1, 1)
        held = store.held("s0")
        assert held is not None and held.session is found
        assert held.inflight is store.inflight("s0")
        assert store.held("nope") is None

        # A use by held moves the session to the end of the LRU order, as get does.
        assert await store.get("s1") is not None
        assert list(store._established) == ["s0", "s1"]
        assert store.held("s0") is not None
        assert list(store._established) == ["s1", "s0"]

        idle = MemorySessionStore(idle_seconds=0.05)
        await idle.add(_session(2))
        assert await idle.get("s2") is not None
        await asyncio.sleep(0.1)
        assert idle.held("s2") is None  # idle too long: get ends it
        assert idle.counts() == (0, 1)
        assert await idle.get("s2") is None
        assert idle.counts() == (0, 0)

    asyncio.run(main())
