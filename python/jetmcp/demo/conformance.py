"""The fixtures of the official MCP conformance suite (``@modelcontextprotocol/conformance``).

Names and behaviour follow the suite's reference servers for the 2025-11-25 requirement set:
tools, resources, a template and prompts, plus the completion target. Serve it with
``jetmcp run jetmcp.demo.conformance:app`` and point the suite at it
(``bash scripts/conformance.sh`` does both). The 2026-07-28 fixtures (MRTR tools,
``test_missing_capability``, ``test_logging_tool``...) are not here yet.
"""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Any

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
    raise RuntimeError("This tool intentionally returns an error for testing")


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
