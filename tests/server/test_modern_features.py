"""Server features of revision 2026-07-28 through the shared dispatcher, in process: caching
hints, per-request logging, input rounds (MRTR) and their sealed ``requestState``,
``subscriptions/listen``, and the ``io.modelcontextprotocol/tasks`` extension.

A :class:`Modern` client feeds frames to :meth:`Dispatcher.start` exactly as a transport does,
every request carrying the 2026-07-28 ``_meta`` (protocol version, client capabilities), and
collects what the server writes on the request's stream. The same handler code is also run
on a legacy session (:class:`Legacy`), where its questions are server-to-client requests.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import orjson
import pytest
from mcp_types import _v2026_07_28 as v26

from harness.inprocess import ListSink, async_test, text, until
from jetmcp import _wire
from jetmcp.core.dispatch import Dispatcher
from jetmcp.core.exchange import Exchange
from jetmcp.core.inflight import InFlight
from jetmcp.core.reply import Reply
from jetmcp.core.request_state import STATE_KEY_ENV, StateSealer, params_digest, resolve_key
from jetmcp.errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    MISSING_CLIENT_CAPABILITY,
    McpError,
)
from jetmcp.protocol.meta import (
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    META_SUBSCRIPTION_ID,
)
from jetmcp.protocol.revisions import HTTP_DEFAULT, R2025_11_25, R2026_07_28, Revision
from jetmcp.server import AcceptedElicitation, Context, Server
from jetmcp.server.listen import supported_filters
from jetmcp.server.tasks_ext import TASKS_EXTENSION

MODERN = R2026_07_28.version
ALL_CAPS: dict[str, Any] = {
    "elicitation": {},
    "sampling": {},
    "roots": {"listChanged": True},
}
TASK_CAPS: dict[str, Any] = {**ALL_CAPS, "extensions": {TASKS_EXTENSION: {}}}
NAME_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string"}},
    "required": ["name"],
}


def accept(**content: Any) -> dict[str, Any]:
    return {"action": "accept", "content": content}


def model_says(text: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": {"type": "text", "text": text},
        "model": "test-model",
        "stopReason": "endTurn",
    }


ROOTS = {"roots": [{"uri": "file:///work", "name": "work"}]}


class Modern:
    """A 2026-07-28 client: no session, everything said again on every request."""

    _ids = itertools.count(1)

    def __init__(self, server: Server, caps: dict[str, Any] | None = None) -> None:
        self.server = server
        self.dispatcher = Dispatcher(server)
        self.inflight = InFlight()
        self.caps = ALL_CAPS if caps is None else caps

    def message(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        id: Any = None,
        caps: dict[str, Any] | None = None,
        log_level: str | None = None,
        meta: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        full: dict[str, Any] = {
            META_PROTOCOL_VERSION: MODERN,
            META_CLIENT_CAPABILITIES: self.caps if caps is None else caps,
            META_CLIENT_INFO: {"name": "modern-test", "version": "0"},
        }
        if log_level is not None:
            full[META_LOG_LEVEL] = log_level
        full.update(meta or {})
        return {
            "jsonrpc": "2.0",
            "id": next(self._ids) if id is None else id,
            "method": method,
            "params": {**(params or {}), "_meta": full},
        }

    def start(self, message: dict[str, Any], sink: Any = None) -> Any:
        ex = Exchange(R2026_07_28, None, sink if sink is not None else ListSink(), self.inflight)
        return self.dispatcher.start(_wire.decode(orjson.dumps(message)), ex)

    async def send(
        self, method: str, params: dict[str, Any] | None = None, *, sink: Any = None, **kw: Any
    ) -> dict[str, Any]:
        reply = self.start(self.message(method, params, **kw), sink)
        if reply is not None and not isinstance(reply, bytes):
            reply = await reply
        assert reply is not None
        out: dict[str, Any] = orjson.loads(bytes(reply))
        return out

    def spawn(
        self, method: str, params: dict[str, Any] | None = None, **kw: Any
    ) -> asyncio.Task[dict[str, Any]]:
        return asyncio.ensure_future(self.send(method, params, **kw))

    async def call(self, method: str, params: dict[str, Any] | None = None, **kw: Any) -> Any:
        reply = await self.send(method, params, **kw)
        assert "result" in reply, reply
        return reply["result"]

    async def error(
        self, method: str, params: dict[str, Any] | None = None, **kw: Any
    ) -> dict[str, Any]:
        reply = await self.send(method, params, **kw)
        assert "error" in reply, reply
        error: dict[str, Any] = reply["error"]
        return error

    async def tool(self, name: str, arguments: dict[str, Any] | None = None, **kw: Any) -> Any:
        extra = {k: kw.pop(k) for k in ("inputResponses", "requestState", "task") if k in kw}
        return await self.call(
            "tools/call", {"name": name, "arguments": arguments or {}, **extra}, **kw
        )

    async def tool_error(
        self, name: str, arguments: dict[str, Any] | None = None, **kw: Any
    ) -> dict[str, Any]:
        extra = {k: kw.pop(k) for k in ("inputResponses", "requestState") if k in kw}
        return await self.error(
            "tools/call", {"name": name, "arguments": arguments or {}, **extra}, **kw
        )


class Legacy:
    """A 2025-11-25 session client that answers the server's requests on its stream."""

    _ids = itertools.count(1)

    def __init__(self, server: Server) -> None:
        self.dispatcher = Dispatcher(server)
        self.stream = ListSink()
        self.inflight = InFlight()
        self.session: Any = None
        self.revision: Revision = HTTP_DEFAULT

    def start(self, message: dict[str, Any]) -> Any:
        ex = Exchange(self.revision, self.session, self.stream, self.inflight)
        reply = self.dispatcher.start(_wire.decode(orjson.dumps(message)), ex)
        if isinstance(reply, Reply) and reply.session is not None:
            self.session, self.revision = reply.session, ex.revision
            self.session.outbound = self.stream
        return reply

    async def send(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        reply = self.start(
            {"jsonrpc": "2.0", "id": next(self._ids), "method": method, "params": params}
        )
        if not isinstance(reply, bytes):
            reply = await reply
        out: dict[str, Any] = orjson.loads(bytes(reply))
        return out

    async def initialize(self) -> None:
        await self.send(
            "initialize",
            {"protocolVersion": R2025_11_25.version, "capabilities": ALL_CAPS, "clientInfo": {}},
        )
        self.start({"jsonrpc": "2.0", "method": "notifications/initialized"})

    async def answer_next(self, method: str, result: Any, index: int) -> dict[str, Any]:
        def requests() -> list[dict[str, Any]]:
            return [m for m in self.stream.of(method) if "id" in m]

        await until(lambda: len(requests()) > index)
        request = requests()[index]
        self.start({"jsonrpc": "2.0", "id": request["id"], "result": result})
        return request


def check_shape(model: Any, result: dict[str, Any]) -> None:
    """``result`` is valid for the 2026-07-28 schema type ``model`` (the dispatcher, not the
    handlers, adds ``resultType: "complete"``: assumed where it is absent)."""
    model.model_validate({"resultType": "complete", **result})


# ================================================================ the app used throughout


def make_app(**kw: Any) -> Server:
    app = Server("modern", **kw)

    @app.tool(ttl_ms=60_000, cache_scope="public")
    def public_tool() -> str:
        """Cacheable for a minute, by anyone"""
        return "public"

    @app.tool()
    async def ask_name(ctx: Context) -> str:
        """One question"""
        answer = await ctx.elicit("What is your name?", NAME_SCHEMA, key="user_name")
        assert isinstance(answer, AcceptedElicitation)
        return f"Hello, {answer.data['name']}!"

    @app.tool()
    async def default_keys(ctx: Context) -> str:
        """Questions without keys"""
        first = await ctx.elicit("First?", NAME_SCHEMA)
        roots = await ctx.list_roots()
        reply = await ctx.sample("Third?", max_tokens=5)
        return f"{first.action} {len(roots)} {reply.text}"

    @app.tool()
    async def all_at_once(ctx: Context) -> str:
        """Three questions, one round"""
        name, reply, roots = await ctx.gather(
            ctx.elicit("Name?", NAME_SCHEMA, key="name"),
            ctx.sample("Greeting?", max_tokens=10, key="greeting"),
            ctx.list_roots(key="roots"),
        )
        return f"{reply.text} {name.data['name']} ({roots[0].uri})"

    @app.tool()
    async def two_rounds(ctx: Context) -> str:
        """One question, then another"""
        ctx.request_state["runs"] = ctx.request_state.get("runs", 0) + 1
        first = await ctx.elicit("Step 1", NAME_SCHEMA, key="step1")
        second = await ctx.elicit("Step 2", NAME_SCHEMA, key="step2")
        runs = ctx.request_state["runs"]
        return f"{first.data['name']} then {second.data['name']} after {runs} runs"

    @app.tool()
    async def careless(ctx: Context) -> str:
        """Catches every Exception around its question"""
        try:
            answer = await ctx.elicit("Name?", NAME_SCHEMA, key="name")
        except Exception as exc:
            return f"swallowed {exc!r}"
        return f"got {answer.data['name']}"

    @app.tool()
    async def twice(ctx: Context) -> str:
        """Asks the same key twice"""
        await ctx.elicit("a", NAME_SCHEMA, key="same")
        await ctx.elicit("b", NAME_SCHEMA, key="same")
        return "never"

    @app.tool()
    async def chatty(ctx: Context) -> str:
        """Logs at two levels"""
        await ctx.debug("a debug line")
        await ctx.warning("a warning line")
        return "done"

    @app.resource("test://asks", ttl_ms=5_000)
    async def asking_resource(ctx: Context) -> str:
        """A resource that needs the user's name"""
        answer = await ctx.elicit("Who reads?", NAME_SCHEMA, key="reader")
        return f"read by {answer.data['name']}"

    @app.resource("test://plain", cache_scope="public", ttl_ms=1_000)
    def plain() -> str:
        """Plain text"""
        return "plain"

    @app.resource("test://item/{id}", ttl_ms=2_000)
    def item(id: str) -> str:
        """Items"""
        return f"item {id}"

    @app.prompt(ttl_ms=100)
    async def needs_topic(ctx: Context) -> str:
        """Asks a topic"""
        answer = await ctx.elicit("Topic?", NAME_SCHEMA, key="topic")
        return f"Write about {answer.data['name']}"

    @app.tool()
    def greet(name: str) -> str:
        """Sync, never a task"""
        return f"Hello, {name}!"

    @app.tool(task_support="optional")
    async def slow(seconds: float = 0.0) -> str:
        """May be a task"""
        await asyncio.sleep(seconds)
        return f"slept {seconds}"

    @app.tool(task_support="required")
    async def must_task() -> str:
        """Only as a task; fails as a tool"""
        raise RuntimeError("tool failure")

    @app.tool(task_support="optional")
    async def breaks() -> str:
        """Ends in a protocol error"""
        raise McpError(INTERNAL_ERROR, "broken")

    @app.tool(task_support="optional")
    async def two_questions(ctx: Context) -> str:
        """A task that asks two questions at once"""
        a, b = await ctx.gather(
            ctx.elicit("A?", NAME_SCHEMA, key="a"), ctx.elicit("B?", NAME_SCHEMA, key="b")
        )
        return f"{a.data['name']} {b.data['name']} task={ctx.task_id is not None}"

    @app.tool(task_support="required", defer_task=True)
    async def rounds_then_task(ctx: Context) -> str:
        """An input round, then a task"""
        answer = await ctx.elicit("Name?", NAME_SCHEMA, key="user_name")
        await ctx.start_task()
        later = await ctx.elicit("Sure?", NAME_SCHEMA, key="later")
        return f"{answer.data['name']} {later.data['name']} task={ctx.task_id is not None}"

    return app


# ================================================================ caching hints


@async_test
async def test_list_hints_are_the_least_ttl_and_most_private_scope() -> None:
    app = make_app()
    peer = Modern(app)
    tools = await peer.call("tools/list")
    check_shape(v26.ListToolsResult, tools)
    # Most tools set nothing: the server defaults (0, private) win.
    assert (tools["ttlMs"], tools["cacheScope"]) == (0, "private")
    resources = await peer.call("resources/list")
    check_shape(v26.ListResourcesResult, resources)
    assert (resources["ttlMs"], resources["cacheScope"]) == (1_000, "private")
    templates = await peer.call("resources/templates/list")
    check_shape(v26.ListResourceTemplatesResult, templates)
    assert (templates["ttlMs"], templates["cacheScope"]) == (2_000, "private")
    prompts = await peer.call("prompts/list")
    check_shape(v26.ListPromptsResult, prompts)
    assert (prompts["ttlMs"], prompts["cacheScope"]) == (100, "private")


@async_test
async def test_server_defaults_and_per_item_hints() -> None:
    app = Server("hinted", cache_ttl_ms=30_000, cache_scope="public")

    @app.tool()
    def a() -> str:
        return "a"

    @app.tool(ttl_ms=10_000)
    def b() -> str:
        return "b"

    @app.resource("test://r", cache_scope="private")
    def r() -> str:
        return "r"

    peer = Modern(app)
    assert app.cache_defaults == {"ttlMs": 30_000, "cacheScope": "public"}
    tools = await peer.call("tools/list")
    assert (tools["ttlMs"], tools["cacheScope"]) == (10_000, "public")
    read = await peer.call("resources/read", {"uri": "test://r"})
    check_shape(v26.ReadResourceResult, read)
    assert (read["ttlMs"], read["cacheScope"]) == (30_000, "private")
    # Empty lists carry the defaults; a registry change recomputes the hint.
    prompts = await peer.call("prompts/list")
    assert (prompts["prompts"], prompts["ttlMs"], prompts["cacheScope"]) == ([], 30_000, "public")
    app.remove_tool("b")
    tools = await peer.call("tools/list")
    assert tools["ttlMs"] == 30_000


@async_test
async def test_every_page_carries_the_same_hint() -> None:
    app = Server("paged", page_size=1)
    for n, ttl in enumerate((500, 100, 900)):
        app.add_tool(lambda: "x", name=f"t{n}", ttl_ms=ttl, cache_scope="public")
    peer = Modern(app)
    first = await peer.call("tools/list")
    second = await peer.call("tools/list", {"cursor": first["nextCursor"]})
    assert (first["ttlMs"], first["cacheScope"]) == (second["ttlMs"], second["cacheScope"])
    assert first["ttlMs"] == 100


@async_test
async def test_resource_read_hint_and_legacy_has_none() -> None:
    app = make_app()
    read = await Modern(app).call("resources/read", {"uri": "test://item/7"})
    assert read["contents"][0]["text"] == "item 7"
    assert (read["ttlMs"], read["cacheScope"]) == (2_000, "private")
    legacy = Legacy(app)
    await legacy.initialize()
    old = (await legacy.send("resources/read", {"uri": "test://plain"}))["result"]
    assert "ttlMs" not in old and "cacheScope" not in old
    listed = (await legacy.send("tools/list", {}))["result"]
    assert "ttlMs" not in listed


def test_bad_hints_are_refused_at_registration() -> None:
    app = Server("bad")
    with pytest.raises(ValueError, match="ttl_ms"):
        app.add_tool(lambda: "x", name="neg", ttl_ms=-1)
    with pytest.raises(ValueError, match="cache_scope"):
        app.add_prompt(lambda: "x", name="p", cache_scope="shared")
    with pytest.raises(ValueError, match="ttl_ms"):
        Server("worse", cache_ttl_ms=1.5)  # type: ignore[arg-type]


# ================================================================ results shaped for 2026-07-28


@async_test
async def test_unknown_resource_is_invalid_params_with_its_uri() -> None:
    error = await Modern(make_app()).error("resources/read", {"uri": "test://nowhere"})
    assert error["code"] == INVALID_PARAMS
    assert error["data"] == {"uri": "test://nowhere"}


@async_test
async def test_logs_only_with_a_per_request_log_level() -> None:
    peer = Modern(make_app())
    silent = ListSink()
    await peer.tool("chatty", sink=silent)
    assert silent.of("notifications/message") == []
    loud = ListSink()
    await peer.tool("chatty", sink=loud, log_level="debug")
    assert [m["params"]["level"] for m in loud.of("notifications/message")] == ["debug", "warning"]
    some = ListSink()
    await peer.tool("chatty", sink=some, log_level="info")
    assert [m["params"]["data"] for m in some.of("notifications/message")] == ["a warning line"]


@async_test
async def test_task_tools_are_not_listed_with_the_legacy_execution_field() -> None:
    tools = (await Modern(make_app()).call("tools/list"))["tools"]
    assert all("execution" not in tool for tool in tools)


# ================================================================ input rounds (MRTR)


@async_test
async def test_one_question_one_round() -> None:
    peer = Modern(make_app())
    first = await peer.tool("ask_name")
    check_shape(v26.InputRequiredResult, first)
    assert first["resultType"] == "input_required"
    assert "ttlMs" not in first and "cacheScope" not in first
    assert first["inputRequests"] == {
        "user_name": {
            "method": "elicitation/create",
            "params": {"message": "What is your name?", "requestedSchema": NAME_SCHEMA},
        }
    }
    done = await peer.tool(
        "ask_name",
        inputResponses={"user_name": accept(name="Ada")},
        requestState=first["requestState"],
    )
    assert text(done) == "Hello, Ada!"
    check_shape(v26.CallToolResult, done)


@async_test
async def test_retry_without_request_state_and_extra_keys() -> None:
    peer = Modern(make_app())
    done = await peer.tool(
        "ask_name",
        inputResponses={"user_name": accept(name="Bo"), "noise": {"action": "cancel"}},
    )
    assert text(done) == "Hello, Bo!"


@async_test
async def test_missing_or_wrong_keys_ask_again() -> None:
    peer = Modern(make_app())
    again = await peer.tool("ask_name", inputResponses={"wrong_key": accept(name="x")})
    assert again["resultType"] == "input_required"
    assert list(again["inputRequests"]) == ["user_name"]


@async_test
async def test_malformed_input_responses_are_invalid_params() -> None:
    peer = Modern(make_app())
    error = await peer.tool_error("ask_name", inputResponses={"user_name": 12345})
    assert error["code"] == INVALID_PARAMS
    error = await peer.error(
        "tools/call", {"name": "ask_name", "arguments": {}, "inputResponses": None}
    )
    assert error["code"] == INVALID_PARAMS


@async_test
async def test_default_keys_follow_the_order_of_the_questions() -> None:
    peer = Modern(make_app())
    first = await peer.tool("default_keys")
    assert list(first["inputRequests"]) == ["elicitation-1"]
    second = await peer.tool(
        "default_keys",
        inputResponses={"elicitation-1": accept(name="x")},
        requestState=first["requestState"],
    )
    assert list(second["inputRequests"]) == ["roots-2"]
    assert second["inputRequests"]["roots-2"] == {"method": "roots/list", "params": {}}
    third = await peer.tool(
        "default_keys", inputResponses={"roots-2": ROOTS}, requestState=second["requestState"]
    )
    request = third["inputRequests"]["sampling-3"]
    assert request["method"] == "sampling/createMessage"
    assert request["params"]["maxTokens"] == 5
    done = await peer.tool(
        "default_keys",
        inputResponses={"sampling-3": model_says("ok")},
        requestState=third["requestState"],
    )
    assert text(done) == "accept 1 ok"


@async_test
async def test_gather_asks_everything_in_one_round() -> None:
    peer = Modern(make_app())
    first = await peer.tool("all_at_once")
    assert {k: v["method"] for k, v in first["inputRequests"].items()} == {
        "name": "elicitation/create",
        "greeting": "sampling/createMessage",
        "roots": "roots/list",
    }
    # Answering part of them asks the rest again; the answered one is carried in the state.
    partial = await peer.tool(
        "all_at_once",
        inputResponses={"name": accept(name="Cy")},
        requestState=first["requestState"],
    )
    assert sorted(partial["inputRequests"]) == ["greeting", "roots"]
    done = await peer.tool(
        "all_at_once",
        inputResponses={"greeting": model_says("Hi"), "roots": ROOTS},
        requestState=partial["requestState"],
    )
    assert text(done) == "Hi Cy (file:///work)"


@async_test
async def test_several_rounds_carry_answers_and_handler_state() -> None:
    peer = Modern(make_app())
    one = await peer.tool("two_rounds")
    assert list(one["inputRequests"]) == ["step1"]
    two = await peer.tool(
        "two_rounds", inputResponses={"step1": accept(name="A")}, requestState=one["requestState"]
    )
    assert list(two["inputRequests"]) == ["step2"]
    assert two["requestState"] != one["requestState"]
    # Only step2 is sent now: step1 comes back from the sealed state, and so does the count.
    done = await peer.tool(
        "two_rounds", inputResponses={"step2": accept(name="B")}, requestState=two["requestState"]
    )
    assert text(done) == "A then B after 3 runs"


@async_test
async def test_tampered_expired_and_foreign_state_is_refused() -> None:
    app = make_app(request_state_ttl=0.05)
    peer = Modern(app)
    first = await peer.tool("ask_name")
    state = first["requestState"]
    answers = {"user_name": accept(name="Eve")}
    for bad in (state + "-TAMPERED", state[:-2] + "AA", "v1.e30.AAAA", "junk", 42):
        error = await peer.tool_error("ask_name", inputResponses=answers, requestState=bad)
        assert error["code"] == INVALID_PARAMS, bad
    # Minted for other arguments (or another tool): refused.
    error = await peer.error(
        "tools/call",
        {
            "name": "ask_name",
            "arguments": {"x": 1},
            "inputResponses": answers,
            "requestState": state,
        },
    )
    assert error["code"] == INVALID_PARAMS
    error = await peer.tool_error("two_rounds", inputResponses=answers, requestState=state)
    assert error["code"] == INVALID_PARAMS
    await asyncio.sleep(0.1)
    error = await peer.tool_error("ask_name", inputResponses=answers, requestState=state)
    assert error["code"] == INVALID_PARAMS
    assert "requestState" in error["message"]


@async_test
async def test_state_key_is_shared_through_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(STATE_KEY_ENV, "a shared secret of the deployment, long enough")
    first = await Modern(make_app()).tool("ask_name")
    # Another server (another worker, another host) with the same key accepts the retry...
    done = await Modern(make_app()).tool(
        "ask_name",
        inputResponses={"user_name": accept(name="Fa")},
        requestState=first["requestState"],
    )
    assert text(done) == "Hello, Fa!"
    # ...one with its own key does not.
    other = Modern(make_app(state_key="another key entirely, also long enough"))
    error = await other.tool_error(
        "ask_name",
        inputResponses={"user_name": accept(name="Fa")},
        requestState=first["requestState"],
    )
    assert error["code"] == INVALID_PARAMS


def test_state_keys_and_sealer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(STATE_KEY_ENV, raising=False)
    monkeypatch.setenv("JETMCP_SETTINGS", '{"state_key": "from the exported settings"}')
    assert resolve_key() == b"from the exported settings"
    assert resolve_key("explicit") == b"explicit"
    monkeypatch.delenv("JETMCP_SETTINGS")
    assert resolve_key() != resolve_key()  # drawn per process (here: per call)
    sealer = StateSealer(b"k")
    digest = params_digest({"name": "t", "arguments": {"b": 1, "a": 2}, "_meta": {"x": 1}})
    assert digest == params_digest({"arguments": {"a": 2, "b": 1}, "name": "t", "requestState": 1})
    token = sealer.open(
        sealer.seal("tools/call", digest, {"k": {}}, {"s": 1}), "tools/call", digest
    )
    assert token == ({"k": {}}, {"s": 1})
    with pytest.raises(McpError):
        sealer.open(sealer.seal("prompts/get", digest, {}, {}), "tools/call", digest)


@async_test
async def test_catching_exception_does_not_swallow_the_round() -> None:
    peer = Modern(make_app())
    first = await peer.tool("careless")
    assert first["resultType"] == "input_required"
    done = await peer.tool("careless", inputResponses={"name": accept(name="Kim")})
    assert text(done) == "got Kim"


@async_test
async def test_same_key_twice_is_a_tool_error() -> None:
    result = await Modern(make_app()).tool("twice", inputResponses={"same": accept(name="x")})
    assert result["isError"] is True
    assert "twice" in text(result)


@async_test
async def test_questions_need_the_capability_the_request_declares() -> None:
    peer = Modern(make_app(), caps={"sampling": {}})
    error = await peer.tool_error("ask_name")
    assert error["code"] == MISSING_CLIENT_CAPABILITY
    assert error["data"] == {"requiredCapabilities": {"elicitation": {}}}
    # A client with URL elicitation only is missing the form mode.
    error = await peer.tool_error("ask_name", caps={"elicitation": {"url": {}}})
    assert error["data"] == {"requiredCapabilities": {"elicitation": {"form": {}}}}
    # Per request: the same client declaring it now is asked.
    first = await peer.tool("ask_name", caps={"elicitation": {}})
    assert first["resultType"] == "input_required"
    error = await peer.tool_error(
        "default_keys", caps={"elicitation": {}}, inputResponses={"elicitation-1": accept(name="x")}
    )
    assert error["data"] == {"requiredCapabilities": {"roots": {}}}


@async_test
async def test_prompts_and_resources_have_rounds_too() -> None:
    peer = Modern(make_app())
    first = await peer.call("prompts/get", {"name": "needs_topic"})
    assert list(first["inputRequests"]) == ["topic"]
    done = await peer.call(
        "prompts/get",
        {
            "name": "needs_topic",
            "inputResponses": {"topic": accept(name="owls")},
            "requestState": first["requestState"],
        },
    )
    check_shape(v26.GetPromptResult, done)
    assert done["messages"][0]["content"]["text"] == "Write about owls"
    read = await peer.call("resources/read", {"uri": "test://asks"})
    assert read["resultType"] == "input_required" and "ttlMs" not in read
    done = await peer.call(
        "resources/read",
        {
            "uri": "test://asks",
            "inputResponses": {"reader": accept(name="Gil")},
            "requestState": read["requestState"],
        },
    )
    assert done["contents"][0]["text"] == "read by Gil"
    assert done["ttlMs"] == 5_000


@async_test
async def test_list_methods_never_ask() -> None:
    peer = Modern(make_app())
    for method in ("tools/list", "prompts/list", "resources/list"):
        assert (await peer.call(method)).get("resultType") != "input_required"


@async_test
async def test_the_same_handler_sends_requests_on_a_legacy_session() -> None:
    legacy = Legacy(make_app())
    await legacy.initialize()
    call = asyncio.ensure_future(
        legacy.send("tools/call", {"name": "all_at_once", "arguments": {}})
    )
    await legacy.answer_next("elicitation/create", accept(name="Di"), 0)
    await legacy.answer_next("sampling/createMessage", model_says("Hey"), 0)
    await legacy.answer_next("roots/list", ROOTS, 0)
    result = (await call)["result"]
    assert text(result) == "Hey Di (file:///work)"


# ================================================================ subscriptions/listen


def listen_params(**notifications: Any) -> dict[str, Any]:
    return {"notifications": notifications}


@async_test
async def test_listen_acknowledges_first_then_streams_what_was_asked() -> None:
    app = make_app()
    peer = Modern(app)
    sink = ListSink()
    listen = peer.spawn(
        "subscriptions/listen",
        listen_params(toolsListChanged=True, resourceSubscriptions=["test://plain"]),
        sink=sink,
        id="sub-1",
    )
    await until(lambda: len(sink.messages) == 1)
    ack = sink.messages[0]
    assert ack["method"] == "notifications/subscriptions/acknowledged"
    assert ack["params"] == {
        "_meta": {META_SUBSCRIPTION_ID: "sub-1"},
        "notifications": {"toolsListChanged": True, "resourceSubscriptions": ["test://plain"]},
    }
    check_shape(v26.SubscriptionsAcknowledgedNotification, ack)
    app.add_prompt(lambda: "p", name="unwanted")  # not asked for
    app.add_tool(lambda: "t", name="added")
    await app.notify_resource_updated("test://other")  # not subscribed
    await app.notify_resource_updated("test://plain")
    await until(lambda: len(sink.messages) == 3)
    assert sink.methods()[1:] == [
        "notifications/tools/list_changed",
        "notifications/resources/updated",
    ]
    assert all(m["params"]["_meta"] == {META_SUBSCRIPTION_ID: "sub-1"} for m in sink.messages)
    assert sink.messages[2]["params"]["uri"] == "test://plain"
    listen.cancel()
    with pytest.raises(asyncio.CancelledError):
        await listen


@async_test
async def test_several_listens_and_their_filters() -> None:
    app = make_app()
    peer = Modern(app)
    tools, prompts = ListSink(), ListSink()
    a = peer.spawn("subscriptions/listen", listen_params(toolsListChanged=True), sink=tools, id=7)
    b = peer.spawn(
        "subscriptions/listen", listen_params(promptsListChanged=True), sink=prompts, id=8
    )
    await until(lambda: len(tools.messages) == 1 and len(prompts.messages) == 1)
    await app.notify_tools_changed()
    await app.notify_prompts_changed()
    await until(lambda: len(tools.messages) == 2 and len(prompts.messages) == 2)
    assert tools.messages[1]["method"] == "notifications/tools/list_changed"
    assert tools.messages[1]["params"]["_meta"][META_SUBSCRIPTION_ID] == 7
    assert prompts.messages[1]["method"] == "notifications/prompts/list_changed"
    assert prompts.messages[1]["params"]["_meta"][META_SUBSCRIPTION_ID] == 8
    await asyncio.sleep(0.01)
    assert len(tools.messages) == 2 and len(prompts.messages) == 2
    for task in (a, b):
        task.cancel()
    await asyncio.gather(a, b, return_exceptions=True)


@async_test
async def test_cancelled_listen_hears_nothing_more() -> None:
    app = make_app()
    peer = Modern(app)
    sink = ListSink()
    message = peer.message("subscriptions/listen", listen_params(toolsListChanged=True), id=99)
    # As stdio does: run it in a task, cancel through notifications/cancelled.
    reply = peer.start(message, sink)
    task = asyncio.ensure_future(reply)
    await until(lambda: len(sink.messages) == 1)
    assert peer.inflight.cancel(99)
    assert await task in (None, b"") or orjson.loads(await task)["error"]
    app.add_tool(lambda: "t", name="late")
    await asyncio.sleep(0.01)
    assert sink.methods() == ["notifications/subscriptions/acknowledged"]


@async_test
async def test_shutdown_ends_listens_with_their_final_result() -> None:
    app = make_app()
    peer = Modern(app)
    sink = ListSink()
    listen = peer.spawn(
        "subscriptions/listen", listen_params(toolsListChanged=True), sink=sink, id=5
    )
    await until(lambda: len(sink.messages) == 1)
    await app.close_subscriptions()
    reply = await listen
    assert reply["result"]["resultType"] == "complete"
    assert reply["result"]["_meta"][META_SUBSCRIPTION_ID] == 5
    check_shape(v26.SubscriptionsListenResult, reply["result"])


@async_test
async def test_a_listen_that_starts_after_shutdown_ends_at_once() -> None:
    # A request read just before the transport stopped may start after close_subscriptions
    # (stdio at EOF): it must not wait for ever.
    app = make_app()
    peer = Modern(app)
    sink = ListSink()
    await app.close_subscriptions()
    listen = peer.spawn(
        "subscriptions/listen", listen_params(toolsListChanged=True), sink=sink, id=6
    )
    reply = await asyncio.wait_for(listen, 5)
    assert sink.methods() == ["notifications/subscriptions/acknowledged"]
    assert reply["result"]["resultType"] == "complete"
    assert reply["result"]["_meta"][META_SUBSCRIPTION_ID] == 6


@async_test
async def test_listen_filter_is_validated_and_legacy_has_no_listen() -> None:
    peer = Modern(make_app())
    error = await peer.error("subscriptions/listen", {"notifications": {"toolsListChanged": "yes"}})
    assert error["code"] == INVALID_PARAMS
    error = await peer.error(
        "subscriptions/listen", {"notifications": {"resourceSubscriptions": "test://plain"}}
    )
    assert error["code"] == INVALID_PARAMS
    legacy = Legacy(make_app())
    await legacy.initialize()
    reply = await legacy.send("subscriptions/listen", {"notifications": {}})
    assert reply["error"]["code"] == METHOD_NOT_FOUND


def test_only_supported_filters_are_honoured() -> None:
    caps = {"tools": {"listChanged": True}, "resources": {"subscribe": True}, "prompts": {}}
    assert supported_filters(caps) == {"toolsListChanged", "resourceSubscriptions"}
    assert supported_filters({}) == frozenset()


# ================================================================ the tasks extension


async def settled(peer: Modern, task_id: str) -> dict[str, Any]:
    for _ in range(300):
        task: dict[str, Any] = await peer.call("tasks/get", {"taskId": task_id})
        if task["status"] in ("completed", "failed", "cancelled"):
            return task
        await asyncio.sleep(0.01)
    raise AssertionError("the task did not settle")


async def status(peer: Modern, task_id: str, wanted: str) -> dict[str, Any]:
    for _ in range(300):
        task: dict[str, Any] = await peer.call("tasks/get", {"taskId": task_id})
        if task["status"] == wanted:
            return task
        await asyncio.sleep(0.01)
    raise AssertionError(f"the task never was {wanted}")


@async_test
async def test_the_extension_is_advertised_on_2026_only() -> None:
    app = make_app()
    assert app.capabilities(R2026_07_28)["extensions"] == {TASKS_EXTENSION: {}}
    assert "tasks" not in app.capabilities(R2026_07_28)
    assert "extensions" not in app.capabilities(R2025_11_25)


@async_test
async def test_task_lifecycle() -> None:
    peer = Modern(make_app(task_ttl_ms=60_000, task_poll_interval_ms=250), caps=TASK_CAPS)
    created = await peer.tool("slow", {"seconds": 0.05})
    assert created["resultType"] == "task"
    assert set(created) >= {"taskId", "status", "createdAt", "lastUpdatedAt", "ttlMs"}
    assert "task" not in created and "ttl" not in created and "requestState" not in created
    assert (created["ttlMs"], created["pollIntervalMs"]) == (60_000, 250)
    # Durable at once: tasks/get works right after.
    working = await peer.call("tasks/get", {"taskId": created["taskId"]})
    assert working["taskId"] == created["taskId"] and "result" not in working
    done = await settled(peer, created["taskId"])
    assert done["status"] == "completed"
    assert text(done["result"]) == "slept 0.05"
    assert "io.modelcontextprotocol/related-task" not in done["result"].get("_meta", {})
    assert done["resultType"] == "complete"


@async_test
async def test_tool_errors_complete_and_protocol_errors_fail() -> None:
    peer = Modern(make_app(), caps=TASK_CAPS)
    tool_error = await settled(peer, (await peer.tool("must_task"))["taskId"])
    assert tool_error["status"] == "completed" and tool_error["result"]["isError"] is True
    failed = await settled(peer, (await peer.tool("breaks"))["taskId"])
    assert failed["status"] == "failed" and "result" not in failed
    assert failed["error"]["code"] == INTERNAL_ERROR and failed["error"]["message"] == "broken"


@async_test
async def test_cancel_is_idempotent_and_unknown_tasks_are_invalid() -> None:
    peer = Modern(make_app(), caps=TASK_CAPS)
    created = await peer.tool("slow", {"seconds": 60})
    for _ in range(2):  # the second one finds it cancelled already: the same ack
        ack = await peer.call("tasks/cancel", {"taskId": created["taskId"]})
        assert ack["resultType"] == "complete" and "taskId" not in ack and "status" not in ack
    assert (await settled(peer, created["taskId"]))["status"] == "cancelled"
    for method in ("tasks/get", "tasks/cancel"):
        error = await peer.error(method, {"taskId": "no-such-task"})
        assert error["code"] == INVALID_PARAMS
    for method in ("tasks/result", "tasks/list"):
        error = await peer.error(method, {"taskId": created["taskId"]})
        assert error["code"] == METHOD_NOT_FOUND


@async_test
async def test_without_the_extension() -> None:
    peer = Modern(make_app(), caps=ALL_CAPS)
    for method, params in (
        ("tasks/get", {"taskId": "x"}),
        ("tasks/update", {"taskId": "x", "inputResponses": {}}),
        ("tasks/cancel", {"taskId": "x"}),
    ):
        error = await peer.error(method, params)
        assert error["code"] == MISSING_CLIENT_CAPABILITY
        assert error["data"]["requiredCapabilities"] == {"extensions": {TASKS_EXTENSION: {}}}
    error = await peer.tool_error("must_task")
    assert error["code"] == MISSING_CLIENT_CAPABILITY
    assert error["data"]["requiredCapabilities"]["extensions"] == {TASKS_EXTENSION: {}}
    # Optional task tools just run; a legacy hint does not make a sync tool a task.
    assert text(await peer.tool("slow")) == "slept 0.0"
    hinted = await Modern(make_app(), caps=TASK_CAPS).tool(
        "greet", {"name": "Hal"}, task={"ttl": 1000}
    )
    assert hinted.get("resultType") != "task" and text(hinted) == "Hello, Hal!"


@async_test
async def test_task_questions_wait_for_tasks_update() -> None:
    peer = Modern(make_app(), caps=TASK_CAPS)
    created = await peer.tool("two_questions")
    task_id = created["taskId"]
    waiting = await status(peer, task_id, "input_required")
    assert sorted(waiting["inputRequests"]) == ["a", "b"]
    assert waiting["inputRequests"]["a"]["method"] == "elicitation/create"
    ack = await peer.call(
        "tasks/update",
        {"taskId": task_id, "inputResponses": {"a": accept(name="x"), "stray": {}}},
    )
    assert ack["resultType"] == "complete" and "status" not in ack
    partial = await peer.call("tasks/get", {"taskId": task_id})
    assert partial["status"] == "input_required" and list(partial["inputRequests"]) == ["b"]
    error = await peer.error("tasks/update", {"taskId": task_id, "inputResponses": {"b": 3}})
    assert error["code"] == INVALID_PARAMS
    await peer.call("tasks/update", {"taskId": task_id, "inputResponses": {"b": accept(name="y")}})
    done = await settled(peer, task_id)
    assert text(done["result"]) == "x y task=True"


@async_test
async def test_input_rounds_then_a_task() -> None:
    peer = Modern(make_app(), caps=TASK_CAPS)
    first = await peer.tool("rounds_then_task")
    assert first["resultType"] == "input_required" and "taskId" not in first
    created = await peer.tool(
        "rounds_then_task",
        inputResponses={"user_name": accept(name="Ivy")},
        requestState=first["requestState"],
    )
    assert created["resultType"] == "task" and "requestState" not in created
    waiting = await status(peer, created["taskId"], "input_required")
    assert list(waiting["inputRequests"]) == ["later"]
    await peer.call(
        "tasks/update",
        {"taskId": created["taskId"], "inputResponses": {"later": accept(name="yes")}},
    )
    done = await settled(peer, created["taskId"])
    assert text(done["result"]) == "Ivy yes task=True"


@async_test
async def test_deferred_task_tool_on_a_legacy_session_just_runs() -> None:
    app = make_app()
    legacy = Legacy(app)
    await legacy.initialize()
    call = asyncio.ensure_future(
        legacy.send(
            "tools/call", {"name": "rounds_then_task", "arguments": {}, "task": {"ttl": 60_000}}
        )
    )
    created = (await call)["result"]
    assert created["task"]["status"] == "working"
    await legacy.answer_next("elicitation/create", accept(name="Jo"), 0)
    await legacy.answer_next("elicitation/create", accept(name="ok"), 1)
    for _ in range(300):
        got = (await legacy.send("tasks/get", {"taskId": created["task"]["taskId"]}))["result"]
        if got["status"] == "completed":
            break
        await asyncio.sleep(0.01)
    result = (await legacy.send("tasks/result", {"taskId": created["task"]["taskId"]}))["result"]
    assert text(result) == "Jo ok task=True"
