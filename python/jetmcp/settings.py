"""Every limit and switch of a jetmcp server, with safe defaults.

docs/configuration.md's table documents each field; the CLI flags map onto them one to one.
"""

from __future__ import annotations

import json
import os
import secrets
from dataclasses import asdict, dataclass, field, fields
from typing import Any

_ENV = "JETMCP_SETTINGS"

#: Defaults the dispatcher shares with :class:`Settings` (it is also built without one).
REQUEST_TIMEOUT_SECONDS = 300.0
MAX_INFLIGHT = 1024
MAX_SESSION_INFLIGHT = 256
#: Synchronous tools (:mod:`jetmcp.core.threads`): threads of the pool (anyio's default
#: limiter, what the official SDK and fastmcp run them with), consecutive fast calls that
#: promote one to run inline, and the milliseconds a fast call takes at most.
SYNC_TOOL_THREADS = 40
SYNC_TOOL_PROMOTE_AFTER = 20
SYNC_TOOL_FAST_MS = 1.0


def _state_key() -> str:
    return os.environ.get("JETMCP_STATE_KEY") or secrets.token_urlsafe(32)


@dataclass(slots=True)
class Settings:
    """How one jetmcp server runs."""

    #: ``module:attribute`` of the :class:`jetmcp.Server` to serve.
    app: str = "jetmcp.demo:app"
    host: str = "127.0.0.1"
    port: int = 8000
    #: The Streamable HTTP endpoint.
    path: str = "/mcp"
    workers: int = 1
    #: The HTTP server: "native" (jetmcp's own HTTP/1.1 engine on uvloop, the default) or
    #: "granian" (Granian's RSGI server; HTTP/2 too).
    server: str = "native"
    #: TLS (HTTPS) with this certificate chain and private key (PEM files); both or none.
    ssl_certfile: str = ""
    ssl_keyfile: str = ""
    #: HTTP versions Granian speaks: "1" (HTTP/1.1, the fastest), "2" (h2c only) or
    #: "auto" (both, told apart per connection).
    http: str = "1"
    #: Mint no sessions: every request is served on its own, at its header's revision.
    stateless: bool = False
    #: Refuse (400) session-less requests other than ``initialize``.
    require_session: bool = False
    #: Largest request body (HTTP) or line (stdio), in bytes; larger is HTTP 413 / -32600.
    max_body_bytes: int = 4 * 1024 * 1024
    #: stdio: bytes of replies stdout may hold that the client has not read yet; past it no
    #: further line is read from stdin until the client has read it down to a quarter.
    max_stdout_buffer_bytes: int = 1024 * 1024
    #: Most entries in one JSON-RPC batch; more is refused whole with -32600.
    max_batch: int = 256
    #: Batches at 2026-07-28 (the ``io.jetmcp/batch`` extension server/discover advertises);
    #: off, an array at that revision is refused like at 2025-06-18.
    modern_batch: bool = True
    #: Deepest nesting of arrays/objects in a message; deeper is -32700.
    max_depth: int = 100
    #: Most live sessions kept. Past it, room is made by ending the oldest session that
    #: has not made a second request yet, else the least recently used one idle for
    #: ``session_protect_seconds``; when every session is busier than that, the new
    #: ``initialize`` is refused (HTTP 503) instead.
    max_sessions: int = 10_000
    #: Most sessions that have not yet made a second request (a flood of ``initialize``
    #: churns only these, never the established sessions).
    max_new_sessions: int = 1_000
    #: An established session used within this many seconds is never ended to make room.
    session_protect_seconds: float = 60.0
    #: The most a session keeps of what its client sent at ``initialize`` (capabilities and
    #: clientInfo, as JSON bytes); more is refused with -32602.
    max_client_data_bytes: int = 16 * 1024
    #: Seconds a session may sit idle before it is ended.
    session_idle_seconds: float = 3600.0
    #: Extra origins and hosts accepted besides localhost (DNS-rebinding protection).
    allowed_origins: list[str] = field(default_factory=list)
    allowed_hosts: list[str] = field(default_factory=list)
    #: Seconds of silence after which an open SSE stream gets a ``: keep-alive`` comment
    #: (0 turns them off).
    keepalive_seconds: float = 15.0
    #: Per session: most SSE events kept for ``Last-Event-ID`` replay (and messages waiting
    #: for a GET stream), and how many seconds each is kept.
    event_log_size: int = 1000
    event_log_seconds: float = 300.0
    #: The ``retry:`` (milliseconds) sent before the server closes a 2025-11-25 SSE stream
    #: early, when the handler names none.
    sse_retry_ms: int = 1000
    #: The 2024-11-05 HTTP+SSE transport: its event-stream path and its message (POST)
    #: path. An empty ``sse_path`` turns it off.
    sse_path: str = "/sse"
    sse_message_path: str = "/messages"

    # -- connection, stream and time caps (HTTP figures are per Granian worker) ----------
    #: Connections the kernel queues for accepting (Granian's ``backlog``).
    backlog: int = 1024
    #: Connections one worker serves at once (Granian's ``backpressure``); more wait in the
    #: backlog. The open-file limit is raised to its hard limit at start to make room.
    max_connections: int = 4096
    #: Seconds a client has to send a request's headers, which is also how long an idle
    #: keep-alive connection is kept (HTTP/1.1).
    header_timeout_seconds: float = 10.0
    #: Seconds a client has to send a request's body once its headers are in; past it the
    #: request is answered 408 and the connection closed.
    body_timeout_seconds: float = 30.0
    #: Seconds a keep-alive connection may sit idle between requests before it is closed
    #: (native engine); 0: ``header_timeout_seconds``, which is that time under Granian.
    idle_timeout_seconds: float = 0.0
    #: A connection's unsent response bytes above which it is not read until its client
    #: reads (backpressure; native engine).
    max_write_buffer_bytes: int = 256 * 1024
    #: Open GET event streams (Streamable HTTP) per worker, all sessions together; more is
    #: 503 with ``Retry-After``.
    max_streams: int = 1000
    #: Open GET event streams of one session; more is 409 (a GET that resumes a stream
    #: already open replaces it instead).
    max_session_streams: int = 4
    #: Open 2024-11-05 ``/sse`` streams per worker; more is 503 with ``Retry-After``.
    max_sse_streams: int = 1000
    #: A 2024-11-05 ``/sse`` stream whose client has not sent ``initialize`` within this many
    #: seconds is closed.
    sse_handshake_seconds: float = 30.0
    #: Seconds a request that waits may take before it is answered -32001 (0: no limit); a
    #: tool's ``timeout`` overrides it. ``subscriptions/listen`` and ``tasks/result`` wait
    #: by design and have none.
    request_timeout_seconds: float = REQUEST_TIMEOUT_SECONDS
    #: Requests waiting at once per worker (HTTP) or process (stdio); more are answered
    #: -32000 at once (HTTP 503 with ``Retry-After``).
    max_inflight: int = MAX_INFLIGHT
    #: Requests waiting at once per session (and on stdio); more are answered -32000 at
    #: once (HTTP 429 with ``Retry-After``).
    max_session_inflight: int = MAX_SESSION_INFLIGHT
    #: After SIGTERM/SIGINT (HTTP) or the end of stdin (stdio), seconds the requests still
    #: running get to finish; then each is answered -32000 and the server exits. A worker
    #: whose event loop is stuck is killed a few seconds later.
    shutdown_grace_seconds: float = 30.0
    #: Threads per worker (HTTP) or process (stdio) that synchronous tools run in (0: none,
    #: they run on the event loop); a call past its deadline is answered while its thread
    #: runs on, holding its slot until the function returns.
    sync_tool_threads: int = SYNC_TOOL_THREADS
    #: Consecutive calls of a synchronous tool, each at most ``sync_tool_fast_ms``, after
    #: which it runs inline on the event loop (0: never); its first slower call sends it
    #: back to the pool.
    sync_tool_promote_after: int = SYNC_TOOL_PROMOTE_AFTER
    #: Milliseconds a synchronous tool's call may take and count as fast.
    sync_tool_fast_ms: float = SYNC_TOOL_FAST_MS
    #: The key that seals 2026-07-28 ``requestState`` tokens (HMAC-SHA256). By default the
    #: ``JETMCP_STATE_KEY`` environment variable, else one drawn per ``jetmcp run`` that every
    #: Granian worker shares (it travels in the exported settings). Servers on several hosts
    #: must all be given the same one, or a retry that lands elsewhere is refused.
    state_key: str = field(default_factory=_state_key, repr=False)

    # -- the shared store (several workers and hosts) -----------------------------------
    #: ``redis://host:port/db`` (or ``rediss://``, ``unix://``): sessions, event logs,
    #: tasks and subscriptions live there, and any worker of any host serves any request.
    #: Default: the ``JETMCP_REDIS_URL`` environment variable; empty keeps them in memory.
    redis_url: str = field(default_factory=lambda: os.environ.get("JETMCP_REDIS_URL", ""))
    #: Prefix of every key and channel, so several servers can share one Redis.
    redis_prefix: str = "jetmcp:"
    #: Seconds a Redis command (or connecting) may take before the request needing it is
    #: answered 503.
    redis_timeout_seconds: float = 2.0
    #: Connections to Redis per worker; a request that finds none free waits up to
    #: ``redis_timeout_seconds``, then is answered 503.
    redis_connections: int = 64
    #: ``GET /readyz``: seconds a verdict on the shared state (a Redis ``PING``) is kept, so
    #: probes from many places cost at most one ``PING`` per worker per period (0 to 60).
    ready_cache_seconds: float = 1.0
    #: ``GET /readyz``: the most its Redis ``PING`` may take (less when
    #: ``redis_timeout_seconds`` is less); slower is "unavailable" (above 0, at most 30).
    ready_ping_seconds: float = 1.0
    # -- OAuth 2.1 resource server (off unless a verifier is configured) -----------------
    #: The server's public base URL (scheme and host, as clients reach it through a proxy):
    #: the default audience is this plus ``path``.
    public_url: str = ""
    #: The ``iss`` tokens must carry; alone, its metadata names the JWKS.
    auth_issuer: str = ""
    #: This resource's URL: the ``aud`` tokens must name (RFC 8707). Default: ``public_url``
    #: + ``path``, else ``http://host:port`` + ``path``.
    auth_audience: str = ""
    #: Where the issuer's signing keys are (JWT access tokens).
    auth_jwks_url: str = ""
    #: RFC 7662 introspection endpoint (opaque access tokens); the client credentials come
    #: from ``JETMCP_AUTH_CLIENT_ID``/``JETMCP_AUTH_CLIENT_SECRET``.
    auth_introspection_url: str = ""
    #: Scopes every request's token must carry (403 ``insufficient_scope`` without them).
    auth_required_scopes: list[str] = field(default_factory=list)
    #: The authorization servers the protected resource metadata lists (default: the issuer).
    authorization_servers: list[str] = field(default_factory=list)
    #: JWS algorithms accepted (asymmetric only).
    auth_algorithms: list[str] = field(
        default_factory=lambda: [
            "RS256",
            "RS384",
            "RS512",
            "PS256",
            "PS384",
            "PS512",
            "ES256",
            "ES384",
            "ES512",
            "EdDSA",
        ]
    )
    #: Clock skew allowed on ``exp``/``nbf``/``iat``, in seconds.
    auth_leeway_seconds: float = 60.0
    #: How long a verified token is kept (never past its ``exp``; 0: verify every request).
    auth_cache_seconds: float = 300.0
    #: Most verified (and, apart, refused) tokens kept.
    auth_cache_size: int = 10_000
    #: How long the JWKS is kept before it is fetched again.
    auth_jwks_seconds: float = 3600.0
    #: The least time between two JWKS fetches caused by tokens naming an unknown ``kid``.
    auth_jwks_cooldown_seconds: float = 10.0

    # -- observability (all off by default) --------------------------------------------------
    #: Serve Prometheus metrics on this port (0: not), from the ``jetmcp run`` process.
    metrics_port: int = 0
    #: The address the metrics port listens on.
    metrics_host: str = "127.0.0.1"
    #: Serve Prometheus metrics at this path of the MCP port too ("": not).
    metrics_path: str = ""
    #: OpenTelemetry spans per HTTP request and per JSON-RPC request (needs an SDK set up
    #: by the application to go anywhere).
    otel: bool = False
    #: One JSON line per HTTP request on the ``jetmcp.access`` logger (stderr).
    access_log: bool = False

    @property
    def observed(self) -> bool:
        """Whether any observer is on (the HTTP app is then :mod:`jetmcp.observe.app`'s)."""
        return bool(self.metrics_port or self.metrics_path or self.otel or self.access_log)

    def to_env(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_env(cls) -> Settings:
        raw = os.environ.get(_ENV)
        if not raw:
            return cls()
        data: dict[str, Any] = json.loads(raw)
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    def export(self) -> None:
        """Put these settings where Granian's worker processes will find them."""
        os.environ[_ENV] = self.to_env()
