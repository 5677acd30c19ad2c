"""The app of the auth tests (tests/auth/test_auth.py): who is calling, components that need
scopes, components an ``authorize`` hook hides, and components that fail."""

from __future__ import annotations

import asyncio
from typing import Any

from jetmcp.auth import Principal
from jetmcp.server import Context, Server


def authorize(principal: Principal | None, component: Any) -> bool:
    """``secret_*`` tools, ``vault://`` resources and ``private_*`` prompts are Alice's."""
    name = getattr(component, "name", "")
    uri = getattr(component, "uri", None) or getattr(component, "uri_template", "")
    if name.startswith(("secret_", "private_")) or uri.startswith("vault://"):
        return principal is not None and principal.subject == "alice"
    return True


app = Server("jetmcp-auth-tests", version="0.1.0", authorize=None)
#: The same tools, with the hook (a second server: the hook turns off the fast path).
hooked = Server("jetmcp-auth-hooked", version="0.1.0", authorize=authorize)
#: The same tools, with unexpected exceptions shown to the client (an explicit choice).
unmasked = Server("jetmcp-auth-unmasked", version="0.1.0", mask_error_details=False)


class _Unprintable:
    def __str__(self) -> str:
        raise RuntimeError("/srv/app/models.py: dsn=postgres://u:p@db")

    __repr__ = __str__


def _register(server: Server) -> None:
    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers"""
        return a + b

    @server.tool()
    def whoami(ctx: Context) -> dict[str, Any]:
        """Who the server thinks is calling"""
        auth = ctx.auth
        if auth is None:
            return {"subject": None}
        return {
            "subject": auth.subject,
            "client_id": auth.client_id,
            "issuer": auth.issuer,
            "scopes": sorted(auth.scopes),
            "aud": auth.claims.get("aud"),
            "principal": repr(auth),
        }

    @server.tool(scopes=["admin"])
    def admin_reset() -> str:
        """Needs the admin scope"""
        return "reset"

    @server.tool(scopes=["files:write"], task_support="optional")
    async def write_file(path: str) -> str:
        """Needs files:write; may run as a task"""
        await asyncio.sleep(0.01)
        return f"wrote {path}"

    @server.tool(task_support="optional")
    async def slow(ms: int) -> str:
        """Wait, as a task or not"""
        await asyncio.sleep(ms / 1000)
        return f"slept {ms}"

    @server.tool()
    async def ask_name(ctx: Context) -> str:
        """One question to the user (an input round at 2026-07-28)"""
        answer = await ctx.elicit(
            "What is your name?",
            {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
            key="user_name",
        )
        return f"Hello, {answer.data['name']}!"

    @server.tool()
    def secret_plan() -> str:
        """Alice's only (the hook)"""
        return "the plan"

    @server.tool()
    def crash() -> str:
        """Fails with internals in its message"""
        raise RuntimeError("/srv/app/secrets.py: password=hunter2")

    @server.resource("admin://config", scopes=["admin"])
    def config() -> str:
        return "config"

    @server.resource("vault://{item}")
    def vault(item: str) -> str:
        return f"vault {item}"

    @server.resource("files://{name}", scopes=["files:read"])
    def file(name: str) -> str:
        return f"file {name}"

    @server.resource("info://broken")
    def broken() -> str:
        raise RuntimeError("/srv/app/db.py line 12: connection string postgres://u:p@db")

    @server.prompt(scopes=["admin"])
    def admin_prompt() -> str:
        return "admin prompt"

    @server.prompt()
    def private_note() -> str:
        return "private"

    @server.prompt()
    def greet(name: str) -> str:
        return f"Hello, {name}!"

    @server.prompt()
    def broken_prompt() -> str:
        raise RuntimeError("/srv/app/prompts.py: KeyError 'api_key'")

    @server.completion()
    def complete(ref: Any, argument: Any, context: Any) -> list[str]:
        raise RuntimeError("/srv/app/completions.py: token=s3cr3t")

    @server.tool()
    def unsendable() -> Any:
        """Returns what cannot be written as content"""
        return [_Unprintable()]


_register(app)
_register(hooked)
_register(unmasked)
