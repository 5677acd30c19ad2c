"""Which rates a run tries: ``--ramp START:STOP:STEP`` and the ``--find-max`` search.

Both run the open model one rate at a time (a *step*) and judge each step against the
service level: its p99 within ``--slo-p99``, its failed requests within ``--max-errors``
percent, and the replies keeping up with the rate (a server that falls behind is not
holding it, whatever the latency of the replies it did send).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from jetmcp.bench.report import Step

#: A step whose replies came at less than this share of its rate did not keep up.
KEEP_UP = 0.97
#: ``--find-max`` stops when the rate that held and the one that broke are this close.
PRECISION = 0.03
#: ``--find-max`` tries at most this many rates after its probe.
MAX_STEPS = 9


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


async def find_max(capacity: float, run_step: RunStep, slo: Slo) -> list[Step]:
    """Bisect between a rate that held and one that broke, from ``capacity`` (what a short
    closed loop reached): up from 90% of it while every rate holds, down while none does."""
    steps: list[Step] = []
    held = 0.0
    broke: float | None = None
    rate = max(1.0, capacity * 0.9)
    for _ in range(MAX_STEPS):
        step = await run_step(rate)
        slo.judge(step)
        steps.append(step)
        if step.held:
            held = max(held, rate)
        else:
            broke = rate if broke is None else min(broke, rate)
        if broke is None:
            rate = rate * 1.15
        elif held == 0.0:
            rate = broke * 0.6
        else:
            if (broke - held) / broke <= PRECISION:
                break
            rate = (held + broke) / 2.0
        if rate < 1.0:
            break
    return steps


def best(steps: list[Step]) -> float | None:
    rates = [s.rate for s in steps if s.held]
    return round(max(rates), 1) if rates else None
