"""One ``jetmcp bench`` run in this process: negotiate, build the requests, drive the load
in the mode asked (closed loop, ``--rate``, ``--ramp``, ``--find-max``, a scenario), and
return the :class:`~jetmcp.bench.report.Report`."""

from __future__ import annotations

import asyncio
import sys
import time
from dataclasses import dataclass, field
from typing import Any, TextIO

from jetmcp.bench import schedule
from jetmcp.bench.connections import Conn, Dialer, describe_stderr
from jetmcp.bench.generator import Driver, Source
from jetmcp.bench.messages import Message, Negotiated, Speaker, negotiate
from jetmcp.bench.progress import Progress
from jetmcp.bench.recorder import Recorder
from jetmcp.bench.report import Report, Step
from jetmcp.bench.rust_driver import DRIVERS, RustDriver, why_not
from jetmcp.bench.scenario import Scenario, run_scenario

#: The label of a body carrying several requests (``--batch``).
BATCH_LABEL = "batch"


@dataclass
class BenchOptions:
    """What to run: a URL or a stdio command, the message mix, and how hard to push."""

    url: str | None = None
    stdio: str | None = None
    connections: int = 8
    #: Seconds to run; ignored when ``requests`` is set.
    duration: float = 10.0
    #: Total request bodies to send (each carries ``batch`` entries).
    requests: int | None = None
    #: ``(method, params)`` pairs, sent in rotation.
    mix: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    batch: int = 1
    revision: str | None = None
    #: Seconds a single exchange may take before it counts as a ``timeout`` error.
    timeout: float = 30.0
    headers: dict[str, str] = field(default_factory=dict)
    #: Open model: requests per second, sent on schedule.
    rate: float | None = None
    #: Open model: the most connections opened when all are busy.
    max_connections: int = 256
    ramp: tuple[float, float, float] | None = None
    step_duration: float | None = None
    find_max: bool = False
    slo_p99_ms: float | None = 100.0
    max_errors_pct: float = 1.0
    scenario: Scenario | None = None
    users: int | None = None
    #: Open model: a request leaving later than this after its time (with a connection
    #: free) counts as the generator falling behind.
    late_ms: float = 2.0
    connect_timeout: float = 10.0
    #: Weights of the mix's messages (``--weight``), 1 each when not given.
    weights: list[int] = field(default_factory=list)
    processes: int = 1
    #: ``--driver``: ``rust`` (the load loop in the extension), ``python``, or ``auto``
    #: (Rust when the run needs nothing Python must do per request).
    driver: str = "auto"


def messages_of(options: BenchOptions) -> list[Message]:
    mix = options.mix or [("tools/list", {})]
    weights = options.weights or [1] * len(mix)
    return [Message(m, dict(p), w) for (m, p), w in zip(mix, weights, strict=False)]


async def _stdio_handshake(conn: Conn, speaker: Speaker, counter: list[int]) -> None:
    """A new stdio server process: ``initialize`` at the revision negotiated, then
    ``notifications/initialized``; at 2026-07-28 (no handshake) one ``server/discover``,
    so the process has started up before it is timed."""
    counter[0] += 1
    wid = counter[0]
    legacy = speaker.revision.sessions
    body = speaker.initialize(wid) if legacy else speaker.encode(wid, "server/discover", {})
    try:
        _, reply, _, _ = await asyncio.wait_for(conn.call([], body, wid), 30.0)
    except (ConnectionError, TimeoutError) as exc:
        tail = describe_stderr(conn)
        raise RuntimeError(f"the stdio server did not answer: {tail or exc}") from None
    if b'"result"' not in reply:
        method = "initialize" if legacy else "server/discover"
        raise RuntimeError(f"the stdio server refused {method}: {reply[:200]!r}")
    if legacy:
        await conn.call([], speaker.initialized(), None)


def check(options: BenchOptions) -> None:
    """Refuse contradictory options (ValueError with the message to print)."""
    if (options.url is None) == (options.stdio is None):
        raise ValueError("give a URL or a stdio command")
    if options.connections < 1 or options.batch < 1:
        raise ValueError("connections and batch must be at least 1")
    modes = [
        name
        for name, on in (
            ("--rate", options.rate is not None),
            ("--ramp", options.ramp is not None and not options.find_max),
            ("--scenario/--users", options.scenario is not None),
        )
        if on
    ]
    if len(modes) > 1:
        raise ValueError(f"{' and '.join(modes)} are different modes: give one")
    if options.rate is not None and options.rate <= 0:
        raise ValueError("--rate must be above 0")
    if options.find_max and options.scenario is not None:
        raise ValueError("--find-max steps the rate of a mix: it cannot run a scenario")
    if options.driver not in DRIVERS:
        raise ValueError(f"--driver is one of {', '.join(DRIVERS)}")
    if options.driver == "rust":
        reason = why_not(options.url, options.scenario is not None)
        if reason is not None:
            raise ValueError(f"--driver rust: {reason}")
    if options.max_connections < options.connections:
        options.max_connections = options.connections


async def run_bench(options: BenchOptions, progress: TextIO | None = None) -> Report:
    """Run the benchmark; ``progress`` (e.g. ``sys.stderr``) gets a progress bar."""
    check(options)
    messages = messages_of(options)
    if options.scenario is not None:
        return await run_scenario(options.scenario, options, progress)
    negotiated = await negotiate(
        url=options.url,
        stdio=options.stdio,
        revision=options.revision,
        headers=options.headers,
        messages=messages,
        call_timeout=options.timeout,
    )
    try:
        return await _run_mix(options, messages, negotiated, progress)
    finally:
        await negotiated.client.close()


async def _run_mix(
    options: BenchOptions,
    messages: list[Message],
    negotiated: Negotiated,
    progress: TextIO | None,
) -> Report:
    speaker = negotiated.speaker
    rev = speaker.revision
    batch = options.batch
    if batch > 1 and not negotiated.batches:
        raise SystemExit(
            f"jetmcp bench: the server does not take JSON-RPC batches at {rev.version}; "
            "run without --batch, or at a revision that has them"
        )
    labels: list[str] = []
    for m in messages:
        if m.label not in labels:
            labels.append(m.label)
    if batch > 1:
        labels.append(BATCH_LABEL)
    templates = [speaker.template(m, labels.index(m.label)) for m in messages]
    is_http = options.url is not None
    session = negotiated.session
    headers = [speaker.headers(m, session) if is_http else [] for m in messages]
    batch_headers = speaker.headers(None, session, batch=True) if is_http else []
    source = Source(
        templates,
        headers,
        [m.weight for m in messages],
        batch,
        len(labels) - 1,
        batch_headers,
    )
    driver: Driver | RustDriver
    if options.driver != "python" and why_not(options.url, False) is None:
        assert options.url is not None
        driver = RustDriver(
            options.url,
            source,
            len(labels),
            timeout=options.timeout,
            connect_timeout=options.connect_timeout,
            late_ns=int(options.late_ms * 1e6),
        )
    else:
        dialer = Dialer(options.url, options.stdio, options.connect_timeout)
        counter = [1 << 40]
        driver = Driver(
            dialer,
            source,
            timeout=options.timeout,
            prepare=None if is_http else (lambda conn: _stdio_handshake(conn, speaker, counter)),
            late_ns=int(options.late_ms * 1e6),
        )

    def watch(rec: Recorder) -> None:
        bar.watch(driver.live(rec) if isinstance(driver, RustDriver) else rec)

    mode = "closed"
    if options.find_max:
        mode = "find-max"
    elif options.ramp is not None:
        mode = "ramp"
    elif options.rate is not None:
        mode = "open"
    report = Report(
        target=options.url or options.stdio or "",
        transport="http" if is_http else "stdio",
        revision=rev.version,
        connections=options.connections,
        batch=batch,
        wire_batches=batch == 1 or negotiated.batches,
        mix=[m.describe() for m in messages],
        mode=mode,
        rec=Recorder(labels, time.perf_counter_ns(), open_model=mode != "closed"),
        rate=options.rate,
        duration=None if options.requests is not None else options.duration,
        processes=options.processes,
    )
    report.extra["driver"] = "rust" if isinstance(driver, RustDriver) else "python"
    step_seconds = options.step_duration or (3.0 if options.find_max else 5.0)
    expected = _expected_seconds(options, step_seconds)
    bar = Progress(progress, expected, options.requests if mode in ("closed", "open") else None)
    bar.start()
    try:
        opened = await driver.fill(options.connections)
        if opened == 0:
            why = driver.connect_errors[-1] if driver.connect_errors else "no connection"
            raise OSError(f"cannot connect to {report.target}: {why}")

        async def run_step(rate: float) -> Step:
            rec = Recorder(labels, time.perf_counter_ns(), open_model=True)
            watch(rec)
            await driver.open_model(
                rec, rate, step_seconds, options.connections, options.max_connections
            )
            return Step(rate, step_seconds, rec)

        slo = schedule.Slo(options.slo_p99_ms, options.max_errors_pct)
        if mode == "closed":
            watch(report.rec)
            await driver.closed(report.rec, options.connections, options.duration, options.requests)
        elif mode == "open":
            assert options.rate is not None
            watch(report.rec)
            await driver.open_model(
                report.rec,
                options.rate,
                options.duration,
                options.connections,
                options.max_connections,
                options.requests,
            )
        elif mode == "ramp":
            assert options.ramp is not None
            rates = schedule.ramp_rates(*options.ramp)
            report.steps = await schedule.ramp(rates, run_step, slo, stop_on_break=False)
        else:
            if options.ramp is not None:
                rates = schedule.ramp_rates(*options.ramp)
                report.steps = await schedule.ramp(rates, run_step, slo, stop_on_break=True)
            else:
                probe = Recorder(labels, time.perf_counter_ns())
                watch(probe)
                await driver.closed(probe, options.connections, min(2.0, step_seconds), None)
                seconds = (probe.ended_ns - probe.started_ns) / 1e9 or 1e-9
                capacity = probe.requests / seconds
                report.notes.append(
                    f"closed-loop probe: {capacity:.0f} requests/s over "
                    f"{options.connections} connections"
                )
                report.extra["closed_loop_probe_rate"] = round(capacity, 1)
                report.steps = await schedule.find_max(capacity, run_step, slo)
            report.max_rate = schedule.best(report.steps)
        if report.steps:
            merged = report.rec
            merged.started_ns = report.steps[0].rec.started_ns
            for step in report.steps:
                merged.merge_raw(step.rec.to_raw())
            merged.ended_ns = report.steps[-1].rec.ended_ns
    finally:
        bar.stop(final=progress is not None)
        await driver.close()
    return report


def _expected_seconds(options: BenchOptions, step_seconds: float) -> float | None:
    if options.find_max:
        return None
    if options.ramp is not None:
        return len(schedule.ramp_rates(*options.ramp)) * step_seconds
    return options.duration


def stderr_or_none(quiet: bool) -> TextIO | None:
    return None if quiet else sys.stderr
