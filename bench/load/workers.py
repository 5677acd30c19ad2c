"""``--workers 2`` against ``--workers 1`` on the native engine, with wrk on the same cores,
measured with CPU accounting: writes bench/results/workers.md (and .json).

    .venv/bin/python bench/load/workers.py [--reps 3] [--duration 5]

For each workload (a plain ``add`` call, the pydantic ``scale`` tool, and ``spin``, a
CPU-bound tool of ~100-200 µs) and each worker count, in alternation and ``--reps`` times:
the server runs unpinned (``jetmcp run bench/load/workers_app.py:app --transport http
--stateless --workers N``), wrk (``-t2 -c64``, also unpinned: the same two cores) drives it
after a warm-up, and the script reads

- the rate and latency wrk reports;
- the CPU seconds of every server process and of wrk (``/proc/PID/stat``, ``getrusage``);
- the bytes each worker wrote (``/proc/PID/io`` ``wchar``) divided by the reply size: the
  requests each worker answered; and the connections each worker holds (``ss``);
- the CPU other processes used meanwhile (the machine is shared).

From those: server and wrk CPU µs per request, the ceiling the two cores allow
(``2 s / (server + wrk CPU per request)``), the rate per server CPU second (does a second
worker cost anything?), and how evenly connections and requests are spread.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import cpuload
import preflight
from bodies import LEGACY_0618, REQUEST_SHAPES, _dumps, tool_call
from proctree import descendants

from run import TMP, Running, free_port, log

ROOT = Path(__file__).resolve().parents[2]
SPIN_ROUNDS = 2000

#: workload key -> (title, body, MCP-Protocol-Version)
WORKLOADS: dict[str, tuple[str, bytes, str]] = {
    "call": ("tools/call add", REQUEST_SHAPES["call-0618"].body, LEGACY_0618),
    "pydantic": (
        "tools/call of async scale(Point, float) -> Point",
        REQUEST_SHAPES["pydantic"].body,
        LEGACY_0618,
    ),
    "spin": (
        f"tools/call of async spin({SPIN_ROUNDS}) (CPU-bound)",
        _dumps(tool_call("spin", {"rounds": SPIN_ROUNDS})),
        LEGACY_0618,
    ),
}


def _proc_cpu_s(pid: int) -> float:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = stat[stat.rfind(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _wchar(pid: int) -> int:
    try:
        text = Path(f"/proc/{pid}/io").read_text()
    except OSError:
        return 0
    found = re.search(r"^wchar: (\d+)", text, re.M)
    return int(found.group(1)) if found else 0


def _connections(port: int) -> dict[int, int]:
    """Established connections on the server's port, per owning pid."""
    out = subprocess.run(
        ["ss", "-tnpH", "state", "established", f"( sport = :{port} )"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    counts: dict[int, int] = {}
    for pid in re.findall(r"pid=(\d+)", out):
        counts[int(pid)] = counts.get(int(pid), 0) + 1
    return counts


def _wrk(
    url: str, body_file: Path, version: str, seconds: int, conns: int, port: int = 0
) -> tuple[dict[str, Any], dict[int, int]]:
    """wrk's summary, and (with ``port``) the connections per pid halfway through."""
    env = dict(os.environ)
    env["BENCH_BODY_FILE"] = str(body_file)
    env["BENCH_PROTOCOL_VERSION"] = version
    env["BENCH_SESSION_ID"] = ""
    env["BENCH_AUTHORIZATION"] = ""
    env["BENCH_HEADERS_FILE"] = ""
    cmd = ["wrk", "-t2", f"-c{conns}", f"-d{seconds}s", "--latency"]
    cmd += ["-s", str(Path(__file__).resolve().parent / "wrk_post.lua"), url]
    wrk = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    conns_seen: dict[int, int] = {}
    if port:
        time.sleep(seconds / 2)
        conns_seen = _connections(port)
    stdout, stderr = wrk.communicate()
    for line in stdout.splitlines():
        if line.startswith("BENCH_JSON "):
            result: dict[str, Any] = json.loads(line[len("BENCH_JSON ") :])
            return result, conns_seen
    raise RuntimeError(f"wrk printed no summary: {stderr[-300:]}")


def _children_cpu_s() -> float:
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return kids.ru_utime + kids.ru_stime


def measure(workers: int, key: str, args: argparse.Namespace) -> dict[str, Any]:
    """One run: a fresh server with ``workers`` workers, a warm-up, a measured wrk run."""
    _title, body, version = WORKLOADS[key]
    port = free_port()
    body_file = TMP / f"workers-{key}.json"
    body_file.write_bytes(body)
    cmd = [str(ROOT / ".venv/bin/jetmcp"), "run", "bench/load/workers_app.py:app"]
    cmd += ["--transport", "http", "--host", "127.0.0.1", "--port", str(port)]
    cmd += ["--workers", str(workers), "--stateless", *args.server_args]
    server = Running(cmd, TMP / f"workers-{workers}.log", dict(os.environ), 0, core="0,1")
    try:
        if not preflight.wait_for_port(port, 30.0, server.alive):
            raise RuntimeError(f"server did not start: {server.log_tail()}")
        url = f"http://127.0.0.1:{port}/mcp"
        _wrk(url, body_file, version, args.warmup, args.connections)
        pids = [p for p in descendants(server.proc.pid)]
        cpu0 = {p: _proc_cpu_s(p) for p in pids}
        written0 = {p: _wchar(p) for p in pids}
        wrk0 = _children_cpu_s()
        machine0 = cpuload.sample(server.proc.pid)
        result, conns = _wrk(url, body_file, version, args.duration, args.connections, port)
        machine1 = cpuload.sample(server.proc.pid)
        wrk_cpu = _children_cpu_s() - wrk0
        cpu = {p: _proc_cpu_s(p) - cpu0[p] for p in pids}
        written = {p: _wchar(p) - written0[p] for p in pids}
    finally:
        server.stop()
    requests = int(result["requests"])
    seconds = result["duration_us"] / 1e6
    reply_bytes = result["bytes"] / max(1, requests)
    serving = [p for p in pids if written[p] > reply_bytes * 10]
    server_cpu = sum(cpu.values())
    per_req = server_cpu / max(1, requests) * 1e6
    wrk_per_req = wrk_cpu / max(1, requests) * 1e6
    errors = sum(result["errors"].values()) + result["non2xx"] + result["rpc_errors"]
    return {
        "workers": workers,
        "workload": key,
        "rps": requests / seconds,
        "p50_ms": result["latency_us"]["p50"] / 1000,
        "p99_ms": result["latency_us"]["p99"] / 1000,
        "errors": errors,
        "server_us_per_req": per_req,
        "wrk_us_per_req": wrk_per_req,
        "ceiling_rps": 2e6 / (per_req + wrk_per_req),
        "rps_per_server_cpu_s": requests / max(1e-9, server_cpu),
        "server_cores": server_cpu / seconds,
        "wrk_cores": wrk_cpu / seconds,
        "other_cores": cpuload.foreign_cores(machine0, machine1),
        "per_worker_requests": [round(written[p] / reply_bytes) for p in serving],
        "per_worker_connections": [conns.get(p, 0) for p in serving],
        "per_worker_cpu_s": [round(cpu[p], 3) for p in serving],
    }


def _median(rows: list[dict[str, Any]], field: str) -> float:
    return float(statistics.median(r[field] for r in rows))


def _spread(values: list[float]) -> str:
    if not values:
        return "—"
    mid = statistics.median(values)
    return f"{mid:,.0f} ({min(values):,.0f}-{max(values):,.0f})"


def _limits(mine: list[dict[str, Any]]) -> list[str]:
    """The best 2 workers can do against 1 on two cores shared with wrk, from CPU per
    request alone (noise on a shared machine changes rates, much less CPU per request)."""
    one = [r for r in mine if r["workers"] == 1]
    two = [r for r in mine if r["workers"] == 2]
    if not one or not two:
        return []
    s1, s2 = _median(one, "server_us_per_req"), _median(two, "server_us_per_req")
    w = _median([*one, *two], "wrk_us_per_req")
    # One worker is one process: at most one core, and wrk must fit in what is left.
    best_one = min(1e6 / s1, 1e6 / w, 2e6 / (s1 + w))
    best_two = 2e6 / (s2 + w)
    measured = _median(two, "rps") / _median(one, "rps")
    return [
        f"**Limit from CPU per request:** one worker at most {best_one:,.0f} req/s (one core "
        f"for its {s1:.1f} µs, wrk's {w:.1f} µs on the other), two at most {best_two:,.0f} "
        f"(2 s / ({s2:.1f} + {w:.1f}) µs): **{best_two / best_one:.2f}x** is the most a "
        f"second worker can give here (measured on this run: {measured:.2f}x; the other "
        "cores column says how far the machine was from quiet).",
    ]


def report(rows: list[dict[str, Any]], args: argparse.Namespace) -> str:
    lines = [
        "# `--workers 2` vs `--workers 1` on the native engine, load generator on the same cores",
        "",
        f"- **Date:** {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}",
        f"- **Machine:** {os.cpu_count()} CPUs; shared (the *other* column: cores used by "
        "processes outside the benchmark meanwhile)",
        f"- **Command:** `.venv/bin/python bench/load/workers.py --reps {args.reps} "
        f"--duration {args.duration}`",
        f"- **Load:** wrk -t2 -c{args.connections}, {args.warmup} s warm-up + {args.duration} s "
        "measured, server and wrk both unpinned on the same 2 cores; a fresh server per run; "
        f"1 and 2 workers alternate, {args.reps} runs each: medians with (min-max)",
        "- **Ceiling:** what the 2 cores allow when wrk shares them: "
        "2 s / (server CPU + wrk CPU per request)",
        "- **Per worker:** requests from the bytes each worker wrote (/proc/PID/io wchar ÷ the "
        "reply size), connections from `ss` halfway through the run",
        "",
    ]
    for key, (title, _body, _version) in WORKLOADS.items():
        mine = [r for r in rows if r["workload"] == key]
        if not mine:
            continue
        lines += [f"## {title}", ""]
        lines.append(
            "| workers | req/s | x 1 worker | p50 ms | p99 ms | server µs/req | wrk µs/req "
            "| ceiling req/s | x 1 worker's rate | req per server CPU s | server cores "
            "| wrk cores | other cores | errors |"
        )
        lines.append("|---:" * 14 + "|")
        one = [r for r in mine if r["workers"] == 1]
        base = _median(one, "rps") if one else 0.0
        for workers in (1, 2):
            some = [r for r in mine if r["workers"] == workers]
            if not some:
                continue
            rps = _median(some, "rps")
            ceiling = _median(some, "ceiling_rps")
            lines.append(
                f"| {workers} | {_spread([r['rps'] for r in some])} | "
                f"{rps / base:.2f} | {_median(some, 'p50_ms'):.2f} | "
                f"{_median(some, 'p99_ms'):.2f} | {_median(some, 'server_us_per_req'):.1f} | "
                f"{_median(some, 'wrk_us_per_req'):.1f} | {ceiling:,.0f} | "
                f"{ceiling / base:.2f} | {_median(some, 'rps_per_server_cpu_s'):,.0f} | "
                f"{_median(some, 'server_cores'):.2f} | {_median(some, 'wrk_cores'):.2f} | "
                f"{_median(some, 'other_cores'):.2f} | {sum(r['errors'] for r in some)} |"
            )
        lines += ["", *_limits(mine)]
        two = [r for r in mine if r["workers"] == 2]
        if two:
            lines += ["", "Per run with 2 workers: requests / connections per worker", ""]
            for r in two:
                reqs = r["per_worker_requests"]
                share = max(reqs) / max(1, sum(reqs)) if reqs else 0.0
                lines.append(
                    f"- requests {reqs} (busiest {share:.0%}), connections "
                    f"{r['per_worker_connections']}, CPU s {r['per_worker_cpu_s']}"
                )
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--duration", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    parser.add_argument("--server-args", default="", help="more `jetmcp run` arguments")
    parser.add_argument("--out", default=str(ROOT / "bench/results/workers"))
    parser.add_argument("--from-json", default="", help="write the report of earlier rows")
    args = parser.parse_args(argv)
    args.server_args = args.server_args.split()
    out = Path(args.out)
    if args.from_json:
        out.with_suffix(".md").write_text(
            report(json.loads(Path(args.from_json).read_text()), args)
        )
        return 0
    TMP.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    for key in args.workloads.split(","):
        for rep in range(args.reps):
            for workers in (1, 2) if rep % 2 == 0 else (2, 1):
                row = measure(workers, key, args)
                log(
                    f"{key} workers={workers} {row['rps']:,.0f} req/s server "
                    f"{row['server_us_per_req']:.1f} us/req wrk {row['wrk_us_per_req']:.1f} "
                    f"us/req other {row['other_cores']:.2f} per-worker "
                    f"{row['per_worker_requests']} conns {row['per_worker_connections']} "
                    f"cpu {row['per_worker_cpu_s']}"
                )
                rows.append(row)
    out.with_suffix(".json").write_text(json.dumps(rows, indent=1) + "\n")
    out.with_suffix(".md").write_text(report(rows, args))
    log(f"wrote {out.with_suffix('.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
