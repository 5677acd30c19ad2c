"""The app of the tracing tests (tests/observe/test_observe.py): an OpenTelemetry SDK set up the way
an application does, exporting to memory, and a tool that hands back what was exported."""

from __future__ import annotations

import asyncio
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from jetmcp.server import Server

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)

app = Server("jetmcp-otel-tests", version="0.1.0")


@app.tool()
def add(a: int, b: int) -> int:
    """Add two integers"""
    return a + b


@app.tool()
async def nap(ms: int) -> str:
    """Wait, then answer (its span covers the wait); reports the span it runs under"""
    await asyncio.sleep(ms / 1000)
    ctx = trace.get_current_span().get_span_context()
    return f"{ctx.span_id:016x}"


@app.tool()
def spans() -> list[dict[str, Any]]:
    """Every span finished so far"""
    out = []
    for span in exporter.get_finished_spans():
        ctx = span.get_span_context()
        assert ctx is not None
        out.append(
            {
                "name": span.name,
                "trace_id": f"{ctx.trace_id:032x}",
                "span_id": f"{ctx.span_id:016x}",
                "parent_id": f"{span.parent.span_id:016x}" if span.parent else None,
                "attributes": dict(span.attributes or {}),
                "status": span.status.status_code.name,
            }
        )
    return out
