"""The request rules of the 2026-07-28 (stateless) revision, as pure functions.

A modern request carries everything in itself: its revision and the client's capabilities
in ``params._meta``, and over HTTP routing headers that must agree with the body. The
dispatcher applies these rules per request, in the order the conformance suite accepts:

1. HTTP routing headers against the body (:func:`header_mismatch`) -> -32020
2. ``_meta`` carries ``protocolVersion`` and ``clientCapabilities`` (:func:`check_meta`)
   -> -32602
3. that version is served (:func:`check_version`) -> -32022 with ``supported``/``requested``
4. the method exists at 2026-07-28 (:func:`check_method`) -> -32601 (HTTP 404)

Header values are trimmed; ``Mcp-Name`` and ``Mcp-Param-*`` values of the form
``=?base64?<base64 of UTF-8>?=`` are decoded first (:func:`decode_value`).
"""

from __future__ import annotations

import base64
import binascii
import re
from decimal import Decimal, InvalidOperation
from typing import Any

from jetmcp import _wire
from jetmcp.errors import (
    HEADER_MISMATCH,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    UNSUPPORTED_PROTOCOL_VERSION,
    McpError,
)
from jetmcp.protocol import revisions
from jetmcp.protocol.meta import META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION
from jetmcp.protocol.revisions import Revision

#: The requests a 2026-07-28 server answers (core, plus the tasks extension's three).
#: ``initialize``, ``ping``, ``logging/setLevel``, ``resources/subscribe`` and
#: ``resources/unsubscribe`` are legacy-only, so unknown here.
#: The methods 2026-07-28 has (the revision table's set).
METHODS: frozenset[str] = revisions.R2026_07_28.methods
#: Requests whose answer is a stream that stays open: never inside a batch (one batch
#: reply cannot hold it).
STREAMING_METHODS: frozenset[str] = frozenset({"subscriptions/listen"})
#: The ``params`` member ``Mcp-Name`` must repeat, per method.
NAME_PARAMS: dict[str, str] = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}

#: Every revision served, newest first: ``server/discover``'s ``supportedVersions`` and the
#: ``supported`` of a -32022.
SUPPORTED_VERSIONS: tuple[str, ...] = tuple(
    r.version for r in reversed((*revisions.REVISIONS, *revisions.MODERN))
)

#: The extension id under which jetmcp advertises 2026-07-28 batches.
BATCH_EXTENSION = "io.jetmcp/batch"

_SENTINEL_HEAD = "=?base64?"
_SENTINEL_TAIL = "?="
_JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")


def is_modern_version(header: str | None) -> bool:
    """Whether an ``MCP-Protocol-Version`` header sends a request down the modern path:
    present and not a legacy revision (so unknown versions are answered -32022 there)."""
    return header is not None and revisions.lookup(header.strip()) is None


def has_modern_meta(params: Any) -> bool:
    """Whether ``params._meta`` names a protocol version (how stdio tells the eras apart)."""
    if not isinstance(params, dict):
        return False
    meta = params.get("_meta")
    return isinstance(meta, dict) and META_PROTOCOL_VERSION in meta


# ---------------------------------------------------------------------------- HTTP headers


class HeaderError(ValueError):
    """A routing header value that cannot be read (bad characters, bad base64)."""


def decode_value(raw: str) -> str:
    """A routing header value as the client meant it: trimmed, and decoded when it is a
    ``=?base64?...?=`` sentinel (a value missing either marker is taken literally).

    Raises :class:`HeaderError` for characters a header may not carry raw (non-ASCII,
    control characters) and for a sentinel whose base64 has a bad alphabet or padding or
    does not decode to UTF-8.
    """
    value = raw.strip(" \t")
    if not (value.isascii() and value.isprintable()):
        raise HeaderError("invalid characters (encode such values as =?base64?...?=)")
    if (
        len(value) >= len(_SENTINEL_HEAD) + len(_SENTINEL_TAIL)
        and value.startswith(_SENTINEL_HEAD)
        and value.endswith(_SENTINEL_TAIL)
    ):
        encoded = value[len(_SENTINEL_HEAD) : -len(_SENTINEL_TAIL)]
        try:
            return base64.b64decode(encoded, validate=True).decode("utf-8")
        except (binascii.Error, ValueError):
            raise HeaderError(f"invalid base64 in {value!r}") from None
    return value


def values_match(header: str, body: Any) -> bool:
    """Whether a decoded ``Mcp-Param-*`` value stands for the body's value: booleans as
    ``true``/``false``, numbers compared as numbers (``42`` and ``42.0`` agree), strings
    exactly. Objects, arrays and null never match."""
    if body is True or body is False:
        return header == ("true" if body else "false")
    if isinstance(body, int | float):
        if _JSON_NUMBER.fullmatch(header) is None:
            return False
        try:
            return Decimal(header) == Decimal(repr(body))
        except InvalidOperation:
            return False
    if isinstance(body, str):
        return header == body
    return False


#: The MCP request headers of one HTTP request (``_wire.Headers``): ``protocol_version``,
#: ``method`` and ``name`` as sent, ``params`` mapping the lower-cased ``<Name>`` of each
#: ``Mcp-Param-<Name>`` to its raw value, ``repeated`` naming the headers sent more than once
#: (always a mismatch). Read by ``from_map`` (a header map: Granian's, the ASGI adapter's)
#: or ``from_items`` (``(name, value)`` pairs in any case), in the extension: the fast path
#: compares the very object the general path reads here.
RoutingHeaders = _wire.Headers


#: An ``x-mcp-header`` property: its header name lower-cased, as declared, and the path of
#: property names from the arguments object down to it.
XHeader = tuple[str, str, tuple[str, ...]]

_MAX_SCHEMA_DEPTH = 32
_x_cache: dict[int, tuple[dict[str, Any], tuple[XHeader, ...]]] = {}


def x_mcp_headers(schema: dict[str, Any]) -> tuple[XHeader, ...]:
    """The ``x-mcp-header`` properties of a tool's input schema, reached through plain
    ``properties`` chains (remembered per schema object: schemas are built once)."""
    cached = _x_cache.get(id(schema))
    if cached is not None and cached[0] is schema:
        return cached[1]
    found: list[XHeader] = []

    def walk(node: dict[str, Any], path: tuple[str, ...]) -> None:
        props = node.get("properties")
        if not isinstance(props, dict) or len(path) >= _MAX_SCHEMA_DEPTH:
            return
        for key, sub in props.items():
            if not isinstance(sub, dict):
                continue
            name = sub.get("x-mcp-header")
            if isinstance(name, str) and name:
                found.append((name.lower(), name, (*path, key)))
            walk(sub, (*path, key))

    walk(schema, ())
    result = tuple(found)
    if len(_x_cache) >= 1024:
        _x_cache.clear()
    _x_cache[id(schema)] = (schema, result)
    return result


def _value_at(arguments: Any, path: tuple[str, ...]) -> Any:
    node = arguments
    for key in path:
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    return node


def _read(header: str, raw: str) -> str:
    try:
        return decode_value(raw)
    except HeaderError as exc:
        raise McpError(HEADER_MISMATCH, f"Header mismatch: {header}: {exc}") from None


def check_headers(
    headers: RoutingHeaders,
    method: str,
    params: dict[str, Any],
    x_headers: tuple[XHeader, ...] = (),
    *,
    in_batch: bool = False,
) -> None:
    """Raise -32020 unless the routing headers agree with the body.

    ``MCP-Protocol-Version`` must equal ``_meta``'s protocol version (when the body names
    one; a body without it fails the ``_meta`` check next). Outside a batch, ``Mcp-Method``
    must equal ``method``; ``Mcp-Name`` must be present exactly when the method's name
    parameter is (:data:`NAME_PARAMS`) and equal it; and each ``x-mcp-header`` property of
    the tool (``x_headers``) must have its ``Mcp-Param-<Name>`` exactly when the arguments
    hold a non-null value for it, and agree (:func:`values_match`).
    """
    if headers.repeated:
        raise McpError(HEADER_MISMATCH, f"Header mismatch: {headers.repeated[0]} sent twice")
    meta = params.get("_meta")
    body_version = meta.get(META_PROTOCOL_VERSION) if isinstance(meta, dict) else None
    header_version = headers.protocol_version
    if (
        isinstance(body_version, str)
        and header_version is not None
        and header_version.strip() != body_version
    ):
        raise McpError(
            HEADER_MISMATCH,
            f"Header mismatch: MCP-Protocol-Version {header_version.strip()!r} differs from "
            f"_meta protocolVersion {body_version!r}",
        )
    if in_batch:
        return
    if headers.method is None:
        raise McpError(HEADER_MISMATCH, "Header mismatch: the Mcp-Method header is required")
    if headers.method.strip() != method:
        raise McpError(
            HEADER_MISMATCH,
            f"Header mismatch: Mcp-Method {headers.method.strip()!r} differs from the "
            f"method {method!r}",
        )
    field = NAME_PARAMS.get(method)
    if field is not None:
        expected = params.get(field)
        if headers.name is None:
            if expected is not None:
                raise McpError(
                    HEADER_MISMATCH, f"Header mismatch: Mcp-Name is required for {method}"
                )
        elif _read("Mcp-Name", headers.name) != expected:
            raise McpError(
                HEADER_MISMATCH,
                f"Header mismatch: Mcp-Name differs from params.{field} {expected!r}",
            )
    if not x_headers:
        return
    arguments = params.get("arguments")
    for lower, declared, path in x_headers:
        body = _value_at(arguments, path)
        raw = headers.params.get(lower)
        header = f"Mcp-Param-{declared}"
        if body is None:
            if raw is not None:
                raise McpError(
                    HEADER_MISMATCH,
                    f"Header mismatch: {header} sent, but arguments.{'.'.join(path)} is absent",
                )
            continue
        if raw is None:
            raise McpError(
                HEADER_MISMATCH,
                f"Header mismatch: {header} is required (arguments.{'.'.join(path)} is set)",
            )
        if not values_match(_read(header, raw), body):
            raise McpError(
                HEADER_MISMATCH,
                f"Header mismatch: {header} differs from arguments.{'.'.join(path)}",
            )


# ---------------------------------------------------------------------------- _meta, version


def check_meta(params: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The request's protocol version and ``_meta``; -32602 when ``_meta`` lacks the
    protocol version or the client capabilities (``clientInfo`` is optional)."""
    meta = params.get("_meta")
    if not isinstance(meta, dict):
        raise McpError(
            INVALID_PARAMS,
            "Invalid params: 2026-07-28 requests carry params._meta with "
            f"{META_PROTOCOL_VERSION} and {META_CLIENT_CAPABILITIES}",
        )
    version = meta.get(META_PROTOCOL_VERSION)
    if not isinstance(version, str):
        raise McpError(
            INVALID_PARAMS, f"Invalid params: _meta needs {META_PROTOCOL_VERSION} (a string)"
        )
    if not isinstance(meta.get(META_CLIENT_CAPABILITIES), dict):
        raise McpError(
            INVALID_PARAMS, f"Invalid params: _meta needs {META_CLIENT_CAPABILITIES} (an object)"
        )
    return version, meta


def unsupported_version(requested: str) -> McpError:
    return McpError(
        UNSUPPORTED_PROTOCOL_VERSION,
        f"Unsupported protocol version: {requested}",
        {"supported": list(SUPPORTED_VERSIONS), "requested": requested},
    )


def check_version(version: str) -> Revision:
    """The modern revision named ``version``; -32022 when it is not one served."""
    revision = revisions.lookup_modern(version)
    if revision is None:
        raise unsupported_version(version)
    return revision


def check_method(method: str, *, in_batch: bool = False) -> None:
    """-32601 for a method 2026-07-28 does not have; -32600 for a streaming one in a batch."""
    if method not in METHODS:
        raise McpError(METHOD_NOT_FOUND, f"Method not found: {method}")
    if in_batch and method in STREAMING_METHODS:
        raise McpError(INVALID_REQUEST, f"Invalid Request: {method} cannot be batched")


__all__ = [
    "BATCH_EXTENSION",
    "METHODS",
    "NAME_PARAMS",
    "STREAMING_METHODS",
    "SUPPORTED_VERSIONS",
    "HeaderError",
    "RoutingHeaders",
    "XHeader",
    "check_headers",
    "check_meta",
    "check_method",
    "check_version",
    "decode_value",
    "has_modern_meta",
    "is_modern_version",
    "unsupported_version",
    "values_match",
    "x_mcp_headers",
]
