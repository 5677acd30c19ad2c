"""Which rates a run tries: ``--ramp START:STOP:STEP`` and the ``--find-max`` search.

Both run the open model one rate at a time (a *step*) and judge each step against the
service level: its p99 within ``--slo-p99``, its failed requests within ``--max-errors``
percent, and the replies keeping up with the rate (a server that falls behind is not
holding it, whatever the latency of the replies it did send).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from jetmcp.bench.report import Step

#: A step whose replies came at less than this share of its rate did not keep up.
KEEP_UP = 0.97
#: ``--find-max`` stops when the rate that held and the one that broke are this close.
PRECISION = 0.025
#: ``--find-max`` tries at most this many rates after its probe.
MAX_STEPS = 14
#: ``--find-max``'s first rate, as a share of what the closed-loop probe reached (a server
#: holds about its closed-loop rate, the usual answer, so the search starts near the top).
START = 0.95
#: ``--find-max`` goes up by this factor while every rate holds (squared at each further
#: step up)...
UP = 1.1
#: ...and down by this one while none does, likewise.
DOWN = 0.85
#: ``--find-max`` starts no rate that would take its search (after the probe) past this.
FIND_MAX_SECONDS = 50.0


def parse_ramp(text: str) -> tuple[float, float, float]:
    """``START:STOP:STEP`` in requests/s; STEP may be omitted (one step up to STOP)."""
    parts = text.split(":")
    if len(parts) not in (2, 3):
        raise ValueError(f"--ramp wants START:STOP:STEP, got {text!r}")
    try:
        values = [float(p) for p in parts]
    except ValueError:
        raise ValueError(f"--ramp wants numbers, got {text!r}") from None
    start, stop = values[0], values[1]
    step = values[2] if len(values) == 3 else stop - start
    if start <= 0 or stop <= 0:
        raise ValueError("--ramp rates must be above 0")
    if step <= 0 and start != stop:
        raise ValueError("--ramp STEP must be above 0")
    return start, stop, step


def ramp_rates(start: float, stop: float, step: float, most: int = 1000) -> list[float]:
    rates: list[float] = []
    rate = start
    sign = 1.0 if stop >= start else -1.0
    while (rate - stop) * sign <= 1e-9 and len(rates) < most:
        rates.append(rate)
        if step <= 0:
            break
        rate += step * sign
    return rates


@dataclass
class Slo:
    p99_ms: float | None
    max_errors_pct: float

    def judge(self, step: Step) -> None:
        """Set ``step.held`` and say why it broke."""
        d = step.to_dict()
        why = []
        if d["replies_per_s"] < KEEP_UP * step.rate:
            why.append(f"replies {d['replies_per_s']:.0f}/s < {KEEP_UP:.0%} of the rate")
        if self.p99_ms is not None and d["latency_ms"]["p99"] > self.p99_ms:
            why.append(f"p99 {d['latency_ms']['p99']:.1f} ms > {self.p99_ms:g} ms")
        if d["errors_pct"] > self.max_errors_pct:
            why.append(f"errors {d['errors_pct']:.2f}% > {self.max_errors_pct:g}%")
        step.held = not why
        step.why = "; ".join(why)


RunStep = Callable[[float], Awaitable[Step]]


async def ramp(rates: list[float], run_step: RunStep, slo: Slo, stop_on_break: bool) -> list[Step]:
    steps = []
    for rate in rates:
        step = await run_step(rate)
        slo.judge(step)
        steps.append(step)
        if stop_on_break and not step.held:
            break
    return steps


async def find_max(
    capacity: float,
    run_step: RunStep,
    slo: Slo,
    *,
    budget_s: float = FIND_MAX_SECONDS,
    clock: Callable[[], float] = time.monotonic,
) -> list[Step]:
    """The highest rate that holds, from ``capacity`` (what a short closed loop reached).

    Start at :data:`START` of it; while every rate holds go up by :data:`UP`, while none
    does go down by :data:`DOWN`, each factor squared at the next step (a server near the
    probe's rate, the usual case, is bracketed closely; one far from it still in a few
    steps: a probe over few connections can be far below what more connections carry);
    once a held rate and a broken one bracket the answer, bisect until they are within
    :data:`PRECISION` of each other. The first rate to break is tried a second time before
    it counts (one noisy step would otherwise send the whole search down). No new rate
    starts when the last one's time would take the search past ``budget_s`` seconds, nor
    after :data:`MAX_STEPS` rates."""
    steps: list[Step] = []
    held = 0.0
    broke: float | None = None
    rate = max(1.0, capacity * START)
    began = clock()
    last = 0.0
    retried = False
    down = DOWN
    up = UP
    while len(steps) < MAX_STEPS:
        if steps and clock() - began + last > budget_s:
            break
        t0 = clock()
        step = await run_step(rate)
        last = clock() - t0
        slo.judge(step)
        steps.append(step)
        if step.held:
            held = max(held, rate)
        elif not retried:
            retried = True  # the first rate to break is tried once more: a noisy step
            continue  # would otherwise send the whole search down
        else:
            broke = rate if broke is None else min(broke, rate)
        if broke is None:
            rate = rate * up
            up *= up
        elif held == 0.0:
            rate = broke * down
            down *= down
        else:
            if broke <= held or (broke - held) / broke <= PRECISION:
                break
            # Far apart, the geometric mean halves the ratio; close, the plain mean.
            rate = (held * broke) ** 0.5 if broke > 2 * held else (held + broke) / 2.0
        if rate < 1.0:
            break
    return steps


def best(steps: list[Step]) -> float | None:
    rates = [s.rate for s in steps if s.held]
    return round(max(rates), 1) if rates else None
