"""Server features of the legacy revisions (2024-11-05 .. 2025-11-25) through the shared
dispatcher, in process: completion, logging levels, cancellation, pagination, subscriptions
and list-changed notifications, server-to-client requests (elicitation, sampling, roots),
tasks, and the shaping of all of it to the negotiated revision.

A :class:`Peer` plays one client: it feeds frames to :meth:`Dispatcher.start` exactly as a
transport does (``_wire.decode``), collects what the server sends on the request's stream and
on the session's own channel, and answers server-to-client requests with RESPONSE frames.
One stdio end-to-end test runs ``tests/apps/server_features.py`` in a real process.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import queue
import subprocess
import tempfile
import threading
from enum import Enum
from pathlib import Path
from typing import Any, Literal

import orjson
import pytest
from mcp_types import _v2025_11_25 as v11
from pydantic import BaseModel

from harness.inprocess import ListSink, async_test, text, until
from harness.servers import READ_TIMEOUT, jetmcp_command, server_env, stop_process
from jetmcp import _wire
from jetmcp.core.call import NULL_SINK, Session
from jetmcp.core.dispatch import Dispatcher
from jetmcp.core.exchange import Exchange
from jetmcp.core.inflight import InFlight
from jetmcp.core.reply import Reply
from jetmcp.demo.conformance import JSON_SCHEMA_2020_12
from jetmcp.errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    MISSING_CLIENT_CAPABILITY,
    REQUEST_CANCELLED,
    URL_ELICITATION_REQUIRED,
    McpError,
)
from jetmcp.protocol.revisions import HTTP_DEFAULT, REVISIONS, Revision
from jetmcp.server import Context, Server
from jetmcp.server.completion import (
    Completion,
    CompletionArgument,
    CompletionContext,
    PromptReference,
    ResourceTemplateReference,
)
from jetmcp.server.elicitation import (
    AcceptedElicitation,
    AcceptedUrlElicitation,
    CancelledElicitation,
    DeclinedElicitation,
    UrlElicitation,
    UrlElicitationRequired,
)
from jetmcp.server.tasks import RELATED_TASK

ROOT = Path(__file__).resolve().parents[2]
LATEST = "2025-11-25"
ALL_CAPS: dict[str, Any] = {
    "elicitation": {"form": {}, "url": {}},
    "sampling": {"tools": {}, "context": {}},
    "roots": {"listChanged": True},
}


class ClosableSink(ListSink):
    def __init__(self) -> None:
        super().__init__()
        self.closed = 0

    async def close_stream(self) -> None:
        self.closed += 1


class Peer:
    """One client of an in-process server."""

    _ids = itertools.count(1)

    def __init__(
        self,
        server: Server,
        dispatcher: Dispatcher | None = None,
        *,
        answer_cancelled: bool = False,
    ) -> None:
        self.server = server
        self.dispatcher = dispatcher or Dispatcher(server)
        #: The stream of every request (SSE response / stdout).
        self.stream = ListSink()
        #: The session's own channel (GET stream / stdout).
        self.outbound = ListSink()
        self.inflight = InFlight()
        self.session: Session | None = None
        self.revision: Revision = HTTP_DEFAULT
        self.answer_cancelled = answer_cancelled

    def start(self, message: dict[str, Any], sink: Any = None) -> Any:
        ex = Exchange(
            self.revision,
            self.session,
            self.stream if sink is None else sink,
            self.inflight,
            answer_cancelled=self.answer_cancelled,
        )
        reply = self.dispatcher.start(_wire.decode(orjson.dumps(message)), ex)
        if isinstance(reply, Reply) and reply.session is not None:
            self.session = reply.session
            self.revision = ex.revision
            self.session.outbound = self.outbound
        return reply

    async def send(
        self, method: str, params: dict[str, Any] | None = None, *, id: Any = None, sink: Any = None
    ) -> dict[str, Any] | None:
        message: dict[str, Any] = {
            "jsonrpc": "2.0",
            "id": next(self._ids) if id is None else id,
            "method": method,
        }
        if params is not None:
            message["params"] = params
        reply = self.start(message, sink)
        if reply is not None and not isinstance(reply, bytes):
            reply = await reply
        return None if reply is None else orjson.loads(bytes(reply))

    def spawn(
        self, method: str, params: dict[str, Any] | None = None, **kw: Any
    ) -> asyncio.Task[dict[str, Any] | None]:
        return asyncio.ensure_future(self.send(method, params, **kw))

    async def call(self, method: str, params: dict[str, Any] | None = None, **kw: Any) -> Any:
        reply = await self.send(method, params, **kw)
        assert reply is not None and "result" in reply, reply
        return reply["result"]

    async def error(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        reply = await self.send(method, params)
        assert reply is not None and "error" in reply, reply
        error: dict[str, Any] = reply["error"]
        return error

    async def tool(self, name: str, arguments: dict[str, Any] | None = None, **extra: Any) -> Any:
        params: dict[str, Any] = {"name": name, **extra}
        if arguments is not None:
            params["arguments"] = arguments
        return await self.call("tools/call", params)

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        assert self.start(message) is None

    def answer(self, request: dict[str, Any], result: Any = None, error: Any = None) -> None:
        """Answer a server-to-client request as the client would."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request["id"]}
        if error is not None:
            message["error"] = error
        else:
            message["result"] = result
        assert self.start(message) is None

    async def initialize(
        self, version: str = LATEST, capabilities: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        result: dict[str, Any] = await self.call(
            "initialize",
            {
                "protocolVersion": version,
                "capabilities": capabilities or {},
                "clientInfo": {"name": "features-test", "version": "0"},
            },
        )
        assert result["protocolVersion"] == version
        self.notify("notifications/initialized")
        return result


# --------------------------------------------------------------------------- completion


def _completion_server() -> Server:
    server = Server("s")

    @server.prompt()
    def code_review(language: str, style: str = "strict") -> str:
        return f"review {language} {style}"

    @server.resource("repo://{owner}/{name}")
    def repo(owner: str, name: str) -> str:
        return f"{owner}/{name}"

    return server


def _complete(kind: str, key: str, name: str, value: str, **extra: Any) -> dict[str, Any]:
    ref = {"type": kind, ("name" if kind == "ref/prompt" else "uri"): key}
    return {"ref": ref, "argument": {"name": name, "value": value}, **extra}


@async_test
async def test_completion_without_a_handler_is_empty() -> None:
    peer = Peer(_completion_server())
    await peer.initialize()
    result = await peer.call(
        "completion/complete", _complete("ref/prompt", "code_review", "language", "py")
    )
    assert result == {"completion": {"values": []}}
    v11.CompleteResult.model_validate(result)


@async_test
async def test_completion_handler_refs_values_and_context() -> None:
    server = _completion_server()
    seen: list[tuple[Any, Any, Any]] = []

    @server.completion()
    async def complete(
        ref: PromptReference | ResourceTemplateReference,
        argument: CompletionArgument,
        context: CompletionContext | None,
    ) -> Any:
        seen.append((ref, argument, context))
        if isinstance(ref, PromptReference) and argument.name == "language":
            return [v for v in ("python", "perl", "go") if v.startswith(argument.value)]
        if isinstance(ref, ResourceTemplateReference) and argument.name == "name":
            owner = context.arguments.get("owner") if context else None
            return Completion([f"{owner}-repo"], total=9, has_more=True)
        if argument.name == "many":
            return [str(i) for i in range(150)]
        return None

    peer = Peer(server)
    await peer.initialize()
    result = await peer.call(
        "completion/complete", _complete("ref/prompt", "code_review", "language", "p")
    )
    assert result == {"completion": {"values": ["python", "perl"]}}
    with_context = _complete(
        "ref/resource", "repo://{owner}/{name}", "name", "", context={"arguments": {"owner": "me"}}
    )
    result = await peer.call("completion/complete", with_context)
    assert result == {"completion": {"values": ["me-repo"], "total": 9, "hasMore": True}}
    assert seen[1][0] == ResourceTemplateReference("repo://{owner}/{name}")
    assert seen[1][2] == CompletionContext({"owner": "me"})
    many = await peer.call(
        "completion/complete", _complete("ref/prompt", "code_review", "many", "")
    )
    assert len(many["completion"]["values"]) == 100
    assert many["completion"]["total"] == 150
    assert many["completion"]["hasMore"] is True
    v11.CompleteResult.model_validate(many)
    none = await peer.call(
        "completion/complete", _complete("ref/prompt", "code_review", "style", "")
    )
    assert none == {"completion": {"values": []}}

    # ``context`` arrived with 2025-06-18: an older client's stray context is not passed on.
    old = Peer(server)
    await old.initialize("2025-03-26")
    await old.call("completion/complete", with_context)
    assert seen[-1][2] is None


@async_test
async def test_completion_errors() -> None:
    server = _completion_server()

    @server.completion()
    def complete(ref: Any, argument: Any, context: Any) -> list[str]:
        raise RuntimeError("boom")

    peer = Peer(server)
    await peer.initialize()
    unknown = await peer.error(
        "completion/complete", _complete("ref/prompt", "nope", "language", "")
    )
    assert unknown["code"] == INVALID_PARAMS
    unknown_uri = await peer.error(
        "completion/complete", _complete("ref/resource", "x://{y}", "y", "")
    )
    assert unknown_uri["code"] == INVALID_PARAMS
    for bad in (
        {"argument": {"name": "a", "value": ""}},
        {"ref": {"type": "ref/other"}, "argument": {"name": "a", "value": ""}},
        {"ref": {"type": "ref/prompt", "name": "code_review"}},
        {"ref": {"type": "ref/prompt", "name": "code_review"}, "argument": {"name": 1}},
    ):
        assert (await peer.error("completion/complete", bad))["code"] == INVALID_PARAMS
    failed = await peer.error(
        "completion/complete", _complete("ref/prompt", "code_review", "language", "")
    )
    assert failed["code"] == INTERNAL_ERROR


@pytest.mark.parametrize("revision", REVISIONS, ids=lambda r: r.version)
@async_test
async def test_capabilities_by_revision(revision: Revision) -> None:
    peer = Peer(_completion_server())
    caps = (await peer.initialize(revision.version))["capabilities"]
    assert ("completions" in caps) is revision.completions_capability
    assert caps["resources"] == {"subscribe": True, "listChanged": True}
    assert caps["tools"] == {"listChanged": True}
    assert caps["prompts"] == {"listChanged": True}
    assert caps["logging"] == {}
    if revision.tasks:
        assert caps["tasks"] == {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
        v11.ServerCapabilities.model_validate(caps)
    else:
        assert "tasks" not in caps


# --------------------------------------------------------------------------- logging


def _logging_server() -> Server:
    server = Server("s")

    @server.tool()
    async def chatty(ctx: Context) -> str:
        await ctx.debug("d")
        await ctx.info("i")
        await ctx.notice("n")
        await ctx.warning("w")
        await ctx.error("e")
        await ctx.critical("c")
        return "ok"

    return server


@async_test
async def test_set_level_filters_log_messages() -> None:
    peer = Peer(_logging_server())
    await peer.initialize()
    await peer.tool("chatty")
    levels = [m["params"]["level"] for m in peer.stream.messages]
    assert levels == ["debug", "info", "notice", "warning", "error", "critical"]

    assert await peer.call("logging/setLevel", {"level": "warning"}) == {}
    peer.stream.messages.clear()
    await peer.tool("chatty")
    assert [m["params"] for m in peer.stream.messages] == [
        {"level": "warning", "data": "w"},
        {"level": "error", "data": "e"},
        {"level": "critical", "data": "c"},
    ]
    assert (await peer.error("logging/setLevel", {"level": "loud"}))["code"] == INVALID_PARAMS
    await peer.call("logging/setLevel", {"level": "emergency"})
    peer.stream.messages.clear()
    await peer.tool("chatty")
    assert peer.stream.messages == []


# --------------------------------------------------------------------------- cancellation


def _slow_server(notes: list[str]) -> Server:
    server = Server("s")

    @server.tool()
    async def slow(ctx: Context) -> str:
        await ctx.report_progress(1, 2)
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            notes.append("cancelled")
            raise
        notes.append("finished")
        await ctx.report_progress(2, 2)
        return "done"

    return server


@pytest.mark.parametrize("answer_cancelled", [False, True], ids=["stdio", "http"])
@async_test
async def test_cancelled_notification_cancels_the_handler(answer_cancelled: bool) -> None:
    notes: list[str] = []
    peer = Peer(_slow_server(notes), answer_cancelled=answer_cancelled)
    await peer.initialize()
    call = peer.spawn("tools/call", {"name": "slow", "_meta": {"progressToken": "p"}}, id=41)
    await until(lambda: len(peer.stream.messages) == 1)
    peer.notify("notifications/cancelled", {"requestId": 41, "reason": "changed my mind"})
    reply = await call
    assert notes == ["cancelled"]
    if answer_cancelled:
        assert reply is not None and reply["error"]["code"] == REQUEST_CANCELLED
    else:
        assert reply is None  # stdio: nothing at all is sent for a cancelled request
    await asyncio.sleep(0.02)
    assert peer.stream.methods() == ["notifications/progress"]
    assert not peer.inflight.running


@async_test
async def test_cancelling_a_call_waiting_for_the_client_drops_its_request() -> None:
    server = Server("s")
    notes: list[str] = []

    @server.tool()
    async def ask(ctx: Context) -> str:
        try:
            await ctx.elicit("name?", str)
        except asyncio.CancelledError:
            notes.append("cancelled")
            raise
        return "unreachable"

    peer = Peer(server)
    await peer.initialize(capabilities={"elicitation": {}})
    call = peer.spawn("tools/call", {"name": "ask"}, id="c1")
    await peer.stream.request("elicitation/create")
    assert len(peer.session.outgoing) == 1
    peer.notify("notifications/cancelled", {"requestId": "c1"})
    assert await call is None
    assert notes == ["cancelled"]
    assert len(peer.session.outgoing) == 0


# --------------------------------------------------------------------------- pagination


@async_test
async def test_every_list_paginates() -> None:
    server = Server("s", page_size=2)
    for i in range(5):
        server.add_tool(lambda i=i: str(i), name=f"t{i}", task_support="optional")
        server.add_resource(lambda i=i: str(i), f"mem://r{i}", name=f"r{i}")
        server.add_resource(lambda id, i=i: str(i), f"mem://t{i}/{{id}}", name=f"t{i}")
        server.add_prompt(lambda i=i: str(i), name=f"p{i}")
    peer = Peer(server)
    await peer.initialize()
    for i in range(5):
        await peer.tool(f"t{i}", task={})

    async def collect(method: str, field: str, key: str) -> list[str]:
        seen: list[str] = []
        params: dict[str, Any] = {}
        pages = 0
        while True:
            page = await peer.call(method, params)
            pages += 1
            assert len(page[field]) <= 2
            seen += [item[key] for item in page[field]]
            if "nextCursor" not in page:
                assert pages == 3
                return seen
            params = {"cursor": page["nextCursor"]}

    assert await collect("tools/list", "tools", "name") == [f"t{i}" for i in range(5)]
    assert await collect("resources/list", "resources", "uri") == [f"mem://r{i}" for i in range(5)]
    assert await collect("resources/templates/list", "resourceTemplates", "name") == [
        f"t{i}" for i in range(5)
    ]
    assert await collect("prompts/list", "prompts", "name") == [f"p{i}" for i in range(5)]
    assert len(set(await collect("tasks/list", "tasks", "taskId"))) == 5
    for method in ("tools/list", "tasks/list", "prompts/list"):
        assert (await peer.error(method, {"cursor": "%%"}))["code"] == INVALID_PARAMS


# --------------------------------------------------------------------------- subscriptions


@async_test
async def test_subscribe_unsubscribe_and_resource_updated() -> None:
    server = Server("s")
    server.add_resource(lambda: "v", "mem://watched", name="watched")
    first, second = Peer(server), Peer(server)
    await first.initialize("2024-11-05")
    await second.initialize()
    assert await first.call("resources/subscribe", {"uri": "mem://watched"}) == {}
    assert first.session is not None and first.session.subscriptions == {"mem://watched"}
    assert (await first.error("resources/subscribe", {}))["code"] == INVALID_PARAMS

    await server.notify_resource_updated("mem://watched")
    await server.notify_resource_updated("mem://other")
    assert first.outbound.messages == [
        {
            "jsonrpc": "2.0",
            "method": "notifications/resources/updated",
            "params": {"uri": "mem://watched"},
        }
    ]
    assert second.outbound.messages == []

    assert await first.call("resources/unsubscribe", {"uri": "mem://watched"}) == {}
    await server.notify_resource_updated("mem://watched")
    assert len(first.outbound.messages) == 1


@async_test
async def test_context_notifies_resource_updates() -> None:
    server = Server("s")

    @server.tool()
    async def touch(uri: str, ctx: Context) -> str:
        await ctx.notify_resource_updated(uri)
        return "ok"

    peer = Peer(server)
    await peer.initialize()
    await peer.call("resources/subscribe", {"uri": "mem://a"})
    await peer.tool("touch", {"uri": "mem://a"})
    assert peer.outbound.methods() == ["notifications/resources/updated"]


@async_test
async def test_list_changed_goes_to_every_initialized_session() -> None:
    server = Server("s")

    @server.tool()
    def grow(name: str) -> str:
        server.add_tool(lambda: name, name=name)
        return "added"

    @server.tool()
    def shrink(name: str) -> str:
        server.remove_tool(name)
        server.add_prompt(lambda: "p", name=f"{name}_prompt")
        server.add_resource(lambda: "r", f"mem://{name}", name=name)
        return "removed"

    first, second = Peer(server), Peer(server)
    await first.initialize()
    await second.initialize("2025-03-26")
    pending = Peer(server)  # initialize answered, but no notifications/initialized yet
    await pending.call(
        "initialize", {"protocolVersion": LATEST, "capabilities": {}, "clientInfo": {}}
    )
    await first.tool("grow", {"name": "extra"})
    await until(lambda: len(second.outbound.messages) == 1)
    for peer in (first, second):
        assert peer.outbound.messages == [
            {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
        ]
    await first.tool("shrink", {"name": "extra"})
    await until(lambda: len(second.outbound.messages) == 4)
    assert second.outbound.methods()[1:] == [
        "notifications/tools/list_changed",
        "notifications/prompts/list_changed",
        "notifications/resources/list_changed",
    ]
    assert pending.outbound.messages == []

    await server.notify_tools_changed()
    await server.notify_prompts_changed()
    await server.notify_resources_changed()
    assert first.outbound.methods()[4:] == [
        "notifications/tools/list_changed",
        "notifications/prompts/list_changed",
        "notifications/resources/list_changed",
    ]


def test_registry_changes_without_a_loop_or_sessions_send_nothing() -> None:
    server = Server("s")
    session = Session("x", HTTP_DEFAULT)
    session.initialized = True
    server.sessions.add(session)
    server.add_tool(lambda: "x", name="x")  # no running loop: nothing scheduled
    assert not server._sending
    assert list(server.sessions) == [session]


@async_test
async def test_context_list_changed_goes_to_this_session_only() -> None:
    server = Server("s")

    @server.tool()
    async def announce(ctx: Context) -> str:
        await ctx.send_tool_list_changed()
        await ctx.send_resource_list_changed()
        await ctx.send_prompt_list_changed()
        return "ok"

    @server.tool()
    async def broadcast(ctx: Context) -> str:
        await ctx.notify_tools_changed()
        return "ok"

    first, second = Peer(server), Peer(server)
    await first.initialize()
    await second.initialize()
    await first.tool("announce")
    assert first.stream.methods() == [
        "notifications/tools/list_changed",
        "notifications/resources/list_changed",
        "notifications/prompts/list_changed",
    ]
    assert second.stream.messages == [] and second.outbound.messages == []
    await first.tool("broadcast")
    assert second.outbound.methods() == ["notifications/tools/list_changed"]
    # Without a request stream (a plain JSON reply) the session's channel carries it.
    await first.call("tools/call", {"name": "announce"}, sink=NULL_SINK)
    assert first.outbound.methods()[-3:] == [
        "notifications/tools/list_changed",
        "notifications/resources/list_changed",
        "notifications/prompts/list_changed",
    ]


# --------------------------------------------------------------------------- elicitation


class Person(BaseModel):
    name: str
    age: int | None = None
    member: bool = False


class Color(Enum):
    RED = "red"
    BLUE = "blue"


def _elicit_server() -> Server:
    # The answers a tool cannot use fail it with their own text (nothing masked).
    server = Server("s", mask_error_details=False)

    @server.tool()
    async def ask_model(ctx: Context) -> str:
        result = await ctx.elicit("Who are you?", Person)
        if isinstance(result, AcceptedElicitation):
            person = result.data
            assert isinstance(person, Person)
            return f"accept {person.name} {person.age} {person.member}"
        assert isinstance(result, DeclinedElicitation | CancelledElicitation)
        return result.action

    @server.tool()
    async def ask_dict(ctx: Context) -> Any:
        schema = {
            "type": "object",
            "properties": {
                "name": {"type": "string", "default": "John Doe"},
                "status": {"type": "string", "enum": ["active", "inactive"]},
                "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}},
            },
            "required": ["name"],
        }
        result = await ctx.elicit("Details?", schema)
        return {"action": result.action, "data": getattr(result, "data", None)}

    @server.tool()
    async def ask_value(kind: str, ctx: Context) -> str:
        schemas: dict[str, Any] = {"str": str, "int": int, "color": Color, "lit": Literal["x", "y"]}
        result = await ctx.elicit("Value?", schemas[kind])
        assert isinstance(result, AcceptedElicitation)
        return repr(result.data)

    @server.tool()
    async def ask_url(ctx: Context) -> str:
        result = await ctx.elicit_url("Log in", "https://example.com/login", "el-1")
        if isinstance(result, AcceptedUrlElicitation):
            await ctx.send_elicitation_complete("el-1")
        return result.action

    @server.tool()
    def needs_login() -> str:
        raise UrlElicitationRequired(
            [
                UrlElicitation("Authorize the app", "https://example.com/auth", "el-2"),
                {"message": "Pay", "url": "https://example.com/pay", "elicitation_id": "el-3"},
            ]
        )

    return server


async def _answer_elicitation(
    peer: Peer, tool: str, answer: dict[str, Any], arguments: dict[str, Any] | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    call = peer.spawn("tools/call", {"name": tool, "arguments": arguments or {}})
    request = await peer.stream.request(
        "elicitation/create", len(peer.stream.requests("elicitation/create"))
    )
    peer.answer(request, answer)
    reply = await call
    assert reply is not None
    return request, reply


@async_test
async def test_elicit_with_a_model() -> None:
    peer = Peer(_elicit_server())
    await peer.initialize(capabilities={"elicitation": {}})
    request, reply = await _answer_elicitation(
        peer, "ask_model", {"action": "accept", "content": {"name": "Ada", "age": 36}}
    )
    params = request["params"]
    assert params["mode"] == "form"
    assert params["message"] == "Who are you?"
    schema = params["requestedSchema"]
    assert schema["type"] == "object"
    assert schema["required"] == ["name"]
    assert schema["properties"]["age"] == {"title": "Age", "type": "integer"}
    assert schema["properties"]["member"] == {
        "default": False,
        "title": "Member",
        "type": "boolean",
    }
    v11.ElicitRequestFormParams.model_validate(params)
    assert text(reply["result"]) == "accept Ada 36 False"

    for action in ("decline", "cancel"):
        _, reply = await _answer_elicitation(peer, "ask_model", {"action": action})
        assert text(reply["result"]) == action
    # An accepted answer that does not fit the schema is a tool error.
    _, reply = await _answer_elicitation(
        peer, "ask_model", {"action": "accept", "content": {"age": "old"}}
    )
    assert reply["result"]["isError"] is True
    assert "does not match the requested schema" in text(reply["result"])
    # The client's error answer is the call's JSON-RPC error.
    call = peer.spawn("tools/call", {"name": "ask_model"})
    request = await peer.stream.request("elicitation/create", 4)
    peer.answer(request, error={"code": -1, "message": "user away"})
    reply = await call
    assert reply is not None
    assert (reply["error"]["code"], reply["error"]["message"]) == (-1, "user away")


@async_test
async def test_elicit_with_a_dict_schema_and_single_values() -> None:
    peer = Peer(_elicit_server())
    await peer.initialize("2025-06-18", {"elicitation": {}})
    content = {"name": "Bo", "status": "active", "tags": ["a"]}
    request, reply = await _answer_elicitation(
        peer, "ask_dict", {"action": "accept", "content": content}
    )
    assert "mode" not in request["params"]  # 2025-06-18 has no modes
    assert request["params"]["requestedSchema"]["properties"]["name"]["default"] == "John Doe"
    assert reply["result"]["structuredContent"] == {"action": "accept", "data": content}
    _, reply = await _answer_elicitation(
        peer, "ask_dict", {"action": "accept", "content": {"status": "gone", "name": "x"}}
    )
    assert reply["result"]["isError"] is True
    _, reply = await _answer_elicitation(peer, "ask_dict", {"action": "accept", "content": {}})
    assert "missing required fields ['name']" in text(reply["result"])

    for kind, value, expected, prop in (
        ("str", "hi", "'hi'", {"title": "Value", "type": "string"}),
        ("int", 7, "7", {"title": "Value", "type": "integer"}),
        ("color", "blue", "<Color.BLUE: 'blue'>", {"enum": ["red", "blue"], "title": "Color"}),
        ("lit", "y", "'y'", {"enum": ["x", "y"], "title": "Value", "type": "string"}),
    ):
        request, reply = await _answer_elicitation(
            peer, "ask_value", {"action": "accept", "content": {"value": value}}, {"kind": kind}
        )
        schema = request["params"]["requestedSchema"]
        assert schema["required"] == ["value"]
        assert {k: v for k, v in schema["properties"]["value"].items() if k != "type"} == {
            k: v for k, v in prop.items() if k != "type"
        }
        assert text(reply["result"]) == expected


@async_test
async def test_elicitation_needs_the_revision_and_the_client_capability() -> None:
    server = _elicit_server()
    for version, caps in (
        ("2025-03-26", {"elicitation": {}}),
        (LATEST, {}),
        (LATEST, {"elicitation": {"url": {}}}),
    ):
        peer = Peer(server)
        await peer.initialize(version, caps)
        reply = await peer.send("tools/call", {"name": "ask_model"})
        assert reply is not None
        assert reply["error"]["code"] == MISSING_CLIENT_CAPABILITY, (version, caps)
        assert "elicitation" in reply["error"]["data"]["requiredCapabilities"]
        assert peer.stream.messages == []


@async_test
async def test_url_elicitation() -> None:
    server = _elicit_server()
    peer = Peer(server)
    await peer.initialize(capabilities={"elicitation": {"url": {}}})
    request, reply = await _answer_elicitation(peer, "ask_url", {"action": "accept"})
    assert request["params"] == {
        "mode": "url",
        "message": "Log in",
        "url": "https://example.com/login",
        "elicitationId": "el-1",
    }
    v11.ElicitRequestURLParams.model_validate(request["params"])
    assert text(reply["result"]) == "accept"
    assert peer.stream.messages[-1] == {
        "jsonrpc": "2.0",
        "method": "notifications/elicitation/complete",
        "params": {"elicitationId": "el-1"},
    }
    # Form only, or a revision before URL mode: refused before anything is sent.
    for version, caps in ((LATEST, {"elicitation": {}}), ("2025-06-18", {"elicitation": {}})):
        other = Peer(server)
        await other.initialize(version, caps)
        error = await other.error("tools/call", {"name": "ask_url"})
        assert error["code"] == MISSING_CLIENT_CAPABILITY
        assert error["data"] == {"requiredCapabilities": {"elicitation": {"url": {}}}}


@async_test
async def test_url_elicitation_required_error() -> None:
    server = _elicit_server()
    peer = Peer(server)
    await peer.initialize()
    error = await peer.error("tools/call", {"name": "needs_login"})
    assert error["code"] == URL_ELICITATION_REQUIRED
    assert error["data"]["elicitations"] == [
        {
            "mode": "url",
            "message": "Authorize the app",
            "url": "https://example.com/auth",
            "elicitationId": "el-2",
        },
        {
            "message": "Pay",
            "url": "https://example.com/pay",
            "elicitationId": "el-3",
            "mode": "url",
        },
    ]
    for item in error["data"]["elicitations"]:
        v11.ElicitRequestURLParams.model_validate(item)
    # Revisions without -32042 get a tool error naming the URLs.
    old = Peer(server)
    await old.initialize("2025-06-18")
    result = await old.tool("needs_login")
    assert result["isError"] is True
    assert "https://example.com/auth" in text(result)
    assert "https://example.com/pay" in text(result)
    with pytest.raises(ValueError):
        UrlElicitationRequired([])


# --------------------------------------------------------------------------- sampling and roots


def _sampling_server() -> Server:
    server = Server("s")

    @server.tool()
    async def haiku(topic: str, ctx: Context) -> str:
        result = await ctx.sample(
            f"A haiku about {topic}",
            system_prompt="You are a poet",
            max_tokens=60,
            temperature=0.5,
            model_preferences=["claude", "gpt"],
        )
        return f"{result.text} [{result.model}, {result.stop_reason}, {result.role}]"

    @server.tool()
    async def chat(ctx: Context) -> str:
        result = await ctx.sample(
            ["hello", {"role": "assistant", "content": "hi"}, "weather?"],
            tools=[{"name": "weather", "inputSchema": {"type": "object"}}],
            tool_choice={"mode": "auto"},
            include_context="thisServer",
        )
        return repr(result.content)

    @server.tool()
    async def roots(ctx: Context) -> list[str]:
        return [f"{r.uri} {r.name}" for r in await ctx.list_roots()]

    return server


@async_test
async def test_sample() -> None:
    peer = Peer(_sampling_server())
    await peer.initialize(capabilities={"sampling": {}})
    call = peer.spawn("tools/call", {"name": "haiku", "arguments": {"topic": "owls"}})
    request = await peer.stream.request("sampling/createMessage")
    assert request["params"] == {
        "messages": [{"role": "user", "content": {"type": "text", "text": "A haiku about owls"}}],
        "modelPreferences": {"hints": [{"name": "claude"}, {"name": "gpt"}]},
        "systemPrompt": "You are a poet",
        "temperature": 0.5,
        "maxTokens": 60,
    }
    v11.CreateMessageRequestParams.model_validate(request["params"])
    peer.answer(
        request,
        {
            "role": "assistant",
            "content": {"type": "text", "text": "Silent wings at dusk"},
            "model": "claude-x",
            "stopReason": "endTurn",
        },
    )
    reply = await call
    assert reply is not None
    assert text(reply["result"]) == "Silent wings at dusk [claude-x, endTurn, assistant]"

    # Tools and context need 2025-11-25 and the client's sampling.tools / sampling.context.
    error = await peer.error("tools/call", {"name": "chat"})
    assert error["code"] == MISSING_CLIENT_CAPABILITY
    full = Peer(_sampling_server())
    await full.initialize(capabilities=ALL_CAPS)
    call = full.spawn("tools/call", {"name": "chat"})
    request = await full.stream.request("sampling/createMessage")
    params = request["params"]
    assert [m["role"] for m in params["messages"]] == ["user", "assistant", "user"]
    assert params["messages"][1]["content"] == {"type": "text", "text": "hi"}
    assert params["tools"][0]["name"] == "weather"
    assert params["toolChoice"] == {"mode": "auto"}
    assert params["includeContext"] == "thisServer"
    assert params["maxTokens"] == 512
    v11.CreateMessageRequestParams.model_validate(params)
    blocks = [{"type": "tool_use", "id": "t1", "name": "weather", "input": {}}]
    full.answer(request, {"role": "assistant", "content": blocks, "model": "m"})
    reply = await call
    assert reply is not None and "tool_use" in text(reply["result"])

    old = Peer(_sampling_server())
    await old.initialize("2025-06-18", {"sampling": {"tools": {}}})
    assert (await old.error("tools/call", {"name": "chat"}))["code"] == MISSING_CLIENT_CAPABILITY


@async_test
async def test_sampling_and_roots_need_the_client_capability() -> None:
    peer = Peer(_sampling_server())
    await peer.initialize("2024-11-05", {})
    for name, arguments, needed in (
        ("haiku", {"topic": "x"}, {"sampling": {}}),
        ("roots", {}, {"roots": {}}),
    ):
        error = await peer.error("tools/call", {"name": name, "arguments": arguments})
        assert error["code"] == MISSING_CLIENT_CAPABILITY
        assert error["data"] == {"requiredCapabilities": needed}
    assert peer.stream.messages == []


@async_test
async def test_list_roots() -> None:
    peer = Peer(_sampling_server())
    await peer.initialize("2024-11-05", {"roots": {}})
    call = peer.spawn("tools/call", {"name": "roots"})
    request = await peer.stream.request("roots/list")
    assert request["params"] == {}
    peer.answer(request, {"roots": [{"uri": "file:///a", "name": "A"}, {"uri": "file:///b"}]})
    reply = await call
    assert reply is not None
    assert [block["text"] for block in reply["result"]["content"]] == [
        "file:///a A",
        "file:///b None",
    ]


@async_test
async def test_server_requests_over_a_transport_that_cannot_carry_them() -> None:
    peer = Peer(_sampling_server())
    await peer.initialize(capabilities=ALL_CAPS)
    reply = await peer.send("tools/call", {"name": "roots"}, sink=NULL_SINK)
    assert reply is not None and reply["error"]["code"] == INTERNAL_ERROR
    assert "no stream" in reply["error"]["message"]


@async_test
async def test_close_sse_stream() -> None:
    server = Server("s")

    @server.tool()
    async def reconnect(ctx: Context) -> str:
        await ctx.info("Before disconnect")
        await ctx.close_sse_stream()
        await ctx.close_standalone_sse_stream()
        await ctx.info("After reconnect")
        return "Reconnection test completed"

    peer = Peer(server)
    await peer.initialize()
    closable = ClosableSink()
    result = await peer.call("tools/call", {"name": "reconnect"}, sink=closable)
    assert text(result) == "Reconnection test completed"
    assert closable.closed == 1
    assert [m["params"]["data"] for m in closable.messages] == [
        "Before disconnect",
        "After reconnect",
    ]
    # A sink without close_stream: nothing happens.
    assert text(await peer.tool("reconnect")) == "Reconnection test completed"


# --------------------------------------------------------------------------- tasks


def _task_server(**kw: Any) -> tuple[Server, dict[str, Any]]:
    server = Server("s", **{"mask_error_details": False, **kw})
    state: dict[str, Any] = {"gate": None, "notes": []}

    async def wait_gate() -> None:
        gate = state["gate"]
        if gate is not None:
            await gate.wait()

    @server.tool(task_support="optional")
    async def compute(n: int, ctx: Context) -> int:
        await ctx.report_progress(1, 2)
        try:
            await wait_gate()
        except asyncio.CancelledError:
            state["notes"].append("cancelled")
            raise
        state["notes"].append(f"task {ctx.task_id} {ctx.is_background_task}")
        return n * 2

    @server.tool(task_support="required")
    def must_be_task(text: str) -> str:
        return text.upper()

    @server.tool()
    def plain() -> str:
        return "plain"

    @server.tool(task_support="optional")
    async def broken(kind: str) -> str:
        await wait_gate()
        if kind == "tool":
            raise RuntimeError("tool failed")
        raise McpError(INVALID_PARAMS, "protocol failure", {"why": "test"})

    @server.tool(task_support="optional")
    async def interactive(ctx: Context) -> str:
        result = await ctx.elicit("Continue?", bool)
        return f"answer {getattr(result, 'data', None)}"

    return server, state


@async_test
async def test_task_listing_and_rules() -> None:
    server, _ = _task_server()
    peer = Peer(server)
    await peer.initialize()
    tools = {t["name"]: t for t in (await peer.call("tools/list"))["tools"]}
    assert tools["compute"]["execution"] == {"taskSupport": "optional"}
    assert tools["must_be_task"]["execution"] == {"taskSupport": "required"}
    assert "execution" not in tools["plain"]
    v11.ListToolsResult.model_validate({"tools": list(tools.values())})

    forbidden = await peer.error("tools/call", {"name": "plain", "task": {}})
    assert forbidden["code"] == METHOD_NOT_FOUND
    required = await peer.error("tools/call", {"name": "must_be_task", "arguments": {"text": "a"}})
    assert required["code"] == METHOD_NOT_FOUND
    bad = await peer.error("tools/call", {"name": "compute", "task": 5})
    assert bad["code"] == INVALID_PARAMS
    for method in ("tasks/get", "tasks/result", "tasks/cancel"):
        for params in ({}, {"taskId": "nope"}, {"taskId": 3}):
            assert (await peer.error(method, params))["code"] == INVALID_PARAMS


@async_test
async def test_tasks_are_hidden_from_older_revisions() -> None:
    server, _ = _task_server()
    peer = Peer(server)
    await peer.initialize("2025-06-18")
    tools = {t["name"]: t for t in (await peer.call("tools/list"))["tools"]}
    assert all("execution" not in t for t in tools.values())
    for method in ("tasks/get", "tasks/result", "tasks/list", "tasks/cancel"):
        assert (await peer.error(method, {"taskId": "x"}))["code"] == METHOD_NOT_FOUND
    # ``task`` is ignored and task-required tools run in place.
    result = await peer.tool("compute", {"n": 2}, task={"ttl": 10})
    assert result["structuredContent"] == {"result": 4}
    assert text(await peer.tool("must_be_task", {"text": "a"})) == "A"


@async_test
async def test_task_lifecycle() -> None:
    server, state = _task_server()
    state["gate"] = asyncio.Event()
    peer = Peer(server)
    await peer.initialize()
    created = await peer.tool("compute", {"n": 21}, task={"ttl": 60000}, _meta={"progressToken": 5})
    v11.CreateTaskResult.model_validate(created)
    task = created["task"]
    assert task["status"] == "working"
    assert task["ttl"] == 60000
    assert task["pollInterval"] == 1000
    assert task["createdAt"].endswith("Z")
    task_id = task["taskId"]

    got = await peer.call("tasks/get", {"taskId": task_id})
    v11.GetTaskResult.model_validate(got)
    assert got["status"] == "working"
    waiting = peer.spawn("tasks/result", {"taskId": task_id})
    await asyncio.sleep(0.01)
    assert not waiting.done()
    state["gate"].set()
    reply = await waiting
    assert reply is not None
    result = reply["result"]
    assert result["_meta"] == {RELATED_TASK: {"taskId": task_id}}
    plain = await peer.tool("compute", {"n": 21})
    assert {k: v for k, v in result.items() if k != "_meta"} == plain
    assert state["notes"][0] == f"task {task_id} True"
    assert state["notes"][1] == "task None False"
    done = await peer.call("tasks/get", {"taskId": task_id})
    assert done["status"] == "completed"
    # Progress of a task keeps its token, names the task, and goes to the session's channel
    # (the request that started it was answered long ago).
    progress = [m for m in peer.outbound.messages if m["method"] == "notifications/progress"]
    assert progress[0]["params"] == {
        "progressToken": 5,
        "progress": 1,
        "total": 2,
        "_meta": {RELATED_TASK: {"taskId": task_id}},
    }
    # Again, now that it is terminal: answered at once.
    again = await peer.call("tasks/result", {"taskId": task_id})
    assert again == result
    cancel = await peer.error("tasks/cancel", {"taskId": task_id})
    assert cancel["code"] == INVALID_PARAMS

    listed = await peer.call("tasks/list")
    v11.ListTasksResult.model_validate(listed)
    assert [t["taskId"] for t in listed["tasks"]] == [task_id]


@async_test
async def test_required_task_and_failures() -> None:
    server, _ = _task_server()
    peer = Peer(server)
    await peer.initialize()
    created = await peer.tool("must_be_task", {"text": "shout"}, task={})
    result = await peer.call("tasks/result", {"taskId": created["task"]["taskId"]})
    assert text(result) == "SHOUT"

    # A tool error (isError) fails the task; tasks/result gives the same error result.
    tool_error = (await peer.tool("broken", {"kind": "tool"}, task={}))["task"]["taskId"]
    result = await peer.call("tasks/result", {"taskId": tool_error})
    assert result["isError"] is True and text(result) == "tool failed"
    failed = await peer.call("tasks/get", {"taskId": tool_error})
    assert failed["status"] == "failed"
    assert failed["statusMessage"] == "tool failed"
    # A JSON-RPC error is replayed by tasks/result.
    rpc_error = (await peer.tool("broken", {"kind": "rpc"}, task={}))["task"]["taskId"]
    replayed = await peer.error("tasks/result", {"taskId": rpc_error})
    assert replayed == {
        "code": INVALID_PARAMS,
        "message": "protocol failure",
        "data": {"why": "test"},
    }
    assert (await peer.call("tasks/get", {"taskId": rpc_error}))["status"] == "failed"
    # Invalid arguments: the same isError result the plain call gives.
    invalid = (await peer.tool("compute", {"n": "x"}, task={}))["task"]["taskId"]
    result = await peer.call("tasks/result", {"taskId": invalid})
    assert result["isError"] is True


@async_test
async def test_task_cancel() -> None:
    server, state = _task_server()
    state["gate"] = asyncio.Event()
    peer = Peer(server)
    await peer.initialize()
    task_id = (await peer.tool("compute", {"n": 1}, task={}))["task"]["taskId"]
    await asyncio.sleep(0.01)
    waiting = peer.spawn("tasks/result", {"taskId": task_id})
    cancelled = await peer.call("tasks/cancel", {"taskId": task_id})
    v11.CancelTaskResult.model_validate(cancelled)
    assert cancelled["status"] == "cancelled"
    reply = await waiting
    assert reply is not None and reply["error"]["code"] == REQUEST_CANCELLED
    await asyncio.sleep(0.01)
    assert state["notes"] == ["cancelled"]
    assert (await peer.call("tasks/get", {"taskId": task_id}))["status"] == "cancelled"
    assert (await peer.error("tasks/cancel", {"taskId": task_id}))["code"] == INVALID_PARAMS


@async_test
async def test_tasks_belong_to_their_session_and_expire() -> None:
    server, _ = _task_server(task_ttl_ms=5000, task_max_ttl_ms=20000, task_poll_interval_ms=None)
    first, second = Peer(server), Peer(server)
    await first.initialize()
    await second.initialize()
    created = (await first.tool("compute", {"n": 1}, task={}))["task"]
    assert created["ttl"] == 5000 and "pollInterval" not in created
    capped = (await first.tool("compute", {"n": 1}, task={"ttl": 10**9}))["task"]
    assert capped["ttl"] == 20000
    assert (await second.error("tasks/get", {"taskId": created["taskId"]}))["code"] == (
        INVALID_PARAMS
    )
    assert (await second.call("tasks/list"))["tasks"] == []

    short = (await first.tool("compute", {"n": 1}, task={"ttl": 0}))["task"]["taskId"]
    await first.call("tasks/result", {"taskId": created["taskId"]})
    await first.call("tasks/result", {"taskId": capped["taskId"]})
    await asyncio.sleep(0.01)
    # ttl 0: gone as soon as it finished.
    assert (await first.error("tasks/get", {"taskId": short}))["code"] == INVALID_PARAMS
    listed = [t["taskId"] for t in (await first.call("tasks/list"))["tasks"]]
    assert listed == [created["taskId"], capped["taskId"]]


@async_test
async def test_task_ttl_out_of_range_is_no_failure() -> None:
    # 1e400 reads as infinity and 1e300 as a float past any integer the reply can carry.
    server, _ = _task_server(task_max_ttl_ms=None)
    peer = Peer(server)
    await peer.initialize()
    for ttl, expected in ((b"1e400", 3_600_000), (b"1e300", 2**53 - 1), (b"-1e400", 3_600_000)):
        created = await peer.tool("compute", {"n": 1}, task={"ttl": orjson.Fragment(ttl)})
        assert created["task"]["ttl"] == expected, created


@async_test
async def test_sessionless_tasks_live_on_the_server() -> None:
    server, _ = _task_server()
    peer = Peer(server)
    peer.revision = REVISIONS[-1]  # an HTTP request with the version header, no session
    task_id = (await peer.tool("compute", {"n": 4}, task={}))["task"]["taskId"]
    other = Peer(server)
    other.revision = REVISIONS[-1]
    result = await other.call("tasks/result", {"taskId": task_id})
    assert result["structuredContent"] == {"result": 8}


@async_test
async def test_task_input_required_goes_through_tasks_result() -> None:
    server, _ = _task_server()
    peer = Peer(server)
    await peer.initialize(capabilities={"elicitation": {}})
    # Over HTTP without a GET stream: messages wait for a tasks/result stream.
    assert peer.session is not None
    peer.session.outbound = NULL_SINK
    task_id = (await peer.tool("interactive", task={}))["task"]["taskId"]
    for _ in range(100):
        status = (await peer.call("tasks/get", {"taskId": task_id}))["status"]
        if status != "working":
            break
        await asyncio.sleep(0.001)
    assert status == "input_required"
    result_stream = ListSink()
    waiting = peer.spawn("tasks/result", {"taskId": task_id}, sink=result_stream)
    request = await result_stream.request("elicitation/create")
    assert request["params"]["_meta"] == {RELATED_TASK: {"taskId": task_id}}
    peer.answer(request, {"action": "accept", "content": {"value": True}})
    reply = await waiting
    assert reply is not None and text(reply["result"]) == "answer True"
    assert (await peer.call("tasks/get", {"taskId": task_id}))["status"] == "completed"


@async_test
async def test_task_messages_use_the_session_channel_when_there_is_one() -> None:
    server, _ = _task_server()
    peer = Peer(server)
    await peer.initialize(capabilities={"elicitation": {}})
    task_id = (await peer.tool("interactive", task={}))["task"]["taskId"]
    request = await peer.outbound.request("elicitation/create")
    peer.answer(request, {"action": "decline"})
    result = await peer.call("tasks/result", {"taskId": task_id})
    assert text(result) == "answer None"


# --------------------------------------------------------------------------- schemas and shapes


@async_test
async def test_explicit_input_schema_is_kept_verbatim() -> None:
    server = Server("s")

    @server.tool(input_schema=JSON_SCHEMA_2020_12, description="2020-12 features")
    def json_schema_2020_12_tool(name: str | None = None, **rest: Any) -> str:
        return f"{name} {sorted(rest)}"

    @server.tool(input_schema={"type": "object", "properties": {"n": {"type": "integer"}}})
    def typed(n: int) -> int:
        return n + 1

    peer = Peer(server)
    await peer.initialize()
    tools = {t["name"]: t for t in (await peer.call("tools/list"))["tools"]}
    listed = tools["json_schema_2020_12_tool"]["inputSchema"]
    assert json.dumps(listed) == json.dumps(JSON_SCHEMA_2020_12)  # same keys, same order
    assert listed is not JSON_SCHEMA_2020_12
    result = await peer.tool(
        "json_schema_2020_12_tool", {"name": "A", "email": "a@b", "address": {"city": "X"}}
    )
    assert text(result) == "A ['address', 'email']"
    # Arguments are still checked against the function's parameters.
    assert (await peer.tool("typed", {"n": "x"}))["isError"] is True
    assert (await peer.tool("typed", {"n": 1}))["structuredContent"] == {"result": 2}
    with pytest.raises(ValueError):
        server.add_tool(lambda: "x", name="bad", input_schema={"type": "string"})
    with pytest.raises(ValueError):
        server.add_tool(lambda: "x", name="bad", task_support="sometimes")  # type: ignore[arg-type]


@pytest.mark.parametrize("revision", REVISIONS, ids=lambda r: r.version)
@async_test
async def test_display_metadata_shaped_by_revision(revision: Revision) -> None:
    from jetmcp.server import Audio, Image
    from jetmcp.server.content import ResourceLink

    server = Server("s")

    @server.tool(
        title="Fetch",
        annotations={"readOnlyHint": True},
        icons=[{"src": "https://example.com/f.png", "mimeType": "image/png"}],
        task_support="optional",
    )
    def fetch() -> list[Image | Audio | ResourceLink]:
        return [Image(data=b"png"), Audio(data=b"wav"), ResourceLink("mem://x", "x", title="X")]

    peer = Peer(server)
    await peer.initialize(revision.version)
    tool = (await peer.call("tools/list"))["tools"][0]
    assert ("title" in tool) is revision.titles
    assert ("icons" in tool) is revision.icons
    assert ("execution" in tool) is revision.tasks
    if revision.annotations:
        expected = {"readOnlyHint": True}
        if not revision.titles:
            expected = {"title": "Fetch", **expected}
        assert tool["annotations"] == expected
    else:
        assert "annotations" not in tool
    kinds = [block["type"] for block in (await peer.tool("fetch"))["content"]]
    assert kinds == [
        "image",
        "audio" if revision.audio else "text",
        "resource_link" if revision.resource_links else "text",
    ]


# --------------------------------------------------------------------------- stdio end to end


class StdioApp:
    """``jetmcp run tests.apps.server_features:app --transport stdio`` on pipes."""

    def __init__(self) -> None:
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 (lives as long as the process)
        self.proc = subprocess.Popen(
            [*jetmcp_command(), "run", "tests.apps.server_features:app", "--transport", "stdio"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            start_new_session=True,
            env=server_env(),
            cwd=ROOT,
        )
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in iter(self.proc.stdout.readline, b""):
            self.lines.put(line)
        self.lines.put(None)

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def read(self) -> dict[str, Any]:
        try:
            line = self.lines.get(timeout=READ_TIMEOUT)
        except queue.Empty:
            raise AssertionError(f"no line in time; stderr:\n{self.stderr()}") from None
        assert line is not None, f"stdout closed; stderr:\n{self.stderr()}"
        message: dict[str, Any] = json.loads(line)
        return message

    def stderr(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read().decode("utf-8", "replace")

    def stop(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            stop_process(self.proc)
        self._reader.join(timeout=5)
        assert self.proc.stdout is not None
        self.proc.stdout.close()
        self._stderr.close()


def test_stdio_end_to_end_elicitation_sampling_and_a_task() -> None:
    app = StdioApp()
    try:
        app.send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": LATEST,
                    "capabilities": {"elicitation": {}, "sampling": {}},
                    "clientInfo": {"name": "e2e", "version": "0"},
                },
            }
        )
        init = app.read()
        assert init["result"]["capabilities"]["tasks"]["requests"] == {"tools": {"call": {}}}
        app.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        app.send(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "interview", "arguments": {"topic": "owls"}},
            }
        )
        elicit = app.read()
        assert elicit["method"] == "elicitation/create"
        assert elicit["params"]["requestedSchema"]["required"] == ["name"]
        app.send(
            {
                "jsonrpc": "2.0",
                "id": elicit["id"],
                "result": {"action": "accept", "content": {"name": "Ada", "age": 36}},
            }
        )
        sample = app.read()
        assert sample["method"] == "sampling/createMessage"
        assert sample["params"]["messages"][0]["content"]["text"] == "One line about Ada and owls"
        app.send(
            {
                "jsonrpc": "2.0",
                "id": sample["id"],
                "result": {
                    "role": "assistant",
                    "content": {"type": "text", "text": "Ada watches owls."},
                    "model": "test-model",
                },
            }
        )
        done = app.read()
        assert done["id"] == 2
        assert done["result"]["content"] == [
            {"type": "text", "text": "Ada (36): Ada watches owls."}
        ]
        app.send(
            {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "tools/call",
                "params": {"name": "double", "arguments": {"n": 21}, "task": {"ttl": 1000}},
            }
        )
        created = app.read()
        task_id = created["result"]["task"]["taskId"]
        app.send(
            {"jsonrpc": "2.0", "id": 4, "method": "tasks/result", "params": {"taskId": task_id}}
        )
        result = app.read()
        assert result["id"] == 4
        assert result["result"]["structuredContent"] == {"result": 42}
        assert result["result"]["_meta"] == {RELATED_TASK: {"taskId": task_id}}
    finally:
        app.stop()
