"""p99 against p50 on the native engine, side by side with the uvloop floor, in one run:
writes bench/results/tail.md (and .json).

    .venv/bin/python bench/load/tail.py [--reps 3] [--duration 5] [--rates 0.5,0.8]

Servers, each fresh per run, pinned to core 0 (wrk and ``jetmcp bench`` to core 1), in
alternation ``--reps`` times: the uvloop floor (bench/load/uvloop_floor.py), jetmcp run
(native engine, one worker) as shipped (the heap frozen before serving), and the same with
the freeze turned off. jetmcp runs under bench/load/gc_probe.py, which counts every cyclic
GC collection and its pause. Workload: tools/call add @ 2025-06-18 (the floor answers it
with a canned reply).

Closed loop (wrk -t1 -c32): p50 there is about one round of the 32 connections, so any
stall of the one serving thread (a GC pause, another process on its core) costs p99 a
multiple of p50. Open model (``jetmcp bench --rate R``, latency counted from each request's
scheduled time, so coordinated omission is corrected): at ``--rates`` fractions of the rate
the closed loop reached on that server.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import cpuload
import preflight
from bodies import LEGACY_0618, REQUEST_SHAPES

from run import LOAD_CORE, SERVER_CORE, TMP, Running, free_port, log, pinned

ROOT = Path(__file__).resolve().parents[2]
PY = str(ROOT / ".venv/bin/python")
BODY = REQUEST_SHAPES["call-0618"].body
SERVERS = ("floor", "jetmcp", "jetmcp-nofreeze")


def _command(name: str, port: int) -> list[str]:
    if name == "floor":
        return [PY, "bench/load/uvloop_floor.py", "--host", "127.0.0.1", "--port", str(port)]
    return [PY, "bench/load/gc_probe.py", "run", "bench/load/jetmcp_server.py:app"]


def _wrk(url: str, seconds: int) -> dict[str, Any]:
    body_file = TMP / "tail-body.json"
    body_file.write_bytes(BODY)
    env = dict(os.environ, BENCH_BODY_FILE=str(body_file), BENCH_PROTOCOL_VERSION=LEGACY_0618)
    env.update(BENCH_SESSION_ID="", BENCH_AUTHORIZATION="", BENCH_HEADERS_FILE="")
    cmd = [*pinned(LOAD_CORE, 0), "wrk", "-t1", "-c32", f"-d{seconds}s", "--latency"]
    cmd += ["-s", str(Path(__file__).resolve().parent / "wrk_post.lua"), url]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    for line in done.stdout.splitlines():
        if line.startswith("BENCH_JSON "):
            result: dict[str, Any] = json.loads(line[len("BENCH_JSON ") :])
            return result
    raise RuntimeError(f"wrk printed no summary: {done.stderr[-300:]}")


def _open_model(url: str, rate: int, seconds: int) -> dict[str, Any]:
    """``jetmcp bench --rate``: its p50/p99 (ms) from the JSON report."""
    with tempfile.NamedTemporaryFile(suffix=".json", dir=TMP, delete=False) as f:
        out = Path(f.name)
    cmd = [*pinned(LOAD_CORE, 0), str(ROOT / ".venv/bin/jetmcp"), "bench", url]
    cmd += ["--transport", "http", "--tool", "add", "--args", '{"a": 1, "b": 2}']
    cmd += ["--revision", LEGACY_0618, "--rate", str(rate), "--duration", str(seconds)]
    cmd += ["--connections", "32"]
    cmd += ["--quiet", "--json", str(out)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=seconds + 60)
    try:
        text = out.read_text()
    finally:
        out.unlink(missing_ok=True)
    if not text:
        raise RuntimeError(f"jetmcp bench wrote no report: {done.stderr[-300:]}")
    report: dict[str, Any] = json.loads(text)
    return report


def _percentiles(report: dict[str, Any]) -> tuple[float, float, float]:
    """p50, p99 (ms) and the achieved rate of a ``jetmcp bench --json`` report."""
    latency = report["latency_ms"]
    return float(latency["p50"]), float(latency["p99"]), float(report["requests_per_s"])


def measure(name: str, args: argparse.Namespace) -> dict[str, Any]:
    port = free_port()
    cmd = _command(name, port)
    env = dict(os.environ)
    gc_out = TMP / f"tail-gc-{name}-{port}"
    if name != "floor":
        cmd += ["--transport", "http", "--host", "127.0.0.1", "--port", str(port)]
        cmd += ["--workers", "1", "--stateless"]
        env["GC_PROBE_OUT"] = str(gc_out)
        env["GC_PROBE_FREEZE"] = "0" if name == "jetmcp-nofreeze" else "1"
        env["GC_PROBE_CALLBACKS"] = "1"
    server = Running(cmd, TMP / f"tail-{name}.log", env, 0, core=SERVER_CORE)
    row: dict[str, Any] = {"server": name}
    try:
        if not preflight.wait_for_port(port, 30.0, server.alive):
            raise RuntimeError(f"{name} did not start: {server.log_tail()}")
        url = f"http://127.0.0.1:{port}/mcp"
        _wrk(url, args.warmup)
        before = cpuload.sample(server.proc.pid)
        result = _wrk(url, args.duration)
        after = cpuload.sample(server.proc.pid)
        rps = result["requests"] / (result["duration_us"] / 1e6)
        row.update(
            rps=rps,
            p50_ms=result["latency_us"]["p50"] / 1000,
            p99_ms=result["latency_us"]["p99"] / 1000,
            p999_ms=result["latency_us"]["p999"] / 1000,
            other_cores=cpuload.foreign_cores(before, after),
            server_us_per_req=(after.server - before.server) / max(1, result["requests"]) * 1e6,
        )
        for fraction in args.rates:
            report = _open_model(url, int(rps * fraction), args.duration)
            p50, p99, achieved = _percentiles(report)
            late = int(report["schedule"]["late"])
            row[f"open_{fraction:g}"] = {
                "rate": int(rps * fraction),
                "p50_ms": p50,
                "p99_ms": p99,
                "achieved": achieved,
                "late": late,
            }
    finally:
        server.stop()
    for path in TMP.glob(f"{gc_out.name}.*"):
        row["gc"] = json.loads(path.read_text())
        path.unlink()
    return row


def _med(rows: list[dict[str, Any]], pick: Any) -> float:
    values = [pick(r) for r in rows]
    return float(statistics.median(values)) if values else 0.0


def report(rows: list[dict[str, Any]], args: argparse.Namespace) -> str:
    lines = [
        "# p99 vs p50 on the native engine, with the uvloop floor in the same run",
        "",
        f"- **Date:** {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}",
        f"- **Command:** `.venv/bin/python bench/load/tail.py --reps {args.reps} --duration "
        f"{args.duration} --rates {','.join(f'{r:g}' for r in args.rates)}`",
        "- **Workload:** tools/call add @ 2025-06-18; server pinned to core 0, load to core 1; "
        "a fresh server per run; servers alternate",
        "- **Closed loop:** wrk -t1 -c32. **Open model:** `jetmcp bench --rate R` (latency from "
        "each request's scheduled time) at the given fractions of that run's closed-loop rate",
        "- **GC:** collections per generation and their summed pause from the moment "
        "the worker serves (warm-up, closed loop, open model), from gc.callbacks",
        "",
        "Each run (no medians hide anything):",
        "",
        "| server | req/s | p50 ms | p99 ms | p99/p50 | p99.9 ms | server µs/req | other cores "
        "| open-model p50 / p99 ms (p99/p50) | GC collections gen0/1/2 | GC pause ms "
        "gen0/1/2 (max) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|---|---|",
    ]
    for r in rows:
        opens = []
        for fraction in args.rates:
            o = r.get(f"open_{fraction:g}")
            if o:
                ratio = o["p99_ms"] / o["p50_ms"] if o["p50_ms"] else 0.0
                opens.append(
                    f"{fraction:.0%} ({o['rate']:,}/s): {o['p50_ms']:.2f} / {o['p99_ms']:.2f} "
                    f"({ratio:.1f}x, {o['late']:,} sent late)"
                )
        gc_stats = r.get("gc")
        counts = pauses = "—"
        if gc_stats:
            counts = "/".join(str(c) for c in gc_stats["collections"])
            pauses = "/".join(f"{p * 1e3:.1f}" for p in gc_stats["pause_s"])
            pauses += f" ({gc_stats['max_s'] * 1e3:.1f})"
        lines.append(
            f"| {r['server']} | {r['rps']:,.0f} | {r['p50_ms']:.2f} | {r['p99_ms']:.2f} | "
            f"{r['p99_ms'] / r['p50_ms']:.1f} | {r['p999_ms']:.2f} | "
            f"{r['server_us_per_req']:.1f} | {r['other_cores']:.2f} | {'; '.join(opens)} | "
            f"{counts} | {pauses} |"
        )
    lines += [
        "",
        "Per `data_received` callback of the native engine (each run, the whole serving time: "
        "closed loop and open model; µs): thread CPU time, the server's own work, and wall "
        "time, which also holds any time the core was taken away mid-callback; and the thread "
        "CPU time between two callbacks (the loop's own work, timers, tasks; a blocked "
        "epoll_wait costs none):",
        "",
        "| server | callbacks | CPU p50 | CPU p99 | CPU p99.9 | CPU max | CPU > 1 ms "
        "| wall p50 | wall p99 | wall p99.9 | wall max | wall > 1 ms "
        "| CPU between p50 | between p99 | between p99.9 | between max | between > 1 ms |",
        "|---|" + "---:|" * 16,
    ]
    for r in rows:
        cpu = (r.get("gc") or {}).get("callback_cpu")
        wall = (r.get("gc") or {}).get("callback_wall")
        between = (r.get("gc") or {}).get("between_cpu")
        if not cpu or not wall or not between:
            continue
        lines.append(
            f"| {r['server']} | {cpu['count']:,} | "
            + " | ".join(
                f"{q[k]:,.1f}" if k != "over_1ms" else f"{q[k]:,}"
                for q in (cpu, wall, between)
                for k in ("p50_us", "p99_us", "p999_us", "max_us", "over_1ms")
            )
            + " |"
        )
    lines += ["", "Medians per server:", "", "| server | req/s | p50 ms | p99 ms | p99/p50 |"]
    lines.append("|---|---:|---:|---:|---:|")
    for name in SERVERS:
        mine = [r for r in rows if r["server"] == name]
        if mine:
            lines.append(
                f"| {name} | {_med(mine, lambda r: r['rps']):,.0f} | "
                f"{_med(mine, lambda r: r['p50_ms']):.2f} | {_med(mine, lambda r: r['p99_ms']):.2f}"
                f" | {_med(mine, lambda r: r['p99_ms'] / r['p50_ms']):.1f} |"
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--duration", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--rates", default="0.5,0.8")
    parser.add_argument("--servers", default=",".join(SERVERS))
    parser.add_argument("--out", default=str(ROOT / "bench/results/tail"))
    args = parser.parse_args(argv)
    args.rates = [float(r) for r in args.rates.split(",") if r]
    TMP.mkdir(parents=True, exist_ok=True)
    rows = []
    names = args.servers.split(",")
    for rep in range(args.reps):
        for name in names if rep % 2 == 0 else reversed(names):
            row = measure(name, args)
            log(f"{name}: {json.dumps(row)}")
            rows.append(row)
    out = Path(args.out)
    out.with_suffix(".json").write_text(json.dumps(rows, indent=1) + "\n")
    out.with_suffix(".md").write_text(report(rows, args))
    log(f"wrote {out.with_suffix('.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
