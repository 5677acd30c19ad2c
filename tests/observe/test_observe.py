"""Metrics, traces and the access log of a real ``jetmcp run``.

Metrics: known traffic against two Granian workers, then the Prometheus endpoint (its own
port, and a path of the MCP port) must show exactly those counts, added up over both
workers. Traces: the OpenTelemetry SDK's in-memory exporter, set up by the app as an
application would, must hold one span per HTTP request and one per JSON-RPC request (batch
entries included), parented by the ``traceparent`` the client sent (the header for the
request, ``_meta`` for an entry). The access log: one JSON line per request.
"""

from __future__ import annotations

import json
import secrets
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from harness.messages import json_headers, request
from harness.redis_support import REDIS_URL, drop_keys, new_prefix
from harness.servers import AppServer, free_port

SCRAPE_TIMEOUT = 10.0
V = "2025-03-26"
#: A revision with structured tool results (the span dump is read from them).
STRUCTURED = "2025-06-18"


@pytest.fixture(scope="module")
def metered() -> Iterator[tuple[AppServer, int]]:
    port = free_port()
    prefix = new_prefix()
    # Two workers share their sessions through Redis (jetmcp refuses --workers 2 without).
    srv = AppServer(
        "jetmcp.demo:app",
        "--workers",
        "2",
        "--redis",
        REDIS_URL,
        "--redis-prefix",
        prefix,
        "--metrics-port",
        str(port),
        "--metrics-path",
        "/metrics",
        # Synchronous tools on the loop, as the extension answers them once promoted: the
        # path counts below are about that, not the pool's first calls.
        "--sync-tool-threads",
        "0",
        label="jetmcp with metrics",
    )
    try:
        yield srv, port
    finally:
        srv.stop()
        drop_keys(prefix)


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    out: dict[tuple[str, frozenset[tuple[str, str]]], float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return out


def value(found: dict[Any, float], name: str, **labels: str) -> float:
    return found.get((name, frozenset(labels.items())), 0.0)


def calls(name: str, args: dict[str, Any], id: Any = None) -> dict[str, Any]:
    return request("tools/call", {"name": name, "arguments": args}, id=id)


def test_metrics_count_what_was_served(metered: tuple[AppServer, int]) -> None:
    srv, port = metered
    with httpx.Client(timeout=10) as http:
        post = lambda body: http.post(  # noqa: E731
            srv.url,
            content=body if isinstance(body, bytes) else json.dumps(body),
            headers=json_headers(V),
        )
        for i in range(7):
            assert post(calls("add", {"a": i, "b": 1})).status_code == 200
        for _ in range(3):
            assert post(request("tools/list")).status_code == 200
        # All routed tool calls: the extension answers the whole batch.
        assert (
            post([calls("add", {"a": 1, "b": 1}), calls("add", {"a": 2, "b": 2})]).status_code
            == 200
        )
        # A mixed array: the extension answers the call, the runner the rest; each entry
        # is counted on its own path.
        mixed = post(
            [request("tools/list"), request("no/such/method"), calls("add", {"a": 0, "b": 0})]
        )
        assert len(mixed.json()) == 3
        assert "error" in post(calls("no_such_tool", {})).json()
        assert post(b"{not json").status_code == 400
        # Made-up method names must not become label values (a client could send millions).
        for _ in range(5):
            post(request(f"x/{secrets.token_hex(4)}"))
        init = http.post(
            srv.url,
            json=request(
                "initialize",
                {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "0"},
                },
            ),
            headers=json_headers(),
        )
        assert init.headers.get("mcp-session-id")

        deadline = time.monotonic() + SCRAPE_TIMEOUT
        while True:
            found = samples(http.get(f"http://127.0.0.1:{port}/metrics").text)
            fast = value(
                found,
                "jetmcp_requests_total",
                transport="http",
                method="tools/call",
                revision=V,
                outcome="ok",
                path="fast",
            )
            done = value(
                found,
                "jetmcp_requests_total",
                transport="http",
                method="initialize",
                revision="2025-06-18",
                outcome="ok",
                path="general",
            )
            if (fast >= 10 and done >= 1) or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        on_path = samples(http.get(srv.base + "/metrics").text)

    def req(method: str, outcome: str, path: str, revision: str = V) -> float:
        return value(
            found,
            "jetmcp_requests_total",
            transport="http",
            method=method,
            revision=revision,
            outcome=outcome,
            path=path,
        )

    assert req("tools/call", "ok", "fast") == 10
    assert req("tools/call", "ok", "general") == 0
    assert req("tools/call", "error", "general") == 1
    assert req("tools/list", "ok", "general") == 4
    assert req("other", "error", "general") == 6
    assert req("(invalid)", "error", "general") == 1
    assert req("initialize", "ok", "general", "2025-06-18") == 1
    methods = {
        dict(labels).get("method") for (name, labels) in found if name == "jetmcp_requests_total"
    }
    assert not any(m and m.startswith("x/") for m in methods), methods
    assert value(found, "jetmcp_errors_total", transport="http", code="-32601") == 6
    assert value(found, "jetmcp_errors_total", transport="http", code="-32602") == 1
    assert value(found, "jetmcp_errors_total", transport="http", code="-32700") == 1
    assert value(found, "jetmcp_batch_size_count", transport="http") == 2
    assert value(found, "jetmcp_batch_size_sum", transport="http") == 5
    assert value(found, "jetmcp_batch_size_bucket", transport="http", le="2.0") == 1
    assert value(found, "jetmcp_request_duration_seconds_count", transport="http", path="fast") == 8
    assert value(found, "jetmcp_sessions", transport="http") == 1
    assert value(found, "jetmcp_inflight", transport="http") == 0
    # The MCP port's path shows the same counts (whichever worker answered it).
    assert (
        on_path[
            (
                "jetmcp_requests_total",
                next(
                    k
                    for n, k in found
                    if n == "jetmcp_requests_total" and dict(k)["path"] == "fast"
                ),
            )
        ]
        == 10
    )


def test_a_metrics_flag_without_its_extra_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from jetmcp.observe.metrics import require_prometheus
    from jetmcp.observe.tracing import require_otel

    monkeypatch.setitem(sys.modules, "prometheus_client", None)
    with pytest.raises(ImportError, match=r"pip install 'jetmcp\[metrics\]'"):
        require_prometheus("--metrics-port")
    monkeypatch.setitem(sys.modules, "opentelemetry.trace", None)
    with pytest.raises(ImportError, match=r"pip install 'jetmcp\[otel\]'"):
        require_otel("--otel")


def test_the_reply_layout_the_metrics_read() -> None:
    from jetmcp import _wire
    from jetmcp.observe.metrics import error_code

    assert error_code(_wire.encode_error(b'"x"', -32602, "m"), b'"x"') == -32602
    assert error_code(_wire.encode_error(None, -32700, "m"), None) == -32700
    assert error_code(_wire.encode_result(b"7", {"error": {"code": 1}}), b"7") is None


# --------------------------------------------------------------------------- traces


@pytest.fixture(scope="module")
def traced() -> Iterator[AppServer]:
    srv = AppServer("tests.apps.otel_app:app", "--otel", label="jetmcp with --otel")
    try:
        yield srv
    finally:
        srv.stop()


def traceparent() -> tuple[str, str, str]:
    trace_id, span_id = secrets.token_hex(16), secrets.token_hex(8)
    return f"00-{trace_id}-{span_id}-01", trace_id, span_id


def test_one_span_per_request_and_per_batch_entry(traced: AppServer) -> None:
    header, trace_a, parent_a = traceparent()
    meta_tp, trace_b, parent_b = traceparent()
    single_tp, trace_c, parent_c = traceparent()
    with httpx.Client(timeout=10) as http:
        batch = [
            request(
                "tools/call",
                {"name": "add", "arguments": {"a": 1, "b": 2}, "_meta": {"traceparent": meta_tp}},
            ),
            calls("nap", {"ms": 20}),
            request("tools/list"),
        ]
        resp = http.post(traced.url, json=batch, headers={**json_headers(V), "traceparent": header})
        replies = {r["id"]: r for r in resp.json()}
        nap_span = replies[batch[1]["id"]]["result"]["content"][0]["text"]
        single = http.post(
            traced.url,
            json=calls("add", {"a": 5, "b": 5}),
            headers={**json_headers(V), "traceparent": single_tp},
        )
        assert single.status_code == 200
        dumped = http.post(
            traced.url, json=calls("spans", {}), headers=json_headers(STRUCTURED)
        ).json()
    spans: list[dict[str, Any]] = dumped["result"]["structuredContent"]["result"]

    in_a = [s for s in spans if s["trace_id"] == trace_a]
    http_a = [s for s in in_a if s["name"] == "POST /mcp"]
    assert len(http_a) == 1 and http_a[0]["parent_id"] == parent_a
    assert http_a[0]["attributes"]["http.response.status_code"] == 200
    entries_a = sorted(s["name"] for s in in_a if s is not http_a[0])
    assert entries_a == ["tools/call nap", "tools/list"]
    for span in in_a:
        if span is not http_a[0]:
            assert span["parent_id"] == http_a[0]["span_id"]
            assert span["attributes"]["mcp.method.name"] in ("tools/call", "tools/list")
            assert span["attributes"]["jetmcp.batch_entry"] is True
    # The tool ran under its entry's span, the wait included.
    assert nap_span == next(s["span_id"] for s in in_a if s["name"] == "tools/call nap")
    # The entry that named its own trace context in _meta is in that trace.
    in_b = [s for s in spans if s["trace_id"] == trace_b]
    assert [s["name"] for s in in_b] == ["tools/call add"]
    assert in_b[0]["parent_id"] == parent_b
    assert in_b[0]["attributes"]["jsonrpc.request.id"] == json.dumps(batch[0]["id"])
    # A single request: its HTTP span and its entry span, nothing answered around them.
    in_c = [s for s in spans if s["trace_id"] == trace_c]
    assert sorted(s["name"] for s in in_c) == ["POST /mcp", "tools/call add"]
    outer = next(s for s in in_c if s["name"] == "POST /mcp")
    assert outer["parent_id"] == parent_c
    assert next(s for s in in_c if s["name"] == "tools/call add")["parent_id"] == outer["span_id"]


def test_an_error_entry_span_says_so(traced: AppServer) -> None:
    header, trace_id, _ = traceparent()
    with httpx.Client(timeout=10) as http:
        http.post(
            traced.url,
            json=calls("no_such_tool", {}),
            headers={**json_headers(V), "traceparent": header},
        )
        dumped = http.post(
            traced.url, json=calls("spans", {}), headers=json_headers(STRUCTURED)
        ).json()
    spans = [
        s for s in dumped["result"]["structuredContent"]["result"] if s["trace_id"] == trace_id
    ]
    entry = next(s for s in spans if s["name"] == "tools/call no_such_tool")
    assert entry["status"] == "ERROR" and entry["attributes"]["rpc.jsonrpc.error_code"] == -32602


# --------------------------------------------------------------------------- access log


def test_the_access_log_is_one_json_line_per_request() -> None:
    srv = AppServer("jetmcp.demo:app", "--access-log", label="jetmcp with --access-log")
    try:
        with httpx.Client(timeout=10) as http:
            init = http.post(
                srv.url,
                json=request(
                    "initialize",
                    {
                        "protocolVersion": "2025-06-18",
                        "capabilities": {},
                        "clientInfo": {"name": "t", "version": "0"},
                    },
                ),
                headers=json_headers(),
            )
            session = init.headers["mcp-session-id"]
            http.post(
                srv.url, json=request("tools/list"), headers=json_headers("2025-06-18", session)
            )
            http.get(srv.base + "/nowhere")
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and srv.stderr().count("\n") < 4:
            time.sleep(0.05)
        lines = [json.loads(line) for line in srv.stderr().splitlines() if line.startswith("{")]
    finally:
        srv.stop()
    assert [(r["method"], r["path"], r["status"]) for r in lines[-3:]] == [
        ("POST", "/mcp", 200),
        ("POST", "/mcp", 200),
        ("GET", "/nowhere", 404),
    ]
    listed = lines[-2]
    assert listed["protocol_version"] == "2025-06-18"
    assert listed["session"] != session and len(listed["session"]) == 16
    assert session not in srv_text(lines)
    assert all(r["duration_ms"] >= 0 and r["client"].startswith("127.0.0.1:") for r in lines)


def srv_text(lines: list[dict[str, Any]]) -> str:
    return json.dumps(lines)
