"""``Context``: what a tool, resource or prompt function sees of the request it serves.

A function gets one by declaring a parameter annotated ``Context`` (jetmcp's, or the official
SDK's / fastmcp's ``Context`` type: any class named ``Context`` is recognized). It is created
per call, only for functions that ask for it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Coroutine, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar, overload

from jetmcp.core.call import LOG_RANK, NULL_SINK, Call, log_wanted
from jetmcp.core.mrtr import RoundCall
from jetmcp.core.request import RequestHeaders
from jetmcp.errors import INTERNAL_ERROR, MISSING_CLIENT_CAPABILITY, McpError
from jetmcp.protocol.meta import META_CLIENT_INFO
from jetmcp.protocol.revisions import Revision
from jetmcp.server.elicitation import (
    ElicitationResult,
    UrlElicitationResult,
    client_modes,
    prepare_form,
    read_answer,
    read_url_answer,
)
from jetmcp.server.sampling import (
    Root,
    SamplingResult,
    read_roots,
    read_sampling_result,
    sampling_messages,
)
from jetmcp.server.sampling import model_preferences as _model_preferences
from jetmcp.server.sdk_context import RequestContextView, SessionView
from jetmcp.server.tasks import TaskCall, related

if TYPE_CHECKING:
    from jetmcp._wire import Frame, Plans
    from jetmcp.core.principal import Principal
    from jetmcp.server.app import Server

T = TypeVar("T")

#: What a planned Context makes its call from: the plans, the request's frame (its one entry
#: is read only then), its exchange and revision. The extension makes such a Context for a
#: 2026-07-28 call it planned (``Plans.run_context``, with the ``Shape`` made with
#: ``context``): as ``object.__new__(Context)`` does, no ``__init__`` run, setting ``_made``
#: (None), ``_plan`` (this), ``_server`` and ``_state`` (None). Its :class:`RoundCall` is
#: made only when something asks for it (:meth:`RoundCall.first`): a tool that just logs
#: below the level the request asked for, or does not touch its Context, needs none; its log
#: level is read from the plans. Keep ``__init__``'s slots and ``Shape``'s in step.
_Plan = tuple["Plans", "Frame", Any, Revision]


def missing_capability(what: str, required: dict[str, Any], detail: str = "") -> McpError:
    """The error for server-to-client work the client (or the revision) does not support:
    -32021 with ``data.requiredCapabilities``, the code 2026-07-28 gives it."""
    message = f"The client does not support {what}"
    return McpError(
        MISSING_CLIENT_CAPABILITY,
        f"{message}: {detail}" if detail else message,
        {"requiredCapabilities": required},
    )


@dataclass(frozen=True, slots=True)
class ResourceContents:
    """One item read by :meth:`Context.read_resource` (the SDK's ``ReadResourceContents``)."""

    content: str | bytes
    mime_type: str | None
    meta: dict[str, Any] | None = None


class Context:
    """The request being served, and the means to talk back to its client.

    Notifications (progress, log messages) go out on the request's own stream; where the
    transport cannot carry them (a plain JSON reply) they are dropped.
    """

    __slots__ = ("_made", "_plan", "_server", "_state")

    def __init__(self, call: Call, server: Server | None = None) -> None:
        self._made: Call | None = call
        #: What :attr:`_call` is made from, while it is not made yet (see :data:`_Plan`).
        self._plan: _Plan | None = None
        self._server = server
        self._state: dict[str, Any] | None = None

    @property
    def _call(self) -> Call:
        call = self._made
        if call is None:
            plan = self._plan
            assert plan is not None and self._server is not None
            plans, frame, ex, revision = plan
            entry = frame.entries[0]
            call = self._made = RoundCall.first(
                self._server._rounds,
                entry.params,  # an object (planned): no params check, no closure made
                entry.raw_id,
                revision,
                ex.call_sink,
                plans,
                ex.auth,
                ex.http_headers,
            )
            self._plan = None
        return call

    def __class_getitem__(cls, item: Any) -> type[Context]:
        # ``Context[ServerSession, None]`` and ``Context[State]`` annotations, as the SDK's.
        return cls

    # -- the official SDK's surface ---------------------------------------------------------

    @property
    def session(self) -> SessionView:
        """The SDK ``ServerSession`` methods (``create_message``, ``elicit``,
        ``list_roots``, ``send_log_message``, ``send_*_list_changed``, ``send_notification``,
        ``client_params``...) for this request's client."""
        return SessionView(self)

    @property
    def request_context(self) -> RequestContextView:
        """The SDK's ``RequestContext``: ``request_id``, ``meta``, ``session``,
        ``lifespan_context``."""
        return RequestContextView(self)

    @property
    def lifespan(self) -> Any:
        """What the server's lifespan yielded (None when it is not running)."""
        return self._server.lifespan_context if self._server is not None else None

    @property
    def fastmcp(self) -> Server:
        """The server (the name 1.x ``FastMCP`` and fastmcp give it)."""
        return self.server

    @property
    def mcp_server(self) -> Server:
        """The server (the name SDK 2.x gives it)."""
        return self.server

    @property
    def client_id(self) -> str | None:
        """``_meta.client_id`` of the request, where the client sent one (the SDK's)."""
        value = self.meta.get("client_id")
        return value if isinstance(value, str) else None

    def _session_state(self) -> dict[str, Any]:
        call = self._call
        server = self._server
        if call.session is None or server is None:
            # Without a session: the call's own state, unless it would be sealed into a
            # 2026-07-28 requestState (input rounds carry only what the handler puts there).
            return self.request_state if not call.revision.mrtr else {}
        return server.session_state(call.session)

    def get_state(self, key: str, default: Any = None) -> Any:
        """fastmcp's per-session state: the value set for ``key`` on this session."""
        return self._session_state().get(key, default)

    def set_state(self, key: str, value: Any) -> None:
        self._session_state()[key] = value

    def delete_state(self, key: str) -> None:
        self._session_state().pop(key, None)

    # -- the request ------------------------------------------------------------------------

    @property
    def call(self) -> Call:
        """The underlying :class:`jetmcp.core.call.Call`."""
        return self._call

    @property
    def server(self) -> Server:
        """The :class:`jetmcp.Server` serving this request."""
        if self._server is None:
            raise RuntimeError("this Context is not bound to a Server")
        return self._server

    @property
    def request_id(self) -> str:
        """The JSON-RPC id of the request, as a string (as the official SDK gives it)."""
        return str(self._call.request_id)

    @property
    def auth(self) -> Principal | None:
        """Who sent the request: the :class:`~jetmcp.auth.Principal` of its bearer token
        (``subject``, ``scopes``, ``client_id``, ``claims``), None when auth is off."""
        return self._call.auth

    @property
    def session_id(self) -> str | None:
        """The session id, or None when the request is not part of a session."""
        session = self._call.session
        return session.id if session is not None else None

    @property
    def headers(self) -> RequestHeaders | None:
        """The headers of the HTTP request this call came in on: a read-only mapping whose
        lookups ignore case (``ctx.headers.get("X-Api-Key")``), decoded only when asked
        for. None when the call did not come over HTTP (stdio), as SDK 2.x's
        ``ctx.headers``. Headers are what the client says: never take one as proof of
        who it is (that is :attr:`auth`)."""
        raw = self._call.http_headers
        return None if raw is None else RequestHeaders(raw)

    @property
    def revision(self) -> Revision:
        """The protocol revision this request is served under."""
        return self._call.revision

    @property
    def protocol_version(self) -> str:
        return self._call.revision.version

    @property
    def meta(self) -> dict[str, Any]:
        """The request's ``params._meta`` (empty when absent)."""
        return self._call.meta if self._call.meta is not None else {}

    @property
    def progress_token(self) -> Any:
        """The request's ``progressToken``, or None when it did not ask for progress."""
        return self._call.progress_token

    @property
    def client_capabilities(self) -> dict[str, Any]:
        """The capabilities the client declared."""
        return self._call.client_capabilities

    @property
    def client_info(self) -> dict[str, Any]:
        """The client's ``clientInfo`` (name, version, ...) from ``initialize`` (from the
        request's ``_meta`` on 2026-07-28); may be empty."""
        call = self._call
        if call.revision.per_request_capabilities:
            info = self.meta.get(META_CLIENT_INFO)
            return info if isinstance(info, dict) else {}
        session = call.session
        return session.client_info if session is not None else {}

    @property
    def client_params(self) -> dict[str, Any]:
        """What the client told the server about itself, shaped like ``initialize`` params:
        ``protocolVersion``, ``capabilities``, ``clientInfo``."""
        return {
            "protocolVersion": self._call.revision.version,
            "capabilities": self.client_capabilities,
            "clientInfo": self.client_info,
        }

    # -- notifications ----------------------------------------------------------------------

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Send ``notifications/progress`` for this request.

        Does nothing when the request carried no ``progressToken``. ``message`` is dropped on
        revisions without progress messages (2024-11-05).
        """
        token = self._call.progress_token
        if token is None:
            return
        params: dict[str, Any] = {"progressToken": token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None and self._call.revision.progress_message:
            params["message"] = message
        call = self._call
        if isinstance(call, TaskCall):
            params["_meta"] = related(call.task.id)
        await self._call.notify("notifications/progress", params)

    async def log(self, level: str, data: Any, *, logger_name: str | None = None) -> None:
        """Send ``notifications/message`` at ``level`` (a syslog level: debug, info, notice,
        warning, error, critical, alert, emergency), unless the client asked for less."""
        if level not in LOG_RANK:
            raise ValueError(f"unknown log level {level!r}")
        call = self._made
        if call is not None:
            if not call.wants_log(level):
                return
        else:
            # A planned Context (see _Plan): the level is read from the plans, and the
            # call made only for a message that goes out.
            plan = self._plan
            assert plan is not None
            floor = plan[0].log_level(0)
            if floor is None or not log_wanted(level, floor):  # None: the request named none
                return
            call = self._call
        params: dict[str, Any] = {"level": level}
        if logger_name is not None:
            params["logger"] = logger_name
        params["data"] = data
        if isinstance(call, TaskCall):
            params["_meta"] = related(call.task.id)
        await call.notify("notifications/message", params)

    # The level methods hand back log()'s coroutine (awaited as one): no coroutine of their
    # own per message.

    def debug(self, data: Any, *, logger_name: str | None = None) -> Coroutine[Any, Any, None]:
        return self.log("debug", data, logger_name=logger_name)

    def info(self, data: Any, *, logger_name: str | None = None) -> Coroutine[Any, Any, None]:
        return self.log("info", data, logger_name=logger_name)

    def warning(self, data: Any, *, logger_name: str | None = None) -> Coroutine[Any, Any, None]:
        return self.log("warning", data, logger_name=logger_name)

    def error(self, data: Any, *, logger_name: str | None = None) -> Coroutine[Any, Any, None]:
        return self.log("error", data, logger_name=logger_name)

    def notice(self, data: Any, *, logger_name: str | None = None) -> Coroutine[Any, Any, None]:
        return self.log("notice", data, logger_name=logger_name)

    def critical(self, data: Any, *, logger_name: str | None = None) -> Coroutine[Any, Any, None]:
        return self.log("critical", data, logger_name=logger_name)

    # -- the server's own features ----------------------------------------------------------

    async def read_resource(self, uri: str) -> list[ResourceContents]:
        """Read one of this server's resources (raises ``McpError`` when there is none)."""
        return await self.server.read_resource_contents(str(uri), self._call)

    async def _session_notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        # This session only: on the request's stream while it has one, else the session's.
        call = self._call
        if call.sink is not NULL_SINK:
            await call.notify(method, params)
        elif call.session is not None and call.session.outbound is not NULL_SINK:
            from jetmcp._wire import encode_notification

            await call.session.outbound.send(
                encode_notification(method, params if params is not None else {})
            )

    async def send_tool_list_changed(self) -> None:
        """Tell this client its tool list changed (fastmcp's name). Changes made with
        ``server.add_tool``/``remove_tool`` while serving are announced to every session
        anyway."""
        await self._session_notify("notifications/tools/list_changed")

    async def send_resource_list_changed(self) -> None:
        await self._session_notify("notifications/resources/list_changed")

    async def send_prompt_list_changed(self) -> None:
        await self._session_notify("notifications/prompts/list_changed")

    async def notify_tools_changed(self) -> None:
        """Tell every session the tool list changed (the official SDK's name)."""
        await self.server.notify_tools_changed()

    async def notify_resources_changed(self) -> None:
        await self.server.notify_resources_changed()

    async def notify_prompts_changed(self) -> None:
        await self.server.notify_prompts_changed()

    async def notify_resource_updated(self, uri: str) -> None:
        """Send ``notifications/resources/updated`` to every session subscribed to ``uri``."""
        await self.server.notify_resource_updated(str(uri))

    # -- tasks ------------------------------------------------------------------------------

    @property
    def task_id(self) -> str | None:
        """The id of the task this call runs as (a task-augmented ``tools/call`` on
        2025-11-25, a task of the 2026-07-28 tasks extension), or None."""
        call = self._call
        if isinstance(call, TaskCall):
            return call.task.id
        if isinstance(call, RoundCall):
            task = getattr(call.inputs, "task", None)
            return task.id if task is not None else None
        return None

    async def start_task(self) -> None:
        """Go on as a task from here (2026-07-28 tasks extension, tools registered with
        ``defer_task=True``): the request is answered with the ``CreateTaskResult`` and the
        rest of the function runs in the background; questions asked before this call were
        MRTR rounds of the request, questions after it wait for ``tasks/update``. Does nothing
        where the call is not a deferred task (legacy revisions, clients without the
        extension: the function just goes on in the request)."""
        call = self._call
        if isinstance(call, RoundCall):
            await call.inputs.start_task()

    @property
    def request_state(self) -> dict[str, Any]:
        """State of this handler that survives its 2026-07-28 input rounds.

        What the handler puts here (JSON values) is sealed into the ``requestState`` of the
        ``InputRequiredResult`` and is back here when the client retries; the first round
        starts empty. It is signed, not encrypted: the client can read it. On legacy
        sessions (one run per request) it is a plain per-call dict."""
        call = self._call
        if isinstance(call, RoundCall):
            return call.inputs.state
        if self._state is None:
            self._state = {}
        return self._state

    @property
    def is_background_task(self) -> bool:
        return isinstance(self._call, TaskCall)

    # -- asking the client ------------------------------------------------------------------

    async def _ask(self, method: str, params: dict[str, Any], key: str | None) -> Any:
        """The client's answer to ``method``: a server-to-client request on a legacy session,
        an input of the current round (or of the task) on 2026-07-28."""
        call = self._call
        if isinstance(call, RoundCall):
            return await call.inputs.ask(key, method, params)
        if call.revision.mrtr:
            raise McpError(
                INTERNAL_ERROR,
                f"Internal error: {method} can only be asked from tools/call, prompts/get or "
                f"resources/read on protocol {call.revision.version}",
            )
        return await self._request(method, params)

    async def gather(self, *questions: Awaitable[Any]) -> list[Any]:
        """Ask several questions at once: ``name, roots = await ctx.gather(ctx.elicit(...),
        ctx.list_roots())``. Answers come back in order.

        On 2026-07-28 every unanswered question goes into the same ``InputRequiredResult``
        (one round instead of one per question); inside a task they wait for ``tasks/update``
        side by side; on a legacy session the requests are sent concurrently."""
        call = self._call
        if isinstance(call, RoundCall):
            return await call.inputs.gather(questions)
        return list(await asyncio.gather(*questions))

    async def _request(self, method: str, params: dict[str, Any]) -> Any:
        call = self._call
        if isinstance(call, TaskCall):
            params["_meta"] = related(call.task.id)
            call.task.wait_for_input()
            try:
                return await call.request(method, params)
            finally:
                call.task.got_input()
        return await call.request(method, params)

    @overload
    async def elicit(
        self, message: str, schema: type[T], *, key: str | None = None
    ) -> ElicitationResult[T]: ...

    @overload
    async def elicit(
        self, message: str, schema: dict[str, Any] | None = None, *, key: str | None = None
    ) -> ElicitationResult[dict[str, Any]]: ...

    @overload
    async def elicit(
        self, message: str, schema: Any, *, key: str | None = None
    ) -> ElicitationResult[Any]: ...

    @overload
    async def elicit(
        self, message: str, *, key: str | None = None, response_type: Any
    ) -> ElicitationResult[Any]: ...

    async def elicit(
        self,
        message: str,
        schema: Any = None,
        *,
        key: str | None = None,
        response_type: Any = None,
    ) -> ElicitationResult[Any]:
        """Ask the user for input with a form (``elicitation/create``, 2025-06-18 on).

        ``schema`` is a pydantic model class (``data`` is an instance), a dict JSON schema of
        primitive properties (sent as is; ``data`` is the dict), a single type such as
        ``str``, ``int``, ``bool``, ``Literal["a", "b"]`` or an Enum (asked as a field
        ``value``; ``data`` is the value), or None (``data`` is ``{}``).

        Returns :class:`AcceptedElicitation` (``.data``), :class:`DeclinedElicitation` or
        :class:`CancelledElicitation`; check ``.action``. Raises ``McpError`` -32021 when the
        revision or the client lacks form elicitation (a tool call then answers with that
        JSON-RPC error unless the tool catches it), ``ValueError`` when an accepted answer
        does not fit the schema, and ``TypeError`` for a schema that cannot be elicited.

        ``key`` names the question in a 2026-07-28 ``InputRequiredResult`` (default:
        ``elicitation-<n>``, its position among the questions of the run; see
        :mod:`jetmcp.core.mrtr`); legacy sessions ignore it.
        """
        if schema is None and response_type is not None:
            schema = response_type  # fastmcp's name for it
        call = self._call
        if not call.revision.elicitation:
            raise missing_capability(
                "elicitation", {"elicitation": {}}, f"protocol {call.revision.version} has none"
            )
        caps = call.client_capabilities
        if not client_modes(caps)[0]:
            # None at all asks for the capability; URL mode only asks for its form mode.
            needed: dict[str, Any] = (
                {"form": {}} if isinstance(caps.get("elicitation"), dict) else {}
            )
            raise missing_capability("form elicitation", {"elicitation": needed})
        form = prepare_form(schema)
        params: dict[str, Any] = {}
        if call.revision.url_elicitation:
            params["mode"] = "form"
        params["message"] = message
        params["requestedSchema"] = form.schema
        answer = await self._ask("elicitation/create", params, key)
        return read_answer(form, answer)

    async def elicit_url(self, message: str, url: str, elicitation_id: str) -> UrlElicitationResult:
        """Send the user to ``url`` (URL-mode elicitation, 2025-11-25, needs the client's
        ``elicitation.url`` capability). The answer only says whether the user agreed to go;
        tell the client when the out-of-band interaction is over with
        :meth:`send_elicitation_complete`."""
        call = self._call
        if not call.revision.url_elicitation:
            raise missing_capability(
                "URL elicitation",
                {"elicitation": {"url": {}}},
                f"protocol {call.revision.version} has none",
            )
        if not client_modes(call.client_capabilities)[1]:
            raise missing_capability("URL elicitation", {"elicitation": {"url": {}}})
        params = {"mode": "url", "message": message, "url": url, "elicitationId": elicitation_id}
        answer = await self._request("elicitation/create", params)
        return read_url_answer(answer)

    async def send_elicitation_complete(self, elicitation_id: str) -> None:
        """``notifications/elicitation/complete``: a URL-mode elicitation finished."""
        if self._call.revision.url_elicitation:
            await self._session_notify(
                "notifications/elicitation/complete", {"elicitationId": elicitation_id}
            )

    #: The official SDK's session method name.
    send_elicit_complete = send_elicitation_complete

    async def sample(
        self,
        messages: str | Sequence[Any],
        *,
        system_prompt: str | None = None,
        max_tokens: int = 512,
        temperature: float | None = None,
        stop_sequences: list[str] | None = None,
        model_preferences: Any = None,
        include_context: str | None = None,
        metadata: dict[str, Any] | None = None,
        tools: list[Any] | None = None,
        tool_choice: Any = None,
        key: str | None = None,
    ) -> SamplingResult:
        """Ask the client's LLM for a message (``sampling/createMessage``).

        ``messages`` is a string (one user message) or a list of strings, ``Message``s or
        dicts with ``role``/``content``. ``model_preferences`` is a model name, a list of
        names (hints) or a ``ModelPreferences`` dict. ``tools``/``tool_choice`` need
        2025-11-25 and the client's ``sampling.tools``. Returns a :class:`SamplingResult`
        (``.text``, ``.content``, ``.model``, ``.stop_reason``). Raises ``McpError`` -32021
        when the client did not declare ``sampling``. ``key``: as for :meth:`elicit`
        (default ``sampling-<n>``).
        """
        call = self._call
        caps = call.client_capabilities.get("sampling")
        if not isinstance(caps, dict):
            raise missing_capability("sampling", {"sampling": {}})
        params: dict[str, Any] = {"messages": sampling_messages(messages, call.revision)}
        preferences = _model_preferences(model_preferences)
        if preferences is not None:
            params["modelPreferences"] = preferences
        if system_prompt is not None:
            params["systemPrompt"] = system_prompt
        if include_context is not None:
            if include_context != "none" and call.revision.sampling_tools and "context" not in caps:
                raise missing_capability("sampling context", {"sampling": {"context": {}}})
            params["includeContext"] = include_context
        if temperature is not None:
            params["temperature"] = temperature
        params["maxTokens"] = max_tokens
        if stop_sequences is not None:
            params["stopSequences"] = stop_sequences
        if metadata is not None:
            params["metadata"] = metadata
        if tools is not None or tool_choice is not None:
            if not call.revision.sampling_tools or "tools" not in caps:
                raise missing_capability("tool use in sampling", {"sampling": {"tools": {}}})
            if tools is not None:
                params["tools"] = [_plain(tool) for tool in tools]
            if tool_choice is not None:
                params["toolChoice"] = _plain(tool_choice)
        answer = await self._ask("sampling/createMessage", params, key)
        return read_sampling_result(answer)

    async def list_roots(self, *, key: str | None = None) -> list[Root]:
        """The client's roots (``roots/list``); raises ``McpError`` -32021 when the client did
        not declare ``roots``. ``key``: as for :meth:`elicit` (default ``roots-<n>``)."""
        if not isinstance(self._call.client_capabilities.get("roots"), dict):
            raise missing_capability("roots", {"roots": {}})
        return read_roots(await self._ask("roots/list", {}, key))

    # -- the transport ----------------------------------------------------------------------

    async def close_sse_stream(self) -> None:
        """Close this request's SSE stream (the client reconnects and resumes: SSE polling,
        2025-11-25). Does nothing where the transport has no such stream."""
        close = getattr(self._call.sink, "close_stream", None)
        if close is not None:
            await close()

    async def close_standalone_sse_stream(self) -> None:
        """Close the session's GET stream, where the transport has one."""
        session = self._call.session
        close = getattr(session.outbound, "close_stream", None) if session is not None else None
        if close is not None:
            await close()


def _plain(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    if dump is not None:
        return dump(mode="json", by_alias=True, exclude_none=True)
    return value


__all__ = ["Context", "ResourceContents"]
