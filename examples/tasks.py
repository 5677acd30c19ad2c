"""Tasks: a long tool call that the client starts, then polls, instead of waiting on it.

`task_support="optional"` lets a client run `report` as a task (2025-11-25: the client asks with
`params.task`; 2026-07-28: the `io.modelcontextprotocol/tasks` extension, where the server
decides); called plainly, it runs in the request like any tool.

    PYTHONPATH=examples jetmcp run tasks:app --transport http
    python examples/tasks_client.py
"""

import asyncio

from jetmcp import Context, Server

app = Server("tasks-example", task_poll_interval_ms=100)


@app.tool(task_support="optional")
async def report(pages: int, ctx: Context) -> str:
    """Write a report, one page at a time."""
    for page in range(pages):
        await ctx.report_progress(page, pages, f"page {page + 1}")
        await asyncio.sleep(0.05)
    return f"a report of {pages} pages"
