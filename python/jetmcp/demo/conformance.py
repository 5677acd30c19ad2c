"""The fixtures of the official MCP conformance suite (``@modelcontextprotocol/conformance``).

Names and behaviour follow the suite's reference servers: for the 2025-11-25 requirement set
tools, resources, a template and prompts, plus the completion target; for 2026-07-28 the
diagnostic tools, the input-round (MRTR) fixtures, the list-changing triggers for
``subscriptions/listen``, a tool with an ``x-mcp-header`` parameter, and the tasks-extension
fixtures. Every fixture serves both eras: the same ``ctx.elicit`` sends a request on a legacy
session and ends an input round on 2026-07-28. Serve it with
``jetmcp run jetmcp.demo.conformance:app`` and point the suite at it
(``bash scripts/conformance.sh`` does both).
"""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Annotated, Any

from pydantic import Field

from jetmcp.errors import INTERNAL_ERROR, McpError, ToolError
from jetmcp.server import (
    AcceptedElicitation,
    Audio,
    CompletionArgument,
    CompletionContext,
    Context,
    EmbeddedResource,
    Image,
    PromptReference,
    ResourceTemplateReference,
    Server,
)
from jetmcp.server.prompts import Message

app = Server(
    "jetmcp-conformance",
    version="0.1.0",
    instructions="Fixtures for the official MCP conformance suite.",
    title="jetmcp conformance fixtures",
)

#: A 1x1 PNG and a tiny WAV: the data the reference servers send.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)
WAV = base64.b64decode("UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=")


def _image() -> Image:
    return Image(data=PNG, format="png")


# -- tools ------------------------------------------------------------------------------------


@app.tool()
def test_simple_text() -> str:
    """Tests simple text content response"""
    return "This is a simple text response for testing."


@app.tool()
def test_image_content() -> Image:
    """Tests image content response"""
    return _image()


@app.tool()
def test_audio_content() -> Audio:
    """Tests audio content response"""
    return Audio(data=WAV, format="wav")


@app.tool()
def test_embedded_resource() -> EmbeddedResource:
    """Tests embedded resource content response"""
    return EmbeddedResource(
        "test://embedded-resource",
        text="This is an embedded resource content.",
        mime_type="text/plain",
    )


@app.tool()
def test_multiple_content_types() -> list[str | Image | EmbeddedResource]:
    """Tests response with multiple content types (text, image, resource)"""
    return [
        "Multiple content types test:",
        _image(),
        EmbeddedResource(
            "test://mixed-content-resource",
            text=json.dumps({"test": "data", "value": 123}, separators=(",", ":")),
            mime_type="application/json",
        ),
    ]


@app.tool()
async def test_tool_with_logging(ctx: Context) -> str:
    """Tests tool that emits log messages during execution"""
    await ctx.info("Tool execution started")
    await asyncio.sleep(0.05)
    await ctx.info("Tool processing data")
    await asyncio.sleep(0.05)
    await ctx.info("Tool execution completed")
    return "Tool with logging executed successfully"


@app.tool()
async def test_tool_with_progress(ctx: Context) -> str:
    """Tests tool that reports progress notifications"""
    for step in (0, 50, 100):
        await ctx.report_progress(step, 100, f"Completed step {step} of 100")
        if step < 100:
            await asyncio.sleep(0.05)
    return f"Progress test completed ({ctx.progress_token!r})"


@app.tool()
def test_error_handling() -> str:
    """Tests error response handling"""
    raise ToolError("This tool intentionally returns an error for testing")


@app.tool()
async def test_sampling(prompt: str, ctx: Context) -> str:
    """Tests server-initiated sampling (LLM completion request)"""
    answer = await ctx.sample(prompt, max_tokens=100)
    return f"LLM response: {answer.text if answer.text is not None else 'No response'}"


async def _elicit(ctx: Context, message: str, schema: dict[str, Any]) -> str:
    """Ask the client to fill in ``schema``; what it answered, as the references word it."""
    answer = await ctx.elicit(message, schema)
    content = answer.data if isinstance(answer, AcceptedElicitation) else None
    return f"action={answer.action}, content={json.dumps(content)}"


@app.tool()
async def test_elicitation(message: str, ctx: Context) -> str:
    """Tests server-initiated elicitation (user input request)"""
    answer = await _elicit(
        ctx,
        message,
        {
            "type": "object",
            "properties": {
                "username": {"type": "string", "description": "User's response"},
                "email": {"type": "string", "description": "User's email address"},
            },
            "required": ["username", "email"],
        },
    )
    return f"User response: {answer}"


@app.tool()
async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
    """Tests elicitation with default values for all primitive types (SEP-1034)"""
    answer = await _elicit(
        ctx,
        "Please review and update the form fields with defaults",
        {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "User name", "default": "John Doe"},
                "age": {"type": "integer", "description": "User age", "default": 30},
                "score": {"type": "number", "description": "User score", "default": 95.5},
                "status": {
                    "type": "string",
                    "description": "User status",
                    "enum": ["active", "inactive", "pending"],
                    "default": "active",
                },
                "verified": {
                    "type": "boolean",
                    "description": "Verification status",
                    "default": True,
                },
            },
            "required": [],
        },
    )
    return f"Elicitation completed: {answer}"


@app.tool()
async def test_elicitation_sep1330_enums(ctx: Context) -> str:
    """Tests elicitation with enum schema improvements (SEP-1330)"""
    answer = await _elicit(
        ctx,
        "Please select options from the enum fields",
        {
            "type": "object",
            "properties": {
                "untitledSingle": {
                    "type": "string",
                    "description": "Select one option",
                    "enum": ["option1", "option2", "option3"],
                },
                "titledSingle": {
                    "type": "string",
                    "description": "Select one option with titles",
                    "oneOf": [
                        {"const": "value1", "title": "First Option"},
                        {"const": "value2", "title": "Second Option"},
                        {"const": "value3", "title": "Third Option"},
                    ],
                },
                "legacyEnum": {
                    "type": "string",
                    "description": "Select one option (legacy)",
                    "enum": ["opt1", "opt2", "opt3"],
                    "enumNames": ["Option One", "Option Two", "Option Three"],
                },
                "untitledMulti": {
                    "type": "array",
                    "description": "Select multiple options",
                    "minItems": 1,
                    "maxItems": 3,
                    "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
                },
                "titledMulti": {
                    "type": "array",
                    "description": "Select multiple options with titles",
                    "minItems": 1,
                    "maxItems": 3,
                    "items": {
                        "anyOf": [
                            {"const": "value1", "title": "First Choice"},
                            {"const": "value2", "title": "Second Choice"},
                            {"const": "value3", "title": "Third Choice"},
                        ]
                    },
                },
            },
            "required": [],
        },
    )
    return f"Elicitation completed: {answer}"


#: The schema ``json_schema_2020_12_tool`` must list verbatim (2020-12 keywords and all).
JSON_SCHEMA_2020_12: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}


@app.tool(input_schema=JSON_SCHEMA_2020_12)
def json_schema_2020_12_tool(**arguments: Any) -> str:
    """Tool with JSON Schema 2020-12 features ($defs, $anchor, allOf/anyOf, if/then/else)"""
    return f"JSON Schema 2020-12 tool called with: {json.dumps(arguments, sort_keys=True)}"


@app.tool()
async def test_reconnection(ctx: Context) -> str:
    """Tests SSE polling: the server closes the stream mid-call, the client resumes it"""
    await ctx.info("Before disconnect")
    await ctx.close_sse_stream()
    await asyncio.sleep(0.2)
    await ctx.info("After reconnect")
    return "Reconnection test completed"


# -- resources --------------------------------------------------------------------------------


@app.resource("test://static-text", name="static-text", mime_type="text/plain")
def static_text() -> str:
    """A static text resource for testing"""
    return "This is the content of the static text resource."


@app.resource("test://static-binary", name="static-binary", mime_type="image/png")
def static_binary() -> bytes:
    """A static binary resource (image) for testing"""
    return PNG


@app.resource("test://template/{id}/data", name="template", mime_type="application/json")
def template_data(id: str) -> str:
    """A resource template with parameter substitution"""
    return json.dumps(
        {"id": id, "templateTest": True, "data": f"Data for ID: {id}"}, separators=(",", ":")
    )


@app.resource("test://watched-resource", name="watched-resource", mime_type="text/plain")
def watched_resource() -> str:
    """A resource that can be subscribed to for updates"""
    return "Watched resource content"


# -- prompts ----------------------------------------------------------------------------------


@app.prompt()
def test_simple_prompt() -> str:
    """A simple prompt without arguments"""
    return "This is a simple prompt for testing."


@app.prompt()
def test_prompt_with_arguments(arg1: str, arg2: str) -> str:
    """A prompt with required arguments

    Args:
        arg1: First test argument
        arg2: Second test argument
    """
    return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"


@app.prompt()
def test_prompt_with_embedded_resource(resourceUri: str) -> list[Message]:
    """A prompt that includes an embedded resource

    Args:
        resourceUri: URI of the resource to embed
    """
    return [
        Message(
            EmbeddedResource(
                resourceUri, text="Embedded resource content for testing.", mime_type="text/plain"
            )
        ),
        Message("Please process the embedded resource above."),
    ]


@app.prompt()
def test_prompt_with_image() -> list[Message]:
    """A prompt that includes image content"""
    return [Message(_image()), Message("Please analyze the image above.")]


# -- 2026-07-28: diagnostics ------------------------------------------------------------------


@app.tool()
async def test_missing_capability(ctx: Context) -> str:
    """Needs the client's sampling capability: without it the call fails with -32021"""
    answer = await ctx.sample("Say hello in one word.", max_tokens=16, key="sample")
    return f"Sampled: {answer.text}"


@app.tool()
async def test_streaming_elicitation(ctx: Context) -> str:
    """Streams a progress notification, then its result (and never a request to the client)"""
    await ctx.report_progress(50, 100, "Half way there")
    return "Streaming completed"


@app.tool()
async def test_logging_tool(ctx: Context) -> str:
    """Logs a message, only where the request asked for a log level"""
    await ctx.info("Logging tool called")
    return "Logging tool completed"


def _dynamic_tool() -> str:
    """A tool test_trigger_tool_change adds and removes"""
    return "Dynamic tool called"


def _dynamic_prompt() -> str:
    """A prompt test_trigger_prompt_change adds and removes"""
    return "Dynamic prompt"


@app.tool()
def test_trigger_tool_change() -> str:
    """Adds (or removes again) the tool test_dynamic_tool: listen streams hear of it"""
    if "test_dynamic_tool" in app.tools:
        app.remove_tool("test_dynamic_tool")
        return "Removed test_dynamic_tool"
    app.add_tool(_dynamic_tool, name="test_dynamic_tool")
    return "Added test_dynamic_tool"


@app.tool()
def test_trigger_prompt_change() -> str:
    """Adds (or removes again) the prompt test_dynamic_prompt: listen streams hear of it"""
    if "test_dynamic_prompt" in app.prompts:
        app.remove_prompt("test_dynamic_prompt")
        return "Removed test_dynamic_prompt"
    app.add_prompt(_dynamic_prompt, name="test_dynamic_prompt")
    return "Added test_dynamic_prompt"


@app.tool()
def test_x_mcp_header(
    region: Annotated[
        str, Field(description="The region", json_schema_extra={"x-mcp-header": "Region"})
    ],
) -> str:
    """Echoes its region, which clients also send as the Mcp-Param-Region header"""
    return f"Region: {region}"


# -- 2026-07-28: input rounds (MRTR) ------------------------------------------------------------

NAME_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string"}},
    "required": ["name"],
}
COLOR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"color": {"type": "string"}},
    "required": ["color"],
}
OK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}},
    "required": ["ok"],
}
CONFIRM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"confirm": {"type": "boolean"}},
    "required": ["confirm"],
}


def _field(answer: Any, name: str) -> Any:
    return answer.data.get(name) if isinstance(answer, AcceptedElicitation) else None


@app.tool()
async def test_input_required_result_elicitation(ctx: Context) -> str:
    """Asks the user's name (elicitation), then greets them"""
    answer = await ctx.elicit("What is your name?", NAME_SCHEMA, key="user_name")
    return f"Hello, {_field(answer, 'name') or 'stranger'}!"


@app.tool()
async def test_input_required_result_sampling(ctx: Context) -> str:
    """Asks the client's model a question (sampling), then reports its answer"""
    answer = await ctx.sample(
        "What is the capital of France?", max_tokens=100, key="capital_question"
    )
    return f"The model answered: {answer.text}"


@app.tool()
async def test_input_required_result_list_roots(ctx: Context) -> str:
    """Asks the client's roots, then lists them"""
    roots = await ctx.list_roots(key="client_roots")
    listed = ", ".join(f"{root.name or root.uri} ({root.uri})" for root in roots)
    return f"Client roots: {listed or 'none'}"


async def _confirm_with_state(ctx: Context) -> str:
    # Set before asking, so it is sealed into the round's requestState: finding it again on
    # the retry proves the state came back intact.
    came_back = ctx.request_state.get("asked") is True
    ctx.request_state["asked"] = True
    answer = await ctx.elicit("Please confirm", OK_SCHEMA, key="confirm")
    verdict = "state-ok" if came_back else "state-missing"
    return f"{verdict}: confirmed={_field(answer, 'ok')}"


@app.tool()
async def test_input_required_result_request_state(ctx: Context) -> str:
    """Asks for a confirmation and checks that its requestState comes back (state-ok)"""
    return await _confirm_with_state(ctx)


@app.tool()
async def test_input_required_result_tampered_state(ctx: Context) -> str:
    """Like the request-state fixture: a tampered requestState is refused with -32602"""
    return await _confirm_with_state(ctx)


@app.tool()
async def test_input_required_result_multiple_inputs(ctx: Context) -> str:
    """Asks a name, a greeting from the model and the roots, all in one round"""
    name, greeting, roots = await ctx.gather(
        ctx.elicit("What is your name?", NAME_SCHEMA, key="user_name"),
        ctx.sample("Generate a greeting", max_tokens=50, key="greeting"),
        ctx.list_roots(key="client_roots"),
    )
    return f"{greeting.text} {_field(name, 'name') or 'stranger'}! ({len(roots)} root(s))"


@app.tool()
async def test_input_required_result_multi_round(ctx: Context) -> str:
    """Asks a name, then (in a second round) a favourite colour"""
    first = await ctx.elicit("Step 1: What is your name?", NAME_SCHEMA, key="step1")
    second = await ctx.elicit("Step 2: What is your favorite color?", COLOR_SCHEMA, key="step2")
    return f"{_field(first, 'name')} likes {_field(second, 'color')}"


@app.tool()
async def test_input_required_result_capabilities(ctx: Context) -> str:
    """Asks only what the request's client capabilities allow"""
    caps = ctx.client_capabilities
    questions: list[Any] = []
    if "elicitation" in caps:
        questions.append(ctx.elicit("What is your name?", NAME_SCHEMA, key="user_name"))
    if "sampling" in caps:
        questions.append(ctx.sample("Say hello", max_tokens=50, key="greeting"))
    if "roots" in caps:
        questions.append(ctx.list_roots(key="client_roots"))
    if not questions:
        return "The client declared nothing that could be asked"
    answers = await ctx.gather(*questions)
    return f"Got {len(answers)} answer(s)"


@app.prompt()
async def test_input_required_result_prompt(ctx: Context) -> str:
    """A prompt that asks the user for context (elicitation) before it is rendered"""
    answer = await ctx.elicit(
        "What context should the prompt use?",
        {"type": "object", "properties": {"context": {"type": "string"}}, "required": ["context"]},
        key="user_context",
    )
    return f"Prompt with context: {_field(answer, 'context')}"


# -- 2026-07-28: the tasks extension ----------------------------------------------------------


@app.tool()
def greet(name: str) -> str:
    """Greets someone, at once (never a task)"""
    return f"Hello, {name}!"


@app.tool(task_support="optional")
async def slow_compute(seconds: float = 1.0, label: str = "") -> str:
    """Sleeps for some seconds, then answers; a task where the client allows tasks"""
    await asyncio.sleep(max(0.0, seconds))
    return f"Computed {label or 'result'} after {seconds:g} s"


@app.tool(task_support="required")
async def failing_job() -> str:
    """A task that fails as a tool (isError) after about a second"""
    await asyncio.sleep(1.0)
    raise ToolError("The job failed, as it always does")


@app.tool(task_support="optional")
async def protocol_error_job() -> str:
    """A task that ends in a protocol error (the task fails)"""
    await asyncio.sleep(0.05)
    raise McpError(INTERNAL_ERROR, "Internal error: the job broke down")


@app.tool(task_support="optional")
async def confirm_delete(filename: str, ctx: Context) -> str:
    """Asks for confirmation before (pretending to) delete a file"""
    answer = await ctx.elicit(f"Delete {filename}?", CONFIRM_SCHEMA, key="confirm")
    return f"Deleted {filename}" if _field(answer, "confirm") else f"Kept {filename}"


@app.tool(task_support="optional")
async def multi_input(ctx: Context) -> str:
    """Asks two questions at once"""
    name, confirm = await ctx.gather(
        ctx.elicit("What is your name?", NAME_SCHEMA, key="name"),
        ctx.elicit("Confirm?", CONFIRM_SCHEMA, key="confirm"),
    )
    return f"name={_field(name, 'name')}, confirm={_field(confirm, 'confirm')}"


@app.tool(task_support="required", defer_task=True)
async def test_tool_with_task(ctx: Context) -> str:
    """Asks the user's name in an input round, then goes on as a task"""
    answer = await ctx.elicit("What is your name?", NAME_SCHEMA, key="user_name")
    await ctx.start_task()
    await asyncio.sleep(0.2)
    return f"Hello, {_field(answer, 'name') or 'stranger'}, from a task!"


# -- completion -------------------------------------------------------------------------------

#: Suggestions for ``test_prompt_with_arguments``'s arguments, filtered by what was typed.
SUGGESTIONS = ("test", "testing", "test-value", "paris", "park", "party")


@app.completion()
def complete(
    ref: PromptReference | ResourceTemplateReference,
    argument: CompletionArgument,
    context: CompletionContext | None,
) -> list[str]:
    """Complete the arguments of ``test_prompt_with_arguments`` and the template's ``id``."""
    if isinstance(ref, PromptReference) and ref.name == "test_prompt_with_arguments":
        return [value for value in SUGGESTIONS if value.startswith(argument.value)]
    if isinstance(ref, ResourceTemplateReference) and argument.name == "id":
        return [value for value in ("1", "2", "3", "123") if value.startswith(argument.value)]
    return []


__all__ = ["app"]
