"""``jetmcp run`` with Python's cyclic GC watched: every collection counted per generation
with its pause (``gc.callbacks``), written as JSON to ``$GC_PROBE_OUT`` when the process
exits (after the drain). ``GC_PROBE_FREEZE=0`` turns off ``jetmcp run``'s own
``gc.freeze()`` of the loaded app (to compare); ``GC_PROBE_THRESHOLD=a,b,c`` sets
``gc.set_threshold`` first.

    GC_PROBE_OUT=/tmp/gc.json .venv/bin/python bench/load/gc_probe.py run APP --transport http
"""

from __future__ import annotations

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


def _write() -> None:
    out = os.environ.get("GC_PROBE_OUT")
    if out:
        _stats["pid"] = os.getpid()
        _stats["frozen"] = gc.get_freeze_count()
        with open(f"{out}.{os.getpid()}", "w") as f:
            json.dump(_stats, f)


def main() -> int:
    threshold = os.environ.get("GC_PROBE_THRESHOLD")
    if threshold:
        a, b, c = (int(v) for v in threshold.split(","))
        gc.set_threshold(a, b, c)
    gc.callbacks.append(_on_gc)
    atexit.register(_write)
    os.register_at_fork(after_in_child=lambda: atexit.register(_write))
    from jetmcp.run.cli import main as jetmcp_main

    return jetmcp_main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
