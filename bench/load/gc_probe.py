"""``jetmcp run`` with Python's cyclic GC watched: every collection from the moment the
worker starts serving counted per generation with its pause (``gc.callbacks``), written as
JSON to ``$GC_PROBE_OUT.PID`` when the process exits (after the drain; one worker only).
``GC_PROBE_FREEZE=0`` turns off ``jetmcp run``'s own ``gc.freeze()`` of the loaded app (to
compare); ``GC_PROBE_THRESHOLD=a,b,c`` sets ``gc.set_threshold`` first;
``GC_PROBE_CALLBACKS=1`` also times every ``data_received`` of the native engine (thread
CPU and wall time: quantiles in the JSON); ``GC_PROBE_SLOW_MS=1`` logs every event loop
callback longer than that (the loop's debug mode: slower everywhere, for finding names).

    GC_PROBE_OUT=/tmp/gc.json .venv/bin/python bench/load/gc_probe.py run APP --transport http
"""

from __future__ import annotations

import array
import atexit
import gc
import json
import os
import sys
import time
from typing import Any

_started: list[float] = [0.0]
_stats: dict[str, Any] = {"collections": [0, 0, 0], "pause_s": [0.0, 0.0, 0.0], "max_s": 0.0}


def _on_gc(phase: str, info: dict[str, int]) -> None:
    if phase == "start":
        _started[0] = time.perf_counter()
        return
    pause = time.perf_counter() - _started[0]
    generation = info["generation"]
    _stats["collections"][generation] += 1
    _stats["pause_s"][generation] += pause
    _stats["max_s"] = max(_stats["max_s"], pause)


#: Per ``data_received`` callback of the native engine: its thread CPU time and its wall
#: time (ns). CPU time does not advance while the process waits for its core, so its tail
#: is the server's own (GC, a slow path); wall minus CPU is time the core was taken away.
_cpu_ns = array.array("q")
_wall_ns = array.array("q")
#: Thread CPU time spent between two callbacks (the loop's own work, timers, tasks, GC
#: outside a callback; a blocked epoll_wait costs none): a stall of the server's own there
#: would show as a large gap.
_gap_ns = array.array("q")
_last_cpu = [0]
#: (wall seconds since the epoch, µs) of every gap above 1 ms of CPU: when they happen.
_big_gaps: list[tuple[float, float]] = []


def _watch_callbacks() -> None:
    from jetmcp.transports.native.connection import HttpConnection

    received = HttpConnection.data_received
    cpu = time.thread_time_ns
    wall = time.perf_counter_ns

    def timed(self: HttpConnection, data: bytes) -> None:
        c0, w0 = cpu(), wall()
        if _last_cpu[0]:
            gap = c0 - _last_cpu[0]
            _gap_ns.append(gap)
            if gap > 1_000_000:
                _big_gaps.append((time.time(), gap / 1000))
        received(self, data)
        c1 = _last_cpu[0] = cpu()
        _cpu_ns.append(c1 - c0)
        _wall_ns.append(wall() - w0)

    HttpConnection.data_received = timed  # type: ignore[method-assign]


def _quantiles(values: array.array[int]) -> dict[str, float]:
    ordered = sorted(values)
    if not ordered:
        return {}
    n = len(ordered)

    def at(q: float) -> float:
        return ordered[min(n - 1, int(q * n))] / 1000

    return {
        "count": n,
        "p50_us": at(0.5),
        "p99_us": at(0.99),
        "p999_us": at(0.999),
        "max_us": ordered[-1] / 1000,
        "over_1ms": sum(1 for v in ordered if v > 1_000_000),
    }


def _write() -> None:
    out = os.environ.get("GC_PROBE_OUT")
    if out:
        _stats["pid"] = os.getpid()
        _stats["frozen"] = gc.get_freeze_count()
        _stats["callback_cpu"] = _quantiles(_cpu_ns)
        _stats["callback_wall"] = _quantiles(_wall_ns)
        _stats["between_cpu"] = _quantiles(_gap_ns)
        _stats["big_gaps"] = _big_gaps
        with open(f"{out}.{os.getpid()}", "w") as f:
            json.dump(_stats, f)


def main() -> int:
    threshold = os.environ.get("GC_PROBE_THRESHOLD")
    if threshold:
        a, b, c = (int(v) for v in threshold.split(","))
        gc.set_threshold(a, b, c)
    import jetmcp.run.native

    settle = jetmcp.run.native.settle_heap
    freeze = os.environ.get("GC_PROBE_FREEZE") != "0"

    def serving() -> None:
        """The heap settled (or not), then the counts start: serving collections only."""
        if freeze:
            settle()
        _stats.update(collections=[0, 0, 0], pause_s=[0.0, 0.0, 0.0], max_s=0.0)
        if os.environ.get("GC_PROBE_CALLBACKS") == "1":
            _watch_callbacks()
        slow = os.environ.get("GC_PROBE_SLOW_MS")
        if slow:
            # The loop's debug mode: every callback longer than this is logged by name.
            import asyncio

            loop = asyncio.get_event_loop()
            loop.set_debug(True)
            loop.slow_callback_duration = float(slow) / 1000

    jetmcp.run.native.settle_heap = serving
    gc.callbacks.append(_on_gc)
    atexit.register(_write)
    os.register_at_fork(after_in_child=lambda: atexit.register(_write))
    from jetmcp.run.cli import main as jetmcp_main

    return jetmcp_main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
