"""Isolation between clients of one server: a client can answer only the server-to-client
requests sent to it, and reach only its own tasks. Against a real ``jetmcp run``; every read
is bounded."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest

from transports.http.test_http_streaming import (
    StreamingServer,
    call,
    headers,
    new_client,
    run,
    stream,
    text_of,
)

LATEST = "2025-11-25"
ALL_CAPS = {"elicitation": {}, "sampling": {}, "roots": {}}

#: (tool, what the victim answers, what its result must then say, what a forger sends)
KINDS = [
    (
        "ask_elicit",
        {"action": "accept", "content": {"name": "victim"}},
        "accept:{'name': 'victim'}",
        {"action": "accept", "content": {"name": "forged"}},
    ),
    (
        "ask_sample",
        {"role": "assistant", "content": {"type": "text", "text": "real"}, "model": "m"},
        "sampled:real",
        {"role": "assistant", "content": {"type": "text", "text": "forged"}, "model": "m"},
    ),
    (
        "ask_roots",
        {"roots": [{"uri": "file:///victim", "name": "v"}]},
        "file:///victim",
        {"roots": [{"uri": "file:///forged", "name": "f"}]},
    ),
]


@pytest.fixture(scope="module")
def server() -> Any:
    srv = StreamingServer()
    try:
        yield srv
    finally:
        srv.stop()


async def open_session(client: httpx.AsyncClient, url: str, caps: dict[str, Any]) -> str:
    resp = await client.post(
        url,
        headers=headers(),
        json={
            "jsonrpc": "2.0",
            "id": "init",
            "method": "initialize",
            "params": {
                "protocolVersion": LATEST,
                "capabilities": caps,
                "clientInfo": {"name": "isolation-tests", "version": "0"},
            },
        },
    )
    assert resp.status_code == 200, resp.text
    session = resp.headers["mcp-session-id"]
    done = await client.post(
        url,
        headers=headers(session),
        json={"jsonrpc": "2.0", "method": "notifications/initialized"},
    )
    assert done.status_code == 202
    return session


@pytest.mark.parametrize(("tool", "answer", "expect", "forged"), KINDS, ids=[k[0] for k in KINDS])
def test_another_client_cannot_answer_a_server_request(
    server: StreamingServer, tool: str, answer: dict[str, Any], expect: str, forged: Any
) -> None:
    """Seen: a POST of the victim's request id with no session (or the attacker's own)
    reached the victim's tool. Now the forged answers are dropped and the victim's own
    answer is the one its tool gets."""

    async def main() -> None:
        async with new_client() as victim, new_client() as attacker:
            session = await open_session(victim, server.url, ALL_CAPS)
            mallory = await open_session(attacker, server.url, ALL_CAPS)
            async with stream(
                victim, "POST", server.url, headers(session), call(tool, id=7)
            ) as sse:
                asked = (await sse.message()).json()
                assert "method" in asked and "id" in asked, asked
                forgery = {"jsonrpc": "2.0", "id": asked["id"], "result": forged}
                for hdrs in (headers(), headers(mallory)):
                    resp = await attacker.post(server.url, headers=hdrs, json=forgery)
                    assert resp.status_code == 202, resp.text
                # An error answer from the attacker must not land either.
                err = {"jsonrpc": "2.0", "id": asked["id"], "error": {"code": -1, "message": "x"}}
                resp = await attacker.post(server.url, headers=headers(mallory), json=err)
                assert resp.status_code == 202, resp.text
                reply = {"jsonrpc": "2.0", "id": asked["id"], "result": answer}
                resp = await victim.post(server.url, headers=headers(session), json=reply)
                assert resp.status_code == 202, resp.text
                final = (await sse.message()).json()
                await sse.ended()
        assert final["id"] == 7, final
        assert "error" not in final, final
        text = text_of(final)
        assert expect in text, final
        assert "forged" not in text

    run(main)


def test_server_request_ids_are_unguessable(server: StreamingServer) -> None:
    """Seen: ids were ``<12 hex>-<counter>`` with one prefix per process, so one id told a
    client every other id. Now each id is drawn at random (128 bits)."""

    async def main() -> None:
        ids: list[str] = []
        async with new_client() as client:
            session = await open_session(client, server.url, ALL_CAPS)
            for n in range(3):
                async with stream(
                    client, "POST", server.url, headers(session), call("ask_roots", id=n)
                ) as sse:
                    asked = (await sse.message()).json()
                    ids.append(asked["id"])
                    reply = {"jsonrpc": "2.0", "id": asked["id"], "result": {"roots": []}}
                    await client.post(server.url, headers=headers(session), json=reply)
                    await sse.message()
        for request_id in ids:
            assert isinstance(request_id, str) and re.fullmatch(r"[A-Za-z0-9_-]{22,}", request_id)
        # No shared prefix or counter: any two ids differ within their first 8 characters.
        assert len({i[:8] for i in ids}) == len(ids), ids

    run(main)


def test_legacy_sse_connections_cannot_answer_each_other(server: StreamingServer) -> None:
    """The 2024-11-05 HTTP+SSE transport: an answer POSTed for one connection never reaches
    a request sent on another."""
    from transports.http.test_sse_legacy import SSE_ACCEPT, endpoint_of, initialize

    async def main() -> None:
        async with (
            new_client() as client,
            stream(client, "GET", server.base + "/sse", SSE_ACCEPT) as victim,
            stream(client, "GET", server.base + "/sse", SSE_ACCEPT) as attacker,
        ):
            v_url = await endpoint_of(victim, server.base)
            a_url = await endpoint_of(attacker, server.base)
            json_h = {"content-type": "application/json"}
            init = initialize()
            init["params"]["capabilities"] = ALL_CAPS
            for url, sse in ((v_url, victim), (a_url, attacker)):
                assert (await client.post(url, headers=json_h, json=init)).status_code == 202
                await sse.message()
                note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
                await client.post(url, headers=json_h, json=note)
            await client.post(v_url, headers=json_h, json=call("ask_roots", id=9))
            asked = (await victim.message()).json()
            forged = {"roots": [{"uri": "file:///forged", "name": "f"}]}
            resp = await client.post(
                a_url,
                headers=json_h,
                json={"jsonrpc": "2.0", "id": asked["id"], "result": forged},
            )
            assert resp.status_code == 202
            real = {"roots": [{"uri": "file:///victim", "name": "v"}]}
            resp = await client.post(
                v_url,
                headers=json_h,
                json={"jsonrpc": "2.0", "id": asked["id"], "result": real},
            )
            assert resp.status_code == 202
            final = (await victim.message()).json()
        assert final["id"] == 9
        assert "file:///victim" in text_of(final), final

    run(main)


# --------------------------------------------------------------------------- tasks


def _task_call(tool: str, arguments: dict[str, Any], id: Any) -> dict[str, Any]:
    body = call(tool, arguments, id=id)
    body["params"]["task"] = {"ttl": 60_000}
    return body


@pytest.fixture(scope="module")
def task_server() -> Any:
    from harness.servers import AppServer

    srv = AppServer("tests.apps.server_features:app", label="task server")
    try:
        yield srv
    finally:
        srv.stop()


def test_sessionless_tasks_are_not_listed_to_other_clients(task_server: Any) -> None:
    """Seen: ``tasks/list`` from any session-less client listed every session-less task (and
    so handed out their ids, results and the power to cancel them). Now a session-less
    ``tasks/list`` lists nothing; a task is reached only by the id its creator holds."""
    with httpx.Client(timeout=5.0) as client:
        h = headers(version=LATEST)
        created = client.post(
            task_server.url, headers=h, json=_task_call("slow_echo", {"text": "secret", "ms": 0}, 1)
        )
        assert created.status_code == 200, created.text
        task_id = created.json()["result"]["task"]["taskId"]
        listed = client.post(
            task_server.url,
            headers=h,
            json={"jsonrpc": "2.0", "id": 2, "method": "tasks/list", "params": {}},
        )
        assert listed.status_code == 200, listed.text
        assert listed.json()["result"]["tasks"] == [], listed.json()
        # The holder of the id still reaches it.
        got = client.post(
            task_server.url,
            headers=h,
            json={
                "jsonrpc": "2.0",
                "id": 3,
                "method": "tasks/result",
                "params": {"taskId": task_id},
            },
        )
        assert got.status_code == 200, got.text
        assert "secret" in text_of(got.json())


def test_a_session_cannot_reach_another_sessions_task(task_server: Any) -> None:
    async def main() -> None:
        async with new_client() as owner, new_client() as other:
            mine = await open_session(owner, task_server.url, {})
            theirs = await open_session(other, task_server.url, {})
            created = await owner.post(
                task_server.url,
                headers=headers(mine),
                json=_task_call("slow_echo", {"text": "secret", "ms": 0}, 1),
            )
            task_id = created.json()["result"]["task"]["taskId"]
            for session in (theirs, None):
                for method in ("tasks/get", "tasks/result", "tasks/cancel"):
                    resp = await other.post(
                        task_server.url,
                        headers=headers(session, version=LATEST),
                        json={
                            "jsonrpc": "2.0",
                            "id": 5,
                            "method": method,
                            "params": {"taskId": task_id},
                        },
                    )
                    body = resp.json()
                    assert body["error"]["code"] == -32602, (method, body)
                listed = await other.post(
                    task_server.url,
                    headers=headers(session, version=LATEST),
                    json={"jsonrpc": "2.0", "id": 6, "method": "tasks/list", "params": {}},
                )
                assert listed.json()["result"]["tasks"] == []
            own = await owner.post(
                task_server.url,
                headers=headers(mine),
                json={
                    "jsonrpc": "2.0",
                    "id": 7,
                    "method": "tasks/result",
                    "params": {"taskId": task_id},
                },
            )
            assert "secret" in text_of(own.json())

    run(main)
