"""Pipelined stdio request/response throughput for one MCP server.

Spawns the server command, does ``initialize`` + ``notifications/initialized``, then, for a
warm-up and then a measured phase, writes ``tools/call add(1, 2)`` lines as fast as the
pipe takes them (up to ``--window`` unanswered requests; 0 = no limit) while a reader
thread reads the replies concurrently. Prints one JSON object on stdout: messages/s over
the measured phase, p50/p99/p99.9 of per-request latency (from handing the line to the pipe
until its reply line is read, so it includes the queue the pipelining builds), error and
wrong-answer counts, and the server's peak RSS.

Why a window: a server that reads stdin without pushing back (node does) would otherwise
swallow every line written during the run, and the numbers would measure its backlog.

    python stdio_driver.py --duration 10 -- node ts_sdk_server.cjs stdio

Standard library only (the runner calls it with the project's venv, the server runs in
whatever the command says).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bodies import SINGLE_PROTOCOL_VERSION
from proctree import tree_peak_rss_kib

_loads: Callable[[bytes], Any] = json.loads
with contextlib.suppress(ImportError):  # orjson when the venv has it: the reader is the hot loop
    import orjson

    _loads = orjson.loads

#: Lines handed to one write() call: enough to keep syscalls off the hot path, small
#: enough that the timestamp taken before the write is the send time of every line in it.
LINES_PER_WRITE = 8


@dataclass
class Phase:
    """Send times and reply latencies of one phase (warm-up or measured)."""

    first_id: int
    sent: dict[int, int] = field(default_factory=dict)
    latencies_ns: list[int] = field(default_factory=list)
    errors: int = 0
    wrong: int = 0
    first_send: int = 0
    last_reply: int = 0
    done: threading.Event = field(default_factory=threading.Event)
    #: Set while there is room under the in-flight window (cleared by the writer).
    room: threading.Event = field(default_factory=threading.Event)
    writer_finished: bool = False


class Driver:
    def __init__(self, proc: subprocess.Popen[bytes], window: int) -> None:
        assert proc.stdin is not None and proc.stdout is not None
        self.proc = proc
        #: Most requests in flight at once (0 = no limit: only the pipe pushes back).
        self.window = window
        self.stdin: IO[bytes] = proc.stdin
        self.stdout: IO[bytes] = proc.stdout
        self.lock = threading.Lock()
        self.phase: Phase | None = None
        self.init_reply: dict[str, Any] | None = None
        self.init_event = threading.Event()
        self.reader_error: str | None = None
        self.eof = threading.Event()

    # -- reader -------------------------------------------------------------------------

    def read_loop(self) -> None:
        fd = self.stdout.fileno()
        pending = b""
        try:
            while True:
                data = os.read(fd, 1 << 16)  # big reads: a raw pipe's readline goes byte by byte
                if not data:
                    break
                now = time.perf_counter_ns()
                lines = (pending + data).split(b"\n")
                pending = lines.pop()
                for line in lines:
                    if line.strip():
                        self._on_line(line, now)
        except Exception as exc:  # the driver must always report, never hang
            self.reader_error = repr(exc)
        finally:
            self.eof.set()
            self.init_event.set()
            with self.lock:
                if self.phase is not None:
                    self.phase.done.set()
                    self.phase.room.set()

    def _on_line(self, line: bytes, now: int) -> None:
        try:
            msg = _loads(line)
        except ValueError:
            return  # a stray non-JSON line (a banner, a log): not a reply
        if isinstance(msg, dict):
            self._on_message(msg, now)
        elif isinstance(msg, list):
            for item in msg:
                if isinstance(item, dict):
                    self._on_message(item, now)

    def _on_message(self, msg: dict[str, Any], now: int) -> None:
        msg_id = msg.get("id")
        if msg_id == 0:
            self.init_reply = msg
            self.init_event.set()
            return
        if not isinstance(msg_id, int):
            return  # a notification or a server->client request: not ours to time
        with self.lock:
            phase = self.phase
            if phase is None:
                return
            sent = phase.sent.pop(msg_id, None)
            if sent is None:
                return
            phase.latencies_ns.append(now - sent)
            phase.last_reply = now
            if "error" in msg:
                phase.errors += 1
            elif not _is_three(msg.get("result")):
                phase.wrong += 1
            if self.window and len(phase.sent) <= self.window // 2 and not phase.room.is_set():
                phase.room.set()
            if phase.writer_finished and not phase.sent:
                phase.done.set()

    # -- writer -------------------------------------------------------------------------

    def send(self, obj: dict[str, Any]) -> None:
        self.stdin.write(json.dumps(obj, separators=(",", ":")).encode() + b"\n")
        self.stdin.flush()

    def run_phase(self, first_id: int, seconds: float, max_messages: int) -> Phase:
        phase = Phase(first_id=first_id)
        with self.lock:
            self.phase = phase
        template = (
            '{"jsonrpc":"2.0","id":%d,"method":"tools/call",'
            '"params":{"name":"add","arguments":{"a":1,"b":2}}}\n'
        )
        next_id = first_id
        end_id = first_id + max_messages
        deadline = time.perf_counter() + seconds
        phase.first_send = time.perf_counter_ns()
        fd = self.stdin.fileno()
        while next_id < end_id and time.perf_counter() < deadline and not self.eof.is_set():
            ids = range(next_id, min(next_id + LINES_PER_WRITE, end_id))
            chunk = "".join(template % i for i in ids).encode()
            with self.lock:
                full = self.window > 0 and len(phase.sent) + len(ids) > self.window
                if full:
                    phase.room.clear()
                else:
                    now = time.perf_counter_ns()
                    for i in ids:
                        phase.sent[i] = now
            if full:
                # The reader sets `room` once half the window has been answered.
                phase.room.wait(1.0)
                continue
            try:
                view = memoryview(chunk)
                while view:
                    written = os.write(fd, view)
                    view = view[written:]
            except (BrokenPipeError, OSError):
                break
            next_id = ids.stop
        with self.lock:
            phase.writer_finished = True
            if not phase.sent:
                phase.done.set()
        return phase


def _is_three(result: Any) -> bool:
    if not isinstance(result, dict):
        return False
    content = result.get("content")
    if not isinstance(content, list) or not content:
        return False
    first = content[0]
    return isinstance(first, dict) and first.get("text") == "3"


def _percentile(sorted_values: list[int], pct: float) -> float:
    if not sorted_values:
        return 0.0
    index = min(len(sorted_values) - 1, max(0, round(pct / 100.0 * len(sorted_values)) - 1))
    return float(sorted_values[index])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=10.0, help="measured seconds")
    parser.add_argument("--warmup", type=float, default=2.0, help="warm-up seconds")
    parser.add_argument(
        "--window",
        type=int,
        default=512,
        help="most requests in flight (0 = unlimited: write as fast as the pipe takes them)",
    )
    parser.add_argument("--max-messages", type=int, default=2_000_000)
    parser.add_argument("--drain-timeout", type=float, default=60.0)
    parser.add_argument("--stderr-log", type=Path, default=None)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command: list[str] = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the server command after --")

    # SIGTERM (a timeout, the runner) unwinds like Ctrl-C, so the server is always ended.
    signal.signal(signal.SIGTERM, _raise_exit)
    stderr_file: IO[bytes] | int = subprocess.DEVNULL
    if args.stderr_log is not None:
        stderr_file = args.stderr_log.open("wb")
    report: dict[str, Any] = {"ok": False}
    proc = subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=stderr_file,
        bufsize=0,
        start_new_session=True,
    )
    driver = Driver(proc, args.window)
    reader = threading.Thread(target=driver.read_loop, daemon=True)
    reader.start()
    try:
        driver.send(
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": SINGLE_PROTOCOL_VERSION,
                    "capabilities": {},
                    "clientInfo": {"name": "jetmcp-bench", "version": "0"},
                },
            }
        )
        if not driver.init_event.wait(30.0) or driver.init_reply is None:
            report["error"] = "no initialize reply within 30 s" + (
                f" (server exited {proc.poll()})" if proc.poll() is not None else ""
            )
            return _finish(report, proc, driver)
        if "result" not in driver.init_reply:
            report["error"] = f"initialize failed: {json.dumps(driver.init_reply)[:300]}"
            return _finish(report, proc, driver)
        report["protocol_version"] = driver.init_reply["result"].get("protocolVersion")
        driver.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

        phases: dict[str, Phase] = {}
        next_id = 1
        for name, seconds in (("warmup", args.warmup), ("measured", args.duration)):
            phase = driver.run_phase(next_id, seconds, args.max_messages)
            sent_count = len(phase.sent) + len(phase.latencies_ns)
            next_id += args.max_messages
            if not phase.done.wait(args.drain_timeout):
                report["error"] = (
                    f"{name}: {len(phase.sent)} of {sent_count} replies missing "
                    f"after {args.drain_timeout:.0f} s"
                )
                return _finish(report, proc, driver)
            if phase.sent:
                report["error"] = f"{name}: server closed stdout with {len(phase.sent)} unanswered"
                return _finish(report, proc, driver)
            phases[name] = phase

        measured = phases["measured"]
        lat = sorted(measured.latencies_ns)
        span_s = max(1e-9, (measured.last_reply - measured.first_send) / 1e9)
        report.update(
            ok=True,
            window=args.window,
            messages=len(lat),
            seconds=span_s,
            messages_per_s=len(lat) / span_s,
            errors=measured.errors,
            wrong=measured.wrong,
            latency_us={
                "p50": _percentile(lat, 50) / 1000,
                "p99": _percentile(lat, 99) / 1000,
                "p999": _percentile(lat, 99.9) / 1000,
                "max": (lat[-1] if lat else 0) / 1000,
            },
        )
        return _finish(report, proc, driver)
    finally:
        # Interrupted (Ctrl-C) before _finish: the server has its own session, so end it here.
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, 9)
            proc.wait()
        if not isinstance(stderr_file, int):
            stderr_file.close()


def _raise_exit(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def _finish(report: dict[str, Any], proc: subprocess.Popen[bytes], driver: Driver) -> int:
    report["rss_kib"] = tree_peak_rss_kib(proc.pid)
    if driver.reader_error:
        report["reader_error"] = driver.reader_error
    with contextlib.suppress(OSError):
        driver.stdin.close()
    try:
        proc.wait(5.0)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, 15)
        try:
            proc.wait(5.0)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, 9)
            proc.wait()
    print(json.dumps(report))
    return 0 if report.get("ok") else 1


if __name__ == "__main__":
    sys.exit(main())
