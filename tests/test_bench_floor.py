"""The load benchmark's floor (bench/load/floor.py) does each workload's real tool work: what
it computes is what the workload's correct reply carries. The floor's rate is only a bound
on every server if it skips none of that work."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench" / "load"))

import floor
from bodies import ISSUE11


@pytest.mark.parametrize("key", list(ISSUE11))
def test_the_floor_computes_what_the_reply_carries(key: str) -> None:
    workload = ISSUE11[key]
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
