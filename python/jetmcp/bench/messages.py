"""The requests a load run sends, written once at the negotiated revision.

The revision is picked by a :class:`~jetmcp.client.Client` (``server/discover`` first, else
``initialize``), which also learns the tools' ``x-mcp-header`` arguments at 2026-07-28.
Every request body is then encoded once around a placeholder id (:class:`Template`); only the
id is spliced in per request. The headers of a request (the revision, a session, 2026-07-28's
routing headers, the user's own) are fixed per message and per session.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from jetmcp import _wire
from jetmcp.client import Client
from jetmcp.client.session import encode_header_value
from jetmcp.client.transports import HttpTransport, Url
from jetmcp.protocol.meta import (
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_PROTOCOL_VERSION,
)
from jetmcp.protocol.modern import NAME_PARAMS, XHeader, x_mcp_headers
from jetmcp.protocol.revisions import Revision

#: An id no real request carries; encoded bodies are split around it.
SENTINEL = b"4503599627370495"


@dataclass
class Message:
    """One kind of request of a mix or a scenario step."""

    method: str
    params: dict[str, Any] = field(default_factory=dict)
    weight: int = 1

    @property
    def label(self) -> str:
        """How reports name it: the method, and for a call its tool (``tools/call add``)."""
        key = NAME_PARAMS.get(self.method)
        name = self.params.get(key) if key else None
        return f"{self.method} {name}" if isinstance(name, str) else self.method

    def describe(self) -> str:
        """The mix as the JSON report's ``mix`` key has always shown it."""
        if self.method == "tools/call":
            args = json.dumps(self.params.get("arguments") or {})
            return f"tools/call {self.params.get('name')} {args}"
        return f"{self.method} {json.dumps(self.params)}" if self.params else self.method


class Template:
    """One request, encoded once with a placeholder id."""

    __slots__ = ("head", "label", "tail")

    def __init__(self, encoded: bytes, label: int) -> None:
        head, found, tail = encoded.partition(SENTINEL)
        if not found or SENTINEL in tail:
            raise ValueError("the message could not be templated")
        self.head = head
        self.tail = tail
        self.label = label

    def render(self, wid: int) -> bytes:
        return b"%s%d%s" % (self.head, wid, self.tail)


def _header_scalar(value: Any) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, str):
        return encode_header_value(value)
    return None


@dataclass
class Speaker:
    """How requests are written at one revision, for one target."""

    revision: Revision
    client_info: dict[str, Any]
    capabilities: dict[str, Any]
    #: Each tool's ``x-mcp-header`` arguments (2026-07-28 ``Mcp-Param-*`` headers).
    tool_headers: dict[str, tuple[XHeader, ...]] = field(default_factory=dict)
    #: HTTP only: the endpoint and the user's own headers.
    url: Url | None = None
    user_headers: dict[str, str] = field(default_factory=dict)

    def params(self, params: Mapping[str, Any]) -> dict[str, Any] | None:
        rev = self.revision
        if not rev.per_request_capabilities:
            return dict(params) or None
        meta = {
            META_PROTOCOL_VERSION: rev.version,
            META_CLIENT_CAPABILITIES: self.capabilities,
            META_CLIENT_INFO: self.client_info,
        }
        user_meta = params.get("_meta")
        if isinstance(user_meta, Mapping):
            meta = {**user_meta, **meta}
        return {**params, "_meta": meta}

    def encode(self, wid: int, method: str, params: Mapping[str, Any]) -> bytes:
        wire = self.params(params)
        if wire is None:
            return _wire.encode_request(b"%d" % wid, method)
        return _wire.encode_request(b"%d" % wid, method, wire)

    def template(self, message: Message, label: int) -> Template:
        return Template(self.encode(int(SENTINEL), message.method, message.params), label)

    def initialize(self, wid: int) -> bytes:
        """The ``initialize`` request of a legacy session."""
        rev = self.revision
        return _wire.encode_request(
            b"%d" % wid,
            "initialize",
            {
                "protocolVersion": rev.version,
                "capabilities": self.capabilities,
                "clientInfo": self.client_info,
            },
        )

    @staticmethod
    def initialized() -> bytes:
        return _wire.encode_notification("notifications/initialized")

    # ------------------------------------------------------------------ HTTP

    def headers(
        self, message: Message | None, session: str | None, *, batch: bool = False
    ) -> list[tuple[bytes, bytes]]:
        """Every header of a POST carrying ``message`` (None: a batch or a handshake)."""
        assert self.url is not None
        lines: list[tuple[str, str]] = [
            ("Host", self.url.authority),
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ]
        if session is not None:
            lines.append(("Mcp-Session-Id", session))
        lines.append(("MCP-Protocol-Version", self.revision.version))
        if message is not None and self.revision.routing_headers and not batch:
            lines.extend(self.route_headers(message))
        given = {name.lower() for name in self.user_headers}
        lines = [(n, v) for n, v in lines if n.lower() not in given or n == "Host"]
        lines.extend(self.user_headers.items())
        for name, value in lines:
            if "\r" in value or "\n" in value or "\r" in name or "\n" in name:
                raise ValueError(f"invalid HTTP header {name!r}: {value!r}")
        return [(n.encode("latin-1"), v.encode("latin-1")) for n, v in lines]

    def route_headers(self, message: Message) -> list[tuple[str, str]]:
        """2026-07-28 single requests: ``Mcp-Method``, ``Mcp-Name``, ``Mcp-Param-*``."""
        method, params = message.method, message.params
        out = [("Mcp-Method", method)]
        key = NAME_PARAMS.get(method)
        value = params.get(key) if key else None
        if isinstance(value, str):
            out.append(("Mcp-Name", encode_header_value(value)))
        if method == "tools/call":
            known = self.tool_headers.get(str(params.get("name")))
            arguments = params.get("arguments")
            if known and isinstance(arguments, Mapping):
                for _, token, path in known:
                    node: Any = arguments
                    for step in path:
                        node = node.get(step) if isinstance(node, Mapping) else None
                    rendered = None if node is None else _header_scalar(node)
                    if rendered is not None:
                        out.append((f"Mcp-Param-{token}", rendered))
        return out


@dataclass
class Negotiated:
    """What a short-lived client learned: how to speak, and (HTTP) the session all
    connections share, kept open by ``client`` until the run ends."""

    speaker: Speaker
    client: Client
    session: str | None
    batches: bool


def split_headers(lines: Sequence[str]) -> dict[str, str]:
    headers: dict[str, str] = {}
    for line in lines:
        name, sep, value = line.partition(":")
        if not sep or not name.strip():
            raise ValueError(f"--header wants 'Name: value', got {line!r}")
        headers[name.strip()] = value.strip()
    return headers


async def negotiate(
    *,
    url: str | None,
    stdio: str | None,
    revision: str | None,
    headers: Mapping[str, str],
    messages: Sequence[Message],
    call_timeout: float,
) -> Negotiated:
    """Open a client to pick the revision (and, over HTTP, the session to share); the
    caller closes ``client`` when the run is over."""
    if url is not None:
        client = Client(
            url,
            revision=revision,
            headers=headers,
            standalone_stream=False,
            timeout=call_timeout,
            batching=True,
        )
    else:
        assert stdio is not None
        client = Client.stdio(stdio, revision=revision, timeout=call_timeout, batching=True)
    await client.open()
    try:
        rev = client.revision
        tool_headers: dict[str, tuple[XHeader, ...]] = {}
        if rev.routing_headers and any(m.method == "tools/call" for m in messages):
            for tool in await client.list_all_tools():
                tool_headers[tool.name] = x_mcp_headers(tool.input_schema)
        transport = client.transport
        session = transport.session_id if isinstance(transport, HttpTransport) else None
        speaker = Speaker(
            revision=rev,
            client_info=dict(client.client_info),
            capabilities=client.capabilities(rev),
            tool_headers=tool_headers,
            url=Url.parse(url) if url is not None else None,
            user_headers=dict(headers),
        )
        return Negotiated(speaker, client, session, bool(client.wire_batches))
    except BaseException:
        await client.close()
        raise
