"""The ``jetmcp`` command: ``jetmcp run [TARGET]`` serves an MCP server (see
:mod:`jetmcp.run.loader` for what TARGET may name)."""

from __future__ import annotations

import argparse
import errno
import json
import logging
import math
import os
import shutil
import socket
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from jetmcp.run import console, envflags, native, rundir
from jetmcp.run.loader import (
    DEBUG_ENV,
    TARGET_ARGV_ENV,
    WORKDIR_ENV,
    LoadError,
    explain,
    find_module,
    load_or_explain,
    split_target,
)
from jetmcp.settings import Settings

#: The exit status of a target that names no server.
EXIT_BAD_TARGET = 2


def _refuse(message: str) -> SystemExit:
    print(f"jetmcp: {message}", file=sys.stderr)
    return SystemExit(EXIT_BAD_TARGET)


def _version() -> str:
    import jetmcp

    return jetmcp.__version__


def _int(value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, not {value!r}") from None


def _float(value: str) -> float:
    try:
        return float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, not {value!r}") from None


def _non_negative(value: str) -> int:
    number = _int(value)
    if number < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {value}")
    return number


def _csv(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def _positive_int(value: str) -> int:
    number = _int(value)
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, not {value}")
    return number


def _seconds(value: str) -> float:
    number = _float(value)
    if not number > 0:
        raise argparse.ArgumentTypeError(f"must be a number of seconds above 0, not {value}")
    return number


def _seconds_or_zero(value: str) -> float:
    number = _float(value)
    if not number >= 0:
        raise argparse.ArgumentTypeError(f"must be 0 or a number of seconds, not {value}")
    return number


def _seconds_upto(high: float, zero: bool) -> Callable[[str], float]:
    def parse(value: str) -> float:  # seconds above 0 (or 0 too, with zero), at most high
        if not (0 <= (number := _float(value)) <= high and (zero or number > 0)):
            least = "0" if zero else "above 0"
            raise argparse.ArgumentTypeError(f"must be {least} and at most {high:g}, not {value}")
        return number

    return parse


def _ms(value: str) -> float:
    if not 0 <= (number := _float(value)) < float("inf"):
        raise argparse.ArgumentTypeError(f"must be 0 or a number of milliseconds, not {value}")
    return number


def _port(value: str) -> int:
    number = _int(value)
    if not 1 <= number <= 65535:
        raise argparse.ArgumentTypeError(f"must be a port number from 1 to 65535, not {value}")
    return number


def _port_or_off(value: str) -> int:
    return 0 if _int(value) == 0 else _port(value)


#: What ``--transport`` takes: ``sse`` is ``http`` (its server serves both HTTP transports).
TRANSPORTS = ("stdio", "http", "sse")

#: The levels ``--log-level`` takes, in any case.
LOG_LEVELS = ("debug", "info", "warning", "error", "critical")


def _log_level(value: str) -> str:
    if value.lower() not in LOG_LEVELS:
        raise argparse.ArgumentTypeError(f"must be one of {', '.join(LOG_LEVELS)}, not {value!r}")
    return value.lower()


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors: what is wrong and where to look, exit status 2 (the
    usage block argparse prints first is left to ``--help``)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def _parser() -> argparse.ArgumentParser:
    defaults = Settings()
    parser = _Parser(prog="jetmcp", description="A fast MCP server.")
    parser.add_argument("--version", action="version", version=f"jetmcp {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    run = sub.add_parser(
        "run",
        help="serve an MCP app over HTTP or stdio",
        usage="jetmcp run [TARGET] [options] [-- ARGS...]",
        epilog="ARGS after -- are the sys.argv[1:] a called TARGET sees "
        "(a console script's main parses its own arguments).",
    )
    run.add_argument(
        "app",
        nargs="?",
        default=defaults.app,
        metavar="TARGET",
        help="module, module:attr, path/to/file.py or file.py:attr (attr may be factory() "
        "or a program's main: the server it runs is served)",
    )

    run.add_argument(
        "--transport",
        choices=TRANSPORTS,
        default="stdio",
        help="stdio (the default, as fastmcp run and mcp run), or http: Streamable HTTP at "
        "--path and the 2024-11-05 HTTP+SSE endpoints at --sse-path (sse: the same)",
    )
    run.add_argument("--host", default=defaults.host)
    run.add_argument("--port", type=_port, default=defaults.port)
    run.add_argument("--path", default=defaults.path, help="the MCP endpoint path")
    run.add_argument("--workers", type=_positive_int, default=defaults.workers)
    run.add_argument(
        "--http",
        choices=("1", "2", "auto"),
        default=defaults.http,
        help="HTTP versions to speak under --server granian: 1 (HTTP/1.1), 2 (h2c), auto (both)",
    )
    native.add_engine_arguments(run, defaults)
    run.add_argument("--stateless", action="store_true", help="mint no sessions")
    run.add_argument(
        "--require-session",
        action="store_true",
        help="answer 400 to session-less requests other than initialize",
    )
    run.add_argument("--max-body-bytes", type=_positive_int, default=defaults.max_body_bytes)
    run.add_argument(
        "--max-stdout-buffer-bytes",
        type=_non_negative,
        default=defaults.max_stdout_buffer_bytes,
        help="stdio: unread reply bytes past which stdin is no longer read",
    )
    run.add_argument("--max-batch", type=_positive_int, default=defaults.max_batch)
    run.add_argument(
        "--no-modern-batch",
        dest="modern_batch",
        action="store_false",
        help="refuse JSON-RPC batches at 2026-07-28 (the io.jetmcp/batch extension)",
    )
    run.add_argument("--max-depth", type=_positive_int, default=defaults.max_depth)
    run.add_argument("--max-sessions", type=_positive_int, default=defaults.max_sessions)
    run.add_argument("--session-idle-seconds", type=_seconds, default=defaults.session_idle_seconds)
    run.add_argument(
        "--max-new-sessions",
        type=_positive_int,
        default=defaults.max_new_sessions,
        help="most sessions that have made no second request yet",
    )
    run.add_argument(
        "--session-protect-seconds",
        type=_seconds_or_zero,
        default=defaults.session_protect_seconds,
        help="a session used this recently is never ended to make room (503 instead)",
    )
    run.add_argument(
        "--max-client-data-bytes",
        type=_positive_int,
        default=defaults.max_client_data_bytes,
        help="most bytes of capabilities + clientInfo a session keeps (-32602 past it)",
    )
    run.add_argument("--allowed-origins", type=_csv, default=[])
    run.add_argument("--allowed-hosts", type=_csv, default=[])
    run.add_argument(
        "--keepalive-seconds",
        type=_seconds_or_zero,
        default=defaults.keepalive_seconds,
        help="idle seconds before an SSE keep-alive comment (0: none)",
    )
    run.add_argument(
        "--event-log-size",
        type=_non_negative,
        default=defaults.event_log_size,
        help="SSE events kept per session for Last-Event-ID replay",
    )
    run.add_argument(
        "--event-log-seconds",
        type=_seconds_or_zero,
        default=defaults.event_log_seconds,
        help="how long each SSE event is kept for replay",
    )
    run.add_argument(
        "--sse-retry-ms",
        type=_non_negative,
        default=defaults.sse_retry_ms,
        help="retry: sent before a stream is closed early (2025-11-25)",
    )
    run.add_argument(
        "--sse-path",
        default=defaults.sse_path,
        help="path of the 2024-11-05 HTTP+SSE event stream ('' turns it off)",
    )
    run.add_argument(
        "--sse-message-path",
        default=defaults.sse_message_path,
        help="path the 2024-11-05 HTTP+SSE clients POST to",
    )
    _add_caps(run, defaults)
    _add_redis(run, defaults)
    _add_auth(run, defaults)
    _add_observability(run, defaults)
    run.add_argument(
        "--log-level",
        type=_log_level,
        default="warning",
        help=f"logs on stderr at this level or above: {', '.join(LOG_LEVELS)}",
    )
    # Every flag above (and any added later) from JETMCP_<FLAG>, shown in --help.
    envflags.apply(run)
    # Parsed by jetmcp.bench.cli (main() hands it the arguments); listed here for --help.
    sub.add_parser("bench", help="load-test any MCP server (HTTP or stdio)", add_help=False)
    check = sub.add_parser(
        "check",
        help="check this install: serve the demo app over stdio and HTTP and call a tool",
        description="Start the demo app (jetmcp.demo:app) with this interpreter's `jetmcp "
        "run`, over stdio and over HTTP on a free loopback port, and call add(1, 2) through "
        "each with the jetmcp client. Exits 0 when both answer 3.",
    )
    check.add_argument(
        "--timeout", type=float, default=60.0, help="seconds each transport may take (60)"
    )
    return parser


def _add_caps(run: argparse.ArgumentParser, defaults: Settings) -> None:
    caps = run.add_argument_group(
        "connection, stream and time caps", "HTTP figures are per Granian worker"
    )
    caps.add_argument(
        "--backlog",
        type=_positive_int,
        default=defaults.backlog,
        help="connections the kernel queues for accepting",
    )
    caps.add_argument(
        "--max-connections",
        type=_positive_int,
        default=defaults.max_connections,
        help="connections a worker serves at once (more wait in the backlog)",
    )
    caps.add_argument(
        "--header-timeout-seconds",
        type=_seconds,
        default=defaults.header_timeout_seconds,
        help="time to send a request's headers; also how long an idle connection is kept",
    )
    caps.add_argument(
        "--body-timeout-seconds",
        type=_seconds_or_zero,
        default=defaults.body_timeout_seconds,
        help="time to send a request's body (408 after it; 0: no limit)",
    )
    native.add_cap_arguments(caps, defaults, _seconds_or_zero, _positive_int)
    caps.add_argument(
        "--max-streams",
        type=_positive_int,
        default=defaults.max_streams,
        help="open GET event streams, all sessions together (more: 503)",
    )
    caps.add_argument(
        "--max-session-streams",
        type=_positive_int,
        default=defaults.max_session_streams,
        help="open GET event streams of one session (more: 409)",
    )
    caps.add_argument(
        "--max-sse-streams",
        type=_positive_int,
        default=defaults.max_sse_streams,
        help="open 2024-11-05 /sse streams (more: 503)",
    )
    caps.add_argument(
        "--sse-handshake-seconds",
        type=_seconds,
        default=defaults.sse_handshake_seconds,
        help="a /sse stream whose client sends no initialize in this time is closed",
    )
    caps.add_argument(
        "--request-timeout-seconds",
        type=_seconds_or_zero,
        default=defaults.request_timeout_seconds,
        help="time a request may wait before it is answered -32001 (0: no limit)",
    )
    caps.add_argument(
        "--max-inflight",
        type=_positive_int,
        default=defaults.max_inflight,
        help="requests waiting at once (more: -32000, HTTP 503)",
    )
    caps.add_argument(
        "--max-session-inflight",
        type=_positive_int,
        default=defaults.max_session_inflight,
        help="requests waiting at once per session or stdio process (more: -32000, HTTP 429)",
    )
    caps.add_argument(
        "--shutdown-grace-seconds",
        type=_seconds_or_zero,
        default=defaults.shutdown_grace_seconds,
        help="time running requests get to finish after SIGTERM or the end of stdin",
    )
    for flag, kind, default, text in (  # synchronous tools: jetmcp.core.threads
        ("threads", _non_negative, defaults.sync_tool_threads, "threads synchronous tools run "
         "in, per worker or stdio process (0: none, they run on the event loop)"),
        ("promote-after", _non_negative, defaults.sync_tool_promote_after, "a synchronous "
         "tool runs inline after N calls in a row as fast as --sync-tool-fast-ms (0: never)"),
        ("fast-ms", _ms, defaults.sync_tool_fast_ms, "milliseconds a synchronous tool's call "
         "may take and count as fast"),
    ):  # fmt: skip
        caps.add_argument(f"--sync-tool-{flag}", type=kind, default=default, help=text)


def _add_redis(run: argparse.ArgumentParser, defaults: Settings) -> None:
    group = run.add_argument_group(
        "shared state", "several workers and hosts: sessions, event logs and tasks in Redis"
    )
    group.add_argument(
        "--redis",
        dest="redis_url",
        metavar="URL",
        default=defaults.redis_url,
        help="redis://host:port/db holding the state every worker and host shares "
        "(default: $JETMCP_REDIS_URL; none: in memory, one worker)",
    )
    group.add_argument(
        "--redis-prefix",
        default=defaults.redis_prefix,
        help="prefix of every Redis key and channel (servers sharing one Redis differ here)",
    )
    group.add_argument(
        "--redis-timeout-seconds",
        type=_seconds,
        default=defaults.redis_timeout_seconds,
        help="time a Redis command may take before the request needing it gets 503",
    )
    group.add_argument(
        "--redis-connections",
        type=_positive_int,
        default=defaults.redis_connections,
        help="connections to Redis per worker",
    )
    for flag, high, what in (
        ("--ready-cache-seconds", 60, "GET /readyz: seconds its verdict on Redis is kept"),
        ("--ready-ping-seconds", 30, "GET /readyz: the most its Redis PING may take"),
    ):
        dest = flag[2:].replace("-", "_")
        kind = _seconds_upto(high, zero=dest == "ready_cache_seconds")
        group.add_argument(flag, type=kind, default=getattr(defaults, dest), help=what)


def _check_shared_state(settings: Settings) -> None:
    """Refuse, before any worker starts, what would serve sessions wrong: several workers
    with sessions in each one's memory, or a Redis that does not answer (exit status 2)."""
    if settings.workers > 1 and not settings.redis_url and not settings.stateless:
        raise _refuse(
            f"--workers {settings.workers} needs state the workers share: with sessions in "
            "each worker's memory a request reaching another worker gets 404. Give "
            "--redis redis://HOST:PORT/DB (or JETMCP_REDIS_URL), or run --stateless"
        )
    if settings.redis_url and not settings.stateless:
        try:
            from jetmcp.state.redis import check_reachable
        except ImportError:
            raise _refuse("--redis needs the redis client: pip install 'jetmcp[redis]'") from None
        why = check_reachable(settings.redis_url, settings.redis_timeout_seconds)
        if why is not None:
            raise _refuse(f"cannot reach Redis at {settings.redis_url}: {why}")
        if not os.environ.get("JETMCP_STATE_KEY"):
            from jetmcp.state.redis import shared_state_key

            # Every host on this Redis and prefix seals requestState with the same key.
            try:
                settings.state_key = shared_state_key(
                    settings.redis_url, settings.redis_prefix, settings.redis_timeout_seconds
                )
            except Exception as exc:
                raise _refuse(f"cannot reach Redis at {settings.redis_url}: {exc}") from None


def _add_auth(run: argparse.ArgumentParser, defaults: Settings) -> None:
    auth = run.add_argument_group(
        "authorization (OAuth 2.1 resource server, HTTP only)",
        "any of --auth-issuer, --auth-jwks-url, --auth-introspection-url turns it on: every "
        "request then needs a bearer token (needs pip install 'jetmcp[auth]' for JWTs)",
    )
    auth.add_argument(
        "--auth-issuer",
        default=defaults.auth_issuer,
        metavar="ISS",
        help="the iss tokens must carry (alone: the JWKS is found in its metadata)",
    )
    auth.add_argument(
        "--auth-jwks-url", default=defaults.auth_jwks_url, metavar="URL", help="the issuer's JWKS"
    )
    auth.add_argument(
        "--auth-audience",
        default=defaults.auth_audience,
        metavar="URL",
        help="this resource's URL, which tokens must name as aud (default: --public-url + "
        "--path, else http://HOST:PORT + --path)",
    )
    auth.add_argument(
        "--public-url",
        default=defaults.public_url,
        metavar="URL",
        help="scheme and host clients reach this server at (behind a proxy)",
    )
    auth.add_argument(
        "--auth-introspection-url",
        default=defaults.auth_introspection_url,
        metavar="URL",
        help="RFC 7662 endpoint for opaque tokens (client credentials from "
        "JETMCP_AUTH_CLIENT_ID / JETMCP_AUTH_CLIENT_SECRET)",
    )
    auth.add_argument(
        "--auth-required-scopes",
        type=_csv,
        default=[],
        metavar="A,B",
        help="scopes every request needs (403 insufficient_scope without them)",
    )
    auth.add_argument(
        "--authorization-server",
        dest="authorization_servers",
        action="append",
        default=[],
        metavar="URL",
        help="an authorization server the metadata lists (repeatable; default: the issuer)",
    )
    auth.add_argument(
        "--auth-algorithms",
        type=_csv,
        default=list(defaults.auth_algorithms),
        metavar="A,B",
        help="JWS algorithms accepted (asymmetric only)",
    )
    auth.add_argument(
        "--auth-leeway-seconds",
        type=_seconds_or_zero,
        default=defaults.auth_leeway_seconds,
        help="clock skew allowed on exp/nbf/iat",
    )
    auth.add_argument(
        "--auth-cache-seconds",
        type=_seconds_or_zero,
        default=defaults.auth_cache_seconds,
        help="how long a verified token is kept, never past its exp (0: verify every request)",
    )
    auth.add_argument(
        "--auth-cache-size",
        type=_positive_int,
        default=defaults.auth_cache_size,
        help="most verified (and, apart, refused) tokens kept",
    )
    auth.add_argument(
        "--auth-jwks-seconds",
        type=_seconds,
        default=defaults.auth_jwks_seconds,
        help="how long the JWKS is kept before it is fetched again",
    )
    auth.add_argument(
        "--auth-jwks-cooldown-seconds",
        type=_seconds_or_zero,
        default=defaults.auth_jwks_cooldown_seconds,
        help="least time between JWKS fetches caused by an unknown kid",
    )


def _add_observability(run: argparse.ArgumentParser, defaults: Settings) -> None:
    watch = run.add_argument_group("observability (HTTP only; all off by default)")
    watch.add_argument(
        "--metrics-port",
        type=_port_or_off,
        default=defaults.metrics_port,
        metavar="PORT",
        help="serve Prometheus metrics at /metrics on this port (pip install 'jetmcp[metrics]')",
    )
    watch.add_argument(
        "--metrics-host",
        default=defaults.metrics_host,
        help="the address --metrics-port listens on",
    )
    watch.add_argument(
        "--metrics-path",
        default=defaults.metrics_path,
        metavar="PATH",
        help="serve Prometheus metrics at this path of the MCP port too",
    )
    watch.add_argument(
        "--otel",
        action="store_true",
        help="OpenTelemetry spans per HTTP request and JSON-RPC request (pip install "
        "'jetmcp[otel]'; an SDK set up by the app exports them)",
    )
    watch.add_argument(
        "--access-log",
        action="store_true",
        help="one JSON line per HTTP request on stderr",
    )


def _settings(ns: argparse.Namespace) -> Settings:
    return Settings(
        app=ns.app,
        host=ns.host,
        port=ns.port,
        path=ns.path,
        workers=ns.workers,
        http=ns.http,
        server=ns.server,
        ssl_certfile=ns.ssl_certfile,
        ssl_keyfile=ns.ssl_keyfile,
        stateless=ns.stateless,
        require_session=ns.require_session,
        max_body_bytes=ns.max_body_bytes,
        max_stdout_buffer_bytes=ns.max_stdout_buffer_bytes,
        max_batch=ns.max_batch,
        modern_batch=ns.modern_batch,
        max_depth=ns.max_depth,
        max_sessions=ns.max_sessions,
        session_idle_seconds=ns.session_idle_seconds,
        max_new_sessions=ns.max_new_sessions,
        session_protect_seconds=ns.session_protect_seconds,
        max_client_data_bytes=ns.max_client_data_bytes,
        allowed_origins=ns.allowed_origins,
        allowed_hosts=ns.allowed_hosts,
        keepalive_seconds=ns.keepalive_seconds,
        event_log_size=ns.event_log_size,
        event_log_seconds=ns.event_log_seconds,
        sse_retry_ms=ns.sse_retry_ms,
        sse_path=ns.sse_path,
        sse_message_path=ns.sse_message_path,
        backlog=ns.backlog,
        max_connections=ns.max_connections,
        header_timeout_seconds=ns.header_timeout_seconds,
        body_timeout_seconds=ns.body_timeout_seconds,
        idle_timeout_seconds=ns.idle_timeout_seconds,
        max_write_buffer_bytes=ns.max_write_buffer_bytes,
        max_streams=ns.max_streams,
        max_session_streams=ns.max_session_streams,
        max_sse_streams=ns.max_sse_streams,
        sse_handshake_seconds=ns.sse_handshake_seconds,
        request_timeout_seconds=ns.request_timeout_seconds,
        max_inflight=ns.max_inflight,
        max_session_inflight=ns.max_session_inflight,
        shutdown_grace_seconds=ns.shutdown_grace_seconds,
        sync_tool_threads=ns.sync_tool_threads,
        sync_tool_promote_after=ns.sync_tool_promote_after,
        sync_tool_fast_ms=ns.sync_tool_fast_ms,
        redis_url=ns.redis_url,
        redis_prefix=ns.redis_prefix,
        redis_timeout_seconds=ns.redis_timeout_seconds,
        redis_connections=ns.redis_connections,
        ready_cache_seconds=ns.ready_cache_seconds,
        ready_ping_seconds=ns.ready_ping_seconds,
        public_url=ns.public_url,
        auth_issuer=ns.auth_issuer,
        auth_audience=ns.auth_audience,
        auth_jwks_url=ns.auth_jwks_url,
        auth_introspection_url=ns.auth_introspection_url,
        auth_required_scopes=ns.auth_required_scopes,
        authorization_servers=ns.authorization_servers,
        auth_algorithms=ns.auth_algorithms,
        auth_leeway_seconds=ns.auth_leeway_seconds,
        auth_cache_seconds=ns.auth_cache_seconds,
        auth_cache_size=ns.auth_cache_size,
        auth_jwks_seconds=ns.auth_jwks_seconds,
        auth_jwks_cooldown_seconds=ns.auth_jwks_cooldown_seconds,
        metrics_port=ns.metrics_port,
        metrics_host=ns.metrics_host,
        metrics_path=ns.metrics_path,
        otel=ns.otel,
        access_log=ns.access_log,
    )


def _check_extras(settings: Settings) -> None:
    """Exit (status 2) when a flag needs an optional dependency that is not installed."""
    try:
        if settings.metrics_port or settings.metrics_path:
            from jetmcp.observe.metrics import require_prometheus

            require_prometheus("--metrics-port/--metrics-path")
        if settings.otel:
            from jetmcp.observe.tracing import require_otel

            require_otel("--otel")
    except ImportError as exc:
        raise _refuse(str(exc)) from None
    if settings.metrics_path and settings.metrics_path in (settings.path, settings.sse_path):
        raise _refuse(f"--metrics-path {settings.metrics_path} is an MCP path")


def _check_target(target: str) -> None:
    """Refuse a target that is plainly not there (a missing file or module, a malformed
    target) before any worker starts (exit status 2). Nothing is imported here: each HTTP
    worker imports the target once, and that import is the check of the rest
    (:mod:`jetmcp.run.rundir`)."""
    try:
        source, _ = split_target(target)
        find_module(source)
    except LoadError as exc:
        raise _refuse(str(exc)) from None


#: Granian's own logs (its default sends them to stdout): stderr, like every jetmcp log, so
#: a host that reads stdout never sees them.
GRANIAN_LOGGING: dict[str, Any] = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "generic": {"()": "logging.Formatter", "fmt": "[%(levelname)s] %(message)s"},
        "access": {"()": "logging.Formatter", "fmt": "%(message)s"},
    },
    "handlers": {
        "console": {
            "formatter": "generic",
            "class": "logging.StreamHandler",
            "stream": "ext://sys.stderr",
        },
        "access": {
            "formatter": "access",
            "class": "logging.StreamHandler",
            "stream": "ext://sys.stderr",
        },
    },
    "loggers": {
        "_granian": {"handlers": ["console"], "level": "INFO", "propagate": False},
        "granian.access": {"handlers": ["access"], "level": "INFO", "propagate": False},
    },
}


def check_port_free(host: str, port: int) -> None:
    """Exit (status 2) when something already listens on ``host:port``.

    Granian's workers share their port with SO_REUSEPORT, which would let a second server
    bind the same port and split the traffic with the first. A socket without that option
    cannot bind next to a listener, so binding one first tells. (Two runs started within the
    same instant can still both pass: the check narrows the window, it cannot close it.)
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    probe = socket.socket(family, socket.SOCK_STREAM)
    try:
        # Connections of an earlier run still in TIME_WAIT do not make the port busy.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind((host, port))
    except OSError as exc:
        reason = exc.strerror or str(exc)
        if exc.errno == errno.EADDRINUSE:
            reason = "address in use (another server listens there; pick another --port)"
        print(f"jetmcp: cannot listen on {host}:{port}: {reason}", file=sys.stderr)
        raise SystemExit(2) from None
    finally:
        probe.close()


def _serve_http(settings: Settings, log_level: str) -> int:
    """Serve with Granian; 1 when a worker died or had to be killed (run/granian_server.py)."""
    from granian.constants import HTTPModes, Interfaces, Loops
    from granian.http import HTTP1Settings
    from granian.log import LogLevels

    from jetmcp.run.granian_server import SupervisedGranian, granian_options

    check_port_free(settings.host, settings.port)  # not "serving" on a port in use
    shared = _run_dir()
    metrics_dir = _start_metrics(settings)
    # The workers' body watch measures pressure against the cap in force.
    settings.max_connections = native.fitted_connections(settings)
    settings.export()
    # Granian resolves its import target against the working directory, and inside a Python
    # package (a folder with __init__.py) it prefixes the package's name to it. The workers
    # start from jetmcp's own parent folder instead and return to the user's (the app and
    # its imports are found from there: jetmcp.run.loader).
    os.environ[WORKDIR_ENV] = os.getcwd()
    os.chdir(Path(__file__).resolve().parents[2])
    granian = SupervisedGranian(
        "jetmcp.run.serving:app_from_env",
        address=settings.host,
        port=settings.port,
        interface=Interfaces.RSGI,
        workers=settings.workers,
        loop=Loops.uvloop,
        http=HTTPModes(settings.http),
        # MCP has no WebSocket transport: an upgrade request is served as plain HTTP.
        websockets=False,
        factory=True,
        log_level=LogLevels(log_level),
        backlog=settings.backlog,
        backpressure=settings.max_connections,
        **native.granian_tls(settings),
        http1_settings=HTTP1Settings(
            header_read_timeout=max(1, round(settings.header_timeout_seconds * 1000)),
            keep_alive=True,
        ),
        # A worker whose event loop is stuck (a synchronous tool that never returns) cannot
        # act on its grace period: it is killed a little after it.
        workers_kill_timeout=math.ceil(settings.shutdown_grace_seconds) + _KILL_AFTER_GRACE,
        log_dictconfig=GRANIAN_LOGGING,
        **granian_options(),
    )
    try:
        granian.serve()
        granian.settle()
        if granian.load_failed:
            return _load_failed(shared, settings.app)
    finally:
        shutil.rmtree(shared, ignore_errors=True)
        if metrics_dir is not None:
            shutil.rmtree(metrics_dir, ignore_errors=True)
    return 1 if granian.unclean else 0


def _serve_native(settings: Settings) -> int:
    """Serve with the native engine (the settings exported): 2 when the target did not load
    (in the only worker, this process: it said why; or in a supervised one)."""
    shared = _run_dir()
    # The --metrics-port server, a thread of this process, adds up the workers' counts.
    metrics_dir = _start_metrics(settings)
    try:
        code = native.serve_native(
            settings, math.ceil(settings.shutdown_grace_seconds) + _KILL_AFTER_GRACE
        )
        return _load_failed(shared, settings.app) if code == EXIT_BAD_TARGET else code
    finally:
        shutil.rmtree(shared, ignore_errors=True)
        if metrics_dir is not None:
            shutil.rmtree(metrics_dir, ignore_errors=True)


def _load_failed(shared: str, target: str) -> int:
    """Say, last (after the workers' shutdown logs), why the target did not load in the
    workers: one line (the traceback too at --log-level debug), however many failed."""
    sys.stderr.write(rundir.load_failure(shared) or f"jetmcp: {target!r} failed to load\n")
    return EXIT_BAD_TARGET


def _run_dir() -> str:
    """The directory the workers settle who says what in (exported to them); the start-up
    line is claimed in advance when the log level hides it."""
    directory = rundir.make_run_dir()
    if not logging.getLogger().isEnabledFor(logging.WARNING):
        rundir.claim(rundir.ANNOUNCED)
    return directory


def _start_metrics(settings: Settings) -> str | None:
    """With metrics on: the directory the workers leave their counts in (exported to
    them), and the ``--metrics-port`` server, a thread of this process that adds them up."""
    if not (settings.metrics_port or settings.metrics_path):
        return None
    import tempfile

    from jetmcp.observe.metrics import METRICS_DIR_ENV, MetricsFiles, serve_port

    directory = tempfile.mkdtemp(prefix="jetmcp-metrics-")
    os.environ[METRICS_DIR_ENV] = directory
    if settings.metrics_port:
        check_port_free(settings.metrics_host, settings.metrics_port)
        serve_port(settings.metrics_port, settings.metrics_host, MetricsFiles(directory))
    return directory


#: Seconds past the grace period after which a worker that has not exited is killed.
_KILL_AFTER_GRACE = 5


def _serve_stdio(settings: Settings) -> int:
    """Serve until stdin ends; 1 when stdout broke (a reply lost) or a tool thread was left."""
    import uvloop

    from jetmcp.core.threads import abandoned_at_exit
    from jetmcp.transports.stdio import serve_stdio

    out_fd = console.keep_stdout()
    try:
        server = load_or_explain(settings.app, "stdio")
    except LoadError as exc:
        explain(exc)
        raise SystemExit(EXIT_BAD_TARGET) from None
    ok = uvloop.run(serve_stdio(server, settings, out_fd))
    return 0 if ok and not abandoned_at_exit("stdio") else 1


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["bench"]:
        from jetmcp.bench.cli import main as bench_main

        return bench_main(args[1:])
    target_args: list[str] = []
    if args[:1] == ["run"] and "--" in args:
        cut = args.index("--")
        args, target_args = args[:cut], args[cut + 1 :]
    try:
        parser = _parser()
    except envflags.EnvError as exc:
        raise _refuse(f"{exc} (from the environment; see jetmcp run --help)") from None
    ns = parser.parse_args(args)
    ns.argv = target_args
    if ns.command == "check":
        from jetmcp.run import selfcheck

        return selfcheck.main(ns.timeout)
    logging.basicConfig(
        stream=sys.stderr,
        level=ns.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    settings = _settings(ns)
    os.environ[TARGET_ARGV_ENV] = json.dumps(ns.argv)
    if ns.log_level == "debug":
        # A target that fails to load shows its traceback (else one line).
        os.environ[DEBUG_ENV] = "1"
    if ns.transport == "stdio":
        if settings.auth_issuer or settings.auth_jwks_url or settings.auth_introspection_url:
            raise _refuse(
                "the --auth-* flags guard HTTP only: stdio has no bearer tokens (the "
                "process that starts the server is trusted)"
            )
        if settings.observed:
            raise _refuse("--metrics-*, --otel and --access-log observe HTTP only")
        return _serve_stdio(settings)
    _check_extras(settings)
    # The app is imported by the worker processes only, once each: this process supervises
    # them, and whatever it imported before they fork would be counted again in each.
    _check_target(settings.app)
    _check_shared_state(settings)
    if settings.ssl_keyfile and not settings.ssl_certfile:
        raise _refuse("--ssl-keyfile needs --ssl-certfile")
    if native.native_wanted(settings):
        check_port_free(settings.host, settings.port)  # not "serving" on a port in use
        settings.max_connections = native.fitted_connections(settings)
        settings.export()
        return _serve_native(settings)
    return _serve_http(settings, ns.log_level)


if __name__ == "__main__":
    sys.exit(main())
