"""Errors never leak internals: an unexpected exception in a tool, a resource, a prompt or a
completion answers a generic message on the wire (no file path, no secret from its text, no
traceback) while the server's log keeps the detail; ``mask_error_details=False`` shows it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from harness.messages import json_headers, request
from harness.servers import AppServer

V = "2025-06-18"
#: What the app's failing components put in their exceptions' text.
SECRETS = ("/srv/app", "hunter2", "postgres://", "api_key", "s3cr3t", "password")


@pytest.fixture(scope="module")
def masked() -> Iterator[AppServer]:
    srv = AppServer("tests.apps.auth_app:app", label="jetmcp (errors masked)")
    try:
        yield srv
    finally:
        srv.stop()


def exchange(srv: AppServer, method: str, params: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    resp = httpx.post(srv.url, json=request(method, params), headers=json_headers(V), timeout=10)
    return resp.text, resp.json()


FAILURES: list[tuple[str, dict[str, Any]]] = [
    ("tools/call", {"name": "crash", "arguments": {}}),
    ("tools/call", {"name": "unsendable", "arguments": {}}),
    ("resources/read", {"uri": "info://broken"}),
    ("prompts/get", {"name": "broken_prompt"}),
    (
        "completion/complete",
        {"ref": {"type": "ref/prompt", "name": "greet"}, "argument": {"name": "name", "value": ""}},
    ),
]


def test_nothing_internal_reaches_the_wire(masked: AppServer) -> None:
    replies = {
        f"{m} {p.get('name', p.get('uri', p.get('ref')))}": exchange(masked, m, p)
        for m, p in FAILURES
    }
    for what, (raw, _) in replies.items():
        for secret in (*SECRETS, "Traceback", "RuntimeError", 'File "', ".py"):
            assert secret not in raw, (what, raw)
    _, crash = replies["tools/call crash"]
    assert crash["result"]["isError"] is True
    assert crash["result"]["content"][0]["text"] == "Error executing tool crash"
    _, unsendable = replies["tools/call unsendable"]
    assert unsendable["result"]["content"][0]["text"] == (
        "Tool unsendable returned content that cannot be sent"
    )
    _, broken = replies["resources/read info://broken"]
    assert broken["error"] == {
        "code": -32603,
        "message": "Error reading resource info://broken",
        "data": {"uri": "info://broken"},
    }
    _, prompt = replies["prompts/get broken_prompt"]
    assert prompt["error"] == {"code": -32603, "message": "Error rendering prompt broken_prompt"}
    completion = next(v for k, v in replies.items() if k.startswith("completion/complete"))[1]
    assert completion["error"] == {"code": -32603, "message": "Error completing argument name"}
    # The operator's log keeps what the client was not told.
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and "s3cr3t" not in masked.stderr():
        time.sleep(0.05)
    log = masked.stderr()
    for detail in (
        "/srv/app/secrets.py",
        "postgres://u:p@db",
        "KeyError 'api_key'",
        "s3cr3t",
        "Traceback",
    ):
        assert detail in log, detail


def test_details_are_shown_when_asked() -> None:
    srv = AppServer("tests.apps.auth_app:unmasked", label="jetmcp (errors shown)")
    try:
        _, crash = exchange(srv, "tools/call", {"name": "crash", "arguments": {}})
        assert crash["result"]["content"][0]["text"] == "/srv/app/secrets.py: password=hunter2"
        _, broken = exchange(srv, "resources/read", {"uri": "info://broken"})
        assert broken["error"]["message"] == (
            "Error reading resource info://broken: "
            "/srv/app/db.py line 12: connection string postgres://u:p@db"
        )
        _, prompt = exchange(srv, "prompts/get", {"name": "broken_prompt"})
        assert prompt["error"]["message"].endswith("KeyError 'api_key'")
        # Even then, no traceback: the exception's own text only.
        assert "Traceback" not in str(crash) + str(broken) + str(prompt)
    finally:
        srv.stop()
