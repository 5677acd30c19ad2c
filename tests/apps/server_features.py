"""The app of the stdio end-to-end test in tests/server/test_legacy_features.py: a tool that elicits
then samples, and a task-capable tool."""

from __future__ import annotations

import asyncio

from pydantic import BaseModel

from jetmcp.server import Context, Server

app = Server("jetmcp-feature-tests", version="0.1.0")


class Person(BaseModel):
    name: str
    age: int | None = None


@app.tool()
async def interview(topic: str, ctx: Context) -> str:
    """Ask who the user is, then have the client's model write one line about them"""
    answer = await ctx.elicit(f"Who wants to hear about {topic}?", Person)
    if answer.action != "accept":
        return f"no answer ({answer.action})"
    person = answer.data
    reply = await ctx.sample(f"One line about {person.name} and {topic}", max_tokens=50)
    return f"{person.name} ({person.age}): {reply.text}"


@app.tool(task_support="optional")
async def double(n: int) -> int:
    """Double n (may run as a task)"""
    return n * 2


@app.tool(task_support="optional")
async def slow_echo(text: str, ms: int = 0) -> str:
    """Answer ``text`` after ``ms`` milliseconds (may run as a task)"""
    await asyncio.sleep(ms / 1000)
    return text
