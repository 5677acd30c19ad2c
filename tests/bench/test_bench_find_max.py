"""The ``--find-max`` search on its own: against a server model whose p99 breaks the SLO
above a known rate, it lands within 10% of that rate (its goal) in few steps,
and it keeps to its time budget. The search against a real server is in test_bench_rate."""

from __future__ import annotations

import asyncio

import pytest

from jetmcp.bench import schedule
from jetmcp.bench.recorder import Recorder
from jetmcp.bench.report import Step

SECONDS = 3.0


def model(limit: float, noisy: set[int] | None = None) -> schedule.RunStep:
    """A step at ``rate``: every request answered, p99 1 ms up to ``limit``, 1 s above it
    (and above it too on the step numbers in ``noisy``)."""
    calls = [0]

    async def run_step(rate: float) -> Step:
        calls[0] += 1
        rec = Recorder(["tools/call add"], 0, open_model=True)
        n = int(rate * SECONDS)
        broken = rate > limit or (noisy is not None and calls[0] in noisy)
        rec.hists[0].record_n(1_000_000 if broken else 1_000, n)
        rec.replies[0] = n
        rec.sent = n
        return Step(rate, SECONDS, rec)

    return run_step


def backlogged(capacity: float) -> schedule.RunStep:
    """A step at ``rate`` against a server that answers ``capacity`` requests a second:
    every request answered, the last ones after the step's time when the rate is higher,
    each within a second (well inside a loose latency objective)."""

    async def run_step(rate: float) -> Step:
        rec = Recorder(["tools/call add"], 0, open_model=True)
        n = int(rate * SECONDS)
        rec.hists[0].record_n(1_000, n)
        rec.replies[0] = n
        rec.sent = n
        rec.ended_ns = int(max(SECONDS, n / capacity) * 1e9)
        return Step(rate, SECONDS, rec)

    return run_step


def search(capacity: float, run_step: schedule.RunStep, **kw: float) -> list[Step]:
    slo = schedule.Slo(50.0, 1.0)
    return asyncio.run(schedule.find_max(capacity, run_step, slo, **kw))  # type: ignore[arg-type]


@pytest.mark.parametrize("share", [0.1, 0.25, 0.5, 0.72, 0.8, 0.85, 0.93, 1.0, 1.25, 2.0, 3.0])
def test_lands_within_ten_percent_of_the_limit(share: float) -> None:
    capacity = 40_000.0
    limit = capacity * share
    steps = search(capacity, model(limit))
    found = schedule.best(steps)
    assert found is not None
    assert limit * 0.9 <= found <= limit
    assert len(steps) <= schedule.MAX_STEPS


@pytest.mark.parametrize("probe_share", [0.5, 1.0, 2.0])
def test_a_server_answering_its_backlog_late_did_not_keep_up(probe_share: float) -> None:
    # Found at 13x a server's capacity before: replies per second were counted over the
    # step's nominal time, so a server that answered a rate's requests late (within a loose
    # p99 objective) seemed to hold it.
    capacity = 40_000.0
    steps = search(capacity * probe_share, backlogged(capacity))
    found = schedule.best(steps)
    assert found is not None
    assert capacity * 0.9 <= found <= capacity / schedule.KEEP_UP
    assert all(s.rate <= capacity / schedule.KEEP_UP for s in steps if s.held)


def test_a_noisy_first_step_does_not_send_the_search_down() -> None:
    capacity = 40_000.0
    steps = search(capacity, model(capacity, noisy={1}))
    found = schedule.best(steps)
    assert found is not None and found >= capacity * 0.9
    assert steps[0].held is False and steps[1].rate == steps[0].rate


def test_keeps_to_its_time_budget() -> None:
    now = [0.0]

    def clock() -> float:
        return now[0]

    inner = model(20_000.0)

    async def slow_step(rate: float) -> Step:
        now[0] += 10.0
        return await inner(rate)

    slo = schedule.Slo(50.0, 1.0)
    steps = asyncio.run(schedule.find_max(40_000.0, slow_step, slo, budget_s=35.0, clock=clock))
    assert len(steps) == 3  # a fourth would end at 40 s
    assert now[0] <= 35.0
