"""The load benchmark's floor (bench/load/floor.py) does each request-shape workload's real
tool work: what it computes is what the workload's correct reply carries. The floor's rate is
only a bound on every server if it skips none of that work. And the runner (bench/load/run.py)
picks those workloads by their group's name."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from harness.rsgi import Proto, Scope

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench" / "load"))

import floor
from bodies import REQUEST_SHAPES


@pytest.mark.parametrize("key", list(REQUEST_SHAPES))
def test_the_floor_computes_what_the_reply_carries(key: str) -> None:
    workload = REQUEST_SHAPES[key]
    works = floor._WORK[workload.body]
    reply = json.loads(workload.reply)
    replies = reply if isinstance(reply, list) else [reply]
    assert len(works) == len(replies) == workload.entries
    for work, answer in zip(works, replies, strict=True):
        result = answer["result"]
        out = work()
        if isinstance(out, tuple):  # scale: the text content and the structured result
            text, structured = out
            assert text.decode() == result["content"][0]["text"]
            assert json.loads(structured) == result["structuredContent"]
        else:
            assert str(out) == result["content"][0]["text"]
            assert {"result": out} == result["structuredContent"]


def test_the_floor_refuses_a_tool_that_waits() -> None:
    async def waits() -> None:
        await asyncio.sleep(0)

    with pytest.raises(RuntimeError, match="waited"):
        floor._finish(waits())


def _serve(key: str, headers: dict[str, str], **scope: str) -> tuple[int, bytes]:
    workload = REQUEST_SHAPES[key]
    proto = Proto(workload.body)
    asyncio.run(floor.rsgi_app(Scope(headers, **scope), proto))
    assert proto.reply is not None and isinstance(proto.reply.body, bytes)
    return proto.reply.status, proto.reply.body


@pytest.mark.parametrize("key", list(REQUEST_SHAPES))
def test_the_floor_answers_each_workload_with_its_headers(key: str) -> None:
    workload = REQUEST_SHAPES[key]
    assert _serve(key, workload.headers) == (200, workload.reply)


@pytest.mark.parametrize(
    ("key", "change", "status"),
    [
        ("call-0618", {"Origin": "http://evil.example"}, 403),
        ("call-0618", {"MCP-Protocol-Version": "2099-01-01"}, 400),
        ("call-0618", {"MCP-Protocol-Version": None}, 400),
        ("call-2026", {"Mcp-Name": "scale"}, 400),
        ("pydantic-2026", {"Mcp-Method": "tools/list"}, 400),
        ("pydantic-2026", {"Mcp-Name": None}, 400),
    ],
)
def test_the_floor_judges_the_headers_the_spec_requires(
    key: str, change: dict[str, str | None], status: int
) -> None:
    headers = dict(REQUEST_SHAPES[key].headers)
    for name, value in change.items():
        headers.pop(name, None)
        if value is not None:
            headers[name] = value
    assert _serve(key, headers)[0] == status


def test_the_floor_reads_the_method_and_path() -> None:
    headers = REQUEST_SHAPES["call-0618"].headers
    assert _serve("call-0618", headers, method="GET")[0] == 405
    assert _serve("call-0618", headers, path="/other")[0] == 405


def test_the_runner_picks_the_request_shapes_by_their_group(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import run

    assert run.parse_args([]).shape_rounds == 0
    args = run.parse_args(["--workloads", "request-shapes", "--shape-rounds", "2"])
    assert (args.workloads, args.shape_rounds) == (list(REQUEST_SHAPES), 2)
    assert capsys.readouterr().err == ""


def test_the_runner_takes_the_former_spellings_and_warns(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Commands of earlier runs (bench/results/history) still run as they were written."""
    import run

    args = run.parse_args(["--workloads", "issue11", "--issue11-pairs", "3"])
    assert (args.workloads, args.shape_rounds) == (list(REQUEST_SHAPES), 3)
    err = capsys.readouterr().err
    assert "is now --shape-rounds" in err
    assert "is now --workloads request-shapes" in err
