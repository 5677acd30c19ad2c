"""Drive MCP servers with the official SDK client and print what they answered, as JSON.

Run with the interpreter of the environment the servers need (mcp 1.x or 2.x): the client
is that environment's own ``mcp.ClientSession``. Usage::

    python drive.py stdio CMD...     # a server command speaking stdio
    python drive.py http URL         # a Streamable HTTP endpoint
    python drive.py batch SPEC.json  # many servers, each on its SDK and on jetmcp

A batch spec is a list of ``{"key", "cwd", "transport", "sides": {"sdk": CMD, "jetmcp":
CMD}}``: for stdio CMD is the server command, for http it is a command that serves on the
port given as ``{port}``. The two sides of an entry run at once; the output maps each key to
``{"sdk": transcript, "jetmcp": transcript}``, where a side that could not be served is
``{"unserved": why}``.

The transcript holds ``initialize``'s result, every listing, and the answer (result or
JSON-RPC error) of: each tool called with arguments made up from its input schema and with
none, each resource read, each prompt got with made-up arguments, an unknown tool, an
unknown resource, an unknown prompt, and ``logging/setLevel``. Sampling and elicitation
requests from the server are answered with fixed values and recorded; notifications are
recorded in order per call.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from contextlib import AsyncExitStack
from typing import Any

import mcp
from mcp import ClientSession

V2 = hasattr(mcp, "MCPError") or not hasattr(mcp, "McpError")
if V2:
    from mcp import MCPError as ClientError
    from mcp import types
else:  # pragma: no cover - runs in the mcp 1.x environment
    from mcp import McpError as ClientError  # type: ignore[attr-defined,no-redef]
    from mcp import types  # type: ignore[no-redef]

TIMEOUT = 20.0


def dump(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json", by_alias=True, exclude_none=True)
    if isinstance(value, list | tuple):
        return [dump(v) for v in value]
    return value


def sample(schema: Any, depth: int = 0) -> Any:
    """A value of the JSON schema's type (the first choice of anything that offers some)."""
    if not isinstance(schema, dict) or depth > 4:
        return "a"
    if schema.get("enum"):
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    if "default" in schema:
        return schema["default"]
    for key in ("anyOf", "oneOf", "allOf"):
        if schema.get(key):
            choices = [c for c in schema[key] if c.get("type") != "null"] or schema[key]
            return sample(choices[0], depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if kind == "integer":
        return 1
    if kind == "number":
        return 1.5
    if kind == "boolean":
        return True
    if kind == "array":
        return []
    if kind == "object":
        props = schema.get("properties") or {}
        return {
            k: sample(v, depth + 1) for k, v in props.items() if k in schema.get("required", [])
        }
    return "a"


def arguments(schema: dict[str, Any]) -> dict[str, Any]:
    props = schema.get("properties") or {}
    defs = schema.get("$defs") or {}
    out: dict[str, Any] = {}
    for name in schema.get("required") or []:
        prop = props.get(name, {})
        ref = prop.get("$ref") if isinstance(prop, dict) else None
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            prop = defs.get(ref.split("/")[-1], {})
        out[name] = sample(prop)
    return out


class Recorder:
    def __init__(self) -> None:
        self.events: list[Any] = []

    async def on_message(self, message: Any) -> None:
        root = getattr(message, "root", message)
        if isinstance(root, Exception):
            self.events.append({"exception": type(root).__name__})
            return
        method = getattr(root, "method", None)
        if method is not None:
            params = dump(getattr(root, "params", None))
            if isinstance(params, dict):
                params.pop("progressToken", None)
            self.events.append({"notification": method, "params": params})

    async def on_log(self, params: Any) -> None:
        self.events.append({"log": dump(params)})

    async def on_sampling(self, context: Any, params: Any) -> Any:
        self.events.append({"sampling": dump(params)})
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text="sampled"),
            model="drive",
            stop_reason="endTurn",
        )

    async def on_elicit(self, context: Any, params: Any) -> Any:
        self.events.append({"elicit": dump(params)})
        return types.ElicitResult(action="decline")

    async def on_roots(self, context: Any) -> Any:
        self.events.append({"roots": True})
        return types.ListRootsResult(roots=[types.Root(uri="file:///tmp/drive", name="drive")])

    def take(self) -> list[Any]:
        taken, self.events = self.events, []
        return taken


async def answer(rec: Recorder, coro: Any) -> dict[str, Any]:
    try:
        result = await asyncio.wait_for(coro, TIMEOUT)
    except ClientError as exc:
        error = getattr(exc, "error", None)
        out: dict[str, Any] = {"error": dump(error) if error is not None else str(exc)}
    except TimeoutError:
        out = {"timeout": True}
    else:
        out = {"result": dump(result)}
    events = rec.take()
    if events:
        out["events"] = events
    return out


async def session_for(
    stack: AsyncExitStack,
    transport: str,
    target: list[str],
    errlog: Any = None,
    cwd: str | None = None,
) -> Any:
    if transport == "stdio":
        from mcp.client.stdio import StdioServerParameters, stdio_client

        params = StdioServerParameters(command=target[0], args=target[1:], cwd=cwd)
        opened = stdio_client(params) if errlog is None else stdio_client(params, errlog=errlog)
        streams = await stack.enter_async_context(opened)
    else:
        from mcp.client import streamable_http

        opener = (
            getattr(streamable_http, "streamable_http_client", None)
            or streamable_http.streamablehttp_client
        )
        streams = await stack.enter_async_context(opener(target[0]))
    return streams[0], streams[1]


async def drive(
    transport: str, target: list[str], errlog: Any = None, cwd: str | None = None
) -> dict[str, Any]:
    rec = Recorder()
    out: dict[str, Any] = {}
    async with AsyncExitStack() as stack:
        read, write = await session_for(stack, transport, target, errlog, cwd)
        session = await stack.enter_async_context(
            ClientSession(
                read,
                write,
                sampling_callback=rec.on_sampling,
                elicitation_callback=rec.on_elicit,
                list_roots_callback=rec.on_roots,
                logging_callback=rec.on_log,
                message_handler=rec.on_message,
            )
        )
        init = await asyncio.wait_for(session.initialize(), TIMEOUT)
        out["initialize"] = dump(init)
        rec.take()
        caps = init.capabilities
        calls: dict[str, Any] = {}
        out["calls"] = calls
        if caps.tools is not None:
            listed = await answer(rec, session.list_tools())
            out["tools/list"] = listed
            for tool in listed.get("result", {}).get("tools", []):
                name = tool["name"]
                args = arguments(tool.get("inputSchema") or {})
                calls[f"tool {name} {json.dumps(args, sort_keys=True)}"] = await answer(
                    rec, session.call_tool(name, args)
                )
                if args:
                    calls[f"tool {name} {{}}"] = await answer(rec, session.call_tool(name, {}))
            calls["tool <unknown>"] = await answer(rec, session.call_tool("no_such_tool", {}))
        if caps.resources is not None:
            listed = await answer(rec, session.list_resources())
            out["resources/list"] = listed
            out["resources/templates/list"] = await answer(rec, session.list_resource_templates())
            for resource in listed.get("result", {}).get("resources", []):
                uri = resource["uri"]
                calls[f"read {uri}"] = await answer(rec, session.read_resource(uri))
            calls["read <unknown>"] = await answer(rec, session.read_resource("nope://nothing"))
        if caps.prompts is not None:
            listed = await answer(rec, session.list_prompts())
            out["prompts/list"] = listed
            for prompt in listed.get("result", {}).get("prompts", []):
                args = {a["name"]: "a" for a in prompt.get("arguments") or [] if a.get("required")}
                calls[f"prompt {prompt['name']}"] = await answer(
                    rec, session.get_prompt(prompt["name"], args)
                )
            calls["prompt <unknown>"] = await answer(rec, session.get_prompt("no_such_prompt", {}))
        # Last, so no level set changes what the calls above logged: -32601 from a server
        # with no handler for it, {} from one with.
        calls["logging/setLevel"] = await answer(rec, session.set_logging_level("info"))
    return out


START_TIMEOUT = 30.0


class Unserved(Exception):
    pass


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _wait_port(port: int, proc: asyncio.subprocess.Process) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + START_TIMEOUT
    while True:
        if proc.returncode is not None:
            raise Unserved(f"exited with {proc.returncode}")
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            if loop.time() > deadline:
                raise Unserved("did not come up") from None
            await asyncio.sleep(0.05)
            continue
        writer.close()
        return


async def _side(transport: str, command: list[str], cwd: str) -> dict[str, Any]:
    import tempfile

    with tempfile.TemporaryFile() as errlog:
        try:
            if transport == "stdio":
                return await asyncio.wait_for(drive("stdio", command, errlog, cwd), TIMEOUT * 6)
            return await _http_side(command, cwd, errlog)
        except Exception as exc:
            errlog.seek(0)
            why = errlog.read().decode(errors="replace")[-3000:]
            return {"unserved": f"{type(exc).__name__}: {exc}\n{why}"}


async def _http_side(command: list[str], cwd: str, errlog: Any) -> dict[str, Any]:
    import os
    import signal

    port = _free_port()
    proc = await asyncio.create_subprocess_exec(
        *[part.replace("{port}", str(port)) for part in command],
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=errlog,
        cwd=cwd,
        start_new_session=True,
    )
    try:
        await _wait_port(port, proc)
        url = f"http://127.0.0.1:{port}/mcp"
        return await asyncio.wait_for(drive("http", [url]), TIMEOUT * 6)
    finally:
        if proc.returncode is None:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                await asyncio.wait_for(proc.wait(), 10)
            except (ProcessLookupError, TimeoutError):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                await proc.wait()


async def batch(spec: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for entry in spec:
        sides = entry["sides"]
        results = await asyncio.gather(
            *(_side(entry["transport"], sides[name], entry["cwd"]) for name in ("sdk", "jetmcp"))
        )
        out[entry["key"]] = dict(zip(("sdk", "jetmcp"), results, strict=True))
    return out


def main() -> int:
    mode = sys.argv[1]
    if mode == "batch":
        with open(sys.argv[2]) as f:
            spec = json.load(f)
        result = asyncio.run(batch(spec))
    else:
        result = asyncio.run(drive(mode, sys.argv[2:]))
    sys.stdout.write(json.dumps(result, sort_keys=True, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
