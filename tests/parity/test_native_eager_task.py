"""The native engine's eager task (``HttpConnection.eager``, ``McpHttpApp.lane_eager``):
a single call whose Outcome Python finishes (an async tool's coroutine, a value Python
shapes, an exception) answers byte for byte as the same app on Granian does, where every
request runs in a task of its own: at every revision, stateless and stateful, for tools that
finish at once, return a model, suspend, need a task (``asyncio.timeout``, the same task
before and after suspending, a deadline that fires while it waits, listed among all tasks),
set a context variable (no request sees another's), fail after suspending, cancel
themselves, return values of every kind the extension writes
itself or leaves to Python (primitives, data, models, a subclass,
aliases, a mismatch), take a Context (logging into a stream or not, in a task, failing),
raise an McpError or another exception, pass their own ``timeout=``
or the server's ``--request-timeout-seconds``, and synchronous tools whose value or
exception Python shapes. Real processes, one keep-alive connection each."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest

from harness.messages import modern_meta, tool_call
from harness.servers import HttpServer

APP = "tests/apps/eager_task_app.py:app"
MODERN = "2026-07-28"
VERSIONS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", MODERN]
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("at_once", {"a": 2, "b": 3}),
    ("scale", {"point": {"x": 1, "y": -2}, "factor": 3}),
    ("scale", {"point": {"x": 1}, "factor": 3}),
    ("suspends", {"a": 4}),
    ("in_task", {}),
    ("same_task", {}),
    ("listed", {}),
    ("times_out", {}),
    ("fails_later", {}),
    ("cancels_itself", {}),
    ("leaks", {"value": "first"}),
    ("leaks", {"value": "second"}),
    ("refuses", {}),
    ("breaks", {}),
    ("timed", {}),
    ("slow", {}),
    ("shaped", {"n": 3}),
    ("raises", {"n": 2}),
    *[
        ("values", {"kind": kind})
        for kind in ("dict", "list", "none", "str", "bool", "float", "bigint", "model", "subclass")
    ],
    ("alias", {}),
    ("typed_dict", {}),
    ("wrong_model", {}),
    ("ctx_log", {"a": 1}),
    ("ctx_in_task", {}),
    ("ctx_fails", {}),
]


def _body(name: str, arguments: dict[str, Any], version: str, n: int) -> bytes:
    meta = None
    if version == MODERN:
        # Every third call asks for log lines (a Context tool's reply is then a stream).
        extra = {"io.modelcontextprotocol/logLevel": "debug"} if n % 3 == 0 else {}
        meta = modern_meta(version, **extra)
    return orjson.dumps(tool_call(name, arguments, n, meta=meta))


def _headers(name: str, version: str) -> dict[str, str]:
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": version,
    }
    if version == MODERN:
        headers |= {"Mcp-Method": "tools/call", "Mcp-Name": name}
    return headers


def _replies(server: HttpServer) -> list[tuple[int, Any]]:
    out = []
    with httpx.Client(base_url=f"http://127.0.0.1:{server.port}", timeout=20) as client:
        for version in VERSIONS:
            for n, (name, arguments) in enumerate(CALLS):
                reply = client.post(
                    "/mcp",
                    content=_body(name, arguments, version, n),
                    headers=_headers(name, version),
                )
                out.append((reply.status_code, reply.content))
    return out


@pytest.fixture(scope="module", params=["stateless", "stateful"])
def mode(request: pytest.FixtureRequest) -> Iterator[list[str]]:
    yield ["--stateless"] if request.param == "stateless" else []


def test_eager_task_answers_as_granian(mode: list[str]) -> None:
    replies = {}
    for engine in ("native", "granian"):
        server = HttpServer(*mode, "--request-timeout-seconds", "0.3", app=APP, engine=engine)
        try:
            replies[engine] = _replies(server)
        finally:
            server.stop()
    native, granian = replies["native"], replies["granian"]
    assert len(native) == len(granian) == len(VERSIONS) * len(CALLS)
    for (name, _), got, want in zip(CALLS * len(VERSIONS), native, granian, strict=True):
        assert got == want, name
    # What the calls came to, so that an engine answering every call alike but wrongly
    # fails too.
    by_name = {}
    streams = 0
    for (name, arguments), (status, body) in zip(CALLS, native, strict=False):
        if name == "cancels_itself":
            # The task ended cancelled, with no reply: 500, as Granian answers a request whose
            # app ended without a response.
            assert (status, body) == (500, b"")
            continue
        if not body.startswith(b"{"):
            streams += 1  # a Context tool's log line turned the reply into a stream
            assert body.startswith(b"data: "), body
            continue
        by_name.setdefault(name + str(arguments.get("value", "")), (status, orjson.loads(body)))
    assert by_name["at_once"][1]["result"]["content"][0]["text"] == "5"
    assert by_name["in_task"][1]["result"]["content"][0]["text"] == "True"
    assert by_name["leaksfirst"][1]["result"]["content"][0]["text"] == "unset"
    assert by_name["leakssecond"][1]["result"]["content"][0]["text"] == "unset"
    assert by_name["suspends"][1]["result"]["content"][0]["text"] == "8"
    assert by_name["same_task"][1]["result"]["content"][0]["text"] == "True"
    assert by_name["listed"][1]["result"]["content"][0]["text"] == "True True"
    assert by_name["times_out"][1]["result"]["content"][0]["text"] == "timed out"
    assert by_name["fails_later"][1]["result"]["isError"] is True
    assert by_name["refuses"][1]["error"]["code"] == -32042
    assert by_name["breaks"][1]["result"]["isError"] is True
    assert by_name["timed"][1]["error"]["code"] == -32001
    assert by_name["slow"][1]["error"]["code"] == -32001
    assert by_name["raises"][1]["result"]["isError"] is True
    assert orjson.loads(by_name["scale"][1]["result"]["content"][0]["text"]) == {
        "x": 3.0,
        "y": -6.0,
    }
    assert streams == 3
