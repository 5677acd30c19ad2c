"""The 2026-07-28 request rules of :mod:`jetmcp.protocol.modern`, as pure functions."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.rsgi import Headers
from jetmcp.errors import McpError
from jetmcp.protocol import modern, revisions
from jetmcp.protocol.modern import RoutingHeaders

PV = "io.modelcontextprotocol/protocolVersion"
CAPS = "io.modelcontextprotocol/clientCapabilities"


def meta(version: str = "2026-07-28", **extra: Any) -> dict[str, Any]:
    return {"_meta": {PV: version, CAPS: {}}, **extra}


def b64(text: str) -> str:
    return "=?base64?" + base64.b64encode(text.encode()).decode() + "?="


def code_of(fn: Any, *args: Any, **kw: Any) -> int:
    with pytest.raises(McpError) as err:
        fn(*args, **kw)
    return err.value.code


# --------------------------------------------------------------------------- era


@pytest.mark.parametrize(
    ("header", "modern_path"),
    [
        (None, False),
        ("2024-11-05", False),
        ("2025-03-26", False),
        ("2025-06-18", False),
        (" 2025-11-25 ", False),
        ("2026-07-28", True),
        ("v999.0.0", True),
        ("", True),
    ],
)
def test_is_modern_version(header: str | None, modern_path: bool) -> None:
    assert modern.is_modern_version(header) is modern_path


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"_meta": {PV: "2026-07-28"}}, True),
        ({"_meta": {PV: 1}}, True),
        ({"_meta": {CAPS: {}}}, False),
        ({"_meta": "x"}, False),
        ({}, False),
        (None, False),
        ([1], False),
    ],
)
def test_has_modern_meta(params: Any, expected: bool) -> None:
    assert modern.has_modern_meta(params) is expected


def test_supported_versions_name_every_revision_newest_first() -> None:
    assert modern.SUPPORTED_VERSIONS == (
        "2026-07-28",
        "2025-11-25",
        "2025-06-18",
        "2025-03-26",
        "2024-11-05",
    )


# --------------------------------------------------------------------------- header values


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        ("tools/list", "tools/list"),
        ("  padded\t", "padded"),
        (b64("Hello"), "Hello"),
        (b64("café ☕"), "café ☕"),
        (b64(" leading space"), " leading space"),
        (b64(""), ""),
        ("=?base64?SGVsbG8=", "=?base64?SGVsbG8="),  # no suffix: literal
        ("SGVsbG8=?=", "SGVsbG8=?="),  # no prefix: literal
        ("SGVsbG8=", "SGVsbG8="),
        ("=?BASE64?SGVsbG8=?=", "=?BASE64?SGVsbG8=?="),  # markers are lowercase exactly
        ("=?base64?=", "=?base64?="),  # too short to hold both markers
    ],
)
def test_decode_value(raw: str, value: str) -> None:
    assert modern.decode_value(raw) == value


@pytest.mark.parametrize(
    "raw",
    [
        "=?base64?SGVsbG8?=",  # bad padding
        "=?base64?SGVs!!!bG8=?=",  # outside the alphabet
        "=?base64?SGVs bG8=?=",
        "=?base64?/w==?=",  # not UTF-8
        "caf\u00e9",  # non-ASCII sent raw
        "a\x01b",  # control character
        "a\x7fb",
    ],
)
def test_decode_value_rejects(raw: str) -> None:
    with pytest.raises(modern.HeaderError):
        modern.decode_value(raw)


@pytest.mark.parametrize(
    ("header", "body", "match"),
    [
        ("us-west", "us-west", True),
        ("US-WEST", "us-west", False),
        ("42", 42, True),
        ("42.0", 42, True),
        ("4.2e1", 42, True),
        ("-7", -7, True),
        ("0.5", 0.5, True),
        ("43", 42, False),
        ("042", 42, False),
        ("4_2", 42, False),
        ("forty-two", 42, False),
        ("NaN", 42, False),
        ("", 42, False),
        ("true", True, True),
        ("false", False, True),
        ("True", True, False),
        ("1", True, False),
        ("true", 1, False),
        ("1", 1, True),
        ("null", None, False),
        ('{"a":1}', {"a": 1}, False),
        ("[1]", [1], False),
    ],
)
def test_values_match(header: str, body: Any, match: bool) -> None:
    assert modern.values_match(header, body) is match


# --------------------------------------------------------------------------- routing headers


def test_routing_headers_from_items_any_case() -> None:
    headers = RoutingHeaders.from_items(
        [
            ("content-type", "application/json"),
            ("MCP-Protocol-Version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("Mcp-Name", "t"),
            ("Mcp-Param-Region", "us"),
            ("mcp-param-COUNT", "3"),
        ]
    )
    assert headers.protocol_version == "2026-07-28"
    assert headers.method == "tools/call"
    assert headers.name == "t"
    assert headers.params == {"region": "us", "count": "3"}
    assert headers.repeated == ()
    assert headers.routes


_HEADER_NAMES = st.sampled_from(
    [
        "mcp-protocol-version",
        "MCP-Protocol-Version",
        "mcp-method",
        "Mcp-Name",
        "mcp-name",
        "mcp-param-region",
        "Mcp-Param-Count",
        "mcp-other",
        "content-type",
        "accept",
    ]
)


@given(st.lists(st.tuples(_HEADER_NAMES, st.text(max_size=8)), max_size=8))
def test_routing_headers_from_map_equal_from_items(items: list[tuple[str, str]]) -> None:
    by_map = RoutingHeaders.from_map(Headers(list(items)))
    by_items = RoutingHeaders.from_items(items)
    for attr in ("protocol_version", "method", "name", "params", "routes"):
        assert getattr(by_map, attr) == getattr(by_items, attr), attr
    # Names are lower-case in a map; a pair list keeps its spelling.
    assert sorted(by_map.repeated) == sorted({name.lower() for name in by_items.repeated})


def test_routing_headers_from_map_skips_unreadable_values() -> None:
    headers = RoutingHeaders.from_map(
        Headers([("mcp-method", None), ("mcp-name", "t"), ("mcp-name", None)])
    )
    assert headers.method is None
    assert headers.name == "t"
    assert headers.repeated == ()


def test_routing_headers_routes_only_with_request_headers() -> None:
    assert not RoutingHeaders.from_items([("mcp-protocol-version", "2026-07-28")]).routes
    assert RoutingHeaders.from_items([("mcp-param-x", "1")]).routes
    assert RoutingHeaders.from_items([("mcp-name", "x")]).routes


def test_repeated_header_is_a_mismatch() -> None:
    headers = RoutingHeaders.from_items([("mcp-method", "tools/list"), ("mcp-method", "x")])
    assert headers.repeated == ("mcp-method",)
    assert code_of(modern.check_headers, headers, "tools/list", meta()) == -32020


def test_a_header_sent_many_times_is_named_once_as_repeated() -> None:
    headers = RoutingHeaders.from_items(
        [
            ("mcp-name", "a"),
            ("mcp-param-x", "1"),
            ("mcp-name", "b"),
            ("mcp-name", "c"),
            ("mcp-method", "tools/call"),
            ("mcp-param-x", "2"),
            ("mcp-param-x", "3"),
            ("mcp-protocol-version", "2026-07-28"),
        ]
    )
    assert headers.repeated == ("mcp-name", "mcp-param-x")
    assert headers.name == "c" and headers.params == {"x": "3"}
    assert headers.method == "tools/call" and headers.protocol_version == "2026-07-28"


def rh(**kw: Any) -> RoutingHeaders:
    kw.setdefault("protocol_version", "2026-07-28")
    return RoutingHeaders(**kw)


def test_headers_agreeing_with_the_body_pass() -> None:
    modern.check_headers(rh(method="tools/list"), "tools/list", meta())
    modern.check_headers(rh(method=" tools/list "), "tools/list", meta())
    modern.check_headers(rh(method="tools/call", name="echo"), "tools/call", meta(name="echo"))
    modern.check_headers(
        rh(method="resources/read", name="  file:///a b  "),
        "resources/read",
        meta(uri="file:///a b"),
    )
    modern.check_headers(
        rh(method="prompts/get", name=b64("grüß")), "prompts/get", meta(name="grüß")
    )
    for method in ("tasks/get", "tasks/update", "tasks/cancel"):
        modern.check_headers(rh(method=method, name="t-1"), method, meta(taskId="t-1"))


@pytest.mark.parametrize(
    ("headers", "method", "params"),
    [
        (rh(), "tools/list", meta()),  # no Mcp-Method
        (rh(method="prompts/list"), "tools/list", meta()),
        (rh(method="TOOLS/LIST"), "tools/list", meta()),
        (rh(method="tools/call"), "tools/call", meta(name="echo")),  # no Mcp-Name
        (rh(method="tools/call", name="wrong"), "tools/call", meta(name="echo")),
        (rh(method="tools/call", name="ECHO"), "tools/call", meta(name="echo")),
        (rh(method="tools/call", name="echo"), "tools/call", meta()),  # no params.name
        (rh(method="resources/read", name="a"), "resources/read", meta(uri="b")),
        (rh(method="tasks/get"), "tasks/get", meta(taskId="t")),
        (rh(method="tools/call", name="=?base64?ZWNobw?="), "tools/call", meta(name="echo")),
        (rh(method="tools/list", protocol_version="2026-07-28"), "tools/list", meta("v999.0.0")),
    ],
)
def test_header_mismatches(headers: RoutingHeaders, method: str, params: dict[str, Any]) -> None:
    assert code_of(modern.check_headers, headers, method, params) == -32020


def test_version_compare_waits_for_a_body_version() -> None:
    # No protocol version in the body: the _meta check answers that (-32602), not -32020.
    modern.check_headers(rh(method="tools/list"), "tools/list", {})
    modern.check_headers(rh(method="tools/list"), "tools/list", {"_meta": {PV: 3}})


def test_in_a_batch_only_the_version_is_compared() -> None:
    modern.check_headers(rh(), "tools/call", meta(name="x"), in_batch=True)
    assert code_of(modern.check_headers, rh(), "tools/list", meta("v9"), in_batch=True) == -32020


SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "count": {"type": "integer", "x-mcp-header": "Count"},
        "dry": {"type": "boolean", "x-mcp-header": "Dry-Run"},
        "plain": {"type": "string"},
        "where": {
            "type": "object",
            "properties": {"zone": {"type": "string", "x-mcp-header": "Zone"}},
        },
        "odd": {"anyOf": [{"type": "string", "x-mcp-header": "Hidden"}]},
    },
}


def test_x_mcp_headers_follow_plain_properties_chains() -> None:
    found = modern.x_mcp_headers(SCHEMA)
    assert found == (
        ("region", "Region", ("region",)),
        ("count", "Count", ("count",)),
        ("dry-run", "Dry-Run", ("dry",)),
        ("zone", "Zone", ("where", "zone")),
    )
    assert modern.x_mcp_headers(SCHEMA) is found  # remembered per schema object
    assert modern.x_mcp_headers({"type": "object"}) == ()


def call_params(**arguments: Any) -> dict[str, Any]:
    return meta(name="t", arguments=arguments)


def param_headers(**params: str) -> RoutingHeaders:
    return rh(method="tools/call", name="t", params={k.lower(): v for k, v in params.items()})


X = modern.x_mcp_headers(SCHEMA)


@pytest.mark.parametrize(
    ("headers", "arguments"),
    [
        (param_headers(), {}),
        (param_headers(), {"region": None}),  # null: no header expected
        (param_headers(region="us"), {"region": "us"}),
        (param_headers(region=b64("zürich")), {"region": "zürich"}),
        (param_headers(count="42"), {"count": 42}),
        (param_headers(count="42.0"), {"count": 42}),
        (param_headers(**{"dry-run": "false"}), {"dry": False}),
        (param_headers(zone="z1"), {"where": {"zone": "z1"}}),
        (
            param_headers(region="us", count="1", zone="z"),
            {"region": "us", "count": 1, "where": {"zone": "z"}},
        ),
        (param_headers(other="ignored"), {}),  # headers no property declares are not ours
    ],
)
def test_param_headers_accepted(headers: RoutingHeaders, arguments: dict[str, Any]) -> None:
    params = call_params(**arguments)
    modern.check_headers(headers, "tools/call", params, X)


@pytest.mark.parametrize(
    ("headers", "arguments"),
    [
        (param_headers(), {"region": "us"}),  # body has a value, header absent
        (param_headers(region="eu"), {"region": "us"}),
        (param_headers(region="us"), {}),  # header without a body value
        (param_headers(region="=?base64?dXM?="), {"region": "us"}),  # bad padding
        (param_headers(count="41"), {"count": 42}),
        (param_headers(count="x"), {"count": 42}),
        (param_headers(**{"dry-run": "True"}), {"dry": True}),
        (param_headers(), {"where": {"zone": "z1"}}),
        (param_headers(region="[1]"), {"region": [1]}),
    ],
)
def test_param_header_mismatches(headers: RoutingHeaders, arguments: dict[str, Any]) -> None:
    params = call_params(**arguments)
    assert code_of(modern.check_headers, headers, "tools/call", params, X) == -32020


# --------------------------------------------------------------------------- _meta, version, method


def test_check_meta() -> None:
    assert modern.check_meta(meta()) == ("2026-07-28", {PV: "2026-07-28", CAPS: {}})
    assert modern.check_meta(meta("v9"))[0] == "v9"


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"_meta": None},
        {"_meta": []},
        {"_meta": {CAPS: {}}},
        {"_meta": {PV: 2026, CAPS: {}}},
        {"_meta": {PV: "2026-07-28"}},
        {"_meta": {PV: "2026-07-28", CAPS: []}},
    ],
)
def test_check_meta_rejects(params: dict[str, Any]) -> None:
    assert code_of(modern.check_meta, params) == -32602


def test_check_version() -> None:
    assert modern.check_version("2026-07-28").version == "2026-07-28"
    for version in ("v999.0.0", "2025-11-25", ""):
        with pytest.raises(McpError) as err:
            modern.check_version(version)
        assert err.value.code == -32022
        assert err.value.data == {
            "supported": list(modern.SUPPORTED_VERSIONS),
            "requested": version,
        }


@pytest.mark.parametrize("method", sorted(modern.METHODS))
def test_modern_methods_are_known(method: str) -> None:
    modern.check_method(method)


@pytest.mark.parametrize(
    "method",
    [
        "initialize",
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "resources/unsubscribe",
        "tasks/result",
        "tasks/list",
        "notifications/initialized",
        "unknown/method",
    ],
)
def test_legacy_and_unknown_methods_are_not_found(method: str) -> None:
    assert code_of(modern.check_method, method) == -32601


def test_listen_cannot_be_batched() -> None:
    modern.check_method("subscriptions/listen")
    assert code_of(modern.check_method, "subscriptions/listen", in_batch=True) == -32600
    modern.check_method("tools/call", in_batch=True)


@pytest.mark.parametrize(
    ("code", "status"),
    [
        (-32700, 400),
        (-32600, 400),
        (-32602, 400),
        (-32020, 400),
        (-32021, 400),
        (-32022, 400),
        (-32601, 404),
        (-32603, 200),
        (-32042, 200),
        (1234, 200),
    ],
)
def test_http_status(code: int, status: int) -> None:
    from jetmcp.core.reply import FAILED, Reply
    from jetmcp.transports._http import reply_status

    failed = Reply(b"{}", FAILED, code)
    assert reply_status(failed, revisions.R2026_07_28.error_status) == status
    # Before 2026-07-28 an error reply is an answer like any other.
    for legacy in revisions.LEGACY:
        assert reply_status(failed, legacy.error_status) == 200


@pytest.mark.parametrize(
    "pairs",
    [
        [("host", "x"), ("mcp-protocol-version", "2026-07-28"), ("mcp-method", "tools/call")],
        [("mcp-protocol-version", "2026-07-28"), ("mcp-method", "tools/call"), ("mcp-name", "a")],
        [("mcp-method", "tools/call"), ("mcp-method", "tools/list"), ("accept", "*/*")],
        [("mcp-name", "a"), ("mcp-name", "b"), ("x-other", None)],
        [("mcp-method", None), ("mcp-name", "a")],
        [("mcp-session-id", "s"), ("mcp-method", "tools/call")],
        [("mcp-param-region", "eu"), ("mcp-method", "tools/call"), ("mcp-name", "a")],
        [("mcp-protocol-version", "2026-07-28"), ("mcp-param-a", "1"), ("mcp-param-a", "2")],
        [("accept", "*/*")],
        [],
    ],
)
def test_routing_headers_from_map_matches_every_mcp_name_read(
    pairs: list[tuple[str, str | None]],
) -> None:
    # from_map reads the map's items(); what it finds must be what reading every mcp-
    # name (from_items, unreadable values left out, as Granian leaves them out) finds.
    got = RoutingHeaders.from_map(Headers(pairs))
    want = RoutingHeaders.from_items([(n, v) for n, v in pairs if v is not None])
    assert got.protocol_version == want.protocol_version
    assert got.method == want.method
    assert got.name == want.name
    assert got.params == want.params
    assert set(got.repeated) == set(want.repeated)


def test_routing_headers_of_the_asgi_adapter_see_repeats() -> None:
    # The ASGI adapter's map lists repeats in items(), as Granian's does: a repeated MCP
    # header is a mismatch behind an ASGI server too.
    from jetmcp.transports.asgi import _Headers

    headers = _Headers(
        [(b"Mcp-Method", b"tools/call"), (b"mcp-method", b"tools/list"), (b"Mcp-Name", b"t")]
    )
    got = RoutingHeaders.from_map(headers)
    assert got.repeated == ("mcp-method",)
    assert got.method == "tools/list"
    assert got.name == "t"
