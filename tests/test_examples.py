"""Every program in ``examples/`` runs: each server is a real ``jetmcp run module:app`` process
(``examples/`` on PYTHONPATH, as its docstring says), driven by its own client script (which uses
``jetmcp.Client`` or plain HTTP) and, for the quick start, by the official SDK's client too."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import anyio
import httpx
from mcp.client import Client as SdkClient

from harness.runnable import run_script, served
from harness.servers import ROOT, free_port

EXAMPLES = ROOT / "examples"


def lines(script: str, url: str | None = None) -> list[str]:
    args = [url] if url else []
    return run_script(EXAMPLES / script, *args).stdout.splitlines()


def test_quickstart_over_http_with_both_clients() -> None:
    with served("quickstart:app", EXAMPLES) as server:
        out = lines("quickstart_client.py", server.url)
        assert out == [
            "revision: 2026-07-28",
            "tools: ['add']",
            "add(40, 2) = 42",
            "motd: Keep calm and serve MCP.",
            "prompt: Please review this code:",
        ]

        async def sdk() -> None:
            with anyio.fail_after(20):
                async with SdkClient(server.url) as client:
                    added = await client.call_tool("add", {"a": 2, "b": 3})
                    assert added.structured_content == {"result": 5}
                    motd = await client.read_resource("quickstart://motd")
                    assert motd.contents[0].text == "Keep calm and serve MCP."  # type: ignore[union-attr]
                    prompt = await client.get_prompt("review", {"code": "x = 1"})
                    assert "x = 1" in prompt.messages[0].content.text  # type: ignore[union-attr]

        anyio.run(sdk)


def test_quickstart_over_stdio() -> None:
    out = run_script(EXAMPLES / "quickstart_client.py", "--stdio").stdout.splitlines()
    assert out[2:4] == ["add(40, 2) = 42", "motd: Keep calm and serve MCP."]


def test_batches_client() -> None:
    with served("quickstart:app", EXAMPLES) as server:
        out = lines("batches_client.py", server.url)
    sums = "tools ['add'], sums ['0', '2', '4', '6', '8']"
    # Arrays where the revision has them (2025-03-26: a one-time [ping] check, then the batch;
    # 2026-07-28: io.jetmcp/batch), concurrent single requests at 2025-11-25.
    assert out == [
        f"2025-03-26: {sums}, 2 write(s)",
        f"2025-11-25: {sums}, 6 write(s)",
        f"2026-07-28: {sums}, 1 write(s)",
        "x ok",
        "y error -32601",
    ]


def test_resources() -> None:
    with served("resources:app", EXAMPLES) as server:
        out = "\n".join(lines("resources_client.py", server.url))
    assert "resource: library://catalogue text/markdown" in out
    assert "template: library://books/{book_id}/pages/{page}" in out
    assert "- The Pragmatic Programmer (1999)" in out
    assert '"title": "Structure and Interpretation of Computer Programs"' in out
    assert "book 1, page 7: ..." in out
    assert "cover: image/png iVBORw0KGgo=" in out
    assert "book 99: -32602 no book 99" in out


def test_prompts_and_completion() -> None:
    with served("prompts:app", EXAMPLES) as server:
        out = lines("prompts_client.py", server.url)
    assert out == [
        "prompt: explain ['language', 'snippet']",
        "prompt: scaffold ['language', 'framework']",
        "Explain this rust code, line by line:",
        "['user', 'assistant']",
        "language r…: ['rust', 'ruby']",
        "python frameworks: ['django', 'fastapi', 'flask']",
        "docs t…: ['typescript']",
    ]


def test_elicitation_and_sampling_at_both_eras() -> None:
    with served("elicitation:app", EXAMPLES) as server:
        out = lines("elicitation_client.py", server.url)
    booked = "  Booked Chez Ada on 2026-12-24 for 4. See you then!"
    assert out == [
        "at 2025-11-25:",
        "  the server asks: Booking at Chez Ada: which day, how many?",
        "  the server samples: Write one friendly line confirming a tab …",
        booked,
        "at 2026-07-28:",
        "  the server asks: Booking at Chez Ada: which day, how many?",
        "  the server samples: Write one friendly line confirming a tab …",
        booked,
    ]


def test_tasks_at_both_eras() -> None:
    with served("tasks:app", EXAMPLES) as server:
        out = lines("tasks_client.py", server.url)
    assert out[0] == "2025-11-25 created: working"
    assert out[1] in ("2025-11-25 polled: working", "2025-11-25 polled: completed")
    assert out[2:] == [
        "2025-11-25 result: a report of 3 pages",
        "2026-07-28 created: task working",
        "2026-07-28 finished: completed a report of 3 pages",
    ]


def test_input_rounds() -> None:
    with served("input_rounds:app", EXAMPLES) as server:
        out = lines("input_rounds_client.py", server.url)
    assert out[0] == "round 1: input_required {'traveller': 'elicitation/create'}"
    assert out[1] == "revision: 2026-07-28"
    assert out[2].startswith(
        "Ada goes to Lisbon: walk, eat, listen to fado. (saved under file:///home/ada/trips; "
        "planned in "
    )


def test_every_example_is_exercised() -> None:
    tested = Path(__file__).read_text()
    for path in EXAMPLES.glob("*.py"):
        assert f'"{path.stem}:app"' in tested or f'"{path.name}"' in tested, path.name


def test_asgi_mount_under_uvicorn() -> None:
    """examples/asgi_mount.py: the quick start mounted in a Starlette app, served by uvicorn."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(EXAMPLES / "asgi_mount.py"), str(port)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            try:
                health = httpx.get(f"http://127.0.0.1:{port}/health", timeout=1.0)
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline, "asgi_mount.py did not come up"
                time.sleep(0.05)
        assert health.json() == {"ok": True}
        out = lines("quickstart_client.py", f"http://127.0.0.1:{port}/mcp-server/mcp")
        assert out[1:4] == ["tools: ['add']", "add(40, 2) = 42", "motd: Keep calm and serve MCP."]
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
