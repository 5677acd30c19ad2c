"""The jetmcp client: one connection to one MCP server, at a revision it picks itself.

Every request, typed call or batch, goes through one path (:meth:`Client._drive`):

1. a *round* sends the pending requests with fresh wire ids: one request alone; several as
   one JSON-RPC array where the revision (or the 2026-07-28 batch extension) allows it, or
   else as concurrent single requests;
2. answers are routed back by wire id only (``_pending``), so ids the caller chose never
   reach the wire and an answer nobody waits for any more is dropped;
3. 2026-07-28 results that ask for input (MRTR) are answered by the caller's handlers and
   retried together in the next round, up to ``max_mrtr_rounds``.

Cancelling the awaiting task (or its timeout) cancels whatever is in flight: legacy
sessions and stdio are sent ``notifications/cancelled``; a 2026-07-28 HTTP request has its
stream closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import re
from collections.abc import (
    Awaitable,
    Callable,
    Iterable,
    Mapping,
    Sequence,
)
from functools import partial
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from jetmcp import _wire
from jetmcp.client.answers import Answers
from jetmcp.client.batch import UNSET as _UNSET
from jetmcp.client.batch import (
    Response,
)
from jetmcp.client.requests import Requests
from jetmcp.client.support import (
    answer_params,
    encode_header_value,
)
from jetmcp.client.support import (
    any_waiting as _any_waiting,
)
from jetmcp.client.support import (
    chunks as _chunks,
)
from jetmcp.client.support import (
    encode_notification as _encode_notification,
)
from jetmcp.client.support import (
    exchange_done as _exchange_done,
)
from jetmcp.client.support import (
    gather_all as _gather_all,
)
from jetmcp.client.support import (
    header_scalar as _header_scalar,
)
from jetmcp.client.support import (
    lost as _lost,
)
from jetmcp.client.support import (
    response as _response,
)
from jetmcp.client.support import (
    retrieve as _retrieve,
)
from jetmcp.client.support import (
    revision_of as _revision_of,
)
from jetmcp.client.support import (
    version as _version,
)
from jetmcp.client.transports import (
    HttpTransport,
    StdioTransport,
    Transport,
    TransportClosed,
    error_from,
)
from jetmcp.client.types import (
    CreateMessageRequestParams,
    DiscoverResult,
    ElicitRequestParams,
    InitializeResult,
    Root,
)
from jetmcp.errors import (
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    METHOD_NOT_FOUND,
    MISSING_CLIENT_CAPABILITY,
    UNSUPPORTED_PROTOCOL_VERSION,
    McpError,
)
from jetmcp.protocol import revisions
from jetmcp.protocol.meta import (
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_PROTOCOL_VERSION,
    META_SERVER_INFO,
)
from jetmcp.protocol.modern import BATCH_EXTENSION, NAME_PARAMS, XHeader, x_mcp_headers
from jetmcp.protocol.revisions import Revision

log = logging.getLogger("jetmcp.client")

T = TypeVar("T", bound=BaseModel)
T2 = TypeVar("T2")

#: Errors that, with a 4xx status, show that an HTTP server speaks 2026-07-28.
_MODERN_ERRORS = frozenset(
    {HEADER_MISMATCH, MISSING_CLIENT_CAPABILITY, UNSUPPORTED_PROTOCOL_VERSION, METHOD_NOT_FOUND}
)
_HEADER_SAFE = re.compile(r"[\x20-\x7e]*")

ElicitationHandler = Callable[[ElicitRequestParams], Any]
SamplingHandler = Callable[[CreateMessageRequestParams], Any]
RootsSource = Iterable[Root | str | Mapping[str, Any]] | Callable[[], Any]
NotificationHandler = Callable[[str, dict[str, Any]], Any]


class Client(Requests, Answers):
    """An MCP client over Streamable HTTP (``Client(url)``) or stdio (:meth:`Client.stdio`).

    ``async with Client(...) as client`` connects and picks the revision: ``server/discover``
    at 2026-07-28 first, else ``initialize`` at the newest legacy revision the server takes.
    ``revision=`` forces one. ``elicitation_handler``, ``sampling_handler`` and ``roots``
    answer what the server asks (server-to-client requests on legacy revisions, MRTR input
    requests on 2026-07-28); the capabilities sent are those of the handlers given.
    ``timeout`` bounds every call (seconds, None for none; wrap a call in ``asyncio.timeout``
    for a shorter bound: either way the requests in flight are cancelled).
    ``batching``: None picks by revision (and checks once that a legacy server really takes
    arrays), False never sends arrays, True sends them wherever the revision allows.
    ``standalone_stream``: on a legacy HTTP session, keep the GET stream open for what the
    server sends outside any request (its requests are answered, notifications handed on).
    """

    def __init__(
        self,
        url: str | Any = None,
        *,
        transport: Transport | None = None,
        revision: str | Revision | None = None,
        elicitation_handler: ElicitationHandler | None = None,
        sampling_handler: SamplingHandler | None = None,
        roots: RootsSource | None = None,
        notification_handler: NotificationHandler | None = None,
        client_info: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = 60.0,
        discover_timeout: float = 10.0,
        max_mrtr_rounds: int = 8,
        batching: bool | None = None,
        batch_probe_timeout: float = 2.0,
        standalone_stream: bool = True,
    ) -> None:
        if (url is None) == (transport is None):
            raise ValueError("give either a URL, a server object or a transport")
        if url is not None and not isinstance(url, str):
            # A server object: talked to in this process (jetmcp.Server, or an SDK server).
            from jetmcp.client.memory import MemoryTransport

            transport, url = MemoryTransport(url), None
        self._transport: Transport = transport or HttpTransport(url or "", headers)
        self._forced = _revision_of(revision) if revision is not None else None
        self.elicitation_handler = elicitation_handler
        self.sampling_handler = sampling_handler
        self.roots = roots
        self.notification_handler = notification_handler
        self.client_info = dict(client_info or {"name": "jetmcp", "version": _version()})
        self.timeout = timeout
        self.discover_timeout = discover_timeout
        if max_mrtr_rounds < 0:
            raise ValueError("max_mrtr_rounds must be at least 0")
        self.max_mrtr_rounds = max_mrtr_rounds
        self._batching = batching
        self.batch_probe_timeout = batch_probe_timeout
        self.standalone_stream = standalone_stream

        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[Response]] = {}
        #: Futures resolved by an id-less error on stdio (the refusal of a whole batch).
        self._orphan_waiters: list[asyncio.Future[McpError]] = []
        self._tasks: set[asyncio.Task[Any]] = set()
        self._revision: Revision | None = None
        self._meta: dict[str, Any] = {}
        self._meta_raw: _wire.RawJSON | None = None
        self._wire_batches: bool | None = None
        self._batch_lock = asyncio.Lock()
        self._renew_lock = asyncio.Lock()
        #: Each listed tool's ``x-mcp-header`` properties (2026-07-28 ``Mcp-Param-*``).
        self._tool_headers: dict[str, tuple[XHeader, ...]] = {}
        self._closed: BaseException | None = None
        self._opened = False
        #: What the server said about itself (``initialize`` or ``server/discover``).
        self.initialize_result: InitializeResult | None = None
        self.discover_result: DiscoverResult | None = None
        #: How many bodies went to the server carrying requests (a wire batch counts once).
        self.writes = 0

    @classmethod
    def stdio(
        cls,
        command: str | Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        **options: Any,
    ) -> Client:
        """A client of the server ``command`` (a shell-like string or an argv list) runs."""
        return cls(transport=StdioTransport(command, env=env, cwd=cwd), **options)

    # ------------------------------------------------------------------ state

    @property
    def revision(self) -> Revision:
        """The revision in use (known once the client is open)."""
        if self._revision is None:
            raise RuntimeError("the client is not open: use `async with client` or open()")
        return self._revision

    @property
    def transport(self) -> Transport:
        return self._transport

    @property
    def server_capabilities(self) -> dict[str, Any]:
        if self.discover_result is not None:
            return self.discover_result.capabilities
        if self.initialize_result is not None:
            return self.initialize_result.capabilities
        return {}

    @property
    def server_info(self) -> dict[str, Any]:
        if self.initialize_result is not None:
            return self.initialize_result.server_info.to_dict()
        if self.discover_result is not None and self.discover_result.meta:
            info = self.discover_result.meta.get(META_SERVER_INFO)
            if isinstance(info, dict):
                return info
        return {}

    @property
    def instructions(self) -> str | None:
        if self.discover_result is not None:
            return self.discover_result.instructions
        if self.initialize_result is not None:
            return self.initialize_result.instructions
        return None

    @property
    def wire_batches(self) -> bool | None:
        """Whether batches go out as one JSON-RPC array (None: not known yet)."""
        rev = self._revision
        if rev is None:
            return None
        if self._batching is False:
            return False
        if rev.batch_extension:
            return self._batch_extension()
        if not rev.batching:
            return False
        return True if self._batching else self._wire_batches

    def capabilities(self, rev: Revision) -> dict[str, Any]:
        """The client capabilities declared at ``rev``: those of the handlers given."""
        caps: dict[str, Any] = {}
        if self.roots is not None:
            caps["roots"] = {"listChanged": True} if rev.sessions else {}
        if self.sampling_handler is not None:
            caps["sampling"] = {}
        if self.elicitation_handler is not None and rev.elicitation:
            caps["elicitation"] = {"form": {}} if rev.elicitation_modes else {}
        return caps

    # ------------------------------------------------------------------ lifecycle

    async def __aenter__(self) -> Client:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def open(self) -> None:
        """Start the transport and pick the revision."""
        if self._opened:
            raise RuntimeError("the client is already open")
        self._opened = True
        transport = self._transport
        transport.deliver = self._deliver
        transport.on_close = self._on_transport_close
        await transport.open()
        try:
            await self._negotiate()
        except BaseException:
            await self.close()
            raise

    async def close(self) -> None:
        """End the session (HTTP: DELETE on legacy revisions; stdio: close stdin, wait,
        terminate) and fail whatever still waits."""
        if self._closed is None:
            self._closed = TransportClosed("the client is closed")
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(BaseException):
                await task
        transport = self._transport
        rev = self._revision
        if isinstance(transport, HttpTransport) and rev is not None and rev.sessions:
            with contextlib.suppress(Exception):
                async with asyncio.timeout(2.0):
                    await transport.delete_session()
        await transport.close()
        self._fail_pending(self._closed)

    def _on_transport_close(self, reason: BaseException) -> None:
        self._closed = reason
        self._fail_pending(reason)

    def _fail_pending(self, reason: BaseException) -> None:
        pending, self._pending = self._pending, {}
        for fut in pending.values():
            if not fut.done():
                fut.set_exception(reason)
                fut.exception()  # retrieved: a waiter may already be gone

    def _spawn(self, coro: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.debug("background task failed", exc_info=task.exception())

    # ------------------------------------------------------------------ negotiation

    async def _negotiate(self) -> None:
        forced = self._forced
        supported: list[str] = []
        if forced is None or not forced.sessions:
            tried: set[str] = set()
            candidate: Revision | None = forced or revisions.MODERN[-1]
            while candidate is not None and candidate.version not in tried:
                tried.add(candidate.version)
                outcome = await self._probe(candidate)
                if outcome is None:
                    return
                supported = outcome
                candidate = next(
                    (r for r in reversed(revisions.MODERN) if r.version in supported), None
                )
            if forced is not None:
                raise McpError(
                    UNSUPPORTED_PROTOCOL_VERSION,
                    f"the server does not speak {forced.version}",
                    {"supported": supported},
                )
        self._transport.set_state(None)
        async with asyncio.timeout(self.timeout):
            await self._initialize(supported)

    def _modern_meta(self, rev: Revision) -> dict[str, Any]:
        return {
            META_PROTOCOL_VERSION: rev.version,
            META_CLIENT_CAPABILITIES: self.capabilities(rev),
            META_CLIENT_INFO: self.client_info,
        }

    async def _probe(self, rev: Revision) -> list[str] | None:
        """``server/discover`` at ``rev``: None when adopted, else the versions the server
        named (empty when it named none): fall back."""
        transport = self._transport
        transport.set_state(rev.version)
        wid = next(self._ids)
        body = _wire.encode_request(
            b"%d" % wid, "server/discover", {"_meta": self._modern_meta(rev)}
        )
        headers = [("Mcp-Method", "server/discover")] if transport.is_http else []
        try:
            async with asyncio.timeout(self.discover_timeout):
                (resp,) = await self._call_wire(body, [wid], headers)
        except TimeoutError:
            return []
        if resp.error is None:
            try:
                discovered = DiscoverResult.model_validate(resp.result)
            except ValidationError:
                return []  # not a discover result: not a server to speak 2026-07-28 with
            if discovered.supported_versions and rev.version not in discovered.supported_versions:
                return discovered.supported_versions
            self._adopt(rev, discover=discovered)
            return None
        error = resp.error
        data = error.data if error.has_data else None
        supported = data.get("supported") if isinstance(data, dict) else None
        if transport.is_http:
            modern = resp.http_status >= 400 and error.code in _MODERN_ERRORS
        else:
            modern = error.code == UNSUPPORTED_PROTOCOL_VERSION
        if not modern:
            return []
        if isinstance(supported, list):
            return [v for v in supported if isinstance(v, str)]
        # A modern server that would not discover: speak the revision without its answer.
        self._adopt(rev)
        return None

    async def _initialize(self, supported: Sequence[str]) -> None:
        forced = self._forced
        if forced is not None:
            order = [forced]
        else:
            order = [r for r in reversed(revisions.LEGACY) if r.version in supported] or list(
                reversed(revisions.LEGACY)
            )
        last: McpError | None = None
        tried: set[str] = set()
        while order:
            rev = order.pop(0)
            tried.add(rev.version)
            params = {
                "protocolVersion": rev.version,
                "capabilities": self.capabilities(rev),
                "clientInfo": self.client_info,
            }
            wid = next(self._ids)
            body = _wire.encode_request(b"%d" % wid, "initialize", params)
            (resp,) = await self._call_wire(body, [wid], ())
            if resp.error is not None:
                last = resp.error
                data = last.data if last.has_data else None
                named = data.get("supported") if isinstance(data, dict) else None
                if isinstance(named, list) and forced is None:
                    mutual = [
                        r
                        for r in reversed(revisions.LEGACY)
                        if r.version in named and r.version not in tried
                    ]
                    if mutual:
                        order = mutual
                continue
            assert resp.result is not None
            result = InitializeResult.model_validate(resp.result)
            chosen = revisions.lookup(result.protocol_version)
            if chosen is None or not chosen.sessions:
                raise McpError(
                    UNSUPPORTED_PROTOCOL_VERSION,
                    f"the server chose protocol version {result.protocol_version!r}, "
                    "which this client does not speak",
                )
            if forced is not None and chosen is not forced:
                raise McpError(
                    UNSUPPORTED_PROTOCOL_VERSION,
                    f"asked for {forced.version}, the server answered {chosen.version}",
                )
            self._adopt(chosen, initialize=result)
            transport = self._transport
            await transport.send(_wire.encode_notification("notifications/initialized"))
            if (
                self.standalone_stream
                and isinstance(transport, HttpTransport)
                and transport.session_id is not None
            ):
                self._spawn(transport.listen())
            return
        assert last is not None
        raise last

    def _adopt(
        self,
        rev: Revision,
        *,
        initialize: InitializeResult | None = None,
        discover: DiscoverResult | None = None,
    ) -> None:
        self._revision = rev
        self.initialize_result = initialize
        self.discover_result = discover
        self._transport.set_state(rev.version)
        if rev.per_request_capabilities:
            self._meta = self._modern_meta(rev)
            self._meta_raw = _wire.RawJSON(_wire.dumps(self._meta))

    def _batch_extension(self) -> bool:
        extensions = self.server_capabilities.get("extensions")
        return isinstance(extensions, dict) and BATCH_EXTENSION in extensions

    def _batch_limit(self) -> int:
        """Most entries per array: the batch extension's ``maxBatch`` when the server says."""
        extensions = self.server_capabilities.get("extensions")
        settings = extensions.get(BATCH_EXTENSION) if isinstance(extensions, dict) else None
        limit = settings.get("maxBatch") if isinstance(settings, dict) else None
        return limit if isinstance(limit, int) and limit > 0 else 1 << 30

    # ------------------------------------------------------------------ wire

    def _params(self, params: dict[str, Any]) -> dict[str, Any] | None:
        """What goes in ``params``: 2026-07-28 adds the per-request ``_meta``."""
        raw = self._meta_raw
        if raw is None:
            return params or None
        user_meta = params.get("_meta")
        if isinstance(user_meta, Mapping) and user_meta:
            return {**params, "_meta": {**user_meta, **self._meta}}
        return {**params, "_meta": raw}

    def _encode(self, wid: int, method: str, params: dict[str, Any]) -> bytes:
        wire_params = self._params(params)
        if wire_params is None:
            return _wire.encode_request(b"%d" % wid, method)
        return _wire.encode_request(b"%d" % wid, method, wire_params)

    def _route_headers(self, method: str, params: Mapping[str, Any]) -> list[tuple[str, str]]:
        """2026-07-28 HTTP single requests: ``Mcp-Method``, ``Mcp-Name``, ``Mcp-Param-*``."""
        headers = [("Mcp-Method", method)]
        key = NAME_PARAMS.get(method)
        if key is not None:
            value = params.get(key)
            if isinstance(value, str):
                headers.append(("Mcp-Name", encode_header_value(value)))
        if method == "tools/call":
            known = self._tool_headers.get(params.get("name"))  # type: ignore[arg-type]
            arguments = params.get("arguments")
            if known and isinstance(arguments, Mapping):
                for _, token, path in known:
                    node: Any = arguments
                    for step in path:
                        node = node.get(step) if isinstance(node, Mapping) else None
                    rendered = None if node is None else _header_scalar(node)
                    if rendered is not None:
                        headers.append((f"Mcp-Param-{token}", rendered))
        return headers

    def _learn_tools(self, result: Mapping[str, Any]) -> None:
        tools = result.get("tools")
        if isinstance(tools, list):
            for tool in tools:
                if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
                    continue
                schema = tool.get("inputSchema")
                self._tool_headers[tool["name"]] = (
                    x_mcp_headers(schema) if isinstance(schema, dict) else ()
                )

    def _deliver(self, entry: _wire.Entry, status: int) -> None:
        """Everything the server sends lands here, from whichever transport."""
        kind = entry.kind
        if kind == _wire.RESPONSE:
            raw = entry.raw_id
            if raw is None:
                if entry.is_error and self._orphan_waiters:
                    error = error_from(entry.result())
                    for waiter in self._orphan_waiters:
                        if not waiter.done():
                            waiter.set_result(error)
                return
            try:
                wid = int(raw)
            except ValueError:
                return  # not an id of ours
            fut = self._pending.pop(wid, None)
            if fut is None or fut.done():
                return  # nobody waits for it any more: dropped
            fut.set_result(_response(entry, status))
        elif kind == _wire.REQUEST:
            self._spawn(self._answer_server(entry))
        elif kind == _wire.NOTIFICATION:
            handler = self.notification_handler
            if handler is not None and entry.method is not None:
                params = entry.params()
                try:
                    outcome = handler(entry.method, params if isinstance(params, dict) else {})
                except Exception:  # the caller's bug must not stop the reader
                    log.exception("the notification handler failed on %s", entry.method)
                    return
                if isinstance(outcome, Awaitable):
                    self._spawn(outcome)

    async def _call_wire(
        self, body: bytes, wids: Sequence[int], headers: Sequence[tuple[str, str]]
    ) -> list[Response]:
        """Send one body carrying the requests ``wids``; their answers, in that order."""
        if self._closed is not None:
            raise self._closed
        loop = asyncio.get_running_loop()
        pending = self._pending
        futs: list[asyncio.Future[Response]] = []
        for wid in wids:
            fut: asyncio.Future[Response] = loop.create_future()
            pending[wid] = fut
            futs.append(fut)
        transport = self._transport
        task: asyncio.Task[None] | None = None
        self.writes += 1
        if not futs:  # only notifications: nothing to wait for but the write itself
            await transport.send(body, headers)
            return []
        try:
            if transport.replies_per_exchange:
                task = asyncio.ensure_future(
                    transport.exchange(body, headers, partial(_any_waiting, futs))
                )
                task.add_done_callback(partial(_exchange_done, futs))
            else:
                await transport.exchange(body, headers)
            if len(futs) == 1:
                return [await futs[0]]
            return list(await asyncio.gather(*futs))
        except asyncio.CancelledError:
            self._abandon(wids, futs, task)
            raise
        finally:
            for wid in wids:
                pending.pop(wid, None)

    def _abandon(
        self,
        wids: Sequence[int],
        futs: Sequence[asyncio.Future[Response]],
        task: asyncio.Task[None] | None,
    ) -> None:
        """Cancel requests nobody waits for any more."""
        if task is not None and not task.done():
            task.cancel()  # closes the reply stream: the 2026-07-28 HTTP cancellation
        # A future cancelled along with its waiter was never answered.
        live = [
            wid for wid, fut in zip(wids, futs, strict=True) if not fut.done() or fut.cancelled()
        ]
        rev = self._revision
        transport = self._transport
        if not live or rev is None or (not rev.sessions and transport.is_http):
            return
        notices = [
            _wire.encode_notification(
                "notifications/cancelled", {"requestId": wid, "reason": "cancelled by the client"}
            )
            for wid in live
        ]
        if isinstance(transport, StdioTransport):
            for notice in notices:
                transport.send_now(notice)
        else:
            for notice in notices:
                self._spawn(transport.send(notice))

    # ------------------------------------------------------------------ rounds

    async def _drive(
        self,
        requests: Sequence[tuple[str, dict[str, Any]]],
        notifications: Sequence[tuple[str, dict[str, Any] | None]] = (),
    ) -> list[Response]:
        """Send ``requests`` (and ``notifications``); one Response per request, in order.
        2026-07-28 ``input_required`` answers are retried in lock-step rounds."""
        rev = self.revision
        notes = [_encode_notification(m, p) for m, p in notifications]
        out: list[Response | None] = [None] * len(requests)
        params = [p for _, p in requests]
        todo = list(range(len(requests)))
        rounds = 0
        renewed = False
        while todo or notes:
            session = self._legacy_session()
            replies = await self._round([(requests[i][0], params[i]) for i in todo], notes)
            notes = []
            again: list[tuple[int, dict[str, Any]]] = []
            expired: list[int] = []
            for i, reply in zip(todo, replies, strict=True):
                if reply.http_status == 404 and session is not None and not renewed:
                    expired.append(i)  # the server ended the session: never served
                    continue
                result = reply.result
                if result is not None and rev.mrtr and result.get("resultType") == "input_required":
                    if rounds >= self.max_mrtr_rounds:
                        out[i] = Response(
                            error=McpError(
                                INTERNAL_ERROR,
                                f"{requests[i][0]} still asked for input after "
                                f"{rounds} rounds (max_mrtr_rounds={self.max_mrtr_rounds})",
                                {"inputRequests": result.get("inputRequests")},
                            ),
                            http_status=reply.http_status,
                        )
                    else:
                        again.append((i, result))
                    continue
                if result is not None and requests[i][0] == "tools/list" and rev.routing_headers:
                    self._learn_tools(result)
                out[i] = reply
            todo = []
            if again:
                rounds += 1
                answers = await asyncio.gather(
                    *(self._answer_inputs(result) for _, result in again),
                    return_exceptions=True,
                )
                for (i, _), answer in zip(again, answers, strict=True):
                    if isinstance(answer, McpError):
                        out[i] = Response(error=answer)
                    elif isinstance(answer, BaseException):
                        raise answer
                    else:
                        params[i] = answer_params(requests[i][1], answer)
                        todo.append(i)
            if expired:
                assert session is not None
                renewed = True
                await self._renew_session(session)
                todo = sorted(todo + expired)
        return [r if r is not None else Response(error=_lost()) for r in out]

    def _legacy_session(self) -> str | None:
        transport = self._transport
        if isinstance(transport, HttpTransport) and self.revision.sessions:
            return transport.session_id
        return None

    async def _renew_session(self, lost: str) -> None:
        """The server no longer knows session ``lost`` (404): initialize a new one at the
        same revision, as the spec asks, unless a concurrent call already did."""
        async with self._renew_lock:
            transport = self._transport
            assert isinstance(transport, HttpTransport)
            if transport.session_id != lost:
                return
            log.info("session %s expired; initializing a new one", lost)
            transport.session_id = None
            transport.set_state(None)
            await self._initialize([self.revision.version])

    async def _answer_inputs(self, result: dict[str, Any]) -> tuple[dict[str, Any], Any]:
        """The ``inputResponses`` for an ``input_required`` result, and its ``requestState``."""
        asked = result.get("inputRequests") or {}
        if not isinstance(asked, dict):
            raise McpError(INTERNAL_ERROR, "inputRequests is not an object")
        keys = list(asked)

        async def one(key: str) -> dict[str, Any]:
            request = asked[key]
            if not isinstance(request, dict) or not isinstance(request.get("method"), str):
                raise McpError(INTERNAL_ERROR, f"input request {key!r} is malformed")
            params = request.get("params")
            try:
                return await self._handle_input(
                    request["method"], params if isinstance(params, dict) else {}
                )
            except McpError:
                raise
            except Exception as exc:
                raise McpError(
                    INTERNAL_ERROR, f"the {request['method']} handler failed: {exc}"
                ) from exc

        answers = await asyncio.gather(*(one(k) for k in keys))
        return dict(zip(keys, answers, strict=True)), result.get("requestState", _UNSET)

    async def _round(
        self, items: list[tuple[str, dict[str, Any]]], notes: list[bytes]
    ) -> list[Response]:
        """One transport write for everything when batches are possible, else concurrent
        single requests (notifications first)."""
        if len(items) == 1 and not notes:
            return [await self._single(*items[0])]
        if len(items) + len(notes) > 1 and await self._can_batch():
            wids = [next(self._ids) for _ in items]
            parts = [*notes]
            parts.extend(self._encode(w, m, p) for w, (m, p) in zip(wids, items, strict=True))
            limit = self._batch_limit()
            if len(parts) <= limit:
                return await self._call_wire(_wire.encode_batch(parts), wids, ())
            # More than the server takes in one array: several arrays, sent together.
            chunks = [
                asyncio.ensure_future(self._call_wire(_wire.encode_batch(part), ids, ()))
                for part, ids in _chunks(parts, len(notes), wids, limit)
            ]
            return [r for replies in await _gather_all(chunks) for r in replies]
        for note in notes:
            await self._transport.send(note, self._note_headers(note))
        if not items:
            return []
        if len(items) == 1:
            return [await self._single(*items[0])]
        return await _gather_all([asyncio.ensure_future(self._single(m, p)) for m, p in items])

    def _note_headers(self, note: bytes) -> list[tuple[str, str]]:
        rev = self._revision
        if rev is None or not rev.routing_headers or not self._transport.is_http:
            return []
        frame = _wire.decode(note)
        method = frame.entries[0].method if frame.entries else None
        return [("Mcp-Method", method)] if method else []

    async def _single(self, method: str, params: dict[str, Any]) -> Response:
        rev = self.revision
        routed = rev.routing_headers and self._transport.is_http
        for attempt in (0, 1):
            wid = next(self._ids)
            headers = self._route_headers(method, params) if routed else ()
            (resp,) = await self._call_wire(self._encode(wid, method, params), [wid], headers)
            error = resp.error
            if (
                attempt == 0
                and routed
                and error is not None
                and error.code == HEADER_MISMATCH
                and method == "tools/call"
            ):
                # The tool may take Mcp-Param-* headers we did not know of: learn, retry once.
                await self._relist_tools()
                continue
            return resp
        return resp

    async def _relist_tools(self) -> None:
        with contextlib.suppress(McpError):
            async for _ in self.iter_tools():
                pass

    async def _can_batch(self) -> bool:
        """:attr:`wire_batches`, checking a legacy server once when it is not known yet."""
        known = self.wire_batches
        if known is not None:
            return known
        async with self._batch_lock:
            if self._wire_batches is None:
                self._wire_batches = await self._probe_batching()
        return self._wire_batches

    async def _probe_batching(self) -> bool:
        """Whether the server really answers a JSON-RPC array: ``[ping]`` must come back.
        Servers that refuse arrays say so with an id-less error or not at all."""
        wid = next(self._ids)
        body = _wire.encode_batch([_wire.encode_request(b"%d" % wid, "ping")])
        refusal: asyncio.Future[McpError] = asyncio.get_running_loop().create_future()
        self._orphan_waiters.append(refusal)
        call = asyncio.ensure_future(self._call_wire(body, [wid], ()))
        either: set[asyncio.Future[Any]] = {call, refusal}
        try:
            async with asyncio.timeout(self.batch_probe_timeout):
                await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        except TimeoutError:
            pass
        finally:
            self._orphan_waiters.remove(refusal)
            refusal.cancel()
            if not call.done():
                call.cancel()  # no answer (or the caller gave up): the ping is cancelled
            call.add_done_callback(_retrieve)
        if call.done() and not call.cancelled() and call.exception() is None:
            return call.result()[0].error is None
        return False

    async def _run(
        self,
        requests: Sequence[tuple[str, dict[str, Any]]],
        notifications: Sequence[tuple[str, dict[str, Any] | None]] = (),
    ) -> list[Response]:
        if self._closed is not None:
            raise self._closed
        async with asyncio.timeout(self.timeout):
            return await self._drive(requests, notifications)


__all__ = ["BATCH_EXTENSION", "Client", "encode_header_value"]
