"""The app of tests/parity/test_eager_first_step.py's HTTP check: an ``async`` tool whose first
step (run
inside ``Dispatcher.start`` over HTTP) sends a notification before it returns."""

from __future__ import annotations

from jetmcp.server import Context, Server

app = Server("eager")


@app.tool()
async def logs(ctx: Context) -> str:
    await ctx.report_progress(1, 2)
    return "done"
