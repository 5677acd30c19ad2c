"""``--scenario FILE``: virtual users, each running a sequence of MCP steps.

A scenario is JSON or YAML::

    {"users": 8, "churn": 0, "steps": [
        {"initialize": {}}, {"list": "tools"},
        {"call": "add", "arguments": {"a": 1, "b": 2}, "weight": 3},
        {"call": "add", "arguments": {"a": 5, "b": 5}, "weight": 1},
        {"think_ms": 10}]}

Steps before the first ``call`` run once per session (``initialize`` is the legacy
handshake, or ``server/discover`` at 2026-07-28; ``list`` sends ``tools/list``,
``resources/list`` or ``prompts/list``; ``request`` sends any method with ``params``).
From the first ``call`` on, the steps repeat until the run ends; consecutive calls that
carry a ``weight`` are one choice, drawn by weight each iteration. ``churn: N`` ends the
session after N iterations (``DELETE`` for a legacy HTTP session, a new connection or
server process) and starts again from the first step. Each user has its own connection
(stdio: its own server process) and its own session, and waits for each reply before
its next step (think times apart), so latency is measured per step from its send.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from jetmcp.bench.connections import Conn, Dialer, HttpConn
from jetmcp.bench.messages import Message, Speaker, negotiate
from jetmcp.bench.progress import Progress
from jetmcp.bench.recorder import Recorder
from jetmcp.bench.report import Report

if TYPE_CHECKING:
    from jetmcp.bench.runner import BenchOptions

_LISTS = {"tools": "tools/list", "resources": "resources/list", "prompts": "prompts/list"}


class ScenarioError(ValueError):
    """A scenario file that cannot be run, with what is wrong in it."""


@dataclass
class Choice:
    """Calls drawn by weight (one of them per iteration)."""

    messages: list[Message]

    def draw(self, rng: random.Random) -> Message:
        if len(self.messages) == 1:
            return self.messages[0]
        return rng.choices(self.messages, weights=[m.weight for m in self.messages])[0]


@dataclass
class Think:
    seconds: float


Step = Message | Choice | Think


@dataclass
class Scenario:
    users: int = 1
    #: Steps run once per session (``initialize`` is a Message with that method).
    setup: list[Step] = field(default_factory=list)
    #: Steps run each iteration.
    body: list[Step] = field(default_factory=list)
    churn: int = 0
    iterations: int | None = None

    def messages(self) -> list[Message]:
        out: list[Message] = []
        for step in [*self.setup, *self.body]:
            if isinstance(step, Message):
                out.append(step)
            elif isinstance(step, Choice):
                out.extend(step.messages)
        return out


def load(path: str) -> Scenario:
    """Read a scenario from a JSON or YAML file (YAML needs PyYAML:
    ``pip install 'jetmcp[yaml]'``)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ScenarioError(f"cannot read the scenario {path}: {exc.strerror or exc}") from None
    data: Any
    if path.endswith((".yaml", ".yml")):
        try:
            import yaml  # type: ignore[import-untyped, unused-ignore]
        except ImportError:
            raise ScenarioError(
                "a YAML scenario needs PyYAML: pip install 'jetmcp[yaml]' (or give JSON)"
            ) from None
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ScenarioError(f"{path} is not valid YAML: {exc}") from None
    else:
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise ScenarioError(f"{path} is not valid JSON: {exc}") from None
    return parse(data)


def _count(data: dict[str, Any], key: str, default: int | None) -> int | None:
    value = data.get(key, default)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ScenarioError(f"scenario: {key!r} must be a whole number of 0 or more")
    return value


def parse(data: Any) -> Scenario:
    if not isinstance(data, dict):
        raise ScenarioError("a scenario is an object with 'steps'")
    unknown = set(data) - {"users", "steps", "churn", "iterations"}
    if unknown:
        raise ScenarioError(f"scenario: unknown keys {sorted(unknown)}")
    steps = data.get("steps")
    if not isinstance(steps, list) or not steps:
        raise ScenarioError("scenario: 'steps' must be a non-empty list")
    users = _count(data, "users", 1) or 1
    scenario = Scenario(
        users=users,
        churn=_count(data, "churn", 0) or 0,
        iterations=_count(data, "iterations", None),
    )
    looping = False
    for n, raw in enumerate(steps, 1):
        step = _step(raw, n)
        if isinstance(step, Message) and step.method == "tools/call":
            looping = True
        target = scenario.body if looping else scenario.setup
        if isinstance(step, Message) and step.method == "tools/call" and "weight" in raw:
            last = target[-1] if target else None
            if isinstance(last, Choice):
                last.messages.append(step)
            else:
                target.append(Choice([step]))
        elif isinstance(step, Message) and step.method == "tools/call":
            target.append(Choice([step]))
        else:
            target.append(step)
    if not scenario.body:
        raise ScenarioError("scenario: no 'call' step to repeat")
    return scenario


def _step(raw: Any, n: int) -> Step:
    where = f"scenario step {n}"
    if not isinstance(raw, dict) or not raw:
        raise ScenarioError(f"{where}: a step is an object such as {{'call': 'add'}}")
    if "initialize" in raw:
        return Message("initialize")
    if "list" in raw:
        kind = raw["list"]
        if kind not in _LISTS:
            raise ScenarioError(f"{where}: 'list' is one of {', '.join(_LISTS)}")
        return Message(_LISTS[kind])
    if "think_ms" in raw:
        value = raw["think_ms"]
        if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
            raise ScenarioError(f"{where}: 'think_ms' is a number of milliseconds")
        return Think(value / 1000.0)
    if "call" in raw:
        name = raw["call"]
        arguments = raw.get("arguments", {})
        weight = raw.get("weight", 1)
        if not isinstance(name, str) or not isinstance(arguments, dict):
            raise ScenarioError(f"{where}: 'call' names a tool; 'arguments' is an object")
        if not isinstance(weight, int) or isinstance(weight, bool) or weight < 1:
            raise ScenarioError(f"{where}: 'weight' is a whole number of 1 or more")
        return Message("tools/call", {"name": name, "arguments": arguments}, weight)
    if "request" in raw:
        method = raw["request"]
        params = raw.get("params", {})
        if not isinstance(method, str) or not isinstance(params, dict):
            raise ScenarioError(f"{where}: 'request' names a method; 'params' is an object")
        return Message(method, params)
    raise ScenarioError(f"{where}: unknown step {sorted(raw)}")


class _User:
    """One virtual user: sessions one after another until the run ends."""

    def __init__(
        self,
        n: int,
        scenario: Scenario,
        speaker: Speaker,
        dialer: Dialer,
        rec: Recorder,
        labels: dict[str, int],
        deadline: float,
        timeout: float,
    ) -> None:
        self.scenario = scenario
        self.speaker = speaker
        self.dialer = dialer
        self.rec = rec
        self.labels = labels
        self.deadline = deadline
        self.timeout = timeout
        self.rng = random.Random(n)
        self.ids = iter(range(1 + n * (1 << 32), (n + 1) * (1 << 32)))
        self.iterations = 0
        self.sessions = 0

    def _running(self) -> bool:
        limit = self.scenario.iterations
        if limit is not None and self.iterations >= limit:
            return False
        return time.monotonic() < self.deadline

    async def run(self) -> None:
        while self._running():
            try:
                conn = await self.dialer.open(None)
            except (OSError, TimeoutError) as exc:
                self.rec.failure(0, "transport", time.perf_counter_ns())
                self.rec.kinds[(0, f"connect: {exc}"[:80])] = 1
                await asyncio.sleep(0.1)
                continue
            self.sessions += 1
            session: str | None = None
            try:
                for step in self.scenario.setup:
                    session = await self._do(conn, step, session)
                done = 0
                while self._running() and not conn.closed:
                    for step in self.scenario.body:
                        session = await self._do(conn, step, session)
                    self.iterations += 1
                    done += 1
                    if self.scenario.churn and done >= self.scenario.churn:
                        break
            except ConnectionError:
                pass
            finally:
                await self._end(conn, session)
            if not self.scenario.churn:
                break

    async def _do(self, conn: Conn, step: Step, session: str | None) -> str | None:
        if isinstance(step, Think):
            await asyncio.sleep(step.seconds)
            return session
        message = step.draw(self.rng) if isinstance(step, Choice) else step
        speaker = self.speaker
        wid = next(self.ids)
        if message.method == "initialize":
            if speaker.revision.sessions:
                body = speaker.initialize(wid)
                label = "initialize"
            else:
                body = speaker.encode(wid, "server/discover", {})
                label = "server/discover"
                message = Message("server/discover")
        else:
            body = speaker.encode(wid, message.method, message.params)
            label = message.label
        headers = speaker.headers(message, session) if isinstance(conn, HttpConn) else []
        index = self.labels[label]
        start = time.perf_counter_ns()
        try:
            status, reply, keep_alive, named = await asyncio.wait_for(
                conn.call(headers, body, wid), self.timeout
            )
        except TimeoutError:
            self.rec.failure(index, "timeout", time.perf_counter_ns())
            conn.close()
            raise ConnectionError("timed out") from None
        except ConnectionError:
            self.rec.failure(index, "transport", time.perf_counter_ns())
            raise
        now = time.perf_counter_ns()
        self.rec.reply(index, (now - start) // 1000, now, status, reply, 1)
        if label == "initialize":
            session = named
            await conn.call(
                speaker.headers(None, session) if isinstance(conn, HttpConn) else [],
                speaker.initialized(),
                None,
            )
        if not keep_alive:
            conn.close()
            raise ConnectionError("the server closed the connection")
        return session

    async def _end(self, conn: Conn, session: str | None) -> None:
        if isinstance(conn, HttpConn):
            if session is not None and not conn.closed and conn.inflight == 0:
                with contextlib.suppress(ConnectionError, TimeoutError):
                    await asyncio.wait_for(conn.delete(self.speaker.headers(None, session)), 5.0)
            conn.close()
        else:
            stop = getattr(conn, "stop", None)
            if stop is not None:
                await stop()


async def run_scenario(
    scenario: Scenario, options: BenchOptions, progress: TextIO | None
) -> Report:
    if options.users is not None:
        scenario.users = options.users
    messages = scenario.messages()
    negotiated = await negotiate(
        url=options.url,
        stdio=options.stdio,
        revision=options.revision,
        headers=options.headers,
        messages=messages,
        call_timeout=options.timeout,
    )
    speaker = negotiated.speaker
    await negotiated.client.close()
    labels: list[str] = []
    for m in messages:
        label = m.label
        if m.method == "initialize":
            label = "initialize" if speaker.revision.sessions else "server/discover"
        if label not in labels:
            labels.append(label)
    rec = Recorder(labels, time.perf_counter_ns())
    dialer = Dialer(options.url, options.stdio, options.connect_timeout)
    index = {label: i for i, label in enumerate(labels)}
    deadline = time.monotonic() + options.duration
    users = [
        _User(n, scenario, speaker, dialer, rec, index, deadline, options.timeout)
        for n in range(scenario.users)
    ]
    bar = Progress(progress, options.duration, None)
    bar.watch(rec)
    bar.start()
    try:
        await asyncio.gather(*(u.run() for u in users))
    finally:
        rec.ended_ns = time.perf_counter_ns()
        bar.stop(final=progress is not None)
        await dialer.close_all()
    report = Report(
        target=options.url or options.stdio or "",
        transport="http" if options.url is not None else "stdio",
        revision=speaker.revision.version,
        connections=scenario.users,
        batch=1,
        wire_batches=True,
        mix=[m.describe() for m in messages],
        mode="scenario",
        rec=rec,
        users=scenario.users,
        processes=options.processes,
    )
    report.extra["iterations"] = sum(u.iterations for u in users)
    report.extra["sessions"] = sum(u.sessions for u in users)
    return report
